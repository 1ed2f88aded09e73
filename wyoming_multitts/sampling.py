"""Seeded numpy token sampling shared by every engine.

Engines hand us the logits of the candidate tokens only (e.g. Orpheus: the 4096 codes valid at
this frame position plus the stop tokens), which is both the allowed-token mask and a large
saving over sampling a 157k vocabulary (perf-anchors.md §6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SamplingConfig:
    """How to pick the next token."""

    temperature: float = 1.0
    """Softmax temperature; 0 picks the most likely token (greedy)."""
    top_k: int = 0
    """Keep only the k most likely candidates (0: no cut)."""
    top_p: float = 1.0
    """Keep the smallest set of candidates whose probability reaches p (1: no cut)."""
    min_p: float = 0.0
    """Drop candidates less likely than min_p times the most likely one (0: no cut)."""
    repetition_penalty: float = 1.0
    """Divide positive (multiply negative) logits of tokens already seen (1: off)."""
    penalty_window: int = 0
    """Only tokens among the last N count as seen (0: the whole history)."""
    seed: int = 0
    """Seed of the random generator: the same text, voice and seed give the same audio."""

    def __post_init__(self) -> None:
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError("sampling: need temperature >= 0, 0 < top_p <= 1 and top_k >= 0")
        if not 0 <= self.min_p < 1:
            raise ValueError("sampling: need 0 <= min_p < 1")
        if self.repetition_penalty <= 0 or self.penalty_window < 0:
            raise ValueError("sampling: need repetition_penalty > 0 (1 = off), penalty_window >= 0")


class Sampler:
    """Samples token ids from candidate logits with one `SamplingConfig` and its own generator."""

    def __init__(self, config: SamplingConfig, n_vocab: int) -> None:
        self.config = config
        self._rng = np.random.default_rng(config.seed)
        self._seen_count = np.zeros(n_vocab, np.int32)  # (n_vocab,) occurrences in the window
        self._history: list[int] = []

    def remember(self, tokens: "list[int] | np.ndarray") -> None:
        """Count tokens as seen (prompt and generated) for the repetition penalty."""
        for token in np.asarray(tokens, np.int64).ravel():
            self._history.append(int(token))
            self._seen_count[token] += 1
            window = self.config.penalty_window
            if window and len(self._history) > window:
                self._seen_count[self._history[-window - 1]] -= 1

    def sample(self, logits: np.ndarray, candidate_ids: np.ndarray) -> int:
        """Pick one of `candidate_ids` (int64, shape (n,)) given their `logits` (shape (n,))."""
        cfg = self.config
        scores = np.array(logits, np.float64)  # (n,) private copy, float64 for a stable softmax
        if cfg.repetition_penalty != 1.0:
            seen = self._seen_count[candidate_ids] > 0  # (n,) bool
            penalised = np.where(
                scores > 0, scores / cfg.repetition_penalty, scores * cfg.repetition_penalty
            )
            scores = np.where(seen, penalised, scores)
        if cfg.temperature == 0:
            return int(candidate_ids[int(np.argmax(scores))])

        if cfg.top_k and cfg.top_k < scores.size:
            # the k best in O(n), then sorted: a 157k vocabulary costs ~1 ms instead of ~10
            best = np.argpartition(-scores, cfg.top_k - 1)[: cfg.top_k]  # (k,) unordered
            order = best[np.argsort(-scores[best], kind="stable")]  # (k,) best first
        else:
            order = np.argsort(-scores, kind="stable")  # (n,) best first
        probs = np.exp((scores[order] - scores[order[0]]) / cfg.temperature)  # (k,)
        if cfg.min_p:
            keep = int(np.count_nonzero(probs >= cfg.min_p))  # probs[0] == 1: the best
            order, probs = order[:keep], probs[:keep]
        probs /= probs.sum()
        if cfg.top_p < 1.0:
            # keep the smallest prefix whose mass reaches top_p (always at least one token)
            keep = int(np.searchsorted(np.cumsum(probs), cfg.top_p) + 1)
            order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
        choice = self._rng.choice(order.size, p=probs)
        return int(candidate_ids[order[choice]])
