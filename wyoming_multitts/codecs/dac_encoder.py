"""DAC encoding: 24 kHz audio → codes (Q, T), e.g. to make an OuteTTS 1.0 speaker profile from a
user's recording.

Our own torch copy of descript-audio-codec 1.0.0's `DAC.preprocess` + `DAC.encode` (see `dac.py`
for why and for the loading): the audio is padded on the right with zeros to whole frames, then

    conv k7 (1 → encoder_dim) → per stride s: [3 residual units (dilations 1, 3, 9), Snake,
      conv (kernel 2s, stride s, padding ceil(s/2)), channels doubled] → Snake → conv k3 → latent
      → residual vector quantization: codebook j picks the entry nearest (in direction) to what
        codebooks 0 … j-1 left over

so S samples give ceil(S / hop) frames. The whole recording is encoded in one pass (outetts 0.4.4
`DacInterface.encode` first normalises loudness to -18 LUFS and encodes 5 s windows separately:
that is the caller's choice, not the codec's).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .dac import ResidualVectorQuantize, Snake1d, residual_units, same_conv
from .dac_checkpoint import DacShape, load_part, read_converted

INPUT_KERNEL = 7
"""Kernel of the encoder's first conv (1 channel → encoder_dim)."""
LATENT_KERNEL = 3
"""Kernel of the encoder's last conv (→ latent_dim)."""


class EncoderBlock(nn.Module):
    """3 residual units at dim/2 channels, Snake, strided conv: (B, dim/2, L) → (B, dim, L/s)."""

    def __init__(self, dim: int, stride: int) -> None:
        super().__init__()
        downsample = nn.Conv1d(
            dim // 2, dim, 2 * stride, stride=stride, padding=math.ceil(stride / 2)
        )  # L → L / stride (L a multiple of stride)
        self.block = nn.Sequential(
            *residual_units(dim // 2),
            Snake1d(dim // 2),
            downsample,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


class Encoder(nn.Module):
    """Audio (B, 1, hop·T) → latent (B, latent_dim, T)."""

    def __init__(self, dim: int, strides: tuple[int, ...], latent_dim: int) -> None:
        super().__init__()
        dims = [dim * 2**i for i in range(len(strides) + 1)]
        self.block = nn.Sequential(
            same_conv(1, dim, INPUT_KERNEL),
            *(EncoderBlock(dims[i + 1], stride) for i, stride in enumerate(strides)),
            Snake1d(dims[-1]),
            same_conv(dims[-1], latent_dim, LATENT_KERNEL),
        )

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.block(audio)


class DacEncoder(nn.Module):
    """Audio at `sample_rate` → codes (Q, T), T = ceil(samples / hop_length)."""

    def __init__(self, shape: DacShape, sample_rate: int) -> None:
        super().__init__()
        self.shape = shape
        self.encoder = Encoder(shape.encoder_dim, shape.encoder_rates, shape.latent_dim)
        self.quantizer = ResidualVectorQuantize(
            shape.latent_dim, shape.codebook_size, shape.codebook_dims
        )
        self.sample_rate = sample_rate
        """Input rate in Hz (24 kHz): resample recordings to it first."""
        self.hop_length = shape.hop_length
        """Audio samples per code frame (320)."""

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        """Audio (B, 1, hop·T) → codes (B, Q, T) int64."""
        return self.quantizer.quantize(self.encoder(audio))

    def encode(self, audio: np.ndarray) -> np.ndarray:
        """Codes (Q, ceil(S / hop)) int64 of mono float audio (S,) at `sample_rate`."""
        if audio.ndim != 1 or audio.dtype.kind != "f" or audio.size == 0:
            raise ValueError(f"audio must be non-empty mono float samples, got {audio.shape}")
        padding = -audio.size % self.hop_length  # zeros to whole frames (dac `preprocess`)
        device = next(self.parameters()).device
        samples = torch.as_tensor(audio, dtype=torch.float32, device=device)
        batch = nn.functional.pad(samples, (0, padding))[None, None]  # (1, 1, hop·T)
        with torch.inference_mode():
            codes = self(batch)  # (1, Q, T)
        return codes[0].cpu().numpy()


def load_dac_encoder(checkpoint: Path, device: torch.device) -> DacEncoder:
    """The encoder of the release `checkpoint` (`weights_….pth`) on `device`, converting the file
    on first use like `dac.load_dac_decoder`; the decoder's tensors are not read."""
    path, shape, sample_rate = read_converted(checkpoint)
    encoder = DacEncoder(shape, sample_rate)
    load_part(encoder, path, "DAC encoder", unused="decoder.")
    return encoder.to(device).eval()
