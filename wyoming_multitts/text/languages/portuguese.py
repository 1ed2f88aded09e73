"""Portuguese, in Brazilian spelling (num2words' "pt_BR", as babel's "pt" is Brazilian): "uma"
and "duas" before feminine units and nouns, dates with "de" ("primeiro de dezembro de ..."), "e"
between hour and minute, the ordinal indicators "1º" and "1ª", the real and its centavos, and
the abbreviations ("Sr.", "p. ex.").
"""

from .base import ROMANCE_FEMININE, ROMANCE_ORDINAL_SUFFIXES, Language

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
    ordinal_endings=ROMANCE_FEMININE,
    date_connector="de",
    date_format="{day} de {month} de {year}",
    day_month_format="{day} de {month}",
    day_words={1: "primeiro"},
    clock="{hour} e {minute}",
    clock_hour="{hours}",
    ordinal_suffixes=ROMANCE_ORDINAL_SUFFIXES,
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
