"""What a loaded Qwen3-TTS model keeps resident, estimated before anything is converted or
loaded: from the tensor shapes in the release's safetensors headers and the `matrix_type` they
will be stored as (the registry's memory budget; measured in docs/benchmarks.md, "Resident
memory").

What is resident, by the checkpoint tensor it comes from:
* the talker's and predictor's matrices in the GGUFs, read into memory and used every step;
* the predictor's heads and input rows (as the tables store them), and the codec table (a
  float32 copy besides the talker's `token_embd`), all read every frame (`tables.py`);
* not the text table: it is memory-mapped and only the rows of a request's text are read, and
  `text_projection` is folded into it at conversion;
* the 12 Hz decoder (and a Base model's speaker encoder) as float32 torch modules;
* the talker's KV cache, and the worker's runtime and working memory, measured.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import gguf
import numpy as np

from ...catalog import ModelSpec
from ...codecs.qwen3_12hz import DECODER_PREFIX
from ...errors import EngineError, VoiceError
from ...formats.safetensors import SafetensorsFiles
from ...options import apply_options
from ..base import PlannedBytes
from .checkpoint import PREDICTOR_PREFIX
from .config import AUTO_MATRIX_TYPE, MATRIX_TYPES, MatrixType, Qwen3Options
from .prompt import PROMPT_ROWS_MAX
from .tables import (
    CODEC_EMBEDDING,
    MTP_PROJECTION,
    PREDICTOR_HEADS,
    TEXT_EMBEDDING,
    TEXT_PROJECTION,
)

SPEECH_TOKENIZER = Path("speech_tokenizer")
"""The speech tokenizer's folder in the release: only its decoder is loaded (the encoder waits
until a Base model clones a voice in context)."""
PREDICTOR_WIDE_RANGE = "mlp.down_proj.weight"
"""The predictor matrices stored in `MatrixType.wide_range` (see `gguf_files.write_predictor`)."""
SIZE_OF_AUTO = "f16"
"""The type whose sizes `auto` has: it stores bf16 or f16, the same bytes (estimates are made
before the device is chosen)."""
KV_BYTES_PER_VALUE = 2
"""The talker's KV cache is f16 (llama.cpp's default cache type)."""
FLOAT32_BYTES = 4
"""Norms, biases, small_to_mtp_projection, the codec table's copy and the torch modules."""
SOURCE_BYTES_PER_VALUE = 2
"""The release's weights are bf16."""
RESIDENT_SHARE_FLOOR = 0.5
"""At least this share of the release's values is resident once loaded: all but the text table
(a third of the 0.6B's values, less of the 1.7B's) and the speech tokenizer's encoder."""
WORKING_BYTES = 500_000_000
"""The worker's own Python, torch and llama.cpp (~240 MB before any model), llama.cpp's
compute buffers and torch's decode activations: what the 0.6B's worker held at its peak beyond
the parts above, over its first requests (2026-12-02, 2 threads, f16)."""


def estimate_bytes(model: ModelSpec, paths: Mapping[str, Path]) -> int:
    """Resident bytes of `model` once loaded and speaking (see the module docstring)."""
    options = apply_options(Qwen3Options(), model.options)
    model_dir = paths["model"]
    auto = options.matrix_type == AUTO_MATRIX_TYPE
    matrix = MATRIX_TYPES[SIZE_OF_AUTO if auto else options.matrix_type]
    try:
        weights = SafetensorsFiles.open(model_dir)
        decoder = SafetensorsFiles.open(model_dir / SPEECH_TOKENIZER)
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        talker = config["talker_config"]
        layers, kv_heads = int(talker["num_hidden_layers"]), int(talker["num_key_value_heads"])
        head_dim = int(
            talker.get("head_dim") or talker["hidden_size"] // talker["num_attention_heads"]
        )
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise EngineError(f"{model_dir / 'config.json'} is not a Qwen3-TTS config ({err})") from err
    except VoiceError as err:  # a broken safetensors file: the load will say the same
        raise EngineError(f"{model_dir}: {err}") from err
    checkpoint = sum(_resident_bytes(name, weights.shape(name), matrix) for name in weights.names)
    decoder_values = sum(
        math.prod(decoder.shape(name)) for name in decoder.names if name.startswith(DECODER_PREFIX)
    )
    n_ctx = PROMPT_ROWS_MAX + options.max_frames
    kv_bytes = 2 * layers * n_ctx * kv_heads * head_dim * KV_BYTES_PER_VALUE  # K and V
    return checkpoint + FLOAT32_BYTES * decoder_values + kv_bytes + WORKING_BYTES


def planned_bytes(model: ModelSpec, file_bytes: Mapping[str, int]) -> PlannedBytes:
    """From the release folder's size alone (bf16, `SOURCE_BYTES_PER_VALUE`): the conversion
    writes at most every value at the larger of the matrix type's size and the f16 tables';
    at least `RESIDENT_SHARE_FLOOR` of the values stay resident at the matrix type's size."""
    options = apply_options(Qwen3Options(), model.options)
    auto = options.matrix_type == AUTO_MATRIX_TYPE
    matrix = MATRIX_TYPES[SIZE_OF_AUTO if auto else options.matrix_type]
    values = file_bytes["model"] / SOURCE_BYTES_PER_VALUE
    value_bytes = _matrix_bytes(matrix.quant, matrix.dtype)
    return PlannedBytes(
        memory=math.floor(RESIDENT_SHARE_FLOOR * values * value_bytes),
        converted=math.ceil(values * max(value_bytes, np.dtype(np.float16).itemsize)),
    )


def _resident_bytes(name: str, shape: tuple[int, ...], matrix: MatrixType) -> int:
    """What the checkpoint tensor `name` becomes in memory once loaded."""
    values = math.prod(shape)
    if name.startswith((TEXT_EMBEDDING, TEXT_PROJECTION)):
        return 0  # folded into the mapped text table, of which a request reads a few rows
    if name.startswith(MTP_PROJECTION):
        return FLOAT32_BYTES * values  # multiplied with in numpy
    if name.startswith((PREDICTOR_HEADS, f"{PREDICTOR_PREFIX}.codec_embedding")):
        return values * np.dtype(matrix.dtype).itemsize  # the predictor's heads and input rows
    if name == CODEC_EMBEDDING:
        return math.ceil(values * (_matrix_bytes(matrix.quant, matrix.dtype) + FLOAT32_BYTES))
    if len(shape) < 2:
        return FLOAT32_BYTES * values
    if name.startswith(PREDICTOR_PREFIX) and name.endswith(PREDICTOR_WIDE_RANGE):
        return math.ceil(values * _matrix_bytes(matrix.wide_range, np.float32))
    return math.ceil(values * _matrix_bytes(matrix.quant, matrix.dtype))


def _matrix_bytes(quant: gguf.GGMLQuantizationType | None, dtype: type) -> float:
    """Bytes per value of a matrix stored as `quant` blocks, or as `dtype` when None."""
    if quant is None:
        return float(np.dtype(dtype).itemsize)
    block, block_bytes = gguf.GGML_QUANT_SIZES[quant]
    return block_bytes / block
