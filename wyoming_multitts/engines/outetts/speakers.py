"""OuteTTS speaker profiles: a few seconds of a real voice as words and WavTokenizer codes.

The engine's prompt (`prompt.py`) writes a profile's words and codes before the new text, and the
model continues in that voice. Profiles are outetts's speaker JSON files: the built-in ones in
`data/outetts/` (see its NOTICE.md), or a file the catalog names.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...catalog import DATA_DIR
from ...errors import SpeakerError
from ...text import SpokenWord, spoken_words

N_CODES = 4096
"""WavTokenizer-Large-75's codebook: codes 0..4095. The vocabulary has `<|0|>`..`<|4099|>`; the
last four are never valid codes (outetts maps range(4100); docs/engines.md,
"OuteTTS: token ids")."""

MAX_WORD_SECONDS = 10.0
"""Longest word duration a speaker profile may give: `<|t_10.00|>`, the last duration token we
assume the vocabulary has (the real count is unverified: docs/engines.md, "OuteTTS: token ids";
profiles stay under 2 s)."""

SPEAKERS_DIR = DATA_DIR / "outetts"
"""Built-in speaker profiles, `v0.2/NAME.json` and `v0.3/NAME.json` (see its NOTICE.md)."""

_SPEAKER_NAME_RE = re.compile(r"[a-z]{2}_[a-z]+_[0-9]+")
"""What a built-in speaker name looks like (`en_male_1`); anything else is taken as a path."""


@dataclass(frozen=True)
class SpeakerWord:
    """One word of a speaker profile and its audio."""

    word: str
    """The normalised word (lowercase, no spaces or punctuation)."""
    duration: float
    """Seconds; written into the prompt as `<|t_{duration:.2f}|>`."""
    codes: tuple[int, ...]
    """WavTokenizer codes, 0..4095, 75 per second."""


@dataclass(frozen=True)
class SpeakerProfile:
    """A speaker reference: transcript and per-word audio codes (outetts speaker JSON)."""

    name: str
    """The file name without `.json` (`en_male_1`)."""
    text: str
    """The transcript as spoken; 0.3 prompts take the punctuation of the words from it."""
    words: tuple[SpeakerWord, ...]
    language: str | None = None
    """`language` of 0.2 profiles (`en`, `ja`, ...); 0.3 profiles have none."""
    source: Path | None = None
    """The file it was read from."""

    @property
    def n_codes(self) -> int:
        """Audio codes in the profile (75 per second)."""
        return sum(len(word.codes) for word in self.words)


def builtin_speakers(version: str) -> tuple[str, ...]:
    """Names of the speaker profiles shipped for OuteTTS `version` ("0.2" or "0.3")."""
    return tuple(sorted(path.stem for path in (SPEAKERS_DIR / f"v{version}").glob("*.json")))


def speaker_path(spec: str, version: str, base_dir: Path | None = None) -> Path:
    """The JSON file of a voice's `speaker:`: a built-in name (`en_male_1`) or a path.

    A relative path is taken relative to `base_dir` (the catalog's folder) when given.
    """
    builtin = SPEAKERS_DIR / f"v{version}" / f"{spec}.json"
    if _SPEAKER_NAME_RE.fullmatch(spec) and builtin.is_file():
        return builtin
    path = Path(spec).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if path.is_file():
        return path
    raise SpeakerError(
        f"speaker {spec!r}: no such built-in OuteTTS {version} speaker "
        f"({', '.join(builtin_speakers(version))}) and no file {path}"
    )


def load_speaker(path: Path) -> SpeakerProfile:
    """Read and check a speaker profile JSON (outetts 0.2 or 0.3 format)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SpeakerError(f"{path}: cannot read the speaker profile ({err.strerror})") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SpeakerError(f"{path}: the speaker profile is not valid JSON ({err})") from err
    if not isinstance(doc, dict):
        raise SpeakerError(f"{path}: a speaker profile is a JSON object with 'text' and 'words'")
    text, language, words_doc = doc.get("text"), doc.get("language"), doc.get("words")
    if not isinstance(text, str):
        raise SpeakerError(f"{path}: 'text' (the transcript) is missing or not a string")
    if language is not None and not isinstance(language, str):
        raise SpeakerError(f"{path}: 'language' must be a string such as \"en\"")
    if not isinstance(words_doc, list) or not words_doc:
        raise SpeakerError(f"{path}: 'words' is missing or empty; the profile has no audio")
    words = tuple(_speaker_word(entry, f"{path}: words[{i}]") for i, entry in enumerate(words_doc))
    return SpeakerProfile(path.stem, text, words, language, path)


def _speaker_word(entry: Any, where: str) -> SpeakerWord:
    """One checked entry of a profile's `words`."""
    if not isinstance(entry, dict):
        raise SpeakerError(f"{where}: expected an object with 'word', 'duration' and 'codes'")
    word, duration, codes = entry.get("word"), entry.get("duration"), entry.get("codes")
    if not isinstance(word, str) or not word:
        raise SpeakerError(f"{where}: 'word' is missing or empty")
    where = f"{where} ({word!r})"
    if any(char.isspace() or char in "<>|" for char in word):
        raise SpeakerError(f"{where}: a word may not contain spaces or '<', '>', '|'")
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        raise SpeakerError(f"{where}: 'duration' (seconds) is missing or not a number")
    if not math.isfinite(duration) or not 0 <= duration <= MAX_WORD_SECONDS:
        raise SpeakerError(
            f"{where}: bad duration {duration}: must be 0..{MAX_WORD_SECONDS:g} seconds"
        )
    if not isinstance(codes, list) or not codes:
        raise SpeakerError(f"{where}: 'codes' is missing or empty")
    for code in codes:
        if isinstance(code, bool) or not isinstance(code, int):
            raise SpeakerError(f"{where}: code {code!r} is not an integer")
        if not 0 <= code < N_CODES:
            raise SpeakerError(f"{where}: code {code} is out of range 0..{N_CODES - 1}")
    return SpeakerWord(word, float(duration), tuple(codes))


def speaker_words(speaker: SpeakerProfile, version: str) -> list[SpokenWord]:
    """The profile's words as its prompt writes them; for 0.3 with their punctuation.

    The words are the profile's own (so text and audio lines always agree). For 0.3 the marks
    come from `spoken_words(text)` when its words are exactly the profile's, which holds for
    every built-in profile in a Latin script; for the romanised ja/ko/zh ones the words are
    written without marks.
    """
    bare = [SpokenWord(word.word) for word in speaker.words]
    if version == "0.2":
        return bare
    marked = spoken_words(speaker.text, speaker.language or "en", keep_punctuation=True)
    if [word.word for word in marked] != [word.word for word in bare]:
        return bare
    return marked
