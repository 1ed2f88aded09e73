"""The shared numpy sampler against hand-computed expectations."""

from __future__ import annotations

import numpy as np
import pytest

from wyoming_multitts.sampling import Sampler, SamplingConfig

IDS = np.array([10, 11, 12, 13], np.int64)
LOGITS = np.array([1.0, 3.0, 2.0, -1.0], np.float32)


def test_greedy_and_top_k_1_pick_the_best() -> None:
    assert Sampler(SamplingConfig(temperature=0), 20).sample(LOGITS, IDS) == 11
    sampler = Sampler(SamplingConfig(temperature=1.0, top_k=1), 20)
    assert {sampler.sample(LOGITS, IDS) for _ in range(20)} == {11}


def test_top_p_keeps_the_smallest_set_reaching_p() -> None:
    probs = np.exp(LOGITS - LOGITS.max()) / np.exp(LOGITS - LOGITS.max()).sum()
    assert probs[1] < 0.7 < probs[1] + probs[2]  # so p=0.7 keeps ids 11 and 12
    sampler = Sampler(SamplingConfig(top_p=0.7, seed=1), 20)
    assert {sampler.sample(LOGITS, IDS) for _ in range(200)} == {11, 12}


def test_same_seed_same_choices_and_frequencies_follow_the_softmax() -> None:
    first = Sampler(SamplingConfig(seed=4), 20)
    second = Sampler(SamplingConfig(seed=4), 20)
    picks = [first.sample(LOGITS, IDS) for _ in range(4000)]
    assert picks[:50] == [second.sample(LOGITS, IDS) for _ in range(50)]
    expected = np.exp(LOGITS) / np.exp(LOGITS).sum()
    observed = np.array([picks.count(i) for i in IDS]) / len(picks)
    np.testing.assert_allclose(observed, expected, atol=0.03)


def test_repetition_penalty_over_a_window() -> None:
    sampler = Sampler(SamplingConfig(temperature=0, repetition_penalty=4.0, penalty_window=2), 20)
    sampler.remember([11])
    assert sampler.sample(LOGITS, IDS) == 12  # 3/4 < 2: the seen best token loses
    sampler.remember([12, 13])  # 11 falls out of the 2-token window
    assert sampler.sample(LOGITS, IDS) == 11
    negative = Sampler(SamplingConfig(temperature=0, repetition_penalty=2.0), 20)
    negative.remember([10, 11, 12])
    # 1/2, 3/2, 2/2 and -1 unseen: 11 still best; a seen negative logit is multiplied
    assert negative.sample(LOGITS, IDS) == 11


@pytest.mark.parametrize(
    "bad", [{"temperature": -1}, {"top_p": 0}, {"top_k": -2}, {"repetition_penalty": 0}]
)
def test_out_of_range_settings_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        SamplingConfig(**bad)


def test_min_p_drops_the_unlikely() -> None:
    # softmax ratios to the best (3.0): 2.0 → e^-1 = 0.37, 1.0 → e^-2 = 0.14, -1 → e^-4 = 0.02
    sampler = Sampler(SamplingConfig(min_p=0.2, seed=2), 20)
    assert {sampler.sample(LOGITS, IDS) for _ in range(300)} == {11, 12}


def test_top_k_over_a_large_vocabulary_matches_a_full_sort() -> None:
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(157_000).astype(np.float32)
    ids = np.arange(logits.size)
    fast = Sampler(SamplingConfig(top_k=40, seed=9), logits.size)
    picks = {fast.sample(logits, ids) for _ in range(500)}
    assert picks <= set(np.argsort(-logits)[:40].tolist())
