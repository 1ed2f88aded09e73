"""Markdown as a person reads it aloud.

Conversation agents answer in Markdown, and Home Assistant streams the answer as it is written, so
the structure is read line by line as text arrives (`MarkdownLines`: markers dropped, a pause
after every line, code blocks skipped, table rows read cell by cell) and the inline markup of
each finished sentence is read by markdown-it-py (`plain_text`: emphasis, links by their text,
bare URLs by their site, code by its content). markdown-it-py parses whole documents only, which
is why the line structure is read here: a paragraph must be spoken sentence by sentence before
its line ends.
"""

from __future__ import annotations

import re
import urllib.parse

from markdown_it import MarkdownIt
from markdown_it.token import Token

PAUSE = "\n\n"
"""What ends a line's text: a blank line, which always ends a sentence (`SentenceSplitter`)."""

# Characters a line's markers are made of: indentation, quote marks, headings, bullets, list
# numbers, table pipes and code fences. A line's kind is decided at its first other character.
_MARKER_RUN_RE = re.compile(r"[ \t>#*+\-|`~0-9.)]*")

# The markers a line may start with, any number of them: indentation, a block quote, a bullet,
# a list number ("12. ", "3) ": CommonMark allows nine digits).
_CONTAINER_RE = re.compile(r"[ \t]*(?:>|[-*+][ \t]+|[0-9]{1,9}[.)][ \t]+)")

# A heading marker after the containers: "# " to "###### " (or a bare "#" ending the line).
_HEADING_RE = re.compile(r"#{1,6}(?:[ \t]+|$)")

# A code fence: three or more backticks or tildes.
_FENCE_RE = re.compile(r"[ \t]*(`{3,}|~{3,})")

# A table's delimiter row cell: "---", ":--", "--:", ":-:".
_DELIMITER_CELL_RE = re.compile(r"[ \t]*:?-+:?[ \t]*")

# A run of Markdown marks markdown-it left in the text: emphasis it could not pair (a span cut
# by a sentence end: "**Two. Sentences.**"), or a heading mark in mid-line (`_stray_marks`).
_MARK_RUN_RE = re.compile(r"[*~_#]+")

# A character that may start inline Markdown or HTML (most sentences have none, and skip the
# parser): emphasis, code, links and images, HTML, entities, escapes, strikethrough.
_INLINE_MARKUP_RE = re.compile(r"[*_`\[<&\\~#]")

# A task list box at the start of a list item: "[ ] " or "[x] ".
TASK_BOX_RE = re.compile(r"\[[ xX]\][ \t]+")

# Inline Markdown, with raw HTML kept as tokens so it can be dropped. (Not linkify-it-py for bare
# URLs: it takes quadratic time on "http://a." repeated; `_URL_RE` reads each character once.)
_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("strikethrough")

# A bare URL: "https://…" or "www.…" up to whitespace or a bracket, not inside a word or a longer
# URL (so each is matched from its start only, once). Domains without either ("example.com")
# and e-mail addresses are read by `verbalize`.
_URL_RE = re.compile(r"(?<![\w/.:@-])(?:https?://|www\.)[^\s<>()\[\]{}\"']+", re.IGNORECASE)

# Punctuation at the end of a bare URL that belongs to the sentence ("see https://x.org.").
_URL_TRAILERS = ".,;:!?"


class MarkdownLines:
    """Streamed Markdown → the text to read, with `PAUSE` at the end of every line.

    As each line starts, its markers are read (quote marks, bullets, list numbers, heading
    marks) and dropped; the rest of the line is passed on as it arrives. Every line ends in a
    pause: LLM answers break lines between headings, list items and table rows, not inside a
    sentence. Table rows are read cell by cell, separated by commas; delimiter rows and fenced
    code blocks are skipped (code read aloud helps nobody). The same text gives the same output
    however it is cut into chunks, in time linear in its length.
    """

    def __init__(self) -> None:
        self._markers: list[str] = []  # the markers of the current line, while undecided
        self._deciding = True  # whether the current line's kind is still undecided
        self._row: list[str] | None = None  # the current line, when it is a table row
        self._skipping = False  # whether the current line is skipped (code, fence)
        self._fence: str | None = None  # the fence of the code block being skipped

    def add(self, chunk: str) -> str:
        """Add a chunk; return the text it completes (may be empty)."""
        out: list[str] = []
        pos = 0
        while pos < len(chunk):
            if self._deciding:
                end = _MARKER_RUN_RE.match(chunk, pos).end()  # type: ignore[union-attr]
                self._markers.append(chunk[pos:end])
                pos = end
                if pos < len(chunk):
                    self._decide(out)
                continue
            newline = chunk.find("\n", pos)
            line_end = len(chunk) if newline < 0 else newline
            if self._row is not None:
                self._row.append(chunk[pos:line_end])
            elif not self._skipping:
                out.append(chunk[pos:line_end])
            if newline < 0:
                break
            self._end_line(out)
            pos = newline + 1
        return "".join(out)

    def finish(self) -> str:
        """End the text; return what is left of its last line (the reader is reset)."""
        out: list[str] = []
        if self._deciding:
            self._decide(out)
        self._end_line(out)
        self._fence = None
        return "".join(out)

    def _decide(self, out: list[str]) -> None:
        """The current line's markers are all there: tell its kind and pass on its text."""
        rest = "".join(self._markers)
        self._markers.clear()
        self._deciding = False
        fence = _FENCE_RE.match(rest)
        if self._fence is not None:  # in a code block: skip lines up to its closing fence
            self._skipping = True
            if fence and fence[1][0] == self._fence[0] and len(fence[1]) >= len(self._fence):
                self._fence = None
            return
        start = 0  # where the line's text starts, after its containers
        while container := _CONTAINER_RE.match(rest, start):
            start = container.end()
        rest = rest[start:]
        if fence:
            self._fence, self._skipping = fence[1], True
        elif rest.startswith("|"):
            self._row = [rest]
        else:
            heading = _HEADING_RE.match(rest)
            out.append(rest[heading.end() :] if heading else rest)

    def _end_line(self, out: list[str]) -> None:
        """The current line has ended: pass on a table row's cells, then a pause."""
        if self._row is not None:
            cells = "".join(self._row).strip().strip("|").split("|")
            if not all(_DELIMITER_CELL_RE.fullmatch(cell) for cell in cells):
                out.append(", ".join(cell.strip() for cell in cells if cell.strip()))
        out.append(PAUSE)
        self._row, self._skipping, self._deciding = None, False, True


def _stray_marks(match: re.Match[str]) -> str:
    """A run of marks as it is read: kept inside a word ("snake_case", "C#"), standing alone
    ("5 * 3") or between digits ("5*3"); dropped where it touches a word on one side only."""
    text, start, end = match.string, match.start(), match.end()
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    run = match[0]
    if run.strip("_") == "":
        return run if before.isalnum() and after.isalnum() else ""
    if run.strip("#") == "" and before.isalnum():
        return run
    if before.isspace() and after.isspace():
        return "" if "#" in run else run
    return run if before.isdecimal() and after.isdecimal() else ""


def _site(url: str) -> str:
    """What a person says for a URL: its site ("https://www.example.com/a?b=1" → "example.com"),
    or the address of an e-mail link."""
    if url.startswith("mailto:"):
        return url[len("mailto:") :]
    if "://" not in url:
        url = "http://" + url  # "www.example.com/a": urlsplit needs a scheme to find the host
    try:
        host = urllib.parse.urlsplit(url).hostname or url
    except ValueError:  # a malformed port or IPv6 address: read what is there
        host = url
    return host[len("www.") :] if host.startswith("www.") else host


def _bare_url(match: re.Match[str]) -> str:
    """A bare URL as its site, with the sentence's punctuation after it kept."""
    url = match[0].rstrip(_URL_TRAILERS)
    return _site(url) + match[0][len(url) :]


def _spoken_tokens(tokens: list[Token]) -> list[str]:
    """The words of inline tokens: text and code as they are, links by their text (bare URLs by
    their site), images by their description; emphasis marks and HTML dropped."""
    words: list[str] = []
    in_bare_link = False  # inside a link whose text is its URL (<https://…>)
    for token in tokens:
        if token.type == "link_open":
            in_bare_link = token.markup == "autolink"
            if in_bare_link:
                words.append(_site(str(token.attrs["href"])))
        elif token.type == "link_close":
            in_bare_link = False
        elif in_bare_link:
            continue
        elif token.type == "text":
            words.append(_URL_RE.sub(_bare_url, _MARK_RUN_RE.sub(_stray_marks, token.content)))
        elif token.type in ("code_inline", "image"):
            words.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            words.append(" ")
    return words


def plain_text(text: str) -> str:
    """One sentence's inline Markdown as the words to say: "**Bold** [docs](https://x.org)" →
    "Bold docs"."""
    if not _INLINE_MARKUP_RE.search(text):
        return _URL_RE.sub(_bare_url, text)
    return "".join(_spoken_tokens(_MARKDOWN.parseInline(text)[0].children or []))
