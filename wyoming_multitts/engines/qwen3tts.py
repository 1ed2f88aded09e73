"""Qwen3-TTS 12 Hz (Qwen): a Qwen3 "talker" writes codebook 0 of each 80 ms frame, a 5-layer code
predictor the other 15 codebooks, and the 12 Hz speech-tokenizer decoder turns the 16 codes of a
frame into 1920 samples of 24 kHz audio.

The official release is safetensors (`Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice` and siblings). On first
load `qwen3tts_convert.convert` turns it, once, into two stock `qwen3` GGUFs (talker, code
predictor; both run by llama.cpp on the catalog's device, fed with embedding rows), a
vocabulary-only tokenizer GGUF and numpy tables; the decoder runs in torch
(`codecs/qwen3_12hz.py`). The conversion is cached beside the download (`converted_dir`).

Prompt, sampling and stopping follow qwen-tts 0.1.1 (`Qwen3TTSForConditionalGeneration.generate`;
shared/specs/engines-qwen3-bark.md A4, A5): the prefill rows are built exactly as the official
layout, in its non-streaming text mode by default (the CustomVoice default). Per frame: code 0 is
sampled from the talker's logits (only codebook ids and EOS allowed, EOS banned for the first two
frames, repetition penalty over earlier codes 0), the predictor runs 15 steps from a fresh cache
with its heads applied in numpy, and the next talker input is the sum of the 16 codebook
embeddings plus the `tts_pad` embedding. The decoder is causal, so frames stream out as soon as
they exist (no lookahead); with the default left context (the decoder's receptive field) the
stream equals one whole decode.

Base models (voice cloning from reference audio) are not supported yet: their voices need a
reference recording and the speaker encoder, which the catalog cannot carry yet.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np

from ..catalog import ModelSpec
from ..codecs.qwen3_12hz import load_qwen3_codec
from ..devices import Device, set_torch_threads, torch_device_for
from ..llm import LlamaModel
from ..options import apply_options, check_option_names
from ..sampling import Sampler, SamplingConfig
from .base import EngineError, VoiceSettings, log_piece_stats
from .qwen3tts_convert import MATRIX_TYPES, ConvertedQwen3TTS, Qwen3TTSRuntimeConfig, convert

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

HUB_CONVERTED_DIR = "qwen3tts-converted"
"""In the Hugging Face cache the conversion goes to `models--Qwen--…/qwen3tts-converted/<commit>`,
inside the repo's cache folder (deleting the repo from the cache deletes it too)."""
LOCAL_CONVERTED_SUFFIX = ".converted"
"""A local `path:` folder `DIR` is converted into `DIR.converted` next to it."""

LANGUAGE_NAMES = {
    "zh": "chinese",
    "en": "english",
    "ja": "japanese",
    "ko": "korean",
    "de": "german",
    "fr": "french",
    "ru": "russian",
    "pt": "portuguese",
    "es": "spanish",
    "it": "italian",
}
"""Voice language code → key of config.json's codec_language_id (the model's 10 languages)."""
AUTO_LANGUAGE = "auto"
"""No language tag: the `nothink` prefix, the model picks (qwen-tts `language="auto"`)."""
DIALECT_LANGUAGES = ("chinese", AUTO_LANGUAGE)
"""Languages that dialect speakers (eric, dylan) replace by their dialect (qwen-tts generate)."""

ROLE_TEXT = "<|im_start|>assistant\n"
"""The 3 role tokens before the text (qwen-tts `_build_assistant_text`; docs A4)."""
ROLE_TOKENS = 3
INSTRUCT_TEXT = "<|im_start|>user\n{instruct}<|im_end|>\n"
"""An instruction's rows, first in the prefill (qwen-tts `_build_instruct_text`)."""
NO_INSTRUCT_SIZES = ("0b6",)
"""Model sizes whose instruct qwen-tts drops (the 0.6B CustomVoice ignores it)."""

MIN_NEW_FRAMES = 2
"""EOS is banned for this many first frames (qwen-tts `min_new_tokens=2`)."""
FRAMES_PER_TEXT_TOKEN = 6
"""Runaway guard: at most 6 frames (0.48 s) per text token (mlx-audio's bound; speech takes about
0.25 s per English token and 0.35 s per Chinese one)."""
MIN_FRAMES = 40
"""…and at least 40 frames (3.2 s), so a short word with a pause still fits."""
PROMPT_ROWS_MAX = 1024
"""Talker context reserved for the prefill (role, codec tags, text: ~1 row per text token)."""
MAX_TEXT_CHARS = 200
"""Longer text is spoken in pieces (at most ~600 tokens even as raw UTF-8 bytes)."""
SUBTALKER_SEED_OFFSET = 1
"""The code predictor's generator is seeded with the talker's seed plus this."""
SINGLE_THREADED_MATMUL = "ij,nj->ni"
"""einsum of the per-step products (predictor heads, small_to_mtp_projection): numpy's own loop
on this thread. A BLAS call (`@`) leaves OpenBLAS's threads spinning for a while, and on a CPU
that llama.cpp's threads already fill, that made the predictor 3.3x slower (0.6B, 2 cores:
348 ms instead of 105 ms a frame); einsum costs ~0.5 ms a head."""


@dataclass(frozen=True)
class Qwen3Options:
    """Options of a Qwen3-TTS model (`options:` in the catalog); voices may override all but
    `matrix_type`, and `max_frames` only downwards. The sampling fields of `SamplingConfig`
    (`temperature`, `top_k`, `top_p`, `repetition_penalty`, `seed`, …) set the talker's sampler;
    their defaults, like the subtalker's here, come from the model's generation_config.json."""

    max_frames: int = 1024
    """Most frames per text piece (12.5 per second: 1024 ≈ 82 s); sizes the talker's context.
    Each piece is also capped at FRAMES_PER_TEXT_TOKEN per text token (the runaway guard)."""
    matrix_type: str = "f16"
    """Weights of the converted GGUFs and tables: `f16`, or `f32` (exact, twice the memory)."""
    codec_language: str = ""
    """The model's language tag: empty for the voice's language, `auto` for none, or a key of
    config.json's codec_language_id (e.g. `sichuan_dialect`)."""
    instruct: str = ""
    """Style instruction (1.7B CustomVoice and VoiceDesign; the 0.6B ignores it, as qwen-tts)."""
    streaming_text: bool = False
    """Feed the text alongside the audio (the official streaming-text mode) instead of all of it
    in the prefill (non-streaming mode, the official CustomVoice default)."""
    subtalker_temperature: float = 0.9
    """Sampling of the code predictor's 15 codes per frame (0: greedy)."""
    subtalker_top_k: int = 50
    subtalker_top_p: float = 1.0
    context_frames: int = -1
    """Streaming: frames of left context per decoded window; -1: the decoder's receptive field
    (580 frames for the released decoder), which makes the stream equal one whole decode; fewer
    only saves transformer work (25 frames, the official chunking, is close but not exact)."""
    first_chunk_frames: int = 4
    """Frames in the first streamed window (4 = 320 ms, the paper's packet)."""
    max_chunk_frames: int = 32
    """Later windows double up to this many frames: each window re-runs 10 frames of the
    decoder's convolutions, so larger windows cost less (32: +31 %, 8: +125 %)."""

    def __post_init__(self) -> None:
        if self.max_frames < 1:
            raise ValueError("max_frames must be at least 1")
        if self.matrix_type not in MATRIX_TYPES:
            raise ValueError(f"matrix_type must be one of {', '.join(MATRIX_TYPES)}")
        if self.context_frames < -1 or self.first_chunk_frames < 1:
            raise ValueError("context_frames must be >= -1 and first_chunk_frames >= 1")
        if self.max_chunk_frames < self.first_chunk_frames:
            raise ValueError("max_chunk_frames must be >= first_chunk_frames")
        SamplingConfig(self.subtalker_temperature, self.subtalker_top_k, self.subtalker_top_p)


@dataclass(frozen=True)
class Qwen3Prompt:
    """The talker's input for one text piece."""

    rows: np.ndarray
    """Prefill rows (P, hidden) float32."""
    trailing: np.ndarray
    """(T, hidden) float32 added to the input of generation step k < T (streaming-text mode:
    the rest of the text, then tts_eos); later steps, and every step in non-streaming mode,
    add tts_pad."""
    text_tokens: int
    """Tokens of the spoken text (bounds the frames)."""


def converted_dir(model_dir: Path) -> Path:
    """Where the conversion of the release folder `model_dir` is cached (see HUB_CONVERTED_DIR,
    LOCAL_CONVERTED_SUFFIX)."""
    if model_dir.parent.name == "snapshots":  # models--Org--Name/snapshots/<commit>
        return model_dir.parent.parent / HUB_CONVERTED_DIR / model_dir.name
    return model_dir.with_name(model_dir.name + LOCAL_CONVERTED_SUFFIX)


def convert_once(model_dir: Path, matrix_type: str, where: str) -> ConvertedQwen3TTS:
    """`convert` into `converted_dir(model_dir)`, one process at a time (a file lock beside it:
    two servers loading the same model wait for one conversion instead of clobbering it)."""
    out_dir = converted_dir(model_dir)
    lock_path = out_dir.with_name(f".{out_dir.name}.lock")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        lock = open(lock_path, "a+b")  # pylint: disable=consider-using-with
    except OSError as err:
        raise EngineError(
            f"{where}: cannot write beside {model_dir} ({err}); the converted model is cached "
            f"in {out_dir}: make that folder writable"
        ) from err
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return convert(model_dir, out_dir, where, matrix_type=matrix_type)


def _generation_defaults(config: Qwen3TTSRuntimeConfig) -> tuple[SamplingConfig, Qwen3Options]:
    """The talker's sampling and the subtalker's options from generation_config.json."""
    gen = config.generation
    talker = SamplingConfig(
        temperature=float(gen["temperature"]) if gen["do_sample"] else 0.0,
        top_k=int(gen["top_k"]),
        top_p=float(gen["top_p"]),
        repetition_penalty=float(gen["repetition_penalty"]),
    )
    options = Qwen3Options(
        subtalker_temperature=(
            float(gen["subtalker_temperature"]) if gen["subtalker_dosample"] else 0.0
        ),
        subtalker_top_k=int(gen["subtalker_top_k"]),
        subtalker_top_p=float(gen["subtalker_top_p"]),
    )
    return talker, options


def estimate_bytes(model: ModelSpec, paths: Mapping[str, Path], where: str) -> int:
    """Weights (as converted), the speech tokenizer, and the talker's KV cache."""
    options = apply_options(Qwen3Options(), model.options, where)
    model_dir = paths["model"]
    try:
        talker = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))[
            "talker_config"
        ]
        layers, kv_heads = int(talker["num_hidden_layers"]), int(talker["num_key_value_heads"])
        head_dim = int(
            talker.get("head_dim") or talker["hidden_size"] // talker["num_attention_heads"]
        )
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise EngineError(
            f"{where}: {model_dir / 'config.json'} is not a Qwen3-TTS config ({err})"
        ) from err
    n_ctx = PROMPT_ROWS_MAX + options.max_frames
    kv_bytes = 2 * layers * n_ctx * kv_heads * head_dim * 2  # K and V, f16
    scale = 2 if options.matrix_type == "f32" else 1  # the release is bf16
    return (
        scale * (model_dir / "model.safetensors").stat().st_size
        + (model_dir / "speech_tokenizer" / "model.safetensors").stat().st_size
        + kv_bytes
    )


def load(
    model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int, where: str
) -> "Qwen3TTS":
    """Convert the release once, then load talker and predictor on `device` (llama.cpp) and the
    decoder on its torch device."""
    return Qwen3TTS(model, paths, device, threads, where)


class Qwen3TTS:
    """A loaded Qwen3-TTS model: talker, code predictor, text tokenizer, tables, decoder."""

    max_text_chars = MAX_TEXT_CHARS

    def __init__(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int, where: str
    ) -> None:
        check_option_names(model.options, where, Qwen3Options(), SamplingConfig())
        matrix_type = apply_options(Qwen3Options(), model.options, where).matrix_type
        self._name = model.name
        self._stack = contextlib.ExitStack()
        try:
            converted = convert_once(paths["model"], matrix_type, where)
            config = self.config = converted.config
            if config.tts_model_type == "base":
                raise EngineError(
                    f"{where}: {paths['model']} is a Base (voice cloning) model, which needs "
                    "reference audio per voice; that is not supported yet: use a CustomVoice "
                    "model (e.g. Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice)"
                )
            talker_defaults, option_defaults = _generation_defaults(config)
            self._sampling = apply_options(talker_defaults, model.options, where)
            self._options = apply_options(option_defaults, model.options, where)
            self.sample_rate = config.sample_rate

            # llama.cpp: the talker (one context for prompt + frames), the predictor (one frame)
            self._talker = self._own(
                LlamaModel(
                    converted.talker,
                    device,
                    n_ctx=PROMPT_ROWS_MAX + self._options.max_frames,
                    threads=threads,
                    where=where,
                    hidden_states=True,
                )
            )
            self._predictor = self._own(
                LlamaModel(
                    converted.code_predictor,
                    device,
                    n_ctx=config.num_code_groups,  # 2 prefill rows + 14 steps
                    n_batch=2,
                    threads=threads,
                    where=where,
                    hidden_states=True,
                )
            )
            self._tokenizer = self._own(
                LlamaModel(
                    converted.text_tokenizer,
                    device,
                    n_ctx=0,
                    threads=threads,
                    where=where,
                    vocab_only=True,
                )
            )
            self._role_ids = self._tokenizer.tokenize(ROLE_TEXT, special=True)
            if len(self._role_ids) != ROLE_TOKENS or self._role_ids[0] != config.im_start_id:
                raise EngineError(
                    f"{where}: {converted.text_tokenizer} tokenizes {ROLE_TEXT!r} as "
                    f"{self._role_ids}, not <|im_start|> assistant \\n; delete "
                    f"{converted.directory} to convert again"
                )
            self._read_tables(converted)

            set_torch_threads(threads)
            self._codec = load_qwen3_codec(
                paths["model"] / "speech_tokenizer", torch_device_for(device, where)
            )
        except BaseException:
            self._stack.close()
            raise
        self.last_codes = np.zeros((0, config.num_code_groups), np.int64)
        """The codes of the last text piece, (frames, num_code_groups) int64 (for tests)."""
        _LOGGER.info(
            "%s: Qwen3-TTS %s %s, speakers %s",
            where,
            config.tts_model_type,
            config.tts_model_size,
            ", ".join(config.speakers) or "none",
        )

    def _own(self, model: LlamaModel) -> LlamaModel:
        return self._stack.enter_context(contextlib.closing(model))

    def _read_tables(self, converted: ConvertedQwen3TTS) -> None:
        """The numpy side of the model (see qwen3tts_convert `_write_tables`)."""
        with np.load(converted.tables) as npz:
            self._text_table = npz["text_embeddings"]  # (text_vocab, H) f16 or f32
            self._tts_pad = npz["tts_pad_embedding"].astype(np.float32)  # (H,)
            self._tts_bos = npz["tts_bos_embedding"].astype(np.float32)
            self._tts_eos = npz["tts_eos_embedding"].astype(np.float32)
            self._codec_table = npz["codec_embeddings"].astype(np.float32)  # (talker_vocab, H)
            self._predictor_tables = npz["predictor_embeddings"]  # (G-1, codebook, H)
            self._heads = npz["predictor_heads"].astype(np.float32)  # (G-1, codebook, Hp)
            if self.config.has_mtp_projection:
                self._mtp_weight = npz["mtp_projection_weight"].astype(np.float32)  # (Hp, H)
                self._mtp_bias = npz["mtp_projection_bias"].astype(np.float32)  # (Hp,)
        config = self.config
        self._codes = np.arange(config.codebook_size, dtype=np.int64)  # (codebook,)
        self._codes_and_eos = np.append(self._codes, config.codec_eos_id)  # (codebook + 1,)

    def close(self) -> None:
        """Free the llama.cpp models (tables and decoder are ordinary memory)."""
        self._stack.close()

    # ---- prompt

    def codec_prefix(self, language: str, speaker: str | None, override: str = "") -> list[int]:
        """The codec ids of the prefill's tag rows: think/language tags, the speaker, then
        codec_pad and codec_bos (docs A4). `language` is the voice's (`en`, `zh-CN`, …);
        `override` is the `codec_language` option."""
        config = self.config
        name = override.lower()
        if name and name != AUTO_LANGUAGE and name not in config.languages:
            raise EngineError(
                f"codec_language {override!r} is not a language of this model (languages: "
                f"{AUTO_LANGUAGE}, {', '.join(config.languages)})"
            )
        if not name:
            code = language.lower().replace("_", "-").split("-")[0]
            name = LANGUAGE_NAMES.get(code, AUTO_LANGUAGE)
            if name not in config.languages:
                name = AUTO_LANGUAGE
        if speaker is not None and name in DIALECT_LANGUAGES and speaker in config.dialects:
            name = config.dialects[speaker]
        if name == AUTO_LANGUAGE:
            tags = [config.codec_nothink_id, config.codec_think_bos_id, config.codec_think_eos_id]
        else:
            tags = [
                config.codec_think_id,
                config.codec_think_bos_id,
                config.languages[name],
                config.codec_think_eos_id,
            ]
        speaker_ids = [] if speaker is None else [config.speakers[speaker]]
        return tags + speaker_ids + [config.codec_pad_id, config.codec_bos_id]

    def speaker(self, name: str | None, where: str) -> str | None:
        """The config's key for a voice's speaker (lower-case), checked against the model."""
        config = self.config
        if config.tts_model_type != "custom_voice":
            if name is not None:
                raise EngineError(
                    f"{where}: model {self._name} ({config.tts_model_type}) has no named "
                    f"speakers; remove 'speaker: {name}' from the voice"
                )
            return None
        known = ", ".join(config.speakers)
        if name is None:
            raise EngineError(f"{where}: model {self._name} needs a speaker (speakers: {known})")
        if name.lower() not in config.speakers:
            raise EngineError(
                f"{where}: model {self._name} has no speaker {name!r} (speakers: {known})"
            )
        return name.lower()

    def _text_rows(self, ids: list[int]) -> np.ndarray:
        """Text-side input rows (n, H) float32 of token ids (the pre-folded text_projection)."""
        return self._text_table[np.asarray(ids, np.int64)].astype(np.float32)

    def prompt(
        self, text: str, voice: VoiceSettings, options: Qwen3Options, where: str
    ) -> Qwen3Prompt:
        """The talker's prefill for `text` in `voice`, exactly as qwen-tts builds it (docs A4)."""
        config = self.config
        speaker = self.speaker(voice.speaker, where)
        try:
            prefix = self.codec_prefix(voice.language, speaker, options.codec_language)
        except EngineError as err:
            raise EngineError(f"{where}: {err}") from err
        # the text between the role tokens and `<|im_end|>`: tokenized on its own, with special
        # tokens off, it tokenizes as inside the whole wrapped string (the pre-tokenizer always
        # splits after the role's newline)
        body = self._tokenizer.tokenize(text.strip(), special=False)
        if not body:
            raise EngineError(f"{where}: nothing to say in {text!r}")
        codec = self._codec_table
        pieces = []
        if options.instruct and config.tts_model_size not in NO_INSTRUCT_SIZES:
            instruct = INSTRUCT_TEXT.format(instruct=options.instruct)
            pieces.append(self._text_rows(self._tokenizer.tokenize(instruct, special=True)))
        pieces.append(self._text_rows(self._role_ids))  # (3, H)
        # tag rows: tts_pad … tts_pad, tts_bos on the text side, the codec prefix but codec_bos
        text_side = np.stack([self._tts_pad] * (len(prefix) - 2) + [self._tts_bos])
        pieces.append(text_side + codec[prefix[:-1]])  # (len(prefix) - 1, H)
        if options.streaming_text:
            # the first text token with codec_bos; the rest arrives with the generated frames
            pieces.append(self._text_rows(body[:1]) + codec[config.codec_bos_id])
            trailing = np.concatenate([self._text_rows(body[1:]), self._tts_eos[None]])
        else:
            pieces.append(self._text_rows(body) + codec[config.codec_pad_id])  # (n, H)
            pieces.append((self._tts_eos + codec[config.codec_pad_id])[None])
            pieces.append((self._tts_pad + codec[config.codec_bos_id])[None])
            trailing = np.zeros((0, config.talker_hidden), np.float32)
        rows = np.concatenate(pieces)  # (P, H) float32
        if len(rows) > PROMPT_ROWS_MAX:
            raise EngineError(
                f"{where}: a text piece of {len(body)} tokens is too long for the prompt "
                f"({len(rows)} of {PROMPT_ROWS_MAX} rows)"
            )
        return Qwen3Prompt(rows=rows, trailing=trailing, text_tokens=len(body))

    # ---- one frame's codes 1 … G-1

    def _to_predictor(self, rows: np.ndarray) -> np.ndarray:
        """Talker-width rows (n, H) → predictor input rows (n, Hp) (small_to_mtp_projection)."""
        if not self.config.has_mtp_projection:
            return rows
        projected = np.einsum(SINGLE_THREADED_MATMUL, self._mtp_weight, rows)  # (n, Hp)
        return projected + self._mtp_bias  # (n, Hp) float32

    def _predict_codes(self, hidden: np.ndarray, code0: int, sampler: Sampler) -> np.ndarray:
        """The frame's codes (G,) int64: code0, then one code per predictor step from a fresh
        cache: [talker hidden, embedding of code0] → head 0 → code 1; embedding of code i →
        head i → code i+1."""
        predictor = self._predictor
        predictor.reset()
        codes = np.empty(self.config.num_code_groups, np.int64)  # (G,)
        codes[0] = code0
        rows = self._to_predictor(np.stack([hidden, self._codec_table[code0]]))  # (2, Hp)
        for i in range(len(codes) - 1):
            _, state = predictor.decode_embeddings(rows)  # (Hp,)
            logits = np.einsum(SINGLE_THREADED_MATMUL, self._heads[i], state[None])[0]
            codes[i + 1] = sampler.sample(logits)  # logits (codebook,)
            if i + 2 < len(codes):
                table = self._predictor_tables[i]  # (codebook, H)
                rows = self._to_predictor(table[codes[i + 1]][None].astype(np.float32))
        return codes

    def _next_input(self, codes: np.ndarray, text_side: np.ndarray) -> np.ndarray:
        """The talker's next input row (1, H): the 16 codebook embeddings plus the text side."""
        row = self._codec_table[codes[0]] + text_side  # (H,)
        for i, code in enumerate(codes[1:]):
            row = row + self._predictor_tables[i, code].astype(np.float32)
        return row[None].astype(np.float32)  # (1, H)

    # ---- synthesis

    def synthesize(
        self, text: str, voice: VoiceSettings, cancel: threading.Event
    ) -> Iterator[np.ndarray]:
        """Speak one text piece, yielding audio window by window as frames are generated."""
        where = f"voice {voice.name}"
        check_option_names(voice.options, where, Qwen3Options(), SamplingConfig())
        if "matrix_type" in voice.options:
            raise EngineError(f"{where}: matrix_type is a model option, not a voice option")
        options = apply_options(self._options, voice.options, where)
        sampling = apply_options(self._sampling, voice.options, where)
        config = self.config
        talker_sampler = Sampler(sampling, config.talker_vocab)
        predictor_sampler = Sampler(
            SamplingConfig(
                temperature=options.subtalker_temperature,
                top_k=options.subtalker_top_k,
                top_p=options.subtalker_top_p,
                seed=sampling.seed + SUBTALKER_SEED_OFFSET,
            ),
            config.codebook_size,
        )
        frames: list[np.ndarray] = []  # each (G,) int64
        context = (
            self._codec.receptive_frames if options.context_frames < 0 else options.context_frames
        )
        stream = self._codec.stream(
            lambda first, end: np.stack(frames[first:end]),  # (end - first, G)
            context,
            options.first_chunk_frames,
            options.max_chunk_frames,
        )

        # prompt
        started = time.monotonic()
        prompt = self.prompt(text, voice, options, where)
        max_frames = min(
            options.max_frames,
            self._options.max_frames,  # the context is sized for the model's max_frames
            max(MIN_FRAMES, FRAMES_PER_TEXT_TOKEN * prompt.text_tokens),
        )

        # prefill
        self._talker.reset()
        logits, hidden = self._talker.decode_embeddings(prompt.rows)
        prefill_done = time.monotonic()

        # decode loop: code 0 from the talker, codes 1 … G-1 from the predictor, per frame
        talker_seconds = predictor_seconds = codec_seconds = 0.0
        steps = 0
        ended = False  # by EOS, rather than at max_frames (the runaway guard)
        for step in range(max_frames):
            if cancel.is_set():
                _LOGGER.info("%s: cancelled after %d frames", where, len(frames))
                return
            tick = time.monotonic()
            candidates = self._codes if step < MIN_NEW_FRAMES else self._codes_and_eos
            code0 = talker_sampler.sample(logits[candidates], candidates)  # (codebook[+1],)
            talker_sampler.remember([code0])
            steps += 1
            talker_seconds += time.monotonic() - tick
            if code0 == config.codec_eos_id:
                ended = True
                break

            tick = time.monotonic()
            codes = self._predict_codes(hidden, code0, predictor_sampler)
            frames.append(codes)
            predictor_seconds += time.monotonic() - tick

            tick = time.monotonic()
            yield from stream.push(len(frames))
            codec_seconds += time.monotonic() - tick

            if step + 1 < max_frames:
                tick = time.monotonic()
                text_side = prompt.trailing[step] if step < len(prompt.trailing) else self._tts_pad
                logits, hidden = self._talker.decode_embeddings(self._next_input(codes, text_side))
                talker_seconds += time.monotonic() - tick

        # codec: whatever the last windows left
        tick = time.monotonic()
        yield from stream.finish(len(frames))
        codec_seconds += time.monotonic() - tick
        self.last_codes = (
            np.stack(frames) if frames else np.zeros((0, config.num_code_groups), np.int64)
        )  # (F, G)
        if not ended:
            _LOGGER.debug("%s: no EOS within %d frames: cut there", where, max_frames)
        log_piece_stats(
            _LOGGER,
            voice.name,
            len(prompt.rows),
            steps + (config.num_code_groups - 1) * len(frames),  # codes sampled (with EOS)
            len(frames),
            prefill_done - started,
            talker_seconds + predictor_seconds,
            codec_seconds,
        )
        _LOGGER.info(
            "split voice=%s talker_s=%.3f predictor_s=%.3f codec_s=%.3f end=%s",
            voice.name,
            talker_seconds,
            predictor_seconds,
            codec_seconds,
            "eos" if ended else "max_frames",
        )
