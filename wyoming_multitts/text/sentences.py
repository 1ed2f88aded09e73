"""Sentences of text that arrives in chunks: where a streamed answer can be spoken.

All of it runs on text a client chose, so every step takes time linear in the length of the text
(no pattern rescans what it has read).
"""

from __future__ import annotations

import collections
import enum
import re
import unicodedata

# Marks that may end a sentence: Latin, Arabic (؟) and Devanagari (। ॥) ones, and Chinese ones.
_SENTENCE_ENDS = ".!?…؟।॥。！？"

# Of those, the ones that end a sentence whatever follows (Chinese puts no space after a
# sentence); the others need a space and then a capital letter or a list number after them.
_FINAL_ENDS = "。！？…"

# Closing quotes, brackets and Markdown marks after the end marks that still belong to the
# sentence ("**Done.**").
_SENTENCE_CLOSERS = "'\")]}’”»」』）》】〕〉*_~`"

# Unicode categories of a letter that may start a sentence: uppercase, titlecase, or a letter
# of a script without case (Chinese, Arabic, Devanagari, ...).
_SENTENCE_START_CATEGORIES = frozenset(("Lu", "Lt", "Lo"))

# What may open a sentence before its first letter: Markdown emphasis and code, brackets,
# opening quotes, and Spanish's inverted marks ("**Next** …", "¿Qué …").
_SENTENCE_OPENERS = "*_~`[(\"'“‘„«¿¡「『（"

# Marks after a number that make it a list item ("2. ", "3) "), at most _MAX_LIST_MARKS of them.
_LIST_MARKS = ".)"
_MAX_LIST_MARKS = 2

# A sentence ending in a capitalised word of at most this many letters and a dot ("Dr.", "A.")
# may end in an abbreviation, and is joined to the next one.
_MAX_ABBREVIATION_LETTERS = 3

# A number of one or two digits and a dot, standing alone at the end ("am 3."): an ordinal where
# a language writes them with a dot.
_ORDINAL_END_RE = re.compile(r"(?<!\S)\d{1,2}\.\Z")

# Line break characters remembered at the end of a chunk, to find a blank line that the next
# chunk completes ("\r\n\r" + "\n").
_LINE_BREAK_LOOKBACK = 3

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
_OPENER_RUN_RE = re.compile(f"[{re.escape(_SENTENCE_OPENERS)}]*")
SPACE_RUN_RE = re.compile(r"\s*")
_DIGIT_RUN_RE = re.compile(r"\d*")
_LINE_BREAK_RUN_RE = re.compile(r"[\r\n]*")

# An end mark that ends a sentence whatever follows.
_FINAL_END_RE = re.compile(f"[{re.escape(_FINAL_ENDS)}]")

# A blank line: two line breaks or more in a row.
_BLANK_LINE_RE = re.compile(r"(?:\r?\n){2,}")


def end_of_run(run: re.Pattern[str], text: str, pos: int) -> int:
    """Where the run that `run` (a pattern that may match nothing) matches at pos ends."""
    match = run.match(text, pos)
    return match.end() if match else pos


def _in_word(char: str) -> bool:
    """Whether a character belongs to a word: a letter, mark, number or connector ("_")."""
    category = unicodedata.category(char)
    return category[0] in "LMN" or category == "Pc"


def _ends_in_abbreviation(text: str, titles: frozenset[str], ordinal_dot: bool) -> bool:
    """Whether text ends in an abbreviation that does not end a sentence: one of the language's
    `titles` ("Prof.", "z. B."), a capitalised word of at most three letters and a dot ("Dr.",
    "A.": initials and titles of languages without a table), or, where ordinals are written
    with a dot, a day or rank ("am 3. Oktober")."""
    if not text.endswith("."):
        return False
    if ordinal_dot and _ORDINAL_END_RE.search(text):
        return True
    for title in titles:
        before = len(text) - len(title) - 1  # the character before the title, if any
        if text.endswith(title) and (before < 0 or not _in_word(text[before])):
            return True
    start = len(text) - 1
    while start and _in_word(text[start - 1]):
        start -= 1
    word = text[start:-1]
    if not 0 < len(word) <= _MAX_ABBREVIATION_LETTERS:
        return False
    return word.isalpha() and unicodedata.category(word[0]) == "Lu"


class _Scan(enum.Enum):
    """What the sentence scan is reading (kept between chunks)."""

    TEXT = enum.auto()  # plain text: looking for an end mark or a blank line
    ENDS = enum.auto()  # a run of end marks
    CLOSERS = enum.auto()  # closing quotes and brackets after them
    SPACE = enum.auto()  # whitespace after those (the sentence ends if a capital follows)
    OPENERS = enum.auto()  # emphasis marks, brackets and quotes that may open the next one
    DIGITS = enum.auto()  # a number after the whitespace (it ends if a list mark follows)
    LIST_MARKS = enum.auto()  # "." or ")" after the number (it ends if whitespace follows)


class SentenceSplitter:
    """Sentences of text that arrives in chunks cut anywhere.

    A sentence ends (as in sentence-stream 1.3.0, the detector wyoming-piper uses):
    - after end marks (. ! ? … ؟ । ॥) and closing quotes or brackets, when whitespace and then
      an uppercase letter, a letter of a script without case or a list item ("2. ") follow,
      after any emphasis marks, brackets or opening quotes ("**Next**", "¿Qué");
    - after 。！？ or … (and closers) whatever follows, once something follows;
    - at a blank line.
    A sentence ending in an abbreviation that never ends one (`titles`: "Prof.", "z. B."), in a
    capitalised word of at most three letters and a dot ("Dr.", "A.") or, with `ordinal_dot`, in
    a number of one or two digits and a dot ("am 3.") is held and joined to the next one.
    Sentences are handed out stripped, as written (markup is the caller's). Unlike
    sentence-stream, a run of mixed end marks ("？!", "….") is one end, and any closer stays
    with the sentence ('…"'): it made sentences of the "!" or '"' left over.

    Written here rather than wrapping that library: its detector appends each chunk to a buffer
    and searches the whole buffer with three regexes after every chunk and every sentence, which
    takes quadratic time (one 128 KB chunk stalled the server 5.5 s). This one reads each
    character once (a list number's marks twice), whatever the chunking, keeping the state of
    its scan between chunks and the text in the chunks it came in.
    """

    def __init__(self, titles: frozenset[str] = frozenset(), ordinal_dot: bool = False) -> None:
        self._ordinal_dot = ordinal_dot
        # each title and its parts up to an inner dot: "z. B." is held at "z." already
        self._titles = frozenset(
            title[: end + 1] for title in titles for end, char in enumerate(title) if char == "."
        )
        # characters at the end of a sentence that decide whether it ends in an abbreviation:
        # the longest one and the character before it
        self._window = max((len(title) + 1 for title in self._titles), default=0)
        self._window = max(self._window, _MAX_ABBREVIATION_LETTERS + 2)
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
            self._held_tail = (self._held_tail + part)[-self._window :]
            if not _ends_in_abbreviation(self._held_tail, self._titles, self._ordinal_dot):
                sentence = "".join(self._held).strip()
                self._held.clear()
                self._held_tail = ""
                if sentence:
                    sentences.append(sentence)
        self._ends.clear()
        return sentences

    def pending(self, limit: int) -> str | None:
        """The first `limit` characters of the sentence not complete yet, or None when part of
        it is held (it may end in an abbreviation: it is cut when complete, if at all)."""
        if self._held:
            return None
        parts, length = [], 0
        for index, chunk in enumerate(self._chunks):
            part = chunk[self._head if index == 0 else 0 :][: limit - length]
            parts.append(part)
            length += len(part)
            if length >= limit:
                break
        return "".join(parts)

    def cut(self, length: int) -> str:
        """Hand out the first `length` characters of the sentence not complete yet, as a piece
        of its own (the first clause of a request, `clauses.first_clause_end`)."""
        return self._take(self._start + length).strip()

    def finish(self) -> list[str]:
        """End the stream; return the unfinished last sentence, if any (the splitter is reset)."""
        rest = ("".join(self._held) + self._take(self._received)).strip()
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
                    run_end = end_of_run(_LINE_BREAK_RUN_RE, text, pos)
                    if self._blank_line(text[pos:run_end]):
                        self._ends.append(offset + run_end)
                        self._line_breaks = ""
                    pos = run_end
                else:
                    self._scan, self._final, self._line_breaks = _Scan.ENDS, False, ""
            elif self._scan is _Scan.ENDS:
                run_end = end_of_run(_SENTENCE_END_RUN_RE, text, pos)
                self._final = self._final or bool(_FINAL_END_RE.search(text, pos, run_end))
                pos = run_end
                if pos < size:
                    self._scan = _Scan.CLOSERS
            elif self._scan is _Scan.CLOSERS:
                pos = end_of_run(_CLOSER_RUN_RE, text, pos)
                if pos < size:
                    self._end = offset + pos
                    if self._final:
                        self._ends.append(self._end)
                    space = not self._final and text[pos].isspace()
                    self._scan = _Scan.SPACE if space else _Scan.TEXT
            elif self._scan is _Scan.SPACE:
                run_end = end_of_run(SPACE_RUN_RE, text, pos)
                blank = self._blank_line(text[pos:run_end])
                pos = run_end
                if blank:  # the sentence ends anyway: at the blank line, so it is not held
                    self._ends.append(offset + pos)
                    self._scan, self._line_breaks = _Scan.TEXT, ""
                elif pos < size:
                    self._line_breaks = ""
                    self._scan = _Scan.OPENERS
            elif self._scan is _Scan.OPENERS:
                pos = end_of_run(_OPENER_RUN_RE, text, pos)
                if pos < size:
                    if unicodedata.category(text[pos]) in _SENTENCE_START_CATEGORIES:
                        self._ends.append(self._end)
                    number = text[pos].isdecimal()
                    self._scan = _Scan.DIGITS if number else _Scan.TEXT
            elif self._scan is _Scan.DIGITS:
                pos = end_of_run(_DIGIT_RUN_RE, text, pos)
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


def split_sentences(text: str, titles: frozenset[str] = frozenset()) -> list[str]:
    """All sentences of a complete text."""
    splitter = SentenceSplitter(titles)
    return splitter.add(text) + splitter.finish()
