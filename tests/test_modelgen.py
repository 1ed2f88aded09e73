"""The random-weight model writers: files load in llama.cpp and snac, with the real token ids."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Iterator

import gguf
import numpy as np
import pytest

from tools.modelgen import orpheus
from tools.modelgen.__main__ import main, model_names
from tools.modelgen.files import atomic_path
from tools.modelgen.gguf_lm import (
    OUTPUT_NORM_LIFT,
    RESIDUAL_OUTPUTS,
    QuantizeError,
    Vocab,
    byte_level_vocab,
    quantize_gguf,
    write_lm_gguf,
)
from wyoming_multitts.catalog import load_catalog
from wyoming_multitts.formats.gguf import LmShape

ORPHEUS_N_VOCAB = 156_940
SNAC_HOP = 2048
"""Samples per Orpheus frame: one level-0 code covers 4 latent steps of 512 samples."""
N_THREADS = 2


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m tools.modelgen tiny DIR`, run once for this module."""
    directory = tmp_path_factory.mktemp("tiny-models")
    start = time.monotonic()
    main(["tiny", str(directory)])
    print(f"modelgen tiny took {time.monotonic() - start:.1f} s")
    return directory


@pytest.fixture(scope="module")
def vocab_llm(tiny_dir: Path) -> Iterator[Any]:
    """The tiny Orpheus GGUF loaded vocabulary-only in llama.cpp."""
    llama_cpp = pytest.importorskip("llama_cpp")
    llm = llama_cpp.Llama(str(tiny_dir / orpheus.TINY_GGUF), vocab_only=True, verbose=False)
    yield llm
    llm.close()


# ----------------------------------------------------------------------------------------------
# Orpheus vocabulary in llama.cpp


def test_orpheus_vocab_ids(vocab_llm: Any) -> None:
    assert vocab_llm.n_vocab() == ORPHEUS_N_VOCAB
    assert vocab_llm.token_bos() == 128000
    assert vocab_llm.token_eos() == 128009
    assert vocab_llm.tokenize(b"<custom_token_4>", add_bos=False, special=True) == [128260]
    assert vocab_llm.detokenize([128266], special=True) == b"<custom_token_10>"
    last = ORPHEUS_N_VOCAB - 1
    assert vocab_llm.detokenize([last], special=True) == f"<custom_token_{last - 128256}>".encode()
    assert vocab_llm.tokenize(b"<|begin_of_text|>", add_bos=False, special=True) == [128000]
    assert vocab_llm.tokenize(b"<|eot_id|>", add_bos=False, special=True) == [128009]
    assert vocab_llm.tokenize(b"<|end_of_text|>", add_bos=False, special=True) == [128001]


def test_orpheus_plain_text_is_not_special(vocab_llm: Any) -> None:
    text = "tara: Hello there, the <laugh> café!".encode()
    ids = vocab_llm.tokenize(text, add_bos=False, special=False)
    assert ids and all(0 <= i < 128000 for i in ids)
    assert vocab_llm.detokenize(ids) == text
    # the custom tokens are user-defined, as in a converted release: llama.cpp matches them in
    # plain text too (LlamaModel.tokenize cuts them: tests/test_llm.py, tests/test_orpheus.py)
    assert vocab_llm.tokenize(b"<custom_token_4>", add_bos=False, special=False) == [128260]
    # a prompt mixing control tokens and text, as the engine builds it
    mixed = vocab_llm.tokenize(
        b"<custom_token_3><|begin_of_text|>leo: hi", add_bos=False, special=True
    )
    assert mixed[:2] == [128259, 128000] and all(i < 128000 for i in mixed[2:])


def test_orpheus_tiny_model_evaluates(tiny_dir: Path) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    llm = llama_cpp.Llama(
        str(tiny_dir / orpheus.TINY_GGUF), n_ctx=256, n_threads=N_THREADS, verbose=False
    )
    try:
        llm.eval([128259, 128000, 256, 257, 128009, 128260, 128261, 128257])
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
        )  # (n_vocab,) float32
        assert logits.shape == (ORPHEUS_N_VOCAB,)
        assert np.isfinite(logits).all() and logits.std() > 0
    finally:
        llm.close()


def test_orpheus_vocab_layout(vocab_llm: Any) -> None:
    assert vocab_llm.metadata["tokenizer.ggml.pre"] == "llama-bpe"
    assert vocab_llm.metadata["tokenizer.ggml.add_bos_token"] == "false"
    reserved = vocab_llm.detokenize([128002, 128011, 128255], special=True)
    assert reserved == (
        b"<|reserved_special_token_0|><|reserved_special_token_3|><|reserved_special_token_247|>"
    )
    vocab = orpheus.orpheus_vocab()
    assert all(t == gguf.TokenType.CONTROL for t in vocab.token_types[128000:128256])
    assert all(t == gguf.TokenType.USER_DEFINED for t in vocab.token_types[128256:])
    assert all(t == gguf.TokenType.NORMAL for t in vocab.token_types[:128000])


# ----------------------------------------------------------------------------------------------
# SNAC and the catalog


def test_snac_tiny_decodes(tiny_dir: Path) -> None:
    torch = pytest.importorskip("torch")
    snac = pytest.importorskip("snac")
    folder = tiny_dir / orpheus.TINY_SNAC
    assert json.loads((folder / "config.json").read_text()) == orpheus.SNAC_TINY_CONFIG
    model = snac.SNAC.from_pretrained(str(folder))
    n_frames = 3
    generator = torch.Generator().manual_seed(0)
    codes = [
        torch.randint(0, 4096, (1, n_frames * k), generator=generator) for k in (1, 2, 4)
    ]  # [1,F], [1,2F], [1,4F] int64
    with torch.inference_mode():
        audio = model.decode(codes)  # (1, 1, 2048 * F)
    assert audio.shape == (1, 1, SNAC_HOP * n_frames)
    assert torch.isfinite(audio).all()


def test_catalog(tiny_dir: Path) -> None:
    text = (tiny_dir / "voices.yaml").read_text()
    assert text.startswith("# Generated by `python -m tools.modelgen tiny")
    catalog = load_catalog(tiny_dir / "voices.yaml")
    model = catalog.models["orpheus-tiny"]
    assert model.engine == "orpheus" and model.device == "cpu"
    assert model.options == {"max_tokens": 70}
    gguf_path, snac_path = model.files["model"].path, model.files["codec"].path
    assert gguf_path == tiny_dir / "orpheus-tiny.gguf" and gguf_path.is_file()
    assert snac_path is not None and (snac_path / "pytorch_model.bin").is_file()
    orpheus_voices = [v for v in catalog.voices.values() if v.model == "orpheus-tiny"]
    assert [(v.name, v.speaker) for v in orpheus_voices] == [
        ("tiny-tara", "tara"),
        ("tiny-leo", "leo"),
    ]
    assert {m.engine for m in catalog.models.values()} == {"orpheus", "outetts", "qwen3tts", "bark"}
    qwen3 = catalog.models["qwen3tts-tiny"]
    assert qwen3.options == {"max_frames": 12} and qwen3.device == "cpu"
    assert [(v.name, v.speaker) for v in catalog.voices.values() if v.model == qwen3.name] == [
        ("tiny-qwen3-ryan", "ryan"),
        ("tiny-qwen3-vivian", "vivian"),
    ]
    oute10 = catalog.models["outetts-1.0-tiny"]  # 1.0: its GGUF and the DAC checkpoint
    assert (oute10.engine, oute10.options) == ("outetts", {"max_tokens": 240})
    assert oute10.files["vocoder"].path == tiny_dir / "dac-tiny-24khz.pth"
    assert [(v.name, v.speaker) for v in catalog.voices.values() if v.model == oute10.name] == [
        ("tiny-oute10-en-female-1", "en-female-1-neutral"),
        ("tiny-oute10-own-voice", None),  # its profile is made from `reference:` on first use
    ]
    assert (oute10.files["aligner"].path / "tokenizer.json").is_file()  # the tiny Whisper
    assert set(catalog.models) == model_names("tiny")  # what the benchmark checks a folder for
    for model in catalog.models.values():
        assert all(ref.path is not None and ref.path.exists() for ref in model.files.values())
    assert not list(tiny_dir.glob("*.partial"))


# ----------------------------------------------------------------------------------------------
# The generic writer on the other architectures, quantizing, partial files

MICRO_VOCAB = 320
MICRO_SHAPES = {
    "llama-tied": LmShape("llama", MICRO_VOCAB, 64, 2, 4, 2, 16, 128, 10000.0, 1e-5,
                          tied_embeddings=True),
    "qwen2": LmShape("qwen2", MICRO_VOCAB, 64, 2, 4, 2, 16, 128, 1e6, 1e-6,
                     tied_embeddings=True, qkv_bias=True),
    "qwen3": LmShape("qwen3", MICRO_VOCAB, 64, 2, 4, 2, 32, 128, 1e6, 1e-6, qk_norm=True),
}  # fmt: skip
"""OuteTTS-like (qwen2, tied, biases) and Qwen3-TTS-like (qk-norm, head_dim != n_embd/n_head)."""


def _micro_vocab(pre: str) -> Vocab:
    special = {300: "<|bos|>", 301: "<|eos|>", 302: "<|im_end|>"}
    return byte_level_vocab(MICRO_VOCAB, special, pre=pre, bos_id=300, eos_id=301)


@pytest.mark.parametrize("name", sorted(MICRO_SHAPES))
def test_micro_models_evaluate(name: str, tmp_path: Path) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    shape = MICRO_SHAPES[name]
    path = tmp_path / f"{name}.gguf"
    weight_type = (
        gguf.GGMLQuantizationType.F32 if name == "qwen3" else gguf.GGMLQuantizationType.F16
    )
    vocab = _micro_vocab("llama-bpe" if shape.arch == "llama" else "qwen2")
    size = write_lm_gguf(path, shape, vocab, seed=0, weight_type=weight_type)
    assert size == path.stat().st_size
    names = {tensor.name for tensor in gguf.GGUFReader(path).tensors}
    assert ("output.weight" in names) == (not shape.tied_embeddings)
    assert ("blk.1.attn_q.bias" in names) == shape.qkv_bias
    assert ("blk.1.attn_k_norm.weight" in names) == shape.qk_norm
    _assert_evaluates(llama_cpp, path)


def test_favoured_tokens_win_after_every_token(tmp_path: Path) -> None:
    """The lift survives the layers (none writes to its dimension) and the output norm weighs it
    up: after any input token, llama.cpp's most likely next token is a favoured one."""
    llama_cpp = pytest.importorskip("llama_cpp")
    shape = dataclasses.replace(MICRO_SHAPES["llama-tied"], n_layer=8)
    favoured = range(100, 164)
    path = tmp_path / "favoured.gguf"
    write_lm_gguf(path, shape, _micro_vocab("llama-bpe"), seed=0, favoured_tokens=favoured)
    tensors = {tensor.name: np.asarray(tensor.data) for tensor in gguf.GGUFReader(path).tensors}
    for layer in range(shape.n_layer):
        for kind in RESIDUAL_OUTPUTS:
            weight = tensors[f"blk.{layer}.{kind}"]  # (n_embd, n_in): row 0 writes dimension 0
            assert not weight[0].any() and weight[1:].any()
    assert tensors["output_norm.weight"][0] == OUTPUT_NORM_LIFT
    llm = llama_cpp.Llama(str(path), n_ctx=64, n_threads=N_THREADS, verbose=False)
    try:
        for token in range(0, MICRO_VOCAB, 7):
            llm.reset()
            llm.eval([300, token])
            logits = np.ctypeslib.as_array(
                llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(MICRO_VOCAB,)
            )  # (n_vocab,) float32
            assert int(np.argmax(logits)) in favoured, token
    finally:
        llm.close()


def test_same_seed_same_file(tmp_path: Path) -> None:
    shape, vocab = MICRO_SHAPES["qwen3"], _micro_vocab("qwen2")
    for file_name, seed in (("a", 5), ("b", 5), ("c", 6)):
        write_lm_gguf(tmp_path / f"{file_name}.gguf", shape, vocab, seed=seed, name="micro")
    a, b, c = ((tmp_path / f"{n}.gguf").read_bytes() for n in "abc")
    assert a == b and a != c


def test_quantize_q8_0(tmp_path: Path) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    src, dst = tmp_path / "f16.gguf", tmp_path / "q8_0.gguf"
    write_lm_gguf(src, MICRO_SHAPES["qwen3"], _micro_vocab("qwen2"), seed=0)
    assert quantize_gguf(src, dst, "q8_0", threads=N_THREADS) == dst.stat().st_size
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(dst).tensors}
    assert types["blk.0.ffn_up.weight"] == gguf.GGMLQuantizationType.Q8_0
    _assert_evaluates(llama_cpp, dst)


def test_quantize_errors(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    not_gguf = tmp_path / "junk.gguf"
    not_gguf.write_bytes(b"not a gguf file")
    with pytest.raises(QuantizeError, match="junk.gguf"):
        quantize_gguf(not_gguf, tmp_path / "out.gguf", "q8_0", threads=1)
    with pytest.raises(ValueError, match="q4_k_m"):
        quantize_gguf(not_gguf, tmp_path / "out.gguf", "q2_k", threads=1)


def test_invalid_shapes() -> None:
    with pytest.raises(ValueError, match="qk_norm"):
        LmShape("qwen3", 320, 64, 2, 4, 2, 16, 128, 1e6, 1e-6)
    with pytest.raises(ValueError, match="n_head_kv"):
        LmShape("llama", 320, 64, 2, 4, 3, 16, 128, 1e4, 1e-5)
    with pytest.raises(ValueError, match="arch"):
        LmShape("gpt2", 320, 64, 2, 4, 2, 16, 128, 1e4, 1e-5)


def test_atomic_path_leaves_nothing_on_failure(tmp_path: Path) -> None:
    final = tmp_path / "model.gguf"
    with pytest.raises(RuntimeError):
        with atomic_path(final) as partial:
            partial.write_bytes(b"half")
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []
    with atomic_path(final) as partial:
        partial.write_bytes(b"whole")
    assert final.read_bytes() == b"whole" and list(tmp_path.iterdir()) == [final]


def _assert_evaluates(llama_cpp: Any, path: Path) -> None:
    llm = llama_cpp.Llama(str(path), n_ctx=64, n_threads=N_THREADS, verbose=False)
    try:
        assert llm.tokenize(b"<|bos|>", add_bos=False, special=True) == [300]
        llm.eval([300, 256, 257, 302])
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
        )  # (n_vocab,) float32
        assert logits.shape == (MICRO_VOCAB,) and np.isfinite(logits).all() and logits.std() > 0
    finally:
        llm.close()
