"""`llm.LlamaModel` on real GGUFs: a cached prompt prefix survives `keep_prefix`, and the inputs
that make llama.cpp abort the whole process raise `LlamaError` instead (if they did not, this
test process would die, not fail)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from wyoming_multitts.devices import CPU
from wyoming_multitts.llm import LlamaError, LlamaModel
from wyoming_multitts.modelgen.orpheus import BOS_ID, EOS_ID
from wyoming_multitts.modelgen.wavtokenizer import TINY_WAVTOKENIZER, write_tiny_wavtokenizer

THREADS = 2
N_CTX = 64
LOGITS_TOLERANCE = 1e-4
"""Absolute, on logits of std 0.16: keep_prefix then B vs a fresh [prefix + B] (measured 0.0,
identical); B on a stale cache differs by 0.07."""

PREFIX = [BOS_ID, *range(300, 320)]  # a "speaker profile": 21 tokens evaluated once
SUFFIX_A = [400, 401, 402, 403, 404]
SUFFIX_B = [500, 501, 502]


@pytest.fixture(scope="module")
def orpheus(tiny_models: Path) -> Iterator[LlamaModel]:
    model = LlamaModel(
        tiny_models / "orpheus-tiny.gguf", CPU, n_ctx=N_CTX, threads=THREADS, where="test lm"
    )
    yield model
    model.close()


@pytest.fixture(scope="module")
def vocoder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaModel]:
    path = write_tiny_wavtokenizer(tmp_path_factory.mktemp("vocoder"))
    model = LlamaModel(path, CPU, n_ctx=8, threads=THREADS, where="test vocoder", embeddings=True)
    yield model
    model.close()


def test_keep_prefix_keeps_the_cached_prefix(orpheus: LlamaModel) -> None:
    """[prefix + A], keep_prefix(len(prefix)), then B: the logits of a fresh [prefix + B]."""
    orpheus.reset()
    fresh = orpheus.decode(PREFIX + SUFFIX_B).copy()

    orpheus.reset()
    orpheus.decode(PREFIX)
    after_a = orpheus.decode(SUFFIX_A).copy()
    orpheus.keep_prefix(len(PREFIX))
    assert orpheus.n_past == len(PREFIX)
    kept = orpheus.decode(SUFFIX_B).copy()
    assert orpheus.n_past == len(PREFIX) + len(SUFFIX_B)
    np.testing.assert_allclose(kept, fresh, rtol=0, atol=LOGITS_TOLERANCE)

    # the test can tell: without keep_prefix, B after what is cached gives other logits
    stale = orpheus.decode(SUFFIX_B).copy()
    assert np.abs(stale - fresh).max() > 100 * LOGITS_TOLERANCE
    assert np.abs(after_a - fresh).max() > 100 * LOGITS_TOLERANCE

    # and again: the same prefix serves a second request
    orpheus.keep_prefix(len(PREFIX))
    np.testing.assert_allclose(orpheus.decode(SUFFIX_B), fresh, rtol=0, atol=LOGITS_TOLERANCE)


def test_keep_prefix_checks_its_argument(orpheus: LlamaModel) -> None:
    orpheus.reset()
    orpheus.decode(PREFIX)
    with pytest.raises(ValueError, match="only 21 tokens are cached"):
        orpheus.keep_prefix(len(PREFIX) + 1)
    orpheus.keep_prefix(0)
    assert orpheus.n_past == 0
    orpheus.decode(PREFIX)  # positions start at 0 again: llama.cpp accepts the batch


def test_token_classes(orpheus: LlamaModel) -> None:
    assert orpheus.is_control(BOS_ID) and orpheus.is_end_of_generation(EOS_ID)
    assert not orpheus.is_control(300) and not orpheus.is_end_of_generation(300)
    for bad in (-1, orpheus.n_vocab):
        with pytest.raises(LlamaError, match="outside its vocabulary"):
            orpheus.is_control(bad)
        with pytest.raises(LlamaError, match="outside its vocabulary"):
            orpheus.token_text(bad)


def test_encode_returns_one_row_per_token(vocoder: LlamaModel) -> None:
    rows = vocoder.encode(np.array([1, 2, 4095]))
    assert rows.shape == (3, TINY_WAVTOKENIZER.n_embd_out) and rows.dtype == np.float32
    assert np.isfinite(rows).all()
    np.testing.assert_array_equal(vocoder.encode([1, 2, 4095]), rows)  # no state between calls


def test_encode_guards_what_would_abort(vocoder: LlamaModel) -> None:
    """More tokens than the ubatch (GGML_ASSERT in llama_encode) and ids outside the codebook."""
    with pytest.raises(LlamaError, match="9 tokens do not fit the encoder's 8-token context"):
        vocoder.encode(list(range(9)))
    for bad in (-1, TINY_WAVTOKENIZER.n_codes):
        with pytest.raises(LlamaError, match=f"id {bad} is outside the model's range 0..4095"):
            vocoder.encode([0, bad])
    with pytest.raises(ValueError):
        vocoder.encode([])
    assert vocoder.encode(list(range(8))).shape[0] == 8  # still usable


def test_no_tokenizer_no_abort(vocoder: LlamaModel) -> None:
    """The vocoder has vocabulary type none: llama.cpp would abort on tokenize."""
    assert not vocoder.has_tokenizer
    with pytest.raises(LlamaError, match="has no tokenizer"):
        vocoder.tokenize("hello")
    with pytest.raises(LlamaError, match="has no tokenizer"):
        vocoder.special_token("<|im_start|>")
    with pytest.raises(LlamaError, match="has no tokenizer"):
        vocoder.token_text(1)
    with pytest.raises(LlamaError, match="has no tokenizer"):
        vocoder.is_control(1)
    with pytest.raises(LlamaError, match="has no tokenizer"):
        vocoder.is_end_of_generation(1)


def test_decode_and_encode_need_the_right_kind(orpheus: LlamaModel, vocoder: LlamaModel) -> None:
    with pytest.raises(LlamaError, match="use encode"):
        vocoder.decode([1])
    with pytest.raises(LlamaError, match="not loaded as an encoder"):
        orpheus.encode([1])
