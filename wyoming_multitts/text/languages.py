"""What each language says for the numbers, dates, times, money and symbols in a sentence.

One `Language` per language, written as a table: the words a speaker uses ("Komma", "ät",
"pour cent"), the formats they are put in ("{day} de {month} de {year}") and the abbreviations
they expand; and the currency and unit symbols all languages write. Number words and
month, currency and unit names come from libraries (num2words, cn2an, indic-numtowords, babel's
CLDR data); this module holds only what those do not know. `verbalize` reads these tables, and
`language("de-AT")` finds the one for a language code.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from num2words import CONVERTER_CLASSES

# ---------------------------------------------------------------------------
# The table's columns


@dataclass(frozen=True, eq=False)
class Language:
    """How one language writes and says numbers, dates, times, money, units and symbols.

    Instances are compared by identity (`eq=False`): there is one per language, and the
    verbalizer caches what it derives from one (compiled patterns, CLDR names) under it.
    """

    code: str
    """ISO 639-1 code ("de"); also the babel locale of CLDR names, separators and date order."""

    number_engine: str = "num2words"
    """Which library says numbers: "num2words", "cn2an" (Chinese), "indic" (Hindi), or ""
    (none: digits are left as they are)."""

    num2words_code: str = ""
    """num2words' name of the language when it is not `code` (Brazilian "pt_BR")."""

    joiner: str = " "
    """What goes between spoken words: "" in Chinese and Japanese, which write no spaces."""

    number_words: tuple[str, ...] = ()
    """Words num2words writes together that belong apart: its Turkish output
    "ikibinyirmialtı" is split into these ("iki bin yirmi altı")."""

    cardinal_fixes: tuple[tuple[str, str], ...] = ()
    """(old, new) replacements in num2words' number words (English drops its British "and")."""

    decimal_word: str = ""
    """The word for the decimal separator ("point", "Komma")."""

    fraction_style: str = "digits"
    """How digits after the decimal separator are said: "digits" one by one ("point one four"),
    "number" as a number ("virgule quatorze"), or "num2words" (num2words' own reading, Russian
    "три целых четырнадцать сотых")."""

    minus: str = ""
    """The word before a negative number."""

    plus: str = ""
    """The word for "+" (a sign, a sum, a phone number's country prefix)."""

    equals: str = ""
    """The word for "="."""

    and_word: str = ""
    """The word for "&"."""

    at: str = ""
    """The word for "@" in an e-mail address."""

    dot: str = ""
    """The word for the dot in a domain name, an e-mail address or a version number."""

    times: str = ""
    """The word for "×" ("2×3", "2 x 3")."""

    approx: str = ""
    """The word for "~" before a number ("about")."""

    percent: str = ""
    """How a percentage is said when CLDR's unit pattern does not spell it ("百分之{0}"); ""
    uses CLDR ("{0} Prozent", Turkish "yüzde {0}")."""

    range_format: str = "{}-{}"
    """How a range "10-20" is said ("{} to {}"); the default keeps the hyphen."""

    feminine_units: frozenset[str] = frozenset()
    """CLDR units (and "clock-hour", "clock-minute") whose number takes the feminine form."""

    feminine_numbers: Mapping[str, str] = field(default_factory=dict)
    """Last number word → its feminine form ("un" → "une"), before a feminine unit."""

    unit_numbers: Mapping[str, str] = field(default_factory=dict)
    """Last number word → the form it takes before any other unit, a currency or a capitalised
    noun ("eins" → "ein"), and an ordinal's before a noun (Spanish "primero" → "primer")."""

    nouns_lowercase: bool = False
    """Whether nouns are written lowercase, so that any word of three letters or more after a
    number may be its noun ("un minuto"); German capitalises its nouns, "eins von zwei" stays."""

    feminine_nouns: frozenset[str] = frozenset()
    """Common feminine nouns counted after a number ("Stunde", "heures"): the number before one
    takes its feminine form ("eine Stunde", "vingt et une heures")."""

    ordinal_endings: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    """Form → (ending, replacement) pairs that turn each word of num2words' ordinal into that
    form: feminine "f" ("primero" → "primera"), Polish genitive "g", German case endings."""

    year_style: str = "cardinal"
    """How a year is said: "cardinal", "num2words" (its `to="year"`: "nineteen eighty-four",
    "neunzehnhundertvierundachtzig") or "digits" (Chinese "二零二六")."""

    year_hundred: str = ""
    """The word for "hundred" when the years 1100–1999 are said in hundreds (Hindi "उन्नीस सौ
    चौरासी"); "" when they are not."""

    month_names: tuple[str, ...] = ()
    """Spoken month names, January first, where CLDR writes digits (Japanese "12月")."""

    month_first: bool = False
    """Whether the month may be written before the day ("December 1, 2026")."""

    date_connector: str = ""
    """A word written between day, month and year ("1 de diciembre de 2026")."""

    date_format: str = "{day} {month} {year}"
    """How a full date is said."""

    day_month_format: str = "{day} {month}"
    """How a date without a year is said."""

    day_form: str | None = None
    """The ordinal form a day of the month is said in, or None for a cardinal ("deux décembre")."""

    day_form_after: Mapping[str, str] = field(default_factory=dict)
    """The word before a date → the ordinal form its day takes there ("am" → "n": "am ersten")."""

    day_words: Mapping[int, str] = field(default_factory=dict)
    """Days of the month said otherwise than the rest (French "premier décembre")."""

    year_form: str | None = None
    """The ordinal form a year takes in a date ("две тысячи двадцать шестого года"), or None."""

    year_words: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """A word written after a year ("г.", "r.") → (the word said, the year's ordinal form)."""

    year_after: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """The word before such a year → (the word said after it, the year's ordinal form) there
    (Russian "в 2026 г." → "в две тысячи двадцать шестом году")."""

    date_marks: tuple[str, ...] = ()
    """The year, month and day marks of a Chinese, Japanese or Korean date ("年", "月", "日")."""

    clock: str = "{hour} {minute}"
    """How a time is said: {hour} and {minute} as numbers, {hours} and {minutes} with their unit."""

    clock_hour: str = "{hour}"
    """How a full hour is said ("{hour} o'clock", "{hour} Uhr")."""

    clock_hour_24: str = ""
    """How a full hour after 12 is said, where that differs ("{hour} hundred")."""

    minute_pad: str = ""
    """The word said before a minute under ten ("seven oh five", "七点零五分")."""

    hour_form: str | None = None
    """The ordinal form hours are said in (Polish "czternasta"), or None for cardinals."""

    hour_form_after: Mapping[str, str] = field(default_factory=dict)
    """The word before a time → the ordinal form its hour takes there (Polish "o czternastej")."""

    hour_words: Mapping[int, str] = field(default_factory=dict)
    """Hours said otherwise than by the rule (Chinese "两点", Korean native numbers)."""

    time_separators: tuple[str, ...] = (":",)
    """What is written between hour and minute ("14:30", German "14.30 Uhr", French "14h30")."""

    time_suffix: str = ""
    """A word written after a time that the spoken form already says ("Uhr"); a time written
    with "." between hour and minute needs it."""

    am_pm: tuple[str, ...] = ()
    """The spoken "am" and "pm", for a language that writes 12-hour times."""

    ordinal_suffixes: Mapping[str, str] = field(default_factory=dict)
    """What is written after the digits of an ordinal → its form ("1st", "1re" → "f", Russian
    "2-го" → "gm": case and gender for num2words). "." is read only before a lowercase word."""

    ordinal_dot: bool = False
    """Whether ordinals are written as a number and a dot ("3. Oktober"): a sentence seeming to
    end in one is held and joined to the next (`SentenceSplitter`)."""

    decade_suffix: str = ""
    """The letter after a decade ("1990s" → "nineteen nineties")."""

    counters: frozenset[str] = frozenset()
    """Words counted with `count_words` right after a number (Korean "개", Chinese "个")."""

    count_words: Mapping[int, str] = field(default_factory=dict)
    """Numbers said otherwise before a counter (Korean native "두 개", Chinese "两个")."""

    currency_names: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict
    )
    """ISO code → (unit names, subunit names) where num2words and CLDR fall short, each as
    (one, other) or a single name for every number (Chinese "元", no subunit: ())."""

    unit_symbols: Mapping[str, str] = field(default_factory=dict)
    """Units written in the language's own script → CLDR unit (Russian "км")."""

    currency_symbols: Mapping[str, str] = field(default_factory=dict)
    """Symbols that mean another currency in this language ("¥" is the yuan in Chinese)."""

    money_joiner: str = ""
    """The word between units and subunits ("three dollars and fifty cents")."""

    scales: tuple[str, ...] = ()
    """Number words written after digits ("1.5 million"), so "$1.5 million" is one amount."""

    scale_of: str = ""
    """The word between such a word and the currency ("1,5 millions d'euros" → "de")."""

    phone_digits: tuple[str, ...] = ()
    """The digits 0–9 as said in a phone number, where that differs (Korean "공")."""

    abbreviations: Mapping[str, str] = field(default_factory=dict)
    """Written abbreviation, with its dot(s) → spoken form."""

    before_name: Mapping[str, str] = field(default_factory=dict)
    """Abbreviations said otherwise before a capitalised word ("St. Louis" → "Saint")."""

    before_number: Mapping[str, str] = field(default_factory=dict)
    """Abbreviations expanded only before a number (Polish "ok. 5" → "około", but "jest ok.")."""

    titles: frozenset[str] = frozenset()
    """The abbreviations that never end a sentence ("Dr.", "z.B."), as written: the sentence
    splitter holds a sentence that ends in one of them."""


# ---------------------------------------------------------------------------
# Notation every language shares

# Currency symbols → ISO code (a language's table may say otherwise: "¥" is the yuan in Chinese).
# fmt: off
CURRENCY_SYMBOLS = {
    "$": "USD", "US$": "USD", "R$": "BRL", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR",
    "Rs.": "INR", "₩": "KRW", "₽": "RUB", "руб.": "RUB", "₺": "TRY", "zł": "PLN", "Fr.": "CHF",
    "元": "CNY", "円": "JPY", "원": "KRW",
}
# fmt: on

# ISO currency codes written next to an amount ("12,000 EUR", "CHF 20").
# fmt: off
CURRENCY_CODES = (
    "EUR", "USD", "GBP", "CHF", "JPY", "CNY", "INR", "PLN", "RUB", "TRY", "KRW", "BRL", "CAD",
    "AUD", "SEK", "NOK", "DKK", "CZK",
)
# fmt: on

# Unit symbols written after a number → CLDR unit ("a/b": a compound, "a per b"; CLDR has no
# watt-hour, "energy-watt-hour" is its kilowatt-hour without the "kilo").
# fmt: off
UNITS = {
    "°C": "temperature-celsius", "° C": "temperature-celsius", "℃": "temperature-celsius",
    "°F": "temperature-fahrenheit", "° F": "temperature-fahrenheit", "℉": "temperature-fahrenheit",
    "K": "temperature-kelvin", "°": "angle-degree",
    "km/h": "speed-kilometer-per-hour", "m/s": "speed-meter-per-second",
    "mph": "speed-mile-per-hour",
    "km": "length-kilometer", "m": "length-meter", "cm": "length-centimeter",
    "mm": "length-millimeter", "ft": "length-foot",
    "km²": "area-square-kilometer", "m²": "area-square-meter", "m³": "volume-cubic-meter",
    "kg": "mass-kilogram", "g": "mass-gram", "mg": "mass-milligram", "lb": "mass-pound",
    "l": "volume-liter", "L": "volume-liter", "ml": "volume-milliliter", "mL": "volume-milliliter",
    "h": "duration-hour", "min": "duration-minute", "s": "duration-second",
    "ms": "duration-millisecond",
    "kWh": "energy-kilowatt-hour", "Wh": "energy-watt-hour", "MW": "power-megawatt",
    "kW": "power-kilowatt", "W": "power-watt", "V": "electric-volt", "A": "electric-ampere",
    "mA": "electric-milliampere",
    "hPa": "pressure-hectopascal", "mbar": "pressure-millibar", "bar": "pressure-bar",
    "kB": "digital-kilobyte", "KB": "digital-kilobyte", "MB": "digital-megabyte",
    "GB": "digital-gigabyte", "TB": "digital-terabyte",
    "Hz": "frequency-hertz", "kHz": "frequency-kilohertz", "MHz": "frequency-megahertz",
    "GHz": "frequency-gigahertz",
    "lx": "light-lux", "lux": "light-lux", "ppm": "concentr-part-per-1e6",
    "µg/m³": "mass-microgram/volume-cubic-meter", "μg/m³": "mass-microgram/volume-cubic-meter",
}
# fmt: on

# Unit symbols that are also a letter glued to a number ("4K", "Apt 5A"): units after a space.
SPACED_UNITS = frozenset(("K", "A"))

# The SI prefix "kilo" as CLDR's languages spell it (to say a watt-hour from a kilowatt-hour).
KILO = ("kilo", "chilo", "quilo", "кило", "千", "キロ", "킬로", "किलो")

# ---------------------------------------------------------------------------
# Word lists the tables share

# Turkish number words, cardinal and ordinal, that num2words writes without spaces.
# fmt: off
_TURKISH_NUMBER_WORDS = (
    "bir", "iki", "üç", "dört", "beş", "altı", "yedi", "sekiz", "dokuz", "on", "yirmi", "otuz",
    "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan", "yüz", "bin", "milyon", "milyar",
    "trilyon", "katrilyon",
    "birinci", "ikinci", "üçüncü", "dördüncü", "beşinci", "altıncı", "yedinci", "sekizinci",
    "dokuzuncu", "onuncu", "yirminci", "otuzuncu", "kırkıncı", "ellinci", "altmışıncı",
    "yetmişinci", "sekseninci", "doksanıncı", "yüzüncü", "bininci", "milyonuncu", "milyarıncı",
)
# fmt: on

# Korean native numbers as they stand before a counter ("한 개", "스무 살"), by ones and tens;
# num2words says only the Sino-Korean ones ("일", "이").
_KOREAN_NATIVE_ONES = ("", "한", "두", "세", "네", "다섯", "여섯", "일곱", "여덟", "아홉")
_KOREAN_NATIVE_TENS = ("", "열", "스물", "서른", "마흔", "쉰", "예순", "일흔", "여든", "아흔")

# Korean native numbers 1–99 before a counter; twenty alone is "스무" ("스무 살").
_KOREAN_COUNT_WORDS = {
    tens * 10 + ones: _KOREAN_NATIVE_TENS[tens] + _KOREAN_NATIVE_ONES[ones]
    for tens in range(10)
    for ones in range(10)
    if tens or ones
} | {20: "스무"}

# The ordinal endings of the Romance languages whose ordinals end in "-o": feminine "-a".
_ROMANCE_FEMININE = {"f": (("o", "a"),)}

# Spanish, Italian and Portuguese ordinal indicators: "1º" masculine, "1ª" feminine.
_ROMANCE_ORDINAL_SUFFIXES = {"º": "", "ª": "f", ".º": "", ".ª": "f"}

# num2words languages that never return for some numbers (num2words 0.5.14 `lang_AM.py` loops
# forever on 1234567): their digits are left as they are.
NUM2WORDS_HANGS = frozenset(("am",))

# ---------------------------------------------------------------------------
# The languages

ENGLISH = Language(
    code="en",
    # American "one hundred one", "one thousand two hundred", "nineteen oh five"
    cardinal_fixes=((" and ", " "), (", ", " "), ("oh-", "oh ")),
    decimal_word="point",
    minus="minus",
    plus="plus",
    equals="equals",
    and_word="and",
    at="at",
    dot="dot",
    times="times",
    approx="about",
    range_format="{} to {}",
    year_style="num2words",
    month_first=True,
    date_format="{month} {day}, {year}",
    day_month_format="{month} {day}",
    day_form="",
    clock_hour="{hour} o'clock",
    clock_hour_24="{hour} hundred",
    minute_pad="oh",
    am_pm=("a m", "p m"),
    ordinal_suffixes={"st": "", "nd": "", "rd": "", "th": ""},
    decade_suffix="s",
    currency_names={"EUR": (("euro", "euros"), ("cent", "cents"))},  # num2words: "twenty euro"
    money_joiner="and",
    scales=("thousand", "million", "billion", "trillion"),
    abbreviations={
        "Dr.": "Doctor",
        "Mr.": "Mister",
        "Mrs.": "Missus",
        "Ms.": "Miz",
        "Prof.": "Professor",
        "St.": "Street",
        "Jr.": "Junior",
        "Sr.": "Senior",
        "Mt.": "Mount",
        "Ave.": "Avenue",
        "e.g.": "for example",
        "i.e.": "that is",
        "etc.": "et cetera",
        "vs.": "versus",
        "approx.": "approximately",
    },
    before_name={"St.": "Saint"},
    titles=frozenset(
        ("Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "Mt.", "e.g.", "i.e.", "vs.", "approx.")
    ),
)

GERMAN = Language(
    code="de",
    decimal_word="Komma",
    minus="minus",
    plus="plus",
    equals="gleich",
    and_word="und",
    at="ät",
    dot="Punkt",
    times="mal",
    approx="etwa",
    range_format="{} bis {}",
    feminine_units=frozenset(("duration-hour", "duration-minute", "duration-second", "mass-tonne")),
    feminine_numbers={"eins": "eine"},
    unit_numbers={"eins": "ein"},
    # fmt: off
    feminine_nouns=frozenset((
        "Stunde", "Stunden", "Minute", "Minuten", "Sekunde", "Sekunden", "Woche", "Wochen",
        "Person", "Personen", "Nacht", "Nächte", "Tasse", "Tassen", "Flasche", "Flaschen",
    )),
    # fmt: on
    # "erste" → "erster" (no article), "ersten" (dative, "am"), "erstem" (strong dative, "ab")
    ordinal_endings={"r": (("e", "er"),), "n": (("e", "en"),), "m": (("e", "em"),)},
    year_style="num2words",
    day_form="r",
    day_form_after={
        "am": "n",
        "vom": "n",
        "zum": "n",
        "dem": "n",
        "den": "n",
        "ab": "m",
        "der": "",
        "die": "",
        "das": "",
    },
    clock="{hour} Uhr {minute}",
    clock_hour="{hour} Uhr",
    time_separators=(":", "."),
    time_suffix="Uhr",
    ordinal_dot=True,
    money_joiner="und",
    scales=("Tausend", "Million", "Millionen", "Milliarde", "Milliarden", "Billion", "Billionen"),
    unit_symbols={
        "Std.": "duration-hour",
        "Std": "duration-hour",
        "Min.": "duration-minute",
        "Sek.": "duration-second",
    },
    abbreviations={
        "z.B.": "zum Beispiel",
        "z. B.": "zum Beispiel",
        "d.h.": "das heißt",
        "d. h.": "das heißt",
        "u.a.": "unter anderem",
        "usw.": "und so weiter",
        "bzw.": "beziehungsweise",
        "ca.": "circa",
        "Nr.": "Nummer",
        "Str.": "Straße",
        "Dr.": "Doktor",
        "Prof.": "Professor",
        "inkl.": "inklusive",
        "ggf.": "gegebenenfalls",
        "evtl.": "eventuell",
        "Mio.": "Millionen",
        "Mrd.": "Milliarden",
    },
    titles=frozenset(
        ("z.B.", "z. B.", "d.h.", "d. h.", "bzw.", "ca.", "Nr.", "Dr.", "Prof.", "inkl.", "ggf.")
        + ("evtl.",)
    ),
)

FRENCH = Language(
    code="fr",
    decimal_word="virgule",
    fraction_style="number",
    minus="moins",
    plus="plus",
    equals="égale",
    and_word="et",
    at="arobase",
    dot="point",
    times="fois",
    approx="environ",
    range_format="{} à {}",
    feminine_units=frozenset(
        ("clock-hour", "duration-hour", "duration-minute", "duration-second", "mass-tonne")
    ),
    feminine_numbers={"un": "une"},
    # fmt: off
    feminine_nouns=frozenset((
        "heure", "heures", "minute", "minutes", "seconde", "secondes", "semaine", "semaines",
        "personne", "personnes", "fois", "nuit", "nuits", "année", "années", "journée", "journées",
    )),
    # fmt: on
    ordinal_endings={"f": (("premier", "première"),)},
    day_words={1: "premier"},
    clock="{hours} {minute}",
    clock_hour="{hours}",
    time_separators=(":", "h", " h "),
    ordinal_suffixes={"er": "", "re": "f", "ère": "f", "e": "", "ème": "", "eme": "", "es": ""},
    money_joiner="et",
    scales=("mille", "million", "millions", "milliard", "milliards"),
    scale_of="de",
    abbreviations={
        "M.": "Monsieur",
        "MM.": "Messieurs",
        "Mme": "Madame",
        "Mmes": "Mesdames",
        "Mlle": "Mademoiselle",
        "Dr": "Docteur",
        "Pr": "Professeur",
        "etc.": "et cetera",
        "env.": "environ",
        "p. ex.": "par exemple",
        "c.-à-d.": "c'est-à-dire",
        "n°": "numéro",
        "N°": "numéro",
        "av.": "avenue",
        "bd": "boulevard",
    },
    titles=frozenset(("M.", "MM.", "Mme", "Mlle", "Dr", "Pr", "env.", "p. ex.", "c.-à-d.", "n°")),
)

SPANISH = Language(
    code="es",
    nouns_lowercase=True,
    decimal_word="coma",
    fraction_style="number",
    minus="menos",
    plus="más",
    equals="igual a",
    and_word="y",
    at="arroba",
    dot="punto",
    times="por",
    approx="aproximadamente",
    range_format="{} a {}",
    feminine_units=frozenset(("clock-hour", "duration-hour", "mass-tonne")),
    feminine_numbers={"uno": "una", "un": "una", "veintiuno": "veintiuna"},
    unit_numbers={"uno": "un", "veintiuno": "veintiún", "primero": "primer", "tercero": "tercer"},
    # fmt: off
    feminine_nouns=frozenset((
        "hora", "horas", "semana", "semanas", "persona", "personas", "vez", "veces", "noche",
        "noches", "botella", "botellas", "taza", "tazas",
    )),
    # fmt: on
    ordinal_endings=_ROMANCE_FEMININE,
    date_connector="de",
    date_format="{day} de {month} de {year}",
    day_month_format="{day} de {month}",
    clock="{hour} y {minute}",
    clock_hour="{hour} en punto",
    ordinal_suffixes=_ROMANCE_ORDINAL_SUFFIXES,
    money_joiner="con",
    scales=("mil", "millón", "millones"),
    scale_of="de",
    abbreviations={
        "Sr.": "señor",
        "Sra.": "señora",
        "Srta.": "señorita",
        "Dr.": "doctor",
        "Dra.": "doctora",
        "Ud.": "usted",
        "Uds.": "ustedes",
        "etc.": "etcétera",
        "p. ej.": "por ejemplo",
        "aprox.": "aproximadamente",
        "Av.": "avenida",
        "núm.": "número",
        "n.º": "número",
        "pág.": "página",
    },
    titles=frozenset(
        ("Sr.", "Sra.", "Srta.", "Dr.", "Dra.", "p. ej.", "aprox.", "Av.", "núm.", "n.º", "pág.")
    ),
)

ITALIAN = Language(
    code="it",
    nouns_lowercase=True,
    decimal_word="virgola",
    fraction_style="number",
    minus="meno",
    plus="più",
    equals="uguale",
    and_word="e",
    at="chiocciola",
    dot="punto",
    times="per",
    approx="circa",
    range_format="{} a {}",
    feminine_units=frozenset(("clock-hour", "duration-hour", "mass-tonne")),
    feminine_numbers={"uno": "una", "ventuno": "ventuna"},
    unit_numbers={"uno": "un"},
    # fmt: off
    feminine_nouns=frozenset((
        "ora", "ore", "settimana", "settimane", "persona", "persone", "volta", "volte", "notte",
        "notti", "tazza", "tazze",
    )),
    # fmt: on
    ordinal_endings=_ROMANCE_FEMININE,
    day_words={1: "primo"},
    clock="{hour} e {minute}",
    ordinal_suffixes=_ROMANCE_ORDINAL_SUFFIXES,
    money_joiner="e",
    scales=("mila", "milione", "milioni", "miliardo", "miliardi"),
    scale_of="di",
    abbreviations={
        "Sig.": "signor",
        "Sig.ra": "signora",
        "Sigg.": "signori",
        "Dott.": "dottor",
        "Dott.ssa": "dottoressa",
        "Prof.": "professor",
        "Prof.ssa": "professoressa",
        "Ing.": "ingegner",
        "Avv.": "avvocato",
        "ecc.": "eccetera",
        "ad es.": "ad esempio",
        "p.es.": "per esempio",
        "ca.": "circa",
        "pag.": "pagina",
        "tel.": "telefono",
    },
    titles=frozenset(
        ("Sig.", "Sig.ra", "Sigg.", "Dott.", "Dott.ssa", "Prof.", "Prof.ssa", "Ing.", "Avv.")
        + ("ad es.", "p.es.", "ca.", "pag.", "tel.")
    ),
)

PORTUGUESE = Language(
    code="pt",
    nouns_lowercase=True,
    num2words_code="pt_BR",  # Brazilian spelling ("dezesseis"), as babel's "pt" is Brazilian
    cardinal_fixes=((", ", " "),),  # "mil duzentos", not "mil, duzentos"
    decimal_word="vírgula",
    fraction_style="number",
    minus="menos",
    plus="mais",
    equals="igual a",
    and_word="e",
    at="arroba",
    dot="ponto",
    times="vezes",
    approx="aproximadamente",
    range_format="{} a {}",
    feminine_units=frozenset(("clock-hour", "duration-hour", "mass-tonne")),
    feminine_numbers={"um": "uma", "dois": "duas"},
    # fmt: off
    feminine_nouns=frozenset((
        "hora", "horas", "semana", "semanas", "pessoa", "pessoas", "vez", "vezes", "noite",
        "noites", "garrafa", "garrafas",
    )),
    # fmt: on
    ordinal_endings=_ROMANCE_FEMININE,
    date_connector="de",
    date_format="{day} de {month} de {year}",
    day_month_format="{day} de {month}",
    day_words={1: "primeiro"},
    clock="{hour} e {minute}",
    clock_hour="{hours}",
    ordinal_suffixes=_ROMANCE_ORDINAL_SUFFIXES,
    currency_names={"BRL": (("real", "reais"), ("centavo", "centavos"))},
    money_joiner="e",
    scales=("mil", "milhão", "milhões", "bilhão", "bilhões"),
    scale_of="de",
    abbreviations={
        "Sr.": "senhor",
        "Sra.": "senhora",
        "Dr.": "doutor",
        "Dra.": "doutora",
        "etc.": "etcétera",
        "p. ex.": "por exemplo",
        "n.º": "número",
        "nº": "número",
        "aprox.": "aproximadamente",
        "Av.": "avenida",
        "pág.": "página",
        "tel.": "telefone",
    },
    titles=frozenset(
        ("Sr.", "Sra.", "Dr.", "Dra.", "p. ex.", "n.º", "nº", "aprox.", "Av.", "pág.", "tel.")
    ),
)

POLISH = Language(
    code="pl",
    decimal_word="przecinek",
    fraction_style="number",
    ordinal_dot=True,
    minus="minus",
    plus="plus",
    equals="równa się",
    and_word="i",
    at="małpa",
    dot="kropka",
    times="razy",
    approx="mniej więcej",
    feminine_units=frozenset(("duration-hour", "duration-minute", "duration-second", "mass-tonne")),
    feminine_numbers={"jeden": "jedna", "dwa": "dwie"},
    # fmt: off
    feminine_nouns=frozenset((
        "godzina", "godziny", "minuta", "minuty", "sekunda", "sekundy", "osoba", "osoby", "noc",
        "noce", "butelka", "butelki",
    )),
    # fmt: on
    # genitive "pierwszego grudnia"; hours feminine "czternasta", after "o" locative "czternastej"
    ordinal_endings={
        "g": (("y", "ego"), ("i", "iego")),
        "f": (("ci", "cia"), ("y", "a"), ("i", "a")),
        "l": (("y", "ej"), ("i", "iej")),
        "m": (("y", "ym"), ("i", "im")),
    },
    date_format="{day} {month} {year} roku",
    day_form="g",
    year_form="g",
    year_words={"r.": ("roku", "g"), "roku": ("roku", "g")},
    year_after={"w": ("roku", "m")},  # locative: "w dwa tysiące dwudziestym szóstym roku"
    hour_form="f",
    hour_form_after={"o": "l", "do": "l", "od": "l", "po": "l"},
    hour_words={0: "zero"},
    minute_pad="zero",
    scales=("tysięcy", "tysiące", "tysiąc", "milionów", "miliony", "milion", "miliardów"),
    abbreviations={
        "np.": "na przykład",
        "itd.": "i tak dalej",
        "itp.": "i tym podobne",
        "tzn.": "to znaczy",
        "tj.": "to jest",
        "m.in.": "między innymi",
        "ul.": "ulica",
        "dr": "doktor",
        "prof.": "profesor",
        "godz.": "godzina",
        "nr": "numer",
        "wg": "według",
        "tys.": "tysięcy",
        "mln": "milionów",
        "mld": "miliardów",
    },
    before_number={"ok.": "około"},
    titles=frozenset(("np.", "tzn.", "tj.", "m.in.", "ul.", "dr", "prof.", "godz.", "nr", "ok.")),
)

RUSSIAN = Language(
    code="ru",
    decimal_word="запятая",
    fraction_style="num2words",
    minus="минус",
    plus="плюс",
    equals="равно",
    and_word="и",
    at="собака",
    dot="точка",
    times="на",
    approx="примерно",
    feminine_units=frozenset(("clock-minute", "duration-minute", "duration-second", "mass-tonne")),
    feminine_numbers={"один": "одна", "два": "две"},
    # fmt: off
    feminine_nouns=frozenset((
        "минута", "минуты", "минут", "секунда", "секунды", "секунд", "неделя", "недели",
        "недель", "штука", "штуки", "штук", "тонна", "тонны", "тонн",
    )),
    # fmt: on
    date_format="{day} {month} {year} года",
    # the day is said in the neuter ("первое декабря"), in the genitive or dative after these
    # prepositions; after others ("в", "на") it stays nominative, which is approximate
    day_form="nn",
    day_form_after={"до": "gn", "с": "gn", "со": "gn", "от": "gn", "после": "gn", "к": "dn"},
    year_form="gm",
    year_words={
        "г.": ("года", "gm"),
        "года": ("года", "gm"),
        "году": ("году", "pm"),
        "год": ("год", "nm"),
    },
    year_after={"в": ("году", "pm")},  # prepositional: "в две тысячи двадцать шестом году"
    clock="{hours} {minutes}",
    clock_hour="{hours}",
    # num2words' case (nominative, genitive, dative, accusative, instrumental, prepositional)
    # and gender (masculine, feminine, neuter, plural) for what follows the hyphen
    ordinal_suffixes={
        "-й": "nm",
        "-ый": "nm",
        "-ий": "nm",
        "-ой": "nm",
        "-го": "gm",
        "-му": "dm",
        "-м": "pm",
        "-е": "nn",
        "-ое": "nn",
        "-я": "nf",
        "-ая": "nf",
        "-ю": "af",
        "-ей": "gf",
        "-х": "gp",
    },
    scales=("тысяч", "тысячи", "тысяча", "миллионов", "миллиона", "миллион", "миллиардов"),
    # fmt: off
    unit_symbols={
        "км": "length-kilometer", "м": "length-meter", "см": "length-centimeter",
        "мм": "length-millimeter", "кг": "mass-kilogram", "г": "mass-gram", "мг": "mass-milligram",
        "л": "volume-liter", "мл": "volume-milliliter", "ч": "duration-hour",
        "мин": "duration-minute", "км/ч": "speed-kilometer-per-hour",
        "м/с": "speed-meter-per-second", "кВт·ч": "energy-kilowatt-hour", "кВт": "power-kilowatt",
        "Вт": "power-watt", "гПа": "pressure-hectopascal", "ГБ": "digital-gigabyte",
        "МБ": "digital-megabyte",
    },
    # fmt: on
    abbreviations={
        "т.е.": "то есть",
        "т. е.": "то есть",
        "и т.д.": "и так далее",
        "и т. д.": "и так далее",
        "и т.п.": "и тому подобное",
        "и т. п.": "и тому подобное",
        "т.к.": "так как",
        "и др.": "и другие",
        "ул.": "улица",
        "пр.": "проспект",
        "стр.": "страница",
        "тыс.": "тысяч",
        "млн": "миллионов",
        "млрд": "миллиардов",
    },
    titles=frozenset(("т.е.", "т. е.", "т.к.", "ул.", "пр.", "стр.")),
)

TURKISH = Language(
    code="tr",
    number_words=_TURKISH_NUMBER_WORDS,
    decimal_word="virgül",
    fraction_style="number",  # num2words reads 3,5 as "üç virgül elli"
    minus="eksi",
    plus="artı",
    equals="eşittir",
    and_word="ve",
    at="et",
    dot="nokta",
    times="çarpı",
    approx="yaklaşık",
    minute_pad="sıfır",
    ordinal_suffixes={".": ""},
    ordinal_dot=True,
    unit_symbols={"km/sa": "speed-kilometer-per-hour"},
    currency_names={"TRY": (("lira",), ("kuruş",))},
    currency_symbols={"TL": "TRY"},
    scales=("bin", "milyon", "milyar"),
    abbreviations={
        "vb.": "ve benzeri",
        "vs.": "vesaire",
        "örn.": "örneğin",
        "bkz.": "bakınız",
        "yy.": "yüzyıl",
        "Dr.": "Doktor",
        "Prof.": "Profesör",
        "Doç.": "Doçent",
        "Av.": "Avukat",
        "Sn.": "Sayın",
        "Cad.": "Caddesi",
        "Sok.": "Sokağı",
        "Mah.": "Mahallesi",
        "Tel.": "Telefon",
    },
    titles=frozenset(
        ("örn.", "bkz.", "Dr.", "Prof.", "Doç.", "Av.", "Sn.", "Cad.", "Sok.", "Mah.")
    ),
)

CHINESE = Language(
    code="zh",
    number_engine="cn2an",
    joiner="",
    decimal_word="点",
    minus="负",
    plus="加",
    equals="等于",
    and_word="和",
    at="艾特",
    dot="点",
    times="乘",
    approx="约",
    percent="百分之{0}",
    range_format="{}到{}",
    year_style="digits",
    date_marks=("年", "月", "日"),
    clock="{hour}点{minute}分",
    clock_hour="{hour}点",
    minute_pad="零",
    hour_words={2: "两"},
    counters=frozenset(
        ("个", "只", "位", "件", "次", "天", "本", "张", "条", "杯", "种", "岁", "年", "周")
        + ("小时", "分钟", "个月")
    ),
    count_words={2: "两"},
    currency_names={
        "CNY": (("元",), ()),
        "JPY": (("日元",), ()),
        "USD": (("美元",), ()),
        "EUR": (("欧元",), ()),
    },
    currency_symbols={"¥": "CNY"},
)

JAPANESE = Language(
    code="ja",
    joiner="",  # years stay cardinals: num2words' to="year" gives an imperial era ("令和八年")
    decimal_word="点",
    minus="マイナス",
    plus="プラス",
    equals="イコール",
    and_word="アンド",
    at="アットマーク",
    dot="ドット",
    times="かける",
    approx="約",
    range_format="{}から{}",
    # fmt: off
    month_names=(
        "一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月", "十一月",
        "十二月",
    ),
    # fmt: on
    date_marks=("年", "月", "日"),
    clock="{hour}時{minute}分",
    clock_hour="{hour}時",
    currency_names={
        "JPY": (("円",), ()),
        "USD": (("ドル",), ("セント",)),
        "EUR": (("ユーロ",), ("セント",)),
    },
)

KOREAN = Language(
    code="ko",
    decimal_word="점",
    minus="마이너스",
    plus="플러스",
    equals="이퀄",
    and_word="그리고",
    at="골뱅이",
    dot="닷",
    times="곱하기",
    approx="약",
    percent="{0} 퍼센트",
    range_format="{}에서 {}",
    # 6 and 10 drop a sound before "월": "유월", "시월"
    # fmt: off
    month_names=(
        "일월", "이월", "삼월", "사월", "오월", "유월", "칠월", "팔월", "구월", "시월", "십일월",
        "십이월",
    ),
    # fmt: on
    date_marks=("년", "월", "일"),
    clock="{hour} 시 {minute} 분",
    clock_hour="{hour} 시",
    hour_words={0: "영"} | {hour: _KOREAN_COUNT_WORDS[hour] for hour in range(1, 25)},
    counters=frozenset(
        ("개", "명", "살", "마리", "시", "시간", "잔", "병", "권", "장", "대", "달")
    ),
    count_words=_KOREAN_COUNT_WORDS,
    currency_names={
        "KRW": (("원",), ()),
        "USD": (("달러",), ("센트",)),
        "EUR": (("유로",), ("센트",)),
        "JPY": (("엔",), ()),
    },
    phone_digits=("공", "일", "이", "삼", "사", "오", "육", "칠", "팔", "구"),
)

HINDI = Language(
    code="hi",
    number_engine="indic",
    decimal_word="दशमलव",
    minus="माइनस",
    plus="प्लस",
    equals="बराबर",
    and_word="और",
    at="एट",
    dot="डॉट",
    times="गुणा",
    approx="लगभग",
    range_format="{} से {}",
    year_hundred="सौ",
    clock="{hour} बजकर {minute} मिनट",
    clock_hour="{hour} बजे",
    time_suffix="बजे",
    currency_names={"INR": (("रुपया", "रुपये"), ("पैसा", "पैसे")), "USD": (("डॉलर",), ("सेंट",))},
    currency_symbols={"रु.": "INR"},
    scales=("हज़ार", "लाख", "करोड़"),
    abbreviations={"डॉ.": "डॉक्टर", "कि.मी.": "किलोमीटर", "प्रो.": "प्रोफ़ेसर"},
    titles=frozenset(("डॉ.", "प्रो.")),
)

# Every language with a table, by code.
LANGUAGES = {
    table.code: table
    for table in (
        ENGLISH,
        GERMAN,
        FRENCH,
        SPANISH,
        ITALIAN,
        PORTUGUESE,
        POLISH,
        RUSSIAN,
        TURKISH,
        CHINESE,
        JAPANESE,
        KOREAN,
        HINDI,
    )
}


@functools.lru_cache(maxsize=None)
def language(code: str) -> Language:
    """The table for a language code ("de", "de_DE", "de-AT", "DE"): a language without one gets
    a bare table whose numbers come from num2words if it knows the language, else stay digits."""
    base = code.replace("-", "_").split("_")[0].lower()
    if base in LANGUAGES:
        return LANGUAGES[base]
    engine = "num2words" if base in CONVERTER_CLASSES and base not in NUM2WORDS_HANGS else ""
    return Language(code=base, number_engine=engine, fraction_style="num2words")
