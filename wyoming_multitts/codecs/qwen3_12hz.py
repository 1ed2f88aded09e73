"""Qwen3-TTS 12 Hz speech-tokenizer decoder ("code2wav"): 16 codes per 80 ms frame → 24 kHz audio.

Our own compact torch copy of `Qwen3TTSTokenizerV2Decoder` (qwen-tts 0.1.1,
`qwen_tts/core/tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py`),
without transformers: split RVQ lookup → causal conv → sliding-window transformer → 2× (causal
transposed conv + ConvNeXt) → causal conv → 4 DAC-style blocks with SnakeBeta → causal conv →
clamp to [-1, 1]. Module attributes are the checkpoint's names under `decoder.` in
`speech_tokenizer/model.safetensors`, so `load_state_dict(strict=True)` needs no rename table. There
is no weight norm to fold.

Everything is causal, so a frame's audio depends only on that frame and the ones before it:
`receptive_frames` of them (580 for the released decoder: 8 stacked attention layers reach back
8·71 frames, the convolutions 2 + 10 more). There is no lookahead: a frame's audio is final as
soon as the frame exists. Streaming (`stream`) carries each layer's state from one window to the
next (`StreamState`): every causal convolution keeps the (k-1)·d inputs its next outputs read,
each transposed convolution of kernel 2r the one input whose tail reaches its next outputs, and
each attention layer the keys and values of its last sliding_window - 1 (71) positions, its KV
cache. A window then computes only its new frames (≈2.4 GMAC per frame at full size, nearly all
in the convolutions), and the stream equals one whole-utterance decode up to float32 rounding.
Nothing needs recomputing: the quantizer, norms, MLPs, SnakeBeta and the clamp work frame by
frame or sample by sample. The other way, re-decoding `left` frames of context per window (the
official `chunked_decode`: 25), is exact only with left >= receptive_frames, and then costs the
transformer over those frames (≈33 MMAC each) plus the convolutions over `conv_context_frames`
(10) of them, every window.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any, Callable, Protocol, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import VoiceError, context
from ..formats.safetensors import load_module_tensors
from .windowed import WindowedDecoder

_LOGGER = logging.getLogger(__name__)

CODEC_FILES = ("config.json", "model.safetensors")
"""What a speech-tokenizer folder (`speech_tokenizer/` of every Qwen3-TTS repo) must hold."""
DECODER_PREFIX = "decoder."
"""Checkpoint key prefix of the decoder (the encoder's keys, `encoder.*`, are not read)."""
ENCODE_ONLY_KEYS = ("quantizer.rvq_first.input_proj.weight", "quantizer.rvq_rest.input_proj.weight")
"""Decoder keys that only encoding uses (latent → codebook space): skipped when present."""
CODEBOOK_EPSILON = 1e-5
"""codebook = embedding_sum / clamp(cluster_usage, CODEBOOK_EPSILON) (EuclideanCodebook)."""
SEMANTIC_QUANTIZERS = 1
"""Codebooks of `rvq_first` (the semantic one); the other num_quantizers - 1 are `rvq_rest`."""
MATMUL_CONV_WEIGHTS = 8_000_000
"""A convolution with at least this many weights runs as one matrix product over its input
windows (`conv1d_as_matmul`, `conv_transpose1d_as_matmul`): at full size the pre-decoder conv
(1024 → 1536, kernel 7, 11 M) and the first upsampling (1536 → 768, kernel 16, 19 M), which
see a few dozen steps per streamed window and read their weights each time. torch's mkldnn
convolution took 16 ms for the first on 38 steps against 5 ms as a product, and the second
34–44 ms on 9–33 steps; the rest, with fewer weights over more steps, are faster as they are
(docs/benchmarks.md, "Qwen3-TTS: the decoder's large convolutions")."""
CONVNEXT_KERNEL = 7
CONVNEXT_EXPANSION = 4
CONVNEXT_NORM_EPS = 1e-6
DECODER_KERNEL = 7
"""Kernel of the convolutions into and out of the DAC-style blocks and of their residual units."""
PRE_CONV_KERNEL = 3
RESIDUAL_DILATIONS = (1, 3, 9)
SNAKE_EPSILON = 1e-9
"""SnakeBeta: x + sin²(x·e^α) / (e^β + SNAKE_EPSILON)."""
DECODE_CHUNK_FRAMES = 150
"""Most new frames per pass in `decode` (12 s of audio). Bounds memory: at full size a pass takes
≈4.5 MB per frame above the weights (measured: 150 frames 0.67 GB, 300 frames 1.5 GB); each pass
re-runs its receptive_frames of context through the transformer and 10 through the convolutions,
≈13 % more work than one pass over everything."""


@dataclass(frozen=True)
class Qwen3CodecConfig:
    """`decoder_config` of `speech_tokenizer/config.json`; defaults are qwen-tts's
    `Qwen3TTSTokenizerV2DecoderConfig` defaults (the released config.json sets every one)."""

    codebook_size: int = 2048
    codebook_dim: int = 512
    """Width of the quantizer output (each codebook itself is codebook_dim // 2 wide)."""
    latent_dim: int = 1024
    hidden_size: int = 1024
    intermediate_size: int = 3072
    num_hidden_layers: int = 8
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    head_dim: int | None = None
    """None: hidden_size // num_attention_heads (the released decoder sets 64 with hidden 512)."""
    sliding_window: int = 72
    """Each position attends to itself and the sliding_window - 1 positions before it."""
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    attention_bias: bool = False
    num_quantizers: int = 16
    upsample_rates: tuple[int, ...] = (8, 5, 4, 3)
    upsampling_ratios: tuple[int, ...] = (2, 2)
    decoder_dim: int = 1536

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "Qwen3CodecConfig":
        """The fields we use from a `decoder_config` dict; rejects what we don't implement."""
        if values.get("hidden_act", "silu") != "silu":
            raise VoiceError(f"decoder hidden_act {values['hidden_act']!r} is not silu")
        rope = values.get("rope_scaling") or {}
        if rope.get("rope_type", rope.get("type", "default")) != "default":
            raise VoiceError(f"decoder rope_scaling {rope!r} is not supported")
        known = {field.name for field in fields(cls)}
        picked = {key: value for key, value in values.items() if key in known}
        for key in ("upsample_rates", "upsampling_ratios"):
            if key in picked:
                picked[key] = tuple(picked[key])
        return cls(**picked)

    @property
    def attention_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads


QWEN3_12HZ_DECODER = Qwen3CodecConfig(
    hidden_size=512, intermediate_size=1024, head_dim=64, latent_dim=1024, codebook_dim=512
)
"""The released checkpoints' decoder_config (`speech_tokenizer/config.json` of
Qwen/Qwen3-TTS-Tokenizer-12Hz and of every Qwen3-TTS-12Hz repo)."""


def receptive_field(config: Qwen3CodecConfig) -> tuple[int, int]:
    """(receptive_frames, conv_context_frames): frames before frame t that t's audio depends on,
    through the whole decoder and through the convolutions after the transformer only.

    Walks back from the first sample of a frame t far from the start (its inputs reach furthest)
    through every layer: a causal conv of kernel k (dilation d) needs (k-1)·d earlier samples, a
    causal transposed conv of stride r maps sample n to input floor(n/r), or floor(n/r) - 1 when its
    kernel is 2r, and each attention layer reaches sliding_window - 1 frames back.
    """
    frame = 10**6  # any frame far enough from the start that no padding is involved
    index = frame * math.prod(config.upsample_rates + config.upsampling_ratios)
    index -= DECODER_KERNEL - 1  # final conv
    for rate in reversed(config.upsample_rates):
        index -= (DECODER_KERNEL - 1) * sum(RESIDUAL_DILATIONS)  # 3 residual units
        index = index // rate - 1  # causal transposed conv, kernel 2·rate
    index -= DECODER_KERNEL - 1  # conv latent_dim → decoder_dim
    for ratio in reversed(config.upsampling_ratios):
        index -= CONVNEXT_KERNEL - 1  # ConvNeXt depthwise conv
        index //= ratio  # transposed conv, kernel = stride = ratio
    conv_context = frame - index
    index -= config.num_hidden_layers * (config.sliding_window - 1)
    index -= PRE_CONV_KERNEL - 1
    return frame - index, conv_context


# ---- building blocks -------------------------------------------------------------------------


class StreamState:
    """What the layers of one stream keep between its windows, so that a window computes only
    its new frames: each causal convolution's last inputs (the ones its next outputs still read)
    and each attention layer's keys and values of the positions its sliding window still sees."""

    def __init__(self, window: int) -> None:
        self.window = window
        """The attention's sliding_window: a layer keeps window - 1 positions."""
        self._held: dict[nn.Module, torch.Tensor] = {}

    def join(
        self, layer: nn.Module, x: torch.Tensor, keep: int, dim: int = -1, padded: bool = True
    ) -> torch.Tensor:
        """`x` after what `layer` kept of its earlier inputs (the first time: `keep` zeros, the
        causal padding, or nothing unless `padded`); keeps the last `keep` steps along `dim`."""
        if keep == 0:
            return x
        held = self._held.get(layer)
        if held is None:
            shape = list(x.shape)
            shape[dim] = keep if padded else 0
            held = x.new_zeros(shape)
        joined = torch.cat((held, x), dim)  # (…, held + T, …)
        length = joined.shape[dim]
        # a copy: a view would keep all of `joined` alive
        self._held[layer] = joined.narrow(dim, max(0, length - keep), min(keep, length)).clone()
        return joined

    def held(self, layer: nn.Module, dim: int) -> int:
        """How many steps along `dim` `layer` keeps now."""
        held = self._held.get(layer)
        return 0 if held is None else held.shape[dim]


def conv1d_as_matmul(conv: nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """`conv(x)` (stride 1, no padding, groups 1) as one matrix product: the input windows
    (B, T, C_in·k) times the weight seen as (C_out, C_in·k), no copy of it."""
    out_dim, in_dim, kernel = conv.weight.shape
    dilation = conv.dilation[0]
    windows = x.unfold(2, (kernel - 1) * dilation + 1, 1)[..., ::dilation]  # (B, C_in, T, k)
    rows = windows.permute(0, 2, 1, 3).reshape(x.shape[0], -1, in_dim * kernel)  # (B, T, C_in·k)
    return F.linear(rows, conv.weight.view(out_dim, -1), conv.bias).transpose(1, 2)  # (B, C_out, T)


def conv_transpose1d_as_matmul(conv: nn.ConvTranspose1d, x: torch.Tensor) -> torch.Tensor:
    """`conv(x)` (no padding, groups 1, kernel a multiple m of the stride s) as one matrix
    product and an overlap-add: each input step times the weight seen as (C_in, C_out·k) gives
    its k outputs, m blocks of s, which land on the output blocks t … t + m - 1."""
    in_dim, out_dim, kernel = conv.weight.shape
    stride = conv.stride[0]
    taps = kernel // stride
    batch, _, steps = x.shape
    columns = x.transpose(1, 2) @ conv.weight.view(in_dim, -1)  # (B, T, C_out·k)
    blocks = columns.view(batch, steps, out_dim, taps, stride).permute(3, 0, 2, 1, 4)
    out = x.new_zeros(batch, out_dim, steps + taps - 1, stride)  # (B, C_out, T + m - 1, s)
    for tap in range(taps):
        out[:, :, tap : tap + steps] += blocks[tap]  # (B, C_out, T, s)
    bias = 0.0 if conv.bias is None else conv.bias[:, None]
    return out.view(batch, out_dim, -1) + bias  # (B, C_out, (T - 1)·s + k)


class CausalConv1d(nn.Module):
    """Conv1d (stride 1) padded on the left only: output t sees inputs t-(k-1)·d … t. Streaming,
    the padding is the (k-1)·d inputs before the window."""

    def __init__(
        self, in_dim: int, out_dim: int, kernel: int, dilation: int = 1, groups: int = 1
    ) -> None:
        super().__init__()
        self.conv = nn.Conv1d(in_dim, out_dim, kernel, dilation=dilation, groups=groups)
        self._left = (kernel - 1) * dilation
        self._as_matmul = groups == 1 and self.conv.weight.numel() >= MATMUL_CONV_WEIGHTS

    def forward(self, x: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        if state is None:
            x = F.pad(x, (self._left, 0))  # (B, C_in, left + T)
        else:
            x = state.join(self, x, self._left)  # (B, C_in, left + T)
        if self._as_matmul:
            return conv1d_as_matmul(self.conv, x)  # (B, C_out, T)
        return self.conv(x)  # (B, C_out, T)


class CausalConvTranspose1d(nn.Module):
    """ConvTranspose1d whose last kernel - stride outputs are cut: T inputs → T·stride outputs.

    Input t reaches outputs t·stride … t·stride + kernel - 1, so an output also sums the
    (kernel - 1) // stride inputs before its own: streaming, those are joined before the window
    and their own outputs (emitted by the window before) are cut."""

    def __init__(self, in_dim: int, out_dim: int, kernel: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.ConvTranspose1d(in_dim, out_dim, kernel, stride=stride)
        self._stride = stride
        self._held = (kernel - 1) // stride
        weights = self.conv.weight.numel()
        self._as_matmul = kernel % stride == 0 and weights >= MATMUL_CONV_WEIGHTS

    def forward(self, x: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        count = x.shape[-1] * self._stride
        held = 0
        if state is not None:
            x = state.join(self, x, self._held)  # (B, C_in, held + T)
            held = self._held * self._stride
        if self._as_matmul:
            x = conv_transpose1d_as_matmul(self.conv, x)
        else:
            x = self.conv(x)  # (B, C_out, (held + T - 1)·stride + kernel)
        return x[..., held : held + count]  # (B, C_out, T·stride)


class SnakeBeta(nn.Module):
    """x + sin²(x·e^α) / e^β, per channel (α, β stored as logs)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        alpha = self.alpha.exp()[None, :, None]  # (1, C, 1)
        beta = self.beta.exp()[None, :, None]  # (1, C, 1)
        return x + (1.0 / (beta + SNAKE_EPSILON)) * torch.sin(x * alpha).pow(2)


class ConvNeXtBlock(nn.Module):
    """x + γ·MLP(LayerNorm(causal depthwise conv(x)))."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = CausalConv1d(dim, dim, CONVNEXT_KERNEL, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=CONVNEXT_NORM_EPS)
        self.pwconv1 = nn.Linear(dim, CONVNEXT_EXPANSION * dim)
        self.pwconv2 = nn.Linear(CONVNEXT_EXPANSION * dim, dim)
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        h = self.dwconv(x, state).transpose(1, 2)  # (B, T, C)
        h = self.pwconv2(F.gelu(self.pwconv1(self.norm(h))))  # (B, T, C)
        return x + (self.gamma * h).transpose(1, 2)  # (B, C, T)


class ResidualUnit(nn.Module):
    def __init__(self, dim: int, dilation: int) -> None:
        super().__init__()
        self.act1 = SnakeBeta(dim)
        self.conv1 = CausalConv1d(dim, dim, DECODER_KERNEL, dilation=dilation)
        self.act2 = SnakeBeta(dim)
        self.conv2 = CausalConv1d(dim, dim, 1)

    def forward(self, x: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        return x + self.conv2(self.act2(self.conv1(self.act1(x), state)))  # conv2: kernel 1


class DecoderBlock(nn.Module):
    """SnakeBeta, causal transposed conv (kernel 2r, stride r), 3 dilated residual units."""

    def __init__(self, in_dim: int, out_dim: int, rate: int) -> None:
        super().__init__()
        self.block = nn.ModuleList(
            [SnakeBeta(in_dim), CausalConvTranspose1d(in_dim, out_dim, 2 * rate, rate)]
            + [ResidualUnit(out_dim, dilation) for dilation in RESIDUAL_DILATIONS]
        )

    def forward(self, x: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        snake, upsample, *units = self.block
        x = upsample(snake(x), state)  # (B, C_in, T) → (B, C_in // 2, T·rate)
        for unit in units:
            x = unit(x, state)
        return x  # (B, C_in // 2, T·rate)


# ---- split residual vector quantizer (decode side only) ---------------------------------------


class EuclideanCodebook(nn.Module):
    def __init__(self, size: int, dim: int) -> None:
        super().__init__()
        self.cluster_usage = nn.Parameter(torch.ones(size))
        self.embedding_sum = nn.Parameter(torch.zeros(size, dim))

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        usage = self.cluster_usage.clamp(min=CODEBOOK_EPSILON)[:, None]  # (size, 1)
        return F.embedding(codes, self.embedding_sum / usage)  # (B, T) → (B, T, dim)


class VectorQuantization(nn.Module):
    def __init__(self, size: int, dim: int) -> None:
        super().__init__()
        self._codebook = EuclideanCodebook(size, dim)

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        return self._codebook(codes)  # (B, T) → (B, T, dim)


class ResidualVectorQuantization(nn.Module):
    def __init__(self, count: int, size: int, dim: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([VectorQuantization(size, dim) for _ in range(count)])


class ResidualVectorQuantizer(nn.Module):
    """Sum of one embedding per codebook, then a 1×1 projection (no bias) to the output width."""

    def __init__(self, count: int, size: int, dim: int, out_dim: int) -> None:
        super().__init__()
        self.vq = ResidualVectorQuantization(count, size, dim)
        self.output_proj = nn.Conv1d(dim, out_dim, 1, bias=False)

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        summed = torch.zeros((), device=codes.device)
        for i, layer in enumerate(self.vq.layers):
            summed = summed + layer(codes[:, i])  # (B, T, dim)
        return self.output_proj(summed.transpose(1, 2))  # (B, out_dim, T)


class SplitResidualVectorQuantizer(nn.Module):
    def __init__(self, config: Qwen3CodecConfig) -> None:
        super().__init__()
        dim = config.codebook_dim // 2
        size = config.codebook_size
        rest = config.num_quantizers - SEMANTIC_QUANTIZERS
        self.rvq_first = ResidualVectorQuantizer(
            SEMANTIC_QUANTIZERS, size, dim, config.codebook_dim
        )
        self.rvq_rest = ResidualVectorQuantizer(rest, size, dim, config.codebook_dim)

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        first = self.rvq_first(codes[:, :SEMANTIC_QUANTIZERS])  # (B, codebook_dim, T)
        return first + self.rvq_rest(codes[:, SEMANTIC_QUANTIZERS:])  # (B, codebook_dim, T)


# ---- sliding-window transformer ---------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self._eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self._eps)
        return self.weight * h.to(x.dtype)


class LayerScale(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_inv_freq(head_dim: int, theta: float) -> torch.Tensor:
    """RoPE inverse frequencies θ^(-2i/head_dim), i < head_dim / 2 (transformers' default)."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    return 1.0 / theta**exponents  # (hd/2,)


def rope_and_mask(
    length: int, inv_freq: torch.Tensor, window: int | None, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """cos, sin (T, hd) of positions 0…T-1 and the causal mask (T_q, T_k), True = attend; with a
    `window` each position sees itself and the window - 1 positions before it."""
    positions = torch.arange(length, device=inv_freq.device, dtype=torch.float32)
    freqs = positions[:, None] * inv_freq[None, :]  # (T, hd/2)
    angles = torch.cat((freqs, freqs), dim=-1)  # (T, hd)
    offset = positions[:, None] - positions[None, :]  # (T_q, T_k): query - key
    mask = offset >= 0
    if window is not None:
        mask &= offset < window
    return angles.cos().to(dtype), angles.sin().to(dtype), mask


class AttentionShape(Protocol):
    """The config fields attention needs (the decoder's and the encoder's configs both fit)."""

    @property
    def hidden_size(self) -> int: ...
    @property
    def num_attention_heads(self) -> int: ...
    @property
    def num_key_value_heads(self) -> int: ...
    @property
    def attention_bias(self) -> bool: ...
    @property
    def attention_head_dim(self) -> int: ...


class Attention(nn.Module):
    """Multi-head attention with RoPE (NEOX halves) and a given mask (causal, maybe windowed).

    Streaming, it keeps the un-rotated keys and values of the window - 1 positions before (its
    KV cache), and positions count from the first of them: RoPE scores depend only on the
    distance between positions, and small positions keep the float32 angles accurate."""

    def __init__(self, config: AttentionShape) -> None:
        super().__init__()
        head_dim = config.attention_head_dim
        bias = config.attention_bias
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * head_dim, bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * head_dim, bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * head_dim, bias)
        self.o_proj = nn.Linear(config.num_attention_heads * head_dim, config.hidden_size, bias)
        self._head_dim = head_dim
        self._gqa = config.num_attention_heads != config.num_key_value_heads

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor,
        state: StreamState | None = None,
    ) -> torch.Tensor:
        """x (B, T, hidden) at the last T of the positions that cos, sin (P + T, hd) and mask
        (T, P + T) cover; the P before are the ones `state` keeps (none without one)."""
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, -1, self._head_dim).transpose(1, 2)  # (B, nh, T, hd)
        k = self.k_proj(x).view(B, T, -1, self._head_dim).transpose(1, 2)  # (B, nkv, T, hd)
        v = self.v_proj(x).view(B, T, -1, self._head_dim).transpose(1, 2)  # (B, nkv, T, hd)
        if state is not None:
            kv = torch.stack((k, v))  # (2, B, nkv, T, hd)
            kv = state.join(self, kv, state.window - 1, dim=-2, padded=False)
            k, v = kv.unbind(0)  # (B, nkv, P + T, hd) each
        q = q * cos[-T:] + rotate_half(q) * sin[-T:]
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=self._head_dim**-0.5, enable_gqa=self._gqa
        )  # (B, nh, T, hd)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))  # (B, T, hidden)


class Mlp(nn.Module):
    def __init__(self, config: Qwen3CodecConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class TransformerLayer(nn.Module):
    """Pre-norm block; both residual branches scaled by LayerScale. The decoder's has RMSNorms and
    a SwiGLU MLP, the encoder's (qwen3_12hz_encoder) LayerNorms and a GELU MLP."""

    def __init__(
        self, config: AttentionShape, mlp: nn.Module, norm: Callable[[], nn.Module]
    ) -> None:
        super().__init__()
        self.self_attn = Attention(config)
        self.mlp = mlp
        self.input_layernorm = norm()
        self.post_attention_layernorm = norm()
        self.self_attn_layer_scale = LayerScale(config.hidden_size)
        self.mlp_layer_scale = LayerScale(config.hidden_size)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor,
        state: StreamState | None = None,
    ) -> torch.Tensor:
        h = self.self_attn(self.input_layernorm(x), cos, sin, mask, state)  # (B, T, hidden)
        x = x + self.self_attn_layer_scale(h)
        return x + self.mlp_layer_scale(self.mlp(self.post_attention_layernorm(x)))


class Transformer(nn.Module):
    """latent_dim → hidden_size, the layers, final RMSNorm, hidden_size → latent_dim. Every layer
    attends causally within the sliding window (qwen-tts's decoder config: `layer_types` all
    `sliding_attention`)."""

    inv_freq: torch.Tensor

    def __init__(self, config: Qwen3CodecConfig) -> None:
        super().__init__()
        norm = partial(RMSNorm, config.hidden_size, config.rms_norm_eps)
        self.layers = nn.ModuleList(
            [TransformerLayer(config, Mlp(config), norm) for _ in range(config.num_hidden_layers)]
        )
        self.norm = norm()
        self.input_proj = nn.Linear(config.latent_dim, config.hidden_size)
        self.output_proj = nn.Linear(config.hidden_size, config.latent_dim)
        inv_freq = rope_inv_freq(config.attention_head_dim, config.rope_theta)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._window = config.sliding_window

    def forward(self, x: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        _, T, _ = x.shape  # x : (B, T, latent_dim)
        first = cast(TransformerLayer, self.layers[0]).self_attn
        past = 0 if state is None else state.held(first, -2)  # positions in the KV cache
        cos, sin, mask = rope_and_mask(past + T, self.inv_freq, self._window, x.dtype)
        h = self.input_proj(x)  # (B, T, hidden)
        for layer in self.layers:
            h = layer(h, cos, sin, mask[past:], state)  # mask rows of the new positions
        return self.output_proj(self.norm(h))  # (B, T, latent_dim)


# ---- the decoder ------------------------------------------------------------------------------


class Qwen3Codec12Hz(nn.Module):
    """The decoder: codes (T, num_quantizers) → 24 kHz audio (T·1920,) in [-1, 1]."""

    def __init__(self, config: Qwen3CodecConfig, sample_rate: int = 24_000) -> None:
        super().__init__()
        self.config = config
        self.quantizer = SplitResidualVectorQuantizer(config)
        self.pre_conv = CausalConv1d(config.codebook_dim, config.latent_dim, PRE_CONV_KERNEL)
        self.pre_transformer = Transformer(config)
        self.upsample = nn.ModuleList(
            nn.ModuleList(
                [
                    CausalConvTranspose1d(config.latent_dim, config.latent_dim, ratio, ratio),
                    ConvNeXtBlock(config.latent_dim),
                ]
            )
            for ratio in config.upsampling_ratios
        )
        dims = [config.decoder_dim // 2**i for i in range(len(config.upsample_rates) + 1)]
        self.decoder = nn.ModuleList(
            [CausalConv1d(config.latent_dim, dims[0], DECODER_KERNEL)]
            + [
                DecoderBlock(dims[i], dims[i + 1], rate)
                for i, rate in enumerate(config.upsample_rates)
            ]
            + [SnakeBeta(dims[-1]), CausalConv1d(dims[-1], 1, DECODER_KERNEL)]
        )

        self.sample_rate = sample_rate
        """Output rate in Hz."""
        self.samples_per_frame = math.prod(config.upsample_rates + config.upsampling_ratios)
        """Audio samples per code frame (1920 = 80 ms at 24 kHz)."""
        self.receptive_frames, self.conv_context_frames = receptive_field(config)
        """Frames of left context that make a window's audio equal the whole-utterance decode,
        and the part of them the convolutions after the transformer need (580 and 10)."""

    def latent(self, codes: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        """Quantizer, pre-conv and transformer: codes (B, Q, T) → (B, latent_dim, T)."""
        h = self.pre_conv(self.quantizer(codes), state)  # (B, latent_dim, T)
        h = self.pre_transformer(h.transpose(1, 2), state)  # (B, T, latent_dim)
        return h.transpose(1, 2)  # (B, latent_dim, T)

    def synthesize(self, latent: torch.Tensor, state: StreamState | None = None) -> torch.Tensor:
        """Convolution stack: (B, latent_dim, T) → audio (B, 1, T·samples_per_frame)."""
        h = latent
        for stage in self.upsample:
            transposed, convnext = cast(nn.ModuleList, stage)
            h = convnext(transposed(h, state), state)  # (B, latent_dim, T·ratio…)
        first, *blocks, snake, last = self.decoder
        h = first(h, state)  # (B, decoder_dim, T·∏ratios)
        for block in blocks:
            h = block(h, state)  # (B, C // 2, T·∏ratios·rate…)
        h = last(snake(h), state)  # (B, 1, T·samples_per_frame)
        return h.clamp(-1.0, 1.0)

    def forward(self, codes: torch.Tensor, context: int = 0) -> torch.Tensor:
        """Audio of frames [context, T) of codes (B, Q, T), the frames before being left context:
        (B, 1, (T - context)·samples_per_frame). The convolutions run on conv_context_frames of it.
        """
        latent = self.latent(codes)  # (B, latent_dim, T)
        start = max(0, context - self.conv_context_frames)
        audio = self.synthesize(latent[..., start:])  # (B, 1, (T - start)·spf)
        return audio[..., (context - start) * self.samples_per_frame :]

    def decode(self, codes: np.ndarray, context: int = 0) -> np.ndarray:
        """24 kHz float32 audio ((T - context)·1920,) of codes (T, num_quantizers) int, whose first
        `context` frames are left context only. Runs in pieces of DECODE_CHUNK_FRAMES new frames
        with receptive_frames of context each, so any length decodes exactly as one pass would."""
        n_frames = len(codes)
        if not 0 <= context <= n_frames:
            raise ValueError(f"context {context} is not within the {n_frames} frames")
        all_codes = self._codes_tensor(codes)  # (1, Q, T)
        pieces = []
        with torch.inference_mode():
            for new in range(context, n_frames, DECODE_CHUNK_FRAMES):
                first = max(0, new - self.receptive_frames)
                end = min(n_frames, new + DECODE_CHUNK_FRAMES)
                audio = self(all_codes[..., first:end], context=new - first)  # (1, 1, samples)
                pieces.append(audio[0, 0].float().cpu().numpy())
        if not pieces:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(pieces)  # ((T - context)·spf,) float32

    def prime(self, codes: np.ndarray | None = None) -> StreamState:
        """The stream state after the frames `codes` (T, num_quantizers), without their audio
        (None: a stream's state at its start).

        Only the last receptive_frames frames matter: the transformer runs over them and the
        convolutions over the last conv_context_frames of its output (their states, started from
        zeros there, differ from a whole decode's only where later audio does not look)."""
        state = StreamState(self.config.sliding_window)
        if codes is None or len(codes) == 0:
            return state
        frames = self._codes_tensor(codes[-self.receptive_frames :])  # (1, Q, T)
        with torch.inference_mode():
            latent = self.latent(frames, state)  # (1, latent_dim, T)
            start = max(0, latent.shape[-1] - self.conv_context_frames)
            self.synthesize(latent[..., start:], state)  # the audio is context only
        return state

    def decode_next(self, codes: np.ndarray, state: StreamState) -> np.ndarray:
        """24 kHz float32 audio (T·1920,) of the frames `codes` (T, num_quantizers) that follow
        those `state` has seen (`prime`, then earlier calls); updates `state`."""
        frames = self._codes_tensor(codes)  # (1, Q, T)
        with torch.inference_mode():
            audio = self.synthesize(self.latent(frames, state), state)  # (1, 1, T·spf)
        return audio[0, 0].float().cpu().numpy()

    def _codes_tensor(self, codes: np.ndarray) -> torch.Tensor:
        """Checked codes (T, num_quantizers) int as a (1, Q, T) int64 tensor on our device."""
        n_frames, n_codebooks = codes.shape  # (T, Q)
        if n_codebooks != self.config.num_quantizers:
            raise ValueError(
                f"need {self.config.num_quantizers} codes per frame, got {n_codebooks}"
            )
        if n_frames and (codes.min() < 0 or codes.max() >= self.config.codebook_size):
            raise ValueError(f"codes must lie in [0, {self.config.codebook_size})")
        device = self.quantizer.rvq_first.output_proj.weight.device
        return torch.as_tensor(codes.T, dtype=torch.int64, device=device)[None]  # (1, Q, T)

    def stream(
        self,
        codes_of: Callable[[int, int], np.ndarray],
        left: int | None = None,
        first_chunk: int = 1,
        max_chunk: int = 8,
        start: int = 0,
    ) -> WindowedDecoder:
        """A `WindowedDecoder` over the frames `codes_of(first, end)` ((end - first, Q) int) of a
        growing utterance; no lookahead is needed. The first `start` frames are context only (a
        voice clone's reference): their audio is never decoded or emitted.

        `left` None (default): each window continues from the `StreamState` the one before left,
        computing only its new frames, and the stream equals `decode` of the whole utterance.
        A number: each window re-decodes that many frames of left context from scratch instead
        (25 is the official `chunked_decode`; fewer than receptive_frames is approximate)."""
        if left is None:
            return WindowedDecoder(
                _StatefulWindow(self, codes_of, start),
                self.samples_per_frame,
                0,
                0,
                first_chunk,
                max_chunk,
                start=start,
            )
        window = _StreamWindow(self, codes_of, start)
        return WindowedDecoder(
            window, self.samples_per_frame, left, 0, first_chunk, max_chunk, start=start
        )


class _StatefulWindow:
    """decode(first, end) for `WindowedDecoder(left=0, right=0)`: every window starts where the
    one before ended and continues from its state; the first primes the state with the context
    frames before `start`."""

    def __init__(
        self, codec: Qwen3Codec12Hz, codes_of: Callable[[int, int], np.ndarray], start: int
    ) -> None:
        self._codec = codec
        self._codes_of = codes_of
        self._start = start
        self._state: StreamState | None = None
        self._decoded_until = start

    def __call__(self, first: int, end: int) -> np.ndarray:
        if first != self._decoded_until:
            raise ValueError(f"window [{first}, {end}) does not start at {self._decoded_until}")
        if self._state is None:  # on the first window, so that its time counts as decoding
            context = max(0, self._start - self._codec.receptive_frames)
            reference = self._codes_of(context, self._start) if self._start else None
            self._state = self._codec.prime(reference)
        audio = self._codec.decode_next(self._codes_of(first, end), self._state)  # (T·spf,)
        self._decoded_until = end
        return audio


class _StreamWindow:
    """decode(first, end) for `WindowedDecoder(right=0)` that skips the context frames' audio.

    With no lookahead every window ends where the frames it emits end, so the frames it emits
    start where the previous window ended; only those go through the convolution stack and the
    context frames' audio, which `WindowedDecoder` drops anyway, is left as zeros."""

    def __init__(
        self, codec: Qwen3Codec12Hz, codes_of: Callable[[int, int], np.ndarray], start: int = 0
    ) -> None:
        self._codec = codec
        self._codes_of = codes_of
        self._decoded_until = start

    def __call__(self, first: int, end: int) -> np.ndarray:
        context = min(max(0, self._decoded_until - first), end - first)
        audio = self._codec.decode(
            self._codes_of(first, end), context
        )  # ((end-first-context)·spf,)
        self._decoded_until = end
        skipped = np.zeros(context * self._codec.samples_per_frame, dtype=np.float32)
        return np.concatenate([skipped, audio])  # ((end - first)·spf,)


# ---- loading ----------------------------------------------------------------------------------


def load_qwen3_codec(folder: Path, device: torch.device) -> Qwen3Codec12Hz:
    """The decoder of a speech-tokenizer folder (config.json + model.safetensors) on `device`.

    Reads only the tensors under `decoder.`; every one of the decoder's tensors must be there and
    nothing else may be (except ENCODE_ONLY_KEYS), so a file of another layout fails here, naming
    the file and the keys, instead of decoding noise.
    """
    config_path = folder / "config.json"
    weights_path = folder / "model.safetensors"
    for path in (config_path, weights_path):
        if not path.is_file():
            raise VoiceError(f"Qwen3-TTS speech tokenizer file {path} is missing")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        with context(str(config_path)):  # what the config holds that we do not implement
            decoder_config = Qwen3CodecConfig.from_dict(config["decoder_config"])
    except (ValueError, KeyError, TypeError) as err:
        raise VoiceError(f"{config_path}: not a Qwen3-TTS 12 Hz tokenizer config ({err})") from err

    codec = Qwen3Codec12Hz(decoder_config, int(config.get("output_sample_rate", 24_000)))
    declared = config.get("decode_upsample_rate", codec.samples_per_frame)
    if declared != codec.samples_per_frame:
        raise VoiceError(
            f"{config_path}: decode_upsample_rate {declared} is not the decoder's "
            f"{codec.samples_per_frame} samples per frame"
        )
    count = load_module_tensors(
        codec,
        [weights_path],
        DECODER_PREFIX,
        "Qwen3-TTS 12 Hz decoder",
        unused=lambda key: key in ENCODE_ONLY_KEYS,
    )
    _LOGGER.debug("loaded %d decoder tensors from %s", count, weights_path)
    return codec.to(device).eval()
