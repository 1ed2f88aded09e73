"""Text as the list of words that word-aligned models (OuteTTS 0.2/0.3) read."""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass

from .tags import TAG_RE
from .verbalize import verbalize

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

    The text is a sentence from the text front end; what it left in digits (`normalize: off`,
    or a language left to the engine) is spelled out here (`verbalize`), as these models read
    words only. Tags (`<laugh>`, `[sighs]`) are dropped. Then, lowercased: Latin letters with
    diacritics are folded to ASCII; apostrophes vanish ("it's" → "its"); every other character
    that is not a letter (a-z only in English) separates words, so "e-mail", "a/b" and "x.y"
    are two words each. Letters of other scripts are kept in other languages (no romanisation:
    a Chinese clause without spaces is one word).

    With `keep_punctuation`, the marks of `SPOKEN_MARKS` (and the characters read as them: "。",
    "¿", "…", curly quotes, ...) are kept in the `marks` of the word before them; otherwise they
    only separate words, and `marks` is empty.
    """
    english = language.lower().startswith("en")
    text = verbalize(" ".join(TAG_RE.split(text)[0::2]), language)  # odd indices are tags
    return _split_words(text.lower(), english, keep_punctuation)
