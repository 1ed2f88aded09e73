"""Spanish: "un" and "una" before nouns and units ("un minuto", "una hora"), "primer" and
"tercer" before a noun, dates with "de" ("1 de diciembre de 2026"), "y" between hour and minute,
the ordinal indicators "1º" and "1ª", "con" between euros and cents, and the abbreviations
("Sr.", "p. ej.").
"""

from .base import ROMANCE_FEMININE, ROMANCE_ORDINAL_SUFFIXES, Language

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
    ordinal_endings=ROMANCE_FEMININE,
    date_connector="de",
    date_format="{day} de {month} de {year}",
    day_month_format="{day} de {month}",
    clock="{hour} y {minute}",
    clock_hour="{hour} en punto",
    ordinal_suffixes=ROMANCE_ORDINAL_SUFFIXES,
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
