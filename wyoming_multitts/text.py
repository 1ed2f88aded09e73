"""The text front end every engine shares: make text speakable, split it into sentences and pieces.

`normalize` turns what Home Assistant sends (often an LLM's markdown) into plain words: lines
joined, emphasis markers removed and, for English, numbers, money, times and symbols spelled out.
Emotive tags (`<laugh>`, `[laughs]`) pass through untouched. `SentenceSplitter` finds sentence
ends in streamed text (those wyoming-piper's detector finds), and `split_to_length` cuts a
sentence that is too long for an engine's context at the most natural place. `text_pieces` runs
the whole chain for one complete request. `spoken_words` turns a piece into the bare word list
that word-aligned models read (lowercase letters, punctuation marks kept apart). Nothing here
knows about a particular engine.

All of it runs in the server's event loop, on text a client chose, so every step takes time
linear in the length of the text (no pattern rescans what it has read): a slow regex would stall
every other client.
"""

from __future__ import annotations

import bisect
import collections
import enum
import functools
import re
import unicodedata
from dataclasses import dataclass

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

# Longest run of "*" or "_" that marks emphasis ("***bold italic***").
_MAX_EMPHASIS_MARKERS = 3

# Marks that may end a sentence: Latin, Arabic (؟) and Devanagari (। ॥) ones, and Chinese ones.
_SENTENCE_ENDS = ".!?…؟।॥。！？"

# Of those, the ones that end a sentence whatever follows (Chinese puts no space after a
# sentence); the others need a space and then a capital letter or a list number after them.
_FINAL_ENDS = "。！？…"

# Closing quotes and brackets after the end marks that still belong to the sentence.
_SENTENCE_CLOSERS = "'\")]}’”»」』）》】〕〉"

# Unicode categories of a letter that may start a sentence: uppercase, titlecase, or a letter
# of a script without case (Chinese, Arabic, Devanagari, ...).
_SENTENCE_START_CATEGORIES = frozenset(("Lu", "Lt", "Lo"))

# Marks after a number that make it a list item ("2. ", "3) "), at most _MAX_LIST_MARKS of them.
_LIST_MARKS = ".)"
_MAX_LIST_MARKS = 2

# A sentence ending in a capitalised word of at most this many letters and a dot ("Dr.", "A.")
# may end in an abbreviation, and is joined to the next one.
_MAX_ABBREVIATION_LETTERS = 3

# Characters at the end of a sentence that decide that: the word, its dot and what precedes it.
_ABBREVIATION_WINDOW = _MAX_ABBREVIATION_LETTERS + 2

# Line break characters remembered at the end of a chunk, to find a blank line that the next
# chunk completes ("\r\n\r" + "\n").
_LINE_BREAK_LOOKBACK = 3

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

# A run of emphasis markers ("**", "_"); `_clean_markup` tells openers from closers.
_MARKER_RUN_RE = re.compile(r"\*+|_+")

# The first group of an integer with thousands separators: one to three digits, but only one or
# two right after "digit,", where three are a later group of a longer number (read again to its
# end from each group, a long "1,000,000,…" that is no ordinal or percentage took quadratic time).
_LEAD_GROUP = r"(?:(?<![0-9],)[0-9]{1,3}|(?<=[0-9],)[0-9]{1,2})"

# An unsigned integer, "1234" or "1,234,567" (groups of exactly three digits after a comma).
_INTEGER = rf"(?:{_LEAD_GROUP}(?:,[0-9]{{3}})+|[0-9]+)(?![0-9])"

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

# A symbol read as a word, with the space around it (the text has single spaces by now).
_SYMBOL_RE = re.compile(rf"\s?([{re.escape(''.join(_SYMBOL_WORDS))}])\s?")

# Where the sentence scan stops in plain text: a line break, a mark that ends a sentence whatever
# follows, or another end mark that is not followed by a letter or the like (it would not end a
# sentence: "3.14", "a.m.").
_SCAN_STOP_RE = re.compile(
    f"[\r\n{re.escape(_FINAL_ENDS)}]"
    f"|[{re.escape(_SENTENCE_ENDS)}](?=[{re.escape(_SENTENCE_ENDS + _SENTENCE_CLOSERS)}\\s]|\\Z)"
)

# Runs the sentence scan reads at once (each also matches nothing): end marks, closers,
# whitespace, digits, line breaks.
_SENTENCE_END_RUN_RE = re.compile(f"[{re.escape(_SENTENCE_ENDS)}]*")
_CLOSER_RUN_RE = re.compile(f"[{re.escape(_SENTENCE_CLOSERS)}]*")
_SPACE_RUN_RE = re.compile(r"\s*")
_DIGIT_RUN_RE = re.compile(r"\d*")
_LINE_BREAK_RUN_RE = re.compile(r"[\r\n]*")

# An end mark that ends a sentence whatever follows.
_FINAL_END_RE = re.compile(f"[{re.escape(_FINAL_ENDS)}]")

# A blank line: two line breaks or more in a row.
_BLANK_LINE_RE = re.compile(r"(?:\r?\n){2,}")

# A run of asterisks, captured, so re.split keeps the runs at the odd indices.
_STAR_RUN_RE = re.compile(r"(\*+)")

# Asterisks with the whitespace before them (starting where no whitespace precedes, so that each
# run of whitespace is read once); those that start a line are list bullets.
_LINE_START_STARS_RE = re.compile(r"(?<!\s)(\s*)\*+")

# Where a long sentence may be cut: before whitespace, and after clause punctuation (CJK clause
# marks anywhere, the others when whitespace follows).
_SPACE_CUT_RE = re.compile(r"(?=\s)")
_CLAUSE_CUT_RE = re.compile(
    rf"(?<=[{_CJK_CLAUSE_BREAKS}])|(?<=[{re.escape(_CLAUSE_BREAKS)}])(?=\s)"
)


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


def _opens_emphasis(text: str, start: int, end: int) -> bool:
    """Whether the marker run text[start:end] may open emphasis: not after a word character or
    "*", and before a character that is no space or marker ("*" in "a *b", not in "2 * 3")."""
    before = text[start - 1] if start else " "
    return (
        end - start <= _MAX_EMPHASIS_MARKERS
        and not (before.isalnum() or before in "_*")
        and end < len(text)
        and not (text[end].isspace() or text[end] in "_*")
    )


def _closes_emphasis(text: str, start: int, end: int) -> bool:
    """Whether the marker run text[start:end] may close emphasis: after a character that is no
    space or marker, and not before a word character or "*" ("*" in "b* c", not in "snake_case")."""
    after = text[end] if end < len(text) else " "
    return (
        end - start <= _MAX_EMPHASIS_MARKERS
        and start > 0
        and not (text[start - 1].isspace() or text[start - 1] in "_*")
        and not (after.isalnum() or after in "_*")
    )


def _clean_markup(text: str) -> str:
    """Remove markdown emphasis markers: "**bold** and _x_" → "bold and x".

    From left to right, an opening run of one to three "*" or "_" pairs with the first closing
    run of the same markers after it; markers inside the span stay ("**a *b* c**" → "a *b* c").
    The text is one line (normalize has joined the lines).
    Closers are listed once and found by bisection: a lazy regex with a backreference would scan
    to the end of the text for each opener that has no closer ("*a " * 10000: quadratic time).
    """
    runs = [(match.start(), match.end()) for match in _MARKER_RUN_RE.finditer(text)]
    closers: dict[str, list[int]] = {}  # marker run → where its closers start, ascending
    for start, end in runs:
        if _closes_emphasis(text, start, end):
            closers.setdefault(text[start:end], []).append(start)
    pieces: list[str] = []
    done = 0  # text[:done] is in pieces
    for start, end in runs:
        starts = closers.get(text[start:end], [])
        if start < done or not starts or not _opens_emphasis(text, start, end):
            continue
        index = bisect.bisect_right(starts, end)
        if index < len(starts):
            pieces += (text[done:start], text[end : starts[index]])
            done = starts[index] + end - start
    pieces.append(text[done:])
    return "".join(pieces)


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


def _run_end(run: re.Pattern[str], text: str, pos: int) -> int:
    """Where the run that `run` (a pattern that may match nothing) matches at pos ends."""
    match = run.match(text, pos)
    return match.end() if match else pos


def _in_word(char: str) -> bool:
    """Whether a character belongs to a word: a letter, mark, number or connector ("_")."""
    category = unicodedata.category(char)
    return category[0] in "LMN" or category == "Pc"


def _ends_in_abbreviation(text: str) -> bool:
    """Whether text ends in a capitalised word of at most three letters and a dot ("Dr.")."""
    if not text.endswith("."):
        return False
    before = text[-_ABBREVIATION_WINDOW:-1]  # room for the word and one character more
    start = len(before)
    while start and _in_word(before[start - 1]):
        start -= 1
    word = before[start:]
    if not 0 < len(word) <= _MAX_ABBREVIATION_LETTERS:
        return False
    return word.isalpha() and unicodedata.category(word[0]) == "Lu"


def _drop_line_start_stars(match: re.Match[str]) -> str:
    """The whitespace and asterisks matched, less those from the start of a line on."""
    if match.start() == 0:
        return ""
    newline = match[1].find("\n")
    return match[0] if newline < 0 else match[1][: newline + 1]


def _remove_asterisks(text: str) -> str:
    """Asterisks removed as sentence-stream's `remove_asterisks` does: star runs in pairs from
    the left ("**a** *b" → "a *b"), then those that start a line ("* item" → " item")."""
    if "*" not in text:
        return text
    pieces = _STAR_RUN_RE.split(text)  # text, stars, text, ..., stars, text
    kept = pieces[0::2]
    if len(pieces) % 4 == 3:  # an odd number of star runs: the last one has no partner
        kept[-1] = pieces[-2] + kept[-1]
    return _LINE_START_STARS_RE.sub(_drop_line_start_stars, "".join(kept))


def _clean_sentence(text: str) -> str:
    """A sentence as it is handed out: stripped, without markdown asterisks."""
    return _remove_asterisks(text.strip()).strip()


class _Scan(enum.Enum):
    """What the sentence scan is reading (kept between chunks)."""

    TEXT = enum.auto()  # plain text: looking for an end mark or a blank line
    ENDS = enum.auto()  # a run of end marks
    CLOSERS = enum.auto()  # closing quotes and brackets after them
    SPACE = enum.auto()  # whitespace after those (the sentence ends if a capital follows)
    DIGITS = enum.auto()  # a number after the whitespace (it ends if a list mark follows)
    LIST_MARKS = enum.auto()  # "." or ")" after the number (it ends if whitespace follows)


class SentenceSplitter:
    """Sentences of text that arrives in chunks cut anywhere.

    A sentence ends (as in sentence-stream 1.3.0, the detector wyoming-piper uses):
    - after end marks (. ! ? … ؟ । ॥) and closing quotes or brackets, when whitespace and then
      an uppercase letter, a letter of a script without case or a list item ("2. ") follow;
    - after 。！？ or … (and closers) whatever follows, once something follows;
    - at a blank line.
    A sentence ending in a capitalised word of at most three letters and a dot ("Dr.", "A.") is
    held and joined to the next one; asterisks are removed as that library removes them. Unlike
    it, a run of mixed end marks ("？!", "….") is one end, and any closer stays with the
    sentence ('…"'): it made sentences of the "!" or '"' left over.

    Written here rather than wrapping that library: its detector appends each chunk to a buffer
    and searches the whole buffer with three regexes after every chunk and every sentence, which
    takes quadratic time (one 128 KB chunk stalled the server 5.5 s). This one reads each
    character once (a list number's marks twice), whatever the chunking, keeping the state of
    its scan between chunks and the text in the chunks it came in.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """Forget everything: ready for a new stream."""
        self._chunks: collections.deque[str] = collections.deque()  # text not handed out yet
        self._head = 0  # where that text starts in _chunks[0]
        self._start = 0  # its stream offset: where the next sentence starts
        self._received = 0  # stream offset of the end of the text received
        self._held: list[str] = []  # a sentence held back: it may end in an abbreviation
        self._held_tail = ""  # its last characters
        self._ends: list[int] = []  # stream offsets of the sentence ends found, not handed out
        self._scan = _Scan.TEXT
        self._final = False  # whether the end marks read end a sentence whatever follows
        self._end = 0  # stream offset where the sentence being checked ends, if it does
        self._line_breaks = ""  # line break characters just read (blank line not yet complete)
        self._list_marks = ""  # list marks read after a number

    def add(self, chunk: str) -> list[str]:
        """Add a chunk; return the sentences it completed."""
        if not chunk:
            return []
        self._chunks.append(chunk)
        self._read(chunk, self._received)
        self._received += len(chunk)
        sentences: list[str] = []
        for end in self._ends:
            part = self._take(end)
            self._held.append(part)
            self._held_tail = (self._held_tail + part)[-_ABBREVIATION_WINDOW:]
            if not _ends_in_abbreviation(self._held_tail):
                sentence = _clean_sentence("".join(self._held))
                self._held.clear()
                self._held_tail = ""
                if sentence:
                    sentences.append(sentence)
        self._ends.clear()
        return sentences

    def finish(self) -> list[str]:
        """End the stream; return the unfinished last sentence, if any (the splitter is reset)."""
        rest = _clean_sentence("".join(self._held) + self._take(self._received))
        self._reset()
        return [rest] if rest else []

    def _take(self, end: int) -> str:
        """The text from the start of the next sentence to stream offset `end`, handed out."""
        parts = []
        while self._start < end:
            chunk = self._chunks[0]
            part = chunk[self._head : self._head + end - self._start]
            parts.append(part)
            self._start += len(part)
            self._head += len(part)
            if self._head == len(chunk):
                self._chunks.popleft()
                self._head = 0
        return "".join(parts)

    def _blank_line(self, space: str) -> bool:
        """Whether whitespace just read completes a blank line (with the line breaks before it)."""
        if not self._line_breaks and "\n" not in space and "\r" not in space:
            return False  # (the common case, made quick)
        text = self._line_breaks + space
        last = text[-_LINE_BREAK_LOOKBACK:]
        self._line_breaks = last[len(last.rstrip("\r\n")) :]
        return _BLANK_LINE_RE.search(text) is not None

    def _read(self, text: str, offset: int) -> None:
        """Scan text (at stream offset `offset`) on from the scan's state; note sentence ends."""
        pos, size = 0, len(text)
        while pos < size:
            if self._scan is _Scan.TEXT:
                stop = _SCAN_STOP_RE.search(text, pos)
                if stop is None or stop.start() > pos:
                    self._line_breaks = ""
                if stop is None:
                    return
                pos = stop.start()
                if text[pos] in "\r\n":
                    run_end = _run_end(_LINE_BREAK_RUN_RE, text, pos)
                    if self._blank_line(text[pos:run_end]):
                        self._ends.append(offset + run_end)
                        self._line_breaks = ""
                    pos = run_end
                else:
                    self._scan, self._final, self._line_breaks = _Scan.ENDS, False, ""
            elif self._scan is _Scan.ENDS:
                run_end = _run_end(_SENTENCE_END_RUN_RE, text, pos)
                self._final = self._final or bool(_FINAL_END_RE.search(text, pos, run_end))
                pos = run_end
                if pos < size:
                    self._scan = _Scan.CLOSERS
            elif self._scan is _Scan.CLOSERS:
                pos = _run_end(_CLOSER_RUN_RE, text, pos)
                if pos < size:
                    self._end = offset + pos
                    if self._final:
                        self._ends.append(self._end)
                    space = not self._final and text[pos].isspace()
                    self._scan = _Scan.SPACE if space else _Scan.TEXT
            elif self._scan is _Scan.SPACE:
                run_end = _run_end(_SPACE_RUN_RE, text, pos)
                blank = self._blank_line(text[pos:run_end])
                pos = run_end
                if blank:  # the sentence ends anyway: at the blank line, so it is not held
                    self._ends.append(offset + pos)
                    self._scan, self._line_breaks = _Scan.TEXT, ""
                elif pos < size:
                    self._line_breaks = ""
                    if unicodedata.category(text[pos]) in _SENTENCE_START_CATEGORIES:
                        self._ends.append(self._end)
                    number = text[pos].isdecimal()
                    self._scan = _Scan.DIGITS if number else _Scan.TEXT
            elif self._scan is _Scan.DIGITS:
                pos = _run_end(_DIGIT_RUN_RE, text, pos)
                if pos < size:
                    mark = text[pos] in _LIST_MARKS
                    self._scan = _Scan.LIST_MARKS if mark else _Scan.TEXT
            elif text[pos] in _LIST_MARKS and len(self._list_marks) < _MAX_LIST_MARKS:
                self._list_marks += text[pos]  # _Scan.LIST_MARKS: one more list mark
                pos += 1
            else:  # _Scan.LIST_MARKS: what follows the list marks
                if text[pos].isspace():
                    self._ends.append(self._end)
                marks, self._list_marks, self._scan = self._list_marks, "", _Scan.TEXT
                self._read(marks, offset + pos - len(marks))  # "1." may end a sentence itself


def split_sentences(text: str) -> list[str]:
    """All sentences of a complete text."""
    splitter = SentenceSplitter()
    return splitter.add(text) + splitter.finish()


# ---------------------------------------------------------------------------
# Cutting long sentences


def _cut_candidates(window: str) -> tuple[list[int], list[int]]:
    """Cut positions inside window, not at its ends: (after clause punctuation, at a space)."""
    clause_cuts = [match.start() for match in _CLAUSE_CUT_RE.finditer(window, 1)]
    space_cuts = [match.start() for match in _SPACE_CUT_RE.finditer(window, 1)]
    return [cut for cut in clause_cuts if cut < len(window)], space_cuts


def _pick_cut(length: int, cuts: list[int], max_chars: int, shortest_part: float) -> int | None:
    """The latest usable cut of a text of `length`, avoiding a tiny last part when another cut
    allows; None if none."""
    usable = [cut for cut in cuts if cut >= shortest_part]
    roomy = [cut for cut in usable if length - cut >= max_chars * _MIN_LAST_PART]
    return max(roomy or usable, default=None)


def _cut_position(text: str, start: int, max_chars: int) -> int:
    """Where to cut text[start:] (stripped, longer than max_chars), counted from start: at a
    clause break, a space, or hard. Only max_chars + 1 characters are looked at."""
    clause_cuts, space_cuts = _cut_candidates(text[start : start + max_chars + 1])
    length = len(text) - start
    cut = _pick_cut(length, clause_cuts, max_chars, max_chars * _MIN_CLAUSE_PART)
    if cut is None:
        cut = _pick_cut(length, space_cuts, max_chars, 1)
    return max_chars if cut is None else cut


def _check_max_chars(max_chars: int) -> None:
    """Raise ValueError for a piece length no text fits in."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")


def split_to_length(text: str, max_chars: int) -> list[str]:
    """Cut text into parts of at most max_chars, at clause breaks, spaces, or hard if need be."""
    _check_max_chars(max_chars)
    parts = []
    text = text.strip()
    start = 0  # the text not cut yet (kept in place: copying it for each part is quadratic)
    while len(text) - start > max_chars:
        cut = start + _cut_position(text, start, max_chars)
        parts.append(text[start:cut].rstrip())
        start = _run_end(_SPACE_RUN_RE, text, cut)
    if start < len(text):
        parts.append(text[start:])
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
