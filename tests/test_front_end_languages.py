"""The text front end on what conversation agents answer, in every language the shipped catalog
serves: input → the sentences a person would say (read and checked by hand; docs/text.md lists
what is approximated), and the same sentences when the answer is streamed in random chunks."""

from __future__ import annotations

import random

import pytest

from wyoming_multitts.catalog import DEFAULT_CATALOG, load_catalog
from wyoming_multitts.text import TextFrontEnd, TextPolicy, spoken_sentences

# Chunkings each answer is streamed in, and the longest chunk (characters): LLM tokens are a few
# characters; longer chunks cut Markdown markers and numbers in other places.
_STREAM_SEEDS = range(8)
_MAX_CHUNK_CHARS = 12

ANSWERS = [
    # en
    (
        "en",
        "**Bold** and _it_ text: see https://example.com/a?b=1 now.",
        [
            "Bold and it text: see example dot com now.",
        ],
    ),
    (
        "en",
        "- item one\n- item two\n1. first",
        [
            "item one",
            "item two",
            "first",
        ],
    ),
    (
        "en",
        "Your flight leaves on 2026-12-01 at 14:30, and the hotel costs 12,000 EUR.",
        [
            "Your flight leaves on December first, twenty twenty-six at fourteen thirty, and "
            "the hotel costs twelve thousand euros.",
        ],
    ),
    (
        "en",
        "`code` and # Heading 🙂",
        [
            "code and Heading",
        ],
    ),
    (
        "en",
        "Dr. Smith lives at 221B Baker St. He is 3rd in line.",
        [
            "Doctor Smith lives at two hundred twenty-one B Baker Street. He is third in line.",
        ],
    ),
    (
        "en",
        "## Weather\n\nIt's **21 °C** with 45% humidity and wind at 12 km/h.\n- Tomorrow: "
        "18°C\n- Rain: 2.5 mm",
        [
            "Weather",
            "It's twenty-one degrees Celsius with forty-five percent humidity and wind at "
            "twelve kilometers per hour.",
            "Tomorrow: eighteen degrees Celsius",
            "Rain: two point five millimeters",
        ],
    ),
    (
        "en",
        "The living room uses 1,250 W; that's $0.35 an hour. Call +1 555-123-4567 or mail "
        "help@example.org.",
        [
            "The living room uses one thousand two hundred fifty watts; that's thirty-five "
            "cents an hour.",
            "Call plus one, five five five, one two three, four five six seven or mail help at "
            "example dot org.",
        ],
    ),
    (
        "en",
        "It's 7:05 pm. Your 3 timers: 5 min, 10 min and 1 h.",
        [
            "It's seven oh five p m.",
            "Your three timers: five minutes, ten minutes and one hour.",
        ],
    ),
    # de
    (
        "de",
        "## Wetter\n\nHeute sind es **21 °C** bei 45 % Luftfeuchtigkeit.\n- Wind: 12 km/h\n- "
        "Regen: 2,5 mm",
        [
            "Wetter",
            "Heute sind es einundzwanzig Grad Celsius bei fünfundvierzig Prozent "
            "Luftfeuchtigkeit.",
            "Wind: zwölf Kilometer pro Stunde",
            "Regen: zwei Komma fünf Millimeter",
        ],
    ),
    (
        "de",
        "Ihr Termin ist am 01.12.2026 um 14:30 Uhr bei Dr. Müller.",
        [
            "Ihr Termin ist am ersten Dezember zweitausendsechsundzwanzig um vierzehn Uhr "
            "dreißig bei Doktor Müller.",
        ],
    ),
    (
        "de",
        "Die Rechnung über 12.000 € ist fällig, z. B. bis Freitag.",
        [
            "Die Rechnung über zwölftausend Euro ist fällig, zum Beispiel bis Freitag.",
        ],
    ),
    (
        "de",
        "Das Wohnzimmer verbraucht 1.250 W, also ca. 0,35 € pro Stunde.",
        [
            "Das Wohnzimmer verbraucht eintausendzweihundertfünfzig Watt, also circa "
            "fünfunddreißig Cent pro Stunde.",
        ],
    ),
    (
        "de",
        "Rufen Sie +49 30 1234567 an oder besuchen Sie www.example.de.",
        [
            "Rufen Sie plus vier neun, drei null, eins zwei drei vier fünf sechs sieben an oder "
            "besuchen Sie example Punkt de.",
        ],
    ),
    (
        "de",
        "Am 3. Oktober 1990 war die Wiedervereinigung.",
        [
            "Am dritten Oktober neunzehnhundertneunzig war die Wiedervereinigung.",
        ],
    ),
    # fr
    (
        "fr",
        "## Météo\n\nIl fait **21 °C** avec 45 % d'humidité.\n- Vent : 12 km/h",
        [
            "Météo",
            "Il fait vingt et un degrés Celsius avec quarante-cinq pour cent d'humidité.",
            "Vent: douze kilomètres par heure",
        ],
    ),
    (
        "fr",
        "Votre rendez-vous est le 1er décembre 2026 à 14h30.",
        [
            "Votre rendez-vous est le premier décembre deux mille vingt-six à quatorze heures "
            "trente.",
        ],
    ),
    (
        "fr",
        "La facture de 12 000 € est due, soit 3,50 € par jour.",
        [
            "La facture de douze mille euros est due, soit trois euros et cinquante centimes "
            "par jour.",
        ],
    ),
    (
        "fr",
        "M. Dupont habite au 2e étage, etc.",
        [
            "Monsieur Dupont habite au deuxième étage, et cetera.",
        ],
    ),
    # es
    (
        "es",
        "## El tiempo\n\nHoy hace **21 °C** con un 45 % de humedad.\n- Viento: 12 km/h",
        [
            "El tiempo",
            "Hoy hace veintiún grados Celsius con un cuarenta y cinco por ciento de humedad.",
            "Viento: doce kilómetros por hora",
        ],
    ),
    (
        "es",
        "Su cita es el 1 de diciembre de 2026 a las 14:30.",
        [
            "Su cita es el uno de diciembre de dos mil veintiséis a las catorce y treinta.",
        ],
    ),
    (
        "es",
        "La factura de 12.000 € vence; son 3,50 € al día.",
        [
            "La factura de doce mil euros vence; son tres euros con cincuenta céntimos al día.",
        ],
    ),
    (
        "es",
        "El Dr. García vive en el 2º piso.",
        [
            "El doctor García vive en el segundo piso.",
        ],
    ),
    # it
    (
        "it",
        "## Meteo\n\nOggi ci sono **21 °C** con il 45% di umidità.\n- Vento: 12 km/h",
        [
            "Meteo",
            "Oggi ci sono ventuno gradi Celsius con il quarantacinque percento di umidità.",
            "Vento: dodici chilometri orari",
        ],
    ),
    (
        "it",
        "L'appuntamento è il 1º dicembre 2026 alle 14:30.",
        [
            "L'appuntamento è il primo dicembre duemilaventisei alle quattordici e trenta.",
        ],
    ),
    (
        "it",
        "La fattura di 12.000 € scade; sono 3,50 € al giorno.",
        [
            "La fattura di dodicimila euro scade; sono tre euro e cinquanta centesimi al "
            "giorno.",
        ],
    ),
    # pt
    (
        "pt",
        "## Tempo\n\nHoje estão **21 °C** com 45% de umidade.\n- Vento: 12 km/h",
        [
            "Tempo",
            "Hoje estão vinte e um graus Celsius com quarenta e cinco por cento de umidade.",
            "Vento: doze quilômetros por hora",
        ],
    ),
    (
        "pt",
        "A consulta é no dia 01/12/2026 às 14:30.",
        [
            "A consulta é no dia primeiro de dezembro de dois mil e vinte e seis às catorze e "
            "trinta.",
        ],
    ),
    (
        "pt",
        "A fatura de 12.000 € vence; são 3,50 € por dia.",
        [
            "A fatura de doze mil euros vence; são três euros e cinquenta cêntimos por dia.",
        ],
    ),
    # pl
    (
        "pl",
        "## Pogoda\n\nDziś jest **21 °C** i 45% wilgotności.\n- Wiatr: 12 km/h",
        [
            "Pogoda",
            "Dziś jest dwadzieścia jeden stopni Celsjusza i czterdzieści pięć procent "
            "wilgotności.",
            "Wiatr: dwanaście kilometrów na godzinę",
        ],
    ),
    (
        "pl",
        "Spotkanie jest 1 grudnia 2026 o 14:30.",
        [
            "Spotkanie jest pierwszego grudnia dwa tysiące dwudziestego szóstego roku o "
            "czternastej trzydzieści.",
        ],
    ),
    (
        "pl",
        "Rachunek na 12 000 zł jest do zapłaty, np. jutro.",
        [
            "Rachunek na dwanaście tysięcy złotych jest do zapłaty, na przykład jutro.",
        ],
    ),
    # ru
    (
        "ru",
        "## Погода\n\nСегодня **21 °C**, влажность 45%.\n- Ветер: 12 км/ч",
        [
            "Погода",
            "Сегодня двадцать один градус Цельсия, влажность сорок пять процентов.",
            "Ветер: двенадцать километров в час",
        ],
    ),
    (
        "ru",
        "Встреча 1 декабря 2026 года в 14:30.",
        [
            "Встреча первое декабря две тысячи двадцать шестого года в четырнадцать часов "
            "тридцать минут.",
        ],
    ),
    (
        "ru",
        "Счёт на 12 000 ₽ нужно оплатить, т.е. до пятницы.",
        [
            "Счёт на двенадцать тысяч рублей нужно оплатить, то есть до пятницы.",
        ],
    ),
    # tr
    (
        "tr",
        "## Hava durumu\n\nBugün hava **21 °C** ve nem %45.\n- Rüzgar: 12 km/sa",
        [
            "Hava durumu",
            "Bugün hava yirmi bir santigrat derece ve nem yüzde kırk beş.",
            "Rüzgar: on iki kilometre/saat",
        ],
    ),
    (
        "tr",
        "Toplantı 1 Aralık 2026 saat 14:30'da.",
        [
            "Toplantı bir Aralık iki bin yirmi altı saat on dört otuz'da.",
        ],
    ),
    (
        "tr",
        "12.000 € tutarındaki fatura ödenmeli, örn. cumaya kadar.",
        [
            "on iki bin Euro tutarındaki fatura ödenmeli, örneğin cumaya kadar.",
        ],
    ),
    # zh
    (
        "zh",
        "## 天气\n\n今天北京**21°C**，湿度45%。\n- 风速：12 km/h",
        [
            "天气",
            "今天北京二十一摄氏度，湿度百分之四十五。",
            "风速：每小时十二公里",
        ],
    ),
    (
        "zh",
        "会议在2026年12月1日14:30。",
        [
            "会议在二零二六年十二月一日十四点三十分。",
        ],
    ),
    (
        "zh",
        "这张发票是12000元，我有2个问题。",
        [
            "这张发票是一万二千元，我有两个问题。",
        ],
    ),
    # ja
    (
        "ja",
        "## 天気\n\n今日は**21°C**、湿度は45%です。\n- 風速：12 km/h",
        [
            "天気",
            "今日は摂氏二十一度、湿度は四十五パーセントです。",
            "風速：時速十二キロメートル",
        ],
    ),
    (
        "ja",
        "会議は2026年12月1日14:30です。",
        [
            "会議は二千二十六年十二月一日十四時三十分です。",
        ],
    ),
    (
        "ja",
        "請求書は12,000円です。",
        [
            "請求書は一万二千円です。",
        ],
    ),
    # ko
    (
        "ko",
        "## 날씨\n\n오늘은 **21°C**이고 습도는 45%입니다.\n- 풍속: 12 km/h",
        [
            "날씨",
            "오늘은 섭씨 이십일도이고 습도는 사십오 퍼센트입니다.",
            "풍속: 시속 십이킬로미터",
        ],
    ),
    (
        "ko",
        "회의는 2026년 12월 1일 14:30입니다.",
        [
            "회의는 이천이십육년 십이월 일일 열네 시 삼십 분입니다.",
        ],
    ),
    (
        "ko",
        "청구서는 12,000원입니다. 사과 2개가 있어요.",
        [
            "청구서는 만 이천 원입니다.",
            "사과 두 개가 있어요.",
        ],
    ),
    # hi
    (
        "hi",
        "## मौसम\n\nआज तापमान **21 °C** है और नमी 45% है।\n- हवा: 12 km/h",
        [
            "मौसम",
            "आज तापमान इक्कीस डिग्री सेल्सियस है और नमी पैंतालीस प्रतिशत है।",
            "हवा: बारह किलोमीटर प्रति घंटा",
        ],
    ),
    (
        "hi",
        "बैठक 1 दिसंबर 2026 को 14:30 बजे है।",
        [
            "बैठक एक दिसंबर दो हज़ार छब्बीस को चौदह बजकर तीस मिनट है।",
        ],
    ),
    (
        "hi",
        "बिल ₹12,000 का है।",
        [
            "बिल बारह हज़ार रुपये का है।",
        ],
    ),
]


def _streamed(text: str, policy: TextPolicy, seed: int) -> list[str]:
    """The spoken sentences of `text` sent in random chunks of 1 to `_MAX_CHUNK_CHARS`."""
    rng = random.Random(seed)
    front_end = TextFrontEnd(policy)
    sentences: list[str] = []
    start = 0
    while start < len(text):
        size = rng.randint(1, _MAX_CHUNK_CHARS)
        sentences += front_end.add(text[start : start + size])
        start += size
    return sentences + front_end.finish()


@pytest.mark.parametrize(("language", "answer", "expected"), ANSWERS)
def test_answer_is_said_as_a_person_would(language: str, answer: str, expected: list[str]) -> None:
    assert spoken_sentences(answer, TextPolicy((language,))) == expected


@pytest.mark.parametrize(("language", "answer", "expected"), ANSWERS)
def test_streamed_answer_says_the_same(language: str, answer: str, expected: list[str]) -> None:
    for seed in _STREAM_SEEDS:
        assert _streamed(answer, TextPolicy((language,)), seed) == expected


def test_every_catalog_language_has_answers() -> None:
    catalog = load_catalog(DEFAULT_CATALOG)
    served = {language for voice in catalog.voices.values() for language in voice.languages}
    assert served <= {language for language, _, _ in ANSWERS}


@pytest.mark.parametrize("language", sorted({language for language, _, _ in ANSWERS}))
def test_multilingual_voice_says_each_answer_as_its_own_language(language: str) -> None:
    """A Qwen3-TTS voice speaks ten languages and is told none: each answer (long enough to
    tell) is said as a voice of that language alone says it."""
    qwen3 = ("zh", "en", "ja", "ko", "de", "fr", "ru", "pt", "es", "it")  # data/voices.yaml
    policy = TextPolicy(qwen3 if language in qwen3 else (*qwen3, language))
    for answer_language, answer, expected in ANSWERS:
        if answer_language == language and all(len(sentence) >= 40 for sentence in expected):
            assert spoken_sentences(answer, policy) == expected
