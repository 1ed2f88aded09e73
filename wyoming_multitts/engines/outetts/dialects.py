"""What differs between OuteTTS releases, behind one small interface: a `Dialect` per version.

|  | 0.2 / 0.3 (`Dialect03`) | 1.0 (`Dialect10`) |
| --- | --- | --- |
| language model | Qwen2.5-0.5B | Llama-3.2-1B or Qwen3-0.6B |
| tokens, prompt, reply | `prompt.py` | `prompt10.py` |
| speaker profiles | `speakers.py` (`data/outetts/v0.x/`) | `speakers10.py` (`data/outetts/v1.0/`) |
| one audio frame (1/75 s) | a WavTokenizer code | a c1 and a c2 DAC code |
| codec (`files.vocoder`) | WavTokenizer GGUF, on llama.cpp | DAC `.pth`, in torch |

The engine (`engine.py`) runs the same steps for every version: prompt, prefill, sample,
guide, read frames, decode windows. A dialect supplies each step's version-specific part and
the option defaults that suit it (`option_defaults`, over `engine.OuteOptions`).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np

from ...codecs.wavtokenizer import WavTokenizerVocoder
from ...codecs.windowed import StreamWindows
from ...devices import Device, set_torch_threads, torch_device_for
from ...errors import EngineError, LlamaError, OptionError
from ...formats.gguf import GGUF_MAGIC
from ...llm.model import LlamaModel
from ...sampling import SamplingConfig
from ...text import spoken_words
from . import prompt, prompt10, speakers, speakers10

Frame = tuple[int, ...]
"""The codes of one 1/75 s audio frame: `(code,)` (WavTokenizer) or `(c1, c2)` (DAC)."""

DAC_REPO = "ibm-research/DAC.speech.v1.0"
DAC_FILE = "weights_24khz_1.5kbps_v1.0.pth"
WAVTOKENIZER_REPO = "ggml-org/WavTokenizer"
WAVTOKENIZER_FILE = "WavTokenizer-Large-75-F16.gguf"

WAVTOKENIZER_BUFFER_BYTES = 64 * 1024 * 1024
"""Compute buffers of the WavTokenizer graph (measured ~40 MB)."""
DAC_BUFFER_BYTES = 120 * 1000 * 1000
"""Decode buffers of the full-size DAC besides the per-frame ones (torch's and oneDNN's
scratch)."""
DAC_BUFFER_BYTES_PER_FRAME = 1000 * 1000
"""Decode buffers of the full-size DAC per frame of a window. Measured on its decoder (52 M
params, 215 MB resident; 2 threads), peak resident memory above the weights while one window
decodes: 21 frames +92 MB, 100 frames +210 MB, 200 +258 MB, 398 (5.3 s) +410 MB."""
DAC_FULL_SIZE_BYTES = 295_726_147
"""Size of the checkpoint those figures belong to (`weights_24khz_1.5kbps_v1.0.pth` as
`tools/modelgen/dac.py` writes it: dims as in Descript's 24 kHz DAC). Activations grow with the
channels and the weights with their square, so the buffers are scaled by the square root of a
checkpoint's size over this (the tiny DAC, 1.7 MB: 0.076; measured +7.5 MB at 21 frames, +29 MB
at 398)."""


class Guide(Protocol):
    """Keeps the model on the request's words (the `guide_tokens` option)."""

    def apply(self, previous: int, sampled: int) -> list[int]:
        """The tokens to use instead of `sampled`, which followed `previous`."""


class Reader(Protocol):
    """Turns generated tokens into audio frames as they come (`prompt.ReplyParser`,
    `prompt10.ReplyReader`)."""

    @property
    def finished(self) -> bool:
        """True once the reply has ended."""

    def frames(self, token: int) -> Sequence[Frame]:
        """The frames one token completes (mostly none or one)."""


class Request(NamedTuple):
    """One text piece's prompt and its guide."""

    prompt: prompt.Prompt
    guide: Guide


class FrameCodec(Protocol):
    """Frames → 24 kHz audio: the primitive `WindowedDecoder` calls for each window."""

    sample_rate: int
    samples_per_frame: int
    codes_per_frame: int
    """Codes (language-model tokens) in one frame."""
    codebook_size: int

    def decode(self, frames: np.ndarray) -> np.ndarray:
        """Float32 audio of frames (T, codes_per_frame) int64: samples_per_frame · T samples."""

    def close(self) -> None:
        """Free what the codec holds outside Python."""


class Dialect(Protocol):
    """One OuteTTS version's tokens, prompts, replies and speakers (its codec: `VERSIONS`)."""

    version: str
    """The version: 0.2, 0.3 or 1.0."""
    sampling: SamplingConfig
    """The reference's sampling for this version."""
    option_defaults: ClassVar[Mapping[str, Any]]
    """Defaults of `engine.OuteOptions` that this version changes."""
    tokens_per_audio_second: int
    """Most tokens per second of audio, for the speech budget."""
    max_text_chars: int
    """Longest text piece the model speaks well."""

    def speaker(self, spec: str, base_dir: Path | None) -> Any:
        """The speaker profile a voice's `speaker:` names (a built-in name or a path)."""

    def request(self, layout: str, speaker: Any, text: str, language: str) -> Request | None:
        """The prompt and guide for `text`; None when it has nothing to say."""

    def reader(self) -> Reader:
        """A reader for one reply."""


# ----------------------------------------------------------------------------------------------
# 0.2 / 0.3


class Dialect03:
    """OuteTTS 0.2 and 0.3: WavTokenizer codes, word lists as text (`prompt.py`)."""

    option_defaults: ClassVar[Mapping[str, Any]] = {}
    tokens_per_audio_second = 90  # 75 codes + 2-3 a word: docs/engines.md, "OuteTTS: token budget"
    max_text_chars = 200  # about 30 words, the reference package's largest chunk

    def __init__(self, lm: LlamaModel) -> None:
        self._lm = lm
        self._tokens = prompt.read_tokens(_token_id(lm))
        self.version = self._tokens.version
        self.sampling = prompt.DEFAULT_SAMPLING[self.version]

    def speaker(self, spec: str, base_dir: Path | None) -> speakers.SpeakerProfile:
        return speakers.load_speaker(speakers.speaker_path(spec, self.version, base_dir))

    def request(
        self, layout: str, speaker: speakers.SpeakerProfile | None, text: str, language: str
    ) -> Request | None:
        words = spoken_words(text, language, keep_punctuation=self.version == "0.3")
        if not words:
            return None
        tokenize = _tokenize(self._lm)
        guide = prompt.GuideTokens(prompt.guide_tokens(words, tokenize), self._tokens)
        return Request(
            prompt.build_prompt(self._tokens, layout, speaker, words, tokenize),
            _GuideTokens(guide, self._is_control),
        )

    def reader(self) -> Reader:
        return prompt.ReplyParser(self._tokens)

    def _is_control(self, token: int) -> bool:
        """Codes, durations, punctuation and end tokens: what guide tokens leave alone."""
        return self._lm.is_control(token) or self._lm.is_end_of_generation(token)


class _GuideTokens:
    """`prompt.GuideTokens`, which replaces one token by one, as a `Guide`."""

    def __init__(self, guide: prompt.GuideTokens, is_control: Callable[[int], bool]) -> None:
        self._guide = guide
        self._is_control = is_control

    def apply(self, previous: int, sampled: int) -> list[int]:
        return [self._guide.apply(previous, sampled, self._is_control(sampled))]


class WavTokenizerCodec:
    """The WavTokenizer vocoder GGUF on llama.cpp, sized for the largest window."""

    codes_per_frame = 1
    codebook_size = speakers.N_CODES

    def __init__(self, path: Path, device: Device, threads: int, windows: StreamWindows) -> None:
        self._vocoder = WavTokenizerVocoder(
            path, device, max_codes=windows.max_frames, threads=threads
        )
        self.sample_rate = self._vocoder.sample_rate
        self.samples_per_frame = self._vocoder.samples_per_frame

    def decode(self, frames: np.ndarray) -> np.ndarray:
        return self._vocoder.decode(frames[:, 0])  # (T, 1) → (T,) codes

    def close(self) -> None:
        self._vocoder.close()

    @staticmethod
    def estimate_bytes(path: Path, windows: StreamWindows) -> int:
        """The GGUF and its graph's buffers."""
        return path.stat().st_size + WAVTOKENIZER_BUFFER_BYTES


# ----------------------------------------------------------------------------------------------
# 1.0


class Dialect10:
    """OuteTTS 1.0: DAC c1/c2 frames, the text as written (`prompt10.py`)."""

    version = "1.0"
    sampling = prompt10.DEFAULT_SAMPLING
    option_defaults: ClassVar[Mapping[str, Any]] = {
        "max_tokens": 4000,
        "guide_tokens": False,
        "n_ctx": 6144,
        "context_left": 10,
        "context_right": 10,
        "first_chunk_codes": 1,
        "max_chunk_codes": 64,
    }
    tokens_per_audio_second = prompt10.TOKENS_PER_AUDIO_SECOND
    max_text_chars = 200  # the reference chunks 10-30 words; its card: at most ~42 s a run

    def __init__(self, lm: LlamaModel) -> None:
        self._lm = lm
        self._tokens = prompt10.read_tokens(_token_id(lm))

    def speaker(self, spec: str, base_dir: Path | None) -> speakers10.SpeakerProfile10:
        return speakers10.load_speaker(speakers10.speaker_path(spec, base_dir))

    def request(
        self, layout: str, speaker: speakers10.SpeakerProfile10 | None, text: str, language: str
    ) -> Request | None:
        if not prompt10.normalize_text(text):
            return None
        tokenize = _tokenize(self._lm)
        return Request(
            prompt10.build_prompt(self._tokens, layout, speaker, text, tokenize),
            prompt10.WordGuide(text, self._tokens, tokenize),
        )

    def reader(self) -> Reader:
        return prompt10.ReplyReader(self._tokens)


class DacCodec:
    """DAC.speech.v1.0 in torch (`codecs/dac.py`), on the device's torch device."""

    codes_per_frame = 2
    codebook_size = speakers10.N_CODES

    def __init__(self, path: Path, device: Device, threads: int, windows: StreamWindows) -> None:
        if importlib.util.find_spec("torch") is None:
            raise EngineError(
                "OuteTTS 1.0 decodes its DAC codes with torch, which is not installed; run "
                "script/setup (or pip install torch into the server's environment)"
            )
        from ...codecs.dac import load_dac_decoder  # torch: only for 1.0 models

        if windows.right < 1:
            raise OptionError(
                "context_right must be at least 1 for OuteTTS 1.0: DAC's last 8 samples of a "
                "window need the next frame (10 makes the stream exact)"
            )
        set_torch_threads(threads)
        self._decoder = load_dac_decoder(path, torch_device_for(device))
        self.sample_rate = self._decoder.sample_rate
        self.samples_per_frame = self._decoder.samples_per_frame

    def decode(self, frames: np.ndarray) -> np.ndarray:
        """With 24 kHz rates T frames give 320·T - 8 samples (`codecs/dac.py`); the missing
        end is padded with silence, so every frame is 320 samples: inside a stream it falls in
        the lookahead that is cut off, at the end of an utterance it is 0.3 ms of silence."""
        audio = self._decoder.decode_window(frames.T)  # (2, T) → (≈ 320·T,) float32
        return np.pad(audio, (0, self.samples_per_frame * len(frames) - audio.size))

    def close(self) -> None:
        """Nothing to free by hand: the decoder is ordinary torch memory."""

    @staticmethod
    def estimate_bytes(path: Path, windows: StreamWindows) -> int:
        """The checkpoint (its decoder is about 70 % of it) and the decode buffers of the
        largest window."""
        size = path.stat().st_size
        buffers = DAC_BUFFER_BYTES + DAC_BUFFER_BYTES_PER_FRAME * windows.max_frames
        return size + round(buffers * math.sqrt(size / DAC_FULL_SIZE_BYTES))


# ----------------------------------------------------------------------------------------------
# Choosing the dialect and checking the vocoder


class _Version(NamedTuple):
    dialect: type[Dialect03] | type[Dialect10]
    codec: type[WavTokenizerCodec] | type[DacCodec]
    vocoder_is_gguf: bool
    vocoder: str
    """What `files.vocoder` must be, as the catalog writes it."""


VERSIONS = {
    "0.2/0.3": _Version(
        Dialect03,
        WavTokenizerCodec,
        True,
        f"{{repo: {WAVTOKENIZER_REPO}, file: {WAVTOKENIZER_FILE}}} (WavTokenizer's GGUF)",
    ),
    "1.0": _Version(
        Dialect10, DacCodec, False, f"{{repo: {DAC_REPO}, file: {DAC_FILE}}} (DAC's checkpoint)"
    ),
}
"""Each family of versions: its dialect, its codec and what its `files.vocoder` is."""


def read_version(lm: LlamaModel) -> str:
    """The version family of a loaded (or vocabulary-only) model, from its vocabulary: a key
    of `VERSIONS`."""
    return "1.0" if prompt10.is_1_0_vocabulary(_token_id(lm)) else "0.2/0.3"


def version_of_vocoder(path: Path) -> str:
    """The version family whose vocoder `path` looks like (a GGUF or not): what the memory
    estimate goes by, before any model is loaded."""
    return "0.2/0.3" if _is_gguf(path) else "1.0"


def check_vocoder(version: str, path: Path) -> None:
    """An error naming the file, the model's version and what to put there when `path` is the
    other family's vocoder."""
    expected = VERSIONS[version]
    if _is_gguf(path) == expected.vocoder_is_gguf:
        return
    found = (
        "a GGUF file (the WavTokenizer vocoder of OuteTTS 0.2/0.3?)"
        if _is_gguf(path)
        else "not a GGUF file (the DAC checkpoint of OuteTTS 1.0?)"
    )
    raise EngineError(
        f"files.vocoder {path} is {found}, but the model is OuteTTS {version}, whose "
        f"vocoder is {expected.vocoder}: set files.vocoder to that"
    )


def _is_gguf(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError as err:
        raise EngineError(f"cannot read the vocoder {path} ({err.strerror})") from err


def _token_id(lm: LlamaModel) -> Callable[[str], int | None]:
    """`lm`'s special-token lookup as the prompt modules take it: None when absent."""

    def token_id(text: str) -> int | None:
        try:
            return lm.special_token(text)
        except LlamaError:
            return None

    return token_id


def _tokenize(lm: LlamaModel) -> Callable[[str], list[int]]:
    """Plain text → ids, special tokens not parsed (user text cannot inject them)."""
    return lambda text: lm.tokenize(text, special=False)
