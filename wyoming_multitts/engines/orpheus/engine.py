"""Orpheus TTS (canopylabs): a Llama-3.2-3B fine-tune writes SNAC codes as tokens, 7 per frame;
SNAC turns each frame into 2048 samples of 24 kHz audio.

Prompt and token layout: the official `orpheus_tts` package (orpheus-speech 0.1.0; see
docs/engines.md, "Orpheus: token layout" and "SNAC: streaming windows"). Sampling is constrained
to the 4096 codes valid at the current frame position plus the stop tokens, so every sampled
token is usable audio. By default the language model runs with an output head reduced to those
tokens (`head.py`; docs/engines.md, "Orpheus: reduced output head"), about 1.2x faster per token
with the same tokens sampled.
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
from ...codecs.snac24 import SNAC_FILES, SnacDecoder
from ...codecs.windowed import StreamWindows, WindowedDecoder
from ...devices import Device, set_torch_threads, torch_device_for
from ...errors import EngineError
from ...formats.gguf import gguf_kv_cache_bytes
from ...options import VoiceOptions, apply_options
from ...sampling import Sampler, SamplingConfig
from ...stats import PieceStats
from ..base import PlannedBytes, VoiceSettings, speech_budget
from .head import FullHead, OrpheusHead, ReducedHead, reduced_bytes

_LOGGER = logging.getLogger(__name__)

# Token ids of the Orpheus vocabulary (128256 + N is `<custom_token_N>`).
BEGIN_OF_TEXT = 128000  # <|begin_of_text|>
END_OF_TEXT = 128009  # <|eot_id|>, closes the text of the prompt
START_OF_SPEECH = 128257
END_OF_SPEECH = 128258
START_OF_HUMAN = 128259
END_OF_HUMAN = 128260
START_OF_AI = 128261
END_OF_AI = 128262
AUDIO_BASE = 128266  # <custom_token_10>: code 0 at frame position 0
CODES_PER_BOOK = 4096  # SNAC codebook size
FRAME_TOKENS = 7  # tokens per SNAC frame
FRAME_LEVEL = (0, 1, 2, 2, 1, 2, 2)  # SNAC level (codebook) of each frame position
STOP_TOKENS = np.array([END_OF_SPEECH, END_OF_AI, END_OF_TEXT], np.int64)
MIN_VOCAB = AUDIO_BASE + FRAME_TOKENS * CODES_PER_BOOK  # 156938: the last audio token + 1
POSITION_CANDIDATES = tuple(
    np.concatenate((np.arange(base, base + CODES_PER_BOOK), STOP_TOKENS))  # (4099,) int64
    for base in range(AUDIO_BASE, MIN_VOCAB, CODES_PER_BOOK)
)
"""The tokens sampleable at each frame position: its 4096 codes, then the stop tokens."""
KEPT_IDS = np.concatenate((np.arange(AUDIO_BASE, MIN_VOCAB), STOP_TOKENS))  # (28675,) int64
"""The tokens the reduced output head keeps, new id i being KEPT_IDS[i]: every token the decode
loop samples or feeds back (docs/engines.md, "Orpheus: reduced output head"; 9 rows of padding
follow them)."""

TOKENS_PER_AUDIO_SECOND = 24000 / 2048 * FRAME_TOKENS  # 82.03: a 2048-sample frame at 24 kHz
PROMPT_TOKENS_MAX = 512  # context reserved for the prompt of one text piece
MAX_TEXT_CHARS = 300  # longer text is spoken in pieces: Orpheus skips words in long prompts
REDUCED_SHARE_FLOOR = 0.5
"""The reduced copy drops the text vocabulary's rows of `token_embd` and `output`: under a
quarter of Orpheus 3B (1.81 of 2.36 GB are kept, docs/engines.md), never half of a model."""
WORKING_BYTES = 600_000_000
"""The worker's own Python and torch (~240 MB before any model), llama.cpp's compute buffers and
SNAC's activations: what the 3B's worker held at its peak beyond weights and KV cache
(2026-12-02, 2 threads; docs/benchmarks.md, "Resident memory")."""

DEFAULT_SAMPLING = SamplingConfig(temperature=0.6, top_p=0.9, repetition_penalty=1.1, seed=0)
"""Orpheus defaults (docs/engines.md, "Orpheus: sampling defaults"; repetition penalty >= 1.1
for stability)."""

FILES: Mapping[str, tuple[str, ...] | None] = {"model": None, "codec": SNAC_FILES}
"""The GGUF language model, and the SNAC folder (`hubertsiuzdak/snac_24khz`)."""


@dataclass(frozen=True)
class OrpheusOptions:
    """Options of an Orpheus model (`options:` in the catalog); voices may override them."""

    max_tokens: int = 2048
    """Most tokens generated per text piece (82 per second of audio: 2048 ≈ 25 s)."""
    context_left: int = 2
    """Streaming: frames decoded before the emitted ones (3 makes the stream exact)."""
    context_right: int = 2
    """Streaming: frames of lookahead before a frame is emitted (3 makes the stream exact)."""
    first_chunk_frames: int = 1
    """Frames in the first streamed window (1: lowest latency)."""
    max_chunk_frames: int = 8
    """Later windows double up to this many frames (fewer, more efficient SNAC calls)."""
    codec_noise: bool = True
    """SNAC's noise blocks on (as trained; seeded and positional here) or off."""
    reduced_head: bool = True
    """Run a copy of the GGUF with the output head reduced to the audio and stop tokens (made
    once beside it; same tokens, ~1.2x faster) instead of the GGUF as it is. Model level only."""

    def __post_init__(self) -> None:
        if self.max_tokens < FRAME_TOKENS:
            raise ValueError(f"max_tokens must be at least {FRAME_TOKENS}")
        self.windows  # checks the window options

    @property
    def windows(self) -> StreamWindows:
        """The SNAC streaming windows these options ask for."""
        return StreamWindows(
            self.context_left, self.context_right, self.first_chunk_frames, self.max_chunk_frames
        )


def planned_bytes(model: ModelSpec, file_bytes: Mapping[str, int]) -> PlannedBytes:
    """The reduced copy is smaller than the GGUF it is cut from, and holds at least
    `REDUCED_SHARE_FLOOR` of it; the loaded model holds its GGUF (reduced or not) and SNAC."""
    gguf_bytes, codec_bytes = file_bytes["model"], file_bytes["codec"]
    if apply_options(OrpheusOptions(), model.options).reduced_head:
        return PlannedBytes(int(gguf_bytes * REDUCED_SHARE_FLOOR) + codec_bytes, gguf_bytes)
    return PlannedBytes(gguf_bytes + codec_bytes, 0)


def estimate_bytes(model: ModelSpec, paths: Mapping[str, Path]) -> int:
    """GGUF (as reduced, when it is) and SNAC weights, the KV cache of the context, and the
    measured working memory."""
    options = apply_options(OrpheusOptions(), model.options)
    n_ctx = options.max_tokens + PROMPT_TOKENS_MAX
    source = paths["model"]
    if options.reduced_head:
        gguf_bytes = reduced_bytes(source, KEPT_IDS)
    else:
        gguf_bytes = source.stat().st_size
    snac_bytes = (paths["codec"] / "pytorch_model.bin").stat().st_size
    return gguf_bytes + gguf_kv_cache_bytes(source, n_ctx) + snac_bytes + WORKING_BYTES


class Orpheus:
    """A loaded Orpheus model and its SNAC decoder."""

    max_text_chars = MAX_TEXT_CHARS

    def __init__(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int
    ) -> None:
        self._settings = VoiceOptions(OrpheusOptions(), DEFAULT_SAMPLING, model.options)
        options = self._settings.model.options
        self._n_ctx = options.max_tokens + PROMPT_TOKENS_MAX
        with contextlib.ExitStack() as stack:
            source = paths["model"]
            head: OrpheusHead = (
                ReducedHead(source, KEPT_IDS, device, self._n_ctx, threads)
                if options.reduced_head
                else FullHead(source, device, self._n_ctx, threads)
            )
            self._head = stack.enter_context(contextlib.closing(head))
            if head.tokenizer.n_vocab < MIN_VOCAB:
                raise EngineError(
                    f"{source} has {head.tokenizer.n_vocab} tokens, fewer than the "
                    f"{MIN_VOCAB} of Orpheus; is it an Orpheus GGUF?"
                )
            self._candidate_rows = tuple(head.model_ids(ids) for ids in POSITION_CANDIDATES)
            """Where the logits of POSITION_CANDIDATES are in the head's logits."""
            set_torch_threads(threads)
            codec_noise = options.codec_noise
            self._snac = SnacDecoder(paths["codec"], torch_device_for(device), codec_noise)
            self._resources = stack.pop_all()
        self.sample_rate = self._snac.sample_rate

    def close(self) -> None:
        """Free the language model (SNAC is ordinary torch memory)."""
        self._resources.close()

    def prompt_tokens(self, text: str, speaker: str | None) -> list[int]:
        """`<start of human><bos>{speaker}: {text}<eot><end of human><start of AI><start of speech>`


        User text is tokenized with special tokens off, so it cannot inject control tokens;
        emotive tags like `<laugh>` are ordinary text to Orpheus.
        """
        spoken = f"{speaker}: {text}" if speaker else text
        return [
            START_OF_HUMAN,
            BEGIN_OF_TEXT,
            *self._head.tokenizer.tokenize(spoken, special=False),
            END_OF_TEXT,
            END_OF_HUMAN,
            START_OF_AI,
            START_OF_SPEECH,
        ]

    def synthesize(
        self,
        text: str,
        voice: VoiceSettings,
        cancel: threading.Event,
        stats: PieceStats | None = None,
    ) -> Iterator[np.ndarray]:
        """Speak one text piece, yielding audio window by window as frames become final."""
        where = f"voice {voice.name}"
        stats = stats if stats is not None else PieceStats(voice.name)
        settings = self._settings.for_voice(voice.name, voice.options)
        options = settings.options
        sampler = Sampler(settings.sampling, self._head.tokenizer.n_vocab)
        max_tokens = min(
            options.max_tokens,
            self._n_ctx - PROMPT_TOKENS_MAX,  # the context is sized for the model's max_tokens
            speech_budget(text, TOKENS_PER_AUDIO_SECOND),
        )
        frames: list[np.ndarray] = []  # each (7,) int64 codes in token order

        def decode_frames(first: int, end: int) -> np.ndarray:
            window = np.stack(frames[first:end])  # (F, 7)
            levels = [
                window[:, [p for p, lv in enumerate(FRAME_LEVEL) if lv == level]].ravel()
                for level in range(3)
            ]  # (F,), (2F,), (4F,) in time order per level
            return self._snac.decode(levels, first, sampler.config.seed)

        stream = WindowedDecoder.over(decode_frames, self._snac.samples_per_frame, options.windows)

        # prompt and prefill
        with stats.timing("prefill"):
            prompt = self.prompt_tokens(text, voice.speaker)
            if len(prompt) > PROMPT_TOKENS_MAX:
                raise EngineError(f"text piece of {len(prompt)} tokens is too long")
            sampler.remember(prompt)
            logits = self._head.prefill(prompt)
        stats.prompt_tokens = len(prompt)

        # decode loop: one token per step, constrained to the codes of the frame position
        frame = np.zeros(FRAME_TOKENS, np.int64)
        with stats.timing("decode", excluding="codec"):
            for generated in range(1, max_tokens + 1):
                if cancel.is_set():
                    _LOGGER.info("%s: cancelled after %d tokens", where, generated - 1)
                    return
                stats.tokens = generated
                position = (generated - 1) % FRAME_TOKENS
                base = AUDIO_BASE + position * CODES_PER_BOOK
                candidates = POSITION_CANDIDATES[position]  # (4099,) codes of this position + stops
                token = sampler.sample(logits[self._candidate_rows[position]], candidates)
                sampler.remember([token])
                if token in STOP_TOKENS:
                    break
                frame[position] = token - base
                if position == FRAME_TOKENS - 1:
                    frames.append(frame.copy())
                    stats.frames = len(frames)
                    with stats.timing("codec"):
                        yield from stream.push(len(frames))
                logits = self._head.step(token)

            # codec: the frames still waiting for lookahead
            with stats.timing("codec"):
                yield from stream.finish(len(frames))


load = Orpheus
"""The `EngineModule.load` of Orpheus: the language model on `device`, SNAC on its torch device."""
