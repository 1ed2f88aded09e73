"""Say the numbers, dates, times, money, units and symbols of one sentence as words.

`verbalize(text, language)` takes one sentence of plain text (the caller has removed Markdown
and tags) and returns what a speaker of the language says for it: "Am 1.12. um 14:30 Uhr kostet
es 3,50 €" → "Am ersten Dezember um vierzehn Uhr dreißig kostet es drei Euro und fünfzig Cent".
The words come from the language's table (`languages/`) and from num2words, cn2an,
indic-numtowords and babel's CLDR data; this module is the glue, plus the rules no library has.

The passes run in a fixed order, one pattern each: e-mail addresses, abbreviations, domain names,
numeric dates, written dates, times, phone numbers, ordinals, products ("2x3"), counted things
(Korean "2개"), then every other number with what is written around it (money, percentages,
units, ranges, years), and last the symbols left. A pass replaces what it reads with words, so
later passes do not see it again.

Every pattern runs in time linear in the text: it matches a bounded number of characters, or it
consumes a whole run of digits and separators with nothing after it that can fail, and it never
starts inside such a run, so each character is read a bounded number of times.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import NamedTuple

import babel
import babel.dates
import babel.numbers
import babel.units
import cn2an
from indic_numtowords import num2words as indic_num2words
from num2words import CONVERTER_CLASSES, num2words

from . import languages
from .languages import CURRENCY_CODES, CURRENCY_SYMBOLS, KILO, SPACED_UNITS, UNITS
from .languages.base import Language

# ---------------------------------------------------------------------------
# Constants

# Most digits of a number said as a number; longer ones (ids, account numbers) are said digit by
# digit, which also keeps int() far from its 4,300-digit limit.
_MAX_NUMBER_DIGITS = 15

# Most digits indic-numtowords says as a Hindi number: it reads a longer one, given as a string,
# digit by digit, and fails on a longer int (indic-numtowords 1.1.0 `numtowords.py`, num2words).
_MAX_HINDI_DIGITS = 9

# Most digits after the decimal separator said as a number where a language does so ("virgule
# quatorze"); a longer fraction is said digit by digit.
_MAX_FRACTION_NUMBER = 3

# Four-digit numbers said as years, where a language says years differently from numbers.
_YEARS = range(1100, 2100)

# How many digits a phone number has (E.164 allows 15).
_PHONE_DIGITS = range(7, 16)

# Letters of the scripts that space their words (Latin, Greek, Cyrillic): a number glued to one
# is spaced from it ("mp3" → "mp three"), and a unit or suffix must not run on into one.
_LETTERS = "A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff"

# Numbers that between them fall in every CLDR plural category of our languages ("one", "few",
# "many", "other"); a unit's name for a category is read off one of them.
_PLURAL_SAMPLES = (1, 2, 5, 0, 21, 22, 25, 11, 12, 101, 1000000, Decimal("1.5"), Decimal("0.5"))

# Sign characters → the field of `Language` that says them.
_SIGNS = {"-": "minus", "−": "minus", "+": "plus"}

# Symbols said as a word wherever they are left → the field of `Language` that says them.
_SYMBOLS = {"&": "and_word", "+": "plus", "=": "equals", "@": "at", "×": "times", "~": "approx"}

# Punctuation a spoken symbol is not spaced from ("… & Co." → "… and Co.").
_NO_SPACE_BEFORE = ".,;:!?)]}"

# ---------------------------------------------------------------------------
# Patterns that are the same in every language (each compiled once)

# A run of whitespace.
_SPACES_RE = re.compile(r"\s+")

# A digit, to skip the number passes in text without one.
_DIGIT_RE = re.compile(r"\d")

# A run of digits (the groups of a phone number, the parts of a version).
_DIGITS_RE = re.compile(r"\d+")

# A separator between the digits of a number token.
_SEPARATOR_RE = re.compile(r"\D")

# A word (the noun after a number).
_WORD_RE = re.compile(r"[^\W\d_]+")

# A letter of a spaced script, to space a number glued to it.
_LETTER_RE = re.compile(f"[{_LETTERS}]")

# An e-mail address: a local part, "@", and a domain of two labels or more.
_EMAIL_RE = re.compile(
    r"(?<![\w.+-])(?P<local>[\w.+-]+)@(?P<domain>[^\W_][\w-]*(?:\.[^\W_][\w-]*)+)"
)

# Labels joined by dots ("example.com", "light.kitchen", "3.14"): `_is_domain` decides.
_DOMAIN_RE = re.compile(r"(?<![\w.@-])[^\W_][\w-]*(?:\.[^\W_][\w-]*)+")

# A numeric date: ISO "2026-12-01" (or with "/" or "."), year last "12/01/2026" "1.12.26", or
# day and month between dots "1.12." (in languages that date with dots).
_NUMERIC_DATE_RE = re.compile(
    r"(?=\d)(?<![\d.,/-])(?:(?P<iso>\d{4})(?P<iso_sep>[-/.])(?P<iso_month>\d{1,2})(?P=iso_sep)"
    r"(?P<iso_day>\d{1,2})|(?P<first>\d{1,2})(?P<sep>[-/.])(?P<second>\d{1,2})(?P=sep)"
    r"(?P<year>\d{4}|\d{2})|(?P<day>\d{1,2})\.(?P<month>\d{1,2})\.)(?!\d|[.,/-]\d)"
)

# A phone number: international ("+49 30 1234567", "+1 (555) 123-4567"), North American
# ("(555) 123-4567", "555-123-4567") or national with a leading zero ("0171 2345678").
_PHONE_RE = re.compile(
    rf"(?=[\d+(])(?:(?<![{_LETTERS}\d+])\+\d+(?:[ ./-]?\(\d+\)|[ ./-]\d+)*"
    rf"|(?<![{_LETTERS}\d(])\(\d{{3}}\) ?\d{{3}}[-. ]\d{{4}}(?!\d)"
    rf"|(?<![{_LETTERS}\d.,-])\d{{3}}-\d{{3}}-\d{{4}}(?![\d-])"
    rf"|(?<![{_LETTERS}\d.,/+-])0\d+(?:[ /-]\d+)+)"
)

# The "x" or "×" of a product between two numbers ("2x3", "2 × 3"), with its spaces.
_TIMES_RE = re.compile(r"(?<=\d) ?[x×] ?(?=\d)")

# A symbol said as a word, with the spaces around it ("≈" is said like "~").
_SYMBOL_RE = re.compile(f" ?([{re.escape(''.join(_SYMBOLS))}≈]) ?")


# ---------------------------------------------------------------------------
# Per-language data, derived once per language


class _Cldr(NamedTuple):
    """What babel's CLDR data says about a language (empty where CLDR does not know it)."""

    locale: babel.Locale | None
    separators: tuple[str, str]  # decimal and group separator, a space-like group one as " "
    date_pattern: str  # the short date pattern ("M/d/yy", "dd.MM.yy"): a numeric date's order
    months: tuple[str, ...]  # spoken month names in the form after a day ("grudnia")
    written_months: dict[str, int]  # month names as written, full or short, either case → month


@functools.lru_cache(maxsize=None)
def _cldr(lang: Language) -> _Cldr:
    """The CLDR data of a language."""
    try:
        locale = babel.Locale.parse(lang.code)
    except (babel.UnknownLocaleError, ValueError):
        return _Cldr(None, (".", ","), "d/M/y", lang.month_names, {})
    group = babel.numbers.get_group_symbol(locale)
    separators = (babel.numbers.get_decimal_symbol(locale), " " if group.isspace() else group)
    names = babel.dates.get_month_names("wide", locale=locale)
    written: dict[str, int] = {}
    for width in ("wide", "abbreviated") if not lang.date_marks else ():
        for month, name in babel.dates.get_month_names(width, locale=locale).items():
            name = name.rstrip(".")
            written |= dict.fromkeys((name, name.lower(), name[:1].upper() + name[1:]), month)
    return _Cldr(
        locale,
        separators,
        babel.dates.get_date_format("short", locale=locale).pattern,
        lang.month_names or tuple(names[month] for month in range(1, 13)),
        written,
    )


@functools.lru_cache(maxsize=4096)
def _unit_template(lang: Language, unit: str, category: str) -> str | None:
    """CLDR's long name of a unit around "{0}" for one plural category ("{0} Grad Celsius")."""
    locale = _cldr(lang).locale
    if unit == "energy-watt-hour":  # "{0} Kilowattstunden" → "{0} Wattstunden"
        template = _unit_template(lang, "energy-kilowatt-hour", category) or ""
        for prefix in KILO:
            start = template.lower().find(prefix)
            if start >= 0:
                rest = template[start + len(prefix) :]
                rest = rest[:1].upper() + rest[1:] if template[start].isupper() else rest
                return template[:start] + rest
    if locale is None or unit == "energy-watt-hour":
        return None
    sample = next((n for n in _PLURAL_SAMPLES if locale.plural_form(n) == category), 2)
    numerator, _, denominator = unit.partition("/")
    try:
        if denominator:
            text = babel.units.format_compound_unit(
                sample, numerator, denominator_unit=denominator, locale=locale
            )
        else:
            text = babel.units.format_unit(sample, numerator, length="long", locale=locale)
    except babel.units.UnknownUnitError:
        return None
    formatted = babel.numbers.format_decimal(sample, locale=locale)
    if not text or formatted not in text:
        return None
    template = text.replace(formatted, "{0}", 1)
    return template if lang.joiner else template.replace(" ", "")


class _Patterns(NamedTuple):
    """The patterns of one language, made of its words, suffixes and separators."""

    abbreviations: dict[str, str]  # written → spoken, also capitalised where written lowercase
    abbreviation: re.Pattern[str] | None  # an abbreviation (a letter-final one as a whole word)
    # a date with the month's name ("1. Dezember 2026", "1 de diciembre", "December 1st"), a
    # year with its word ("2026 г."), or a Chinese, Japanese or Korean date ("2026年12月1日")
    written_date: re.Pattern[str] | None
    time: re.Pattern[str]  # a clock time: "14:30", "7:05 pm", "14 Uhr", "14.30 Uhr", "14h30"
    # digits with an ordinal suffix ("21st", "1er", "1º", "2-го"), Turkish "3." before a word,
    # or an English decade ("1990s", "'80s")
    ordinal: re.Pattern[str] | None
    counted: re.Pattern[str] | None  # a number before a counter word (Korean "2개", "2个")
    # a number token ("12,000", "3,5", "1.10.2", "12 000" where groups are spaced) with its sign,
    # a currency or "%" before it, a range's second number, a scale word ("million"), and a
    # currency, "%" or unit after it
    quantity: re.Pattern[str]
    splitter: re.Pattern[str] | None  # the words num2words runs together (Turkish)


def _alternatives(written: Iterable[str]) -> str:
    """An alternation of literal strings, longest first (so "km/h" wins over "km")."""
    return "|".join(re.escape(item) for item in sorted(written, key=len, reverse=True))


def _starts(*written: Iterable[str]) -> str:
    """A lookahead for the first characters of strings: it skips, with one test, the places
    where a long alternation of them cannot match (most of the text)."""
    return f"(?=[{re.escape(''.join({item[0] for items in written for item in items}))}])"


@functools.lru_cache(maxsize=None)
def _patterns(lang: Language) -> _Patterns:
    """The patterns of a language."""
    letters, cldr = _LETTERS, _cldr(lang)
    abbreviations = dict(lang.abbreviations) | dict(lang.before_number)
    for written, spoken in list(abbreviations.items()):
        if written[0].islower():
            abbreviations[written[0].upper() + written[1:]] = spoken[0].upper() + spoken[1:]
    whole = "|".join(  # a letter-final abbreviation only as a whole word ("dr", not "drei")
        re.escape(form) + (r"(?!\w)" if form[-1].isalnum() else "")
        for form in sorted(abbreviations, key=len, reverse=True)
    )
    suffix = _alternatives(suffix for suffix in lang.ordinal_suffixes if suffix != ".")
    suffix = f"(?i:{suffix})" if suffix and lang.ordinal_suffixes_any_case else suffix

    dates, year_words = [], _alternatives(lang.year_words)
    if cldr.written_months:
        month = _alternatives(cldr.written_months)
        of = rf"(?:{re.escape(lang.date_connector)} )?" if lang.date_connector else ""
        year_word = rf"(?: (?P<year_word>{year_words}))?" if year_words else ""
        dates.append(
            rf"(?<![\d.,])(?P<day>\d{{1,2}})(?:{suffix})?\.? ?{of}(?P<month>{month})\.?"
            rf"(?:,? {of}(?P<year>\d{{4}}){year_word})?(?![{letters}\d])"
        )
        if lang.month_first:
            dates.append(
                rf"(?<![{letters}]){_starts(cldr.written_months)}(?P<month2>{month})\.? "
                rf"(?P<day2>\d{{1,2}})(?:{suffix})?(?!\d)(?:,? (?P<year2>\d{{4}}))?"
                rf"(?![{letters}\d])"
            )
    if year_words:
        dates.append(rf"(?<![\d.,])(?P<year3>\d{{4}}) (?P<word3>{year_words})(?![{letters}])")
    if lang.date_marks:
        y, m, d = (re.escape(mark) for mark in lang.date_marks)
        dates.append(
            rf"(?<![\d.,])(?:(?P<y>\d{{4}}) ?{y}(?: ?(?P<m>\d{{1,2}}) ?{m}"
            rf"(?: ?(?P<d>\d{{1,2}}) ?{d})?)?|(?P<m2>\d{{1,2}}) ?{m}(?: ?(?P<d2>\d{{1,2}}) ?{d})?)"
        )

    clock = (
        rf"(?P<sep>{_alternatives(lang.time_separators)})(?P<minute>\d{{2}})"
        rf"(?::(?P<second>\d{{2}}))?(?![\d:])"
    )
    time_suffixes = [re.escape(lang.time_suffix)] if lang.time_suffix else []
    time_suffixes += [r"[AaPp]\.? ?[Mm]\.?"] if lang.am_pm else []
    if time_suffixes:
        after = rf"(?P<{{}}>{'|'.join(time_suffixes)})(?![{letters}])"
        clock = rf"(?:{clock}(?: ?{after.format('suffix')})?| ?{after.format('suffix_only')})"

    ordinals = [rf"(?<![\d.,])(?P<num>\d+)(?P<suffix>{suffix})(?![{letters}\d])"] if suffix else []
    if "." in lang.ordinal_suffixes:
        ordinals.append(r"(?<![\d.,])(?P<dotted>\d+)\.(?= [^\W\d_])")
    if lang.decade_suffix:
        decade = re.escape(lang.decade_suffix)
        ordinals.append(rf"(?<![\d.,])['’]?(?P<decade>\d{{1,3}}0){decade}(?![{letters}\d])")

    spaces = "\u00a0\u202f" + (" " if cldr.separators[1] == " " else "")
    number = rf"\d+(?:[.,]\d+|[{spaces}]\d{{3}}(?!\d))*"
    codes = rf"(?<![A-Za-z])(?:{_alternatives(CURRENCY_CODES)})(?![A-Za-z])"
    currency = f"{_alternatives(set(CURRENCY_SYMBOLS) | set(lang.currency_symbols))}|{codes}"
    units = _alternatives(set(UNITS) | set(lang.unit_symbols))
    scale = rf"(?: ?(?P<scale>{_alternatives(lang.scales)})(?![{letters}]))?" if lang.scales else ""
    counters = _alternatives(lang.counters)
    starts = _starts("-−+%", CURRENCY_CODES, CURRENCY_SYMBOLS, lang.currency_symbols)
    return _Patterns(
        abbreviations=abbreviations,
        abbreviation=(
            re.compile(rf"(?<![\w.]){_starts(abbreviations)}(?:{whole})") if whole else None
        ),
        written_date=re.compile("|".join(dates)) if dates else None,
        time=re.compile(rf"(?=\d)(?<![\d.,:])(?P<hour>\d{{1,2}}){clock}"),
        ordinal=re.compile(f"(?=[\\d'’])(?:{'|'.join(ordinals)})") if ordinals else None,
        counted=(
            re.compile(rf"(?<![\d.,~〜-])(?P<num>\d{{1,2}})(?= ?(?:{counters}))")
            if counters
            else None
        ),
        quantity=re.compile(
            rf"(?:(?=\d)|{starts})"
            rf"(?P<sign>(?<![{letters}\d])[-−+])?(?:(?P<pre>{currency}|%) ?)?"
            rf"(?<!\d)(?<!\d[.,])(?P<num>{number})(?:(?:[-~〜]| ?– ?)(?P<num2>{number}))?{scale}"
            rf"(?:(?P<space> ?)(?P<post>{currency}|%|{units})(?![{letters}\d/]))?"
        ),
        splitter=re.compile(_alternatives(lang.number_words)) if lang.number_words else None,
    )


# ---------------------------------------------------------------------------
# Numbers to words


def _fix(lang: Language, words: str) -> str:
    """num2words' words made right for the language (`cardinal_fixes`, `number_words`)."""
    for old, new in lang.cardinal_fixes:
        words = words.replace(old, new)
    if (splitter := _patterns(lang).splitter) is None:
        return words
    spaced = [(splitter.findall(word), word) for word in words.split(" ")]
    return " ".join(" ".join(parts) if "".join(parts) == word else word for parts, word in spaced)


def _num2words(lang: Language, value: int | Decimal, **options: object) -> str | None:
    """num2words' words for a value, or None where its language fails on it (Telugu above 10^10,
    Chechen on decimals, Romanian on some decimals in num2words 0.5.14): the caller says less."""
    try:
        return _fix(lang, num2words(value, lang=lang.num2words_code or lang.code, **options))
    except (ArithmeticError, LookupError, TypeError, ValueError, NotImplementedError):
        return None


@functools.lru_cache(maxsize=4096)
def _cardinal(lang: Language, number: int) -> str:
    """A non-negative integer in words (in digits where the library fails on it)."""
    if lang.number_engine == "cn2an":
        return str(cn2an.an2cn(str(number)))
    if lang.number_engine == "indic":
        return str(indic_num2words(str(number), lang=lang.code))
    return _num2words(lang, number) or str(number)


@functools.lru_cache(maxsize=1024)
def _ordinal(lang: Language, number: int, form: str = "") -> str:
    """An ordinal in a form of the language's table (`ordinal_endings`; two letters are
    num2words' case and gender: Russian "gm" → "второго")."""
    if lang.number_engine != "num2words":
        return _cardinal(lang, number)
    options = {}
    if len(form) == 2:  # "p" is no gender but the plural
        options = {"case": form[0], "gender": form[1].replace("p", "m"), "plural": form[1] == "p"}
    words = _num2words(lang, number, to="ordinal", **options) or _cardinal(lang, number)
    endings = lang.ordinal_endings.get(form, ())
    return " ".join(_with_ending(word, endings) for word in words.split(" "))


def _with_ending(word: str, endings: tuple[tuple[str, str], ...]) -> str:
    """A word with the first (ending, replacement) pair that fits it applied."""
    old, new = next(((old, new) for old, new in endings if word.endswith(old)), ("", ""))
    return word[: len(word) - len(old)] + new if old else word


def _say_digits(lang: Language, digits: str, phone: bool = False) -> str:
    """Digits one by one: "007" → "zero zero seven"."""
    words = lang.phone_digits if phone and lang.phone_digits else None
    return lang.joiner.join(words[int(d)] if words else _cardinal(lang, int(d)) for d in digits)


def _say_integer(lang: Language, digits: str) -> str:
    """An integer as written; a long one, or one with leading zeros ("007"), digit by digit."""
    longest = _MAX_HINDI_DIGITS if lang.number_engine == "indic" else _MAX_NUMBER_DIGITS
    if len(digits) > longest or (len(digits) > 1 and digits[0] == "0"):
        return _say_digits(lang, digits)
    return _cardinal(lang, int(digits))


class _Number(NamedTuple):
    """A number as written, without its separators."""

    integer: str  # the digits before the decimal separator
    fraction: str = ""  # the digits after it ("" for an integer)

    def value(self) -> Decimal:
        """The number's value (its plural category counts the fraction digits written)."""
        return Decimal(f"{self.integer}.{self.fraction}" if self.fraction else self.integer)


def _is_grouped(parts: list[str]) -> bool:
    """Whether digit groups are those of one integer: "1,234,567" or Indian "12,34,567"."""
    first, rest = parts[0], parts[1:]
    if not first or first[0] == "0" or len(first) > 3 or len(rest[-1]) != 3:
        return False
    middle = {len(part) for part in rest[:-1]}
    return middle <= {3} or (middle == {2} and len(first) <= 2)


def _parse(lang: Language, token: str) -> _Number | None:
    """A run of digits and separators read the most plausible way in the language, or None if it
    is no number (a version "1.10.2", a list "1,2,3"): "1.500" is 1500 in German, "2.5" 2,5."""
    separators = [" " if mark.isspace() else mark for mark in _SEPARATOR_RE.findall(token)]
    if not separators:
        return _Number(token)
    parts, last = _SEPARATOR_RE.split(token), separators[-1]
    decimal = _cldr(lang).separators[0]
    if len(set(separators[:-1])) == 1 and last in ".," and last != separators[0]:
        # grouped digits and a decimal separator: "1.234,56", "1,234.56"
        return _Number("".join(parts[:-1]), parts[-1]) if _is_grouped(parts[:-1]) else None
    if len(set(separators)) != 1:
        return None
    if len(separators) > 1 or last == " ":
        return _Number("".join(parts)) if _is_grouped(parts) else None
    if last != decimal and _is_grouped(parts):  # "1.500" in French too: a group of thousands
        return _Number("".join(parts))
    return _Number(parts[0], parts[1])  # else a decimal separator, native or not ("2.5")


def _say_number(lang: Language, number: _Number, sign: str = "") -> str:
    """A number in words, with its sign: "-3.14" → "minus three point one four"."""
    integer, fraction = number
    decimal_word = lang.decimal_word or _cldr(lang).separators[0]
    short = 0 < len(fraction) <= _MAX_FRACTION_NUMBER and len(integer) <= _MAX_NUMBER_DIGITS
    own = _num2words(lang, number.value()) if short and lang.fraction_style == "num2words" else None
    if not fraction:
        words = _say_integer(lang, integer)
    elif own:
        words = own  # num2words' own reading: "три целых четырнадцать сотых"
    else:  # "3,05": "drei Komma null fünf" digit by digit, or "trois virgule zéro cinq"
        rest = fraction.lstrip("0")
        as_number = lang.fraction_style == "number" and 0 < len(rest) <= _MAX_FRACTION_NUMBER
        zeros = fraction[: len(fraction) - len(rest)] if as_number else fraction
        said = (_say_digits(lang, zeros), _cardinal(lang, int(rest)) if as_number else "")
        words = lang.joiner.join(filter(None, (_say_integer(lang, integer), decimal_word) + said))
    # the sign is said here, not by num2words (its Polish fails on negative numbers)
    return lang.joiner.join((_sign_word(lang, sign), words)) if sign else words


def _sign_word(lang: Language, sign: str) -> str:
    """The word for a sign ("minus"), or the sign itself where the language has none."""
    return (getattr(lang, _SIGNS[sign]) or sign) if sign else ""


def _say_token(lang: Language, token: str) -> str:
    """Digits and separators that are no number: a version or address "1.10.2" with the
    language's "dot", or else each digit group on its own, the separators kept."""
    if set(_SEPARATOR_RE.findall(token)) == {"."} and lang.dot:
        return f"{lang.joiner}{lang.dot}{lang.joiner}".join(
            _say_integer(lang, part) for part in token.split(".")
        )
    return _DIGITS_RE.sub(lambda group: _say_integer(lang, group[0]), token)


@functools.lru_cache(maxsize=1024)
def _say_year(lang: Language, digits: str, form: str | None = None) -> str:
    """A year in words: "nineteen eighty-four", "neunzehnhundertvierundachtzig", "二零二六"."""
    year = int(digits)
    century, rest = divmod(year, 100)
    if form is not None:
        return _ordinal(lang, year, form)
    if lang.year_style == "digits" and len(digits) == 4:
        return _say_digits(lang, digits)
    if lang.year_hundred and 11 <= century <= 19:
        said = f"{_cardinal(lang, century)} {lang.year_hundred}"
        return f"{said} {_cardinal(lang, rest)}" if rest else said
    if lang.year_style == "num2words":
        return _num2words(lang, year, to="year") or _say_integer(lang, digits)
    return _say_integer(lang, digits)


def _gendered(lang: Language, words: str, feminine: bool) -> str:
    """Number words in the form they take before a unit or noun ("eine Stunde", "ein Euro")."""
    forms = lang.feminine_numbers if feminine else lang.unit_numbers
    head, space, last = words.rpartition(" ")
    return head + space + forms.get(last, last)


def _unit_phrase(lang: Language, unit: str, words: str, value: Decimal | int) -> str:
    """Number words with a unit's name, in the plural its value takes: "fünf Kilometer"."""
    locale = _cldr(lang).locale
    category = locale.plural_form(abs(Decimal(value))) if locale else "other"
    template = _unit_template(lang, unit, category)
    return template.replace("{0}", words) if template else words


# ---------------------------------------------------------------------------
# Money


@functools.lru_cache(maxsize=None)
def _currency_forms(lang: Language, code: str) -> tuple[tuple[str, ...], ...] | None:
    """num2words' (unit forms, subunit forms) of a currency in the language, if it has them."""
    converter = CONVERTER_CLASSES.get(lang.num2words_code or lang.code)
    forms = getattr(converter, "CURRENCY_FORMS", {}).get(code)
    if isinstance(forms, tuple) and len(forms) == 2 and all(isinstance(f, tuple) for f in forms):
        return forms
    return None  # no such currency, or forms of another shape (Korean)


@functools.lru_cache(maxsize=1024)
def _currency_name(lang: Language, code: str, count: int, subunit: bool = False) -> str:
    """A currency's unit (or subunit) name for a count: "euros", "Cent"; "" if it has none."""
    if code in lang.currency_names:
        names = lang.currency_names[code][subunit]
        return names[0 if count == 1 else -1] if names else ""
    forms = _currency_forms(lang, code) if lang.number_engine == "num2words" else None
    if forms is not None:
        try:
            return str(
                CONVERTER_CLASSES[lang.num2words_code or lang.code].pluralize(count, forms[subunit])
            )
        except NotImplementedError:  # num2words 0.5.14 has no plural rule for some languages
            return forms[subunit][0 if count == 1 else -1]
    locale = _cldr(lang).locale
    return "" if subunit or not locale else babel.numbers.get_currency_name(code, count, locale)


def _say_money(
    lang: Language, code: str, number: _Number, sign: str, scale: str, upper: _Number | None
) -> str:
    """An amount of money in words: "three dollars and fifty cents", "1,5 Mio. €"."""
    join = lang.joiner
    if scale or upper:  # "$1.5 million", "$10-20": the amount, then the currency's plural
        amount = _say_number(lang, number, sign)
        if upper:
            amount = lang.range_format.format(amount, _say_number(lang, upper))
        count = 1_000_000 if scale else int(upper.integer[-_MAX_NUMBER_DIGITS:]) if upper else 2
        of = lang.scale_of if scale else ""
        return join.join(filter(None, (amount, scale, of, _currency_name(lang, code, count))))
    integer, fraction = int(number.integer[-_MAX_NUMBER_DIGITS:]), number.fraction
    cents = int(fraction.ljust(2, "0")) if len(fraction) <= 2 else 0  # "$3.5": fifty cents
    sign_word = _sign_word(lang, sign) + join if sign else ""
    whole = _gendered(lang, _say_integer(lang, number.integer), False)
    main = f"{sign_word}{whole}{join}{_currency_name(lang, code, integer)}"
    subunit = _currency_name(lang, code, cents, subunit=True) if cents else ""
    if subunit:  # "three dollars and fifty cents", "fifty cents"
        small = f"{_gendered(lang, _cardinal(lang, cents), False)}{join}{subunit}"
        if not integer:
            return sign_word + small
        return join.join(filter(None, (main, lang.money_joiner, small)))
    if cents and code not in lang.currency_names:  # no subunit name: "zwanzig Franken fünfzig"
        return main + join + _cardinal(lang, cents)
    if fraction.strip("0"):  # "三点五元": the amount as a number, then the currency
        amount = _say_number(lang, _Number(number.integer, fraction.rstrip("0")), sign)
        return f"{amount}{join}{_currency_name(lang, code, 2)}"
    return main


def _currency_code(lang: Language, written: str | None) -> str | None:
    """The ISO code a written currency symbol or code stands for, or None."""
    code = lang.currency_symbols.get(written or "") or CURRENCY_SYMBOLS.get(written or "")
    return code or (written if written in CURRENCY_CODES else None)


# ---------------------------------------------------------------------------
# Dates and times


def _word_before(text: str, start: int) -> str:
    """The word just before text[start], lowercase (looking at most a dozen characters back)."""
    words = text[max(0, start - 12) : start].split()
    return words[-1].strip(",;:(").lower() if words else ""


def _word_after(text: str, end: int) -> str:
    """The word after text[end] when a space comes first (at most 20 characters of it)."""
    word = _WORD_RE.match(text, end + 1, end + 21) if text[end : end + 1] == " " else None
    return word[0] if word else ""


def _say_date(
    lang: Language, day: int | None, month: int | None, year: str | None, before: str = ""
) -> str | None:
    """A date in words, or None if it is none; `before` is the word before it ("am" → "am
    ersten"). Chinese, Japanese and Korean dates may lack the day, or the year and month."""
    months = _cldr(lang).months
    if not months or not 1 <= (month or 1) <= 12 or not 1 <= (day or 1) <= 31:
        return None
    month_word = months[month - 1] if month else ""
    if lang.date_marks:  # "二零二六年十二月一日", "이천이십육년 십이월 일일"
        year_mark, _, day_mark = lang.date_marks
        parts = (
            _say_year(lang, year) + year_mark if year else "",
            month_word,
            _cardinal(lang, day) + day_mark if day else "",
        )
        return lang.joiner.join(filter(None, parts))
    if day is None:
        return None
    form = lang.day_form_after.get(before, lang.day_form)
    day_word = lang.day_words.get(day) or (
        _cardinal(lang, day) if form is None else _ordinal(lang, day, form)
    )
    if year is None:
        return lang.day_month_format.format(day=day_word, month=month_word)
    year_word = _say_year(lang, year, lang.year_form)
    return lang.date_format.format(day=day_word, month=month_word, year=year_word)


def _say_clock(
    lang: Language, hour: int, minute: int | None, second: int | None, am_pm: str, before: str
) -> str:
    """A clock time in words: "fourteen thirty", "vierzehn Uhr dreißig", "十四点三十分";
    `before` is the word before it (Polish "o" → "o czternastej")."""
    if hour in lang.hour_words:
        hour_word = lang.hour_words[hour]
    elif lang.hour_form is not None:
        hour_word = _ordinal(lang, hour, lang.hour_form_after.get(before, lang.hour_form))
    else:
        hour_word = _gendered(lang, _cardinal(lang, hour), "clock-hour" in lang.feminine_units)
    if minute:
        form = lang.clock
    elif am_pm:
        form = "{hour}"
    else:
        form = lang.clock_hour_24 if hour > 12 and lang.clock_hour_24 else lang.clock_hour
    minute_word = _cardinal(lang, minute or 0)
    if minute and minute < 10 and lang.minute_pad:
        minute_word = lang.joiner.join((lang.minute_pad, minute_word))
    minute_unit = _gendered(lang, minute_word, "clock-minute" in lang.feminine_units)
    said = form.format(
        hour=hour_word,
        minute=minute_word,
        hours=_unit_phrase(lang, "duration-hour", hour_word, hour) if "{hours}" in form else "",
        minutes=_unit_phrase(lang, "duration-minute", minute_unit, minute) if minute else "",
    )
    if second:
        seconds = _gendered(lang, _cardinal(lang, second), "duration-second" in lang.feminine_units)
        said += lang.joiner + _unit_phrase(lang, "duration-second", seconds, second)
    return f"{said} {am_pm}" if am_pm else said


def _keep_final_dot(match: re.Match[str], said: str) -> str:
    """Said words, with the dot the match swallowed kept when it also ended the sentence."""
    text = match.string
    return said + "." if match.end() == len(text) and text.endswith(".") else said


# ---------------------------------------------------------------------------
# Replacements (one per pass)


def _is_domain(labels: list[str]) -> bool:
    """Whether dot-joined labels are a domain or file name ("example.com", "light.kitchen"), not
    a missing space ("end.Next") or a number ("3.14"): later labels lowercase, the last letters."""
    later = (label[0].islower() or label[0].isdigit() for label in labels[1:])
    return len(labels[-1]) >= 2 and labels[-1].isalpha() and all(later)


def _replace_email(lang: Language, match: re.Match[str]) -> str:
    """An e-mail address said: "anna at example dot com"."""
    labels, dot = match["domain"].split("."), f" {lang.dot} "
    if not _is_domain(labels):
        return match[0]
    return f"{dot.join(filter(None, match['local'].split('.')))} {lang.at} {dot.join(labels)}"


def _replace_abbreviation(lang: Language, match: re.Match[str]) -> str:
    """An abbreviation expanded ("z.B." → "zum Beispiel", "St. Louis" → "Saint Louis")."""
    written, text, end = match[0], match.string, match.end()
    following = text[end : end + 2].lstrip()[:1]
    if written.lower() in map(str.lower, lang.before_number) and not following.isdigit():
        return written  # "ok." only before a number
    before = text[max(0, match.start() - 12) : match.start()].split()
    after_name = bool(before) and before[-1][:1].isupper()  # "Baker St." is a street
    said = lang.before_name.get(written) if following.isupper() and not after_name else None
    said = said or _patterns(lang).abbreviations[written]
    # the dot also ends the sentence: at the end, or before a capital when no name follows
    # ("… et cetera. Then"; the splitter joined them, taking "etc." for an abbreviation)
    names_next = written in lang.titles or said in lang.before_name.values()
    ends = end == len(text) or (following.isupper() and not names_next)
    if written.endswith(".") and ends:
        return said + "."
    return said + " " if text[end : end + 1].isalnum() else said


def _replace_domain(lang: Language, match: re.Match[str]) -> str:
    """A domain or file name said: "example dot com"."""
    labels = match[0].split(".")
    return f" {lang.dot} ".join(labels) if _is_domain(labels) else match[0]


def _replace_numeric_date(lang: Language, match: re.Match[str]) -> str:
    """A numeric date said in the language's order ("12/01/2026" is December 1st in English)."""
    pattern, before = _cldr(lang).date_pattern, _word_before(match.string, match.start())
    if match["iso"]:
        said = _say_date(lang, int(match["iso_day"]), int(match["iso_month"]), match["iso"], before)
        return said or match[0]
    if match["day"]:  # "am 1.12.": only where dates are written with dots
        said = _say_date(lang, int(match["day"]), int(match["month"]), None, before)
        return _keep_final_dot(match, said) if said and "." in pattern else match[0]
    if match["sep"] == "." and "." not in pattern and len(match["year"]) == 2:  # version 1.10.22
        return match[0]
    day, month = int(match["first"]), int(match["second"])
    if pattern.find("M") < pattern.find("d") and day <= 12 or month > 12:  # month first
        day, month = month, day
    return _say_date(lang, day, month, match["year"], before) or match[0]


def _replace_written_date(lang: Language, match: re.Match[str]) -> str:
    """A date with a month's name, a year with its word, or a CJK date, said."""
    groups, before = match.groupdict(), _word_before(match.string, match.start())
    if groups.get("year3"):  # "2026 г." → "две тысячи двадцать шестого года"
        word, form = lang.year_after.get(before) or lang.year_words[groups["word3"]]
        return _keep_final_dot(match, f"{_say_year(lang, groups['year3'], form)} {word}")
    if lang.date_marks:
        month, day = groups.get("m") or groups.get("m2"), groups.get("d") or groups.get("d2")
        said = _say_date(
            lang, int(day) if day else None, int(month) if month else None, groups.get("y")
        )
        return said or match[0]
    month_name, day = groups.get("month") or groups["month2"], groups.get("day") or groups["day2"]
    year = groups.get("year") or groups.get("year2")
    said = _say_date(lang, int(day), _cldr(lang).written_months[month_name], year, before)
    return _keep_final_dot(match, said) if said else match[0]


def _replace_time(lang: Language, match: re.Match[str]) -> str:
    """A clock time said: "14:30" → "fourteen thirty", "3 pm" → "three p m"."""
    groups = match.groupdict()
    suffix = groups.get("suffix") or groups.get("suffix_only") or ""
    am_pm = lang.am_pm[suffix[0] in "Pp"] if lang.am_pm and suffix[:1] in "AaPp" and suffix else ""
    hour = int(match["hour"])
    minute = int(match["minute"]) if match["minute"] else None
    second = int(match["second"]) if match["second"] else None
    if match["sep"] == "." and not suffix:  # "1.50" is a time only as "1.50 Uhr"
        return match[0]
    if hour > (12 if am_pm else 24) or (minute or 0) > 59 or (second or 0) > 59:
        return match[0]
    before = _word_before(match.string, match.start())
    return _keep_final_dot(match, _say_clock(lang, hour, minute, second, am_pm, before))


def _replace_phone(lang: Language, match: re.Match[str]) -> str:
    """A phone number said digit by digit, a pause (comma) between its groups."""
    groups = _DIGITS_RE.findall(match[0])
    if sum(len(group) for group in groups) not in _PHONE_DIGITS:
        return match[0]
    said = ", ".join(_say_digits(lang, group, phone=True) for group in groups)
    return f"{lang.plus}{lang.joiner}{said}" if match[0].startswith("+") and lang.plus else said


def _replace_ordinal(lang: Language, match: re.Match[str]) -> str:
    """An ordinal said ("21st" → "twenty-first", "2-го" → "второго"), or a decade ("1990s")."""
    groups = match.groupdict()
    if groups.get("decade"):  # "1990s" → "nineteen nineties", "80s" → "eighties"
        decade = groups["decade"]
        said = _say_year(lang, decade) if len(decade) == 4 else _cardinal(lang, int(decade))
        return said[:-1] + "ies" if said.endswith("y") else said + "s"
    number = groups.get("dotted") or match["num"]
    if len(number) > _MAX_NUMBER_DIGITS:
        return match[0]
    if groups.get("dotted"):  # "3. sırada", but not "3. Sonra"
        if not match.string[match.end() + 1].islower():
            return match[0]
        return _ordinal(lang, int(number), lang.ordinal_suffixes["."])
    suffix = match["suffix"]
    form = lang.ordinal_suffixes.get(suffix, lang.ordinal_suffixes.get(suffix.lower(), ""))
    said = _ordinal(lang, int(number), form)
    following = _word_after(match.string, match.end())
    if following and following != lang.date_connector:  # "1º piso" → "primer piso"
        said = _gendered(lang, said, False)
    return said


def _replace_counted(lang: Language, match: re.Match[str]) -> str:
    """A number before a counter word said as the language counts: "2개" → "두 개"."""
    number = int(match["num"])
    said = lang.count_words.get(number) or _cardinal(lang, number)
    return said + (lang.joiner if match.string[match.end() : match.end() + 1] != " " else "")


def _say_plain(lang: Language, written: str, number: _Number, sign: str) -> str:
    """A number without a unit; a lone four-digit number as a year where years are said so."""
    year = not sign and len(written) == 4 and written.isdigit() and int(written) in _YEARS
    if year and (lang.year_style == "num2words" or lang.year_hundred):
        return _say_year(lang, written)
    return _say_number(lang, number, sign)


def _replace_quantity(lang: Language, match: re.Match[str]) -> str:
    """A number with what is written around it said: money, a percentage, a unit, a range, or a
    plain number (spaced from letters it is glued to: "mp3" → "mp three")."""
    text, groups, start, end = match.string, match.groupdict(), match.start(), match.end()
    sign, pre, post, scale = (
        groups["sign"] or "",
        groups["pre"],
        groups["post"],
        groups.get("scale"),
    )
    glued = not (sign or pre) and start and _LETTER_RE.match(text[start - 1])
    before = " " if glued else ""
    after = " " if _LETTER_RE.match(text[end : end + 1]) else ""
    number = _parse(lang, match["num"])
    upper = _parse(lang, match["num2"]) if match["num2"] else None
    if number is None or (match["num2"] and upper is None):  # a version, a list: piece by piece
        rest = _DIGITS_RE.sub(lambda run: _say_integer(lang, run[0]), text[match.end("num") : end])
        return f"{before}{text[start : match.start('num')]}{_say_token(lang, match['num'])}{rest}"
    code = _currency_code(lang, pre) or _currency_code(lang, post)
    unit = None
    if post and (groups["space"] or post not in SPACED_UNITS):
        unit = lang.unit_symbols.get(post) or UNITS.get(post)
    used = (code and _currency_code(lang, post)) or post == "%" or (not code and unit)
    rest = "" if used or not post else text[match.start("space") : end]
    if code:
        said = _say_money(lang, code, number, sign, scale or "", upper)
    elif "%" in (pre, post) or unit:
        feminine = (unit or "") in lang.feminine_units
        words = [_say_number(lang, number, sign)] + ([_say_number(lang, upper)] if upper else [])
        for index, written in enumerate((number, upper)[: len(words)]):
            if written and not written.fraction:
                words[index] = _gendered(lang, words[index], feminine)
        said = lang.range_format.format(*words) if upper else words[0]
        if unit or not lang.percent:
            said = _unit_phrase(lang, unit or "concentr-percent", said, (upper or number).value())
        else:
            said = lang.percent.replace("{0}", said)
    else:
        said = _say_plain(lang, match["num"], number, sign)
        noun = _word_after(text, end)
        if noun and not number.fraction and not scale:  # "1 Stunde" → "eine Stunde"
            lowercase = lang.nouns_lowercase and len(noun) > 2  # "un minuto", not "un de ellos"
            if noun in lang.feminine_nouns or noun[0].isupper() or lowercase:
                said = _gendered(lang, said, noun in lang.feminine_nouns)
        if upper:
            said = lang.range_format.format(said, _say_plain(lang, match["num2"], upper, ""))
        said = lang.joiner.join(filter(None, (said, scale)))
    said = before + said + (" " + rest.lstrip() if rest else "") + after
    return _keep_final_dot(match, said) if used and (post or "").endswith(".") else said


def _replace_symbol(lang: Language, match: re.Match[str]) -> str:
    """A symbol said as the language's word for it, spaced from its neighbours."""
    word = getattr(lang, _SYMBOLS.get(match[1], "approx"))
    if not word:
        return match[0]
    text, end = match.string, match.end()
    head = lang.joiner if match.start() else ""
    tail = "" if end == len(text) or text[end] in _NO_SPACE_BEFORE else lang.joiner
    return f"{head}{word}{tail}"


# ---------------------------------------------------------------------------
# The verbalizer


def verbalize(text: str, language: str) -> str:
    """The spoken form of one sentence of plain text in a language ("de", "en_US", ...): its
    numbers, dates, times, money, units, phone numbers, abbreviations, domain names and symbols
    as words, in single spaces."""
    lang = languages.language(language)
    text = _SPACES_RE.sub(" ", text).strip()
    if not lang.number_engine:
        return text
    patterns = _patterns(lang)
    if "@" in text and lang.at:
        text = _EMAIL_RE.sub(functools.partial(_replace_email, lang), text)
    if patterns.abbreviation:
        text = patterns.abbreviation.sub(functools.partial(_replace_abbreviation, lang), text)
    if "." in text and lang.dot:
        text = _DOMAIN_RE.sub(functools.partial(_replace_domain, lang), text)
    if _DIGIT_RE.search(text):
        text = _NUMERIC_DATE_RE.sub(functools.partial(_replace_numeric_date, lang), text)
        if patterns.written_date:
            text = patterns.written_date.sub(functools.partial(_replace_written_date, lang), text)
        text = patterns.time.sub(functools.partial(_replace_time, lang), text)
        text = _PHONE_RE.sub(functools.partial(_replace_phone, lang), text)
        if patterns.ordinal:
            text = patterns.ordinal.sub(functools.partial(_replace_ordinal, lang), text)
        text = _TIMES_RE.sub(" × ", text)
        if patterns.counted:
            text = patterns.counted.sub(functools.partial(_replace_counted, lang), text)
        text = patterns.quantity.sub(functools.partial(_replace_quantity, lang), text)
    text = _SYMBOL_RE.sub(functools.partial(_replace_symbol, lang), text)
    return _SPACES_RE.sub(" ", text).strip()
