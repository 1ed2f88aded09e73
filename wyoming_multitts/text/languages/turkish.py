"""Turkish: num2words writes its number words together ("ikibinyirmialtı"), so they are split
apart ("iki bin yirmi altı"); ordinals are written with a dot ("3. sırada"), the lira is written
"TL" and said with its kuruş, and the abbreviations ("vb.", "Cad.") are expanded.
"""

from .base import Language

# Turkish number words, cardinal and ordinal, that num2words writes without spaces.
# fmt: off
_NUMBER_WORDS = (
    "bir", "iki", "üç", "dört", "beş", "altı", "yedi", "sekiz", "dokuz", "on", "yirmi", "otuz",
    "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan", "yüz", "bin", "milyon", "milyar",
    "trilyon", "katrilyon",
    "birinci", "ikinci", "üçüncü", "dördüncü", "beşinci", "altıncı", "yedinci", "sekizinci",
    "dokuzuncu", "onuncu", "yirminci", "otuzuncu", "kırkıncı", "ellinci", "altmışıncı",
    "yetmişinci", "sekseninci", "doksanıncı", "yüzüncü", "bininci", "milyonuncu", "milyarıncı",
)
# fmt: on

TURKISH = Language(
    code="tr",
    number_words=_NUMBER_WORDS,
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
