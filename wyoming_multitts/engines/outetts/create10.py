"""An OuteTTS 1.0 speaker profile from a user's recording and the timings of its words.

A port of outetts 0.4.4 `version/v3/audio_processor.py` `AudioProcessor.create_speaker_from_dict`
(plus the length rules of `create_speaker_from_whisper` and the transcript clean-up of
`utils/preprocessing.py` `text_normalizations`); given the same 24 kHz audio and word timings it
returns the same JSON dict, key for key, that `Interface.create_speaker` hands to `save_speaker`:

1. the DAC codes of the recording normalised to -18 LUFS (peak at most -1 dBFS), encoded in
   independent 5 s windows (`DacInterface.encode`), 75 frames per second;
2. each word's codes, cut at its timings in frames: the first word starts 20 frames early, the
   last ends 20 frames late, and a pause goes to the word after it (each word runs from where the
   previous one ended), so the profile holds every frame from the first cut to the last;
3. each word's features (`features.py`) on the original, un-normalised audio between its own
   timings, and the whole recording's as `global_features`.

Differences, all where the package fails: a word too short for a pitch frame gets pitch 0 (the
package raises, see `features.py`); a silent recording raises SpeakerError (`loudness.py`; the
package normalises it to NaN and encodes that), and so do an empty recording and an empty word
list (the package crashes on the first and writes a profile without words for the second).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ...alignment import WordTiming
from ...codecs.dac_encoder import DacEncoder
from ...errors import SpeakerError
from ...loudness import normalize_loudness
from .features import audio_features
from .prompt10 import FRAMES_PER_SECOND
from .speakers10 import INTERFACE_VERSION

_LOGGER = logging.getLogger(__name__)

SAMPLE_RATE = 24_000
"""The DAC's and so the profile's audio rate (outetts `DacInterface.sr`); resample to it first."""
MAX_SECONDS = 20.0
"""Longest recording accepted (`create_speaker_from_whisper` raises above it)."""
WARN_SECONDS = 15.0
"""Recordings longer than this work but are not recommended (the package warns above it)."""
TARGET_LUFS = -18.0
"""Loudness the recording is normalised to before encoding (`process_audio_tensor`)."""
PEAK_DB = -1.0
"""Highest peak (dBFS) after normalising; louder audio is scaled down to it."""
DAC_WINDOW_SECONDS = 5.0
"""The recording is encoded in independent windows of this length (`DacInterface.encode`'s
`win_duration`), rounded up to whole frames: 120 000 samples, 375 frames."""
EDGE_FRAMES = 20
"""Frames added before the first word and after the last (`max_extension`)."""

_WHITESPACE_RE = re.compile(r"\s+")
_DOUBLE_QUOTES_RE = re.compile(r"[“”]")
_SINGLE_QUOTES_RE = re.compile(r"[‘’]")
_DASHES_RE = re.compile(r"[–—]")
_CONTROL_RE = re.compile(r"[\x00-\x1F\x7F-\x9F]")


def check_recording(samples: np.ndarray, rate: int) -> None:
    """Refuse an empty recording or one over MAX_SECONDS; warn over WARN_SECONDS (the package's
    rules, measured on the recording's length in seconds)."""
    seconds = samples.shape[-1] / rate
    if seconds == 0:
        raise SpeakerError(
            "the recording is empty; a speaker profile needs a few seconds of speech"
        )
    if seconds > MAX_SECONDS:
        raise SpeakerError(
            f"the recording is {seconds:.1f} s long, more than {MAX_SECONDS:g} s: use a shorter "
            f"clip (up to {WARN_SECONDS:g} s works best)"
        )
    if seconds > WARN_SECONDS:
        _LOGGER.warning(
            "The recording is %.1f s long; up to %g s gives the best results",
            seconds,
            WARN_SECONDS,
        )


def normalize_transcript(text: str) -> str:
    """The transcript as the package stores it in a profile (`text_normalizations` of
    `utils/preprocessing.py`: whitespace runs to one space, `…` to `...`, stripped, curly quotes
    and long dashes to ASCII, control characters removed)."""
    text = _WHITESPACE_RE.sub(" ", text)
    text = text.replace("…", "...")
    text = text.strip()
    text = _DOUBLE_QUOTES_RE.sub('"', text)
    text = _SINGLE_QUOTES_RE.sub("'", text)
    text = _DASHES_RE.sub("-", text)
    return _CONTROL_RE.sub("", text)


def profile10(
    audio24: np.ndarray, words: Sequence[WordTiming], text: str, encoder: DacEncoder
) -> dict[str, Any]:
    """The 1.0 profile JSON dict of mono float32 `audio24` (SAMPLE_RATE) whose `words` are
    spoken at the given times: `{"text", "words": [{"word", "duration", "c1", "c2",
    "features"}], "global_features", "interface_version"}`. `text` is stored as given (pass it
    through `normalize_transcript`, and the recording through `check_recording`, first)."""
    if not words:
        raise SpeakerError("the transcript has no words, so the profile would have no audio")
    if encoder.sample_rate != SAMPLE_RATE:
        raise ValueError(f"the DAC encoder runs at {encoder.sample_rate} Hz, not {SAMPLE_RATE}")
    samples = np.asarray(audio24, dtype=np.float32)  # (S,)
    audio = torch.from_numpy(samples).clone()[None]  # (1, S) float32, the package's layout
    codes = _dac_codes(samples, encoder)  # (Q, T)
    c1, c2 = codes[0].tolist(), codes[1].tolist()  # the two codebooks the prompt writes

    start: int | None = None
    word_entries = []
    for index, timing in enumerate(words):
        word_start, word_end = float(timing.start), float(timing.end)
        if start is None:
            start = max(0, int(word_start * FRAMES_PER_SECOND) - EDGE_FRAMES)
        if index == len(words) - 1:
            end = min(len(c1), int(word_end * FRAMES_PER_SECOND) + EDGE_FRAMES)
        else:
            end = int(word_end * FRAMES_PER_SECOND)
        word_c1, word_c2 = c1[start:end], c2[start:end]
        word_audio = audio[:, int(word_start * SAMPLE_RATE) : int(word_end * SAMPLE_RATE)]
        start = end
        word_entries.append(
            {
                "word": timing.word.strip(),
                "duration": round(len(word_c1) / FRAMES_PER_SECOND, 2),
                "c1": word_c1,
                "c2": word_c2,
                "features": audio_features(word_audio, SAMPLE_RATE),
            }
        )
    return {
        "text": text,
        "words": word_entries,
        "global_features": audio_features(audio, SAMPLE_RATE),
        "interface_version": INTERFACE_VERSION,
    }


def _dac_codes(samples: np.ndarray, encoder: DacEncoder) -> np.ndarray:
    """Codes (Q, T) int64 of the loudness-normalised recording, each DAC window encoded on its
    own and the codes joined (`DacInterface.encode`): T = Σ ceil(window samples / hop)."""
    normalized = normalize_loudness(samples, SAMPLE_RATE, TARGET_LUFS, PEAK_DB)  # (S,) float32
    hop = encoder.hop_length
    window = math.ceil(int(DAC_WINDOW_SECONDS * SAMPLE_RATE) / hop) * hop
    pieces = [encoder.encode(normalized[i : i + window]) for i in range(0, len(normalized), window)]
    return np.concatenate(pieces, axis=1)  # (Q, T)
