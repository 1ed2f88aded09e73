"""The code predictor's part of a frame: from the talker's last hidden state and code 0, codes
1 … G-1, one llama.cpp step each from a fresh cache, with the heads applied in numpy (the heads
are tables, not in the GGUF; docs/engines.md, "Qwen3-TTS: architecture")."""

from __future__ import annotations

import numpy as np

from ...llm import LlamaModel
from ...sampling import Sampler
from .tables import Qwen3Tables

PREFILL_ROWS = 2
"""The predictor's first input: the talker's hidden state and the embedding of code 0."""
SINGLE_THREADED_MATMUL = "ij,nj->ni"
"""einsum of the per-step products (predictor heads, small_to_mtp_projection): numpy's own loop
on this thread. A BLAS call (`@`) leaves OpenBLAS's threads spinning for a while, and on a CPU
that llama.cpp's threads already fill, that made the predictor 3.3x slower (0.6B, 2 cores:
348 ms instead of 105 ms a frame); einsum costs ~0.5 ms a head."""


class CodePredictor:
    """The code predictor's stack (llama.cpp, owned by the engine) and its numpy tables."""

    def __init__(self, model: LlamaModel, tables: Qwen3Tables, num_code_groups: int) -> None:
        self._model = model
        self._tables = tables
        self._groups = num_code_groups

    def _project(self, rows: np.ndarray) -> np.ndarray:
        """Talker-width rows (n, H) → predictor input rows (n, Hp) (small_to_mtp_projection)."""
        tables = self._tables
        if tables.mtp_weight is None or tables.mtp_bias is None:
            return rows
        projected = np.einsum(SINGLE_THREADED_MATMUL, tables.mtp_weight, rows)  # (n, Hp)
        return projected + tables.mtp_bias  # (n, Hp) float32

    def predict(self, hidden: np.ndarray, code0: int, sampler: Sampler) -> np.ndarray:
        """The frame's codes (G,) int64: code0, then one code per predictor step from a fresh
        cache: [talker hidden, embedding of code0] → head 0 → code 1; embedding of code i →
        head i → code i+1."""
        model, tables = self._model, self._tables
        model.reset()
        codes = np.empty(self._groups, np.int64)  # (G,)
        codes[0] = code0
        rows = self._project(np.stack([hidden, tables.codec[code0]]))  # (2, Hp)
        for i in range(len(codes) - 1):
            _, state = model.decode_embeddings(rows)  # (Hp,)
            logits = np.einsum(SINGLE_THREADED_MATMUL, tables.heads[i], state[None])[0]
            codes[i + 1] = sampler.sample(logits)  # logits (codebook,)
            if i + 2 < len(codes):
                table = tables.predictor[i]  # (codebook, H)
                rows = self._project(table[codes[i + 1]][None].astype(np.float32))
        return codes
