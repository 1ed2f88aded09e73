"""Seeded numpy token sampling shared by every engine.

Engines hand us the logits of the candidate tokens only (e.g. Orpheus: the 4096 codes valid at
this frame position plus the stop tokens), which is both the allowed-token mask and a large
saving over sampling a 157k vocabulary (docs/engines.md, "Sampling only the candidate tokens").
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
    """Samples token ids from logits with one `SamplingConfig` and its own generator."""

    def __init__(self, config: SamplingConfig, n_vocab: int) -> None:
        self.config = config
        self._rng = np.random.default_rng(config.seed)
        self._seen_count = np.zeros(n_vocab, np.int32)  # (n_vocab,) occurrences in the window
        self._seen: set[int] = set()  # the ids whose count is > 0 (few: the window's tokens)
        self._history: list[int] = []

    def remember(self, tokens: "list[int] | np.ndarray") -> None:
        """Count tokens as seen (prompt and generated) for the repetition penalty."""
        window = self.config.penalty_window
        for token in np.asarray(tokens, np.int64).ravel():
            self._count(int(token), +1)
            self._history.append(int(token))
            if window and len(self._history) > window:
                self._count(self._history[-window - 1], -1)

    def _count(self, token: int, change: int) -> None:
        self._seen_count[token] += change
        if self._seen_count[token] > 0:
            self._seen.add(token)
        else:
            self._seen.discard(token)

    def sample(self, logits: np.ndarray, candidate_ids: np.ndarray | None = None) -> int:
        """Pick a token given `logits` of `candidate_ids` (int64 (n,); None: the whole
        vocabulary, logits indexed by token id)."""
        cfg = self.config
        scores = np.array(logits, np.float32)  # (n,) private copy
        if cfg.repetition_penalty != 1.0 and self._seen:
            if candidate_ids is None:  # only the few seen tokens change: no pass over 157k
                positions = np.fromiter(self._seen, np.int64, len(self._seen))
            else:
                positions = np.flatnonzero(self._seen_count[candidate_ids] > 0)
            values = scores[positions]
            scores[positions] = np.where(
                values > 0, values / cfg.repetition_penalty, values * cfg.repetition_penalty
            )
        if cfg.temperature == 0:
            return self._token(int(np.argmax(scores)), candidate_ids)
        if not (cfg.min_p or cfg.top_k or cfg.top_p < 1.0):
            # no cut: every candidate keeps its probability, so nothing needs sorting (Bark's
            # 10,001 semantic logits: 0.1 instead of 0.6 ms a step)
            probs = np.exp((scores.astype(np.float64) - scores.max()) / cfg.temperature)  # (n,)
            choice = self._rng.choice(probs.size, p=probs / probs.sum())
            return self._token(int(choice), candidate_ids)

        if cfg.min_p:
            # min-p keeps tokens with p >= min_p * p_best, i.e. score >= best + T * ln(min_p):
            # one vectorised comparison finds them, so a 157k vocabulary is never sorted
            floor = scores.max() + cfg.temperature * np.log(cfg.min_p)
            pool = np.flatnonzero(scores >= floor)  # (m,) usually a handful
        else:
            pool = np.arange(scores.size)
        if cfg.top_k and cfg.top_k < pool.size:
            pool = pool[np.argpartition(-scores[pool], cfg.top_k - 1)[: cfg.top_k]]  # (k,) O(m)
        order = pool[np.argsort(-scores[pool], kind="stable")]  # (k,) best first
        top = scores[order].astype(np.float64)  # (k,) float64 for a stable softmax
        probs = np.exp((top - top[0]) / cfg.temperature)  # (k,) relative to the best
        if cfg.min_p:  # exact at the boundary, where float32 scores and float64 probs differ
            keep = int(np.count_nonzero(probs >= cfg.min_p))  # probs[0] == 1: the best
            order, probs = order[:keep], probs[:keep]
        probs /= probs.sum()
        if cfg.top_p < 1.0:
            # keep the smallest prefix whose mass reaches top_p (always at least one token)
            keep = int(np.searchsorted(np.cumsum(probs), cfg.top_p) + 1)
            order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
        choice = self._rng.choice(order.size, p=probs)
        return self._token(int(order[choice]), candidate_ids)

    @staticmethod
    def _token(position: int, candidate_ids: np.ndarray | None) -> int:
        return position if candidate_ids is None else int(candidate_ids[position])
