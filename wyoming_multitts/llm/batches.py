"""llama.cpp's batches for one sequence: token ids or embedding rows at consecutive positions,
and an encoder's whole sequence. Each is allocated once per context (`llama_batch_init`), owned
by the model's ExitStack, and has its fixed fields (sequence id, outputs) filled once; a call
fills only what changes and runs `llama_decode` or `llama_encode` once.

`LlamaModel` cuts longer inputs into parts of the batch's size and keeps the count of cached
positions; the inputs are checked there before they get here.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Sequence

import llama_cpp
import numpy as np

from ..errors import LlamaError

SEQUENCE = 0
"""The one sequence id every batch and KV-cache call uses (a context holds one sequence)."""


def _run(run: Any, context: Any, batch: Any, path: Path) -> None:
    """`llama_decode` or `llama_encode` of `batch`; LlamaError for a non-zero status."""
    status = run(context, batch)
    if status != 0:
        raise LlamaError(f"{path}: {run.__name__} failed with status {status}")


class TokenBatch:
    """Up to `size` token ids of sequence 0, decoded at positions from `n_past` on."""

    def __init__(self, size: int, every_output: bool, stack: contextlib.ExitStack) -> None:
        """`every_output`: every token outputs (a hidden-states context, where llama.cpp
        overrides us anyway); else only the last one, whose logits we read."""
        self.size = size
        self._every_output = every_output
        self._batch = llama_cpp.llama_batch_init(size, 0, 1)
        stack.callback(llama_cpp.llama_batch_free, self._batch)

    def decode(self, context: Any, tokens: Sequence[int], n_past: int, path: Path) -> None:
        """Evaluate `tokens` (1 to `size`) after the `n_past` cached positions."""
        batch = self._batch
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i] = token
            batch.pos[i] = n_past + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = SEQUENCE
            batch.logits[i] = self._every_output or i == len(tokens) - 1
        _run(llama_cpp.llama_decode, context, batch, path)


class RowBatch:
    """Up to `size` embedding rows of sequence 0 (token = NULL, embd = rows), decoded at
    positions from `n_past` on."""

    def __init__(
        self, size: int, n_embd: int, every_output: bool, stack: contextlib.ExitStack
    ) -> None:
        """`every_output`: every row outputs (llama.cpp does so when embeddings are on; say so
        rather than rely on it); else only the last one, whose logits we read."""
        self.size = size
        self._every_output = every_output
        self._batch = llama_cpp.llama_batch_init(size, n_embd, 1)
        stack.callback(llama_cpp.llama_batch_free, self._batch)
        batch = self._batch
        np.ctypeslib.as_array(batch.n_seq_id, shape=(size,))[:] = 1
        for i in range(size):
            batch.seq_id[i][0] = SEQUENCE
        self._outputs = np.ctypeslib.as_array(batch.logits, shape=(size,))  # (size,) int8
        self._outputs[:] = 1
        self._rows = np.ctypeslib.as_array(batch.embd, shape=(size, n_embd))  # (size, n_embd)
        self._pos = np.ctypeslib.as_array(batch.pos, shape=(size,))  # (size,) int32

    def decode(self, context: Any, rows: np.ndarray, n_past: int, path: Path) -> None:
        """Evaluate `rows` (1 to `size`, n_embd) float32 after the `n_past` cached positions."""
        n_rows = rows.shape[0]
        self._rows[:n_rows] = rows
        self._pos[:n_rows] = np.arange(n_past, n_past + n_rows)
        if not self._every_output:  # n_outputs_max is 1 on such a context
            self._outputs[:n_rows] = 0
            self._outputs[n_rows - 1] = 1
        self._batch.n_tokens = n_rows
        _run(llama_cpp.llama_decode, context, self._batch, path)


class EncoderBatch:
    """One whole sequence of up to `size` token ids for an encoder: position i, every token
    an output."""

    def __init__(self, size: int, stack: contextlib.ExitStack) -> None:
        self.size = size
        self._batch = llama_cpp.llama_batch_init(size, 0, 1)
        stack.callback(llama_cpp.llama_batch_free, self._batch)
        batch = self._batch
        np.ctypeslib.as_array(batch.pos, shape=(size,))[:] = np.arange(size)
        np.ctypeslib.as_array(batch.n_seq_id, shape=(size,))[:] = 1
        np.ctypeslib.as_array(batch.logits, shape=(size,))[:] = 1
        for i in range(size):
            batch.seq_id[i][0] = SEQUENCE
        self._tokens = np.ctypeslib.as_array(batch.token, shape=(size,))  # (size,) int32

    def encode(self, context: Any, ids: np.ndarray, path: Path) -> None:
        """Run the encoder over `ids` (1 to `size` valid token ids) as one sequence."""
        self._tokens[: ids.size] = ids
        self._batch.n_tokens = int(ids.size)
        _run(llama_cpp.llama_encode, context, self._batch, path)
