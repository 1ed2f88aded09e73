"""Which of a voice's languages a sentence is in: its script first, then py3langid.

Home Assistant never says the language of a request, and a multilingual voice (Qwen3-TTS speaks
ten languages) is offered under each of them, so the words a number becomes depend on the
sentence itself: "21 Grad" is German, "21 degrees" English.
"""

from __future__ import annotations

import re
import threading

from py3langid import langid

# Scripts that tell the language by themselves, checked in this order (kana before Han: Japanese
# writes both), each with the languages written in it.
_SCRIPT_LANGUAGES = (
    (re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]"), ("ko",)),  # Hangul
    (re.compile(r"[\u3040-\u30ff]"), ("ja",)),  # hiragana, katakana
    (re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]"), ("zh", "ja")),  # Han
    (re.compile(r"[\u0400-\u04ff]"), ("ru", "uk", "bg", "sr", "be", "kk")),  # Cyrillic
    (re.compile(r"[\u0900-\u097f]"), ("hi", "mr", "ne")),  # Devanagari
)

# Languages written in other scripts than Latin (the rest are told apart by py3langid).
_NON_LATIN = frozenset(lang for _, langs in _SCRIPT_LANGUAGES for lang in langs)

# Fewer letters than this are too few for py3langid ("OK." reads as German): such a sentence
# keeps the language of the sentence before it.
MIN_LETTERS = 16

# A letter of any script.
_LETTER_RE = re.compile(r"[^\W\d_]")

_identifier: langid.LanguageIdentifier | None = None
_identifier_lock = threading.Lock()


def base_language(code: str) -> str:
    """The language of a code, without its region: "de_AT" → "de", "pt-BR" → "pt"."""
    return code.replace("-", "_").split("_")[0].lower()


def load_identifier() -> langid.LanguageIdentifier:
    """py3langid's model, loaded on first use: it takes some 0.6 s and 100 MB, which only a
    voice of several Latin-script languages needs (its first request loads its model too)."""
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            _identifier = langid.LanguageIdentifier.from_modelpath(
                langid.MODEL_DIR / langid.MODEL_FILE
            )
        return _identifier


def guess_language(text: str, languages: tuple[str, ...], previous: str | None = None) -> str:
    """The one of `languages` (a voice's, in the catalog's order) that `text` is most likely in.

    A script of its own decides (Hangul: Korean); among the voice's languages in the Latin script
    py3langid decides, unless the text has too few letters to tell: then `previous` (the language
    of the sentence before) or the first Latin one stays.
    """
    if len(languages) == 1:
        return languages[0]
    for script, written_in in _SCRIPT_LANGUAGES:
        if script.search(text):
            for language in languages:
                if base_language(language) in written_in:
                    return language
    latin = [language for language in languages if base_language(language) not in _NON_LATIN]
    if len(latin) < 2:
        return latin[0] if latin else languages[0]
    if len(_LETTER_RE.findall(text)) < MIN_LETTERS:
        return previous if previous in latin else latin[0]
    by_base = {base_language(language): language for language in reversed(latin)}
    for candidate, _score in load_identifier().rank(text):
        if candidate in by_base:
            return by_base[candidate]
    return latin[0]
