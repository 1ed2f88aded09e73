"""The code predictor's part of a frame: from the talker's last hidden state and code 0, codes
1 … G-1, one llama.cpp step each from a fresh cache, with the heads applied in torch (the heads
are tables, not in the GGUF; docs/engines.md, "Qwen3-TTS: architecture")."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ...llm.model import LlamaModel
from ...sampling import Sampler
from .tables import Qwen3Tables

PREFILL_ROWS = 2
"""The predictor's first input: the talker's hidden state and the embedding of code 0."""
SINGLE_THREADED_MATMUL = "ij,nj->ni"
"""einsum of `small_to_mtp_projection` (1.7B): numpy's own loop on this thread. A BLAS call
(`@`) leaves OpenBLAS's threads spinning for a while, and on a CPU that llama.cpp's threads
already fill, that made the predictor 3.3x slower (0.6B, 2 cores: 348 ms instead of 105 ms a
frame)."""


def torch_heads(heads: np.ndarray, device: torch.device) -> torch.Tensor:
    """The heads (G-1, codebook, Hp) as a torch tensor on `device`: on the CPU over the same
    memory (the tables' read-only map, which torch never writes to), on a GPU a copy there, so
    that a frame's 15 products are GPU steps of microseconds rather than CPU ones of about
    0.3 ms each (63 MB of f16 a frame)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The given NumPy array is not writable")
        return torch.from_numpy(heads).to(device)


def head_logits(heads: torch.Tensor, index: int, state: np.ndarray) -> np.ndarray:
    """Logits (codebook,) float32 of head `index` for the predictor's hidden state (Hp,).

    torch's matrix-vector product in the heads' dtype (f16 unless the conversion is f32; the
    state rounded to it, as ggml rounds activations for its f16 matrices) reads half the bytes of
    float32 on all cores: 0.6B, 2 cores, 15 heads a frame, 62 ms a frame for the predictor
    against 66 with float32 heads in numpy (docs/benchmarks.md, "Huge pages")."""
    vector = torch.from_numpy(state).to(heads.device, heads.dtype)  # (Hp,)
    return torch.mv(heads[index], vector).float().cpu().numpy()  # (codebook,)


class CodePredictor:
    """The code predictor's stack (llama.cpp, owned by the engine), its heads and numpy tables."""

    def __init__(
        self,
        model: LlamaModel,
        tables: Qwen3Tables,
        num_code_groups: int,
        device: torch.device,
    ) -> None:
        """`device`: torch's, where the heads are applied (the engine's codec device)."""
        self._model = model
        self._tables = tables
        self._heads = torch_heads(tables.heads, device)  # (G-1, codebook, Hp)
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
            codes[i + 1] = sampler.sample(head_logits(self._heads, i, state))  # (codebook,)
            if i + 2 < len(codes):
                table = tables.predictor[i]  # (codebook, H)
                rows = self._project(table[codes[i + 1]][None].astype(np.float32))
        return codes
