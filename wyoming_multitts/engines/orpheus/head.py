"""The Orpheus language model with its full output head, or with the reduced one.

Orpheus' output layer has 156 940 rows, but the engine only samples the 28 672 audio codes and
the stop tokens, and llama.cpp cannot compute a subset of rows. So `convert_once` writes, once,
a copy of the GGUF whose vocabulary is just the tokens the engine keeps (and a few more, see
`ROW_COUNT_MODULUS`): their rows of `token_embd` and `output` copied byte for byte, tokenizer
`none`. `ReducedHead` runs that copy: the text prompt goes in as embedding rows of the
original's `token_embd` (`TokenRows`, exactly what llama.cpp computes for token ids), generated
tokens by their new ids, and the logits of the kept tokens come out bit for bit as before
(docs/engines.md, "Orpheus: reduced output head"). `FullHead` is the original GGUF as it is
(`reduced_head: false`).

Like the Qwen3-TTS conversion, the copy is cached beside the download (`reduced_path`), stamped
with a converter version and the source's size and time, written under a temporary name and
renamed, and a file lock makes two servers wait for one conversion.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Protocol, Sequence

import gguf
import numpy as np

from ...devices import Device
from ...errors import ConvertError, LlamaError
from ...formats import content_key
from ...formats import convert_once as convert_cached
from ...formats import partial_path, publish, remove_orphan_conversions
from ...formats.ggml import ggml_row_bytes
from ...formats.gguf import (
    GgufTensorInfo,
    read_gguf_fields,
    read_gguf_metadata,
    read_gguf_tensors,
)
from ...llm.model import LlamaModel
from ...llm.token_rows import TOKEN_EMBD, TokenRows

_LOGGER = logging.getLogger(__name__)

CONVERTER_VERSION = 1
"""Bump when the output changes: every cached reduced GGUF is then rebuilt on next load."""
ARCHITECTURE = "llama"
"""The only `general.architecture` converted: the one whose input rows and head were checked
(docs/engines.md, "Orpheus: reduced output head"); other graphs may scale or add to the rows."""
OUTPUT = "output.weight"
"""The output head (`LLM_TENSOR_OUTPUT`); absent when tied to `token_embd`."""
STAMP_KEY = "orpheus.reduced_head.stamp"
"""Metadata key of the JSON stamp: converter version, source size and time, kept-ids digest."""
ORIGINAL_IDS_KEY = "orpheus.reduced_head.original_ids"
"""Metadata key of each row's id in the original vocabulary, in new-id order."""
TOKENIZER_PREFIX = "tokenizer."
"""The vocabulary's metadata keys: dropped (the new vocabulary has no text)."""
LAYOUT_KEYS = ("general.architecture", "general.alignment")
"""Keys gguf-py's writer sets from its own arguments; copied ones would contradict its layout."""
NO_TOKENIZER = "none"
"""`tokenizer.ggml.model` of a vocabulary without text: llama.cpp makes `{arch}.vocab_size`
dummy tokens (docs/engines.md, "Orpheus: reduced output head")."""
HUB_REPO_PREFIX = "models--"
"""A model repo's folder in the Hugging Face cache is `models--Org--Name`."""
HUB_REDUCED_DIR = "orpheus-reduced-head"
"""In the Hugging Face cache the copy goes to `models--Org--Name/orpheus-reduced-head/<hash>/`,
inside the repo's cache folder (deleting the repo from the cache deletes it too), keyed by the
source's content (`formats.content_key`): a new upstream commit with the same file converts
nothing, and the copy of a file no longer cached is deleted at the next conversion."""
LOCAL_REDUCED_SUFFIX = ".reduced-head"
"""A local `path:` file `NAME.gguf` is reduced into `NAME.reduced-head.gguf` next to it."""
ROW_COUNT_MODULUS = 256
"""The reduced vocabulary is padded with other rows of the original to the original's row count
modulo this. ggml's CPU backend picks a matmul kernel by whether the head's row count divides by
4, 8 or 16, and another kernel may sum in another order; with equal residues every such choice is
the same, so the logits stay bitwise equal (Orpheus: 9 rows; docs/engines.md, "Orpheus: reduced
output head")."""
ADVICE = "or set `reduced_head: false` in the model's options to run the GGUF as it is"


class OrpheusHead(Protocol):
    """The language model as the engine drives it: logits indexed by `model_ids`."""

    tokenizer: LlamaModel
    """A model with the original vocabulary: tokenizes text, and its n_vocab sizes the Sampler."""

    def prefill(self, prompt: Sequence[int]) -> np.ndarray:
        """Forget the cache, evaluate `prompt` (original ids); the logits after it."""

    def step(self, token: int) -> np.ndarray:
        """Evaluate one generated token (original id); the logits after it."""

    def model_ids(self, ids: np.ndarray) -> np.ndarray:
        """Where the logits of tokens `ids` (original ids) are in the arrays returned."""

    def close(self) -> None:
        """Free the models (idempotent)."""


class FullHead:
    """The original GGUF as it is: token ids in, all 156 940 logits out."""

    def __init__(self, source: Path, device: Device, n_ctx: int, threads: int) -> None:
        self._lm = self.tokenizer = LlamaModel(source, device, n_ctx=n_ctx, threads=threads)

    def prefill(self, prompt: Sequence[int]) -> np.ndarray:
        """Forget the cache, evaluate `prompt`; the logits (n_vocab,) after it, a view."""
        self._lm.reset()
        return self._lm.decode(prompt)

    def step(self, token: int) -> np.ndarray:
        """Evaluate `token`; the logits (n_vocab,) after it, a view."""
        return self._lm.decode([token])

    def model_ids(self, ids: np.ndarray) -> np.ndarray:
        """`ids` themselves: the logits are indexed by original id."""
        return ids

    def close(self) -> None:
        """Free the model (idempotent)."""
        self._lm.close()


class ReducedHead:
    """The reduced copy of `source` (converted on first use), fed the prompt as rows of the
    original `token_embd`; logits of the kept tokens in `kept_ids` order, then the padding's."""

    def __init__(
        self, source: Path, kept_ids: np.ndarray, device: Device, n_ctx: int, threads: int
    ) -> None:
        with contextlib.ExitStack() as stack:
            reduced = convert_once(source, kept_ids)
            # the original's vocabulary alone, no weights (Orpheus: 30 MB, 0.4 s)
            self.tokenizer = stack.enter_context(
                contextlib.closing(LlamaModel(source, device, n_ctx=0, threads=1, vocab_only=True))
            )
            self._text_rows = stack.enter_context(contextlib.closing(TokenRows(source)))
            self._lm = stack.enter_context(
                contextlib.closing(LlamaModel(reduced, device, n_ctx=n_ctx, threads=threads))
            )
            self._resources = stack.pop_all()
        self._model_id = np.full(self._text_rows.n_rows, -1, np.int64)  # (n_vocab,) new id or -1
        self._model_id[kept_ids] = np.arange(kept_ids.size)

    def prefill(self, prompt: Sequence[int]) -> np.ndarray:
        """Forget the cache, evaluate `prompt` as the original's embedding rows; the logits
        (n_rows,) after it, a view."""
        self._lm.reset()
        return self._lm.decode_rows(self._text_rows(prompt))  # (len(prompt), n_embd) rows in

    def step(self, token: int) -> np.ndarray:
        """Evaluate `token` (a kept one) by its new id; the logits (n_rows,) after it, a view."""
        return self._lm.decode([int(self._model_id[token])])

    def model_ids(self, ids: np.ndarray) -> np.ndarray:
        """The new ids of `ids`; ValueError when one is not kept."""
        new = self._model_id[ids]
        if (new < 0).any():
            raise ValueError(f"token {ids[new < 0][0]} is not in the reduced vocabulary")
        return new

    def close(self) -> None:
        """Free the models and unmap the rows (idempotent)."""
        self._resources.close()


# ----------------------------------------------------------------------------------------------
# The conversion


def reduced_rows(kept_ids: np.ndarray, n_vocab: int) -> np.ndarray:
    """The original ids of the reduced vocabulary's rows: `kept_ids`, then the first ids not
    kept, as many as make the count equal `n_vocab` modulo ROW_COUNT_MODULUS."""
    n_padding = (n_vocab - kept_ids.size) % ROW_COUNT_MODULUS
    padding = np.setdiff1d(np.arange(n_vocab), kept_ids)[:n_padding]  # never sampled
    return np.concatenate((kept_ids, padding))  # (n_rows,) int64


def reduced_path(source: Path) -> Path:
    """Where the reduced copy of the GGUF `source` is cached (see HUB_REDUCED_DIR,
    LOCAL_REDUCED_SUFFIX)."""
    key = content_key(source)
    for folder in source.parents:  # models--Org--Name/snapshots/<commit>/[folders/]file
        if key and folder.name == "snapshots" and folder.parent.name.startswith(HUB_REPO_PREFIX):
            return folder.parent / HUB_REDUCED_DIR / key / source.name
    return source.with_name(source.stem + LOCAL_REDUCED_SUFFIX + source.suffix)


def convert_once(source: Path, kept_ids: np.ndarray) -> Path:
    """The reduced copy at `reduced_path(source)`: an earlier one with the right stamp is read
    without writing anything (a read-only cache serves); else `convert`, one process at a time
    (a file lock beside it: two servers loading the same model wait for one conversion)."""
    out = reduced_path(source)
    cannot_write = (
        f"cannot write beside {source}; the reduced output head is cached as {out}: make that "
        f"folder writable, {ADVICE}"
    )
    return convert_cached(
        out,
        lambda: _reused(source, out, kept_ids),
        lambda: convert(source, out, kept_ids),
        cannot_write,
    )


def _reused(source: Path, out: Path, kept_ids: np.ndarray) -> Path | None:
    """`out` when it holds the whole reduced copy of `source` keeping `kept_ids` (its stamp,
    and every tensor inside the file); ConvertError when `out` is a file we did not write."""
    if not out.is_file():
        return None
    stamp = _stamp_of(out)
    if stamp is None:
        raise ConvertError(
            f"{out} is in the way of the reduced output head of {source} and was not written "
            f"by this server: move it away, {ADVICE}"
        )
    if stamp == _stamp(source, kept_ids) and _truncated_at(out) is None:
        _LOGGER.debug("%s: reusing its reduced output head %s", source, out)
        return out
    return None


def convert(source: Path, out: Path, kept_ids: np.ndarray) -> Path:
    """Write `out`: the GGUF `source` with only the tokens `kept_ids` (original ids; new id i
    is `kept_ids[i]`) and the padding of `reduced_rows`, or keep an earlier `out` with the same
    stamp. Returns `out`.

    Errors name the file and what to do. Takes about 12 s for Orpheus 3B Q4_K_M on 2 cores
    (2.36 GB in, 1.81 GB out; 3 s with the source in the page cache), reading and writing.
    """
    stamp = _stamp(source, kept_ids)
    rows = reduced_rows(kept_ids, _check_source(source, kept_ids))
    start = time.monotonic()
    _LOGGER.info(
        "Writing the reduced output head of %s into %s (once; about 12 s for Orpheus 3B)",
        source,
        out,
    )
    if out.parent.parent.name == HUB_REDUCED_DIR:
        remove_orphan_conversions(out.parent.parent)
    partial = partial_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _write_reduced(source, partial, rows, stamp)
        publish(partial, out)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise ConvertError(
            f"cannot write {out} ({err}); check the free space and permissions of "
            f"{out.parent}, {ADVICE}"
        ) from err
    except ValueError as err:  # a tensor type gguf-py does not know
        partial.unlink(missing_ok=True)
        raise ConvertError(f"cannot convert {source} ({err}); {ADVICE}") from err
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _LOGGER.info(
        "Wrote %s (%.1f MB) in %.1f s", out, out.stat().st_size / 1e6, time.monotonic() - start
    )
    return out


def reduced_bytes(source: Path, kept_ids: np.ndarray) -> int:
    """The size of the reduced copy of `source` keeping `kept_ids`, before writing it: the
    source less the rows of `token_embd` and `output` that go (the vocabulary's metadata, a few
    MB, is not counted off)."""
    removed = 0
    for name, info in read_gguf_tensors(source).items():
        if name in (TOKEN_EMBD, OUTPUT) and len(info.dims) == 2:
            n_rows = reduced_rows(kept_ids, info.dims[1]).size
            try:
                row_bytes = ggml_row_bytes(info.ggml_type, info.dims[0])
            except ValueError as err:
                raise LlamaError(f"{source}: {name}: {err}") from err
            removed += (info.dims[1] - n_rows) * row_bytes
    return source.stat().st_size - removed


def _stamp(source: Path, kept_ids: np.ndarray) -> str:
    """What the reduced copy was made from: converter version, the source's size and
    modification time, and a digest of the kept ids."""
    stat = source.stat()
    digest = hashlib.sha256(np.asarray(kept_ids, "<i8").tobytes()).hexdigest()
    return json.dumps(
        {
            "converter_version": CONVERTER_VERSION,
            "source": [stat.st_size, stat.st_mtime_ns],
            "kept_ids": digest,
        },
        sort_keys=True,
    )


def _stamp_of(out: Path) -> str | None:
    """The stamp of an earlier reduced copy; None when it has none or is unreadable."""
    try:
        stamp = read_gguf_metadata(out).get(STAMP_KEY)
    except LlamaError:
        return None
    return stamp if isinstance(stamp, str) else None


def _check_source(source: Path, kept_ids: np.ndarray) -> int:
    """The vocabulary size (token_embd rows) of `source`; ConvertError unless it is a whole
    llama GGUF with a row for every kept id."""
    arch = read_gguf_metadata(source).get("general.architecture")
    if arch != ARCHITECTURE:
        raise ConvertError(
            f"{source} is a {arch!r} model; the reduced output head is made for "
            f"{ARCHITECTURE!r} GGUFs (Orpheus 3B): {ADVICE}"
        )
    embd = read_gguf_tensors(source).get(TOKEN_EMBD)
    if embd is None or len(embd.dims) != 2:
        raise ConvertError(f"{source} has no 2-D {TOKEN_EMBD}; is it a language model GGUF?")
    truncated = _truncated_at(source)
    if truncated is not None:
        raise ConvertError(
            f"{source} ends inside {truncated}: a truncated download? Delete it to "
            "download it again"
        )
    if int(kept_ids.max()) >= embd.dims[1]:
        raise ConvertError(
            f"{source} has {embd.dims[1]} tokens, fewer than the {int(kept_ids.max()) + 1} "
            "of Orpheus; is it an Orpheus GGUF?"
        )
    return int(embd.dims[1])


def _truncated_at(path: Path) -> str | None:
    """The first tensor of the GGUF `path` that does not lie whole inside the file (a truncated
    download or copy), or None. A type gguf-py does not know is a ConvertError."""
    size = path.stat().st_size
    for info in read_gguf_tensors(path).values():
        try:
            end = info.offset + int(np.prod(_byte_shape(info)))
        except ValueError as err:
            raise ConvertError(f"{path}: {info.name}: {err}; {ADVICE}") from err
        if end > size:
            return info.name
    return None


def _write_reduced(source: Path, path: Path, rows: np.ndarray, stamp: str) -> None:
    """The reduced GGUF at `path`: the source's metadata less its vocabulary, every tensor's
    bytes, and of `token_embd` and `output` the `rows` only (copied, not requantized)."""
    writer = gguf.GGUFWriter(path, ARCHITECTURE)
    for field in read_gguf_fields(source, skip_arrays_of=(TOKENIZER_PREFIX,)):
        if field.key.startswith(TOKENIZER_PREFIX) or field.key in LAYOUT_KEYS:
            continue
        if field.key == gguf.Keys.LLM.VOCAB_SIZE.format(arch=ARCHITECTURE):
            continue  # written below
        item_type = None if field.item_type is None else gguf.GGUFValueType(field.item_type)
        writer.add_key_value(
            field.key, field.value, gguf.GGUFValueType(field.value_type), item_type
        )
    writer.add_tokenizer_model(NO_TOKENIZER)
    writer.add_vocab_size(int(rows.size))
    writer.add_string(STAMP_KEY, stamp)
    writer.add_array(ORIGINAL_IDS_KEY, [int(i) for i in rows])

    data = np.memmap(source, np.uint8, mode="r")  # (file size,) the source's bytes
    for info in read_gguf_tensors(source).values():
        byte_shape = _byte_shape(info)
        end = info.offset + int(np.prod(byte_shape))
        tensor = data[info.offset : end].reshape(byte_shape)  # (rows…, row bytes) uint8
        if info.name in (TOKEN_EMBD, OUTPUT):
            tensor = np.ascontiguousarray(tensor[rows])  # (n_rows, row bytes), the same bytes
        writer.add_tensor(info.name, tensor, raw_dtype=gguf.GGMLQuantizationType(info.ggml_type))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _byte_shape(info: GgufTensorInfo) -> tuple[int, ...]:
    """numpy shape of a tensor's data as bytes: the rows (dims reversed), each a row's bytes."""
    return (*reversed(info.dims[1:]), ggml_row_bytes(info.ggml_type, info.dims[0]))
