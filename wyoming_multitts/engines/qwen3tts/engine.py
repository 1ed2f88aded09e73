"""Qwen3-TTS 12 Hz (Qwen): a Qwen3 "talker" writes codebook 0 of each 80 ms frame, a 5-layer code
predictor the other 15 codebooks, and the 12 Hz speech-tokenizer decoder turns the 16 codes of a
frame into 1920 samples of 24 kHz audio.

The official release is safetensors (`Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice` and siblings). On first
load `convert.convert` turns it, once, into two stock `qwen3` GGUFs (talker, code
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

Base models clone a voice from a reference recording (the catalog's `reference:` of a voice;
qwen-tts `generate_voice_clone`, docs A4): the speaker encoder (`speaker_encoder.py`) turns it
into an x-vector that takes the prefill's speaker slot. With a transcript the clone is also "in
context" (ICL, 4c): the speech-tokenizer encoder (`codecs/qwen3_12hz_encoder.py`) turns the
recording into codes, the prefill holds the transcript's text plus the new text alongside those
frames, and generation continues from the reference as if it were the start of the utterance;
the reference frames are then the decoder's left context, and only the new audio is emitted
(qwen-tts decodes reference plus new codes and cuts the reference's share of the audio off,
which for a causal decoder is the same). Without a transcript, or with `x_vector_only`, only the
x-vector is used. Both are computed once per voice and kept with the engine.
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

from ...audio import read_wav, resample
from ...catalog import ModelSpec
from ...codecs.qwen3_12hz import load_qwen3_codec
from ...codecs.qwen3_12hz_encoder import (
    ENCODER_SAMPLE_RATE,
    Qwen3SpeechEncoder,
    load_speech_encoder,
)
from ...devices import Device, set_torch_threads, torch_device_for
from ...llm import LlamaModel
from ...options import apply_options, check_option_names
from ...sampling import Sampler, SamplingConfig
from ..base import EngineError, VoiceSettings, log_piece_stats
from .convert import MATRIX_TYPES, ConvertedQwen3TTS, Qwen3TTSRuntimeConfig, convert
from .speaker_encoder import MEL_SAMPLE_RATE, load_speaker_encoder

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
BASE_KIND = "base"
"""`tts_model_type` of the voice-cloning models (they have a speaker encoder, no speakers)."""
REFERENCE_MIN_SECONDS = 1.0
"""Shorter reference recordings are refused (3 s or more is what cloning wants)."""
REFERENCE_MAX_SECONDS = 60.0
"""Longer ones too: ICL puts 12.5 prefill rows per second of reference into the talker's
PROMPT_ROWS_MAX, and the x-vector gains nothing from more."""
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
    """Weights of the converted GGUFs and tables: `f16`, `f32` (exact, twice the memory) or
    `q8_0` (8-bit talker and predictor matrices, f16 tables: faster on CPUs)."""
    codec_language: str = ""
    """The model's language tag: empty for the voice's language, `auto` for none, or a key of
    config.json's codec_language_id (e.g. `sichuan_dialect`)."""
    instruct: str = ""
    """Style instruction (1.7B CustomVoice and VoiceDesign; the 0.6B ignores it, as qwen-tts)."""
    streaming_text: bool = False
    """Feed the text alongside the audio (the official streaming-text mode) instead of all of it
    in the prefill (non-streaming mode). Default: on for Base models (qwen-tts
    `generate_voice_clone`'s default), off for the others (the CustomVoice default)."""
    x_vector_only: bool = False
    """Base models: clone from the reference's x-vector alone even when it has a transcript
    (qwen-tts `x_vector_only_mode`): a shorter prompt and no risk of the reference's last words
    bleeding in, but a less close likeness. Without a transcript this is the only mode."""
    reference_silence: float = 0.5
    """Base models, ICL: seconds of silence appended to the reference before it is encoded.
    Generation continues from the reference's end; without a pause there, its last sound tends
    to open the new speech (faster-qwen3-tts appends 0.5 s by default; qwen-tts appends none)."""
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
            raise ValueError(
                f"matrix_type must be one of {', '.join(MATRIX_TYPES)}, not {self.matrix_type!r}"
            )
        if self.context_frames < -1 or self.first_chunk_frames < 1:
            raise ValueError("context_frames must be >= -1 and first_chunk_frames >= 1")
        if self.max_chunk_frames < self.first_chunk_frames:
            raise ValueError("max_chunk_frames must be >= first_chunk_frames")
        if self.reference_silence < 0:
            raise ValueError("reference_silence must be >= 0")
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


@dataclass(frozen=True)
class CloneReference:
    """What a cloned voice's reference recording becomes (computed once per voice)."""

    x_vector: np.ndarray
    """The speaker encoder's output (H,) float32: the prefill's speaker slot."""
    codes: np.ndarray | None
    """ICL: the reference's codes (T_ref, G) int64 from the speech-tokenizer encoder; else None."""
    text_ids: list[int]
    """ICL: the transcript's tokens; else empty."""


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
        streaming_text=config.tts_model_type == BASE_KIND,
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
    # the release is bf16; q8_0 converts to less, but its tables are f16: bound it by f16
    scale = 2 if options.matrix_type == "f32" else 1
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
            self._torch_device = torch_device_for(device, where)
            self._codec = load_qwen3_codec(paths["model"] / "speech_tokenizer", self._torch_device)
            # voice cloning (Base): the speaker encoder now, the speech encoder on first ICL use
            # (x-vector-only voices never need it)
            self._speaker_encoder = (
                load_speaker_encoder(paths["model"], self._torch_device, where)
                if config.tts_model_type == BASE_KIND
                else None
            )
            self._speech_encoder: Qwen3SpeechEncoder | None = None
            self._speech_tokenizer_dir = paths["model"] / "speech_tokenizer"
            self._references: dict[str, tuple[tuple[object, ...], CloneReference]] = {}
            """voice name → (what the reference was computed from, the result)."""
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
        """The numpy side of the model (see `convert._write_tables`)."""
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
        self,
        text: str,
        voice: VoiceSettings,
        options: Qwen3Options,
        where: str,
        reference: CloneReference | None = None,
    ) -> Qwen3Prompt:
        """The talker's prefill for `text` in `voice`, exactly as qwen-tts builds it (docs A4);
        `reference`: a Base voice's clone reference (`clone_reference`)."""
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
        codec_side = codec[prefix[:-1]]  # (len(prefix) - 1, H): tags, [speaker], codec_pad
        if reference is not None:  # a clone's x-vector takes the speaker slot, before codec_pad
            codec_side = np.insert(codec_side, len(codec_side) - 1, reference.x_vector, axis=0)
        text_side = np.stack([self._tts_pad] * (len(codec_side) - 1) + [self._tts_bos])
        pieces.append(text_side + codec_side)
        if reference is not None and reference.codes is not None:
            rows, trailing = self._icl_rows(
                reference.text_ids + body, reference.codes, options.streaming_text
            )
            pieces.append(rows)
        elif options.streaming_text:
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
            clone = (
                ""
                if reference is None or reference.codes is None
                else f"; the reference recording takes {len(reference.codes)} of them: use a "
                "shorter one"
            )
            raise EngineError(
                f"{where}: a text piece of {len(body)} tokens is too long for the prompt "
                f"({len(rows)} of {PROMPT_ROWS_MAX} rows{clone})"
            )
        return Qwen3Prompt(rows=rows, trailing=trailing, text_tokens=len(body))

    def _icl_rows(
        self, text_ids: list[int], codes: np.ndarray, streaming: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The in-context clone's rows and trailing text (docs A4 4c; qwen-tts
        `generate_icl_prompt`): a text stream (`text_ids`: transcript then new text; tts_eos)
        and a codec stream (codec_bos, then one row per reference frame of `codes` (T_ref, G)),
        one after the other in non-streaming mode, summed position by position in streaming
        mode (the longer text's rest trails)."""
        config, codec = self.config, self._codec_table
        text = np.concatenate([self._text_rows(text_ids), self._tts_eos[None]])  # (n, H)
        audio = np.concatenate(
            [codec[config.codec_bos_id][None], self.frame_rows(codes)]
        )  # (1 + T_ref, H)
        no_trailing = np.zeros((0, config.talker_hidden), np.float32)
        if not streaming:
            rows = [text + codec[config.codec_pad_id], audio + self._tts_pad]
            return np.concatenate(rows), no_trailing
        if len(text) > len(audio):
            return text[: len(audio)] + audio, text[len(audio) :]
        padding = np.repeat(self._tts_pad[None], len(audio) - len(text), axis=0)
        return np.concatenate([text, padding]) + audio, no_trailing  # (1 + T_ref, H)

    # ---- voice cloning (Base models)

    def clone_reference(
        self, voice: VoiceSettings, options: Qwen3Options, where: str
    ) -> CloneReference | None:
        """A Base voice's x-vector (and, for ICL, reference codes and transcript tokens), computed
        once per voice and recomputed only when the recording, transcript or mode change; None
        for the other kinds of model."""
        ref, encoder = voice.reference, self._speaker_encoder
        if encoder is None:  # not a Base model
            if ref is not None:
                raise EngineError(
                    f"{where}: model {self._name} ({self.config.tts_model_type}) cannot clone "
                    "a voice: remove 'reference:' from the voice, or use a Base model (e.g. "
                    "Qwen/Qwen3-TTS-12Hz-0.6B-Base)"
                )
            return None
        if ref is None:
            raise EngineError(
                f"{where}: model {self._name} is a Qwen3-TTS Base (voice cloning) model, so the "
                "voice needs a reference recording: add `reference: {path: alice.wav, text: "
                '"what alice.wav says"}` to the voice in the catalog (3-10 s of clean speech; '
                "without 'text' only its x-vector is used)"
            )
        transcript = (ref.text or "").strip()
        icl = bool(transcript) and not options.x_vector_only
        try:
            stat = ref.path.stat()
        except OSError as err:
            raise EngineError(
                f"{where}: cannot read the reference audio {ref.path} ({err.strerror}); fix "
                "'reference:' of the voice in the catalog"
            ) from err
        key = (
            ref.path,
            stat.st_mtime_ns,
            stat.st_size,
            transcript if icl else None,
            options.reference_silence if icl else None,
        )
        cached = self._references.get(voice.name)
        if cached is not None and cached[0] == key:
            return cached[1]

        started = time.monotonic()
        try:
            audio, rate = read_wav(ref.path)  # (n,) float32
        except (OSError, ValueError) as err:
            raise EngineError(
                f"{where}: cannot read the reference audio {ref.path} ({err}); use a 16-bit PCM "
                "or float WAV file"
            ) from err
        seconds = len(audio) / rate
        if not REFERENCE_MIN_SECONDS <= seconds <= REFERENCE_MAX_SECONDS:
            raise EngineError(
                f"{where}: the reference audio {ref.path} lasts {seconds:.1f} s; use "
                f"{REFERENCE_MIN_SECONDS:g}-{REFERENCE_MAX_SECONDS:g} s (3-10 s of clean speech "
                "works best)"
            )
        audio = resample(audio, rate, MEL_SAMPLE_RATE)  # (n · 24000 / rate,) float32
        x_vector = encoder.embed(audio)  # (H,) float32
        codes: np.ndarray | None = None
        text_ids: list[int] = []
        if icl:
            silence = np.zeros(round(options.reference_silence * ENCODER_SAMPLE_RATE), np.float32)
            codes = self._load_speech_encoder(where).encode(np.concatenate([audio, silence]))
            text_ids = self._tokenizer.tokenize(transcript, special=False)  # codes (T_ref, G)
        reference = CloneReference(x_vector=x_vector, codes=codes, text_ids=text_ids)
        self._references[voice.name] = (key, reference)
        _LOGGER.info(
            "%s: reference %s (%.1f s at %d Hz): x-vector%s in %.2f s",
            where,
            ref.path.name,
            seconds,
            rate,
            "" if codes is None else f", {len(codes)} reference frames (in-context clone)",
            time.monotonic() - started,
        )
        return reference

    def _load_speech_encoder(self, where: str) -> Qwen3SpeechEncoder:
        if self._speech_encoder is None:
            self._speech_encoder = load_speech_encoder(
                self._speech_tokenizer_dir, self._torch_device, where
            )
        return self._speech_encoder

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

    def frame_rows(self, codes: np.ndarray) -> np.ndarray:
        """Talker input rows (n, H) float32 of whole frames (n, G): the sum of each frame's
        codebook embeddings (code 0 from the talker's table, the others from the predictor's)."""
        rows = self._codec_table[codes[:, 0]]  # (n, H)
        for i in range(1, codes.shape[1]):
            rows = rows + self._predictor_tables[i - 1, codes[:, i]].astype(np.float32)
        return rows

    def _next_input(self, codes: np.ndarray, text_side: np.ndarray) -> np.ndarray:
        """The talker's next input row (1, H): the 16 codebook embeddings plus the text side."""
        return self.frame_rows(codes[None]) + text_side  # (1, H) float32

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

        # prompt (a cloned voice's reference is read and encoded on its first use)
        started = time.monotonic()
        reference = self.clone_reference(voice, options, where)
        prompt = self.prompt(text, voice, options, where, reference)
        max_frames = min(
            options.max_frames,
            self._options.max_frames,  # the context is sized for the model's max_frames
            max(MIN_FRAMES, FRAMES_PER_TEXT_TOKEN * prompt.text_tokens),
        )

        # the decoder's frames: an in-context clone's reference frames are left context only
        frames: list[np.ndarray] = []  # each (G,) int64
        if reference is not None and reference.codes is not None:
            frames.extend(reference.codes)
        start = len(frames)
        context = (
            self._codec.receptive_frames if options.context_frames < 0 else options.context_frames
        )
        stream = self._codec.stream(
            lambda first, end: np.stack(frames[first:end]),  # (end - first, G)
            context,
            options.first_chunk_frames,
            options.max_chunk_frames,
            start,
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
                _LOGGER.info("%s: cancelled after %d frames", where, len(frames) - start)
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
            np.stack(frames[start:])
            if len(frames) > start
            else np.zeros((0, config.num_code_groups), np.int64)
        )  # (F, G)
        if not ended:
            _LOGGER.debug("%s: no EOS within %d frames: cut there", where, max_frames)
        log_piece_stats(
            _LOGGER,
            voice.name,
            len(prompt.rows),
            steps + (config.num_code_groups - 1) * len(self.last_codes),  # codes (with EOS)
            len(self.last_codes),
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
