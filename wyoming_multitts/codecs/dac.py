"""DAC (Descript Audio Codec) decoding, the codec of OuteTTS 1.0: 2 codes per 1/75 s frame → 24 kHz.

OuteTTS 1.0 speaks through IBM's `ibm-research/DAC.speech.v1.0`, file
`weights_24khz_1.5kbps_v1.0.pth` (2 codebooks × 1024 entries, 75 frames/s). This is our own compact
torch copy of descript-audio-codec 1.0.0 (`dac/model/dac.py`, `dac/nn/layers.py`,
`dac/nn/quantize.py` of https://pypi.org/project/descript-audio-codec/1.0.0/), which we cannot
install: it requires torchaudio, which has no build for our torch. The encoder (audio → codes, for
speaker profiles) is in `dac_encoder.py`.

    codes (Q, T) → per codebook: codebook row (codebook_dim) → out_proj (1×1 conv), summed
      → latent (latent_dim, T) → conv k7 → per rate r: [Snake, ConvTranspose1d (kernel 2r,
      stride r, padding ceil(r/2)), 3 residual units (dilations 1, 3, 9)] → Snake → conv k7 → tanh

Module attributes are the release state dict's names, so loading needs no rename table; every
shape (dims, rates, codebooks) is read from the tensors, never from a config. Loading converts
the release `.pth` once (`dac_checkpoint.py`): `torch.load(weights_only=True)`, weight norm
folded (weight = g · v / ‖v‖ over all but dim 0, computed by the same op as torch's hook), saved as
safetensors beside it; later loads read only that file.

Two properties of DAC that the callers see:
- The decoder is not causal: a frame's audio depends on 10 frames either side (with the 24 kHz
  rates and the 44 kHz ones, 8, 8, 4, 2; `receptive_field`). Windows with that much context on
  both sides decode what one whole pass does: in float64 to 3e-15; in float32, measured on the
  tiny random model (audio peak 0.54), max |stream - whole| 4.2e-6, the size of float32
  rounding itself (one float32 pass differs from float64 by 3.0e-6). Less context is not exact,
  and with random weights every frame of it matters: left/right 9/10 → 1.9e-3, 10/9 → 3.4e-3,
  8/8 → 5.8e-2, 5/5 → 0.19. Each window decodes left + emitted + right frames: with 10/10, a
  window emitting 8 frames costs 3.5 times their own decode.
- A transposed conv of odd stride r gives r·L - 1 samples, not r·L, so with the 24 kHz rates
  (8, 5, 4, 2) T frames give 320·T - 8 samples: the last frame's final 8 samples need lookahead,
  so a stream needs at least 1 frame of it (the utterance's own last 8 are never produced).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, cast

import numpy as np
import torch
from torch import nn

from .dac_checkpoint import DacShape, load_part, read_converted
from .windowed import WindowedDecoder

RESIDUAL_DILATIONS = (1, 3, 9)
"""Dilations of the 3 residual units after each up- or downsampling conv (dac `DecoderBlock`,
`EncoderBlock`)."""
RESIDUAL_KERNEL = 7
"""Kernel of a residual unit's dilated conv (its second conv is 1×1)."""
OUTER_KERNEL = 7
"""Kernel of the decoder's first and last conv (and of the encoder's first)."""
SNAKE_EPSILON = 1e-9
"""Snake: x + sin²(α·x) / (α + SNAKE_EPSILON) (dac `snake`)."""
DECODE_CHUNK_FRAMES = 375
"""Most frames one pass of `decode` emits (5 s): longer utterances go in windows with
the receptive field's context either side, so memory stays bounded and the audio is that of one
pass (to float rounding)."""


def receptive_field(rates: tuple[int, ...]) -> tuple[int, int]:
    """(left, right): how many frames before and after frame t change t's audio, for a decoder
    with these transposed-conv `rates`.

    Walks back from t's samples [t·hop, (t+1)·hop) through every layer: a conv of kernel k and
    dilation d (padding (k-1)·d/2) widens the range by (k-1)·d/2 on each side; a transposed conv
    of stride r, kernel 2r, padding p = ceil(r/2) writes input i to outputs i·r - p + [0, 2r).
    """
    frame = 10**6  # any frame far enough from both ends that no padding is involved
    hop = math.prod(rates)
    first, last = frame * hop, (frame + 1) * hop - 1
    first, last = first - OUTER_KERNEL // 2, last + OUTER_KERNEL // 2  # last conv
    unit_reach = sum(RESIDUAL_KERNEL // 2 * d for d in RESIDUAL_DILATIONS)
    for rate in reversed(rates):
        first, last = first - unit_reach, last + unit_reach  # 3 residual units
        padding = math.ceil(rate / 2)
        first = -((2 * rate - 1 - padding - first) // rate)  # ceil((first + p - 2r + 1) / r)
        last = (last + padding) // rate
    first, last = first - OUTER_KERNEL // 2, last + OUTER_KERNEL // 2  # first conv
    return frame - first, last - frame


# ---- layers -----------------------------------------------------------------------------------


class Snake1d(nn.Module):
    """x + sin²(α·x) / α per channel: a periodic activation for audio (BigVGAN, DAC)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, channels, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inverse = (self.alpha + SNAKE_EPSILON).reciprocal()  # (1, C, 1)
        return x + inverse * torch.sin(self.alpha * x).pow(2)  # (B, C, T)


def same_conv(in_dim: int, out_dim: int, kernel: int, dilation: int = 1) -> nn.Conv1d:
    """A conv (odd kernel) padded to keep the length: T in, T out."""
    return nn.Conv1d(
        in_dim, out_dim, kernel, dilation=dilation, padding=(kernel - 1) * dilation // 2
    )


class ResidualUnit(nn.Module):
    """x + conv1x1(Snake(dilated conv k7(Snake(x)))); both convs keep the length, so dac's crop
    of x never applies."""

    def __init__(self, dim: int, dilation: int) -> None:
        super().__init__()
        self.block = nn.Sequential(
            Snake1d(dim),
            same_conv(dim, dim, RESIDUAL_KERNEL, dilation),
            Snake1d(dim),
            nn.Conv1d(dim, dim, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)  # (B, C, T)


def residual_units(dim: int) -> list[nn.Module]:
    """The 3 residual units (dilations 1, 3, 9) of every encoder and decoder block."""
    return [ResidualUnit(dim, dilation) for dilation in RESIDUAL_DILATIONS]


class DecoderBlock(nn.Module):
    """Snake, transposed conv (×rate), 3 residual units: (B, C_in, L) → (B, C_out, ≈ rate·L)."""

    def __init__(self, in_dim: int, out_dim: int, rate: int) -> None:
        super().__init__()
        upsample = nn.ConvTranspose1d(
            in_dim, out_dim, 2 * rate, stride=rate, padding=math.ceil(rate / 2)
        )  # L → rate·L (rate·L - 1 for an odd rate)
        self.block = nn.Sequential(Snake1d(in_dim), upsample, *residual_units(out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


class Decoder(nn.Module):
    """latent (B, latent_dim, T) → audio (B, 1, ≈ hop·T) in (-1, 1); channels halve per block."""

    def __init__(self, latent_dim: int, channels: int, rates: tuple[int, ...]) -> None:
        super().__init__()
        dims = [channels // 2**i for i in range(len(rates) + 1)]
        self.model = nn.Sequential(
            same_conv(latent_dim, dims[0], OUTER_KERNEL),
            *(DecoderBlock(dims[i], dims[i + 1], rate) for i, rate in enumerate(rates)),
            Snake1d(dims[-1]),
            same_conv(dims[-1], 1, OUTER_KERNEL),
            nn.Tanh(),
        )

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.model(latent)


# ---- residual vector quantizer ----------------------------------------------------------------


class VectorQuantize(nn.Module):
    """One codebook, looked up in codebook_dim dimensions ("factorized codes", ViT-VQGAN) and
    projected to and from the latent by 1×1 convs."""

    def __init__(self, latent_dim: int, size: int, dim: int) -> None:
        super().__init__()
        self.in_proj = nn.Conv1d(latent_dim, dim, 1)
        self.out_proj = nn.Conv1d(dim, latent_dim, 1)
        self.codebook = nn.Embedding(size, dim)

    def embed(self, codes: torch.Tensor) -> torch.Tensor:
        """Codes (B, T) → their latent (B, latent_dim, T)."""
        return self.out_proj(self.codebook(codes).transpose(1, 2))  # (B, dim, T) → (B, D, T)

    def nearest(self, latent: torch.Tensor) -> torch.Tensor:
        """Latent (B, latent_dim, T) → the codes (B, T) whose entries point closest in direction
        (both sides L2-normalised; dac's distance formula, so ties break as there)."""
        B, _, T = latent.shape
        projected = self.in_proj(latent).transpose(1, 2).reshape(B * T, -1)  # (B·T, dim)
        encodings = nn.functional.normalize(projected)  # (B·T, dim)
        codebook = nn.functional.normalize(self.codebook.weight)  # (size, dim)
        distance = (
            encodings.pow(2).sum(1, keepdim=True)
            - 2 * encodings @ codebook.t()
            + codebook.pow(2).sum(1, keepdim=True).t()
        )  # (B·T, size)
        return (-distance).max(1)[1].view(B, T)  # (B, T) int64


class ResidualVectorQuantize(nn.Module):
    """Codebook j quantizes what codebooks 0 … j-1 left over; the latent is the sum of the
    entries' projections."""

    def __init__(self, latent_dim: int, size: int, dims: tuple[int, ...]) -> None:
        super().__init__()
        self.quantizers = nn.ModuleList(VectorQuantize(latent_dim, size, dim) for dim in dims)

    def from_codes(self, codes: torch.Tensor) -> torch.Tensor:
        """Codes (B, Q, T) of the first Q codebooks → latent (B, latent_dim, T)."""
        latent = torch.zeros((), device=codes.device)
        for quantizer, row in zip(self.quantizers, codes.unbind(1)):  # the first Q codebooks
            latent = latent + cast(VectorQuantize, quantizer).embed(row)  # (B, D, T)
        return latent

    def quantize(self, latent: torch.Tensor) -> torch.Tensor:
        """Latent (B, latent_dim, T) → codes (B, Q, T) of every codebook."""
        residual = latent
        codes = []
        for module in self.quantizers:
            quantizer = cast(VectorQuantize, module)
            codes.append(quantizer.nearest(residual))  # (B, T)
            residual = residual - quantizer.embed(codes[-1])  # (B, D, T)
        return torch.stack(codes, dim=1)  # (B, Q, T)


# ---- the decoder ------------------------------------------------------------------------------


class DacDecoder(nn.Module):
    """Codes (Q, T) → 24 kHz audio; `decode` for a whole utterance, `stream` for windows."""

    def __init__(self, shape: DacShape, sample_rate: int) -> None:
        super().__init__()
        self.shape = shape
        self.quantizer = ResidualVectorQuantize(
            shape.latent_dim, shape.codebook_size, shape.codebook_dims
        )
        self.decoder = Decoder(shape.latent_dim, shape.decoder_dim, shape.decoder_rates)
        self.sample_rate = sample_rate
        """Output rate in Hz."""
        self.samples_per_frame = math.prod(shape.decoder_rates)
        """Audio samples per code frame (320 = 1/75 s at 24 kHz)."""
        self.receptive_frames = receptive_field(shape.decoder_rates)
        """(left, right) frames of context that make a window exact ((10, 10))."""

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        """Codes (B, Q, T) → audio (B, 1, ≈ samples_per_frame·T): 320·T - 8 samples for the
        24 kHz rates (module docstring)."""
        return self.decoder(self.quantizer.from_codes(codes))

    def decode_window(self, codes: np.ndarray) -> np.ndarray:
        """Float32 audio of codes (Q, T) int (Q <= n_codebooks: the first Q codebooks), decoded
        together in one pass; the window primitive of `WindowedDecoder`."""
        self._check(codes)
        device = next(self.parameters()).device
        batch = torch.as_tensor(codes, dtype=torch.int64, device=device)[None]  # (1, Q, T)
        with torch.inference_mode():
            audio = self(batch)  # (1, 1, ≈ spf·T)
        return audio[0, 0].float().cpu().numpy()

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Float32 audio of a whole utterance's codes (Q, T) int, as one pass gives it (to float
        rounding), in windows of at most DECODE_CHUNK_FRAMES frames."""
        self._check(codes)
        n_frames = codes.shape[1]
        if n_frames == 0:
            return np.zeros(0, dtype=np.float32)
        stream = self.stream(
            lambda first, end: codes[:, first:end],
            first_chunk=DECODE_CHUNK_FRAMES,
            max_chunk=DECODE_CHUNK_FRAMES,
        )
        return np.concatenate(list(stream.finish(n_frames)))  # (≈ spf·T,) float32

    def stream(
        self,
        codes_of: Callable[[int, int], np.ndarray],
        left: int | None = None,
        right: int | None = None,
        first_chunk: int = 1,
        max_chunk: int = 8,
    ) -> WindowedDecoder:
        """A `WindowedDecoder` over the frames `codes_of(first, end)` ((Q, end - first) int) of a
        growing utterance. `left`/`right` frames of context (default: `receptive_frames`, the
        stream then equals `decode`; fewer cost less latency and compute but differ, see the
        module docstring)."""
        default_left, default_right = self.receptive_frames
        right = default_right if right is None else right
        if right < 1:
            raise ValueError("DAC streams need at least 1 frame of lookahead (module docstring)")
        return WindowedDecoder(
            lambda first, end: self.decode_window(codes_of(first, end)),
            self.samples_per_frame,
            default_left if left is None else left,
            right,
            first_chunk,
            max_chunk,
        )

    def _check(self, codes: np.ndarray) -> None:
        if codes.ndim != 2 or codes.dtype.kind not in "iu":
            raise ValueError(
                f"codes must be an integer array (Q, T), got {codes.dtype} {codes.shape}"
            )
        if not 1 <= codes.shape[0] <= self.shape.n_codebooks:
            raise ValueError(
                f"need 1 to {self.shape.n_codebooks} codebooks' codes, got {codes.shape[0]}"
            )
        if codes.size and (codes.min() < 0 or codes.max() >= self.shape.codebook_size):
            raise ValueError(f"codes must lie in [0, {self.shape.codebook_size})")


# ---- loading -------------------------------------------------------------------------------------


def load_dac_decoder(checkpoint: Path, device: torch.device) -> DacDecoder:
    """The decoder of the release `checkpoint` (`weights_….pth`) on `device`; converts the file
    on first use (`dac_checkpoint.convert_checkpoint`). Reads the quantizer and decoder tensors
    strictly: a file of another layout fails here, naming the file and the tensors, instead of
    decoding noise."""
    path, shape, sample_rate = read_converted(checkpoint)
    decoder = DacDecoder(shape, sample_rate)
    load_part(decoder, path, "DAC decoder", unused="encoder.")
    return decoder.to(device).eval()
