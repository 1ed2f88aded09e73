"""OuteTTS (OuteAI): a language model writes each word, its duration and its audio codes, 75 frames
a second; a codec turns the frames into 24 kHz audio.

One engine for three releases. The version is read from the GGUF's vocabulary, like every token
id, and what differs lives behind `dialects.Dialect`:
- 0.2 / 0.3 (Qwen2.5-0.5B): one WavTokenizer code per frame, decoded by the WavTokenizer
  vocoder, which llama.cpp runs as an embeddings model, and an inverse STFT;
- 1.0 (Llama-3.2-1B or Qwen3-0.6B): a c1 and a c2 DAC code per frame, decoded by DAC in torch.

The voice is a speaker profile (a built-in one or the user's JSON). The default is the official
`inline` layout, the one the models were trained on, which evaluates the profile (0.3: ~1 000
tokens, 1.0: ~1 800) for every request; with `prompt_layout: turn` the profile's part of the
prompt stays in the KV cache between requests, so a request pays only for its own words (a
speed option: the models never saw two turns in one context, so its quality is unchecked).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from ...catalog import ModelSpec
from ...codecs.windowed import StreamWindows, WindowedDecoder
from ...devices import Device
from ...errors import EngineError, context
from ...formats.gguf import gguf_attention_scores_bytes, gguf_kv_cache_bytes
from ...llm.model import DEFAULT_BATCH, LlamaModel
from ...options import VoiceOptions, apply_options
from ...sampling import Sampler
from ...stats import PieceStats
from ..base import PlannedBytes, VoiceSettings, speech_budget
from .dialects import VERSIONS, Dialect, Frame, check_vocoder, read_version, version_of_vocoder
from .prompt import LAYOUTS

_LOGGER = logging.getLogger(__name__)

FILES: Mapping[str, tuple[str, ...] | None] = {"model": None, "vocoder": None}
"""The OuteTTS GGUF (e.g. `OuteTTS-0.3-500M-Q4_K_M.gguf`) and its codec:
`WavTokenizer-Large-75-F16.gguf` for 0.2/0.3, `weights_24khz_1.5kbps_v1.0.pth` (DAC) for 1.0."""


@dataclass(frozen=True)
class OuteOptions:
    """Options of an OuteTTS model (`options:` in the catalog); voices may override the first
    four, the codec's windows are the model's. The defaults are 0.2/0.3's; 1.0 changes the ones
    marked "1.0:" (`dialects.Dialect10.option_defaults`)."""

    max_tokens: int = 2000
    """Most tokens generated per text piece: 0.2/0.3 write ~90 per second of audio (2000 ≈
    22 s); 1.0: 4000, at ~180 per second ≈ 22 s."""
    prompt_layout: str = "inline"
    """`inline`: the official layout, the speaker's audio re-read for every request; `turn`: the
    speaker profile is an earlier turn, kept in the KV cache (fast first audio; a speed option
    whose quality is unchecked, `prompt.py`)."""
    guide_tokens: bool = True
    """Keep the model on the request's words (llama.cpp's guard against skipped and invented
    words) and stop once every word is said. 1.0: false, as in the reference, where guided
    words are experimental (outetts 0.4.4 `GenerationType.GUIDED_WORDS`)."""
    n_ctx: int = 4096
    """Context of the language model: speaker prompt + request + reply. 1.0: 6144, for the
    built-in profile's ~1 800 tokens, a 200-character piece and 4000 tokens of reply."""
    context_left: int = 40
    """Streaming: frames decoded before the emitted ones (75 = 1 s). WavTokenizer (0.2/0.3)
    normalises and attends over its whole input, so no window is exact: with 40/20 the stream
    is within ~22 dB SNR of one whole decode (random weights; 27 dB with 300/40). 1.0: 10, and
    10 on the right, DAC's receptive field: the stream is one whole decode to float32 rounding
    (measured on the tiny model: within 2.2e-6; with 5/5 it would be 0.21 off, 18 dB SNR, and
    save only 5 frames of first-audio latency). Each window decodes 20 frames more than it
    emits, which small windows pay most for (`max_chunk_codes`)."""
    context_right: int = 20
    """Streaming: frames of lookahead before a frame's audio is emitted (1.0: 10; at least 1,
    DAC's last 8 samples of a window need the next frame)."""
    first_chunk_codes: int = 10
    """Frames in the first streamed window (lower: earlier first audio). 1.0: 1, so the first
    audio needs 11 frames (1 + 10 of lookahead, about 25 tokens); measured on the tiny model,
    2 cores: first audio 74 ms after the request (`inline`, 2 035 prompt tokens), 40 ms
    (`turn`, profile cached); with 10 frames first: 110 and 77 ms."""
    max_chunk_codes: int = 150
    """Later windows double up to this many frames. 1.0: 64, a window of 84 frames with its
    context: measured on 2 cores with the full-size DAC, 4.6 ms a frame (0.39 s a window,
    about 0.45 s of decoding per second of audio), ~200 MB of decode buffers."""

    def __post_init__(self) -> None:
        if self.prompt_layout not in LAYOUTS:
            raise ValueError(f"prompt_layout must be one of {', '.join(LAYOUTS)}")
        if self.max_tokens < 1 or self.n_ctx < 256:
            raise ValueError("max_tokens must be >= 1 and n_ctx >= 256")
        self.windows  # checks the window options

    @property
    def windows(self) -> StreamWindows:
        """The codec's streaming windows these options ask for."""
        return StreamWindows(
            self.context_left, self.context_right, self.first_chunk_codes, self.max_chunk_codes
        )


def default_options(version: str) -> OuteOptions:
    """The option defaults of a version family (a key of `dialects.VERSIONS`)."""
    return apply_options(OuteOptions(), VERSIONS[version].dialect.option_defaults)


def planned_bytes(model: ModelSpec, file_bytes: Mapping[str, int]) -> PlannedBytes:
    """The GGUF and the codec are loaded as they are; a DAC checkpoint (1.0) is converted once
    to safetensors, with its weight norm folded: at most its own size."""
    vocoder = model.files["vocoder"]
    dac = (vocoder.file or (vocoder.path.name if vocoder.path else "")).endswith(".pth")
    loaded = file_bytes["model"] + file_bytes["vocoder"]
    return PlannedBytes(loaded, file_bytes["vocoder"] if dac else 0)


def estimate_bytes(model: ModelSpec, paths: Mapping[str, Path]) -> int:
    """The GGUF, the KV cache of the context, the attention scores of a prefill batch as deep
    as the context (a speaker profile makes prompts thousands of tokens long) and the codec
    (weights and buffers). Before loading, the vocoder's kind stands for the version; the load
    checks that they agree."""
    version = version_of_vocoder(paths["vocoder"])
    options = apply_options(default_options(version), model.options)
    kv_bytes = gguf_kv_cache_bytes(paths["model"], options.n_ctx)
    scores_bytes = gguf_attention_scores_bytes(paths["model"], options.n_ctx, DEFAULT_BATCH)
    codec_bytes = VERSIONS[version].codec.estimate_bytes(paths["vocoder"], options.windows)
    return paths["model"].stat().st_size + kv_bytes + scores_bytes + codec_bytes


class OuteTTS:
    """A loaded OuteTTS model, its codec and the prompt prefix now in its KV cache."""

    def __init__(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int
    ) -> None:
        self._speaker_dir = model.source.parent if model.source else None
        self._speakers: dict[str, Any] = {}
        self._cached_prefix: list[int] = []  # the tokens at the start of the KV cache
        self.last_prefill_tokens = 0
        """Tokens the last request had to evaluate before its first reply token."""
        self.last_cached_tokens = 0
        """Tokens of the last prompt that the KV cache already held (its reused prefix)."""
        with context(str(paths["model"])):
            version = _read_version(paths["model"], device)
        check_vocoder(version, paths["vocoder"])
        family, defaults = VERSIONS[version], default_options(version)
        n_ctx = apply_options(defaults, model.options).n_ctx
        with contextlib.ExitStack() as stack:
            self._lm = stack.enter_context(
                contextlib.closing(LlamaModel(paths["model"], device, n_ctx=n_ctx, threads=threads))
            )
            with context(str(paths["model"])):
                self._dialect: Dialect = family.dialect(self._lm)
            self._settings = VoiceOptions(defaults, self._dialect.sampling, model.options)
            self._windows = self._settings.model.options.windows
            with context(str(paths["vocoder"])):
                self._codec = stack.enter_context(
                    contextlib.closing(
                        family.codec(paths["vocoder"], device, threads, self._windows)
                    )
                )
            self._resources = stack.pop_all()
        self.sample_rate = self._codec.sample_rate
        self.max_text_chars = self._dialect.max_text_chars
        _LOGGER.info(
            "%s: OuteTTS %s prompts, %s layout",
            paths["model"],
            self.version,
            self._settings.model.options.prompt_layout,
        )

    @property
    def version(self) -> str:
        """The version of the loaded model: "0.2", "0.3" or "1.0"."""
        return self._dialect.version

    def close(self) -> None:
        """Free the codec and the language model."""
        self._resources.close()

    def _speaker(self, spec: str | None) -> Any:
        """The voice's speaker profile (loaded once), or None for the model's own voice."""
        if spec is None:
            return None
        if spec not in self._speakers:
            self._speakers[spec] = self._dialect.speaker(spec, self._speaker_dir)
            _LOGGER.debug("speaker %s loaded", spec)
        return self._speakers[spec]

    def _prefill(
        self, prefix: list[int], suffix: list[int], cancel: threading.Event
    ) -> np.ndarray | None:
        """Evaluate prefix + suffix, reusing the prefix's KV cache when it is already there;
        None when `cancel` was set meanwhile."""
        if self._cached_prefix == prefix and self._lm.n_past >= len(prefix):
            self._lm.keep_prefix(len(prefix))
            self.last_prefill_tokens = len(suffix)
            self.last_cached_tokens = len(prefix)
        else:
            self._lm.reset()
            self._cached_prefix = []
            if self._decode_batches(prefix, cancel) is None:
                return None
            self._cached_prefix = prefix
            self.last_prefill_tokens = len(prefix) + len(suffix)
            self.last_cached_tokens = 0
        return self._decode_batches(suffix, cancel)

    def _decode_batches(self, tokens: list[int], cancel: threading.Event) -> np.ndarray | None:
        """`decode(tokens)` batch by batch (as llama.cpp splits it anyway), checking `cancel`
        before each: 1.0's `inline` prompt holds the ~1 800-token profile, seconds of prefill on
        a CPU that a cancelled request should not keep the model busy for."""
        logits = None
        for start in range(0, len(tokens), self._lm.n_batch):
            if cancel.is_set():
                return None
            logits = self._lm.decode(tokens[start : start + self._lm.n_batch])
        return logits

    def synthesize(
        self,
        text: str,
        voice: VoiceSettings,
        cancel: threading.Event,
        stats: PieceStats | None = None,
    ) -> Iterator[np.ndarray]:
        """Speak one text piece, yielding audio window by window as frames are generated."""
        where = f"voice {voice.name}"
        stats = stats if stats is not None else PieceStats(voice.name)
        settings = self._settings.for_voice(voice.name, voice.options)
        options, sampler = settings.options, Sampler(settings.sampling, self._lm.n_vocab)
        n_ctx = self._lm.n_ctx  # the context is sized for the model's n_ctx
        per_second = self._dialect.tokens_per_audio_second

        # prompt and prefill (the speaker's part only when another prefix is cached)
        with stats.timing("prefill"):
            speaker = self._speaker(voice.speaker)
            request = self._dialect.request(options.prompt_layout, speaker, text, voice.language)
            if request is None:
                return
            prefix, suffix = request.prompt
            room = n_ctx - len(prefix) - len(suffix)
            if room < per_second:
                raise EngineError(
                    f"the prompt takes {len(prefix) + len(suffix)} of the "
                    f"{n_ctx} tokens of context; raise the model's n_ctx option"
                )
            max_tokens = min(options.max_tokens, room, speech_budget(text, per_second))
            sampler.remember(suffix)
            prefilled = self._prefill(prefix, suffix, cancel)
        if prefilled is None:
            _LOGGER.info("%s: cancelled in the prefill", where)
            return
        logits = prefilled
        stats.prompt_tokens = self.last_prefill_tokens
        stats.cached_tokens = self.last_cached_tokens

        # decode loop: one sampled token per step (the guide may write a word's tokens
        # instead); frames stream out through the codec windows
        frames: list[Frame] = []
        stream = WindowedDecoder.over(
            lambda first, end: self._codec.decode(np.asarray(frames[first:end], np.int64)),
            self._codec.samples_per_frame,
            self._windows,  # the codec is sized for the model's windows
        )
        reader = self._dialect.reader()
        previous = suffix[-1]
        with stats.timing("decode", excluding="codec"):
            stats.end = "max_tokens"
            for generated in range(1, max_tokens + 1):
                if cancel.is_set():
                    _LOGGER.info("%s: cancelled after %d tokens", where, generated - 1)
                    return
                stats.tokens = generated
                chosen = [sampler.sample(logits)]
                if options.guide_tokens:
                    chosen = request.guide.apply(previous, chosen[0])
                sampler.remember(chosen)
                previous = chosen[-1]
                for token in chosen:
                    frames.extend(reader.frames(token))
                stats.frames = len(frames)
                with stats.timing("codec"):
                    yield from stream.push(len(frames))
                if reader.finished or self._lm.n_past + len(chosen) > n_ctx:
                    stats.end = "eos" if reader.finished else "n_ctx"
                    break
                logits = self._lm.decode(chosen)

            # codec: the frames still waiting for lookahead
            with stats.timing("codec"):
                yield from stream.finish(len(frames))


def _read_version(path: Path, device: Device) -> str:
    """The version family of the GGUF at `path`, from its vocabulary alone (it decides the
    context size, so it is read before the model loads)."""
    with contextlib.closing(
        LlamaModel(path, device, n_ctx=0, threads=1, vocab_only=True)
    ) as vocabulary:
        return read_version(vocabulary)


load = OuteTTS
"""The `EngineModule.load` of OuteTTS: the language model on llama.cpp, the codec on llama.cpp
(WavTokenizer) or torch (DAC)."""
