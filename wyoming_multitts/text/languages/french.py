"""French: "premier" for the first of a month, "une" before feminine units and nouns ("vingt et
une heures"), times written "14h30" and said in hours ("quatorze heures trente"), ordinal
suffixes ("1er", "1re", "2e"), and the titles and abbreviations ("M.", "Mme", "c.-à-d.").
"""

from .base import Language

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
