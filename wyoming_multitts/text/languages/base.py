"""The `Language` table: how one language writes and says numbers, dates, times, money, units
and symbols, as the words a speaker uses ("Komma", "ät", "pour cent"), the formats they are put
in ("{day} de {month} de {year}") and the abbreviations they expand, with what several languages
share (the Romance ordinal endings and indicators). Each language's module fills in one table;
`verbalize` reads it, and what the libraries (num2words, cn2an, indic-numtowords, babel's CLDR
data) already know is not repeated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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

    ordinal_suffixes_any_case: bool = False
    """Whether an ordinal's suffix is also read in capitals ("21ST")."""

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


# The ordinal endings of the Romance languages whose ordinals end in "-o": feminine "-a".
ROMANCE_FEMININE = {"f": (("o", "a"),)}

# Spanish, Italian and Portuguese ordinal indicators: "1º" masculine, "1ª" feminine.
ROMANCE_ORDINAL_SUFFIXES = {"º": "", "ª": "f", ".º": "", ".ª": "f"}
