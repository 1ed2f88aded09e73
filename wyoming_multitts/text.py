"""The text front end every engine shares: make text speakable, split it into sentences and pieces.

`normalize` turns what Home Assistant sends (often an LLM's markdown) into plain words: lines
joined, emphasis markers removed and, for English, numbers, money, times and symbols spelled out.
Emotive tags (`<laugh>`, `[laughs]`) pass through untouched. `SentenceSplitter` finds sentence
ends in streamed text (the same detector wyoming-piper uses), and `split_to_length` cuts a
sentence that is too long for an engine's context at the most natural place. `text_pieces` runs
the whole chain for one complete request. `spoken_words` turns a piece into the bare word list
that word-aligned models read (lowercase letters, punctuation marks kept apart). Nothing here
knows about a particular engine.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from sentence_stream import SentenceBoundaryDetector

# ---------------------------------------------------------------------------
# Constants

# Number words below twenty, indexed by value.
# fmt: off
_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen",
)
# fmt: on

# Multiples of ten, indexed by the tens digit (0 and 1 are covered by _ONES).
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")

# Names of the powers of 1000 (short scale), indexed by exponent: _SCALES[2] is 10^6.
_SCALES = ("", "thousand", "million", "billion", "trillion", "quadrillion")

# Most digits an integer read as words has (up to 999 quadrillion …); longer ones are read digit
# by digit (this also keeps int() away from its 4300-digit limit).
_MAX_SPOKEN_DIGITS = 3 * len(_SCALES)

# Ordinal forms of number words that do not just take "th" ("twenty" → "twentieth" is a rule).
_IRREGULAR_ORDINALS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}

# Four-digit numbers standing alone that are read as years ("nineteen eighty-four"); 2000–2009
# are left out on purpose: people say "two thousand five", not "twenty oh five".
_YEAR_RANGES = (range(1100, 2000), range(2010, 2100))

# Currency symbol → (one unit, several units, one hundredth, several hundredths).
_CURRENCIES = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
}

# Symbols read as a word wherever they stand (in English text).
_SYMBOL_WORDS = {"&": "and", "+": "plus", "=": "equals", "@": "at", "%": "percent"}

# Characters a spelled-out symbol is not separated from by a space ("100 %." → "… percent.").
_NO_SPACE_BEFORE = ".,;:!?)]}"

# Clause punctuation after which a long sentence is best cut (when a space follows).
_CLAUSE_BREAKS = ",;:-–—"

# CJK clause punctuation: a cut may follow it directly, since CJK text has no spaces.
_CJK_CLAUSE_BREAKS = "，、；："

# A clause break is preferred to a plain space only if the part before it is at least this
# fraction of max_chars (otherwise "Hi, …" would make a two-word part).
_MIN_CLAUSE_PART = 0.5

# When the last part would be shorter than this fraction of max_chars, an earlier cut that
# leaves it longer is chosen, so a long sentence does not end with a clipped word or two.
_MIN_LAST_PART = 0.25

# Punctuation marks `spoken_words` keeps, as the ASCII marks they are read as. Word-aligned
# models were trained on text transliterated with anyascii, which turns "。" into ".", "¿" into
# "?" and "…" into "...": only these five marks ever reached them (outetts 0.3.3
# `version/v2/text_processor.py`: anyascii, then one mark token per character).
SPOKEN_MARKS = (".", "!", "?", ",", '"')

# Every character kept as punctuation → the spoken marks it stands for (anyascii's reading).
# fmt: off
_MARK_FOLDS = {
    ".": ".", "!": "!", "?": "?", ",": ",", '"': '"',
    "。": ".", "｡": ".", "．": ".", "﹒": ".", "۔": ".", "…": "...",
    "！": "!", "¡": "!", "‼": "!!", "？": "?", "¿": "?", "؟": "?", "⁇": "??", "⁈": "?!", "⁉": "!?",
    "，": ",", "、": ",", "､": ",", "﹐": ",", "،": ",",
    "„": '"', "“": '"', "”": '"', "‟": '"', "〝": '"', "〞": '"', "＂": '"',
}
# fmt: on

# Apostrophes are dropped inside words, joining them ("it's" → "its", "l'aérodrome" →
# "laerodrome"), as the reference word lists of those models spell them.
_APOSTROPHES = frozenset("'’‘`ʼ´‚")

# Latin letters that Unicode decomposition does not reduce to ASCII, spelled as anyascii does.
_LETTER_FOLDS = {
    "ß": "ss",
    "æ": "ae",
    "œ": "oe",
    "ø": "o",
    "ł": "l",
    "đ": "d",
    "ð": "d",
    "þ": "th",
    "ı": "i",
}

# ---------------------------------------------------------------------------
# Patterns (each compiled once; the comment says what it matches)

# An emotive tag: <laugh>, <sigh>, <|tag|> (no space right after "<", so "a < b" is no tag).
_ANGLE_TAG = r"<[^<>\s][^<>]*>"

# A bracketed tag: [laughs], [clears throat].
_SQUARE_TAG = r"\[[^\[\]]+\]"

# Either kind of tag, captured, so re.split keeps the tags at the odd indices.
_TAG_RE = re.compile(f"({_ANGLE_TAG}|{_SQUARE_TAG})")

# Angle tags only, removed before deciding whether anything is left to say.
_ANGLE_TAG_RE = re.compile(_ANGLE_TAG)

# A markdown list bullet at the start of a line: "* item", "- item", "+ item".
_BULLET_RE = re.compile(r"^[ \t]*[*+-][ \t]+", re.MULTILINE)

# Any run of whitespace, newlines included.
_WHITESPACE_RE = re.compile(r"\s+")

# Emphasis: *x*, **x**, _x_, __x__ (markers hug the words; snake_case and 2 * 3 are left alone).
_EMPHASIS_RE = re.compile(r"(?<![\w*])(\*{1,3}|_{1,3})(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*])")

# An unsigned integer, "1234" or "1,234,567" (groups of exactly three digits after a comma).
_INTEGER = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?![0-9])"

# A number with an optional minus sign (not after a letter: "COVID-19") and decimals.
_NUMBER = rf"(?:(?<!\w)(?P<sign>[-−]))?(?<![0-9])(?P<int>{_INTEGER})(?:\.(?P<frac>[0-9]+))?"

# An ordinal: 1st, 22nd, 103rd, 4th.
_ORDINAL_RE = re.compile(rf"(?<![0-9])(?P<int>{_INTEGER})(?:st|nd|rd|th)\b", re.IGNORECASE)

# The seam between a letter and a digit ("mp3", "3D", "5km"), where a space goes.
_LETTER_DIGIT_RE = re.compile(r"(?<=[^\W\d_])(?=[0-9])|(?<=[0-9])(?=[^\W\d_])")

# Money: "$5", "-$3.50", "€ 20", "$1.5 million".
_CURRENCY_RE = re.compile(
    rf"(?:(?<!\w)(?P<sign>[-−]))?(?P<symbol>[{''.join(_CURRENCIES)}])\s?"
    rf"(?P<int>{_INTEGER})(?:\.(?P<frac>[0-9]+))?"
    rf"(?:\s(?P<scale>{'|'.join(_SCALES[1:])})\b)?"
)

# A clock time: "3:30", "07:05", "10:00" (not part of 1:2:3 or a longer number).
_TIME_RE = re.compile(r"(?<![0-9:])(?P<hour>[0-9]{1,2}):(?P<minute>[0-5][0-9])(?![0-9:])")

# A dotted run of three or more numbers: a version "1.10.2" or an address "192.168.1.1".
_DOTTED_RE = re.compile(r"(?<![0-9.])[0-9]+(?:\.[0-9]+){2,}(?![0-9])")

# A percentage: "50%", "-2.5 %".
_PERCENT_RE = re.compile(rf"{_NUMBER}\s?%")

# Any other number.
_NUMBER_RE = re.compile(_NUMBER)

# A symbol read as a word, with the spaces around it.
_SYMBOL_RE = re.compile(rf"\s*([{re.escape(''.join(_SYMBOL_WORDS))}])\s*")


# ---------------------------------------------------------------------------
# Numbers to words


def _say_below_thousand(number: int) -> str:
    """0 < number < 1000 in words: "one hundred twenty-three"."""
    hundreds, rest = divmod(number, 100)
    words = [f"{_ONES[hundreds]} hundred"] if hundreds else []
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        words.append(f"{_TENS[tens]}-{_ONES[ones]}" if ones else _TENS[tens])
    elif rest:
        words.append(_ONES[rest])
    return " ".join(words)


def _say_cardinal(number: int) -> str:
    """A number of at most _MAX_SPOKEN_DIGITS digits in words: "one thousand two hundred four"."""
    if number == 0:
        return _ONES[0]
    groups = []
    for scale in _SCALES:
        number, group = divmod(number, 1000)
        if group:
            groups.append(f"{_say_below_thousand(group)} {scale}".rstrip())
    return " ".join(reversed(groups))


def _say_digits(digits: str) -> str:
    """Digits one by one: "007" → "zero zero seven"."""
    return " ".join(_ONES[int(digit)] for digit in digits if digit.isdigit())


def _say_integer(digits: str) -> str:
    """An integer as written ("1,234", "007") in words; too long or zero-padded: digit by digit."""
    plain = digits.replace(",", "")
    if (len(plain) > 1 and plain.startswith("0")) or len(plain) > _MAX_SPOKEN_DIGITS:
        return _say_digits(plain)
    return _say_cardinal(int(plain))


def _say_decimal(integer: str, fraction: str | None, negative: bool = False) -> str:
    """A number in words, decimals digit by digit: "-3.14" → "minus three point one four"."""
    words = _say_integer(integer)
    if fraction:
        words += f" point {_say_digits(fraction)}"
    return f"minus {words}" if negative else words


def _ordinal_word(word: str) -> str:
    """The ordinal of one number word: "two" → "second", "twenty" → "twentieth"."""
    if word in _IRREGULAR_ORDINALS:
        return _IRREGULAR_ORDINALS[word]
    if word.endswith("y"):
        return f"{word[:-1]}ieth"
    return f"{word}th"


def _say_ordinal(digits: str) -> str:
    """An ordinal in words: "22" → "twenty-second", "103" → "one hundred third"."""
    words = _say_integer(digits)
    split = max(words.rfind(" "), words.rfind("-")) + 1
    return words[:split] + _ordinal_word(words[split:])


def _say_year(year: int) -> str:
    """A year in pairs of digits: 1984 → "nineteen eighty-four", 1905 → "nineteen oh five"."""
    century, rest = divmod(year, 100)
    if rest == 0:
        return f"{_say_cardinal(century)} hundred"
    if rest < 10:
        return f"{_say_cardinal(century)} oh {_ONES[rest]}"
    return f"{_say_cardinal(century)} {_say_cardinal(rest)}"


def _is_year(match: re.Match[str]) -> bool:
    """Whether a matched number is a bare four-digit integer in a year range."""
    digits = match["int"]
    if match["sign"] or match["frac"] or len(digits) != 4 or not digits.isdigit():
        return False
    return any(int(digits) in years for years in _YEAR_RANGES)


# ---------------------------------------------------------------------------
# Replacements (one per pattern)


def _replace_ordinal(match: re.Match[str]) -> str:
    """Ordinal digits to words."""
    return _say_ordinal(match["int"])


def _replace_currency(match: re.Match[str]) -> str:
    """Money to words: "$3.50" → "three dollars fifty cents"."""
    unit, units, cent, cents = _CURRENCIES[match["symbol"]]
    sign = "minus " if match["sign"] else ""
    integer, fraction, scale = match["int"], match["frac"], match["scale"]
    if scale:
        return f"{sign}{_say_decimal(integer, fraction)} {scale} {units}"
    if fraction and len(fraction) > 2:
        return f"{sign}{_say_decimal(integer, fraction)} {units}"
    plain = integer.replace(",", "")
    hundredths = int(fraction.ljust(2, "0")) if fraction else 0
    main = f"{_say_integer(integer)} {unit if plain == '1' else units}"
    if not hundredths:
        return sign + main
    small = f"{_say_cardinal(hundredths)} {cent if hundredths == 1 else cents}"
    return sign + (small if not plain.strip("0") else f"{main} {small}")


def _replace_time(match: re.Match[str]) -> str:
    """A clock time to words: "7:05" → "seven oh five", "10:00" → "ten o'clock"."""
    hour, minute = int(match["hour"]), int(match["minute"])
    if hour > 24:
        return match[0]
    hour_words = _say_cardinal(hour)
    if minute == 0:
        return f"{hour_words} o'clock" if 1 <= hour <= 12 else f"{hour_words} hundred"
    if minute < 10:
        return f"{hour_words} oh {_ONES[minute]}"
    return f"{hour_words} {_say_cardinal(minute)}"


def _replace_dotted(match: re.Match[str]) -> str:
    """A version or address, part by part: "1.10.2" → "one dot ten dot two"."""
    return " dot ".join(_say_integer(part) for part in match[0].split("."))


def _replace_percent(match: re.Match[str]) -> str:
    """A percentage to words."""
    return f"{_say_decimal(match['int'], match['frac'], bool(match['sign']))} percent"


def _replace_number(match: re.Match[str]) -> str:
    """Any other number to words; a lone four-digit year is read as a year."""
    if _is_year(match):
        return _say_year(int(match["int"]))
    return _say_decimal(match["int"], match["frac"], bool(match["sign"]))


def _replace_symbol(match: re.Match[str]) -> str:
    """A symbol to its word, spaced from its neighbours (but not from closing punctuation)."""
    word = _SYMBOL_WORDS[match[1]]
    end = match.end()
    if end == len(match.string) or match.string[end] in _NO_SPACE_BEFORE:
        return f" {word}"
    return f" {word} "


# ---------------------------------------------------------------------------
# Normalisation


def _clean_markup(text: str) -> str:
    """Remove markdown emphasis markers: "**bold** and _x_" → "bold and x"."""
    return _EMPHASIS_RE.sub(r"\2", text)


def _verbalize_english(text: str) -> str:
    """Spell out ordinals, money, times, versions, percentages, numbers and symbols, in order."""
    text = _ORDINAL_RE.sub(_replace_ordinal, text)
    text = _LETTER_DIGIT_RE.sub(" ", text)
    text = _CURRENCY_RE.sub(_replace_currency, text)
    text = _TIME_RE.sub(_replace_time, text)
    text = _DOTTED_RE.sub(_replace_dotted, text)
    text = _PERCENT_RE.sub(_replace_percent, text)
    text = _NUMBER_RE.sub(_replace_number, text)
    return _SYMBOL_RE.sub(_replace_symbol, text)


def normalize(text: str, language: str = "en") -> str:
    """Make text speakable: plain words on one line, numbers spelled out in English."""
    english = language.lower().startswith("en")
    text = _BULLET_RE.sub("", text)
    text = _WHITESPACE_RE.sub(" ", text)
    segments = _TAG_RE.split(text)
    for index in range(0, len(segments), 2):  # even indices are text, odd ones are tags
        segment = _clean_markup(segments[index])
        segments[index] = _verbalize_english(segment) if english else segment
    return _WHITESPACE_RE.sub(" ", "".join(segments)).strip()


def is_speakable(text: str) -> bool:
    """Whether the text has a letter or digit (any script) outside `<...>` tags."""
    return any(char.isalnum() for char in _ANGLE_TAG_RE.sub(" ", text))


# ---------------------------------------------------------------------------
# Sentences


class SentenceSplitter:
    """Sentences of text that arrives in chunks cut anywhere (wraps sentence-stream's detector)."""

    def __init__(self) -> None:
        self._detector = SentenceBoundaryDetector()

    def add(self, chunk: str) -> list[str]:
        """Add a chunk; return the sentences it completed."""
        sentences = (sentence.strip() for sentence in self._detector.add_chunk(chunk))
        return [sentence for sentence in sentences if sentence]

    def finish(self) -> list[str]:
        """End the stream; return the unfinished last sentence, if any (the splitter is reset)."""
        rest = self._detector.finish().strip()
        return [rest] if rest else []


def split_sentences(text: str) -> list[str]:
    """All sentences of a complete text."""
    splitter = SentenceSplitter()
    return splitter.add(text) + splitter.finish()


# ---------------------------------------------------------------------------
# Cutting long sentences


def _cut_candidates(text: str, max_chars: int) -> tuple[list[int], list[int]]:
    """Cut positions within max_chars: (after clause punctuation, at a space), ascending."""
    clause_cuts, space_cuts = [], []
    for cut in range(1, min(max_chars, len(text) - 1) + 1):
        before, after = text[cut - 1], text[cut]
        if before in _CJK_CLAUSE_BREAKS or (before in _CLAUSE_BREAKS and after.isspace()):
            clause_cuts.append(cut)
        if after.isspace():
            space_cuts.append(cut)
    return clause_cuts, space_cuts


def _pick_cut(text: str, cuts: list[int], max_chars: int, shortest_part: float) -> int | None:
    """The latest usable cut, avoiding a tiny last part when another cut allows; None if none."""
    usable = [cut for cut in cuts if cut >= shortest_part]
    roomy = [cut for cut in usable if len(text) - cut >= max_chars * _MIN_LAST_PART]
    return max(roomy or usable, default=None)


def _cut_position(text: str, max_chars: int) -> int:
    """Where to cut `text` (stripped, longer than max_chars): clause break, space, or hard."""
    clause_cuts, space_cuts = _cut_candidates(text, max_chars)
    cut = _pick_cut(text, clause_cuts, max_chars, max_chars * _MIN_CLAUSE_PART)
    if cut is None:
        cut = _pick_cut(text, space_cuts, max_chars, 1)
    return max_chars if cut is None else cut


def _check_max_chars(max_chars: int) -> None:
    """Raise ValueError for a piece length no text fits in."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")


def split_to_length(text: str, max_chars: int) -> list[str]:
    """Cut text into parts of at most max_chars, at clause breaks, spaces, or hard if need be."""
    _check_max_chars(max_chars)
    parts = []
    rest = text.strip()
    while len(rest) > max_chars:
        cut = _cut_position(rest, max_chars)
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        parts.append(rest)
    return parts


def text_pieces(text: str, max_chars: int, language: str = "en") -> list[str]:
    """Normalize a complete request and cut it into speakable pieces of at most max_chars."""
    _check_max_chars(max_chars)
    return [
        piece
        for sentence in split_sentences(normalize(text, language))
        for piece in split_to_length(sentence, max_chars)
        if is_speakable(piece)
    ]


# ---------------------------------------------------------------------------
# Spoken words (for models that read a list of words rather than text)


@dataclass(frozen=True)
class SpokenWord:
    """One word as a word-aligned model reads it, with the punctuation marks that follow it."""

    word: str
    """Lowercase letters only: a-z for English; any script otherwise, Latin letters folded to
    ASCII ("é" → "e", "ß" → "ss"); never empty."""
    marks: tuple[str, ...] = ()
    """Punctuation after the word, one entry per mark, each one of `SPOKEN_MARKS`, in order:
    "yes?!" → ("?", "!"). Marks standing alone or opening the next word belong here too
    ('so ... "yes"' → so: (".", ".", ".", '"'), yes: ('"',)), as the reference word lists attach
    every mark to the word before it."""

    def __str__(self) -> str:
        return self.word + "".join(self.marks)


@functools.lru_cache(maxsize=4096)
def _fold_letter(char: str) -> str:
    """A lowercase character as ASCII if it is a Latin letter with diacritics, else as it is."""
    if char.isascii():
        return char
    if char in _LETTER_FOLDS:
        return _LETTER_FOLDS[char]
    decomposed = unicodedata.normalize("NFKD", char)
    base = "".join(part for part in decomposed if not unicodedata.combining(part))
    # "é" → "e", "ﬁ" → "fi"; Hangul or kana decompose into non-ASCII parts and stay whole
    return base.lower() if base.isascii() and base.isalpha() else char


def _is_word_char(char: str, english: bool) -> bool:
    """Whether a (folded, lowercase) character belongs to a word."""
    if english:
        return "a" <= char <= "z"
    # letters of any script, and the combining marks of scripts that write vowels with them
    return char.isalpha() or unicodedata.category(char).startswith("M")


def _split_words(text: str, english: bool, keep_punctuation: bool) -> list[SpokenWord]:
    """Lowercase text as words, each with the marks up to the next word (if kept).

    Marks before the first word are dropped, and every other mark goes to the word before it,
    an opening quote or "¿" included: that is how outetts 0.3.3 joins punctuation
    (`join_punctuation`, after MeCab splits marks from words).
    """
    words: list[tuple[str, list[str]]] = []  # (word, marks after it)
    letters: list[str] = []
    for char in text + " ":  # the space ends the last word
        if char in _APOSTROPHES:
            continue
        folded = _fold_letter(char)
        if all(_is_word_char(part, english) for part in folded):
            letters.append(folded)
            continue
        # a mark, whitespace, a hyphen, a bracket or a symbol: each ends a word
        if letters:
            words.append(("".join(letters), []))
            letters.clear()
        if keep_punctuation and words:
            words[-1][1].extend(_MARK_FOLDS.get(char, ""))  # "…" → ".", ".", "."
    return [SpokenWord(word, tuple(marks)) for word, marks in words]


def spoken_words(
    text: str, language: str = "en", keep_punctuation: bool = False
) -> list[SpokenWord]:
    """The words a word-aligned TTS model reads for `text`, in order, each as a `SpokenWord`.

    The text is normalised first (`normalize`: in English numbers, money, times and symbols are
    spelled out); in other languages plain numbers are spelled out in English, as the reference
    word lists of those models do ("29일" → "twenty", "nine", "일"). Tags (`<laugh>`,
    `[sighs]`) are dropped. Then, lowercased: Latin letters with diacritics are folded to ASCII;
    apostrophes vanish ("it's" → "its"); every other character that is not a letter (a-z only
    in English) separates words, so "e-mail", "a/b" and "x.y" are two words each. Letters of
    other scripts are kept in other languages (no romanisation: a Chinese clause without spaces
    is one word).

    With `keep_punctuation`, the marks of `SPOKEN_MARKS` (and the characters read as them: "。",
    "¿", "…", curly quotes, ...) are kept in the `marks` of the word before them; otherwise they
    only separate words, and `marks` is empty.
    """
    english = language.lower().startswith("en")
    segments = _TAG_RE.split(normalize(text, language))
    text = " ".join(segments[0::2])  # odd indices are tags
    if not english:
        text = _NUMBER_RE.sub(_replace_number, _LETTER_DIGIT_RE.sub(" ", text))
    return _split_words(text.lower(), english, keep_punctuation)
