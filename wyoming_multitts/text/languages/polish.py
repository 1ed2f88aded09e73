"""Polish: ordinals declined where dates and times need them (genitive "pierwszego grudnia ...
roku", feminine hours "czternasta", locative after "o" and "w"), "jedna" and "dwie" before
feminine units and nouns, ordinals written with a dot, and the abbreviations ("np.", "ul."), "ok."
only before a number.
"""

from .base import Language

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
