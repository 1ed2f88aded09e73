"""Rows of a GGUF's embedding matrix as llama.cpp's CPU backend reads them for token ids: for a
model whose prompt tokens are not in its own vocabulary (the Orpheus reduced output head takes
them from the original GGUF and feeds them to `LlamaModel.decode_rows`)."""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import LlamaError
from ..formats.ggml import ggml_row_bytes, ggml_to_float
from ..formats.gguf import read_gguf_tensors

TOKEN_EMBD = "token_embd.weight"
"""The embedding matrix of every llama.cpp language model (`LLM_TENSOR_TOKEN_EMBD`)."""


class TokenRows:
    """Rows of a GGUF's embedding matrix as float32, the values llama.cpp's CPU backend makes of
    them for token ids.

    The matrix is memory-mapped (only the rows asked for are read). Each row goes through ggml's
    own `to_float` for its type, the function the CPU `get_rows` of quantized types calls; F16
    and BF16 widen exactly in both, and F32 rows are copied as `get_rows` copies them
    (docs/engines.md, "Orpheus: reduced output head"). Not thread-safe, like `LlamaModel`.
    """

    def __init__(self, path: Path, tensor: str = TOKEN_EMBD) -> None:
        """Map `tensor` of the GGUF at `path`; LlamaError when it is missing or unreadable."""
        self.path = path
        info = read_gguf_tensors(path).get(tensor)
        if info is None or len(info.dims) != 2:
            raise LlamaError(f"{path} has no 2-D tensor {tensor}; is it a language model GGUF?")
        self.n_embd, self.n_rows = info.dims
        try:
            row_bytes = ggml_row_bytes(info.ggml_type, self.n_embd)
            self._to_float = ggml_to_float(info.ggml_type)
        except ValueError as err:
            raise LlamaError(f"{path}: {tensor}: {err}") from err
        with open(path, "rb") as file:
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        size = self.n_rows * row_bytes
        if info.offset + size > len(self._map):
            self._map.close()
            raise LlamaError(f"{path} ends inside {tensor}: a truncated download? delete it")
        data = np.frombuffer(self._map, np.uint8, size, info.offset)  # (size,) the file's bytes
        self._rows: np.ndarray | None = data.reshape(self.n_rows, row_bytes)  # (n_rows, bytes)

    def __call__(self, ids: Sequence[int]) -> np.ndarray:
        """The rows of `ids`, (len(ids), n_embd) float32; LlamaError for an id out of range."""
        if self._rows is None:
            raise LlamaError(f"{self.path}: the token rows were closed")
        index = np.asarray(ids, np.int64)  # (n,)
        if index.ndim != 1 or index.size == 0:
            raise ValueError(f"token rows need a non-empty 1-D sequence of ids, got {index.shape}")
        bad = index[(index < 0) | (index >= self.n_rows)]
        if bad.size:
            raise LlamaError(f"{self.path}: token id {bad[0]} is outside its {self.n_rows} rows")
        raw = self._rows[index]  # (n, row_bytes) uint8, a copy
        if self._to_float is None:
            return raw.view(np.float32)  # (n, n_embd) float32
        rows = np.empty((index.size, self.n_embd), np.float32)  # (n, n_embd)
        for i in range(index.size):  # one call per row, as get_rows makes
            self._to_float(raw[i].ctypes.data, rows[i].ctypes.data, self.n_embd)
        return rows

    def close(self) -> None:
        """Unmap the file (idempotent)."""
        self._rows = None  # the view must go before the map can close
        self._map.close()
