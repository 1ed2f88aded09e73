"""Qwen3-TTS: our tiny snapshots in the official layout, and their conversion for the engine.

The numeric checks recompute in float64 numpy from the safetensors; the oracle checks run the
official qwen-tts package (its own venv, script/make-qwen-tts-oracle-env) on the same files and
compare its tokens, prefill rows, talker and predictor outputs with what the converted files
give through llama.cpp.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import gguf
import numpy as np
import pytest
import torch

from tools.modelgen import qwen3tts
from tools.modelgen.gguf_lm import quantize_gguf
from wyoming_multitts.catalog import parse_catalog
from wyoming_multitts.devices import Device, resolve_device
from wyoming_multitts.engines.qwen3tts.checkpoint import LAYER_TENSORS, PREDICTOR_PREFIX
from wyoming_multitts.engines.qwen3tts.config import AUTO_MATRIX_TYPE, stored_matrix_type
from wyoming_multitts.engines.qwen3tts.convert import ConvertedQwen3TTS, convert
from wyoming_multitts.engines.qwen3tts.predictor import head_logits, torch_heads
from wyoming_multitts.engines.qwen3tts.tables import map_npz
from wyoming_multitts.errors import ConvertError
from wyoming_multitts.formats.gguf import read_gguf_metadata
from wyoming_multitts.formats.safetensors import SafetensorsFiles

from .conftest import missing_prerequisite

ROOT = Path(__file__).resolve().parent.parent
ORACLE_VENV = ROOT / "local" / "qwen-tts-venv"
ORACLE_SCRIPT = ROOT / "tests" / "qwen3tts_oracle.py"
ORACLE_FRAMES = 4
THREADS = 2
RMS_EPS = 1e-6
ROPE_THETA = 1e6
Q8_LOGITS_TOLERANCE = 5e-2
"""max |q8_0 - f32| / max |f32| of the tiny talker's logits after a prefill (measured 2.4e-2;
the full-size 0.6B's random weights give 3.2e-2, and 1.1e-3 with f16)."""
Q8_HIDDEN_TOLERANCE = 3e-2
"""The same for a 32-wide Q8_0 predictor's hidden state against float64 (measured 1.0e-2)."""
WIDE_TOLERANCES = {"bf16": (0.015, 0.015), "q6_k": (0.1, 0.1), "q4_k": (0.35, 0.3)}
"""max |type - f32| / max |f32| of the 256-wide talker's logits after a prefill, and of its
predictor's hidden state for the same rows (measured bf16 4.6e-3 and 3.7e-3, q6_k 4.9e-2 and
5.6e-2, q4_k 2.0e-1 and 1.6e-1; f16 gives 6.3e-4 and 1.7e-3, q8_0 1.8e-2 and 1.9e-2 on the
same model): each of the 8 random layers adds its weights' rounding (Q4_K's is ~7 % rms) or,
for bf16, its activations' (8 significant bits); docs/benchmarks.md has the full-size
figures."""
WIDE_STACK = qwen3tts.LmConfig(256, 512, 8, 2, 1, 128, 32768)
"""A talker whose every matrix row is whole k-quant blocks of 256, with 8 layers: llama.cpp's
Q4_K_M gives more bits to layers 0, 3, 6 and 7 of 8 (and 2 and 4 of the 5-layer predictor)."""
WIDE_MROPE_SECTION = (24, 20, 20)
"""mrope_section of head_dim 128 (the released models')."""

llama_cpp = pytest.importorskip("llama_cpp")
from wyoming_multitts.llm import build  # noqa: E402  # needs llama_cpp
from wyoming_multitts.llm.model import LlamaModel  # noqa: E402  # needs llama_cpp


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """`modelgen.qwen3tts.write_tiny` into a fresh folder: the folder and the catalog entries."""
    directory = tmp_path_factory.mktemp("qwen3tts-tiny")
    return directory, qwen3tts.write_tiny(directory)


@pytest.fixture(scope="module")
def tiny_dir(tiny: tuple[Path, Any]) -> Path:
    return tiny[0]


@pytest.fixture(scope="module")
def snapshot(tiny_dir: Path) -> Path:
    return tiny_dir / qwen3tts.TINY_DIR


@pytest.fixture(scope="module")
def weights(snapshot: Path) -> SafetensorsFiles:
    return SafetensorsFiles.open(snapshot)


@pytest.fixture(scope="module")
def converted(snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> ConvertedQwen3TTS:
    """The tiny snapshot converted with F32 matrices (exact, for numeric comparisons)."""
    return convert(snapshot, tmp_path_factory.mktemp("converted-f32"), matrix_type="f32")


@pytest.fixture(scope="module")
def tables(converted: ConvertedQwen3TTS) -> dict[str, np.ndarray]:
    with np.load(converted.tables) as npz:
        return {name: npz[name] for name in npz.files}


@pytest.fixture(scope="module")
def converted_q8(snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> ConvertedQwen3TTS:
    """The tiny snapshot converted with Q8_0 matrices."""
    return convert(snapshot, tmp_path_factory.mktemp("converted-q8_0"), matrix_type="q8_0")


def open_stack(path: Path) -> LlamaModel:
    """A talker or predictor GGUF on the CPU, fed with rows and returning hidden states."""
    return LlamaModel(
        path,
        resolve_device("cpu"),
        n_ctx=64,
        threads=THREADS,
        hidden_states=True,
    )


@pytest.fixture(scope="module")
def talker(converted: ConvertedQwen3TTS) -> Iterator[LlamaModel]:
    model = open_stack(converted.talker)
    yield model
    model.close()


@pytest.fixture(scope="module")
def predictor(converted: ConvertedQwen3TTS) -> Iterator[LlamaModel]:
    model = open_stack(converted.code_predictor)
    yield model
    model.close()


@pytest.fixture(scope="module")
def text_tokenizer(converted: ConvertedQwen3TTS) -> Iterator[Any]:
    llm = llama_cpp.Llama(str(converted.text_tokenizer), vocab_only=True, verbose=False)
    yield llm
    llm.close()


# ----------------------------------------------------------------------------------------------
# float64 reference of a Qwen3 decoder stack (what llama.cpp's `qwen3` graph computes)


def _rms_norm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + RMS_EPS) * weight


def _rope(x: np.ndarray) -> np.ndarray:
    """NEOX-style RoPE (rotate halves) at positions 0 … n-1; x: (n, heads, head_dim)."""
    n, _, head_dim = x.shape
    inv_freq = ROPE_THETA ** (-np.arange(0, head_dim, 2) / head_dim)  # (head_dim/2,)
    angles = np.arange(n)[:, None] * inv_freq[None, :]  # (n, head_dim/2)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)[:, None, :]  # (n, 1, head_dim)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)[:, None, :]
    half = head_dim // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def qwen3_hidden(rows: np.ndarray, weights: SafetensorsFiles, prefix: str) -> np.ndarray:
    """Final-norm hidden states (n, hidden) of the stack `prefix` for input rows (n, hidden)."""
    w = {name: weights.get(name).astype(np.float64) for name in weights.names}
    x = rows.astype(np.float64)  # (n, hidden)
    n = x.shape[0]
    layer = 0
    while f"{prefix}.layers.{layer}.input_layernorm.weight" in w:
        p = f"{prefix}.layers.{layer}."
        h = _rms_norm(x, w[p + "input_layernorm.weight"])
        head_dim = w[p + "self_attn.q_norm.weight"].shape[0]
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(n, -1, head_dim)  # (n, H, d)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(n, -1, head_dim)  # (n, KV, d)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(n, -1, head_dim)
        q = _rope(_rms_norm(q, w[p + "self_attn.q_norm.weight"]))
        k = _rope(_rms_norm(k, w[p + "self_attn.k_norm.weight"]))
        group = q.shape[1] // k.shape[1]
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)  # (n, H, d)
        scores = np.einsum("ihd,jhd->hij", q, k) / np.sqrt(head_dim)  # (H, n, n)
        scores += np.triu(np.full((n, n), -np.inf), 1)  # causal
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        attn = np.einsum("hij,jhd->ihd", probs, v).reshape(n, -1)  # (n, H*d)
        x = x + attn @ w[p + "self_attn.o_proj.weight"].T
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"])
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        up = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
        layer += 1
    return _rms_norm(x, w[f"{prefix}.norm.weight"])


def _close(actual: np.ndarray, expected: np.ndarray, tolerance: float) -> None:
    """Max abs error within `tolerance` x the reference's scale."""
    scale = float(np.abs(expected).max())
    error = float(np.abs(actual - expected).max())
    assert error <= tolerance * scale, f"max |error| {error:.3g} > {tolerance} x {scale:.3g}"


def tensor_types(path: Path) -> dict[str, str]:
    """GGUF tensor name → storage type name (`F32`, `F16`, `Q8_0`)."""
    return {tensor.name: tensor.tensor_type.name for tensor in gguf.GGUFReader(path).tensors}


# ----------------------------------------------------------------------------------------------
# The snapshot


def test_tiny_snapshot_has_the_official_layout(snapshot: Path, tiny_dir: Path) -> None:
    names = {str(path.relative_to(snapshot)) for path in snapshot.rglob("*") if path.is_file()}
    assert names == {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "vocab.json",
        "merges.txt",
        "tokenizer_config.json",
        "speech_tokenizer/config.json",
        "speech_tokenizer/configuration.json",
        "speech_tokenizer/model.safetensors",
        "speech_tokenizer/preprocessor_config.json",
    }
    config = json.loads((snapshot / "config.json").read_text())
    talker = config["talker_config"]
    assert config["model_type"] == "qwen3_tts" and config["tts_model_type"] == "custom_voice"
    assert talker["vocab_size"] == 1056 and talker["code_predictor_config"]["vocab_size"] == 32
    assert talker["codec_eos_token_id"] == 32 + 102  # 2150 - 2048 + 32
    assert talker["spk_id"]["ryan"] == 32 + 1013 and talker["spk_id"]["vivian"] == 32 + 1017
    assert talker["codec_language_id"]["english"] == 34
    assert talker["spk_is_dialect"]["eric"] == "sichuan_dialect"
    assert config["tts_pad_token_id"] == 302 and config["im_start_token_id"] == 275
    assert (tiny_dir / qwen3tts.TINY_BASE_DIR / "config.json").exists()


def test_tiny_catalog_entries_parse(tiny: tuple[Path, Any]) -> None:
    tiny_dir, (models, voices) = tiny
    catalog = parse_catalog({"models": models, "voices": voices}, tiny_dir / "voices.yaml")
    spec = catalog.models["qwen3tts-tiny"]
    assert spec.engine == "qwen3tts" and spec.options == {"max_frames": 12}
    assert spec.files["model"].path == tiny_dir / qwen3tts.TINY_DIR
    assert catalog.voices["tiny-qwen3-ryan"].speaker == "ryan"
    assert catalog.voices["tiny-qwen3-vivian"].languages == ("zh",)


def test_weights_are_bf16_and_distinct(weights: SafetensorsFiles, snapshot: Path) -> None:
    header_length = int.from_bytes((snapshot / "model.safetensors").read_bytes()[:8], "little")
    header = json.loads((snapshot / "model.safetensors").read_bytes()[8 : 8 + header_length])
    assert {entry["dtype"] for name, entry in header.items() if name != "__metadata__"} == {"BF16"}
    norm_a = weights.get("talker.model.layers.0.input_layernorm.weight")
    norm_b = weights.get("talker.model.layers.0.post_attention_layernorm.weight")
    assert not np.allclose(norm_a, 1.0) and not np.allclose(norm_a, norm_b)
    head = weights.get("talker.codec_head.weight")
    assert not head[134].any() and head[:134].std() > 0.1  # EOS row zero
    assert np.array_equal(qwen3tts.to_bfloat16(np.array([1.0, -2.5], np.float32)), [0x3F80, 0xC020])


def test_full_size_plan_matches_the_release() -> None:
    """0.6B-CustomVoice: the parameter counts of the real files (docs/engines.md,
    "Qwen3-TTS: releases, speakers and languages")."""
    model = sum(int(np.prod(t.shape)) for t in qwen3tts.model_plan(qwen3tts.FULL_0B6_SHAPE))
    codec = sum(
        int(np.prod(t.shape)) for t in qwen3tts.speech_tokenizer_plan(qwen3tts.FULL_0B6_SHAPE)
    )
    assert 0.9e9 < model < 0.93e9  # 1.83 GB at bf16
    assert codec == 170_557_441  # 682 MB at fp32, as the released speech_tokenizer


# ----------------------------------------------------------------------------------------------
# Conversion


def test_conversion_outputs(converted: ConvertedQwen3TTS, tables: dict[str, np.ndarray]) -> None:
    config = converted.config
    assert (config.talker_hidden, config.predictor_hidden, config.num_code_groups) == (32, 16, 4)
    assert config.speakers["ryan"] == 1045 and config.dialects == {
        "eric": "sichuan_dialect",
        "dylan": "beijing_dialect",
    }
    assert config.generation["repetition_penalty"] == 1.05 and config.suppressed_from == 32
    assert config.has_mtp_projection and config.samples_per_frame == 1920
    assert tables["text_embeddings"].shape == (384, 32)
    assert tables["predictor_embeddings"].shape == (3, 32, 32)
    assert tables["predictor_heads"].shape == (3, 32, 16)
    assert tables["mtp_projection_weight"].shape == (16, 32)


def test_folded_text_table_equals_float64(
    tables: dict[str, np.ndarray], weights: SafetensorsFiles, converted: ConvertedQwen3TTS
) -> None:
    def get(name: str) -> np.ndarray:
        return weights.get(f"talker.text_projection.{name}").astype(np.float64)

    table = weights.get("talker.model.text_embedding.weight").astype(np.float64)
    hidden = table @ get("linear_fc1.weight").T + get("linear_fc1.bias")
    hidden = hidden / (1 + np.exp(-hidden))
    folded = hidden @ get("linear_fc2.weight").T + get("linear_fc2.bias")  # (384, 32)
    _close(tables["text_embeddings"], folded, 1e-5)
    config = converted.config
    _close(tables["tts_pad_embedding"], folded[config.tts_pad_id], 1e-5)
    _close(tables["tts_eos_embedding"], folded[config.tts_eos_id], 1e-5)
    codec = weights.get("talker.model.codec_embedding.weight")
    assert np.array_equal(tables["codec_embeddings"], codec)


def test_talker_gguf_matches_float64(
    talker: LlamaModel, tables: dict[str, np.ndarray], weights: SafetensorsFiles
) -> None:
    """Token-embedding input rows for a few codec ids: llama.cpp (F32 matrices, F16 KV cache)
    against a float64 recomputation of the talker from the safetensors."""
    rows = tables["codec_embeddings"][[3, 17, 134, 1045]].astype(np.float32)  # (4, 32)
    talker.reset()
    logits, hidden = talker.decode_embeddings(rows)
    expected_hidden = qwen3_hidden(rows, weights, "talker.model")[-1]
    expected_logits = weights.get("talker.codec_head.weight").astype(np.float64) @ expected_hidden
    _close(hidden, expected_hidden, 2e-3)
    _close(logits, expected_logits, 2e-3)
    talker.reset()  # the same ids as tokens: token_embd is the codec embedding
    _close(talker.decode([3, 17, 134, 1045]), expected_logits, 2e-3)


def test_predictor_gguf_matches_float64(predictor: LlamaModel, weights: SafetensorsFiles) -> None:
    rows = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)
    predictor.reset()
    _, hidden = predictor.decode_embeddings(rows)
    expected = qwen3_hidden(rows, weights, "talker.code_predictor.model")[-1]
    _close(hidden, expected, 2e-3)


def test_text_tokenizer_gguf(text_tokenizer: Any, converted: ConvertedQwen3TTS) -> None:
    config = converted.config
    prompt = "<|im_start|>assistant\nHello the world<|im_end|>\n<|im_start|>assistant\n"
    ids = text_tokenizer.tokenize(prompt.encode(), add_bos=False, special=True)
    newline = 198  # `Ċ`, as in Qwen2's vocabulary
    assert ids[:3] == [config.im_start_id, config.assistant_id, newline]
    assert ids[-5:] == [config.im_end_id, newline, config.im_start_id, config.assistant_id, newline]
    assert text_tokenizer.n_vocab() == config.text_vocab
    special = text_tokenizer.tokenize(b"<tts_pad><tts_text_bos><tts_text_eod>", False, True)
    assert special == [config.tts_pad_id, config.tts_bos_id, config.tts_eos_id]


def test_f16_conversion_stores_predictor_ffn_down_bf16(
    snapshot: Path, tmp_path: Path, tables: dict[str, np.ndarray]
) -> None:
    """ffn_down's activations exceed fp16: BF16 weights (the release's own values) make llama.cpp
    convert them to bf16 instead; the placeholder head is one row (its logits are unused)."""
    result = convert(snapshot, tmp_path)
    types = tensor_types(result.code_predictor)
    assert types["blk.0.ffn_down.weight"] == "BF16" and types["blk.0.ffn_up.weight"] == "F16"
    assert types["blk.0.attn_norm.weight"] == "F32"
    assert read_gguf_metadata(result.code_predictor)["qwen3.vocab_size"] == 1
    with np.load(result.tables) as npz:
        assert npz["text_embeddings"].dtype == np.float16
        assert npz["predictor_heads"].dtype == np.float16
        _close(npz["text_embeddings"], tables["text_embeddings"], 1e-3)


def predictor_types(converted: ConvertedQwen3TTS, matrices: str) -> dict[str, str]:
    """What a quantized conversion's predictor should hold: norms F32, ffn_down BF16 (its inputs
    exceed fp16), the other matrices `matrices`."""
    names = tensor_types(converted.code_predictor)
    return {
        name: "F32" if "norm" in name else "BF16" if "ffn_down" in name else matrices
        for name in names
    }


def test_q8_0_conversion_quantizes_the_matrices(
    converted_q8: ConvertedQwen3TTS, tables: dict[str, np.ndarray]
) -> None:
    """Talker: every matrix Q8_0, norms F32. The tiny predictor is 16 wide, not whole Q8_0
    blocks of 32: its matrices fall back to F16."""
    talker = tensor_types(converted_q8.talker)
    assert talker == {name: "F32" if "norm" in name else "Q8_0" for name in talker}
    assert tensor_types(converted_q8.code_predictor) == predictor_types(converted_q8, "F16")
    q8_0 = gguf.LlamaFileType.MOSTLY_Q8_0
    assert read_gguf_metadata(converted_q8.talker)["general.file_type"] == q8_0
    with np.load(converted_q8.tables) as npz:
        assert npz["text_embeddings"].dtype == np.float16
        assert npz["predictor_heads"].dtype == np.float16
        _close(npz["codec_embeddings"], tables["codec_embeddings"], 1e-3)


def test_f16_heads_give_the_f32_heads_logits(
    converted_q8: ConvertedQwen3TTS, tables: dict[str, np.ndarray]
) -> None:
    """Every conversion but f32 stores the heads f16 and applies them in torch with the state
    rounded to f16: logits within 1e-3 of the f32 heads' (float64 product), same best code."""
    f16_heads = torch_heads(map_npz(converted_q8.tables)["predictor_heads"], torch.device("cpu"))
    assert f16_heads.dtype == torch.float16
    states = np.random.default_rng(0).standard_normal((4, f16_heads.shape[-1]), dtype=np.float32)
    for i in range(len(f16_heads)):
        for state in states:  # (Hp,)
            expected = tables["predictor_heads"][i].astype(np.float64) @ state  # (codebook,)
            logits = head_logits(f16_heads, i, state)
            assert logits.dtype == np.float32
            _close(logits, expected, 1e-3)
            assert np.argmax(logits) == np.argmax(expected)


def test_q8_0_talker_logits_stay_close_to_f32(
    converted_q8: ConvertedQwen3TTS, talker: LlamaModel, tables: dict[str, np.ndarray]
) -> None:
    rows = np.concatenate(
        [tables["text_embeddings"][[5, 77, 200, 301]], tables["codec_embeddings"][[3, 17, 1045]]]
    ).astype(
        np.float32
    )  # (7, 32): a prefill of text and codec rows
    talker.reset()
    expected, _ = talker.decode_embeddings(rows)
    quantized = open_stack(converted_q8.talker)
    try:
        logits, _ = quantized.decode_embeddings(rows)
    finally:
        quantized.close()
    _close(logits, expected, Q8_LOGITS_TOLERANCE)


def test_q8_0_quantizes_a_predictor_of_whole_blocks(tmp_path: Path) -> None:
    """A tiny snapshot whose predictor is 32 wide: its matrices are Q8_0 (ffn_down BF16), and
    llama.cpp runs them close to the float64 recomputation."""
    tiny = qwen3tts.TINY_SHAPE
    wide = dataclasses.replace(tiny.predictor, hidden=32, intermediate=64, head_dim=16)
    source = tmp_path / "snapshot"
    qwen3tts.write_qwen3tts(source, dataclasses.replace(tiny, predictor=wide), qwen3tts.TINY_SEED)
    result = convert(source, tmp_path / "out", matrix_type="q8_0")
    assert tensor_types(result.code_predictor) == predictor_types(result, "Q8_0")
    rows = np.random.default_rng(0).standard_normal((3, 32)).astype(np.float32)
    predictor = open_stack(result.code_predictor)
    try:
        _, hidden = predictor.decode_embeddings(rows)
    finally:
        predictor.close()
    expected = qwen3_hidden(rows, SafetensorsFiles.open(source), PREDICTOR_PREFIX)[-1]
    _close(hidden, expected, Q8_HIDDEN_TOLERANCE)


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ConvertedQwen3TTS]:
    """A tiny snapshot with 256-wide stacks (WIDE_STACK), converted f32 and each WIDE_TOLERANCES
    type."""
    directory = tmp_path_factory.mktemp("qwen3tts-wide")
    shape = dataclasses.replace(
        qwen3tts.TINY_SHAPE,
        talker=WIDE_STACK,
        predictor=dataclasses.replace(WIDE_STACK, layers=5),
        mrope_section=WIDE_MROPE_SECTION,
    )
    qwen3tts.write_qwen3tts(directory / "snapshot", shape, qwen3tts.TINY_SEED)
    return {
        matrix_type: convert(
            directory / "snapshot", directory / matrix_type, matrix_type=matrix_type
        )
        for matrix_type in ("f32", *WIDE_TOLERANCES)
    }


def test_q4_k_talker_is_llama_cpp_q4_k_m(
    wide: dict[str, ConvertedQwen3TTS], tmp_path: Path
) -> None:
    """q4_k's talker holds, tensor for tensor, the type and the bytes of llama.cpp's own Q4_K_M
    quantization of the f32 talker (`llama_model_quantize`)."""
    reference = tmp_path / "talker-Q4_K_M.gguf"
    quantize_gguf(wide["f32"].talker, reference, "q4_k_m", THREADS)
    ours = {tensor.name: tensor for tensor in gguf.GGUFReader(wide["q4_k"].talker).tensors}
    theirs = {tensor.name: tensor for tensor in gguf.GGUFReader(reference).tensors}
    assert ours.keys() == theirs.keys()
    for name, tensor in ours.items():
        assert tensor.tensor_type == theirs[name].tensor_type, name
        assert np.array_equal(tensor.data, theirs[name].data), name
    more_bits = {f"blk.{i}.{t}.weight" for i in (0, 3, 6, 7) for t in ("attn_v", "ffn_down")}
    talker = tensor_types(wide["q4_k"].talker)
    q6_k = {name for name, kind in talker.items() if kind == "Q6_K"}
    assert q6_k == {"output.weight", *more_bits}
    predictor = {
        name: "Q6_K" if name in ("blk.2.attn_v.weight", "blk.4.attn_v.weight") else kind
        for name, kind in predictor_types(wide["q4_k"], "Q4_K").items()
    }
    assert tensor_types(wide["q4_k"].code_predictor) == predictor
    q4_k_m = gguf.LlamaFileType.MOSTLY_Q4_K_M
    assert read_gguf_metadata(wide["q4_k"].talker)["general.file_type"] == q4_k_m


def test_bf16_conversion_holds_the_release_weights_exactly(
    wide: dict[str, ConvertedQwen3TTS],
) -> None:
    """Every matrix BF16, bit for bit the snapshot's bf16 values (f16 loses the tiniest)."""
    converted = wide["bf16"]
    talker = tensor_types(converted.talker)
    assert talker == {name: "F32" if "norm" in name else "BF16" for name in talker}
    assert tensor_types(converted.code_predictor) == predictor_types(converted, "BF16")
    bf16 = gguf.LlamaFileType.MOSTLY_BF16
    assert read_gguf_metadata(converted.talker)["general.file_type"] == bf16
    stored = next(
        tensor
        for tensor in gguf.GGUFReader(converted.talker).tensors
        if tensor.name == "blk.3.ffn_up.weight"
    )
    bits = np.asarray(stored.data).view(np.uint16).astype(np.uint32) << 16
    snapshot = SafetensorsFiles.open(converted.talker.parent.parent / "snapshot")
    release = snapshot.get("talker.model.layers.3.mlp.up_proj.weight")  # bf16 → float32
    np.testing.assert_array_equal(bits.view(np.float32).reshape(release.shape), release)


@pytest.mark.parametrize(
    ("features", "llama_device", "expected"),
    [
        ({"AVX2", "AVX512_BF16"}, None, "bf16"),
        ({"AVX2", "F16C"}, None, "f16"),
        ({"AVX512_BF16"}, "CUDA0", "f16"),
    ],
)
def test_auto_matrix_type_is_bf16_where_the_cpu_multiplies_it(
    monkeypatch: pytest.MonkeyPatch, features: set[str], llama_device: str | None, expected: str
) -> None:
    """`auto` stores bf16 where llama.cpp runs the stacks on a CPU with bf16 dot products, f16
    elsewhere; an explicit type is kept as it is."""
    monkeypatch.setattr(build, "system_features", lambda: frozenset(features))
    device = Device("test", llama_device, "cpu")
    assert stored_matrix_type(AUTO_MATRIX_TYPE, device) == expected
    assert stored_matrix_type("f16", device) == "f16"


def test_system_features_name_this_cpu() -> None:
    """llama.cpp's own report of this machine: every x86 build it runs on has SSE3, every ARM
    one NEON."""
    assert build.system_features() & {"SSE3", "NEON"}


def test_q6_k_conversion_is_q6_k_throughout(wide: dict[str, ConvertedQwen3TTS]) -> None:
    """Every matrix Q6_K (llama.cpp's Q6_K file) but the predictor's ffn_down (BF16)."""
    talker = tensor_types(wide["q6_k"].talker)
    assert talker == {name: "F32" if "norm" in name else "Q6_K" for name in talker}
    assert tensor_types(wide["q6_k"].code_predictor) == predictor_types(wide["q6_k"], "Q6_K")
    q6_k = gguf.LlamaFileType.MOSTLY_Q6_K
    assert read_gguf_metadata(wide["q6_k"].talker)["general.file_type"] == q6_k
    with np.load(wide["q6_k"].tables) as npz:
        assert npz["text_embeddings"].dtype == np.float16


def stack_outputs(converted: ConvertedQwen3TTS, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The talker's logits after a prefill of `rows` (n, hidden), and the predictor's last
    hidden state for the same rows (talker and predictor are equally wide here)."""
    outputs = []
    for path in (converted.talker, converted.code_predictor):
        model = open_stack(path)
        try:
            outputs.append(model.decode_embeddings(rows))
        finally:
            model.close()
    return outputs[0][0], outputs[1][1]


@pytest.mark.parametrize("matrix_type", list(WIDE_TOLERANCES))
def test_conversion_runs_close_to_f32(wide: dict[str, ConvertedQwen3TTS], matrix_type: str) -> None:
    with np.load(wide["f32"].tables) as npz:
        text = npz["text_embeddings"][[5, 77, 200, 301]]  # (4, 256)
        codec = npz["codec_embeddings"][[3, 17, 1045]]  # (3, 256)
    rows = np.concatenate([text, codec]).astype(np.float32)  # (7, 256): a prefill
    expected_logits, expected_hidden = stack_outputs(wide["f32"], rows)
    logits, hidden = stack_outputs(wide[matrix_type], rows)
    logits_tolerance, hidden_tolerance = WIDE_TOLERANCES[matrix_type]
    _close(logits, expected_logits, logits_tolerance)
    _close(hidden, expected_hidden, hidden_tolerance)


def test_second_convert_reuses_and_changes_rebuild(snapshot: Path, tmp_path: Path) -> None:
    source = tmp_path / "snapshot"
    shutil.copytree(snapshot, source)
    out = tmp_path / "out"
    assert not convert(source, out).reused
    stamps = {path.name: path.stat().st_mtime_ns for path in out.iterdir()}
    assert convert(source, out).reused
    assert {path.name: path.stat().st_mtime_ns for path in out.iterdir()} == stamps
    assert not convert(source, out, matrix_type="f32").reused
    generation = json.loads((source / "generation_config.json").read_text())
    generation["temperature"] = 0.7
    (source / "generation_config.json").write_text(json.dumps(generation))
    result = convert(source, out, matrix_type="f32")
    assert not result.reused and result.config.generation["temperature"] == 0.7
    result = convert(source, out, matrix_type="q8_0")
    assert not result.reused and tensor_types(result.talker)["output.weight"] == "Q8_0"
    assert convert(source, out, matrix_type="q8_0").reused
    result = convert(source, out)
    assert not result.reused and tensor_types(result.talker)["output.weight"] == "F16"
    assert not [path for path in out.iterdir() if path.name.endswith(".partial")]


def test_missing_tensor_is_named(snapshot: Path, tmp_path: Path) -> None:
    source = tmp_path / "snapshot"
    shutil.copytree(snapshot, source)
    plan = [
        tensor
        for tensor in qwen3tts.model_plan(qwen3tts.TINY_SHAPE)
        if tensor.name != "talker.code_predictor.lm_head.2.weight"
    ]
    qwen3tts.write_safetensors(source / "model.safetensors", plan, "BF16", 1)
    with pytest.raises(ConvertError, match=r"talker.code_predictor.lm_head.2.weight.*download"):
        convert(source, tmp_path / "out")
    # the manifest says only whose folder it is: nothing there is taken for a conversion
    assert json.loads((tmp_path / "out" / "qwen3tts.json").read_text()) == {"stamp": None}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["talker_config"].pop("codec_bos_id"), r"lacks talker_config.codec_bos_id"),
        (lambda c: c.update(model_type="qwen2"), r"model_type 'qwen2'"),
        (lambda c: c.update(tokenizer_type="qwen3_tts_tokenizer_25hz"), r"only the 12 Hz"),
    ],
)
def test_config_errors_name_the_key(
    snapshot: Path, tmp_path: Path, edit: Any, message: str
) -> None:
    source = tmp_path / "snapshot"
    shutil.copytree(snapshot, source)
    config = json.loads((source / "config.json").read_text())
    edit(config)
    (source / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConvertError, match=message):
        convert(source, tmp_path / "out")


def test_truncated_weights_are_reported(snapshot: Path, tmp_path: Path) -> None:
    source = tmp_path / "snapshot"
    shutil.copytree(snapshot, source)
    path = source / "model.safetensors"
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(ConvertError, match=r"model.safetensors is truncated"):
        convert(source, tmp_path / "out")


def test_layer_tensor_map_covers_every_layer_tensor(weights: SafetensorsFiles) -> None:
    modules = {module for _, module in LAYER_TENSORS}
    in_file = {
        name.removeprefix("talker.model.layers.0.").removesuffix(".weight")
        for name in weights.names
        if name.startswith("talker.model.layers.0.")
    }
    assert in_file == modules


# ----------------------------------------------------------------------------------------------
# Against qwen-tts (the oracle environment)


def oracle_python() -> Path:
    """The oracle venv's Python, created by script/make-qwen-tts-oracle-env when missing."""
    result = subprocess.run(
        [str(ROOT / "script" / "make-qwen-tts-oracle-env"), str(ORACLE_VENV)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if result.returncode != 0:
        missing_prerequisite(
            "no qwen-tts oracle environment (script/make-qwen-tts-oracle-env failed; "
            f"offline?):\n{result.stdout[-500:]}{result.stderr[-1500:]}"
        )
    return ORACLE_VENV / "bin" / "python"


def run_oracle(model_dir: Path, out: Path, *args: str) -> dict[str, np.ndarray]:
    result = subprocess.run(
        [str(oracle_python()), str(ORACLE_SCRIPT), str(model_dir), str(out), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout.strip().splitlines()[-1], file=sys.stderr)
    with np.load(out) as npz:
        return {name: npz[name] for name in npz.files}


@pytest.fixture(scope="module")
def oracle(snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    out = tmp_path_factory.mktemp("oracle") / "custom_voice.npz"
    return run_oracle(snapshot, out, "--frames", str(ORACLE_FRAMES))


@pytest.mark.slow
def test_qwen_tts_loads_our_files_without_key_differences(
    oracle: dict[str, np.ndarray], tiny_dir: Path, tmp_path: Path
) -> None:
    assert list(oracle["missing_keys"]) == [] and list(oracle["unexpected_keys"]) == []
    base = run_oracle(tiny_dir / qwen3tts.TINY_BASE_DIR, tmp_path / "base.npz")
    assert list(base["missing_keys"]) == [] and list(base["unexpected_keys"]) == []


@pytest.mark.slow
def test_text_tokenizer_matches_qwen_tts(
    text_tokenizer: Any, oracle: dict[str, np.ndarray]
) -> None:
    prompt = f"<|im_start|>assistant\n{oracle['text']}<|im_end|>\n<|im_start|>assistant\n"
    ids = text_tokenizer.tokenize(prompt.encode(), add_bos=False, special=True)
    assert ids == oracle["input_ids"].tolist()


def prefill_rows(
    ids: np.ndarray, tables: dict[str, np.ndarray], converted: ConvertedQwen3TTS, speaker: str
) -> np.ndarray:
    """The non-streaming CustomVoice prefill (docs/engines.md, "Qwen3-TTS: prefill layout" 4b;
    english, no instruct) from our tables."""
    config = converted.config
    text, codec = tables["text_embeddings"], tables["codec_embeddings"]
    pad, bos, eos = (tables[f"tts_{name}_embedding"] for name in ("pad", "bos", "eos"))
    prefix = [
        config.codec_think_id,
        config.codec_think_bos_id,
        config.languages["english"],
        config.codec_think_eos_id,
        config.speakers[speaker],
        config.codec_pad_id,
    ]
    text_side = np.stack([pad] * (len(prefix) - 1) + [bos])  # (6, H)
    body = text[ids[3:-5]] + codec[config.codec_pad_id]  # (n, H)
    return np.concatenate(
        [
            text[ids[:3]],  # role: <|im_start|> assistant \n
            text_side + codec[prefix],
            body,
            (eos + codec[config.codec_pad_id])[None],
            (pad + codec[config.codec_bos_id])[None],
        ]
    )


@pytest.mark.slow
def test_tables_rebuild_qwen_tts_inputs(
    oracle: dict[str, np.ndarray], tables: dict[str, np.ndarray], converted: ConvertedQwen3TTS
) -> None:
    prefill = prefill_rows(oracle["input_ids"], tables, converted, str(oracle["speaker"]))
    _close(prefill, oracle["prefill_embeddings"], 1e-5)
    codes = oracle["codes"]  # (F, G)
    for frame, step in enumerate(oracle["step_embeddings"]):
        row = tables["codec_embeddings"][codes[frame, 0]] + tables["tts_pad_embedding"]
        for i in range(1, codes.shape[1]):
            row = row + tables["predictor_embeddings"][i - 1, codes[frame, i]]
        _close(row, step, 1e-5)


@pytest.mark.slow
def test_talker_gguf_reproduces_qwen_tts(
    talker: LlamaModel, oracle: dict[str, np.ndarray], converted: ConvertedQwen3TTS
) -> None:
    """Logits and hidden states step by step, and the greedy code 0 after qwen-tts's logits
    processing (repetition penalty, suppressed specials, no EOS in the first 2 steps)."""
    config = converted.config
    penalty = float(oracle["repetition_penalty"])
    talker.reset()
    inputs = [oracle["prefill_embeddings"], *oracle["step_embeddings"][:, None, :]]
    history: list[int] = []
    for step, rows in enumerate(inputs):
        logits, hidden = talker.decode_embeddings(rows.astype(np.float32))
        _close(logits, oracle["talker_logits"][step], 2e-3)
        _close(hidden, oracle["talker_hidden"][step], 2e-3)
        scores = logits.astype(np.float64)
        for code in set(history):
            scores[code] = scores[code] / penalty if scores[code] > 0 else scores[code] * penalty
        banned = np.arange(config.suppressed_from, config.talker_vocab)
        scores[banned[banned != config.codec_eos_id]] = -np.inf
        if step < 2:
            scores[config.codec_eos_id] = -np.inf
        code = int(np.argmax(scores))
        if step < len(oracle["codes"]):
            assert code == oracle["codes"][step, 0]
        history.append(code)


@pytest.mark.slow
def test_predictor_gguf_reproduces_qwen_tts(
    predictor: LlamaModel, oracle: dict[str, np.ndarray], tables: dict[str, np.ndarray]
) -> None:

    def project(rows: np.ndarray) -> np.ndarray:
        return rows @ tables["mtp_projection_weight"].T + tables["mtp_projection_bias"]

    codes = oracle["codes"][0]  # frame 0: (G,)
    inputs = oracle["predictor_inputs"]  # (2, Hp): [talker hidden, code 0], projected
    _close(inputs[0], project(oracle["talker_hidden"][0]), 1e-5)
    _close(inputs[1], project(tables["codec_embeddings"][codes[0]]), 1e-5)
    predictor.reset()
    rows = inputs
    for i in range(len(codes) - 1):
        _, hidden = predictor.decode_embeddings(rows.astype(np.float32))
        _close(hidden, oracle["predictor_hidden"][i], 2e-3)
        logits = tables["predictor_heads"][i] @ hidden
        _close(logits, oracle["predictor_logits"][i], 2e-3)
        assert int(np.argmax(logits)) == codes[i + 1]
        rows = project(tables["predictor_embeddings"][i, codes[i + 1]])[None]


@pytest.mark.slow
def test_decoder_audio_is_neither_constant_nor_clipped(oracle: dict[str, np.ndarray]) -> None:
    pcm = oracle["pcm"]  # (F * 1920,)
    assert pcm.shape == (ORACLE_FRAMES * qwen3tts.SAMPLES_PER_FRAME,)
    frames = pcm.reshape(ORACLE_FRAMES, -1)
    assert frames.std(axis=1).min() > 0.02
    assert np.mean(np.abs(pcm) > 0.99) < 0.01
