"""Convert an official Qwen3-TTS 12 Hz snapshot, once, into what the qwen3tts engine runs.

The release (`Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice` and siblings) is a Hugging Face folder:
`config.json`, `generation_config.json`, `model.safetensors` (bf16), a Qwen2 BPE tokenizer
(`vocab.json`, `merges.txt`, `tokenizer_config.json`) and `speech_tokenizer/`. The engine runs
the two transformer stacks through llama.cpp as stock `qwen3` models fed with embedding rows
(docs engines-qwen3-bark.md A3, A7 route 2) and does the small table work in numpy, so
`convert` writes into `out_dir`:

* `talker.gguf`: the talker's layers and final norm (`talker.model.*`); `token_embd` is
  `talker.model.codec_embedding`, `output` is `talker.codec_head` (logits over the codec ids).
  The talker's M-RoPE gets the same position in all three sections during TTS, which is plain
  1-D NEOX RoPE, what llama.cpp's `qwen3` applies.
* `code_predictor.gguf`: the code predictor's layers and norm. Its `token_embd` is a zero
  placeholder (llama.cpp requires one) and it has no `output`, so its logits are meaningless:
  apply `predictor_heads` from the tables to its hidden state. `ffn_down` stays F32 (BF16 with
  `matrix_type: q8_0`) because the predictor's MLP activations reach ~1.5e5, past fp16
  (llama.cpp's own converter keeps it F32 too, A7).
* `text_tokenizer.gguf`: a vocabulary-only `gpt2`/`qwen2` GGUF built from vocab.json,
  merges.txt and tokenizer_config.json's added tokens; llama.cpp tokenizes text with it exactly
  like the release's Qwen2 tokenizer when special tokens are parsed (`parse_special=True`;
  Hugging Face always splits added tokens out).
* `tables.npz` (uncompressed): the text table pre-folded through `text_projection`, the
  `tts_pad/bos/eos` embeddings, the codec embedding, the predictor's input tables and heads, and
  `small_to_mtp_projection` when the predictor is narrower than the talker (1.7B).
* `qwen3tts.json`: the manifest: converter version, source fingerprint, and the config values
  the engine needs (`Qwen3TTSRuntimeConfig`).

Talker and predictor GGUFs have no tokenizer (`tokenizer.ggml.model = none`, like the
WavTokenizer vocoder): both only ever see embedding rows. Conversion is cached: a second call
with an unchanged source, converter version and matrix type returns at once; anything else
rebuilds. Files are written under temporary names and renamed, the manifest last, so an
interrupted conversion is never mistaken for a finished one.

Tensor names: qwen-tts 0.1.1 `core/models/modeling_qwen3_tts.py` (cross-checked against the
state dict of a model built by qwen-tts in tests/test_qwen3tts_convert.py).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from ...errors import VoiceError
from ...gguf_writer import GgufTensor, write_gguf

_LOGGER = logging.getLogger(__name__)

CONVERTER_VERSION = 1
"""Bump when the output changes: every cached conversion is then rebuilt on next load."""

MANIFEST = "qwen3tts.json"
TALKER_GGUF = "talker.gguf"
PREDICTOR_GGUF = "code_predictor.gguf"
TOKENIZER_GGUF = "text_tokenizer.gguf"
TABLES_NPZ = "tables.npz"
PARTIAL_SUFFIX = ".partial"
"""Files being written are `.NAME.PID.partial` until renamed; one conversion per folder at a time
(an interrupted one's leftovers are deleted when the next starts)."""

SOURCE_FILES = (
    "config.json",
    "generation_config.json",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
)
"""Files of the snapshot the conversion reads besides the weights (fingerprinted for the cache)."""

WEIGHTS = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
"""Single-file weights, or the index of a sharded download (some snapshots carry one)."""


@dataclass(frozen=True)
class MatrixType:
    """What a `matrix_type` stores: the GGUF weight matrices and the looked-up tables."""

    dtype: type
    """The tables, and the matrices that are not quantized."""
    quant: gguf.GGMLQuantizationType | None
    """Block type of the talker's and predictor's matrices; None: `dtype`."""
    wide_range: gguf.GGMLQuantizationType | None
    """Type of the predictor's `ffn_down`, whose inputs exceed fp16 (see _write_predictor);
    None: F32."""
    file_type: gguf.LlamaFileType
    """`general.file_type` of the talker and predictor GGUFs."""


MATRIX_TYPES = {
    "f16": MatrixType(np.float16, None, None, gguf.LlamaFileType.MOSTLY_F16),
    "f32": MatrixType(np.float32, None, None, gguf.LlamaFileType.ALL_F32),
    "q8_0": MatrixType(
        np.float16,
        gguf.GGMLQuantizationType.Q8_0,
        gguf.GGMLQuantizationType.BF16,
        gguf.LlamaFileType.MOSTLY_Q8_0,
    ),
}
"""`matrix_type` option → storage. q8_0 (8-bit blocks of 32 with an fp16 scale, 8.5 bits a
weight) halves what the talker and predictor read per step, which is their CPU time: they are
memory-bound (0.6B on 2 cores: talker 33 → 22 ms a step, predictor 115 → 73 ms a frame).
Its tables stay f16 (rows are looked up, never multiplied)."""

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

FOLD_ROWS = 4096
"""Text-table rows pushed through text_projection at a time (2048-wide: 32 MB of float32)."""

TEXT_TABLE_F16_LIMIT = 60000.0
"""Largest folded text value stored as float16 (max 65504); a larger one keeps float32."""

SAFETENSORS_DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}
"""safetensors storage types we read (all become float32)."""

ADVICE = (
    "the download is incomplete or is not a Qwen3-TTS 12 Hz snapshot; download it again, e.g. "
    "`hf download Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice --local-dir DIR`"
)


class ConvertError(VoiceError):
    """The snapshot cannot be converted; the message names the folder, the missing file, key or
    tensor, and what to do."""


# ----------------------------------------------------------------------------------------------
# What the engine gets


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


@dataclass(frozen=True)
class ConvertedQwen3TTS:
    """Where a conversion put its files, and the config the engine runs with."""

    directory: Path
    talker: Path
    code_predictor: Path
    text_tokenizer: Path
    tables: Path
    config: Qwen3TTSRuntimeConfig
    reused: bool
    """True when an earlier conversion was still valid and nothing was written."""


def _result(out_dir: Path, config: Qwen3TTSRuntimeConfig, reused: bool) -> ConvertedQwen3TTS:
    return ConvertedQwen3TTS(
        directory=out_dir,
        talker=out_dir / TALKER_GGUF,
        code_predictor=out_dir / PREDICTOR_GGUF,
        text_tokenizer=out_dir / TOKENIZER_GGUF,
        tables=out_dir / TABLES_NPZ,
        config=config,
        reused=reused,
    )


# ----------------------------------------------------------------------------------------------
# Converting


def convert(
    model_dir: Path, out_dir: Path, where: str, *, matrix_type: str = "f16"
) -> ConvertedQwen3TTS:
    """Convert the snapshot in `model_dir` into `out_dir`, or reuse an earlier conversion.

    `where` (e.g. "model qwen3tts-0.6b") starts every error message. `matrix_type` is "f16"
    (llama.cpp's usual choice; bf16 weights lose nothing that matters), "f32" (exact, twice
    the size; tests compare against qwen-tts with it) or "q8_0" (8-bit, faster on CPUs; see
    MATRIX_TYPES). Takes about a minute for 0.6B on 2 cores, most of it folding the 151936-row
    text table.
    """
    if matrix_type not in MATRIX_TYPES:
        raise ValueError(
            f"matrix_type must be one of {', '.join(MATRIX_TYPES)}, not {matrix_type!r}"
        )
    model_dir = Path(model_dir)
    out_dir = Path(out_dir)
    raw = _read_json(model_dir / "config.json", where)
    config = runtime_config(raw, _read_generation(model_dir, where), model_dir, where)
    weights = SafetensorsFiles.open(model_dir, where)
    fingerprint = _fingerprint(model_dir, weights.paths)
    stamp = {
        "converter_version": CONVERTER_VERSION,
        "matrix_type": matrix_type,
        "source": fingerprint,
    }

    manifest = _read_manifest(out_dir / MANIFEST)
    files = (TALKER_GGUF, PREDICTOR_GGUF, TOKENIZER_GGUF, TABLES_NPZ)
    if manifest is not None and manifest.get("stamp") == stamp:
        if all((out_dir / name).is_file() for name in files):
            _LOGGER.debug("%s: reusing the conversion in %s", where, out_dir)
            return _result(out_dir, config, reused=True)

    start = time.monotonic()
    _LOGGER.info(
        "%s: converting Qwen3-TTS %s %s from %s into %s (once; about a minute for 0.6B)",
        where,
        config.tts_model_type,
        config.tts_model_size,
        model_dir,
        out_dir,
    )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConvertError(
            f"{where}: cannot create {out_dir} ({err}); check its permissions"
        ) from err
    (out_dir / MANIFEST).unlink(missing_ok=True)  # the old stamp no longer describes the files
    for stale in out_dir.glob(f".*{PARTIAL_SUFFIX}"):  # left by an interrupted conversion
        stale.unlink(missing_ok=True)
    talker, predictor = _stacks(raw, model_dir, where)
    _check_tensors(weights, config, raw, talker, predictor, model_dir, where)
    matrix = MATRIX_TYPES[matrix_type]

    _write_step(
        out_dir, TALKER_GGUF, where, lambda p: _write_talker(p, weights, config, talker, matrix)
    )
    _write_step(
        out_dir,
        PREDICTOR_GGUF,
        where,
        lambda p: _write_predictor(p, weights, config, predictor, matrix),
    )
    _write_step(
        out_dir,
        TOKENIZER_GGUF,
        where,
        lambda p: _write_tokenizer(p, model_dir, config, talker, where),
    )
    _write_step(
        out_dir,
        TABLES_NPZ,
        where,
        lambda p: _write_tables(p, weights, config, matrix.dtype, where),
    )
    _write_step(
        out_dir,
        MANIFEST,
        where,
        lambda p: p.write_text(
            json.dumps({"stamp": stamp, "config": dataclasses.asdict(config)}, indent=2) + "\n",
            encoding="utf-8",
        ),
    )
    _LOGGER.info("%s: conversion done in %.1f s (%s)", where, time.monotonic() - start, out_dir)
    return _result(out_dir, config, reused=False)


def _write_step(out_dir: Path, name: str, where: str, write: Callable[[Path], object]) -> None:
    """Write `out_dir/name` under a temporary name, then rename it; log the time it took."""
    final = out_dir / name
    partial = out_dir / f".{name}.{os.getpid()}{PARTIAL_SUFFIX}"
    start = time.monotonic()
    try:
        write(partial)
        os.replace(partial, final)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise ConvertError(
            f"{where}: cannot write {final} ({err}); check the free space and permissions of "
            f"{out_dir}"
        ) from err
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _LOGGER.info(
        "%s: wrote %s (%.1f MB) in %.1f s",
        where,
        final.name,
        final.stat().st_size / 1e6,
        time.monotonic() - start,
    )


# ----------------------------------------------------------------------------------------------
# Reading the snapshot's configs


def _read_json(path: Path, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ConvertError(f"{where}: {path} is missing; {ADVICE}") from err
    except (OSError, ValueError) as err:
        raise ConvertError(f"{where}: cannot read {path} ({err}); {ADVICE}") from err
    if not isinstance(doc, dict):
        raise ConvertError(f"{where}: {path} is not a JSON object; {ADVICE}")
    return doc


def _key(doc: Mapping[str, Any], key: str, path: Path, where: str, prefix: str = "") -> Any:
    """`doc[key]`, or a ConvertError naming the file and the dotted key."""
    if key not in doc or doc[key] is None:
        raise ConvertError(f"{where}: {path} lacks {prefix}{key}; {ADVICE}")
    return doc[key]


def _section(
    doc: Mapping[str, Any], key: str, model_dir: Path, where: str, prefix: str = ""
) -> dict[str, Any]:
    value = _key(doc, key, model_dir / "config.json", where, prefix)
    if not isinstance(value, dict):
        raise ConvertError(f"{where}: {model_dir / 'config.json'}: {prefix}{key} is not an object")
    return value


def runtime_config(
    raw: Mapping[str, Any], generation: Mapping[str, Any] | None, model_dir: Path, where: str
) -> Qwen3TTSRuntimeConfig:
    """The engine's view of config.json (+ generation_config.json, speech_tokenizer/config.json)."""
    path = model_dir / "config.json"
    if raw.get("model_type") != "qwen3_tts":
        raise ConvertError(
            f"{where}: {path} has model_type {raw.get('model_type')!r}, not 'qwen3_tts': "
            "point the catalog at a Qwen3-TTS model folder"
        )
    if raw.get("tokenizer_type") != "qwen3_tts_tokenizer_12hz":
        raise ConvertError(
            f"{where}: {path} uses speech tokenizer {raw.get('tokenizer_type')!r}; only the 12 Hz "
            "models (qwen3_tts_tokenizer_12hz, the released ones) are supported"
        )
    talker = _section(raw, "talker_config", model_dir, where)
    predictor = _section(talker, "code_predictor_config", model_dir, where, "talker_config.")

    def top(key: str) -> Any:
        return _key(raw, key, path, where)

    def tk(key: str) -> Any:
        return _key(talker, key, path, where, "talker_config.")

    def pk(key: str) -> Any:
        return _key(predictor, key, path, where, "talker_config.code_predictor_config.")

    rope = talker.get("rope_scaling") or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise ConvertError(
            f"{where}: {path}: talker_config.rope_scaling.rope_type {rope.get('rope_type')!r} is "
            "not supported (the released models use 'default')"
        )
    speakers = {
        str(name).lower(): _codec_id(value, f"talker_config.spk_id.{name}", path, where)
        for name, value in (talker.get("spk_id") or {}).items()
    }
    dialects = {
        str(name).lower(): str(value)
        for name, value in (talker.get("spk_is_dialect") or {}).items()
        if value
    }
    languages = {str(k).lower(): int(v) for k, v in tk("codec_language_id").items()}
    for speaker, dialect in dialects.items():
        if dialect not in languages:
            raise ConvertError(
                f"{where}: {path}: talker_config.spk_is_dialect.{speaker} names {dialect!r}, "
                "which codec_language_id lacks"
            )

    codec_path = model_dir / "speech_tokenizer" / "config.json"
    codec = _read_json(codec_path, where)
    decoder = _key(codec, "decoder_config", codec_path, where)
    num_code_groups = int(tk("num_code_groups"))
    if (
        int(_key(decoder, "num_quantizers", codec_path, where, "decoder_config."))
        != num_code_groups
    ):
        raise ConvertError(
            f"{where}: {codec_path}: decoder_config.num_quantizers differs from "
            f"talker_config.num_code_groups ({num_code_groups}); {ADVICE}"
        )
    talker_vocab = int(tk("vocab_size"))
    codebook_size = int(pk("vocab_size"))
    if talker_vocab != codebook_size + SUPPRESSED_CODEC_IDS:
        raise ConvertError(
            f"{where}: {path}: talker_config.vocab_size {talker_vocab} is not the codebook size "
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
        sample_rate=int(_key(codec, "output_sample_rate", codec_path, where)),
        samples_per_frame=int(_key(codec, "decode_upsample_rate", codec_path, where)),
        has_mtp_projection=int(pk("hidden_size")) != int(tk("hidden_size")),
    )


def _codec_id(value: Any, key: str, path: Path, where: str) -> int:
    """A speaker id: an int, or a one-element list of one (both appear in the wild)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConvertError(f"{where}: {path}: {key} must be a codec id, not {value!r}")
    return value


def _read_generation(model_dir: Path, where: str) -> dict[str, Any] | None:
    path = model_dir / "generation_config.json"
    return _read_json(path, where) if path.exists() else None


def _fingerprint(model_dir: Path, weight_paths: list[Path]) -> dict[str, list[int]]:
    """Size and modification time of every file the conversion reads."""
    paths = [model_dir / name for name in SOURCE_FILES] + weight_paths
    paths.append(model_dir / "speech_tokenizer" / "config.json")
    return {
        str(path.relative_to(model_dir)): [path.stat().st_size, path.stat().st_mtime_ns]
        for path in paths
        if path.exists()
    }


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def read_converted(out_dir: Path, where: str) -> ConvertedQwen3TTS:
    """An earlier conversion's files and config, without checking the source (for inspection)."""
    manifest = _read_manifest(out_dir / MANIFEST)
    if manifest is None or "config" not in manifest:
        raise ConvertError(f"{where}: {out_dir} holds no finished conversion ({MANIFEST} missing)")
    return _result(out_dir, Qwen3TTSRuntimeConfig(**manifest["config"]), reused=True)


# ----------------------------------------------------------------------------------------------
# Reading safetensors (bf16 included, without torch)


class SafetensorsFiles:
    """The tensors of `model.safetensors` (or of the shards its index names), memory-mapped."""

    def __init__(self, tensors: dict[str, tuple[Path, dict[str, Any], int]], where: str) -> None:
        self._tensors = tensors
        """name → (file, header entry, offset of the data section)."""
        self._maps: dict[Path, np.memmap] = {}
        self.where = where

    @classmethod
    def open(cls, model_dir: Path, where: str) -> "SafetensorsFiles":
        """Read the headers of the snapshot's weight file(s)."""
        index = model_dir / WEIGHTS_INDEX
        if index.exists():
            weight_map = _key(_read_json(index, where), "weight_map", index, where)
            files = sorted({model_dir / name for name in weight_map.values()})
        else:
            files = [model_dir / WEIGHTS]
        tensors: dict[str, tuple[Path, dict[str, Any], int]] = {}
        for path in files:
            header, data_start = _safetensors_header(path, where)
            tensors.update({name: (path, entry, data_start) for name, entry in header.items()})
        return cls(tensors, where)

    @property
    def paths(self) -> list[Path]:
        """The weight files."""
        return sorted({path for path, _, _ in self._tensors.values()})

    @property
    def names(self) -> list[str]:
        """Every tensor name, sorted."""
        return sorted(self._tensors)

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def shape(self, name: str) -> tuple[int, ...]:
        """Shape of tensor `name`."""
        return tuple(self._tensors[name][1]["shape"])

    def get(self, name: str) -> np.ndarray:
        """Tensor `name` as a new float32 array."""
        path, entry, data_start = self._tensors[name]
        storage = SAFETENSORS_DTYPES.get(entry["dtype"])
        if storage is None:
            raise ConvertError(
                f"{self.where}: {path}: tensor {name} is {entry['dtype']}; only "
                f"{', '.join(SAFETENSORS_DTYPES)} are supported"
            )
        if path not in self._maps:
            self._maps[path] = np.memmap(path, dtype=np.uint8, mode="r")
        begin, end = entry["data_offsets"]
        raw = self._maps[path][data_start + begin : data_start + end]
        values = raw.view(storage).reshape(entry["shape"])
        if entry["dtype"] == "BF16":  # the upper half of a float32
            return (values.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return values.astype(np.float32)  # a copy, off the memory map

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows start … stop-1 of a 2-D tensor as float32, read without loading the rest."""
        path, entry, data_start = self._tensors[name]
        cols = int(entry["shape"][1])
        storage = np.dtype(SAFETENSORS_DTYPES[entry["dtype"]])
        if path not in self._maps:
            self._maps[path] = np.memmap(path, dtype=np.uint8, mode="r")
        begin = data_start + entry["data_offsets"][0] + start * cols * storage.itemsize
        raw = self._maps[path][begin : begin + (stop - start) * cols * storage.itemsize]
        values = raw.view(storage).reshape(stop - start, cols)
        if entry["dtype"] == "BF16":
            return (values.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return values.astype(np.float32)


def _safetensors_header(path: Path, where: str) -> tuple[dict[str, Any], int]:
    """The tensor entries of a safetensors file and where its data section starts."""
    try:
        with open(path, "rb") as file:
            length = int.from_bytes(file.read(8), "little")
            if not 2 <= length <= 100_000_000:
                raise ValueError(f"implausible header length {length}")
            header = json.loads(file.read(length))
        size = path.stat().st_size
    except FileNotFoundError as err:
        raise ConvertError(f"{where}: {path} is missing; {ADVICE}") from err
    except (OSError, ValueError) as err:
        raise ConvertError(f"{where}: {path} is not a safetensors file ({err}); {ADVICE}") from err
    header.pop("__metadata__", None)
    data_start = 8 + length
    for name, entry in header.items():
        end = entry["data_offsets"][1]
        if data_start + end > size:
            raise ConvertError(
                f"{where}: {path} is truncated (tensor {name} ends past the end of the file); "
                f"{ADVICE}"
            )
    return header, data_start


# ----------------------------------------------------------------------------------------------
# Checking the weights before writing anything

LAYER_TENSORS = (
    ("attn_norm", "input_layernorm"),
    ("attn_q", "self_attn.q_proj"),
    ("attn_k", "self_attn.k_proj"),
    ("attn_v", "self_attn.v_proj"),
    ("attn_q_norm", "self_attn.q_norm"),
    ("attn_k_norm", "self_attn.k_norm"),
    ("attn_output", "self_attn.o_proj"),
    ("ffn_norm", "post_attention_layernorm"),
    ("ffn_gate", "mlp.gate_proj"),
    ("ffn_up", "mlp.up_proj"),
    ("ffn_down", "mlp.down_proj"),
)
"""llama.cpp `qwen3` block tensor ← qwen-tts decoder-layer module (both end in `.weight`)."""

TALKER_PREFIX = "talker.model"
PREDICTOR_PREFIX = "talker.code_predictor.model"


@dataclass(frozen=True)
class _Stack:
    """A Qwen3 decoder stack as config.json describes it."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    rms_eps: float
    rope_theta: float
    max_positions: int

    @classmethod
    def read(cls, cfg: Mapping[str, Any], path: Path, where: str, prefix: str) -> "_Stack":
        def key(name: str) -> Any:
            return _key(cfg, name, path, where, prefix)

        hidden, heads = int(key("hidden_size")), int(key("num_attention_heads"))
        return cls(
            hidden=hidden,
            intermediate=int(key("intermediate_size")),
            layers=int(key("num_hidden_layers")),
            heads=heads,
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            rms_eps=float(cfg.get("rms_norm_eps", 1e-6)),
            rope_theta=float(cfg.get("rope_theta", 10000.0)),
            max_positions=int(cfg.get("max_position_embeddings", 32768)),
        )

    def layer_shapes(self) -> dict[str, tuple[int, ...]]:
        """Checkpoint module (of LAYER_TENSORS) → weight shape."""
        q_dim, kv_dim = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return {
            "input_layernorm": (self.hidden,),
            "self_attn.q_proj": (q_dim, self.hidden),
            "self_attn.k_proj": (kv_dim, self.hidden),
            "self_attn.v_proj": (kv_dim, self.hidden),
            "self_attn.q_norm": (self.head_dim,),
            "self_attn.k_norm": (self.head_dim,),
            "self_attn.o_proj": (self.hidden, q_dim),
            "post_attention_layernorm": (self.hidden,),
            "mlp.gate_proj": (self.intermediate, self.hidden),
            "mlp.up_proj": (self.intermediate, self.hidden),
            "mlp.down_proj": (self.hidden, self.intermediate),
        }


def _expected_tensors(
    config: Qwen3TTSRuntimeConfig, talker: _Stack, predictor: _Stack, text_hidden: int
) -> dict[str, tuple[int, ...]]:
    """Every tensor the conversion reads, with its shape."""
    hidden, pred_hidden = config.talker_hidden, config.predictor_hidden
    expected: dict[str, tuple[int, ...]] = {}
    for stack, prefix in ((talker, TALKER_PREFIX), (predictor, PREDICTOR_PREFIX)):
        for i in range(stack.layers):
            for module, shape in stack.layer_shapes().items():
                expected[f"{prefix}.layers.{i}.{module}.weight"] = shape
        expected[f"{prefix}.norm.weight"] = (stack.hidden,)
    expected.update(
        {
            "talker.model.codec_embedding.weight": (config.talker_vocab, hidden),
            "talker.model.text_embedding.weight": (config.text_vocab, text_hidden),
            "talker.text_projection.linear_fc1.weight": (text_hidden, text_hidden),
            "talker.text_projection.linear_fc1.bias": (text_hidden,),
            "talker.text_projection.linear_fc2.weight": (hidden, text_hidden),
            "talker.text_projection.linear_fc2.bias": (hidden,),
            "talker.codec_head.weight": (config.talker_vocab, hidden),
        }
    )
    for i in range(config.num_code_groups - 1):
        expected[f"{PREDICTOR_PREFIX}.codec_embedding.{i}.weight"] = (config.codebook_size, hidden)
        expected[f"talker.code_predictor.lm_head.{i}.weight"] = (config.codebook_size, pred_hidden)
    if config.has_mtp_projection:
        expected["talker.code_predictor.small_to_mtp_projection.weight"] = (pred_hidden, hidden)
        expected["talker.code_predictor.small_to_mtp_projection.bias"] = (pred_hidden,)
    return expected


def _check_tensors(
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    raw: Mapping[str, Any],
    talker: _Stack,
    predictor: _Stack,
    model_dir: Path,
    where: str,
) -> None:
    """ConvertError naming the first missing or misshapen tensor, before anything is written."""
    text_hidden = int(
        _key(raw["talker_config"], "text_hidden_size", model_dir / "config.json", where)
    )
    for name, shape in _expected_tensors(config, talker, predictor, text_hidden).items():
        if name not in weights:
            raise ConvertError(
                f"{where}: {model_dir}: the weights have no tensor {name!r} (needed for a "
                f"{config.tts_model_type} model); {ADVICE}"
            )
        if weights.shape(name) != shape:
            raise ConvertError(
                f"{where}: {model_dir}: tensor {name!r} has shape {list(weights.shape(name))}, "
                f"config.json implies {list(shape)}; the weights do not match config.json"
            )


def _stacks(raw: Mapping[str, Any], model_dir: Path, where: str) -> tuple[_Stack, _Stack]:
    path = model_dir / "config.json"
    talker_cfg = _section(raw, "talker_config", model_dir, where)
    predictor_cfg = _section(
        talker_cfg, "code_predictor_config", model_dir, where, "talker_config."
    )
    return (
        _Stack.read(talker_cfg, path, where, "talker_config."),
        _Stack.read(predictor_cfg, path, where, "talker_config.code_predictor_config."),
    )


# ----------------------------------------------------------------------------------------------
# GGUF files


def _add_hparams(
    writer: gguf.GGUFWriter, stack: _Stack, n_vocab: int, name: str, file_type: gguf.LlamaFileType
) -> None:
    """llama.cpp `qwen3` hyper-parameters (head size said explicitly: 128 ≠ hidden / heads)."""
    writer.add_name(name)
    writer.add_file_type(file_type)
    writer.add_vocab_size(n_vocab)
    writer.add_context_length(stack.max_positions)
    writer.add_embedding_length(stack.hidden)
    writer.add_block_count(stack.layers)
    writer.add_feed_forward_length(stack.intermediate)
    writer.add_head_count(stack.heads)
    writer.add_head_count_kv(stack.kv_heads)
    writer.add_key_length(stack.head_dim)
    writer.add_value_length(stack.head_dim)
    writer.add_rope_dimension_count(stack.head_dim)
    writer.add_rope_freq_base(stack.rope_theta)
    writer.add_layer_norm_rms_eps(stack.rms_eps)


def _no_tokenizer(writer: gguf.GGUFWriter) -> None:
    """These GGUFs only ever see embedding rows (like the WavTokenizer vocoder)."""
    writer.add_tokenizer_model("none")


def _layer_tensors(
    weights: SafetensorsFiles,
    stack: _Stack,
    prefix: str,
    matrix: MatrixType,
    wide_range_modules: tuple[str, ...] = (),
) -> list[GgufTensor]:
    """Every block's tensors: norms (1-D) F32, `wide_range_modules` `matrix.wide_range`, the
    other matrices `matrix`."""
    tensors = []
    shapes = stack.layer_shapes()
    for i in range(stack.layers):
        for gguf_name, module in LAYER_TENSORS:
            name = f"blk.{i}.{gguf_name}.weight"
            load = _loader(weights, f"{prefix}.layers.{i}.{module}.weight")
            shape = shapes[module]
            if len(shape) == 1:
                tensors.append(GgufTensor(name, shape, np.float32, load))
            elif module in wide_range_modules:
                tensors.append(GgufTensor(name, shape, np.float32, load, matrix.wide_range))
            else:
                tensors.append(_matrix(name, shape, matrix, load))
    return tensors


def _matrix(
    name: str, shape: tuple[int, ...], matrix: MatrixType, load: Callable[[], np.ndarray]
) -> GgufTensor:
    """A weight matrix stored as `matrix` says. Quantized rows must be whole blocks (32 values
    for Q8_0): every width of the released models is, but a matrix whose rows are not (the tiny
    test models' 16-wide predictor) falls back to `matrix.dtype` (f16) rather than failing."""
    quant = matrix.quant
    if quant is not None and shape[-1] % gguf.GGML_QUANT_SIZES[quant][0]:
        _LOGGER.info(
            "%s: rows of %d values are not whole %s blocks; storing it as %s",
            name,
            shape[-1],
            quant.name,
            np.dtype(matrix.dtype).name,
        )
        quant = None
    return GgufTensor(name, shape, matrix.dtype, load, quant)


def _loader(weights: SafetensorsFiles, name: str) -> Callable[[], np.ndarray]:
    return lambda: weights.get(name)


def _write_talker(
    path: Path,
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    stack: _Stack,
    matrix: MatrixType,
) -> None:
    hidden, vocab = config.talker_hidden, config.talker_vocab
    tensors = [
        _matrix(
            "token_embd.weight",
            (vocab, hidden),
            matrix,
            _loader(weights, "talker.model.codec_embedding.weight"),
        ),
        *_layer_tensors(weights, stack, TALKER_PREFIX, matrix),
        _matrix(
            "output.weight", (vocab, hidden), matrix, _loader(weights, "talker.codec_head.weight")
        ),
    ]
    _write_stack(path, weights, stack, vocab, matrix, TALKER_PREFIX, "Qwen3-TTS talker", tensors)


def _write_predictor(
    path: Path,
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    stack: _Stack,
    matrix: MatrixType,
) -> None:
    hidden, vocab = config.predictor_hidden, config.codebook_size
    tensors = [
        # llama.cpp's qwen3 loader requires token_embd (and ties output to it); inputs are
        # always embedding rows, so a zero placeholder of the codebook's size does
        _matrix("token_embd.weight", (vocab, hidden), matrix, lambda: np.zeros((vocab, hidden))),
        # ffn_down multiplies the MLP activations, which reach ~1.5e5 in the released predictor,
        # and llama.cpp's CPU matmul first converts the activations to the weights' partner
        # type: fp16 for F16 weights (overflows past 65504), Q8_0 blocks for Q8_0 weights (32
        # values share one scale, so a 1.5e5 outlier gives its 31 neighbours a step of ~1.2e3
        # and rounds most of them to zero). So f16 keeps ffn_down F32, and q8_0 stores it BF16:
        # lossless for the bf16 release, and bf16 activations keep each value's own exponent,
        # rounded to what qwen-tts computes in when run in bf16. Measured (0.6B, 2 cores, q8_0
        # elsewhere): F32 86, BF16 73, Q8_0 68 ms a frame.
        *_layer_tensors(
            weights, stack, PREDICTOR_PREFIX, matrix, wide_range_modules=("mlp.down_proj",)
        ),
    ]
    name = "Qwen3-TTS code predictor"
    _write_stack(path, weights, stack, vocab, matrix, PREDICTOR_PREFIX, name, tensors)


def _write_stack(
    path: Path,
    weights: SafetensorsFiles,
    stack: _Stack,
    vocab: int,
    matrix: MatrixType,
    prefix: str,
    name: str,
    tensors: list[GgufTensor],
) -> None:
    """A plain `qwen3` GGUF of `tensors` plus the stack's final norm (`{prefix}.norm.weight`),
    with its hyper-parameters and no tokenizer: the talker and the code predictor alike."""
    norm = GgufTensor(
        "output_norm.weight", (stack.hidden,), np.float32, _loader(weights, f"{prefix}.norm.weight")
    )

    def metadata(writer: gguf.GGUFWriter) -> None:
        _add_hparams(writer, stack, vocab, name, matrix.file_type)
        _no_tokenizer(writer)

    write_gguf(path, "qwen3", metadata, [*tensors, norm])


def _write_tokenizer(
    path: Path,
    model_dir: Path,
    config: Qwen3TTSRuntimeConfig,
    stack: _Stack,
    where: str,
) -> None:
    """A vocabulary-only GGUF (no tensors) with the snapshot's Qwen2 tokenizer; its hyper-
    parameters are the talker's (llama.cpp reads them even when it loads the vocabulary only)."""
    tokens, types = _text_tokens(model_dir, config.text_vocab, where)
    merges = _read_merges(model_dir / "merges.txt", where)
    token_id = {token: i for i, token in enumerate(tokens)}

    def metadata(writer: gguf.GGUFWriter) -> None:
        _add_hparams(
            writer, stack, len(tokens), "Qwen3-TTS text tokenizer", gguf.LlamaFileType.MOSTLY_F16
        )
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre("qwen2")
        writer.add_token_list(tokens)
        writer.add_token_types(types)
        writer.add_token_merges(merges)
        end_of_text = token_id.get("<|endoftext|>", config.im_end_id)
        writer.add_bos_token_id(end_of_text)  # as llama.cpp's converter writes Qwen2's
        writer.add_eos_token_id(config.im_end_id)
        writer.add_pad_token_id(end_of_text)
        writer.add_add_bos_token(False)
        writer.add_add_eos_token(False)

    write_gguf(path, "qwen3", metadata, [])


def _text_tokens(model_dir: Path, n_vocab: int, where: str) -> tuple[list[str], list[int]]:
    """Token strings and types by id: vocab.json (NORMAL), added tokens (CONTROL when special,
    else USER_DEFINED, as llama.cpp's converter marks them), `[PADn]` (UNUSED) up to n_vocab."""
    vocab_path = model_dir / "vocab.json"
    config_path = model_dir / "tokenizer_config.json"
    vocab = _read_json(vocab_path, where)
    added = _key(_read_json(config_path, where), "added_tokens_decoder", config_path, where)
    tokens: list[str | None] = [None] * n_vocab
    types = [int(gguf.TokenType.UNUSED)] * n_vocab
    entries = [(int(i), token, gguf.TokenType.NORMAL, vocab_path) for token, i in vocab.items()]
    entries += [
        (
            int(i),
            entry["content"],
            gguf.TokenType.CONTROL if entry.get("special", False) else gguf.TokenType.USER_DEFINED,
            config_path,
        )
        for i, entry in added.items()
    ]
    for i, token, kind, source in entries:
        if not 0 <= i < n_vocab:
            raise ConvertError(
                f"{where}: {source}: token {token!r} has id {i}, outside the text table's "
                f"{n_vocab} rows (talker_config.text_vocab_size); {ADVICE}"
            )
        tokens[i] = token
        types[i] = int(kind)
    return [f"[PAD{i}]" if token is None else token for i, token in enumerate(tokens)], types


def _read_merges(path: Path, where: str) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConvertError(f"{where}: cannot read {path} ({err}); {ADVICE}") from err
    return [line for line in lines if line and not line.startswith("#version")]


# ----------------------------------------------------------------------------------------------
# The numpy tables


class _Float16Overflow(Exception):
    """A folded text value does not fit float16."""


def _write_tables(
    path: Path,
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    dtype: type,
    where: str,
) -> None:
    """tables.npz; the text table falls back to float32 if a value would overflow float16."""
    try:
        _write_tables_as(path, weights, config, dtype, where)
    except _Float16Overflow:
        _LOGGER.warning("%s: folded text table exceeds float16; storing it as float32", where)
        _write_tables_as(path, weights, config, np.float32, where)


def _write_tables_as(
    path: Path,
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    dtype: type,
    where: str,
) -> None:
    fold = TextProjection.read(weights)
    groups = config.num_code_groups - 1
    with NpzWriter(path) as npz:
        # looked up row by row: stored as `dtype`; multiplied with in numpy: float32
        npz.add_chunks(
            "text_embeddings",
            (config.text_vocab, config.talker_hidden),
            dtype,
            _folded_rows(weights, fold, config.text_vocab, dtype, where),
        )
        special = np.concatenate(
            [
                weights.rows("talker.model.text_embedding.weight", token, token + 1)
                for token in (config.tts_pad_id, config.tts_bos_id, config.tts_eos_id)
            ]
        )  # (3, text_hidden)
        pad, bos, eos = fold(special)  # (hidden,) each, float32
        npz.add("tts_pad_embedding", pad)
        npz.add("tts_bos_embedding", bos)
        npz.add("tts_eos_embedding", eos)
        npz.add(
            "codec_embeddings", weights.get("talker.model.codec_embedding.weight").astype(dtype)
        )
        npz.add_chunks(
            "predictor_embeddings",
            (groups, config.codebook_size, config.talker_hidden),
            dtype,
            (weights.get(f"{PREDICTOR_PREFIX}.codec_embedding.{i}.weight") for i in range(groups)),
        )
        npz.add_chunks(
            "predictor_heads",
            (groups, config.codebook_size, config.predictor_hidden),
            np.float32,
            (weights.get(f"talker.code_predictor.lm_head.{i}.weight") for i in range(groups)),
        )
        if config.has_mtp_projection:
            npz.add(
                "mtp_projection_weight",
                weights.get("talker.code_predictor.small_to_mtp_projection.weight"),
            )
            npz.add(
                "mtp_projection_bias",
                weights.get("talker.code_predictor.small_to_mtp_projection.bias"),
            )


@dataclass(frozen=True)
class TextProjection:
    """`talker.text_projection`: linear_fc1 → SiLU → linear_fc2, applied row-wise."""

    fc1_weight: np.ndarray  # (text_hidden, text_hidden) float32
    fc1_bias: np.ndarray  # (text_hidden,)
    fc2_weight: np.ndarray  # (hidden, text_hidden)
    fc2_bias: np.ndarray  # (hidden,)

    @classmethod
    def read(cls, weights: SafetensorsFiles) -> "TextProjection":
        prefix = "talker.text_projection"
        return cls(
            weights.get(f"{prefix}.linear_fc1.weight"),
            weights.get(f"{prefix}.linear_fc1.bias"),
            weights.get(f"{prefix}.linear_fc2.weight"),
            weights.get(f"{prefix}.linear_fc2.bias"),
        )

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """(n, text_hidden) float32 → (n, hidden) float32."""
        hidden = rows @ self.fc1_weight.T + self.fc1_bias  # (n, text_hidden)
        with np.errstate(over="ignore"):  # exp(-x) overflows for very negative x: silu → -0
            hidden = hidden / (1.0 + np.exp(-hidden))  # SiLU
        return hidden @ self.fc2_weight.T + self.fc2_bias  # (n, hidden)


def _folded_rows(
    weights: SafetensorsFiles, fold: TextProjection, n_rows: int, dtype: type, where: str
) -> Iterator[np.ndarray]:
    """The text table through text_projection, FOLD_ROWS rows at a time (progress logged)."""
    name = "talker.model.text_embedding.weight"
    start = time.monotonic()
    next_report = 0.25
    for begin in range(0, n_rows, FOLD_ROWS):
        end = min(begin + FOLD_ROWS, n_rows)
        folded = fold(weights.rows(name, begin, end))  # (m, hidden) float32
        if np.dtype(dtype) == np.float16 and np.abs(folded).max() > TEXT_TABLE_F16_LIMIT:
            raise _Float16Overflow
        yield folded.astype(dtype)
        if end / n_rows >= next_report and end < n_rows:
            _LOGGER.info(
                "%s: folding the text table: %d of %d rows (%.0f s)",
                where,
                end,
                n_rows,
                time.monotonic() - start,
            )
            next_report += 0.25


class NpzWriter:
    """An uncompressed `.npz` written one array (or one array in pieces) at a time; what
    `np.load` reads."""

    def __init__(self, path: Path) -> None:
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def __enter__(self) -> "NpzWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    def add(self, name: str, array: np.ndarray) -> None:
        """Store a whole array as `name`."""
        with self._zip.open(f"{name}.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)

    def add_chunks(
        self, name: str, shape: tuple[int, ...], dtype: type, chunks: Iterator[np.ndarray]
    ) -> None:
        """Store an array of `shape` given as consecutive row blocks (along axis 0)."""
        header = {
            "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
            "fortran_order": False,
            "shape": shape,
        }
        written = 0
        with self._zip.open(f"{name}.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_2_0(member, header)
            for chunk in chunks:
                block: np.ndarray = np.ascontiguousarray(chunk, dtype=dtype)
                member.write(block.tobytes())
                written += block.size
        if written != int(np.prod(shape)):
            raise AssertionError(f"{name}: wrote {written} values for shape {shape}")
