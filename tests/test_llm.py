"""`llm.LlamaModel` on real GGUFs: a cached prompt prefix survives `keep_prefix`, embedding-row
input gives the logits of token input plus the final hidden state, `TokenRows` gives the rows
llama.cpp looks up for token ids (bit for bit), and the inputs that make llama.cpp abort the
whole process raise `LlamaError` instead (if they did not, this test process would die, not
fail)."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Iterator

import gguf
import llama_cpp
import numpy as np
import pytest

from tools.modelgen.gguf_lm import byte_level_vocab, write_lm_gguf
from tools.modelgen.orpheus import BOS_ID, EOS_ID
from tools.modelgen.wavtokenizer import TINY_WAVTOKENIZER, write_tiny_wavtokenizer
from wyoming_multitts.devices import CPU, Device
from wyoming_multitts.errors import LlamaError
from wyoming_multitts.formats.gguf import LmShape, read_gguf_tensors
from wyoming_multitts.llm.model import LlamaModel, flash_attention
from wyoming_multitts.llm.token_rows import TokenRows

THREADS = 2
N_CTX = 64
LOGITS_TOLERANCE = 1e-4
"""Absolute, on logits of std 0.16: keep_prefix then B vs a fresh [prefix + B] (measured 0.0,
identical); B on a stale cache differs by 0.07."""

ARM64_FP16_ROUNDINGS = 4 * 2.0**-11
"""On arm64, a batch and the same rows one at a time differ by up to this many of fp16's unit
roundoff (2^-11), relative to the largest value: a batch's matrix products against an F16
tensor (Orpheus's weights; every model's F16 KV cache) run llama.cpp's tinyBLAS, which keeps the
F32 activations (or, with fp16 vector arithmetic, a Pi 5's `+fp16`, accumulates in fp16), where
one row rounds the activations to fp16 and accumulates in f32 (`ggml-cpu/llamafile/sgemm.cpp`,
llama-cpp-python 0.3.36). On x86 both round alike and agree exactly. Measured under qemu as a
Cortex-A76: 1.7 roundings (Orpheus, +fp16), 0.2 (Qwen3); a stale cache is off by hundreds
(docs/arm64.md)."""


def batch_vs_rows_tolerance(x86_tolerance: float, expected: np.ndarray) -> float:
    """The absolute tolerance between a batch and the same rows one at a time, on this CPU."""
    if platform.machine() != "aarch64":
        return x86_tolerance
    return max(x86_tolerance, ARM64_FP16_ROUNDINGS * float(np.abs(expected).max()))


PREFIX = [BOS_ID, *range(300, 320)]  # a "speaker profile": 21 tokens evaluated once
SUFFIX_A = [400, 401, 402, 403, 404]
SUFFIX_B = [500, 501, 502]

TINY_QWEN3 = LmShape(
    arch="qwen3",
    n_vocab=512,
    n_embd=64,
    n_layer=2,
    n_head=4,
    n_head_kv=2,
    head_dim=16,
    n_ff=128,
    rope_base=1_000_000.0,
    rms_eps=1e-6,
    qk_norm=True,
    tied_embeddings=False,  # as the Qwen3-TTS talker: codec_embedding in, codec_head out
)
"""A Qwen3-TTS-talker-like stock `qwen3` model, F32 so embedding rows equal token_embd rows."""
QWEN3_BATCH = 8
"""Small n_batch so 20 rows run as 3 llama_decode calls."""
EMBEDDING_TOLERANCE = 1e-5
"""Absolute, on logits of std 0.16 and hidden values of std 1: embedding rows vs token ids
measured 6e-8 (logits); a single batch vs one row at a time 6e-8 (logits), 2.4e-7 (hidden);
hidden @ output.weight.T vs logits 4.5e-8."""
ROWS = list(range(300, 320))
"""Token ids whose embedding rows are fed (20 rows: prefix 12, then 8 one at a time)."""


@pytest.fixture(scope="module")
def orpheus(tiny_models: Path) -> Iterator[LlamaModel]:
    model = LlamaModel(tiny_models / "orpheus-tiny.gguf", CPU, n_ctx=N_CTX, threads=THREADS)
    yield model
    model.close()


@pytest.fixture(scope="module")
def vocoder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaModel]:
    path = write_tiny_wavtokenizer(tmp_path_factory.mktemp("vocoder"))
    model = LlamaModel(path, CPU, n_ctx=8, threads=THREADS, embeddings=True)
    yield model
    model.close()


def test_flash_attention_is_off_on_the_cpu_only() -> None:
    """ggml's CPU flash attention was 2.4x slower to prefill deep in a cached prompt
    (llm.flash_attention); an accelerator keeps llama.cpp's own choice."""
    assert flash_attention(CPU) == llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    gpu = Device(name="cuda:0", llama_device="CUDA0", torch_device="cuda:0")
    assert flash_attention(gpu) == llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO


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
    tolerance = batch_vs_rows_tolerance(LOGITS_TOLERANCE, fresh)
    np.testing.assert_allclose(kept, fresh, rtol=0, atol=tolerance)

    # the test can tell: without keep_prefix, B after what is cached gives other logits
    stale = orpheus.decode(SUFFIX_B).copy()
    assert np.abs(stale - fresh).max() > 10 * tolerance
    assert np.abs(after_a - fresh).max() > 10 * tolerance

    # and again: the same prefix serves a second request
    orpheus.keep_prefix(len(PREFIX))
    np.testing.assert_allclose(orpheus.decode(SUFFIX_B), fresh, rtol=0, atol=tolerance)


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


# ---- embedding-row input with hidden states (the Qwen3-TTS talker route)


@pytest.fixture(scope="module")
def qwen3_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("qwen3") / "qwen3-tiny.gguf"
    vocab = byte_level_vocab(
        512, {510: "<|bos|>", 511: "<|eos|>"}, pre="qwen2", bos_id=510, eos_id=511
    )
    write_lm_gguf(path, TINY_QWEN3, vocab, seed=7, weight_type=gguf.GGMLQuantizationType.F32)
    return path


@pytest.fixture(scope="module")
def qwen3_tables(qwen3_file: Path) -> dict[str, np.ndarray]:
    """token_embd.weight and output.weight, (n_vocab, n_embd) float32 each."""
    reader = gguf.GGUFReader(qwen3_file)
    names = ("token_embd.weight", "output.weight")
    return {t.name: np.array(t.data, np.float32) for t in reader.tensors if t.name in names}


@pytest.fixture(scope="module")
def qwen3_tokens(qwen3_file: Path) -> Iterator[LlamaModel]:
    model = LlamaModel(qwen3_file, CPU, n_ctx=N_CTX, threads=THREADS, n_batch=QWEN3_BATCH)
    yield model
    model.close()


@pytest.fixture(scope="module")
def qwen3_hidden(qwen3_file: Path) -> Iterator[LlamaModel]:
    model = LlamaModel(
        qwen3_file,
        CPU,
        n_ctx=N_CTX,
        threads=THREADS,
        n_batch=QWEN3_BATCH,
        hidden_states=True,
    )
    yield model
    model.close()


def test_embedding_rows_give_the_logits_of_tokens(
    qwen3_tokens: LlamaModel, qwen3_hidden: LlamaModel, qwen3_tables: dict[str, np.ndarray]
) -> None:
    """token_embd rows in, the logits of the same ids in, and the hidden state that made them."""
    embed, head = qwen3_tables["token_embd.weight"], qwen3_tables["output.weight"]
    assert qwen3_hidden.n_embd == TINY_QWEN3.n_embd == embed.shape[1]
    qwen3_tokens.reset()
    expected = qwen3_tokens.decode(ROWS).copy()

    qwen3_hidden.reset()
    logits, hidden = qwen3_hidden.decode_embeddings(embed[ROWS])
    assert qwen3_hidden.n_past == len(ROWS)
    assert logits.shape == (TINY_QWEN3.n_vocab,) and logits.dtype == np.float32
    assert hidden.shape == (TINY_QWEN3.n_embd,) and hidden.dtype == np.float32
    np.testing.assert_allclose(logits, expected, rtol=0, atol=EMBEDDING_TOLERANCE)
    # the hidden state is what the head reads: after output_norm (weight ones, so RMS ~1;
    # the residual stream before it has RMS ~0.03), before output.weight
    np.testing.assert_allclose(hidden @ head.T, logits, rtol=0, atol=EMBEDDING_TOLERANCE)
    assert abs(np.sqrt(np.mean(hidden**2)) - 1) < 0.01

    # copies, not views into llama.cpp's buffer: the next call leaves them alone
    kept = logits.copy()
    qwen3_hidden.decode_embeddings(embed[[1]])
    np.testing.assert_array_equal(logits, kept)

    # token ids on the hidden-states context: the same logits
    qwen3_hidden.reset()
    np.testing.assert_allclose(
        qwen3_hidden.decode(ROWS), expected, rtol=0, atol=EMBEDDING_TOLERANCE
    )


def test_embedding_rows_incrementally(
    qwen3_hidden: LlamaModel, qwen3_tables: dict[str, np.ndarray]
) -> None:
    """Prefix rows, then one row at a time (the talker's loop) equals one batch of them all;
    keep_prefix and reset work as for token input."""
    embed = qwen3_tables["token_embd.weight"]
    rows = embed[ROWS]  # (20, n_embd)
    qwen3_hidden.reset()
    all_logits, all_hidden = qwen3_hidden.decode_embeddings(rows)

    qwen3_hidden.reset()
    prefix = 12
    qwen3_hidden.decode_embeddings(rows[:prefix])
    for i in range(prefix, len(ROWS)):
        logits, hidden = qwen3_hidden.decode_embeddings(rows[i : i + 1])
    assert qwen3_hidden.n_past == len(ROWS)
    logits_tolerance = batch_vs_rows_tolerance(EMBEDDING_TOLERANCE, all_logits)
    hidden_tolerance = batch_vs_rows_tolerance(EMBEDDING_TOLERANCE, all_hidden)
    np.testing.assert_allclose(logits, all_logits, rtol=0, atol=logits_tolerance)
    np.testing.assert_allclose(hidden, all_hidden, rtol=0, atol=hidden_tolerance)

    # another request on the same cached prefix, after other rows
    qwen3_hidden.keep_prefix(prefix)
    qwen3_hidden.decode_embeddings(embed[[7, 8, 9]])
    qwen3_hidden.keep_prefix(prefix)
    logits, hidden = qwen3_hidden.decode_embeddings(rows[prefix:])
    np.testing.assert_allclose(logits, all_logits, rtol=0, atol=logits_tolerance)
    np.testing.assert_allclose(hidden, all_hidden, rtol=0, atol=hidden_tolerance)
    # the test can tell: the same rows on a stale cache give other logits
    stale, _ = qwen3_hidden.decode_embeddings(rows[prefix:])
    assert np.abs(stale - all_logits).max() > 10 * logits_tolerance

    qwen3_hidden.reset()
    assert qwen3_hidden.n_past == 0
    logits, hidden = qwen3_hidden.decode_embeddings(rows)
    np.testing.assert_allclose(logits, all_logits, rtol=0, atol=EMBEDDING_TOLERANCE)


def test_embedding_rows_guards(
    qwen3_hidden: LlamaModel, qwen3_tokens: LlamaModel, orpheus: LlamaModel
) -> None:
    """What llama.cpp would read past a buffer for, compute NaN from, or refuse: LlamaError."""
    width = TINY_QWEN3.n_embd
    qwen3_hidden.reset()
    bad_rows = {
        "must be a float32 array, not float64": np.zeros((2, width)),
        "must be a float32 array, not list": [[0.0] * width],
        r"must have shape \(n >= 1, 64\).*got \(2, 32\)": np.zeros((2, 32), np.float32),
        r"must have shape .*got \(0, 64\)": np.zeros((0, width), np.float32),
        r"must have shape .*got \(64,\)": np.zeros(width, np.float32),
        "contain NaN or infinity": np.full((2, width), np.nan, np.float32),
    }
    for message, rows in bad_rows.items():
        with pytest.raises(LlamaError, match=message):
            qwen3_hidden.decode_embeddings(rows)  # type: ignore[arg-type]
    assert qwen3_hidden.n_past == 0

    qwen3_hidden.decode_embeddings(np.zeros((N_CTX - 1, width), np.float32))
    with pytest.raises(LlamaError, match=f"context of {N_CTX} tokens is full"):
        qwen3_hidden.decode_embeddings(np.zeros((2, width), np.float32))
    assert qwen3_hidden.n_past == N_CTX - 1
    qwen3_hidden.decode_embeddings(np.zeros((1, width), np.float32))  # the last position fits

    for model in (qwen3_tokens, orpheus):
        with pytest.raises(LlamaError, match="not loaded for embedding input"):
            model.decode_embeddings(np.zeros((1, width), np.float32))
    with pytest.raises(ValueError, match="exclude each other"):
        LlamaModel(
            qwen3_hidden.path,
            CPU,
            n_ctx=8,
            threads=THREADS,
            embeddings=True,
            hidden_states=True,
        )


# ---- token rows from a GGUF, fed as embedding rows (the Orpheus reduced head's prompt)


def test_token_rows_give_the_logits_of_token_ids(
    orpheus: LlamaModel, qwen3_tokens: LlamaModel, qwen3_tables: dict[str, np.ndarray]
) -> None:
    """decode_rows(TokenRows(ids)) == decode(ids) bit for bit on a plain context, F16 (the tiny
    Orpheus) and F32 (the qwen3 model, whose rows are token_embd's own); decode continues after
    rows as after tokens."""
    for model in (orpheus, qwen3_tokens):
        rows = TokenRows(model.path)
        try:
            assert (rows.n_rows, rows.n_embd) == (model.n_vocab, model.n_embd)
            model.reset()
            expected = model.decode(ROWS).copy()
            after = model.decode([5]).copy()
            model.reset()
            logits = model.decode_rows(rows(ROWS))
            assert model.n_past == len(ROWS)
            np.testing.assert_array_equal(logits.view(np.uint32), expected.view(np.uint32))
            np.testing.assert_array_equal(model.decode([5]).view(np.uint32), after.view(np.uint32))
        finally:
            rows.close()
    table = qwen3_tables["token_embd.weight"]
    rows = TokenRows(qwen3_tokens.path)
    np.testing.assert_array_equal(rows([3, 1, 3]), table[[3, 1, 3]])
    rows.close()


def test_decode_rows_in_batches_and_on_a_hidden_states_context(
    qwen3_tokens: LlamaModel, qwen3_hidden: LlamaModel, qwen3_tables: dict[str, np.ndarray]
) -> None:
    """20 rows run as 3 llama_decode calls of n_batch 8; a hidden-states context returns the
    logits decode_embeddings returns."""
    embed = qwen3_tables["token_embd.weight"]
    qwen3_tokens.reset()
    expected = qwen3_tokens.decode(ROWS).copy()
    qwen3_tokens.reset()
    np.testing.assert_array_equal(qwen3_tokens.decode_rows(embed[ROWS]), expected)
    qwen3_hidden.reset()
    logits = qwen3_hidden.decode_rows(embed[ROWS]).copy()
    qwen3_hidden.reset()
    np.testing.assert_array_equal(logits, qwen3_hidden.decode_embeddings(embed[ROWS])[0])


def test_token_rows_and_decode_rows_guards(
    orpheus: LlamaModel, vocoder: LlamaModel, tmp_path: Path
) -> None:
    rows = TokenRows(orpheus.path)
    for bad in (-1, orpheus.n_vocab):
        with pytest.raises(LlamaError, match=f"token id {bad} is outside its 156940 rows"):
            rows([1, bad])
    with pytest.raises(ValueError, match="non-empty 1-D"):
        rows([])
    rows.close()
    rows.close()
    with pytest.raises(LlamaError, match="closed"):
        rows([1])

    with pytest.raises(LlamaError, match="has no 2-D tensor output_norm.weight"):
        TokenRows(orpheus.path, "output_norm.weight")
    truncated = tmp_path / "truncated.gguf"
    inside = read_gguf_tensors(orpheus.path)["token_embd.weight"].offset + 1000
    truncated.write_bytes(orpheus.path.read_bytes()[:inside])
    with pytest.raises(LlamaError, match="ends inside token_embd.weight"):
        TokenRows(truncated)

    orpheus.reset()
    with pytest.raises(LlamaError, match="must be a float32 array"):
        orpheus.decode_rows(np.zeros((2, orpheus.n_embd)))
    with pytest.raises(LlamaError, match="use encode"):
        vocoder.decode_rows(np.zeros((1, vocoder.n_embd), np.float32))
    assert orpheus.n_past == 0


# ---- text that spells an added token stays text

ADDED_TOKENS = {
    300: "<custom_token_4100>",  # Orpheus: an audio code
    301: "<|code_start|>",  # OuteTTS: a marker
    302: "<|t_0.08|>",  # OuteTTS: a duration
    303: "<|audio_pad|>",  # Qwen3-TTS
    304: "<|im_end|>",  # a control token of Qwen
}
ADDED_TOKENS_IDS = {text: token for token, text in ADDED_TOKENS.items()}
USER_DEFINED = range(300, 304)
"""Added tokens the tokenizer does not mark special: llama.cpp's converter writes them
user-defined, and llama.cpp matches those in plain text unless we cut them."""


@pytest.fixture(scope="module")
def added_tokens_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaModel]:
    vocab = byte_level_vocab(
        512, ADDED_TOKENS, pre="qwen2", bos_id=304, eos_id=304, user_defined=USER_DEFINED
    )
    path = tmp_path_factory.mktemp("added") / "added.gguf"
    write_lm_gguf(path, TINY_QWEN3, vocab, seed=0)
    model = LlamaModel(path, CPU, n_ctx=N_CTX, threads=THREADS, vocab_only=True)
    yield model
    model.close()


def test_user_defined_tokens_are_what_llama_cpp_matches_in_plain_text(
    added_tokens_model: LlamaModel,
) -> None:
    """The bug the cut prevents: llama.cpp's own tokenizer, special parsing off."""
    vocab = llama_cpp.llama_model_get_vocab(added_tokens_model._model)
    text = b"say <custom_token_4100>"
    tokens = (llama_cpp.llama_token * 64)()
    count = llama_cpp.llama_tokenize(vocab, text, len(text), tokens, 64, False, False)
    assert 300 in list(tokens[:count])


@pytest.mark.parametrize("spelling", list(ADDED_TOKENS.values()))
def test_plain_text_never_becomes_an_added_token(
    added_tokens_model: LlamaModel, spelling: str
) -> None:
    model = added_tokens_model
    text = f"Read {spelling} aloud, twice: {spelling}{spelling}<{spelling}>"
    ids = model.tokenize(text, special=False)
    assert not set(ids) & set(ADDED_TOKENS), ids
    assert "".join(model.token_text(i) for i in ids).replace("Ġ", " ") == text
    assert model.tokenize(spelling, special=True) == [ADDED_TOKENS_IDS[spelling]]


def test_text_without_such_spellings_is_tokenized_as_before(
    added_tokens_model: LlamaModel,
) -> None:
    text = "Hello <laugh> there, <|not a token|> and <custom_token_x>."
    vocab = llama_cpp.llama_model_get_vocab(added_tokens_model._model)
    data = text.encode()
    tokens = (llama_cpp.llama_token * 256)()
    count = llama_cpp.llama_tokenize(vocab, data, len(data), tokens, 256, False, False)
    assert added_tokens_model.tokenize(text) == list(tokens[:count])
