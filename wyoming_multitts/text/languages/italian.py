"""Italian: "un" and "una" before nouns and units, "primo" for the first of a month, "e" between
hour and minute ("quattordici e trenta"), the ordinal indicators "1º" and "1ª", and the titles
and abbreviations ("Sig.ra", "Dott.", "ecc.").
"""

from .base import ROMANCE_FEMININE, ROMANCE_ORDINAL_SUFFIXES, Language

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
    ordinal_endings=ROMANCE_FEMININE,
    day_words={1: "primo"},
    clock="{hour} e {minute}",
    ordinal_suffixes=ROMANCE_ORDINAL_SUFFIXES,
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
