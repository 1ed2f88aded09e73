"""English, as said in the United States: num2words' number words without the British "and"
("one hundred one"), years in pairs ("nineteen eighty-four"), dates month first ("December
first"), "o'clock" and "a m"/"p m", ordinals and decades written with letters ("21st", "1990s"),
and the abbreviations, "St." said "Saint" before a name.
"""

from .base import Language

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
    ordinal_suffixes_any_case=True,
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
