"""Qwen3-TTS settings: what the engine reads from a release's config.json,
generation_config.json and speech_tokenizer/config.json (`Qwen3TTSRuntimeConfig`, kept in the
conversion's manifest), the catalog's options (`Qwen3Options`) and their defaults.

Key names and fallbacks: qwen-tts 0.1.1 (`core/models/configuration_qwen3_tts.py`,
`inference/qwen3_tts_model.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from ...devices import Device
from ...errors import ConvertError
from ...formats import read_json_object
from ...sampling import SamplingConfig

ADVICE = (
    "the download is incomplete or is not a Qwen3-TTS 12 Hz snapshot; download it again, e.g. "
    "`hf download Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice --local-dir DIR`"
)
"""How every error about a broken release folder ends."""

MODEL_TYPE = "qwen3_tts"
TOKENIZER_TYPE = "qwen3_tts_tokenizer_12hz"
"""config.json's `model_type` and `tokenizer_type` of the supported (12 Hz) releases."""
BASE_KIND = "base"
"""`tts_model_type` of the voice-cloning models (they have a speaker encoder, no speakers)."""
CUSTOM_VOICE_KIND = "custom_voice"
"""`tts_model_type` of the models with named speakers (`spk_id`)."""

SUPPRESSED_CODEC_IDS = 1024
"""qwen-tts bans the top 1024 codec ids (the specials) except EOS: `vocab - 1024 …`
(modeling_qwen3_tts.py, `Qwen3TTSForConditionalGeneration.generate`, `suppress_tokens`)."""

GENERATION_FALLBACKS = {
    "do_sample": True,
    "top_k": 50,
    "top_p": 1.0,
    "temperature": 0.9,
    "repetition_penalty": 1.05,
    "subtalker_dosample": True,
    "subtalker_top_k": 50,
    "subtalker_top_p": 1.0,
    "subtalker_temperature": 0.9,
    "max_new_tokens": 2048,
}
"""What qwen-tts uses when generation_config.json lacks a key (inference/qwen3_tts_model.py,
`_merge_generate_kwargs` hard defaults)."""


@dataclass(frozen=True)
class MatrixType:
    """What a `matrix_type` stores: the GGUF weight matrices and the looked-up tables."""

    dtype: type
    """The tables, and the matrices that are not quantized."""
    quant: gguf.GGMLQuantizationType | None
    """Block type of the talker's and predictor's matrices; None: `dtype`."""
    wide_range: gguf.GGMLQuantizationType | None
    """Type of the predictor's `ffn_down`, whose inputs exceed fp16 (see
    `gguf_files.write_predictor`); None: F32 (the f32 type, exact)."""
    file_type: gguf.LlamaFileType
    """`general.file_type` of the talker and predictor GGUFs."""
    more_bits: gguf.GGMLQuantizationType | None = None
    """Type of the tensors llama.cpp's Q4_K_M mix gives more bits (`gguf_files.block_type`):
    the talker's output head, and attn_v and ffn_down in about half of the layers; None:
    `quant`."""


MATRIX_TYPES = {
    "f16": MatrixType(
        np.float16, None, gguf.GGMLQuantizationType.BF16, gguf.LlamaFileType.MOSTLY_F16
    ),
    "bf16": MatrixType(
        np.float16,
        gguf.GGMLQuantizationType.BF16,
        gguf.GGMLQuantizationType.BF16,
        gguf.LlamaFileType.MOSTLY_BF16,
    ),
    "f32": MatrixType(np.float32, None, None, gguf.LlamaFileType.ALL_F32),
    "q8_0": MatrixType(
        np.float16,
        gguf.GGMLQuantizationType.Q8_0,
        gguf.GGMLQuantizationType.BF16,
        gguf.LlamaFileType.MOSTLY_Q8_0,
    ),
    "q6_k": MatrixType(
        np.float16,
        gguf.GGMLQuantizationType.Q6_K,
        gguf.GGMLQuantizationType.BF16,
        gguf.LlamaFileType.MOSTLY_Q6_K,
    ),
    "q4_k": MatrixType(
        np.float16,
        gguf.GGMLQuantizationType.Q4_K,
        gguf.GGMLQuantizationType.BF16,
        gguf.LlamaFileType.MOSTLY_Q4_K_M,
        more_bits=gguf.GGMLQuantizationType.Q6_K,
    ),
}
"""`matrix_type` option → storage. The quantized types shrink what the talker and predictor
read per step, which sets their CPU time (they are memory-bound). bf16 holds the release's
bf16 weights exactly, as f16 does all but their tiniest, and ggml rounds the activations to
bf16 instead of fp16; where the CPU has bf16 dot products (AVX512_BF16, where
AUTO_MATRIX_TYPE picks it) the prompt's prefill runs 1.2-1.6x and a whole request 1.06x as
fast as f16 (docs/benchmarks.md, "Qwen3-TTS in bf16 where the CPU has bf16 dot products").
q8_0 is Q8_0 (blocks of 32 8-bit values, 8.5 bits a weight), q6_k llama.cpp's Q6_K file
(every matrix Q6_K, 6.56 bits) and q4_k its Q4_K_M mix, the usual 4-bit one (Q4_K, 4.5 bits;
Q6_K for the output head and for attn_v and ffn_down in about half of the layers,
`gguf_files.block_type`). In all but f32 the predictor's `ffn_down` is BF16 (f16 too: its
activations overflow fp16) and the tables f16 (rows looked up, and the predictor's heads,
multiplied in torch). 0.6B on 2 cores, raw loop, f16 / q8_0 / q6_k / q4_k: talker 26 / 20 /
17 / 14 ms a step, predictor 81 / 60 / 55 / 44 ms a frame (f16 with its ffn_down still F32;
BF16 makes it 1.15–1.19x faster); logits drift from f32 by 1e-3 / 3e-2 / 9e-2 / 2.5e-1 of
their largest on random weights (docs/benchmarks.md, "4- and 6-bit options")."""
AUTO_MATRIX_TYPE = "auto"
"""The default `matrix_type`: bf16 where llama.cpp runs the stacks on a CPU with bf16 dot
products, f16 elsewhere (`stored_matrix_type`). Both store the same bytes."""
NATIVE_BF16_FEATURE = "AVX512_BF16"
"""The CPU feature (`llm.build.system_features`) with which ggml multiplies BF16 matrices in one
instruction per 32 values (`_mm512_dpbf16_ps`) where F16 ones take a conversion of each: Zen 4
and 5, Intel from Cooper Lake and Sapphire Rapids. Elsewhere (AVX2-only x86 like the N100,
ARM) f16 stays: bf16 was not measured there, and f16 is what llama.cpp's converter writes."""


def stored_matrix_type(matrix_type: str, device: Device) -> str:
    """The `MATRIX_TYPES` key that option `matrix_type` stores on `device`: itself, or for
    AUTO_MATRIX_TYPE bf16 or f16 (the same bytes, so estimates need not ask)."""
    if matrix_type != AUTO_MATRIX_TYPE:
        return matrix_type
    from ...llm import build  # imports llama.cpp: only when a model really loads

    on_cpu = device.llama_device is None
    return "bf16" if on_cpu and NATIVE_BF16_FEATURE in build.system_features() else "f16"


# ----------------------------------------------------------------------------------------------
# The release's configs


@dataclass(frozen=True)
class Qwen3TTSRuntimeConfig:
    """The config values the engine needs, read from config.json and generation_config.json."""

    tts_model_type: str
    """`custom_voice`, `base` or `voice_design`."""
    tts_model_size: str
    """`0b6` or `1b7` (qwen-tts ignores instruct for 0b6)."""
    talker_hidden: int
    """Width of every talker input row and of the text/codec/predictor tables."""
    predictor_hidden: int
    """Width of the code predictor (after `small_to_mtp_projection` when it differs)."""
    talker_vocab: int
    """Codec vocabulary: codebook ids, then 1024 special ids."""
    text_vocab: int
    """Rows of the text table."""
    codebook_size: int
    num_code_groups: int
    """Codes per 12.5 Hz frame: code 0 from the talker, the rest from the predictor."""
    im_start_id: int
    im_end_id: int
    assistant_id: int | None
    """`assistant_token_id` when config.json names it (the real ones do: 77091)."""
    tts_pad_id: int
    tts_bos_id: int
    tts_eos_id: int
    codec_pad_id: int
    codec_bos_id: int
    codec_eos_id: int
    codec_think_id: int
    codec_nothink_id: int
    codec_think_bos_id: int
    codec_think_eos_id: int
    languages: dict[str, int]
    """codec_language_id: language name (`english`, `sichuan_dialect`, …) → codec id."""
    speakers: dict[str, int]
    """spk_id: lower-case speaker name → codec id (empty for Base and VoiceDesign)."""
    dialects: dict[str, str]
    """Speakers whose Chinese is a dialect (spk_is_dialect): name → language name."""
    generation: dict[str, Any]
    """Sampling defaults: generation_config.json over qwen-tts's fallbacks."""
    sample_rate: int
    """Output rate of the speech tokenizer, Hz."""
    samples_per_frame: int
    """decode_upsample_rate: audio samples per frame."""
    has_mtp_projection: bool
    """The tables hold `mtp_projection_weight/bias` (predictor narrower than the talker)."""

    @property
    def suppressed_from(self) -> int:
        """First codec id the talker may not sample (except `codec_eos_id`)."""
        return self.talker_vocab - SUPPRESSED_CODEC_IDS


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object of the release, or a ConvertError naming the file."""
    return read_json_object(path, ADVICE)


def required(doc: Mapping[str, Any], key: str, path: Path, prefix: str = "") -> Any:
    """`doc[key]`, or a ConvertError naming the file and the dotted key."""
    if key not in doc or doc[key] is None:
        raise ConvertError(f"{path} lacks {prefix}{key}; {ADVICE}")
    return doc[key]


def section(doc: Mapping[str, Any], key: str, model_dir: Path, prefix: str = "") -> dict[str, Any]:
    """The object `doc[key]` of config.json (`talker_config`, …)."""
    value = required(doc, key, model_dir / "config.json", prefix)
    if not isinstance(value, dict):
        raise ConvertError(f"{model_dir / 'config.json'}: {prefix}{key} is not an object")
    return value


def read_generation(model_dir: Path) -> dict[str, Any] | None:
    """generation_config.json, or None when the release has none."""
    path = model_dir / "generation_config.json"
    return read_json(path) if path.exists() else None


def runtime_config(
    raw: Mapping[str, Any], generation: Mapping[str, Any] | None, model_dir: Path
) -> Qwen3TTSRuntimeConfig:
    """The engine's view of config.json (+ generation_config.json, speech_tokenizer/config.json)."""
    path = model_dir / "config.json"
    _check_model_type(raw, path)
    talker = section(raw, "talker_config", model_dir)
    predictor = section(talker, "code_predictor_config", model_dir, "talker_config.")

    def top(key: str) -> Any:
        return required(raw, key, path)

    def tk(key: str) -> Any:
        return required(talker, key, path, "talker_config.")

    def pk(key: str) -> Any:
        return required(predictor, key, path, "talker_config.code_predictor_config.")

    languages, speakers, dialects = _voices(talker, path)
    num_code_groups = int(tk("num_code_groups"))
    sample_rate, samples_per_frame = _speech_tokenizer(model_dir, num_code_groups)
    talker_vocab = int(tk("vocab_size"))
    codebook_size = int(pk("vocab_size"))
    if talker_vocab != codebook_size + SUPPRESSED_CODEC_IDS:
        raise ConvertError(
            f"{path}: talker_config.vocab_size {talker_vocab} is not the codebook size "
            f"{codebook_size} + {SUPPRESSED_CODEC_IDS} that qwen-tts's sampling assumes"
        )
    gen = dict(generation or {})
    return Qwen3TTSRuntimeConfig(
        tts_model_type=str(top("tts_model_type")),
        tts_model_size=str(raw.get("tts_model_size") or ""),
        talker_hidden=int(tk("hidden_size")),
        predictor_hidden=int(pk("hidden_size")),
        talker_vocab=talker_vocab,
        text_vocab=int(tk("text_vocab_size")),
        codebook_size=codebook_size,
        num_code_groups=num_code_groups,
        im_start_id=int(top("im_start_token_id")),
        im_end_id=int(top("im_end_token_id")),
        assistant_id=(
            None if raw.get("assistant_token_id") is None else int(raw["assistant_token_id"])
        ),
        tts_pad_id=int(top("tts_pad_token_id")),
        tts_bos_id=int(top("tts_bos_token_id")),
        tts_eos_id=int(top("tts_eos_token_id")),
        codec_pad_id=int(tk("codec_pad_id")),
        codec_bos_id=int(tk("codec_bos_id")),
        codec_eos_id=int(tk("codec_eos_token_id")),
        codec_think_id=int(tk("codec_think_id")),
        codec_nothink_id=int(tk("codec_nothink_id")),
        codec_think_bos_id=int(tk("codec_think_bos_id")),
        codec_think_eos_id=int(tk("codec_think_eos_id")),
        languages=languages,
        speakers=speakers,
        dialects=dialects,
        generation={key: gen.get(key, value) for key, value in GENERATION_FALLBACKS.items()},
        sample_rate=sample_rate,
        samples_per_frame=samples_per_frame,
        has_mtp_projection=int(pk("hidden_size")) != int(tk("hidden_size")),
    )


def _check_model_type(raw: Mapping[str, Any], path: Path) -> None:
    """ConvertError unless config.json is a 12 Hz Qwen3-TTS model's."""
    if raw.get("model_type") != MODEL_TYPE:
        raise ConvertError(
            f"{path} has model_type {raw.get('model_type')!r}, not '{MODEL_TYPE}': "
            "point the catalog at a Qwen3-TTS model folder"
        )
    if raw.get("tokenizer_type") != TOKENIZER_TYPE:
        raise ConvertError(
            f"{path} uses speech tokenizer {raw.get('tokenizer_type')!r}; only the 12 Hz "
            f"models ({TOKENIZER_TYPE}, the released ones) are supported"
        )


def _voices(
    talker: Mapping[str, Any], path: Path
) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """talker_config's languages, speakers and dialect speakers (lower-case names)."""
    rope = talker.get("rope_scaling") or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise ConvertError(
            f"{path}: talker_config.rope_scaling.rope_type {rope.get('rope_type')!r} is "
            "not supported (the released models use 'default')"
        )
    speakers = {
        str(name).lower(): _codec_id(value, f"talker_config.spk_id.{name}", path)
        for name, value in (talker.get("spk_id") or {}).items()
    }
    dialects = {
        str(name).lower(): str(value)
        for name, value in (talker.get("spk_is_dialect") or {}).items()
        if value
    }
    language_ids = required(talker, "codec_language_id", path, "talker_config.")
    languages = {str(k).lower(): int(v) for k, v in language_ids.items()}
    for speaker, dialect in dialects.items():
        if dialect not in languages:
            raise ConvertError(
                f"{path}: talker_config.spk_is_dialect.{speaker} names {dialect!r}, "
                "which codec_language_id lacks"
            )
    return languages, speakers, dialects


def _codec_id(value: Any, key: str, path: Path) -> int:
    """A speaker id: an int, or a one-element list of one (both appear in the wild)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConvertError(f"{path}: {key} must be a codec id, not {value!r}")
    return value


def _speech_tokenizer(model_dir: Path, num_code_groups: int) -> tuple[int, int]:
    """speech_tokenizer/config.json's output rate and samples per frame, after checking that
    its decoder takes the talker's number of codes per frame."""
    codec_path = model_dir / "speech_tokenizer" / "config.json"
    codec = read_json(codec_path)
    decoder = required(codec, "decoder_config", codec_path)
    quantizers = int(required(decoder, "num_quantizers", codec_path, "decoder_config."))
    if quantizers != num_code_groups:
        raise ConvertError(
            f"{codec_path}: decoder_config.num_quantizers differs from "
            f"talker_config.num_code_groups ({num_code_groups}); {ADVICE}"
        )
    return (
        int(required(codec, "output_sample_rate", codec_path)),
        int(required(codec, "decode_upsample_rate", codec_path)),
    )


# ----------------------------------------------------------------------------------------------
# The catalog's options


@dataclass(frozen=True)
class Qwen3Options:
    """Options of a Qwen3-TTS model (`options:` in the catalog); voices may override all but
    `matrix_type`, and `max_frames` only downwards. The sampling fields of `SamplingConfig`
    (`temperature`, `top_k`, `top_p`, `repetition_penalty`, `seed`, …) set the talker's sampler;
    their defaults, like the subtalker's here, come from the model's generation_config.json."""

    max_frames: int = 1024
    """Most frames per text piece (12.5 per second: 1024 ≈ 82 s); sizes the talker's context.
    Each piece is also capped at FRAMES_PER_TEXT_TOKEN per text token (the runaway guard)."""
    matrix_type: str = AUTO_MATRIX_TYPE
    """Weights of the converted GGUFs and tables: `auto` (16 bits: bf16 on CPUs with bf16 dot
    products, else f16), `f16`, `bf16`, `f32` (exact, twice the memory), or talker and
    predictor matrices in `q8_0` (8-bit), `q6_k` or `q4_k` (llama.cpp's Q6_K and Q4_K_M) with
    f16 tables: faster on CPUs (MATRIX_TYPES)."""
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
    """Streaming: -1 carries the decoder's state from window to window (its causal convolutions'
    last inputs, the attention's last 71 keys and values), so each window computes only its new
    frames and the stream equals one whole decode; n >= 0 re-decodes n frames of left context
    per window instead (25 frames, the official chunking, is close but not exact)."""
    first_chunk_frames: int = 4
    """Frames in the first streamed window (4 = 320 ms, the paper's packet)."""
    max_chunk_frames: int = 32
    """Later windows double up to this many frames (with state carried, a window's size changes
    only how efficiently each call runs, not what it computes)."""

    def __post_init__(self) -> None:
        if self.max_frames < 1:
            raise ValueError("max_frames must be at least 1")
        choices = (AUTO_MATRIX_TYPE, *MATRIX_TYPES)
        if self.matrix_type not in choices:
            raise ValueError(
                f"matrix_type must be one of {', '.join(choices)}, not {self.matrix_type!r}"
            )
        if self.context_frames < -1 or self.first_chunk_frames < 1:
            raise ValueError("context_frames must be >= -1 and first_chunk_frames >= 1")
        if self.max_chunk_frames < self.first_chunk_frames:
            raise ValueError("max_chunk_frames must be >= first_chunk_frames")
        if self.reference_silence < 0:
            raise ValueError("reference_silence must be >= 0")
        SamplingConfig(self.subtalker_temperature, self.subtalker_top_k, self.subtalker_top_p)


def generation_defaults(config: Qwen3TTSRuntimeConfig) -> tuple[SamplingConfig, Qwen3Options]:
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
