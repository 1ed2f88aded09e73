"""Random-weight GGUF language models in llama.cpp's layout, and their quantization.

Generic over the decoder-only architectures our engines run through llama.cpp: `llama`
(Orpheus), `qwen2` (OuteTTS) and `qwen3` (Qwen3-TTS). A shape (`formats.gguf.LmShape`, which
also names the tensors) and a vocabulary (`Vocab`) go in, a GGUF that `llama_cpp.Llama` loads
comes out. Tensors are streamed to disk
in chunks cut from one pool of random values, so a full-size 7.5 GB F16 model needs only a few
MB of memory. Weights are normal(0, 0.02), norms are ones, biases zeros: enough for llama.cpp to
produce finite logits, and for speed and file size (after `quantize_gguf`) to match the real
model, since neither depends on the values.

"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import gguf
import numpy as np

from wyoming_multitts.formats.gguf import LmShape, add_llama_hparams, lm_tensor_shapes

from .files import atomic_path

_LOGGER = logging.getLogger(__name__)

WEIGHT_STD = 0.02
"""Standard deviation of the random weight matrices (the usual init; keeps logits finite)."""

POOL_VALUES = 1 << 22
"""Random values generated once per file (4 Mi; 8 MB at F16) and reused for every matrix."""

CHUNK_VALUES = 1 << 20
"""Values written per slice of the pool (a random offset each), i.e. the write size."""

EMBEDDING_LIFT = 1.0
"""`favoured_tokens`: first dimension of every token embedding (others are ~0.02)."""

FAVOURED_LIFT = 1.5
"""`favoured_tokens`: first dimension of a favoured token's embedding."""

OUTPUT_NORM_LIFT = 32.0
"""`favoured_tokens`: the output norm's weight of the first dimension (the others are 1). The
residual stream's first dimension keeps the input token's lift (the layers add nothing there)
while 16 random layers of 2048 grow every other one, so its normalised value is small; weighed
up by this, favoured tokens' logits stand 3.5 (after another token) to 5.2 (after a favoured
one) above the others' mean on the full-size OuteTTS 1.0 model, against a spread of 0.9
(measured 2026-12-02; without it and the zero rows: -0.7 to -0.1)."""

RESIDUAL_OUTPUTS = ("attn_output.weight", "ffn_down.weight")
"""`favoured_tokens`: the matrices that write a layer's result into the residual stream; their
first output row is zero, so that dimension keeps the input token's (positive) lift."""

WEIGHT_TYPES = {
    gguf.GGMLQuantizationType.F16: (np.float16, gguf.LlamaFileType.MOSTLY_F16),
    gguf.GGMLQuantizationType.F32: (np.float32, gguf.LlamaFileType.ALL_F32),
}
"""Matrix storage types `write_lm_gguf` accepts: numpy dtype and GGUF `general.file_type`.
Norms and biases are always F32, as llama.cpp's converter writes them."""

QUANT_TYPES = {"q4_k_m": 15, "q8_0": 7}
"""`quantize_gguf` targets: llama.cpp `enum llama_ftype` values
(`LLAMA_FTYPE_MOSTLY_Q4_K_M = 15`, `LLAMA_FTYPE_MOSTLY_Q8_0 = 7`, include/llama.h)."""

GPT2_BASIC_MERGES = (("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("e", "r"), ("Ġ", "a"))
"""A few byte-level BPE merges, so the BPE merge path runs too (" the" becomes one token)."""


# ----------------------------------------------------------------------------------------------
# Vocabularies


@dataclass(frozen=True)
class Vocab:
    """A tokenizer as GGUF stores it: token strings and types, BPE merges, special ids."""

    tokens: tuple[str, ...]
    """Token strings by id (byte-level BPE: in GPT-2's byte-to-unicode alphabet)."""
    token_types: tuple[int, ...]
    """`gguf.TokenType` by id (NORMAL text, CONTROL for special tokens, ...)."""
    merges: tuple[str, ...]
    """BPE merges, `"left right"`, highest priority first."""
    pre: str
    """`tokenizer.ggml.pre`: llama.cpp's pre-tokenizer name (`llama-bpe`, `qwen2`, ...)."""
    bos_id: int
    eos_id: int
    add_bos: bool = False
    """Whether llama.cpp adds BOS by itself; our engines always add it explicitly."""
    pad_id: int | None = None
    model: str = "gpt2"
    """`tokenizer.ggml.model`: `gpt2` is byte-level BPE."""

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.token_types):
            raise ValueError(
                f"Vocab has {len(self.tokens)} tokens but {len(self.token_types)} token types"
            )
        if len(set(self.tokens)) != len(self.tokens):
            raise ValueError("Vocab token strings must be unique")
        for name in ("bos_id", "eos_id", "pad_id"):
            token_id = getattr(self, name)
            if token_id is not None and not 0 <= token_id < len(self.tokens):
                raise ValueError(f"Vocab {name} {token_id} is outside 0..{len(self.tokens) - 1}")


def gpt2_byte_symbols() -> list[str]:
    """The 256 byte-level BPE symbols, indexed by byte value (GPT-2's `bytes_to_unicode`).

    Printable Latin-1 bytes stand for themselves; the others are shifted to U+0100 and up,
    so a space is `Ġ` (U+0120) and a newline `Ċ` (U+010A).
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    symbols = {byte: chr(byte) for byte in printable}
    shifted = (byte for byte in range(256) if byte not in symbols)
    symbols.update({byte: chr(0x100 + n) for n, byte in enumerate(shifted)})
    return [symbols[byte] for byte in range(256)]


def byte_level_vocab(
    n_vocab: int,
    special_tokens: Mapping[int, str],
    *,
    pre: str,
    bos_id: int,
    eos_id: int,
    pad_id: int | None = None,
    merges: Sequence[tuple[str, str]] = GPT2_BASIC_MERGES,
    user_defined: Collection[int] = (),
) -> Vocab:
    """A byte-level BPE vocabulary with `special_tokens` (CONTROL) at their real ids.

    Those of `user_defined` are USER_DEFINED instead: how llama.cpp's converter writes added
    tokens that the tokenizer does not mark special (Orpheus's `<custom_token_N>`), which
    llama.cpp then matches inside plain text too (`llm/added_tokens.py`).

    Ids 0..255 are the byte symbols, then one token per merge; every other id without a special
    token gets a filler NORMAL token ` fillerN`. Fillers use only byte symbols, so llama.cpp can
    detokenize whatever a random model samples, and they end in digits after letters, which the
    pre-tokenizers always split, so no input text ever maps to one. Text therefore tokenizes to
    bytes and merges only: ids differ from the real model's, the special-token ids do not.
    """
    tokens = gpt2_byte_symbols() + [left + right for left, right in merges]
    if len(tokens) > min(special_tokens, default=n_vocab):
        raise ValueError(f"special token ids must start at {len(tokens)} or later")
    if max(special_tokens, default=0) >= n_vocab:
        raise ValueError(f"special token ids must be below n_vocab {n_vocab}")
    types = [gguf.TokenType.NORMAL] * len(tokens)
    space = gpt2_byte_symbols()[ord(" ")]
    for token_id in range(len(tokens), n_vocab):
        special = special_tokens.get(token_id)
        tokens.append(special if special is not None else f"{space}filler{token_id}")
        if special is None:
            types.append(gguf.TokenType.NORMAL)
        elif token_id in user_defined:
            types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.CONTROL)
    return Vocab(
        tokens=tuple(tokens),
        token_types=tuple(int(t) for t in types),
        merges=tuple(f"{left} {right}" for left, right in merges),
        pre=pre,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
    )


# ----------------------------------------------------------------------------------------------
# Writing


@dataclass(frozen=True)
class _Tensor:
    name: str
    shape: tuple[int, ...]
    """numpy order (rows, cols); GGUF stores it reversed (ne0 = cols)."""
    fill: str
    """"random" (a weight matrix), "ones" (a norm or RoPE factor) or "zeros" (a bias)."""


def _tensor_plan(shape: LmShape) -> list[_Tensor]:
    """Every tensor llama.cpp loads for `shape`, in the order the converter writes them."""
    return [_Tensor(name, dims, _fill(name)) for name, dims in lm_tensor_shapes(shape).items()]


def _fill(name: str) -> str:
    """Biases zeros, norms and RoPE factors ones, every other tensor (a matrix) random."""
    if name.endswith(".bias"):
        return "zeros"
    if name.endswith("norm.weight") or name == "rope_freqs.weight":
        return "ones"
    return "random"


def toy_size(shape: LmShape) -> LmShape:
    """`shape` at toy size (the same tensor kinds, vocabulary and hyper-parameters; 2 tiny layers):
    what tests load in a fraction of a second."""
    return dataclasses.replace(
        shape, n_embd=64, n_layer=2, n_head=4, n_head_kv=2, head_dim=16, n_ff=128
    )


def write_quantized_lm(
    path: Path,
    shape: LmShape,
    vocab: Vocab,
    seed: int,
    ftype_name: str,
    threads: int,
    favoured_tokens: range | None = None,
) -> None:
    """A random full-size model quantized to `ftype_name` at `path`, built once.

    Writes `path` with an `-F16` twin first (deleted after quantizing) and skips whatever already
    exists, so an interrupted build resumes where it stopped; neither file is ever half-written.
    """
    f16_path = path.with_name(f"{path.stem}-F16{path.suffix}")
    if path.exists():
        _LOGGER.info("Keeping %s (delete it to rebuild)", path)
        return
    if f16_path.exists():
        _LOGGER.info("Reusing %s from an earlier, interrupted build", f16_path)
    else:
        _LOGGER.info("Writing the F16 model %s (%.1f B params)", f16_path, shape.n_params / 1e9)
        with atomic_path(f16_path) as partial:
            write_lm_gguf(
                partial, shape, vocab, seed, name=path.stem, favoured_tokens=favoured_tokens
            )
    _LOGGER.info("Quantizing to %s (minutes for billions of parameters)", ftype_name)
    with atomic_path(path) as partial:
        quantize_gguf(f16_path, partial, ftype_name, threads)
    f16_path.unlink()


def write_lm_gguf(
    path: Path,
    shape: LmShape,
    vocab: Vocab,
    seed: int,
    weight_type: gguf.GGMLQuantizationType = gguf.GGMLQuantizationType.F16,
    name: str | None = None,
    favoured_tokens: range | None = None,
) -> int:
    """Write a random-weight GGUF language model to `path`; return its size in bytes.

    The same `seed` gives the same file. Matrices are `weight_type` (F16 or F32), norms and
    biases F32. Overwrites `path`; callers that must never leave a half-written file behind
    write to `files.atomic_path(...)`.

    `favoured_tokens` (tied embeddings only): make the model sample these tokens most of the
    time, e.g. OuteTTS's audio codes, which random weights would almost never pick among 157k
    tokens. Every embedding gets `EMBEDDING_LIFT` in its first dimension and favoured tokens
    more (`FAVOURED_LIFT`); no layer writes to that dimension (`RESIDUAL_OUTPUTS`), so it stays
    positive through any depth, and the output norm weighs it up (`OUTPUT_NORM_LIFT`), so
    favoured tokens' logits stand out by (FAVOURED_LIFT - EMBEDDING_LIFT) x that weighted
    dimension. (Before 2026-12-02 only the embeddings were lifted: 16 random layers of 2048
    drowned the lift, and the full-size OuteTTS 1.0 model sampled no audio code on some CPUs.)
    Speed is unaffected.
    """
    if favoured_tokens is not None and not shape.tied_embeddings:
        raise ValueError("favoured_tokens works through tied embeddings only")
    if weight_type not in WEIGHT_TYPES:
        raise ValueError(f"weight_type must be F16 or F32, not {weight_type.name}")
    if len(vocab.tokens) != shape.n_vocab:
        raise ValueError(
            f"vocabulary has {len(vocab.tokens)} tokens, shape.n_vocab {shape.n_vocab}"
        )
    weight_dtype, file_type = WEIGHT_TYPES[weight_type]
    plan = _tensor_plan(shape)
    start = time.monotonic()

    # header, metadata and tensor table through gguf-py
    writer = gguf.GGUFWriter(path, shape.arch)
    add_llama_hparams(writer, shape, name or path.stem, file_type)
    _add_vocab(writer, vocab)
    for tensor in plan:
        dtype = np.dtype(weight_dtype if tensor.fill == "random" else np.float32)
        nbytes = int(np.prod(tensor.shape)) * dtype.itemsize
        writer.add_tensor_info(tensor.name, tensor.shape, dtype, nbytes)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()

    # tensor data, streamed: each tensor starts at the next multiple of the alignment
    alignment = writer.data_alignment
    rng = np.random.default_rng(seed)
    pool = (rng.standard_normal(POOL_VALUES, dtype=np.float32) * WEIGHT_STD).astype(weight_dtype)
    with open(path, "r+b") as out:
        out.seek(0, 2)
        for tensor in plan:
            _pad(out, alignment)
            offset = 0
            for chunk in _tensor_chunks(tensor, pool, rng):
                if favoured_tokens is not None:
                    chunk = _favouring(chunk, offset, tensor, favoured_tokens)
                chunk.tofile(out)
                offset += chunk.size
            _LOGGER.debug("%s: wrote %s %s", path.name, tensor.name, tensor.shape)
        _pad(out, alignment)
        size = out.tell()

    _LOGGER.info(
        "Wrote %s: %s, %.3f B params, %d tensors, %.2f GB in %.1f s",
        path,
        shape.arch,
        shape.n_params / 1e9,
        len(plan),
        size / 1e9,
        time.monotonic() - start,
    )
    return size


def _add_vocab(writer: gguf.GGUFWriter, vocab: Vocab) -> None:
    writer.add_tokenizer_model(vocab.model)
    writer.add_tokenizer_pre(vocab.pre)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.token_types)
    writer.add_token_merges(vocab.merges)
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(vocab.eos_id)
    if vocab.pad_id is not None:
        writer.add_pad_token_id(vocab.pad_id)
    writer.add_add_bos_token(vocab.add_bos)
    writer.add_add_eos_token(False)


def _tensor_chunks(
    tensor: _Tensor, pool: np.ndarray, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """The tensor's values, flat, in pieces of at most CHUNK_VALUES."""
    remaining = int(np.prod(tensor.shape))
    while remaining:
        n = min(remaining, CHUNK_VALUES)
        if tensor.fill == "random":
            offset = int(rng.integers(0, pool.size - n + 1))
            yield pool[offset : offset + n]  # (n,) a view, no copy
        else:
            yield np.full(n, 1.0 if tensor.fill == "ones" else 0.0, dtype=np.float32)
        remaining -= n


def _favouring(chunk: np.ndarray, offset: int, tensor: _Tensor, favoured: range) -> np.ndarray:
    """`chunk` (flat values from `offset` of `tensor`) as `favoured_tokens` needs it: the token
    embeddings' first column lifted, the residual outputs' first row zero, the output norm's
    first weight OUTPUT_NORM_LIFT; other tensors as they are."""
    if tensor.name == "token_embd.weight":
        return _lift_first_column(chunk, offset, tensor.shape[1], favoured)
    if tensor.name == "output_norm.weight":
        first, value = 1, OUTPUT_NORM_LIFT  # (n_embd,): its first value
    elif tensor.name.endswith(RESIDUAL_OUTPUTS):
        first, value = tensor.shape[1], 0.0  # (n_embd, n_in): its first row
    else:
        return chunk
    if offset >= first:
        return chunk
    changed = chunk.copy()
    changed[: first - offset] = value
    return changed


def _lift_first_column(chunk: np.ndarray, offset: int, n_embd: int, favoured: range) -> np.ndarray:
    """`chunk` (flat values from `offset` of a (n_vocab, n_embd) matrix) with column 0 lifted."""
    index = np.arange(offset, offset + chunk.size)  # (n,) flat positions
    first_column = index % n_embd == 0
    rows = index[first_column] // n_embd
    lifted = chunk.copy()
    lifted[first_column] = np.where(
        (rows >= favoured.start) & (rows < favoured.stop), FAVOURED_LIFT, EMBEDDING_LIFT
    )
    return lifted


def _pad(out: BinaryIO, alignment: int) -> None:
    out.write(b"\0" * (-out.tell() % alignment))


# ----------------------------------------------------------------------------------------------
# Quantizing


class QuantizeError(RuntimeError):
    """llama.cpp could not quantize a GGUF; its log (stderr) says why."""


def quantize_gguf(src: Path, dst: Path, ftype_name: str, threads: int) -> int:
    """Quantize the GGUF `src` into `dst` with llama.cpp (`q4_k_m` or `q8_0`); return dst's size.

    Needs llama-cpp-python. Takes minutes for a 3B model: Orpheus-3B F16 to Q4_K_M took
    163-236 s on 2 cores (measured). Tensors whose rows do not fit the k-quant
    block size fall back to other types, as with llama.cpp's `llama-quantize`.
    """
    import llama_cpp  # pylint: disable=import-outside-toplevel  # only this step needs it

    if ftype_name not in QUANT_TYPES:
        raise ValueError(
            f"unknown quantization {ftype_name!r}; use one of {', '.join(QUANT_TYPES)}"
        )
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such GGUF to quantize")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT_TYPES[ftype_name]
    params.nthread = threads
    start = time.monotonic()
    status = llama_cpp.llama_model_quantize(
        str(src).encode(), str(dst).encode(), ctypes.byref(params)
    )
    if status != 0:
        raise QuantizeError(
            f"llama.cpp failed to quantize {src} to {ftype_name} ({dst}): llama_model_quantize "
            f"returned {status}; see the llama.cpp messages above (disk full? not a GGUF?)"
        )
    size = dst.stat().st_size
    _LOGGER.info(
        "Quantized %s to %s: %.2f GB in %.1f s",
        src.name,
        dst,
        size / 1e9,
        time.monotonic() - start,
    )
    return size
