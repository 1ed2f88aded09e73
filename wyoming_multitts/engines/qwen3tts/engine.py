"""Qwen3-TTS 12 Hz (Qwen): a Qwen3 "talker" writes codebook 0 of each 80 ms frame, a 5-layer code
predictor the other 15 codebooks, and the 12 Hz speech-tokenizer decoder turns the 16 codes of a
frame into 1920 samples of 24 kHz audio (docs/engines.md, "Qwen3-TTS: architecture").

On first load the safetensors release is converted once (`convert.py`) into GGUFs that llama.cpp
runs on the catalog's device, fed with embedding rows, and numpy tables; the decoder runs in
torch (`codecs/qwen3_12hz.py`). Prompt, sampling and stopping follow qwen-tts 0.1.1
(`Qwen3TTSForConditionalGeneration.generate`; docs/engines.md, "Qwen3-TTS: prefill layout" and
"Qwen3-TTS: sampling and stopping"). Per frame: code 0 is sampled from the talker's logits (only
codebook ids and EOS allowed, EOS banned for the first two frames, repetition penalty over
earlier codes 0), the predictor gives codes 1 … 15 (`predictor.py`), and the next talker input is
the sum of the 16 codebook embeddings plus the text side (`tts_pad`, or the trailing text in
streaming-text mode). The decoder is causal, so frames stream out as soon as they exist; by
default each window carries the decoder's state on to the next and the stream equals one whole
decode. A Base model's cloned voice (`clone.py`) starts from its reference's frames, which are
then the decoder's left context only: just the new audio is emitted (qwen-tts decodes reference
plus new codes and cuts the reference's share off, which for a causal decoder is the same).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np

from ...catalog import ModelSpec
from ...codecs.qwen3_12hz import load_qwen3_codec
from ...codecs.windowed import WindowedDecoder
from ...devices import Device, set_torch_threads, torch_device_for
from ...errors import EngineError
from ...llm.model import LlamaModel
from ...options import VoiceOptions, apply_options
from ...sampling import Sampler, SamplingConfig
from ...stats import PieceStats
from ..base import VoiceSettings
from .clone import VoiceCloner, refuse_reference
from .config import BASE_KIND, Qwen3Options, generation_defaults, stored_matrix_type
from .convert import ConvertedQwen3TTS, convert_once
from .predictor import PREFILL_ROWS, CodePredictor
from .prompt import (
    PROMPT_ROWS_MAX,
    ROLE_TEXT,
    ROLE_TOKENS,
    CloneReference,
    PromptIds,
    Qwen3Prompt,
    build_prompt,
    codec_prefix,
    frame_rows,
    instruct_text,
    speaker_key,
    text_rows,
)
from .speaker_encoder import SpeakerEncoder, load_speaker_encoder
from .tables import Qwen3Tables

_LOGGER = logging.getLogger(__name__)

FILES: Mapping[str, tuple[str, ...] | None] = {
    "model": (
        "config.json",  # first: its folder is the snapshot's root
        "generation_config.json",
        "model.safetensors",
        "vocab.json",
        "merges.txt",
        "tokenizer_config.json",
        "speech_tokenizer/config.json",
        "speech_tokenizer/model.safetensors",
    )
}
"""The release folder: what the conversion reads and the speech tokenizer (its decoder)."""

MIN_NEW_FRAMES = 2
"""EOS is banned for this many first frames (qwen-tts `min_new_tokens=2`)."""
FRAMES_PER_TEXT_TOKEN = 6
"""Runaway guard: at most 6 frames (0.48 s) per text token (mlx-audio's bound; speech takes about
0.25 s per English token and 0.35 s per Chinese one)."""
MIN_FRAMES = 40
"""…and at least 40 frames (3.2 s), so a short word with a pause still fits."""
MAX_TEXT_CHARS = 200
"""Longer text is spoken in pieces (at most ~600 tokens even as raw UTF-8 bytes)."""
SUBTALKER_SEED_OFFSET = 1
"""The code predictor's generator is seeded with the talker's seed plus this."""


@dataclass
class _Piece:
    """One text piece being spoken: its prompt, samplers and frames, and where time went."""

    prompt: Qwen3Prompt
    max_frames: int
    talker_sampler: Sampler
    predictor_sampler: Sampler
    frames: list[np.ndarray]
    """Each (G,) int64: an in-context clone's reference frames (left context only), then ours."""
    start: int
    """Frames before this one are the reference's."""
    stats: PieceStats
    """Where its time goes: `talker`, `predictor` and `codec` seconds."""
    steps: int = 0
    """Talker steps (frames, plus the EOS step)."""
    ended: bool = False
    """By EOS, rather than at max_frames (the runaway guard)."""


class Qwen3TTS:
    """A loaded Qwen3-TTS model: talker, code predictor, text tokenizer, tables, decoder."""

    max_text_chars = MAX_TEXT_CHARS

    def __init__(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int
    ) -> None:
        matrix_type = stored_matrix_type(
            apply_options(Qwen3Options(), model.options).matrix_type, device
        )
        self._name = model.name
        with contextlib.ExitStack() as self._stack:
            converted = convert_once(paths["model"], matrix_type)
            config = self.config = converted.config
            talker_defaults, option_defaults = generation_defaults(config)
            self._settings = VoiceOptions(
                option_defaults, talker_defaults, model.options, ("matrix_type",)
            )
            self._options = self._settings.model.options
            self._load_llama(converted, device, threads)
            set_torch_threads(threads)
            torch_device = torch_device_for(device)
            self._tables = Qwen3Tables.read(converted.tables, config)
            self._code_predictor = CodePredictor(
                self._predictor, self._tables, config.num_code_groups, torch_device
            )
            self._codes = np.arange(config.codebook_size, dtype=np.int64)  # (codebook,)
            self._codes_and_eos = np.append(self._codes, config.codec_eos_id)  # (codebook + 1,)

            speech_tokenizer = paths["model"] / "speech_tokenizer"
            self._codec = load_qwen3_codec(speech_tokenizer, torch_device)
            # voice cloning (Base): the speaker encoder now, the speech encoder on first ICL use
            self._speaker_encoder: SpeakerEncoder | None = None
            self._cloner: VoiceCloner | None = None
            if config.tts_model_type == BASE_KIND:
                self._speaker_encoder = load_speaker_encoder(paths["model"], torch_device)
                self._cloner = VoiceCloner(
                    self._name,
                    self._speaker_encoder,
                    speech_tokenizer,
                    torch_device,
                    lambda text: self._tokenizer.tokenize(text, special=False),
                )
            self._stack = self._stack.pop_all()
        self.sample_rate = self._codec.sample_rate
        self.last_codes = np.zeros((0, config.num_code_groups), np.int64)
        """The codes of the last text piece, (frames, num_code_groups) int64 (for tests)."""
        self._cached_voice_rows = np.zeros((0, config.talker_hidden), np.float32)
        """The voice rows (`Qwen3Prompt.voice_rows`) the talker's KV cache starts with."""
        _LOGGER.info(
            "%s: Qwen3-TTS %s %s, speakers %s",
            paths["model"],
            config.tts_model_type,
            config.tts_model_size,
            ", ".join(config.speakers) or "none",
        )

    def _load_llama(self, converted: ConvertedQwen3TTS, device: Device, threads: int) -> None:
        """llama.cpp: the talker (one context for prompt + frames), the predictor (one frame),
        the text tokenizer (vocabulary only)."""
        self._talker = self._own(
            LlamaModel(
                converted.talker,
                device,
                n_ctx=PROMPT_ROWS_MAX + self._options.max_frames,
                threads=threads,
                hidden_states=True,
            )
        )
        self._predictor = self._own(
            LlamaModel(
                converted.code_predictor,
                device,
                n_ctx=self.config.num_code_groups,  # 2 prefill rows + 14 steps
                n_batch=PREFILL_ROWS,
                threads=threads,
                hidden_states=True,
            )
        )
        self._tokenizer = self._own(
            LlamaModel(
                converted.text_tokenizer,
                device,
                n_ctx=0,
                threads=threads,
                vocab_only=True,
            )
        )
        self._role_ids = self._tokenizer.tokenize(ROLE_TEXT, special=True)
        if len(self._role_ids) != ROLE_TOKENS or self._role_ids[0] != self.config.im_start_id:
            raise EngineError(
                f"{converted.text_tokenizer} tokenizes {ROLE_TEXT!r} as "
                f"{self._role_ids}, not <|im_start|> assistant \\n; delete "
                f"{converted.directory} to convert again"
            )

    def _own(self, model: LlamaModel) -> LlamaModel:
        return self._stack.enter_context(contextlib.closing(model))

    def close(self) -> None:
        """Free the llama.cpp models (tables and decoder are ordinary memory)."""
        self._stack.close()

    # ---- prompt (prompt.py; the tables' rows by their old names, for tests)

    @property
    def _codec_table(self) -> np.ndarray:
        return self._tables.codec  # (talker_vocab, H) float32

    @property
    def _tts_pad(self) -> np.ndarray:
        return self._tables.tts_pad  # (H,) float32

    @property
    def _tts_eos(self) -> np.ndarray:
        return self._tables.tts_eos  # (H,) float32

    def _text_rows(self, ids: list[int]) -> np.ndarray:
        return text_rows(self._tables, ids)  # (n, H) float32

    def frame_rows(self, codes: np.ndarray) -> np.ndarray:
        """Talker input rows (n, H) float32 of whole frames (n, G) (see `prompt.frame_rows`)."""
        return frame_rows(self._tables, codes)

    def codec_prefix(self, language: str, speaker: str | None, override: str = "") -> list[int]:
        """The codec ids of the prefill's tag rows (see `prompt.codec_prefix`)."""
        return codec_prefix(self.config, language, speaker, override)

    def prompt(
        self,
        text: str,
        voice: VoiceSettings,
        options: Qwen3Options,
        reference: CloneReference | None = None,
    ) -> Qwen3Prompt:
        """The talker's prefill for `text` in `voice`, exactly as qwen-tts builds it;
        `reference`: a Base voice's clone reference (`clone_reference`)."""
        speaker = speaker_key(self.config, voice.speaker, self._name)
        prefix = self.codec_prefix(voice.language, speaker, options.codec_language)
        # the text between the role tokens and `<|im_end|>`: tokenized on its own, with special
        # tokens off, it tokenizes as inside the whole wrapped string (the pre-tokenizer always
        # splits after the role's newline)
        body = self._tokenizer.tokenize(text.strip(), special=False)
        if not body:
            raise EngineError(f"nothing to say in {text!r}")
        instruct = instruct_text(options.instruct, self.config)
        ids = PromptIds(
            instruct=[] if instruct is None else self._tokenizer.tokenize(instruct, special=True),
            role=self._role_ids,
            codec_prefix=prefix,
            text=body,
        )
        return build_prompt(self.config, self._tables, ids, reference, options.streaming_text)

    def clone_reference(self, voice: VoiceSettings, options: Qwen3Options) -> CloneReference | None:
        """A Base voice's x-vector (and, for ICL, reference codes and transcript tokens), computed
        once per voice (`clone.VoiceCloner`); None for the other kinds of model."""
        if self._cloner is None:  # not a Base model
            refuse_reference(voice, self._name, self.config.tts_model_type)
            return None
        return self._cloner.reference(voice, options)

    def _prefill(self, prompt: Qwen3Prompt, stats: PieceStats) -> tuple[np.ndarray, np.ndarray]:
        """Evaluate the prompt: its voice rows only when the cache does not start with them
        already (then in a batch of their own, so the result is the same either way), then
        the text rows; the logits and hidden state of the last row."""
        voice = prompt.rows[: prompt.voice_rows]  # (V, H)
        cached = len(voice) if np.array_equal(self._cached_voice_rows, voice) else 0
        if cached:
            self._talker.keep_prefix(cached)
        else:
            self._cached_voice_rows = voice[:0]  # nothing reusable until this prefill is done
            self._talker.reset()
            self._talker.decode_embeddings(voice)
            self._cached_voice_rows = voice
        stats.cached_tokens = cached
        stats.prompt_tokens = len(prompt.rows) - cached
        return self._talker.decode_embeddings(prompt.rows[len(voice) :])  # at least 1 text row

    def _next_input(self, codes: np.ndarray, text_side: np.ndarray) -> np.ndarray:
        """The talker's next input row (1, H): the 16 codebook embeddings plus the text side."""
        return self.frame_rows(codes[None]) + text_side  # (1, H) float32

    # ---- synthesis

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
        options, sampling = settings.options, settings.sampling

        # prompt (a cloned voice's reference is read and encoded on its first use) and prefill
        with stats.timing("prefill"):
            reference = self.clone_reference(voice, options)
            prompt = self.prompt(text, voice, options, reference)
            piece = self._piece(prompt, reference, options, sampling, stats)
            stream = self._stream(piece, options)
            logits, hidden = self._prefill(prompt, stats)

        # decode loop: code 0 from the talker, codes 1 … G-1 from the predictor, per frame
        if not (yield from self._decode(piece, stream, logits, hidden, cancel)):
            _LOGGER.info("%s: cancelled after %d frames", where, len(piece.frames) - piece.start)
            return

        # codec: whatever the last windows left
        with stats.timing("codec"):
            yield from stream.finish(len(piece.frames))
        self.last_codes = (
            np.stack(piece.frames[piece.start :])
            if len(piece.frames) > piece.start
            else np.zeros((0, self.config.num_code_groups), np.int64)
        )  # (F, G)
        if not piece.ended:
            _LOGGER.debug("%s: no EOS within %d frames: cut there", where, piece.max_frames)
        frames = len(self.last_codes)
        stats.frames = frames
        stats.tokens = piece.steps + (self.config.num_code_groups - 1) * frames  # codes, EOS too
        stats.add("decode", stats.seconds.get("talker", 0.0) + stats.seconds.get("predictor", 0.0))
        stats.end = "eos" if piece.ended else "max_frames"

    def _piece(
        self,
        prompt: Qwen3Prompt,
        reference: CloneReference | None,
        options: Qwen3Options,
        sampling: SamplingConfig,
        stats: PieceStats,
    ) -> _Piece:
        """A text piece about to be spoken: its frame budget, samplers and first frames."""
        config = self.config
        predictor_sampling = SamplingConfig(
            temperature=options.subtalker_temperature,
            top_k=options.subtalker_top_k,
            top_p=options.subtalker_top_p,
            seed=sampling.seed + SUBTALKER_SEED_OFFSET,
        )
        max_frames = min(
            options.max_frames,
            self._options.max_frames,  # the context is sized for the model's max_frames
            max(MIN_FRAMES, FRAMES_PER_TEXT_TOKEN * prompt.text_tokens),
        )
        # the decoder's frames: an in-context clone's reference frames are left context only
        frames: list[np.ndarray] = []  # each (G,) int64
        if reference is not None and reference.codes is not None:
            frames.extend(reference.codes)
        return _Piece(
            prompt=prompt,
            max_frames=max_frames,
            talker_sampler=Sampler(sampling, config.talker_vocab),
            predictor_sampler=Sampler(predictor_sampling, config.codebook_size),
            frames=frames,
            start=len(frames),
            stats=stats,
        )

    def _stream(self, piece: _Piece, options: Qwen3Options) -> WindowedDecoder:
        """The decoder's windows over the piece's frames, the reference's as context only."""
        frames = piece.frames
        # -1: the decoder carries its state from window to window; n: re-decodes n context frames
        context = None if options.context_frames < 0 else options.context_frames
        return self._codec.stream(
            lambda first, end: np.stack(frames[first:end]),  # (end - first, G)
            context,
            options.first_chunk_frames,
            options.max_chunk_frames,
            piece.start,
        )

    def _decode(
        self,
        piece: _Piece,
        stream: WindowedDecoder,
        logits: np.ndarray,
        hidden: np.ndarray,
        cancel: threading.Event,
    ) -> Generator[np.ndarray, None, bool]:
        """Generate the piece's frames from the prefill's `logits` and `hidden` state, yielding
        audio as windows complete; returns False when cancelled."""
        config, prompt, stats = self.config, piece.prompt, piece.stats
        for step in range(piece.max_frames):
            if cancel.is_set():
                return False
            with stats.timing("talker"):
                candidates = self._codes if step < MIN_NEW_FRAMES else self._codes_and_eos
                code0 = piece.talker_sampler.sample(
                    logits[candidates], candidates
                )  # (codebook[+1],)
                piece.talker_sampler.remember([code0])
                piece.steps += 1
            if code0 == config.codec_eos_id:
                piece.ended = True
                break

            with stats.timing("predictor"):
                codes = self._code_predictor.predict(hidden, code0, piece.predictor_sampler)
                piece.frames.append(codes)

            with stats.timing("codec"):
                yield from stream.push(len(piece.frames))

            if step + 1 < piece.max_frames:
                with stats.timing("talker"):
                    text_side = (
                        prompt.trailing[step] if step < len(prompt.trailing) else self._tts_pad
                    )
                    next_input = self._next_input(codes, text_side)  # (1, H)
                    logits, hidden = self._talker.decode_embeddings(next_input)
        return True


load = Qwen3TTS
"""The `EngineModule.load` of Qwen3-TTS: the release converted once, talker and predictor on
`device` (llama.cpp), the decoder on its torch device."""
