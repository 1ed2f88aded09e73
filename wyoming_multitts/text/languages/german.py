"""German: the case endings a day's ordinal takes after "am", "vom" or "ab" ("am ersten
Dezember"), "eine" before feminine units and nouns ("eine Stunde"), times written "14:30" or
"14.30 Uhr" ("vierzehn Uhr dreißig"), ordinals written with a dot ("3. Oktober"), and the common
abbreviations ("z. B.", "usw.", "Mio.").
"""

from .base import Language

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
