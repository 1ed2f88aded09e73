"""The tensors of a Qwen3-TTS release's `model.safetensors`: their names, the shapes of the two
transformer stacks (talker and code predictor), and the check, before the conversion writes
anything, that every tensor it reads is there with the shape config.json implies.

Tensor names: qwen-tts 0.1.1 `core/models/modeling_qwen3_tts.py` (cross-checked against the
state dict of a model built by qwen-tts in tests/test_qwen3tts_convert.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConvertError
from ...formats.gguf import LmShape, block_tensor_shapes
from ...formats.safetensors import SafetensorsFiles
from .config import ADVICE, Qwen3TTSRuntimeConfig, required, section

TALKER_PREFIX = "talker.model"
PREDICTOR_PREFIX = "talker.code_predictor.model"
"""Checkpoint prefixes of the two stacks (`{prefix}.layers.N.…`, `{prefix}.norm.weight`)."""

LAYER_TENSORS = (
    ("attn_norm", "input_layernorm"),
    ("attn_q", "self_attn.q_proj"),
    ("attn_k", "self_attn.k_proj"),
    ("attn_v", "self_attn.v_proj"),
    ("attn_q_norm", "self_attn.q_norm"),
    ("attn_k_norm", "self_attn.k_norm"),
    ("attn_output", "self_attn.o_proj"),
    ("ffn_norm", "post_attention_layernorm"),
    ("ffn_gate", "mlp.gate_proj"),
    ("ffn_up", "mlp.up_proj"),
    ("ffn_down", "mlp.down_proj"),
)
"""llama.cpp `qwen3` block tensor ← qwen-tts decoder-layer module (both end in `.weight`)."""

STACK_ARCH = "qwen3"
"""Both stacks are plain Qwen3 decoders to llama.cpp (the talker's M-RoPE gives all three
sections the same position during TTS: 1-D NEOX RoPE)."""
RMS_EPS_DEFAULT = 1e-6
ROPE_THETA_DEFAULT = 10000.0
MAX_POSITIONS_DEFAULT = 32768
"""What a stack's config falls back to without `rms_norm_eps`, `rope_theta`,
`max_position_embeddings` (transformers' Qwen3Config defaults)."""


def read_stack(cfg: Mapping[str, Any], n_vocab: int, path: Path, prefix: str) -> LmShape:
    """A Qwen3 decoder stack as config.json's section `cfg` (keys `prefix`…) describes it, with
    `n_vocab` rows of embedding and output."""

    def key(name: str) -> Any:
        return required(cfg, name, path, prefix)

    hidden, heads = int(key("hidden_size")), int(key("num_attention_heads"))
    try:
        return LmShape(
            arch=STACK_ARCH,
            n_vocab=n_vocab,
            n_embd=hidden,
            n_layer=int(key("num_hidden_layers")),
            n_head=heads,
            n_head_kv=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            n_ff=int(key("intermediate_size")),
            rope_base=float(cfg.get("rope_theta", ROPE_THETA_DEFAULT)),
            rms_eps=float(cfg.get("rms_norm_eps", RMS_EPS_DEFAULT)),
            qk_norm=True,
            n_ctx_train=int(cfg.get("max_position_embeddings", MAX_POSITIONS_DEFAULT)),
        )
    except ValueError as err:
        raise ConvertError(f"{path}: {prefix}: {err}; {ADVICE}") from err


def read_stacks(
    raw: Mapping[str, Any], config: Qwen3TTSRuntimeConfig, model_dir: Path
) -> tuple[LmShape, LmShape]:
    """The talker (vocabulary: the codec ids) and the code predictor (one codebook)."""
    path = model_dir / "config.json"
    talker_cfg = section(raw, "talker_config", model_dir)
    predictor_cfg = section(talker_cfg, "code_predictor_config", model_dir, "talker_config.")
    return (
        read_stack(talker_cfg, config.talker_vocab, path, "talker_config."),
        read_stack(
            predictor_cfg,
            config.codebook_size,
            path,
            "talker_config.code_predictor_config.",
        ),
    )


def layer_shapes(stack: LmShape) -> dict[str, tuple[int, ...]]:
    """Checkpoint module (of LAYER_TENSORS) → weight shape."""
    block = block_tensor_shapes(stack)
    return {module: block[f"{name}.weight"] for name, module in LAYER_TENSORS}


def expected_tensors(
    config: Qwen3TTSRuntimeConfig, talker: LmShape, predictor: LmShape, text_hidden: int
) -> dict[str, tuple[int, ...]]:
    """Every tensor the conversion reads, with its shape."""
    hidden, pred_hidden = config.talker_hidden, config.predictor_hidden
    expected: dict[str, tuple[int, ...]] = {}
    for stack, prefix in ((talker, TALKER_PREFIX), (predictor, PREDICTOR_PREFIX)):
        for i in range(stack.n_layer):
            for module, shape in layer_shapes(stack).items():
                expected[f"{prefix}.layers.{i}.{module}.weight"] = shape
        expected[f"{prefix}.norm.weight"] = (stack.n_embd,)
    expected.update(
        {
            "talker.model.codec_embedding.weight": (config.talker_vocab, hidden),
            "talker.model.text_embedding.weight": (config.text_vocab, text_hidden),
            "talker.text_projection.linear_fc1.weight": (text_hidden, text_hidden),
            "talker.text_projection.linear_fc1.bias": (text_hidden,),
            "talker.text_projection.linear_fc2.weight": (hidden, text_hidden),
            "talker.text_projection.linear_fc2.bias": (hidden,),
            "talker.codec_head.weight": (config.talker_vocab, hidden),
        }
    )
    for i in range(config.num_code_groups - 1):
        expected[f"{PREDICTOR_PREFIX}.codec_embedding.{i}.weight"] = (config.codebook_size, hidden)
        expected[f"talker.code_predictor.lm_head.{i}.weight"] = (config.codebook_size, pred_hidden)
    if config.has_mtp_projection:
        expected["talker.code_predictor.small_to_mtp_projection.weight"] = (pred_hidden, hidden)
        expected["talker.code_predictor.small_to_mtp_projection.bias"] = (pred_hidden,)
    return expected


def check_tensors(
    weights: SafetensorsFiles,
    config: Qwen3TTSRuntimeConfig,
    raw: Mapping[str, Any],
    stacks: tuple[LmShape, LmShape],
    model_dir: Path,
) -> None:
    """ConvertError naming the first missing or misshapen tensor, before anything is written."""
    text_hidden = int(required(raw["talker_config"], "text_hidden_size", model_dir / "config.json"))
    for name, shape in expected_tensors(config, *stacks, text_hidden).items():
        if name not in weights:
            raise ConvertError(
                f"{model_dir}: the weights have no tensor {name!r} (needed for a "
                f"{config.tts_model_type} model); {ADVICE}"
            )
        if weights.shape(name) != shape:
            raise ConvertError(
                f"{model_dir}: tensor {name!r} has shape {list(weights.shape(name))}, "
                f"config.json implies {list(shape)}; the weights do not match config.json"
            )
