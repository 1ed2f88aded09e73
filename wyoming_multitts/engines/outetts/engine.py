"""OuteTTS 0.2 / 0.3 (OuteAI): a Qwen2.5-0.5B language model writes each word, its duration and its
WavTokenizer codes (75 per second); the WavTokenizer vocoder, run by llama.cpp as an embeddings
model, turns the codes into 24 kHz audio through an inverse STFT.

The prompt dialect (0.2 or 0.3) is read from the GGUF's vocabulary, like every token id. The voice
is a speaker profile (a built-in one or the user's JSON); its part of the prompt stays in the KV
cache between requests (`prompt_layout: turn`, the default), so a request pays only for its own
words. Prompts, speakers, guide tokens and reply parsing live in `prompt.py`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np

from ...catalog import ModelSpec
from ...codecs.wavtokenizer import WavTokenizerVocoder
from ...codecs.windowed import StreamWindows, WindowedDecoder
from ...devices import Device
from ...errors import EngineError, LlamaError, context
from ...formats.gguf import gguf_kv_cache_bytes
from ...llm import LlamaModel
from ...options import VoiceOptions, apply_options
from ...sampling import Sampler
from ...stats import PieceStats
from ...text import spoken_words
from ..base import VoiceSettings, speech_budget
from .prompt import (
    CODE,
    DEFAULT_SAMPLING,
    END,
    LAYOUTS,
    GuideTokens,
    ReplyParser,
    guide_tokens,
    read_tokens,
    request_suffix,
    speaker_prefix,
)
from .speakers import SpeakerProfile, load_speaker, speaker_path

_LOGGER = logging.getLogger(__name__)

FILES: Mapping[str, tuple[str, ...] | None] = {"model": None, "vocoder": None}
"""The OuteTTS GGUF (e.g. `OuteTTS-0.3-500M-Q4_K_M.gguf`) and `WavTokenizer-Large-75-F16.gguf`."""

TOKENS_PER_AUDIO_SECOND = 90  # 75 codes + 2-3 a word: docs/engines.md, "OuteTTS: token budget"
MAX_TEXT_CHARS = 200  # about 30 words, the reference package's largest chunk
VOCODER_OVERHEAD_BYTES = 64 * 1024 * 1024  # compute buffers of the vocoder graph (measured ~40 MB)


@dataclass(frozen=True)
class OuteOptions:
    """Options of an OuteTTS model (`options:` in the catalog); voices may override the first
    four, the codec's windows are the model's."""

    max_tokens: int = 2000
    """Most tokens generated per text piece (~90 per second of audio: 2000 ≈ 22 s)."""
    prompt_layout: str = "turn"
    """`turn`: the speaker profile is an earlier turn, kept in the KV cache (fast first audio);
    `inline`: the official layout, the speaker's audio re-read for every request."""
    guide_tokens: bool = True
    """Force each audio line to start with the right word (llama.cpp's guard against skipped
    and invented words), and stop once every word is said."""
    n_ctx: int = 4096
    """Context of the language model: speaker prompt + request + reply."""
    context_left: int = 40
    """Streaming: codes decoded before the emitted ones (75 codes = 1 s). WavTokenizer normalises
    and attends over its whole input, so no window is exact: with 40/20 codes the stream is
    within ~22 dB SNR of one whole decode (random weights; 27 dB with 300/40)."""
    context_right: int = 20
    """Streaming: codes of lookahead before a code's audio is emitted."""
    first_chunk_codes: int = 10
    """Codes in the first streamed window (lower: earlier first audio)."""
    max_chunk_codes: int = 150
    """Later windows double up to this many codes."""

    def __post_init__(self) -> None:
        if self.prompt_layout not in LAYOUTS:
            raise ValueError(f"prompt_layout must be one of {', '.join(LAYOUTS)}")
        if self.max_tokens < 1 or self.n_ctx < 256:
            raise ValueError("max_tokens must be >= 1 and n_ctx >= 256")
        self.windows  # checks the window options

    @property
    def windows(self) -> StreamWindows:
        """The vocoder's streaming windows these options ask for."""
        return StreamWindows(
            self.context_left, self.context_right, self.first_chunk_codes, self.max_chunk_codes
        )


def estimate_bytes(model: ModelSpec, paths: Mapping[str, Path]) -> int:
    """Both GGUFs, the KV cache of the context and the vocoder's buffers."""
    options = apply_options(OuteOptions(), model.options)
    kv_bytes = gguf_kv_cache_bytes(paths["model"], options.n_ctx)
    return (
        paths["model"].stat().st_size
        + kv_bytes
        + paths["vocoder"].stat().st_size
        + VOCODER_OVERHEAD_BYTES
    )


class OuteTTS:
    """A loaded OuteTTS model, its vocoder and the prompt prefix now in its KV cache."""

    max_text_chars = MAX_TEXT_CHARS

    def __init__(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int
    ) -> None:
        n_ctx = apply_options(OuteOptions(), model.options).n_ctx
        self._speaker_dir = model.source.parent if model.source else None
        self._speakers: dict[str, SpeakerProfile] = {}
        self._cached_prefix: list[int] = []  # the tokens at the start of the KV cache
        self.last_prefill_tokens = 0
        """Tokens the last request had to evaluate before its first reply token."""
        self.last_cached_tokens = 0
        """Tokens of the last prompt that the KV cache already held (its reused prefix)."""
        with contextlib.ExitStack() as stack:
            self._lm = stack.enter_context(
                contextlib.closing(LlamaModel(paths["model"], device, n_ctx=n_ctx, threads=threads))
            )
            with context(str(paths["model"])):
                self._tokens = read_tokens(self._token_id)
            self._settings = VoiceOptions(
                OuteOptions(), DEFAULT_SAMPLING[self._tokens.version], model.options
            )
            self._vocoder = stack.enter_context(
                contextlib.closing(
                    WavTokenizerVocoder(
                        paths["vocoder"],
                        device,
                        max_codes=self._settings.model.options.windows.max_frames,
                        threads=threads,
                    )
                )
            )
            self._resources = stack.pop_all()
        self.sample_rate = self._vocoder.sample_rate
        _LOGGER.info(
            "%s: OuteTTS %s prompts, %s layout",
            paths["model"],
            self._tokens.version,
            self._settings.model.options.prompt_layout,
        )

    @property
    def version(self) -> str:
        """The prompt dialect of the loaded model, "0.2" or "0.3"."""
        return self._tokens.version

    def close(self) -> None:
        """Free the vocoder and the language model."""
        self._resources.close()

    def _token_id(self, text: str) -> int | None:
        """The id of a special token, None when the vocabulary has no single token for it."""
        try:
            return self._lm.special_token(text)
        except LlamaError:
            return None

    def _tokenize(self, text: str) -> list[int]:
        return self._lm.tokenize(text, special=False)

    def _speaker(self, spec: str | None) -> SpeakerProfile | None:
        """The voice's speaker profile (loaded once), or None for the model's own voice."""
        if spec is None:
            return None
        if spec not in self._speakers:
            path = speaker_path(spec, self._tokens.version, self._speaker_dir)
            self._speakers[spec] = load_speaker(path)
            _LOGGER.debug("speaker %s from %s", spec, path)
        return self._speakers[spec]

    def _prefill(self, prefix: list[int], suffix: list[int]) -> np.ndarray:
        """Evaluate prefix + suffix, reusing the prefix's KV cache when it is already there."""
        if self._cached_prefix == prefix and self._lm.n_past >= len(prefix):
            self._lm.keep_prefix(len(prefix))
            self.last_prefill_tokens = len(suffix)
            self.last_cached_tokens = len(prefix)
        else:
            self._lm.reset()
            self._cached_prefix = []
            self._lm.decode(prefix)
            self._cached_prefix = prefix
            self.last_prefill_tokens = len(prefix) + len(suffix)
            self.last_cached_tokens = 0
        return self._lm.decode(suffix)

    def synthesize(
        self,
        text: str,
        voice: VoiceSettings,
        cancel: threading.Event,
        stats: PieceStats | None = None,
    ) -> Iterator[np.ndarray]:
        """Speak one text piece, yielding audio window by window as codes are generated."""
        where = f"voice {voice.name}"
        stats = stats if stats is not None else PieceStats(voice.name)
        settings = self._settings.for_voice(voice.name, voice.options)
        options, sampler = settings.options, Sampler(settings.sampling, self._lm.n_vocab)
        n_ctx = self._settings.model.options.n_ctx  # the context is sized for the model's
        tokens = self._tokens
        words = spoken_words(text, voice.language, keep_punctuation=tokens.version == "0.3")
        if not words:
            return

        # prompt and prefill (the speaker's part only when another prefix is cached)
        with stats.timing("prefill"):
            speaker = self._speaker(voice.speaker)
            prefix = speaker_prefix(tokens, options.prompt_layout, speaker, self._tokenize)
            suffix = request_suffix(tokens, options.prompt_layout, speaker, words, self._tokenize)
            room = n_ctx - len(prefix) - len(suffix)
            if room < TOKENS_PER_AUDIO_SECOND:
                raise EngineError(
                    f"the prompt takes {len(prefix) + len(suffix)} of the "
                    f"{n_ctx} tokens of context; raise the model's n_ctx option"
                )
            max_tokens = min(options.max_tokens, room, speech_budget(text, TOKENS_PER_AUDIO_SECOND))
            guide = GuideTokens(guide_tokens(words, self._tokenize), tokens)
            sampler.remember(suffix)
            logits = self._prefill(prefix, suffix)
        stats.prompt_tokens = self.last_prefill_tokens
        stats.cached_tokens = self.last_cached_tokens

        # decode loop: one token per step; codes stream out through the vocoder windows
        codes: list[int] = []
        stream = WindowedDecoder.over(
            lambda first, end: self._vocoder.decode(np.asarray(codes[first:end], np.int64)),
            self._vocoder.samples_per_frame,
            self._settings.model.options.windows,  # the vocoder is sized for the model's
        )
        parser = ReplyParser(tokens)
        previous = suffix[-1]
        with stats.timing("decode", excluding="codec"):
            for generated in range(1, max_tokens + 1):
                if cancel.is_set():
                    _LOGGER.info("%s: cancelled after %d tokens", where, generated - 1)
                    return
                stats.tokens = generated
                token = sampler.sample(logits)
                if options.guide_tokens:
                    token = guide.apply(previous, token, self._is_control(token))
                sampler.remember([token])
                previous = token
                events = parser.feed(token)
                codes.extend(event.code for event in events if event.kind == CODE)
                stats.frames = len(codes)
                with stats.timing("codec"):
                    yield from stream.push(len(codes))
                if any(event.kind == END for event in events):
                    break
                logits = self._lm.decode([token])

            # codec: the codes still waiting for lookahead
            with stats.timing("codec"):
                yield from stream.finish(len(codes))

    def _is_control(self, token: int) -> bool:
        """Codes, durations, punctuation and end tokens: what guide tokens leave alone."""
        return self._lm.is_control(token) or self._lm.is_end_of_generation(token)


load = OuteTTS
"""The `EngineModule.load` of OuteTTS: the language model and the vocoder, both on llama.cpp."""
