"""OuteTTS 1.0 speaker profiles: a few seconds of a real voice as words, DAC codes and features.

The 1.0 prompt (`prompt10.py`) writes a profile's words, per-word features and two codebooks of
DAC codes before the new text, and the model continues in that voice. Profiles are the outetts
package's 1.0 ("v3") speaker JSON (outetts 0.4.4 `version/v3/audio_processor.py`,
`create_speaker_from_dict`):

    {"text": "The cat watched ...",
     "words": [{"word": "The", "duration": 0.2, "c1": [720, ...], "c2": [658, ...],
                "features": {"energy": 10, "spectral_centroid": 15, "pitch": 45}}, ...],
     "global_features": {"energy": 13, "spectral_centroid": 20, "pitch": 28},
     "interface_version": 3}

The built-in one is in `data/outetts/v1.0/` (see the NOTICE.md there); a voice may also name a
file, made with the outetts package (`Interface.create_speaker` and `save_speaker`) or from a
recording and its word timings by `create10.py`, its port. A word may have no codes at all
(duration 0, `c1` and `c2` both empty): the package writes those for a word that ends, in whole
frames, where the previous one ended (shorter than a frame, 1/75 s), and its prompt then gives
the word `<|code|>` with no pairs.
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

N_CODES = 1024
"""DAC.speech.v1.0's codebooks: codes 0..1023 in each of the two. The vocabulary also has
`<|c1_1024|>` and `<|c2_1024|>` (outetts maps range(1025)), which are never valid codes."""

FEATURE_MAX = 100
"""Features are a [0, 1] measure scaled to an integer 0..100 (outetts 0.4.4
`version/v3/audio_processor.py`, `Features.scale_values`): `<|energy_0|>`..`<|energy_100|>`."""

FEATURE_NAMES = ("energy", "spectral_centroid", "pitch")
"""A word's (and the whole profile's) features, in the order the prompt writes them (outetts
0.4.4 `version/v3/prompt_processor.py`, `get_features`)."""

MAX_WORD_SECONDS = 5.0
"""Longest word duration a profile may give: `<|t_5.00|>`, the last duration token we assume
the 1.0 vocabulary has (its real count is not published; the built-in profile's words last
0.12-0.89 s)."""

INTERFACE_VERSION = 3
"""`interface_version` of 1.0 profiles: the package refuses any other for a 1.0 model (outetts
0.4.4 `version/interface.py`, `load_speaker`). We also take a profile without one (a
hand-made file) when its words have the 1.0 shape."""

SPEAKERS_DIR = DATA_DIR / "outetts" / "v1.0"
"""Built-in 1.0 speaker profiles, `NAME.json` (see the NOTICE.md there)."""

_SPEAKER_NAME_RE = re.compile(r"[a-z]{2}-[a-z]+-[0-9]+(-[a-z]+)?")
"""What a built-in 1.0 speaker name looks like (`en-female-1-neutral`); else it is a path."""


@dataclass(frozen=True)
class Features:
    """A word's or a profile's features, each 0..FEATURE_MAX."""

    energy: int
    """Loudness (RMS)."""
    spectral_centroid: int
    """Brightness (spectral centroid over half the sample rate)."""
    pitch: int
    """Pitch (autocorrelation estimate, normalised)."""

    def values(self) -> tuple[int, int, int]:
        """The three values in `FEATURE_NAMES` order."""
        return (self.energy, self.spectral_centroid, self.pitch)


@dataclass(frozen=True)
class SpeakerWord10:
    """One word of a 1.0 speaker profile and its audio."""

    word: str
    """The word as spoken, with its punctuation (`windowsill,`); no spaces."""
    duration: float
    """Seconds; written into the prompt as `<|t_{duration:.2f}|>`."""
    c1: tuple[int, ...]
    """First DAC codebook, 0..1023, 75 per second."""
    c2: tuple[int, ...]
    """Second DAC codebook, as many codes as `c1` (one pair per frame)."""
    features: Features


@dataclass(frozen=True)
class SpeakerProfile10:
    """A 1.0 speaker reference: transcript, per-word DAC codes and features, global features."""

    name: str
    """The file name without `.json` (`en-female-1-neutral`)."""
    text: str
    """The transcript as spoken, with punctuation."""
    words: tuple[SpeakerWord10, ...]
    global_features: Features
    """The whole recording's features (written only by the `turn` prompt layout)."""
    source: Path | None = None
    """The file it was read from."""

    @property
    def n_frames(self) -> int:
        """DAC frames (c1/c2 pairs) in the profile, 75 per second."""
        return sum(len(word.c1) for word in self.words)


def builtin_speakers() -> tuple[str, ...]:
    """Names of the 1.0 speaker profiles shipped in `SPEAKERS_DIR`."""
    return tuple(sorted(path.stem for path in SPEAKERS_DIR.glob("*.json")))


def speaker_path(spec: str, base_dir: Path | None = None) -> Path:
    """The JSON file of a 1.0 voice's `speaker:`: a built-in name (`en-female-1-neutral`) or a
    path, relative to `base_dir` (the catalog's folder) when given and not absolute."""
    builtin = SPEAKERS_DIR / f"{spec}.json"
    if _SPEAKER_NAME_RE.fullmatch(spec) and builtin.is_file():
        return builtin
    path = Path(spec).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if path.is_file():
        return path
    raise SpeakerError(
        f"speaker {spec!r}: no such built-in OuteTTS 1.0 speaker "
        f"({', '.join(builtin_speakers())}) and no file {path}"
    )


def load_speaker(path: Path) -> SpeakerProfile10:
    """Read and check a 1.0 speaker profile JSON; errors name the file, the word and the fault."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SpeakerError(f"{path}: cannot read the speaker profile ({err.strerror})") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SpeakerError(f"{path}: the speaker profile is not valid JSON ({err})") from err
    if not isinstance(doc, dict):
        raise SpeakerError(
            f"{path}: a speaker profile is a JSON object with 'text', 'words' and "
            "'global_features'"
        )
    version = doc.get("interface_version", INTERFACE_VERSION)
    if version != INTERFACE_VERSION:
        raise SpeakerError(
            f"{path}: interface_version {version!r} is not an OuteTTS 1.0 profile "
            f"(those have {INTERFACE_VERSION}); make one with outetts 0.4.4 for a 1.0 model"
        )
    text, words_doc = doc.get("text"), doc.get("words")
    if not isinstance(text, str) or not text.strip():
        raise SpeakerError(f"{path}: 'text' (the transcript) is missing, empty or not a string")
    if not isinstance(words_doc, list) or not words_doc:
        raise SpeakerError(f"{path}: 'words' is missing or empty; the profile has no audio")
    if isinstance(words_doc[0], dict) and "codes" in words_doc[0] and "c1" not in words_doc[0]:
        raise SpeakerError(
            f"{path}: an OuteTTS 0.2/0.3 profile (one 'codes' list per word); a 1.0 model "
            "needs a 1.0 profile with 'c1' and 'c2' codes per word"
        )
    words = tuple(_speaker_word(entry, f"{path}: words[{i}]") for i, entry in enumerate(words_doc))
    global_features = _features(doc.get("global_features"), f"{path}: 'global_features'")
    return SpeakerProfile10(path.stem, text, words, global_features, path)


def _speaker_word(entry: Any, where: str) -> SpeakerWord10:
    """One checked entry of a profile's `words`."""
    if not isinstance(entry, dict):
        raise SpeakerError(
            f"{where}: expected an object with 'word', 'duration', 'c1', 'c2' and 'features'"
        )
    word, duration = entry.get("word"), entry.get("duration")
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
    c1, c2 = (_codes(entry.get(book), f"{where}: '{book}'") for book in ("c1", "c2"))
    for book, codes, other in (("c1", c1, c2), ("c2", c2, c1)):
        if not codes and other:  # both empty is a word with no audio (module docstring)
            raise SpeakerError(f"{where}: '{book}' (DAC codes) is missing or empty")
    if len(c1) != len(c2):
        raise SpeakerError(
            f"{where}: 'c1' has {len(c1)} codes but 'c2' {len(c2)}; each frame is one pair"
        )
    features = _features(entry.get("features"), f"{where}: 'features'")
    return SpeakerWord10(word, float(duration), c1, c2, features)


def _codes(codes: Any, where: str) -> tuple[int, ...]:
    """One codebook's codes of a word, checked; may be empty."""
    if not isinstance(codes, list):
        raise SpeakerError(f"{where} (DAC codes) is missing or not a list")
    for index, code in enumerate(codes):
        if isinstance(code, bool) or not isinstance(code, int):
            raise SpeakerError(f"{where}[{index}]: code {code!r} is not an integer")
        if not 0 <= code < N_CODES:
            raise SpeakerError(f"{where}[{index}]: code {code} is out of range 0..{N_CODES - 1}")
    return tuple(codes)


def _features(doc: Any, where: str) -> Features:
    """Checked `{"energy", "spectral_centroid", "pitch"}`, each an integer 0..FEATURE_MAX."""
    if not isinstance(doc, dict):
        raise SpeakerError(f"{where} is missing; expected {{{', '.join(FEATURE_NAMES)}}}")
    values = []
    for name in FEATURE_NAMES:
        value = doc.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpeakerError(f"{where}: {name!r} is {value!r}, not an integer")
        if not 0 <= value <= FEATURE_MAX:
            raise SpeakerError(f"{where}: {name!r} {value} is out of range 0..{FEATURE_MAX}")
        values.append(value)
    return Features(*values)
