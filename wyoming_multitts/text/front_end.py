"""What an LLM writes → what a person would say, sentence by sentence as it streams in.

Each chunk goes through Markdown's line structure (`MarkdownLines`), then the sentence splitter;
each finished sentence loses its inline Markdown and emoji, its language is told among the
voice's, and numbers, dates, units and abbreviations are spelled out in that language
(`verbalize`). A complete request is the same stream in one chunk, so a streamed answer says
exactly what the same text sent at once says.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import emoji

from ..catalog import TEXT_OPTIONS
from .clauses import MAX_FIRST_CHARS, first_clause_end
from .detect import base_language, guess_language
from .languages import language as language_info
from .markdown import TASK_BOX_RE, MarkdownLines, plain_text
from .sentences import SentenceSplitter
from .tags import TAG_RE, is_html_tag, is_speakable
from .verbalize import verbalize

# Any run of whitespace, newlines included.
_WHITESPACE_RE = re.compile(r"\s+")

# Whitespace before a punctuation mark, left where an emoji or HTML tag was ("sunny 🙂, and").
_SPACE_BEFORE_MARK_RE = re.compile(r"\s+(?=[,;:.!?](?!\w))")


def _char_class(code_points: set[int]) -> str:
    """A regex character class of these code points, as ranges (a class of single characters
    as long as the emoji table's is ten times slower to match)."""
    ranges: list[list[int]] = []
    for code_point in sorted(code_points):
        if ranges and code_point == ranges[-1][1] + 1:
            ranges[-1][1] = code_point
        else:
            ranges.append([code_point, code_point])
    return "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]"


# A run of the characters emoji are made of beyond ASCII (pictographs, skin tones, joiners,
# variation selectors, keycap marks: every one in the `emoji` package's table). Dropping them is
# what `emoji.replace_emoji` does, at a hundredth of its cost: it reads text a character at a
# time in Python. The digit of a keycap ("1️⃣") stays, and is read.
_EMOJI_RUN_RE = re.compile(
    _char_class({ord(char) for e in emoji.EMOJI_DATA for char in e if not char.isascii()}) + "+"
)

# Underscores in emoji names ("thumbs_up").
_UNDERSCORE_RE = re.compile(r"_+")


@dataclass(frozen=True)
class TextPolicy:
    """How one voice's text is made speakable."""

    languages: tuple[str, ...] = ("en",)
    """The voice's languages, the catalog's first one first (each sentence is in one of them)."""
    normalize: str = TEXT_OPTIONS["normalize"][0]
    """`full` spells out numbers, dates, units and abbreviations; `auto` does so except in the
    `native_languages`; `off` leaves the text as written (Markdown included), only split into
    sentences."""
    emoji: str = TEXT_OPTIONS["emoji"][0]
    """`drop` emoji, or `name` them (CLDR names, in the languages the `emoji` package has)."""
    native_languages: frozenset[str] = frozenset()
    """Languages whose numbers and dates the engine reads well itself (left to it by `auto`)."""

    def __post_init__(self) -> None:
        for name, values in TEXT_OPTIONS.items():
            if getattr(self, name) not in values:
                raise ValueError(f"{name} must be one of {', '.join(values)}")
        if not self.languages:
            raise ValueError("a voice needs at least one language")


class TextFrontEnd:
    """The spoken sentences of one request's text, as its chunks arrive (`add`, then `finish`).

    Time linear in the length of the text, whatever the chunking; the same sentences however
    the text is cut.
    """

    def __init__(self, policy: TextPolicy, first_clause: bool = False) -> None:
        self._policy = policy
        self._first_clause = first_clause
        """Still to cut the first clause of the first sentence (`clauses.first_clause_end`)."""
        self._markdown = MarkdownLines() if policy.normalize != "off" else None
        languages = [language_info(code) for code in policy.languages]
        titles = frozenset().union(*(language.titles for language in languages))
        ordinal_dot = any(language.ordinal_dot for language in languages)
        self._splitter = SentenceSplitter(titles, ordinal_dot)
        self._language: str | None = None  # the language of the last sentence

    def add(self, chunk: str) -> list[str]:
        """Add a chunk of text; return the spoken sentences it completes."""
        text = self._markdown.add(chunk) if self._markdown else chunk
        sentences = self._splitter.add(text)
        if self._first_clause and not sentences:
            pending = self._splitter.pending(MAX_FIRST_CHARS)
            cut = first_clause_end(pending) if pending else None
            if cut is not None:
                self._first_clause = False
                sentences = [self._splitter.cut(cut)]
        return self._spoken(self._with_first_clause(sentences))

    def finish(self) -> list[str]:
        """End the text; return its last spoken sentences."""
        text = self._markdown.finish() if self._markdown else ""
        sentences = self._splitter.add(text) + self._splitter.finish()
        return self._spoken(self._with_first_clause(sentences))

    def _with_first_clause(self, sentences: list[str]) -> list[str]:
        """`sentences`, the first one of the request cut after its first clause if it has one
        (as the same sentence is cut while it streams in: `clauses`)."""
        if not (self._first_clause and sentences):
            return sentences
        self._first_clause = False
        cut = first_clause_end(sentences[0])
        if cut is None:
            return sentences
        return [sentences[0][:cut].strip(), sentences[0][cut:].strip(), *sentences[1:]]

    def _spoken(self, sentences: list[str]) -> list[str]:
        spoken = (self._speak(sentence) for sentence in sentences)
        return [sentence for sentence in spoken if is_speakable(sentence)]

    def _speak(self, sentence: str) -> str:
        """One sentence as it is said."""
        policy = self._policy
        if policy.normalize == "off":
            return _WHITESPACE_RE.sub(" ", sentence).strip()
        box = TASK_BOX_RE.match(sentence)
        segments = TAG_RE.split(sentence[box.end() :] if box else sentence)
        for index in range(1, len(segments), 2):  # odd indices are tags, even ones text
            if segments[index].startswith("<") and is_html_tag(segments[index]):
                segments[index] = " "
        texts = range(0, len(segments), 2)
        for index in texts:
            segments[index] = plain_text(segments[index])
        language = guess_language(" ".join(segments[0::2]), policy.languages, self._language)
        self._language = language
        spell_out = (
            policy.normalize == "full" or base_language(language) not in policy.native_languages
        )
        for index in texts:
            text = _without_emoji(segments[index], policy.emoji, language)
            segments[index] = verbalize(text, language) if spell_out else text
        text = _WHITESPACE_RE.sub(" ", " ".join(segments))
        return _SPACE_BEFORE_MARK_RE.sub("", text).strip()


def _without_emoji(text: str, mode: str, language: str) -> str:
    """Text with its emoji dropped or named in `language` (English where `emoji` has no names
    in that language)."""
    if mode == "drop" or not _EMOJI_RUN_RE.search(text):
        return _EMOJI_RUN_RE.sub(" ", text)
    code = _emoji_language(language)

    def name(_chars: str, data: dict[str, str]) -> str:
        return " " + _UNDERSCORE_RE.sub(" ", data.get(code, data["en"]).strip(":")) + " "

    return emoji.replace_emoji(text, replace=name)


@functools.lru_cache(maxsize=None)
def _emoji_language(language: str) -> str:
    """The language emoji are named in for `language`, its names loaded (the `emoji` package
    loads languages other than English on demand)."""
    code = base_language(language)
    if code not in emoji.LANGUAGES:
        return "en"
    emoji.config.load_language(code)
    return code


def spoken_sentences(text: str, policy: TextPolicy, first_clause: bool = False) -> list[str]:
    """The spoken sentences of a complete text (the first clause of the first one apart, with
    `first_clause`)."""
    front_end = TextFrontEnd(policy, first_clause)
    return front_end.add(text) + front_end.finish()
