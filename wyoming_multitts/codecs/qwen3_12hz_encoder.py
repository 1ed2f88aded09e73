"""Qwen3-TTS 12 Hz speech-tokenizer encoder: 24 kHz audio → 16 codes per 80 ms frame.

Base models clone a voice "in context" (ICL) from reference audio turned into codes with this
encoder. Our own compact torch copy of transformers 4.57.3 `MimiModel.encode` as qwen-tts 0.1.1
calls it (`Qwen3TTSTokenizerV2Model.encode`), without transformers: SEANet convolutions (960×
down, 25 Hz) → causal transformer → strided conv (2× down, 12.5 Hz) → split RVQ: the semantic
quantizer and the acoustic residual quantizers each encode the same latent, every step picking
the nearest codeword. Only the first
`encoder_valid_num_quantizers` (16) of the 32 codes are kept, so only those codebooks are loaded
and searched (residual quantization is sequential: the first 15 acoustic codes do not depend on
the later ones). Module attributes are the checkpoint's names under `encoder.` in
`speech_tokenizer/model.safetensors`; there is no weight norm to fold.

Two behaviours of the official stack that we keep on purpose:
- Every convolution pads causally on the left and, on the right, just enough for the input to
  fill whole strides, with zeros (the downsampling conv: copies of the edge values), so S samples
  give ceil(S / 1920) frames: the last, partial frame is encoded too.
- transformers 4.57.3 builds a plain causal mask for Mimi's transformer: the config's
  `sliding_window` (250 frames = 10 s) is not applied, so every frame attends to all frames
  before it. The two differ only for reference audio longer than 10 s.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import EngineError
from ..formats.safetensors import load_module_tensors
from .qwen3_12hz import CODEBOOK_EPSILON, TransformerLayer, rope_and_mask, rope_inv_freq

_LOGGER = logging.getLogger(__name__)

ENCODER_SAMPLE_RATE = 24_000
"""Input rate in Hz (`input_sample_rate`); resample reference audio to it first."""
ENCODER_PREFIX = "encoder."
"""Checkpoint key prefix of the encoder (the decoder's keys, `decoder.*`, are not read)."""
DOWNSAMPLE_STRIDE = 2
"""transformers' Mimi hard-codes stride 2 for the 25 Hz → 12.5 Hz conv (kernel 2·ratio)."""
DOWNSAMPLE_PAD_MODE = "replicate"
"""The downsampling conv pads with copies of the edge; every other conv with zeros."""


@dataclass(frozen=True)
class MimiEncoderConfig:
    """The encoder fields of `encoder_config` (a transformers MimiConfig) in
    `speech_tokenizer/config.json`; defaults are MimiConfig's (the released file sets each)."""

    sampling_rate: int = ENCODER_SAMPLE_RATE
    frame_rate: float = 12.5
    """Codes per second (`_frame_rate` in config.json)."""
    hidden_size: int = 512
    num_filters: int = 64
    num_residual_layers: int = 1
    upsampling_ratios: tuple[int, ...] = (8, 6, 5, 4)
    """The encoder's strides, last first (the encoder runs them reversed: 4, 5, 6, 8)."""
    kernel_size: int = 7
    last_kernel_size: int = 3
    residual_kernel_size: int = 3
    dilation_growth_rate: int = 2
    compress: int = 2
    codebook_size: int = 2048
    codebook_dim: int = 256
    num_quantizers: int = 32
    num_semantic_quantizers: int = 1
    vector_quantization_hidden_dimension: int = 256
    num_hidden_layers: int = 8
    intermediate_size: int = 2048
    num_attention_heads: int = 8
    num_key_value_heads: int = 8
    head_dim: int | None = None
    """None: hidden_size // num_attention_heads."""
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    attention_bias: bool = False

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "MimiEncoderConfig":
        """The fields we use from an `encoder_config` dict; ValueError for what we don't
        implement (the released config needs none of it)."""
        only_supported = {
            "hidden_act": "gelu",
            "use_causal_conv": True,
            "use_conv_shortcut": False,
            "pad_mode": "constant",  # zeros (the downsampling conv always replicates)
            "audio_channels": 1,
        }
        for key, supported in only_supported.items():
            if values.get(key, supported) != supported:
                raise ValueError(f"encoder {key} {values[key]!r} is not supported")
        rope = values.get("rope_scaling") or {}
        if rope.get("rope_type", rope.get("type", "default")) != "default":
            raise ValueError(f"encoder rope_scaling {rope!r} is not supported")
        known = {field.name for field in fields(cls)}
        picked = {key: value for key, value in values.items() if key in known}
        if values.get("_frame_rate") is not None:
            picked["frame_rate"] = values["_frame_rate"]
        picked["upsampling_ratios"] = tuple(picked.get("upsampling_ratios", cls.upsampling_ratios))
        return cls(**picked)

    @property
    def attention_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def conv_hop(self) -> int:
        """Samples per frame of the convolutions (960: 25 Hz)."""
        return math.prod(self.upsampling_ratios)

    @property
    def downsample_kernel(self) -> int:
        """2 · int(25 Hz / 12.5 Hz) as transformers computes it (4)."""
        conv_rate = math.ceil(self.sampling_rate / self.conv_hop)  # MimiConfig.encodec_frame_rate
        return 2 * int(conv_rate / self.frame_rate)


# ---- SEANet convolutions ----------------------------------------------------------------------


class PaddedConv1d(nn.Module):
    """Mimi's causal Conv1d: (k-1)·d + 1 - stride samples of left padding, and on the right
    enough for the input to fill whole strides, so T inputs give ceil(T / stride) outputs."""

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        kernel: int,
        stride: int = 1,
        dilation: int = 1,
        bias: bool = True,
        pad_mode: str = "constant",
    ) -> None:
        super().__init__()
        self.conv = nn.Conv1d(in_dim, out_dim, kernel, stride, dilation=dilation, bias=bias)
        self._left = (kernel - 1) * dilation + 1 - stride
        self._stride = stride
        self._pad_mode = pad_mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        right = -x.shape[-1] % self._stride
        x = F.pad(x, (self._left, right), mode=self._pad_mode)  # (B, C_in, T + left + right)
        return self.conv(x)  # (B, C_out, ceil(T / stride))


class ResnetBlock(nn.Module):
    """x + conv1×1(ELU(conv_k(ELU(x)))), through a dim // compress bottleneck."""

    def __init__(self, config: MimiEncoderConfig, dim: int, dilation: int) -> None:
        super().__init__()
        hidden = dim // config.compress
        self.block = nn.ModuleList(
            [
                nn.ELU(),
                PaddedConv1d(dim, hidden, config.residual_kernel_size, dilation=dilation),
                nn.ELU(),
                PaddedConv1d(hidden, dim, 1),
            ]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in self.block:
            h = layer(h)
        return x + h


class SeanetEncoder(nn.Module):
    """Conv, then per stride (4, 5, 6, 8): residual blocks, ELU, strided conv doubling the
    width; then ELU and a conv to hidden_size: (B, 1, S) → (B, hidden, ceil(S / 960))."""

    def __init__(self, config: MimiEncoderConfig) -> None:
        super().__init__()
        width = config.num_filters
        layers: list[nn.Module] = [PaddedConv1d(1, width, config.kernel_size)]
        for ratio in reversed(config.upsampling_ratios):
            layers += [
                ResnetBlock(config, width, config.dilation_growth_rate**j)
                for j in range(config.num_residual_layers)
            ]
            layers += [nn.ELU(), PaddedConv1d(width, 2 * width, 2 * ratio, stride=ratio)]
            width *= 2
        layers += [nn.ELU(), PaddedConv1d(width, config.hidden_size, config.last_kernel_size)]
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


# ---- causal transformer -----------------------------------------------------------------------


class Mlp(nn.Module):
    def __init__(self, config: MimiEncoderConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))  # exact (erf) GELU, transformers' "gelu"


class EncoderTransformer(nn.Module):
    """Pre-LayerNorm layers (with LayerScale) over (B, T, hidden), each frame attending to
    itself and every frame before it."""

    inv_freq: torch.Tensor

    def __init__(self, config: MimiEncoderConfig) -> None:
        super().__init__()
        norm = partial(nn.LayerNorm, config.hidden_size, eps=config.norm_eps)
        self.layers = nn.ModuleList(
            [TransformerLayer(config, Mlp(config), norm) for _ in range(config.num_hidden_layers)]
        )
        inv_freq = rope_inv_freq(config.attention_head_dim, config.rope_theta)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cos, sin, mask = rope_and_mask(x.shape[1], self.inv_freq, None, x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return x  # (B, T, hidden)


# ---- split residual vector quantizer (encode side only) ---------------------------------------


class Codebook(nn.Module):
    """codewords = embed_sum / clamp(cluster_usage, CODEBOOK_EPSILON)."""

    cluster_usage: torch.Tensor
    embed_sum: torch.Tensor

    def __init__(self, size: int, dim: int) -> None:
        super().__init__()
        self.register_buffer("cluster_usage", torch.ones(size))
        self.register_buffer("embed_sum", torch.zeros(size, dim))

    def codewords(self) -> torch.Tensor:
        return self.embed_sum / self.cluster_usage.clamp(min=CODEBOOK_EPSILON)[:, None]


class VectorQuantizer(nn.Module):
    def __init__(self, size: int, dim: int) -> None:
        super().__init__()
        self.codebook = Codebook(size, dim)


class ResidualQuantizer(nn.Module):
    """1×1 projection (no bias), then per codebook: nearest codeword, subtract it, go on."""

    def __init__(self, config: MimiEncoderConfig, count: int) -> None:
        super().__init__()
        dim = config.vector_quantization_hidden_dimension
        self.layers = nn.ModuleList(
            [VectorQuantizer(config.codebook_size, config.codebook_dim) for _ in range(count)]
        )
        self.input_proj: nn.Module = nn.Identity()  # MimiResidualVectorQuantizer has none then
        if dim != config.hidden_size:
            self.input_proj = nn.Conv1d(config.hidden_size, dim, 1, bias=False)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        residual = self.input_proj(latent).transpose(1, 2)  # (B, T, dim)
        B, T, dim = residual.shape
        residual = residual.reshape(B * T, dim)
        codes = []
        for layer in self.layers:
            codewords = cast(VectorQuantizer, layer).codebook.codewords()  # (size, dim)
            # the official distance: torch.cdist in float32 (its matmul form), then argmin
            index = torch.cdist(residual[None].float(), codewords[None].float(), p=2)[0].argmin(-1)
            residual = residual - F.embedding(index, codewords)  # (B·T, dim)
            codes.append(index.view(B, T))
        return torch.stack(codes, dim=1)  # (B, count, T) int64


class SplitQuantizer(nn.Module):
    """The semantic and the acoustic quantizers both encode the latent itself."""

    def __init__(self, config: MimiEncoderConfig, kept: int) -> None:
        super().__init__()
        semantic = config.num_semantic_quantizers
        self.semantic_residual_vector_quantizer = ResidualQuantizer(config, semantic)
        self.acoustic_residual_vector_quantizer = ResidualQuantizer(config, kept - semantic)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        semantic = self.semantic_residual_vector_quantizer(latent)  # (B, semantic, T)
        acoustic = self.acoustic_residual_vector_quantizer(latent)  # (B, kept - semantic, T)
        return torch.cat([semantic, acoustic], dim=1)  # (B, kept, T)


# ---- the encoder ------------------------------------------------------------------------------


class Qwen3SpeechEncoder(nn.Module):
    """The encoder: 24 kHz mono audio (S,) → codes (ceil(S / 1920), kept) int64."""

    def __init__(self, config: MimiEncoderConfig, kept: int) -> None:
        super().__init__()
        if not config.num_semantic_quantizers < kept <= config.num_quantizers:
            raise ValueError(
                f"keeping {kept} codes needs more than {config.num_semantic_quantizers} "
                f"(semantic) and at most {config.num_quantizers} quantizers"
            )
        self.config = config
        self.encoder = SeanetEncoder(config)
        self.encoder_transformer = EncoderTransformer(config)
        self.downsample = PaddedConv1d(
            config.hidden_size,
            config.hidden_size,
            config.downsample_kernel,
            stride=DOWNSAMPLE_STRIDE,
            bias=False,
            pad_mode=DOWNSAMPLE_PAD_MODE,
        )
        self.quantizer = SplitQuantizer(config, kept)

        self.kept = kept
        """Codes per frame (encoder_valid_num_quantizers: 16)."""
        self.samples_per_frame = config.conv_hop * DOWNSAMPLE_STRIDE
        """Audio samples per code frame (1920 = 80 ms at 24 kHz)."""

    def latent(self, audio: torch.Tensor) -> torch.Tensor:
        """Everything before quantization: (B, 1, S) → (B, hidden, ceil(S / 1920))."""
        h = self.encoder(audio)  # (B, hidden, ceil(S / 960))
        h = self.encoder_transformer(h.transpose(1, 2)).transpose(1, 2)  # (B, hidden, T25)
        return self.downsample(h)  # (B, hidden, ceil(T25 / 2))

    @torch.inference_mode()
    def encode(self, audio: np.ndarray) -> np.ndarray:
        """float32 mono audio at 24 kHz, shape [samples] → int64 codes [frames, kept] with
        frames = ceil(samples / 1920), as qwen-tts's tokenizer `encode` returns them."""
        if audio.ndim != 1:
            raise ValueError(f"need mono audio of shape (samples,), got {audio.shape}")
        if not len(audio):
            return np.zeros((0, self.kept), dtype=np.int64)
        device = self.downsample.conv.weight.device
        x = torch.as_tensor(audio, dtype=torch.float32, device=device)[None, None]  # (1, 1, S)
        codes = self.quantizer(self.latent(x))  # (1, kept, frames)
        return codes[0].T.cpu().numpy()  # (frames, kept) int64


# ---- loading ----------------------------------------------------------------------------------


def load_speech_encoder(folder: Path, device: torch.device) -> Qwen3SpeechEncoder:
    """The encoder of a speech-tokenizer folder (config.json + model.safetensors) on `device`.

    Reads only the `encoder.` tensors it uses (not the decoder's, nor the codebooks past the kept
    codes, nor the decode-side `output_proj`s); every one of them must be there, so a file of
    another layout fails here, naming the file and the keys, instead of cloning from noise.
    Errors are `EngineError`s.
    """
    config_path = folder / "config.json"
    weights_path = folder / "model.safetensors"
    for path in (config_path, weights_path):
        if not path.is_file():
            raise EngineError(f"Qwen3-TTS speech tokenizer file {path} is missing")
    try:
        values = json.loads(config_path.read_text(encoding="utf-8"))
        config = MimiEncoderConfig.from_dict(values["encoder_config"])
        encoder = Qwen3SpeechEncoder(config, int(values["encoder_valid_num_quantizers"]))
    except (ValueError, KeyError, TypeError) as err:
        raise EngineError(
            f"{config_path} is not a Qwen3-TTS 12 Hz tokenizer config ({err})"
        ) from err
    declared = (
        values.get("input_sample_rate", ENCODER_SAMPLE_RATE),
        values.get("encode_downsample_rate", encoder.samples_per_frame),
    )
    if declared != (ENCODER_SAMPLE_RATE, encoder.samples_per_frame) or (
        config.sampling_rate != ENCODER_SAMPLE_RATE
    ):
        raise EngineError(
            f"{config_path}: input_sample_rate / encode_downsample_rate {declared} are "
            f"not the encoder's ({ENCODER_SAMPLE_RATE}, {encoder.samples_per_frame})"
        )

    used = set(encoder.state_dict())
    count = load_module_tensors(
        encoder,
        [weights_path],
        ENCODER_PREFIX,
        "Qwen3-TTS 12 Hz encoder",
        unused=lambda key: key not in used,  # output_projs, codebooks past the kept codes
    )
    _LOGGER.debug("loaded %d encoder tensors from %s", count, weights_path)
    return encoder.to(device).eval()
