"""Random-weight Qwen3-TTS 12 Hz models in the official Hugging Face layout.

A folder written here looks like a snapshot of `Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice`:
`config.json` (the real key structure, `talker_config` with its `code_predictor_config`,
`speaker_encoder_config`), `generation_config.json`, `model.safetensors` (bf16, the official
tensor names), a Qwen2 byte-level BPE text tokenizer (`vocab.json`, `merges.txt`,
`tokenizer_config.json`) and `speech_tokenizer/` (`config.json`, fp32 `model.safetensors` with
the Mimi encoder and the 12 Hz decoder, `preprocessor_config.json`). `qwen-tts` 0.1.1 loads it
with `Qwen3TTSModel.from_pretrained(folder)`, without missing or unexpected keys
(tests/test_qwen3tts_convert.py checks this in the oracle environment).

Nothing here imports qwen-tts or transformers: tensor names and shapes are derived from the
config the way qwen-tts 0.1.1's modules build them (`core/models/modeling_qwen3_tts.py`,
`core/tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py`, transformers 4.57.3 `MimiModel`), and
the files are written by a small streaming safetensors writer, so the 2.5 GB full-size model
needs a few MB of memory. Special ids keep the real layout: codec specials, languages and
speakers sit at their real offset from the codebook size (2148 = 2048 + 100 becomes 32 + 100
in the tiny model), text special tokens directly after the BPE vocabulary, as in Qwen2.

Weights are random but shaped for tests: every norm weight differs from 1, every table from
every other, so a converter that swaps two tensors fails a numeric check; linear layers are
scaled by 1/sqrt(fan_in) so activations stay near unit size and the talker's logits have clear
margins (greedy decoding is robust to fp16 rounding); the codec decoder produces audio that is
neither constant nor clipped. The talker's EOS row of `codec_head` is zero, so greedy decoding
never stops early and sampling stops only now and then (runs end at the engine's frame cap).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from wyoming_multitts.audio import write_wav
from wyoming_multitts.formats.safetensors import SAFETENSORS_DTYPES

from .files import CatalogEntries, atomic_path, write_once

_LOGGER = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# Real ids and names (Qwen3-TTS-12Hz-*-CustomVoice config.json; docs/engines.md,
# "Qwen3-TTS: releases, speakers and languages")

REAL_CODEBOOK_SIZE = 2048
"""Codebook size of the released models; codec special ids are stored below as offsets from it."""

CODEC_SPECIAL_OFFSETS = {
    "codec_pad_id": 100,  # 2148
    "codec_bos_id": 101,  # 2149
    "codec_eos_token_id": 102,  # 2150
    "codec_think_id": 106,  # 2154
    "codec_nothink_id": 107,  # 2155
    "codec_think_bos_id": 108,  # 2156
    "codec_think_eos_id": 109,  # 2157
}
"""talker_config codec special ids, minus the codebook size."""

LANGUAGE_OFFSETS = {
    "chinese": 7,
    "english": 2,
    "german": 5,
    "italian": 22,
    "portuguese": 23,
    "spanish": 6,
    "japanese": 10,
    "korean": 16,
    "french": 13,
    "russian": 21,
    "beijing_dialect": 26,
    "sichuan_dialect": 14,
}
"""talker_config.codec_language_id (english 2050, chinese 2055, …), minus the codebook size."""

SPEAKER_OFFSETS = {
    "serena": 1018,
    "vivian": 1017,
    "uncle_fu": 962,
    "ryan": 1013,
    "aiden": 813,
    "ono_anna": 825,
    "sohee": 816,
    "eric": 827,
    "dylan": 830,
}
"""CustomVoice talker_config.spk_id (vivian 3065, ryan 3061, …), minus the codebook size."""

SPEAKER_DIALECTS = {"eric": "sichuan_dialect", "dylan": "beijing_dialect"}
"""talker_config.spk_is_dialect entries that are not `false`."""

# fmt: off
QWEN2_ADDED_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
    "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
)
# fmt: on
"""The text tokenizer's added tokens in id order from the first id after the BPE vocabulary
(151643 in the real one: `<|im_start|>` 151644, `<tts_pad>` 151671, `<|audio_pad|>` 151675)."""

NOT_SPECIAL_ADDED_TOKENS = frozenset(QWEN2_ADDED_TOKENS[14:26])
"""Added tokens marked `"special": false` (`<tool_call>` … `</think>`), as in Qwen2.5/Qwen3."""

TTS_TOKEN_NAMES = {
    "im_start_token_id": "<|im_start|>",
    "im_end_token_id": "<|im_end|>",
    "tts_pad_token_id": "<tts_pad>",
    "tts_bos_token_id": "<tts_text_bos>",
    "tts_eos_token_id": "<tts_text_eod>",
}
"""Top-level config.json text ids and the added token each names."""

REAL_TEXT_BPE_TOKENS = 151_643
"""Entries of the real vocab.json (ids 0 … 151642); the added tokens follow."""
REAL_TEXT_VOCAB_SIZE = 151_936
"""Rows of the real text embedding (`talker_config.text_vocab_size`), padded past the tokens."""
REAL_ASSISTANT_ID = 77_091
"""`assistant` in the real vocabulary (config.json `assistant_token_id`)."""

ASSISTANT_MERGES = (
    ("a", "s"), ("as", "s"), ("i", "s"), ("ass", "is"), ("a", "n"), ("an", "t"), ("t", "ant"),
    ("assis", "tant"),
)  # fmt: skip
"""Merges that make `assistant` one token, as in Qwen2 (the prompt's role row is 3 tokens)."""
BASIC_MERGES = (
    ("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("e", "r"), ("Ġ", "a"), ("u", "s"),
    ("us", "er"), ("l", "l"), ("Ġ", "w"),
)  # fmt: skip
"""A few common merges, so text exercises the BPE merge path (`" the"` is one token)."""

GENERATION_CONFIG = {
    "do_sample": True,
    "repetition_penalty": 1.05,
    "temperature": 0.9,
    "top_p": 1.0,
    "top_k": 50,
    "subtalker_dosample": True,
    "subtalker_temperature": 0.9,
    "subtalker_top_p": 1.0,
    "subtalker_top_k": 50,
    "max_new_tokens": 8192,
}
"""generation_config.json of every released repo (docs/engines.md, "Qwen3-TTS: sampling and
stopping")."""

TRANSFORMERS_VERSION = "4.57.3"
"""What qwen-tts 0.1.1 pins; written into the configs as `save_pretrained` would."""

SAMPLE_RATE = 24000
"""Speech tokenizer input/output rate, Hz."""
SAMPLES_PER_FRAME = 1920
"""decode_upsample_rate: 8·5·4·3 · 2·2 samples per 12.5 Hz frame."""

# ----------------------------------------------------------------------------------------------
# Shapes


@dataclass(frozen=True)
class LmConfig:
    """A Qwen3-style decoder stack (talker or code predictor)."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    max_positions: int


@dataclass(frozen=True)
class Qwen3TTSShape:
    """Everything that sizes a Qwen3-TTS snapshot (a model kind plus its speech tokenizer)."""

    kind: str
    """`tts_model_type`: `custom_voice` or `base` (base adds the speaker encoder)."""
    size: str
    """`tts_model_size`: `0b6` or `1b7` (the wrappers drop instruct for 0b6)."""
    talker: LmConfig
    predictor: LmConfig
    """Code predictor; a hidden size unlike the talker's adds `small_to_mtp_projection` (1.7B)."""
    codebook_size: int
    num_code_groups: int
    text_bpe_tokens: int
    """vocab.json entries; the 33 added tokens get the ids right after."""
    text_vocab_size: int
    """Rows of the text embedding (at least text_bpe_tokens + 33)."""
    text_hidden: int
    assistant_id: int | None
    """Id of `assistant` in vocab.json; None: right after the merge tokens."""
    mrope_section: tuple[int, int, int]
    """talker rope_scaling.mrope_section; sums to head_dim / 2."""
    speaker_encoder: dict[str, Any]
    """speaker_encoder_config (enc_dim is set from the talker)."""
    tokenizer_encoder: dict[str, Any]
    """speech_tokenizer encoder_config (a transformers MimiConfig)."""
    tokenizer_decoder: dict[str, Any]
    """speech_tokenizer decoder_config."""
    decoder_out_gain: float = 1.0
    """Scale of the codec decoder's last conv, tuned so the tiny decoder's audio is not clipped."""
    speakers: tuple[str, ...] = tuple(SPEAKER_OFFSETS)

    def __post_init__(self) -> None:
        problems = []
        if self.kind not in ("custom_voice", "base"):
            problems.append(f"kind {self.kind!r} is not custom_voice or base")
        if sum(self.mrope_section) * 2 != self.talker.head_dim:
            problems.append("mrope_section must sum to talker head_dim / 2")
        if self.text_vocab_size < self.text_bpe_tokens + len(QWEN2_ADDED_TOKENS):
            problems.append("text_vocab_size leaves no room for the added tokens")
        if self.tokenizer_decoder["num_quantizers"] != self.num_code_groups:
            problems.append("decoder num_quantizers must equal num_code_groups")
        if problems:
            raise ValueError(f"invalid Qwen3TTSShape: {'; '.join(problems)}")

    @property
    def talker_vocab(self) -> int:
        """Codec vocabulary: the codebook plus 1024 special ids (qwen-tts suppresses the top
        1024 ids but EOS, so this must hold exactly)."""
        return self.codebook_size + 1024


FULL_TOKENIZER_ENCODER: dict[str, Any] = {
    "_frame_rate": 12.5,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "audio_channels": 1,
    "codebook_dim": 256,
    "codebook_size": 2048,
    "compress": 2,
    "dilation_growth_rate": 2,
    "head_dim": 64,
    "hidden_act": "gelu",
    "hidden_size": 512,
    "initializer_range": 0.02,
    "intermediate_size": 2048,
    "kernel_size": 7,
    "last_kernel_size": 3,
    "layer_scale_initial_scale": 0.01,
    "max_position_embeddings": 8000,
    "model_type": "mimi",
    "norm_eps": 1e-05,
    "normalize": False,
    "num_attention_heads": 8,
    "num_filters": 64,
    "num_hidden_layers": 8,
    "num_key_value_heads": 8,
    "num_quantizers": 32,
    "num_residual_layers": 1,
    "num_semantic_quantizers": 1,
    "pad_mode": "constant",
    "residual_kernel_size": 3,
    "rope_theta": 10000.0,
    "sampling_rate": SAMPLE_RATE,
    "sliding_window": 250,
    "trim_right_ratio": 1.0,
    "upsample_groups": 512,
    "upsampling_ratios": [8, 6, 5, 4],
    "use_cache": False,
    "use_causal_conv": True,
    "use_conv_shortcut": False,
    "use_streaming": False,
    "vector_quantization_hidden_dimension": 256,
}
"""Qwen3-TTS-Tokenizer-12Hz encoder_config (Mimi: 32 codebooks, the first 16 kept)."""

FULL_TOKENIZER_DECODER: dict[str, Any] = {
    "attention_bias": False,
    "attention_dropout": 0.0,
    "codebook_dim": 512,
    "codebook_size": 2048,
    "decoder_dim": 1536,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 512,
    "intermediate_size": 1024,
    "latent_dim": 1024,
    "layer_scale_initial_scale": 0.01,
    "max_position_embeddings": 8000,
    "num_attention_heads": 16,
    "num_hidden_layers": 8,
    "num_key_value_heads": 16,
    "num_quantizers": 16,
    "num_semantic_quantizers": 1,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000,
    "semantic_codebook_size": 4096,
    "sliding_window": 72,
    "upsample_rates": [8, 5, 4, 3],
    "upsampling_ratios": [2, 2],
    "vector_quantization_hidden_dimension": 512,
}
"""Qwen3-TTS-Tokenizer-12Hz decoder_config (docs/engines.md, "Qwen3-TTS: config values")."""

FULL_SPEAKER_ENCODER: dict[str, Any] = {
    "mel_dim": 128,
    "enc_channels": [512, 512, 512, 512, 1536],
    "enc_kernel_sizes": [5, 3, 3, 3, 1],
    "enc_dilations": [1, 2, 3, 4, 1],
    "enc_attention_channels": 128,
    "enc_res2net_scale": 8,
    "enc_se_channels": 128,
    "sample_rate": SAMPLE_RATE,
}
"""ECAPA-TDNN speaker encoder (Base models); enc_dim = talker hidden size."""

FULL_0B6_SHAPE = Qwen3TTSShape(
    kind="custom_voice",
    size="0b6",
    talker=LmConfig(1024, 3072, 28, 16, 8, 128, 32768),
    predictor=LmConfig(1024, 3072, 5, 16, 8, 128, 65536),
    codebook_size=REAL_CODEBOOK_SIZE,
    num_code_groups=16,
    text_bpe_tokens=REAL_TEXT_BPE_TOKENS,
    text_vocab_size=REAL_TEXT_VOCAB_SIZE,
    text_hidden=2048,
    assistant_id=REAL_ASSISTANT_ID,
    mrope_section=(24, 20, 20),
    speaker_encoder=FULL_SPEAKER_ENCODER,
    tokenizer_encoder=FULL_TOKENIZER_ENCODER,
    tokenizer_decoder=FULL_TOKENIZER_DECODER,
)
"""Qwen3-TTS-12Hz-0.6B-CustomVoice (docs/engines.md, "Qwen3-TTS: config values"): 0.9 B params
in model.safetensors (1.8 GB bf16), 170 M in the speech tokenizer (682 MB fp32)."""

TINY_TOKENIZER_ENCODER: dict[str, Any] = {
    **FULL_TOKENIZER_ENCODER,
    "codebook_dim": 8,
    "codebook_size": 32,
    "head_dim": 8,
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_attention_heads": 2,
    "num_filters": 4,
    "num_hidden_layers": 1,
    "num_key_value_heads": 2,
    "num_quantizers": 8,
    "sliding_window": 16,
    "upsample_groups": 16,
    "vector_quantization_hidden_dimension": 8,
}
"""Mimi encoder at toy width; same strides (960 samples, then 2x down to 12.5 Hz)."""

TINY_TOKENIZER_DECODER: dict[str, Any] = {
    **FULL_TOKENIZER_DECODER,
    "codebook_dim": 16,
    "codebook_size": 32,
    "decoder_dim": 64,
    "head_dim": 8,
    "hidden_size": 16,
    "intermediate_size": 32,
    "latent_dim": 16,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "num_quantizers": 4,
    "semantic_codebook_size": 32,
    "sliding_window": 8,
    "vector_quantization_hidden_dimension": 16,
}
"""12 Hz decoder at toy width; same upsampling (1920 samples per frame)."""

TINY_SPEAKER_ENCODER: dict[str, Any] = {
    **FULL_SPEAKER_ENCODER,
    "enc_channels": [16, 16, 16, 16, 48],
    "enc_attention_channels": 8,
    "enc_res2net_scale": 2,
    "enc_se_channels": 8,
}
"""Speaker encoder at toy width (mel_dim stays 128: qwen-tts hard-codes 128 mel bins)."""

TINY_SHAPE = Qwen3TTSShape(
    kind="custom_voice",
    size="1b7",
    talker=LmConfig(32, 64, 2, 2, 1, 16, 32768),
    predictor=LmConfig(16, 32, 2, 2, 1, 8, 65536),
    codebook_size=32,
    num_code_groups=4,
    text_bpe_tokens=256 + len(ASSISTANT_MERGES) + len(BASIC_MERGES),
    text_vocab_size=384,
    text_hidden=24,
    assistant_id=None,
    mrope_section=(4, 2, 2),
    speaker_encoder=TINY_SPEAKER_ENCODER,
    tokenizer_encoder=TINY_TOKENIZER_ENCODER,
    tokenizer_decoder=TINY_TOKENIZER_DECODER,
    decoder_out_gain=0.1,
)
"""A 1.7B-like toy (the predictor is narrower than the talker, so `small_to_mtp_projection`
exists) with 4 code groups of 32 codes: talker vocab 1056, codec specials 132…141 (pad, bos,
eos 134, …), english 34, chinese 39, ryan 1045, vivian 1049; text vocab 384 (`<|im_start|>`
275, `<tts_pad>` 302)."""

TINY_BASE_SHAPE = dataclasses.replace(TINY_SHAPE, kind="base", speakers=())
"""The tiny Base model: no named speakers, a speaker encoder (x-vector) instead."""

# ----------------------------------------------------------------------------------------------
# Tensor plans: every tensor qwen-tts builds, with how to fill it


@dataclass(frozen=True)
class _Tensor:
    name: str
    shape: tuple[int, ...]
    fill: str
    """normal (N(0, scale)), around_one (1 + N(0, scale)), const (scale), usage (uniform in
    [0.5, 2): codebook cluster usage)."""
    scale: float
    zero_rows: tuple[int, ...] = ()
    """Rows set to zero (the talker's EOS logit)."""


def _linear(name: str, out: int, inp: int, gain: float = 1.0, bias: bool = False) -> list[_Tensor]:
    tensors = [_Tensor(f"{name}.weight", (out, inp), "normal", gain / math.sqrt(inp))]
    if bias:
        tensors.append(_Tensor(f"{name}.bias", (out,), "normal", 0.1))
    return tensors


def _conv(
    name: str, out: int, inp: int, kernel: int, gain: float = 1.0, bias: bool = True
) -> list[_Tensor]:
    tensors = [
        _Tensor(f"{name}.weight", (out, inp, kernel), "normal", gain / math.sqrt(inp * kernel))
    ]
    if bias:
        tensors.append(_Tensor(f"{name}.bias", (out,), "normal", 0.05))
    return tensors


def _norm(name: str, dim: int, bias: bool = False) -> list[_Tensor]:
    tensors = [_Tensor(f"{name}.weight", (dim,), "around_one", 0.1)]
    if bias:
        tensors.append(_Tensor(f"{name}.bias", (dim,), "normal", 0.05))
    return tensors


def _decoder_layer(prefix: str, lm: LmConfig) -> list[_Tensor]:
    """`Qwen3TTSTalkerDecoderLayer` / `Qwen3TTSDecoderLayer`: the same tensor names."""
    q_dim, kv_dim = lm.heads * lm.head_dim, lm.kv_heads * lm.head_dim
    return [
        *_linear(f"{prefix}.self_attn.q_proj", q_dim, lm.hidden),
        *_linear(f"{prefix}.self_attn.k_proj", kv_dim, lm.hidden),
        *_linear(f"{prefix}.self_attn.v_proj", kv_dim, lm.hidden),
        *_linear(f"{prefix}.self_attn.o_proj", lm.hidden, q_dim),
        *_norm(f"{prefix}.self_attn.q_norm", lm.head_dim),
        *_norm(f"{prefix}.self_attn.k_norm", lm.head_dim),
        *_linear(f"{prefix}.mlp.gate_proj", lm.intermediate, lm.hidden),
        *_linear(f"{prefix}.mlp.up_proj", lm.intermediate, lm.hidden),
        *_linear(f"{prefix}.mlp.down_proj", lm.hidden, lm.intermediate),
        *_norm(f"{prefix}.input_layernorm", lm.hidden),
        *_norm(f"{prefix}.post_attention_layernorm", lm.hidden),
    ]


HEAD_GAIN = 3.0
"""Output heads: logits with a standard deviation of ~3 (clear greedy margins)."""


def model_plan(shape: Qwen3TTSShape) -> list[_Tensor]:
    """Every tensor of `Qwen3TTSForConditionalGeneration`'s state dict for `shape`."""
    talker, predictor = shape.talker, shape.predictor
    eos = shape.codebook_size + CODEC_SPECIAL_OFFSETS["codec_eos_token_id"]
    plan: list[_Tensor] = []
    for i in range(talker.layers):
        plan += _decoder_layer(f"talker.model.layers.{i}", talker)
    plan += [
        *_norm("talker.model.norm", talker.hidden),
        _Tensor(
            "talker.model.codec_embedding.weight",
            (shape.talker_vocab, talker.hidden),
            "normal",
            1.0,
        ),
        _Tensor(
            "talker.model.text_embedding.weight",
            (shape.text_vocab_size, shape.text_hidden),
            "normal",
            1.0,
        ),
        *_linear(
            "talker.text_projection.linear_fc1", shape.text_hidden, shape.text_hidden, bias=True
        ),
        *_linear("talker.text_projection.linear_fc2", talker.hidden, shape.text_hidden, bias=True),
        _Tensor(
            "talker.codec_head.weight",
            (shape.talker_vocab, talker.hidden),
            "normal",
            HEAD_GAIN / math.sqrt(talker.hidden),
            zero_rows=(eos,),
        ),
    ]
    for i in range(predictor.layers):
        plan += _decoder_layer(f"talker.code_predictor.model.layers.{i}", predictor)
    plan += _norm("talker.code_predictor.model.norm", predictor.hidden)
    for i in range(shape.num_code_groups - 1):
        plan.append(
            _Tensor(
                f"talker.code_predictor.model.codec_embedding.{i}.weight",
                (shape.codebook_size, talker.hidden),  # talker width: projected afterwards
                "normal",
                1.0,
            )
        )
    for i in range(shape.num_code_groups - 1):
        plan += _linear(
            f"talker.code_predictor.lm_head.{i}", shape.codebook_size, predictor.hidden, HEAD_GAIN
        )
    if predictor.hidden != talker.hidden:
        plan += _linear(
            "talker.code_predictor.small_to_mtp_projection",
            predictor.hidden,
            talker.hidden,
            bias=True,
        )
    if shape.kind == "base":
        plan += _speaker_encoder_plan({**shape.speaker_encoder, "enc_dim": talker.hidden})
    return plan


def _speaker_encoder_plan(config: dict[str, Any]) -> list[_Tensor]:
    """`Qwen3TTSSpeakerEncoder` (ECAPA-TDNN)."""
    channels, kernels = config["enc_channels"], config["enc_kernel_sizes"]
    scale, se = config["enc_res2net_scale"], config["enc_se_channels"]
    prefix = "speaker_encoder"
    plan = _conv(f"{prefix}.blocks.0.conv", channels[0], config["mel_dim"], kernels[0])
    for i in range(1, len(channels) - 1):
        block, width = f"{prefix}.blocks.{i}", channels[i]
        plan += _conv(f"{block}.tdnn1.conv", width, channels[i - 1], 1)
        for j in range(scale - 1):
            plan += _conv(
                f"{block}.res2net_block.blocks.{j}.conv", width // scale, width // scale, kernels[i]
            )
        plan += _conv(f"{block}.tdnn2.conv", width, width, 1)
        plan += _conv(f"{block}.se_block.conv1", se, width, 1)
        plan += _conv(f"{block}.se_block.conv2", width, se, 1)
    last = channels[-1]
    plan += _conv(f"{prefix}.mfa.conv", last, last, kernels[-1])
    plan += _conv(f"{prefix}.asp.tdnn.conv", config["enc_attention_channels"], last * 3, 1)
    plan += _conv(f"{prefix}.asp.conv", last, config["enc_attention_channels"], 1)
    plan += _conv(f"{prefix}.fc", config["enc_dim"], last * 2, 1)
    return plan


def speech_tokenizer_plan(shape: Qwen3TTSShape) -> list[_Tensor]:
    """Every tensor of `Qwen3TTSTokenizerV2Model`'s state dict: Mimi encoder, 12 Hz decoder."""
    return _mimi_encoder_plan(shape.tokenizer_encoder) + _decoder_plan(
        shape.tokenizer_decoder, shape.decoder_out_gain
    )


def _mimi_encoder_plan(config: dict[str, Any]) -> list[_Tensor]:
    """transformers 4.57.3 `MimiModel` without its decoder parts (`Qwen3TTSTokenizerV2Encoder`)."""
    prefix = "encoder"
    filters, hidden = config["num_filters"], config["hidden_size"]
    plan = _conv(
        f"{prefix}.encoder.layers.0.conv", filters, config["audio_channels"], config["kernel_size"]
    )
    index, scaling = 1, 1
    for ratio in reversed(config["upsampling_ratios"]):  # SEANet: strides 4, 5, 6, 8
        width = scaling * filters
        for _ in range(config["num_residual_layers"]):
            block = f"{prefix}.encoder.layers.{index}.block"
            plan += _conv(
                f"{block}.1.conv",
                width // config["compress"],
                width,
                config["residual_kernel_size"],
            )
            plan += _conv(f"{block}.3.conv", width, width // config["compress"], 1)
            index += 1
        index += 1  # ELU
        plan += _conv(f"{prefix}.encoder.layers.{index}.conv", width * 2, width, ratio * 2)
        index += 1
        scaling *= 2
    index += 1  # ELU
    plan += _conv(
        f"{prefix}.encoder.layers.{index}.conv",
        hidden,
        scaling * filters,
        config["last_kernel_size"],
    )

    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    q_dim = config["num_attention_heads"] * head_dim
    kv_dim = config["num_key_value_heads"] * head_dim
    for i in range(config["num_hidden_layers"]):
        layer = f"{prefix}.encoder_transformer.layers.{i}"
        plan += [
            *_linear(f"{layer}.self_attn.q_proj", q_dim, hidden),
            *_linear(f"{layer}.self_attn.k_proj", kv_dim, hidden),
            *_linear(f"{layer}.self_attn.v_proj", kv_dim, hidden),
            *_linear(f"{layer}.self_attn.o_proj", hidden, q_dim),
            *_linear(f"{layer}.mlp.fc1", config["intermediate_size"], hidden),
            *_linear(f"{layer}.mlp.fc2", hidden, config["intermediate_size"]),
            *_norm(f"{layer}.input_layernorm", hidden, bias=True),
            *_norm(f"{layer}.post_attention_layernorm", hidden, bias=True),
            _Tensor(f"{layer}.self_attn_layer_scale.scale", (hidden,), "const", 0.1),
            _Tensor(f"{layer}.mlp_layer_scale.scale", (hidden,), "const", 0.1),
        ]
    encodec_frame_rate = config["sampling_rate"] / math.prod(config["upsampling_ratios"])
    stride = round(encodec_frame_rate / config["_frame_rate"])
    plan += _conv(f"{prefix}.downsample.conv", hidden, hidden, 2 * stride, bias=False)

    dim, size = config["codebook_dim"], config["codebook_size"]
    vq_hidden = config["vector_quantization_hidden_dimension"]
    n_semantic = config["num_semantic_quantizers"]
    for part, count in (
        ("semantic", n_semantic),
        ("acoustic", config["num_quantizers"] - n_semantic),
    ):
        rvq = f"{prefix}.quantizer.{part}_residual_vector_quantizer"
        for i in range(count):
            plan += [
                _Tensor(f"{rvq}.layers.{i}.codebook.initialized", (1,), "const", 1.0),
                _Tensor(f"{rvq}.layers.{i}.codebook.cluster_usage", (size,), "usage", 1.0),
                _Tensor(f"{rvq}.layers.{i}.codebook.embed_sum", (size, dim), "normal", 1.0),
            ]
        plan += _conv(f"{rvq}.input_proj", vq_hidden, hidden, 1, bias=False)
        plan += _conv(f"{rvq}.output_proj", hidden, vq_hidden, 1, bias=False)
    return plan


def _decoder_plan(config: dict[str, Any], out_gain: float) -> list[_Tensor]:
    """`Qwen3TTSTokenizerV2Decoder`: RVQ, pre-conv, transformer, upsampling, SnakeBeta blocks."""
    prefix = "decoder"
    hidden, latent = config["hidden_size"], config["latent_dim"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    q_dim = config["num_attention_heads"] * head_dim
    kv_dim = config["num_key_value_heads"] * head_dim
    plan: list[_Tensor] = []
    for i in range(config["num_hidden_layers"]):
        layer = f"{prefix}.pre_transformer.layers.{i}"
        plan += [
            *_linear(f"{layer}.self_attn.q_proj", q_dim, hidden),
            *_linear(f"{layer}.self_attn.k_proj", kv_dim, hidden),
            *_linear(f"{layer}.self_attn.v_proj", kv_dim, hidden),
            *_linear(f"{layer}.self_attn.o_proj", hidden, q_dim),
            *_linear(f"{layer}.mlp.gate_proj", config["intermediate_size"], hidden),
            *_linear(f"{layer}.mlp.up_proj", config["intermediate_size"], hidden),
            *_linear(f"{layer}.mlp.down_proj", hidden, config["intermediate_size"]),
            *_norm(f"{layer}.input_layernorm", hidden),
            *_norm(f"{layer}.post_attention_layernorm", hidden),
            _Tensor(f"{layer}.self_attn_layer_scale.scale", (hidden,), "around_one", 0.2),
            _Tensor(f"{layer}.mlp_layer_scale.scale", (hidden,), "around_one", 0.2),
        ]
    plan += [
        *_norm(f"{prefix}.pre_transformer.norm", hidden),
        *_linear(f"{prefix}.pre_transformer.input_proj", hidden, latent, bias=True),
        *_linear(f"{prefix}.pre_transformer.output_proj", latent, hidden, bias=True),
    ]
    codebook_dim, half = config["codebook_dim"], config["codebook_dim"] // 2
    n_rest = config["num_quantizers"] - 1
    for part, count in (("rvq_first", 1), ("rvq_rest", n_rest)):
        rvq = f"{prefix}.quantizer.{part}"
        plan += _conv(f"{rvq}.input_proj", half, codebook_dim, 1, bias=False)
        plan += _conv(f"{rvq}.output_proj", codebook_dim, half, 1, bias=False)
        for i in range(count):
            book = f"{rvq}.vq.layers.{i}._codebook"
            plan += [
                _Tensor(f"{book}.cluster_usage", (config["codebook_size"],), "usage", 1.0),
                _Tensor(f"{book}.embedding_sum", (config["codebook_size"], half), "normal", 1.0),
            ]
    plan += _conv(f"{prefix}.pre_conv.conv", latent, codebook_dim, 3)
    for i, factor in enumerate(config["upsampling_ratios"]):
        up = f"{prefix}.upsample.{i}"
        # ConvTranspose1d weight: (in, out, kernel); each output sample sees in·kernel/stride inputs
        plan.append(
            _Tensor(
                f"{up}.0.conv.weight", (latent, latent, factor), "normal", 1 / math.sqrt(latent)
            )
        )
        plan.append(_Tensor(f"{up}.0.conv.bias", (latent,), "normal", 0.05))
        plan += [
            _Tensor(f"{up}.1.gamma", (latent,), "normal", 0.3),
            *_conv(f"{up}.1.dwconv.conv", latent, 1, 7),
            *_norm(f"{up}.1.norm", latent, bias=True),
            *_linear(f"{up}.1.pwconv1", 4 * latent, latent, bias=True),
            *_linear(f"{up}.1.pwconv2", latent, 4 * latent, bias=True),
        ]
    decoder_dim = config["decoder_dim"]
    plan += _conv(f"{prefix}.decoder.0.conv", decoder_dim, latent, 7)
    for i, rate in enumerate(config["upsample_rates"]):
        block = f"{prefix}.decoder.{i + 1}.block"
        width_in, width = decoder_dim // 2**i, decoder_dim // 2 ** (i + 1)
        plan += _snake(f"{block}.0", width_in)
        plan.append(
            _Tensor(
                f"{block}.1.conv.weight",
                (width_in, width, 2 * rate),
                "normal",
                1 / math.sqrt(2 * width_in),
            )
        )
        plan.append(_Tensor(f"{block}.1.conv.bias", (width,), "normal", 0.05))
        for unit in (2, 3, 4):  # residual units, dilations 1, 3, 9
            plan += [
                *_snake(f"{block}.{unit}.act1", width),
                *_conv(f"{block}.{unit}.conv1.conv", width, width, 7, gain=0.5),
                *_snake(f"{block}.{unit}.act2", width),
                *_conv(f"{block}.{unit}.conv2.conv", width, width, 1, gain=0.5),
            ]
    n_blocks = len(config["upsample_rates"])
    out_width = decoder_dim // 2**n_blocks
    plan += _snake(f"{prefix}.decoder.{n_blocks + 1}", out_width)
    plan += _conv(f"{prefix}.decoder.{n_blocks + 2}.conv", 1, out_width, 7, gain=out_gain)
    return plan


def _snake(name: str, dim: int) -> list[_Tensor]:
    """SnakeBeta: log-scale alpha and beta (exp() is taken in the forward pass)."""
    return [
        _Tensor(f"{name}.alpha", (dim,), "normal", 0.3),
        _Tensor(f"{name}.beta", (dim,), "normal", 0.3),
    ]


# ----------------------------------------------------------------------------------------------
# safetensors, streamed

CHUNK_VALUES = 1 << 22
"""Values generated and written at a time (16 MB of float32)."""


def write_safetensors(path: Path, plan: list[_Tensor], dtype: str, seed: int) -> int:
    """Write the random tensors of `plan` as a safetensors file of `dtype`; return its size.

    The format: an 8-byte little-endian header length, a JSON header (name → dtype, shape,
    byte offsets; padded with spaces to 8 bytes), then the tensors' bytes back to back, sorted
    by name as `safetensors.torch.save_file` does. Each tensor's values come from its own
    generator (seeded by `seed` and its name), so they do not depend on the other tensors.
    """
    itemsize = np.dtype(SAFETENSORS_DTYPES[dtype]).itemsize
    ordered = sorted(plan, key=lambda tensor: tensor.name)
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for tensor in ordered:
        nbytes = math.prod(tensor.shape) * itemsize
        header[tensor.name] = {
            "dtype": dtype,
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    with open(path, "wb") as out:
        out.write(len(header_bytes).to_bytes(8, "little"))
        out.write(header_bytes)
        for tensor in ordered:
            for chunk in _values(tensor, seed):
                _write_as(out, chunk, dtype)
        size = out.tell()
    return size


def _values(tensor: _Tensor, seed: int) -> Iterator[np.ndarray]:
    """The tensor's float32 values, flat, in row-aligned pieces of about CHUNK_VALUES."""
    rng = np.random.default_rng([seed, zlib.crc32(tensor.name.encode())])
    row = math.prod(tensor.shape[1:]) if len(tensor.shape) > 1 else 1
    rows = tensor.shape[0]
    rows_per_chunk = max(1, CHUNK_VALUES // row)
    for start in range(0, rows, rows_per_chunk):
        n_rows = min(rows_per_chunk, rows - start)
        n = n_rows * row
        if tensor.fill == "normal":
            chunk = rng.standard_normal(n, dtype=np.float32) * np.float32(tensor.scale)
        elif tensor.fill == "around_one":
            chunk = 1 + rng.standard_normal(n, dtype=np.float32) * np.float32(tensor.scale)
        elif tensor.fill == "usage":
            chunk = rng.uniform(0.5, 2.0, n).astype(np.float32)
        elif tensor.fill == "const":
            chunk = np.full(n, tensor.scale, dtype=np.float32)
        else:
            raise ValueError(f"unknown fill {tensor.fill!r} for {tensor.name}")
        for zero_row in tensor.zero_rows:
            if start <= zero_row < start + n_rows:
                chunk[(zero_row - start) * row : (zero_row - start + 1) * row] = 0.0
        yield chunk  # (n,) float32


def _write_as(out: BinaryIO, values: np.ndarray, dtype: str) -> None:
    """float32 `values` stored as `dtype`, little-endian."""
    if dtype == "BF16":
        to_bfloat16(values).tofile(out)
    else:
        values.astype(np.dtype(SAFETENSORS_DTYPES[dtype]).newbyteorder("<")).tofile(out)


def to_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 → bfloat16 bit patterns (uint16), rounded to nearest even like torch."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype("<u2")


# ----------------------------------------------------------------------------------------------
# Text tokenizer (Qwen2 byte-level BPE)


def gpt2_byte_tokens() -> list[str]:
    """The 256 byte symbols in GPT-2's (and Qwen2's) id order: `!` is 0, `Ċ` (newline) 198."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    shifted = [byte for byte in range(256) if byte not in printable]
    symbols = {byte: chr(byte) for byte in printable}
    symbols.update({byte: chr(0x100 + n) for n, byte in enumerate(shifted)})
    return [symbols[byte] for byte in printable + shifted]


@dataclass(frozen=True)
class TextVocab:
    """vocab.json (token → id), merges and the added tokens' ids."""

    tokens: dict[str, int]
    merges: tuple[tuple[str, str], ...]
    added: dict[str, int] = field(default_factory=dict)


def text_vocab(shape: Qwen3TTSShape) -> TextVocab:
    """Byte tokens, merge results, fillers up to text_bpe_tokens, then the 33 added tokens.

    Fillers (`Ġfiller500`) mix letters and digits, which Qwen2's pre-tokenizer always splits,
    and no merge builds them, so no text ever tokenizes to one.
    """
    merges = ASSISTANT_MERGES + BASIC_MERGES
    tokens = gpt2_byte_tokens() + [left + right for left, right in merges]
    tokens += [f"Ġfiller{i}" for i in range(len(tokens), shape.text_bpe_tokens)]
    if len(tokens) != shape.text_bpe_tokens:
        raise ValueError(f"text_bpe_tokens {shape.text_bpe_tokens} is smaller than {len(tokens)}")
    if shape.assistant_id is not None:  # the real id, for the full-size model
        here = tokens.index("assistant")
        tokens[here], tokens[shape.assistant_id] = tokens[shape.assistant_id], tokens[here]
    added = {token: shape.text_bpe_tokens + i for i, token in enumerate(QWEN2_ADDED_TOKENS)}
    return TextVocab(
        tokens={token: i for i, token in enumerate(tokens)}, merges=merges, added=added
    )


def _tokenizer_config(vocab: TextVocab) -> dict[str, Any]:
    """tokenizer_config.json of a Qwen2 tokenizer (no tokenizer.json: the fast tokenizer is
    built from vocab.json and merges.txt)."""
    decoder = {
        str(token_id): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": token not in NOT_SPECIAL_ADDED_TOKENS,
        }
        for token, token_id in vocab.added.items()
    }
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "additional_special_tokens": [
            t for t in QWEN2_ADDED_TOKENS if t not in NOT_SPECIAL_ADDED_TOKENS
        ],
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


# ----------------------------------------------------------------------------------------------
# Configs


def _lm_config(lm: LmConfig) -> dict[str, Any]:
    return {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "head_dim": lm.head_dim,
        "hidden_act": "silu",
        "hidden_size": lm.hidden,
        "initializer_range": 0.02,
        "intermediate_size": lm.intermediate,
        "max_position_embeddings": lm.max_positions,
        "num_attention_heads": lm.heads,
        "num_hidden_layers": lm.layers,
        "num_key_value_heads": lm.kv_heads,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000,
        "sliding_window": None,
        "use_cache": True,
        "use_sliding_window": False,
    }


def model_config(shape: Qwen3TTSShape, vocab: TextVocab) -> dict[str, Any]:
    """config.json with the key structure of the released models."""
    base = shape.codebook_size
    speakers = {name: base + SPEAKER_OFFSETS[name] for name in shape.speakers}
    predictor = {
        **_lm_config(shape.predictor),
        "layer_types": ["full_attention"] * shape.predictor.layers,
        "max_window_layers": 28,
        "model_type": "qwen3_tts_talker_code_predictor",
        "num_code_groups": shape.num_code_groups,
        "rope_scaling": None,
        "vocab_size": shape.codebook_size,
    }
    talker = {
        **_lm_config(shape.talker),
        **{key: base + offset for key, offset in CODEC_SPECIAL_OFFSETS.items()},
        "code_predictor_config": predictor,
        "codec_language_id": {lang: base + offset for lang, offset in LANGUAGE_OFFSETS.items()},
        "model_type": "qwen3_tts_talker",
        "num_code_groups": shape.num_code_groups,
        "position_id_per_seconds": 13,
        "rope_scaling": {
            "interleaved": True,
            "mrope_section": list(shape.mrope_section),
            "rope_type": "default",
        },
        "spk_id": speakers,
        "spk_is_dialect": {name: SPEAKER_DIALECTS.get(name, False) for name in speakers},
        "text_hidden_size": shape.text_hidden,
        "text_vocab_size": shape.text_vocab_size,
        "vocab_size": shape.talker_vocab,
    }
    return {
        "architectures": ["Qwen3TTSForConditionalGeneration"],
        "assistant_token_id": vocab.tokens["assistant"],
        **{key: vocab.added[token] for key, token in TTS_TOKEN_NAMES.items()},
        "model_type": "qwen3_tts",
        "speaker_encoder_config": {
            **shape.speaker_encoder,
            "enc_dim": shape.talker.hidden,
        },
        "talker_config": talker,
        "tokenizer_type": "qwen3_tts_tokenizer_12hz",
        "torch_dtype": "bfloat16",
        "transformers_version": TRANSFORMERS_VERSION,
        "tts_model_size": shape.size,
        "tts_model_type": shape.kind,
    }


def speech_tokenizer_config(shape: Qwen3TTSShape) -> dict[str, Any]:
    """speech_tokenizer/config.json (`Qwen3TTSTokenizerV2Config`)."""
    return {
        "architectures": ["Qwen3TTSTokenizerV2Model"],
        "decode_upsample_rate": SAMPLES_PER_FRAME,
        "decoder_config": dict(shape.tokenizer_decoder),
        "encode_downsample_rate": SAMPLES_PER_FRAME,
        "encoder_config": dict(shape.tokenizer_encoder),
        "encoder_valid_num_quantizers": shape.num_code_groups,
        "input_sample_rate": SAMPLE_RATE,
        "model_type": "qwen3_tts_tokenizer_12hz",
        "output_sample_rate": SAMPLE_RATE,
        "torch_dtype": "float32",
        "transformers_version": TRANSFORMERS_VERSION,
    }


FEATURE_EXTRACTOR_CONFIG = {
    "chunk_length_s": None,
    "feature_extractor_type": "EncodecFeatureExtractor",
    "feature_size": 1,
    "overlap": None,
    "padding_side": "right",
    "padding_value": 0.0,
    "return_attention_mask": True,
    "sampling_rate": SAMPLE_RATE,
}
"""speech_tokenizer/preprocessor_config.json (what `AutoFeatureExtractor` reads)."""

MODELSCOPE_CONFIGURATION = {"framework": "pytorch", "task": "text-to-speech", "allow_remote": True}
"""speech_tokenizer/configuration.json, a ModelScope file the release carries (unused)."""


# ----------------------------------------------------------------------------------------------
# Whole snapshots


def write_qwen3tts(directory: Path, shape: Qwen3TTSShape, seed: int) -> int:
    """Write a complete random snapshot of `shape` into `directory`; return its size in bytes."""
    start = time.monotonic()
    directory.mkdir(parents=True, exist_ok=True)
    vocab = text_vocab(shape)
    _write_json(directory / "config.json", model_config(shape, vocab))
    _write_json(directory / "generation_config.json", GENERATION_CONFIG)
    _write_json(directory / "vocab.json", vocab.tokens)
    merges = "".join(f"{left} {right}\n" for left, right in vocab.merges)
    (directory / "merges.txt").write_text("#version: 0.2\n" + merges, encoding="utf-8")
    _write_json(directory / "tokenizer_config.json", _tokenizer_config(vocab))
    size = write_safetensors(directory / "model.safetensors", model_plan(shape), "BF16", seed)

    codec_dir = directory / "speech_tokenizer"
    codec_dir.mkdir(exist_ok=True)
    _write_json(codec_dir / "config.json", speech_tokenizer_config(shape))
    _write_json(codec_dir / "configuration.json", MODELSCOPE_CONFIGURATION)
    _write_json(codec_dir / "preprocessor_config.json", FEATURE_EXTRACTOR_CONFIG)
    size += write_safetensors(
        codec_dir / "model.safetensors", speech_tokenizer_plan(shape), "F32", seed + 1
    )
    _LOGGER.info(
        "Wrote Qwen3-TTS %s %s: %.2f GB in %.1f s",
        shape.kind,
        directory,
        size / 1e9,
        time.monotonic() - start,
    )
    return size


def _write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------------------------
# Files and catalog entries

TINY_SEED = 1
TINY_MODEL = "qwen3tts-tiny"
TINY_DIR = "qwen3tts-tiny-customvoice"
TINY_BASE_DIR = "qwen3tts-tiny-base"
TINY_MAX_FRAMES = 12
"""About 1 s of audio: keeps a tiny-model request short."""
TINY_VOICES = {"tiny-qwen3-ryan": ("ryan", "en"), "tiny-qwen3-vivian": ("vivian", "zh")}
TINY_BASE_MODEL = "qwen3tts-tiny-base"
TINY_REFERENCE = "qwen3tts-tiny-reference.wav"
TINY_REFERENCE_RATE = 16_000
"""The reference is written at 16 kHz, so serving it exercises resampling to 24 kHz."""
TINY_REFERENCE_SECONDS = 2.0
TINY_REFERENCE_TEXT = "Hello, this is my voice."
TINY_CLONE_VOICES = {
    "tiny-qwen3-clone": TINY_REFERENCE_TEXT,  # in-context clone (reference codes + transcript)
    "tiny-qwen3-clone-xvector": None,  # no transcript: x-vector only
}

FULL_SEED = 3
FULL_MODEL = "qwen3tts-0.6b-random"
FULL_DIR = "qwen3tts-0.6b-customvoice-random"
FULL_MAX_FRAMES = 300
"""24 s of audio, like Orpheus' 2048-token cap; random weights never emit EOS greedily."""
FULL_VOICES = {"random-qwen3-ryan": ("ryan", "en"), "random-qwen3-vivian": ("vivian", "zh")}


def write_tiny(directory: Path) -> CatalogEntries:
    """Write the tiny CustomVoice and Base snapshots and a reference recording into
    `directory`; return catalog entries (the Base model's voices clone the recording).

    Deterministic (fixed seed) and quick: two folders of 0.9 MB each in a fraction of a second.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / TINY_DIR) as partial:
        write_qwen3tts(partial, TINY_SHAPE, TINY_SEED)
    with atomic_path(directory / TINY_BASE_DIR) as partial:
        write_qwen3tts(partial, TINY_BASE_SHAPE, TINY_SEED)
    with atomic_path(directory / TINY_REFERENCE) as partial:
        recording = reference_recording(TINY_REFERENCE_SECONDS, TINY_REFERENCE_RATE)
        write_wav(partial, recording, TINY_REFERENCE_RATE)
    models, voices = _entries(
        TINY_MODEL,
        "Tiny random Qwen3-TTS CustomVoice (tests)",
        TINY_DIR,
        TINY_MAX_FRAMES,
        {
            voice: (speaker, lang, "tiny Qwen3-TTS")
            for voice, (speaker, lang) in TINY_VOICES.items()
        },
    )
    base_models, _ = _entries(
        TINY_BASE_MODEL, "Tiny random Qwen3-TTS Base (tests)", TINY_BASE_DIR, TINY_MAX_FRAMES, {}
    )
    models.update(base_models)
    for voice, text in TINY_CLONE_VOICES.items():
        voices[voice] = {
            "model": TINY_BASE_MODEL,
            "languages": ["en"],
            "description": f"Clone of {TINY_REFERENCE} (tiny Qwen3-TTS Base)",
            "reference": {"path": TINY_REFERENCE, **({"text": text} if text else {})},
        }
    return models, voices


REFERENCE_PITCH_HZ = (110.0, 220.0)
"""The reference recording's "voice": a glide between these fundamentals."""
REFERENCE_HARMONICS = 8
REFERENCE_SYLLABLE_HZ = 4.0
"""Loudness rises and falls this often a second, like syllables."""


def reference_recording(seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    """A speech-like test recording (float32 mono, peak ~0.5): a gliding harmonic tone with a
    syllable-rate envelope and a little noise, so speaker encoder and speech tokenizer see
    something other than silence or white noise."""
    t = np.arange(round(seconds * rate)) / rate  # (n,) seconds
    low, high = REFERENCE_PITCH_HZ
    pitch = low + (high - low) * (0.5 + 0.5 * np.sin(2 * np.pi * 0.7 * t))  # (n,) Hz
    phase = 2 * np.pi * np.cumsum(pitch) / rate  # (n,)
    tone = sum(np.sin(k * phase) / k for k in range(1, REFERENCE_HARMONICS + 1))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * REFERENCE_SYLLABLE_HZ * t) ** 2
    noise = np.random.default_rng(seed).standard_normal(len(t))
    audio = 0.25 * tone * envelope + 0.01 * noise
    return (0.5 * audio / np.abs(audio).max()).astype(np.float32)


def write_full_size(directory: Path, threads: int) -> CatalogEntries:
    """Write a Qwen3-TTS-12Hz-0.6B-CustomVoice-shaped snapshot (2.5 GB); return catalog entries.

    Keeps an existing folder (delete it to rebuild). Tensors are generated and written a chunk
    at a time (~20 s, a few MB of memory). `threads` is unused: nothing is quantized here; the
    engine converts the snapshot once, on first load.
    """
    del threads
    write_once(
        directory / FULL_DIR, lambda partial: write_qwen3tts(partial, FULL_0B6_SHAPE, FULL_SEED)
    )
    return _entries(
        FULL_MODEL,
        "Random-weight Qwen3-TTS-12Hz-0.6B-CustomVoice (benchmarks: real speed, noise for audio)",
        FULL_DIR,
        FULL_MAX_FRAMES,
        {
            voice: (speaker, lang, "random Qwen3-TTS 0.6B")
            for voice, (speaker, lang) in FULL_VOICES.items()
        },
    )


def _entries(
    model: str,
    description: str,
    folder: str,
    max_frames: int,
    voices: dict[str, tuple[str, str, str]],
) -> CatalogEntries:
    """Catalog entries for one model folder; `voices`: name → (speaker, language, what)."""
    models = {
        model: {
            "engine": "qwen3tts",
            "description": description,
            "files": {"model": {"path": folder}},
            "device": "cpu",
            "options": {"max_frames": max_frames},
        }
    }
    voice_entries = {
        voice: {
            "model": model,
            "speaker": speaker,
            "languages": [language],
            "description": f"{speaker.title()} ({what})",
        }
        for voice, (speaker, language, what) in voices.items()
    }
    return models, voice_entries
