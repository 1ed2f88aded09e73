"""GGUF, llama.cpp's model format: a language model's shape and hyper-parameters, a writer that
streams one tensor at a time, and a fast header reader.

One `LmShape` describes a decoder-only transformer for every writer: the Qwen3-TTS conversion
(talker, code predictor, text tokenizer) and the random-model generator (tools/modelgen). Tensor
names and shapes follow llama.cpp's loaders (`src/models/llama.cpp`, `qwen2.cpp`, `qwen3.cpp`,
vendored in llama-cpp-python 0.3.36). gguf-py, and ggml for quantized tensors, are imported
only by the writer; reading a header needs nothing but the standard library.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from ..errors import LlamaError

if TYPE_CHECKING:
    import gguf

ARCHITECTURES = ("llama", "qwen2", "qwen3")
"""`general.architecture` values whose tensor layout `LmShape` describes."""

GGUF_MAGIC = b"GGUF"
GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
"""GGUF metadata value types with a fixed size → struct format (gguf-py 0.19.0 `GGUFValueType`;
8 is a string, 9 an array)."""
GGUF_STRING, GGUF_ARRAY = 8, 9
GGUF_MAX_STRING = 1 << 20
"""Longest metadata string we accept (chat templates are a few kB): a corrupt length is an error,
not a huge allocation."""
GGUF_MAX_ENTRIES = 1 << 24
"""Most key/values or array items we accept (vocabularies are ~150k)."""
GGUF_DEFAULT_ALIGNMENT = 32
"""Alignment of the data section when `general.alignment` is absent (gguf-py 0.19.0
`GGUF_DEFAULT_ALIGNMENT`)."""
GGML_MAX_DIMS = 4
"""Most dimensions a ggml tensor has (`GGML_MAX_DIMS`, ggml.h in llama-cpp-python 0.3.36)."""
KV_CACHE_BYTES_PER_VALUE = 2
"""f16 K and V: llama.cpp's default cache type."""
ATTENTION_SCORE_BYTES = 4
"""float32 attention scores (K·Q, then softmax) in llama.cpp's graph without flash attention."""


# ----------------------------------------------------------------------------------------------
# A language model's shape


@dataclass(frozen=True)
class LmShape:
    """The hyper-parameters of a decoder-only transformer, as llama.cpp reads them from GGUF."""

    arch: str
    """`general.architecture`: one of `ARCHITECTURES`."""
    n_vocab: int
    """Rows of the embedding and output matrices (must equal the vocabulary's length)."""
    n_embd: int
    """Hidden size."""
    n_layer: int
    """Number of transformer blocks."""
    n_head: int
    """Query heads."""
    n_head_kv: int
    """Key/value heads (grouped-query attention when smaller than `n_head`)."""
    head_dim: int
    """Size of one head; may differ from n_embd / n_head (Qwen3-TTS: 1024 / 16 heads of 128)."""
    n_ff: int
    """Hidden size of the gated feed-forward network."""
    rope_base: float
    """RoPE theta."""
    rms_eps: float
    """Epsilon of the RMS norms."""
    tied_embeddings: bool = False
    """True: no `output.weight`, llama.cpp reuses `token_embd.weight` as the output head."""
    qkv_bias: bool = False
    """Biases on the q/k/v projections (Qwen2)."""
    qk_norm: bool = False
    """RMS norms on queries and keys per head (Qwen3; required there, unknown elsewhere)."""
    rope_freqs: bool = False
    """Write `rope_freqs.weight` (Llama 3's long-context RoPE factors; written as ones)."""
    n_ctx_train: int = 4096
    """`context_length`: the training context, an upper bound for n_ctx."""

    def __post_init__(self) -> None:
        problems = []
        if self.arch not in ARCHITECTURES:
            problems.append(f"arch {self.arch!r} is not one of {', '.join(ARCHITECTURES)}")
        sizes = ("n_vocab", "n_embd", "n_layer", "n_head", "n_head_kv", "head_dim", "n_ff")
        problems += [f"{name} must be positive" for name in sizes if getattr(self, name) <= 0]
        if self.n_head_kv > 0 and self.n_head % self.n_head_kv:
            problems.append(f"n_head {self.n_head} is not a multiple of n_head_kv {self.n_head_kv}")
        if self.head_dim % 2:
            problems.append(f"head_dim {self.head_dim} must be even (RoPE rotates pairs)")
        if self.qk_norm != (self.arch == "qwen3"):
            problems.append("qk_norm is required for qwen3 and not loaded for other archs")
        if self.arch == "qwen2" and self.n_head * self.head_dim != self.n_embd:
            problems.append("qwen2 needs n_head * head_dim == n_embd (llama.cpp assumes it)")
        if problems:
            raise ValueError(f"invalid LmShape: {'; '.join(problems)}")

    @property
    def n_params(self) -> int:
        """Number of parameters, counting a tied embedding once."""
        return sum(int(np.prod(shape)) for shape in lm_tensor_shapes(self).values())


def block_tensor_shapes(shape: LmShape) -> dict[str, tuple[int, ...]]:
    """One block's tensors (names after `blk.N.`) and numpy shapes (rows, cols), in the order
    llama.cpp's converter writes them."""
    embd, head_dim = shape.n_embd, shape.head_dim
    q_dim, kv_dim = shape.n_head * head_dim, shape.n_head_kv * head_dim
    block: dict[str, tuple[int, ...]] = {
        "attn_norm.weight": (embd,),
        "attn_q.weight": (q_dim, embd),
        "attn_k.weight": (kv_dim, embd),
        "attn_v.weight": (kv_dim, embd),
    }
    if shape.qkv_bias:
        block.update({"attn_q.bias": (q_dim,), "attn_k.bias": (kv_dim,), "attn_v.bias": (kv_dim,)})
    if shape.qk_norm:
        block.update({"attn_q_norm.weight": (head_dim,), "attn_k_norm.weight": (head_dim,)})
    block.update(
        {
            "attn_output.weight": (embd, q_dim),
            "ffn_norm.weight": (embd,),
            "ffn_gate.weight": (shape.n_ff, embd),
            "ffn_up.weight": (shape.n_ff, embd),
            "ffn_down.weight": (embd, shape.n_ff),
        }
    )
    return block


def lm_tensor_shapes(shape: LmShape) -> dict[str, tuple[int, ...]]:
    """Every tensor llama.cpp loads for `shape`, with its numpy shape, in converter order."""
    tensors: dict[str, tuple[int, ...]] = {"token_embd.weight": (shape.n_vocab, shape.n_embd)}
    block = block_tensor_shapes(shape)
    for i in range(shape.n_layer):
        tensors.update({f"blk.{i}.{name}": dims for name, dims in block.items()})
    tensors["output_norm.weight"] = (shape.n_embd,)
    if not shape.tied_embeddings:
        tensors["output.weight"] = (shape.n_vocab, shape.n_embd)
    if shape.rope_freqs:
        tensors["rope_freqs.weight"] = (shape.head_dim // 2,)
    return tensors


def add_llama_hparams(
    writer: gguf.GGUFWriter, shape: LmShape, name: str, file_type: gguf.LlamaFileType
) -> None:
    """The standard hyper-parameters of a `llama`/`qwen2`/`qwen3` GGUF (`{arch}.*` keys)."""
    writer.add_name(name)
    writer.add_file_type(file_type)
    writer.add_vocab_size(shape.n_vocab)
    writer.add_context_length(shape.n_ctx_train)
    writer.add_embedding_length(shape.n_embd)
    writer.add_block_count(shape.n_layer)
    writer.add_feed_forward_length(shape.n_ff)
    writer.add_head_count(shape.n_head)
    writer.add_head_count_kv(shape.n_head_kv)
    # llama.cpp defaults the head size to n_embd / n_head; say it explicitly for every arch
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_rope_freq_base(shape.rope_base)
    writer.add_layer_norm_rms_eps(shape.rms_eps)


# ----------------------------------------------------------------------------------------------
# Writing, one tensor at a time (gguf-py's own writer wants every tensor in memory at once)


@dataclass(frozen=True)
class GgufTensor:
    """One tensor to write and how to produce its values when its turn comes."""

    name: str
    shape: tuple[int, ...]
    """numpy order (rows, cols); GGUF stores it reversed."""
    dtype: type
    load: Callable[[], np.ndarray]
    quant: gguf.GGMLQuantizationType | None = None
    """Store as this block type (Q8_0, Q4_K, BF16, …) instead of `dtype`: `load` still gives
    float rows, quantized when written; each row (`shape[-1]`) must be a whole number of
    blocks."""

    def stored_shape(self) -> tuple[int, ...]:
        """Shape of the bytes written: `shape`, or (rows, bytes per row) when quantized."""
        if self.quant is None:
            return self.shape
        import gguf  # pylint: disable=import-outside-toplevel  # only writers need gguf-py

        return gguf.quant_shape_to_byte_shape(self.shape, self.quant)

    def stored_dtype(self) -> np.dtype:
        """numpy type of what is written (raw bytes when quantized)."""
        return np.dtype(np.uint8 if self.quant is not None else self.dtype)

    def stored(self) -> np.ndarray:
        """`load()` as it goes into the file: `dtype`, or quantized to `quant` by llama.cpp's
        own ggml (`ggml.ggml_quantize`): gguf-py's numpy quantizer has no k-quants, and for Q8_0
        and BF16 the two write the same bytes (tests/test_quantize.py)."""
        data: np.ndarray = np.ascontiguousarray(
            self.load(), dtype=self.dtype if self.quant is None else np.float32
        )
        if data.shape != self.shape:
            raise ValueError(f"{self.name}: {data.shape} != {self.shape}")
        if self.quant is None:
            return data
        # pylint: disable-next=import-outside-toplevel  # llama.cpp: writers only
        from .ggml import ggml_quantize

        rows = data.reshape(-1, self.shape[-1])  # (rows, n) float32
        return ggml_quantize(int(self.quant), rows).reshape(self.stored_shape())  # uint8


def write_gguf(
    path: Path, arch: str, metadata: Callable[[gguf.GGUFWriter], None], tensors: list[GgufTensor]
) -> None:
    """Write a GGUF: metadata and tensor table through gguf-py, then each tensor's data in turn
    (one tensor in memory at a time, in list order)."""
    import gguf  # pylint: disable=import-outside-toplevel

    writer = gguf.GGUFWriter(path, arch)
    metadata(writer)
    for tensor in tensors:
        shape, dtype = tensor.stored_shape(), tensor.stored_dtype()
        nbytes = int(np.prod(shape)) * dtype.itemsize
        writer.add_tensor_info(tensor.name, shape, dtype, nbytes, raw_dtype=tensor.quant)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    alignment = writer.data_alignment
    with open(path, "r+b") as out:
        out.seek(0, 2)
        for tensor in tensors:
            out.write(b"\0" * (-out.tell() % alignment))
            tensor.stored().tofile(out)
        out.write(b"\0" * (-out.tell() % alignment))


# ----------------------------------------------------------------------------------------------
# Reading the header


@dataclass(frozen=True)
class GgufField:
    """One key/value of a GGUF header, with its GGUF value types (gguf-py's `GGUFValueType`)."""

    key: str
    value_type: int
    value: Any
    """A number, a string, or for an array a list (None where arrays were skipped)."""
    item_type: int | None = None
    """The type of an array's items; None for scalars and strings."""


@dataclass(frozen=True)
class GgufTensorInfo:
    """Where one tensor's data lies in a GGUF file, and its ggml type and dimensions."""

    name: str
    dims: tuple[int, ...]
    """ggml order: `dims[0]` is the row length (n_embd for `token_embd`), `dims[1]` the rows."""
    ggml_type: int
    """`enum ggml_type` (gguf-py 0.19.0 `GGMLQuantizationType`)."""
    offset: int
    """Byte offset of the data from the start of the file."""


def read_gguf_metadata(path: Path) -> dict[str, Any]:
    """The scalar and string key/values of a GGUF header; arrays (the vocabulary) are skipped.

    `gguf.GGUFReader` parses every vocabulary string (5 s for Orpheus' 157k tokens) to give us a
    few numbers; seeking past them takes milliseconds.
    """
    return {field.key: field.value for field in _read_gguf_header(path, None, False)[0]}


def read_gguf_fields(path: Path, skip_arrays_of: tuple[str, ...]) -> list[GgufField]:
    """Every key/value of a GGUF header in file order, arrays read, except those of keys that
    start with one of `skip_arrays_of` (value None): `("tokenizer.",)` passes over the
    vocabulary in milliseconds where `gguf.GGUFReader` takes seconds."""
    return _read_gguf_header(path, skip_arrays_of, False)[0]


def read_gguf_tensors(path: Path) -> dict[str, GgufTensorInfo]:
    """The tensor table of a GGUF by name, read as fast as `read_gguf_metadata`."""
    return _read_gguf_header(path, None, True)[1]


def _read_gguf_header(
    path: Path, skip_arrays_of: tuple[str, ...] | None, with_tensors: bool
) -> tuple[list[GgufField], dict[str, GgufTensorInfo]]:
    """The key/values (arrays only of keys not in `skip_arrays_of`; None: no arrays) and, with
    `with_tensors`, the tensor table; LlamaError naming the file if it is unreadable.

    Layout: gguf-py 0.19.0 `GGUFReader` (`__init__`, `_build_tensor_info`): after the key/values
    come the tensor infos (name, dimension count, dims, type, offset from the data section), then
    the data section at the next multiple of `general.alignment`.
    """
    try:
        with open(path, "rb") as file:
            if file.read(4) != GGUF_MAGIC:
                raise ValueError("no GGUF magic number")
            _version, n_tensors, n_kv = struct.unpack("<IQQ", file.read(20))
            if n_kv > GGUF_MAX_ENTRIES or n_tensors > GGUF_MAX_ENTRIES:
                raise ValueError(f"implausible counts: {n_kv} key/values, {n_tensors} tensors")
            fields = []
            for _ in range(n_kv):
                key = _gguf_string(file)
                arrays = skip_arrays_of is not None and not key.startswith(skip_arrays_of)
                fields.append(_gguf_field(file, key, arrays))
            if not with_tensors:
                return fields, {}
            table = [_gguf_tensor_info(file) for _ in range(n_tensors)]
            alignment = next(
                (f.value for f in fields if f.key == "general.alignment" and f.value),
                GGUF_DEFAULT_ALIGNMENT,
            )
            data_start = file.tell() + -file.tell() % int(alignment)
            tensors = {
                name: GgufTensorInfo(name, dims, ggml_type, data_start + offset)
                for name, dims, ggml_type, offset in table
            }
            return fields, tensors
    except (ValueError, OSError, struct.error, UnicodeDecodeError) as err:
        raise LlamaError(
            f"{path} is not a readable GGUF file ({err}); delete it to download it "
            "again, or fix the catalog's path"
        ) from err


def _gguf_field(file: BinaryIO, key: str, arrays: bool) -> GgufField:
    """The value of `key`; an array is read into a list when `arrays`, else passed over."""
    (value_type,) = struct.unpack("<I", file.read(4))
    item_type = None
    if value_type == GGUF_ARRAY:
        (item_type,) = struct.unpack("<I", file.read(4))
        file.seek(-4, 1)  # _gguf_read_value reads the array's header itself
    return GgufField(key, value_type, _gguf_read_value(file, value_type, arrays), item_type)


def _gguf_tensor_info(file: BinaryIO) -> tuple[str, tuple[int, ...], int, int]:
    """One entry of the tensor table: name, dims (ggml order), ggml type, data offset."""
    name = _gguf_string(file)
    (n_dims,) = struct.unpack("<I", file.read(4))
    if n_dims > GGML_MAX_DIMS:
        raise ValueError(f"tensor {name} has {n_dims} dimensions")
    dims = struct.unpack(f"<{n_dims}Q", file.read(8 * n_dims))
    ggml_type, offset = struct.unpack("<IQ", file.read(12))
    return name, dims, ggml_type, offset


def _gguf_string(file: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", file.read(8))
    if length > GGUF_MAX_STRING:
        raise ValueError(f"implausible string length {length}")
    return file.read(length).decode("utf-8")


def _gguf_read_value(file: BinaryIO, value_type: int, arrays: bool = False) -> Any:
    """One value; an array is a list when `arrays`, else skipped (None)."""
    if value_type == GGUF_STRING:
        return _gguf_string(file)
    if value_type == GGUF_ARRAY:
        item_type, count = struct.unpack("<IQ", file.read(12))
        if count > GGUF_MAX_ENTRIES:
            raise ValueError(f"implausible array length {count}")
        if item_type not in GGUF_SCALARS:  # strings or nested arrays: one at a time
            items = [_gguf_read_value(file, item_type, arrays) for _ in range(count)]
            return items if arrays else None
        fmt = GGUF_SCALARS[item_type]
        if not arrays:
            file.seek(count * struct.calcsize(fmt), 1)
            return None
        return list(struct.unpack(f"<{count}{fmt[1:]}", file.read(count * struct.calcsize(fmt))))
    if value_type not in GGUF_SCALARS:
        raise ValueError(f"unknown GGUF value type {value_type}")
    fmt = GGUF_SCALARS[value_type]
    return struct.unpack(fmt, file.read(struct.calcsize(fmt)))[0]


def _attention_shape(path: Path) -> tuple[int, int, int, int]:
    """(n_layer, n_head, n_head_kv, head_dim) of the GGUF at `path`, from its header."""
    metadata = read_gguf_metadata(path)

    def value(key: str, default: Any = None) -> Any:
        if metadata.get(key) is None:
            if default is None:
                raise LlamaError(f"{path}: GGUF metadata lacks {key}")
            return default
        return metadata[key]

    arch = value("general.architecture")
    n_embd = int(value(f"{arch}.embedding_length"))
    n_head = int(value(f"{arch}.attention.head_count"))
    return (
        int(value(f"{arch}.block_count")),
        n_head,
        int(value(f"{arch}.attention.head_count_kv", n_head)),
        int(value(f"{arch}.attention.key_length", n_embd // n_head)),
    )


def gguf_kv_cache_bytes(path: Path, n_ctx: int) -> int:
    """Bytes of an f16 KV cache of `n_ctx` tokens for the GGUF at `path` (read from its header)."""
    n_layer, _, n_head_kv, head_dim = _attention_shape(path)
    return 2 * n_layer * n_ctx * n_head_kv * head_dim * KV_CACHE_BYTES_PER_VALUE


def gguf_attention_scores_bytes(path: Path, n_ctx: int, n_batch: int) -> int:
    """Bytes of the float32 attention scores (n_ctx x n_batch x heads) that plain attention
    keeps in llama.cpp's compute buffer when a batch of `n_batch` tokens is evaluated `n_ctx`
    deep: what a CPU context (no flash attention, `llm.model.flash_attention`) touches at most."""
    _, n_head, _, _ = _attention_shape(path)
    return n_ctx * n_batch * n_head * ATTENTION_SCORE_BYTES
