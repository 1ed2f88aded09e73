"""An OuteTTS 0.2/0.3 speaker profile from a user's recording and the timings of its words.

A port of outetts 0.4.4 `version/v2/utils.py` `create_speaker` after its alignment step; given
the same 16 kHz audio and word end times it cuts the same codes:

1. the recording, cut at the last word's end, resampled from 16 to 24 kHz and encoded whole by
   WavTokenizer's encoder (`codecs/wavtokenizer_encoder.py`), 75 codes a second;
2. each word's codes run from where the previous word's ended (the first from 0) to its own end,
   `round(end · 75)`, so a pause goes to the word after it; a word left with no codes gets
   `EMPTY_WORD_CODES`; its duration is its code count / 75, rounded to 0.01 s.

The dict is the package's `{"text", "words": [{"word", "duration", "codes"}]}` plus `language`
and `interface_version`, which the package ignores and our loader (`speakers.py`) reads.

Differences: the words are `profile03_words` (ours, which `speakers.speaker_words` rebuilds from
the text for a 0.3 prompt's punctuation), timed by the caller (Whisper), where the package runs
MMS CTC forced alignment on words from its own text processor; and the 16 → 24 kHz resampling is
`audio.resample` (Kaiser sinc), not torchaudio's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...alignment import WordTiming
from ...audio import resample
from ...codecs.wavtokenizer_encoder import SAMPLE_RATE, WavTokenizerEncoder
from ...errors import SpeakerError
from ...text import spoken_words
from .prompt import CODES_PER_SECOND

ALIGNER_RATE = 16_000
"""Rate of the recording the words are timed on (the package's `CTCForcedAlignment`)."""
EMPTY_WORD_CODES = (1,)
"""The codes of a word cut to none (`create_speaker`: `if not word_tokens: word_tokens = [1]`)."""
INTERFACE_VERSION = 2
"""`interface_version` of 0.2/0.3 profiles (outetts `InterfaceVersion.V2`)."""


def profile03_words(text: str, language: str) -> list[str]:
    """The words of `text` a 0.2/0.3 profile holds, in order: the caller times exactly these."""
    return [word.word for word in spoken_words(text, language)]


def profile03(
    audio16k: np.ndarray,
    words: Sequence[WordTiming],
    text: str,
    language: str,
    encoder: WavTokenizerEncoder,
) -> dict[str, Any]:
    """The 0.2/0.3 profile JSON dict of mono float `audio16k` (16 kHz) saying `text` in
    `language`, whose `words` (`profile03_words`, in order) end at the given times."""
    if [timing.word for timing in words] != profile03_words(text, language):
        raise ValueError(
            f"the timed words {[timing.word for timing in words]} are not the transcript's "
            f"{profile03_words(text, language)} (profile03_words)"
        )
    if not words:
        raise SpeakerError("the transcript has no words, so the profile would have no audio")
    cut = int(round(words[-1].end * ALIGNER_RATE))
    if cut <= 0:
        raise SpeakerError("the aligner found no speech: the last word ends at 0 s")
    audio24 = resample(np.asarray(audio16k, np.float32)[:cut], ALIGNER_RATE, SAMPLE_RATE)
    codes = encoder.encode(audio24).tolist()  # T = ceil(samples / 320) ints

    start = 0
    entries = []
    for timing in words:
        end = int(round(timing.end * CODES_PER_SECOND))
        word_codes = codes[start:end] or list(EMPTY_WORD_CODES)
        start = end
        entries.append(
            {
                "word": timing.word,
                "duration": round(len(word_codes) / CODES_PER_SECOND, 2),
                "codes": word_codes,
            }
        )
    return {
        "text": text,
        "words": entries,
        "language": language,
        "interface_version": INTERFACE_VERSION,
    }
