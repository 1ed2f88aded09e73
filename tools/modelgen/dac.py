"""Random-weight DAC codecs (OuteTTS 1.0's `ibm-research/DAC.speech.v1.0`) as release `.pth` files.

A file written here has the layout `dac.DAC.save(path, package=False)` of descript-audio-codec
1.0.0 writes (audiotools 0.7.2 `BaseModel.save`): `torch.save` of
`{"state_dict": …, "metadata": {"kwargs": the DAC constructor's arguments}}`, the state dict in
module order (encoder, quantizer, decoder) with every weight-normed conv stored as `bias`,
`weight_g` (dim 0: (shape[0], 1, 1)) and `weight_v`. `dac.DAC.load` reads it without missing or
unexpected keys (tests/test_dac.py checks this in the oracle environment). Nothing here imports
dac: names and shapes follow `dac/model/dac.py` and `dac/nn/quantize.py` of 1.0.0.

Weights are random but sized for tests: every conv's g keeps activations near unit size (a
transposed conv of stride r spreads each input over r outputs, so its g is sqrt(r/2)), residual
branches and the last conv are damped so the audio is neither tiny nor saturated by the final
tanh, and Snake's α stays in [0.5, 1.5].
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .files import write_once

_LOGGER = logging.getLogger(__name__)

RESIDUAL_DILATIONS = (1, 3, 9)
"""One residual unit per dilation after each up/downsampling conv (dac `EncoderBlock`)."""
RESIDUAL_KERNEL = 7
OUTER_KERNEL = 7
"""Kernel of the encoder's first conv and of the decoder's first and last."""
LATENT_KERNEL = 3
"""Kernel of the encoder's last conv (→ latent_dim)."""

RESIDUAL_GAIN = 0.5
"""g of the 1×1 conv closing each residual branch: the stream grows ~1.25× in variance per unit."""
OUTPUT_GAIN = 0.03
"""g of the decoder's last conv: audio std around 0.2, mostly below tanh's bend."""
ALPHA_RANGE = (0.5, 1.5)
"""Snake α, uniform: positive and away from 0 (Snake divides by α)."""
BIAS_STD = 0.1

TINY_FILE = "dac-tiny-24khz.pth"
FULL_FILE = "weights_24khz_1.5kbps_v1.0-random.pth"
SEED = 1500


@dataclass(frozen=True)
class DacKwargs:
    """The `dac.DAC` constructor arguments, in its signature's order: what `metadata.kwargs`
    holds (DAC.save writes every argument, latent_dim as the value it computed)."""

    encoder_dim: int
    encoder_rates: list[int]
    latent_dim: int
    decoder_dim: int
    decoder_rates: list[int]
    n_codebooks: int
    codebook_size: int
    codebook_dim: int
    quantizer_dropout: bool = False
    sample_rate: int = 24_000

    @classmethod
    def build(
        cls,
        encoder_dim: int,
        encoder_rates: tuple[int, ...],
        decoder_dim: int,
        decoder_rates: tuple[int, ...],
        n_codebooks: int,
        codebook_size: int = 1024,
        codebook_dim: int = 8,
    ) -> "DacKwargs":
        """With latent_dim by DAC's rule: encoder_dim · 2^len(encoder_rates)."""
        if math.prod(encoder_rates) != math.prod(decoder_rates):
            raise ValueError(f"rates {encoder_rates} and {decoder_rates} differ in hop length")
        return cls(
            encoder_dim=encoder_dim,
            encoder_rates=list(encoder_rates),
            latent_dim=encoder_dim * 2 ** len(encoder_rates),
            decoder_dim=decoder_dim,
            decoder_rates=list(decoder_rates),
            n_codebooks=n_codebooks,
            codebook_size=codebook_size,
            codebook_dim=codebook_dim,
        )


TINY_DAC = DacKwargs.build(
    encoder_dim=8,
    encoder_rates=(2, 4, 5, 8),
    decoder_dim=32,
    decoder_rates=(8, 5, 4, 2),
    n_codebooks=2,
)
"""Hop 320 at 24 kHz (75 frames/s), 2 codebooks × 1024 like the release; about 0.1 M params."""

FULL_DAC = DacKwargs.build(
    encoder_dim=64,
    encoder_rates=(2, 4, 5, 8),
    decoder_dim=1536,
    decoder_rates=(8, 5, 4, 2),
    n_codebooks=2,
)
"""`weights_24khz_1.5kbps_v1.0.pth` as best known: 24 kHz, hop 320, 2 codebooks × 1024 are the
model card's (docs: engines-outetts-orpheus.md §3); the dims and rates are those of Descript's own
24 kHz DAC (`descript/dac_24khz`: encoder 64, rates 2/4/5/8, decoder 1536, codebook_dim 8) and are
UNVERIFIED for IBM's file. About 74 M params, 300 MB."""


# ---- tensors ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tensor:
    name: str
    shape: tuple[int, ...]
    kind: str
    """`alpha` (Snake), `bias`, `g`/`v` (weight norm; g's value is `gain`), `codebook`."""
    gain: float = 1.0


def _conv(
    prefix: str, shape: tuple[int, ...], gain: float = 1.0, transposed: bool = False
) -> list[_Tensor]:
    """A weight-normed conv as `torch.nn.utils.weight_norm` stores it: bias (the output channels:
    shape[0], or shape[1] for a transposed conv), weight_g (over dim 0), weight_v."""
    return [
        _Tensor(f"{prefix}.bias", (shape[1] if transposed else shape[0],), "bias"),
        _Tensor(f"{prefix}.weight_g", (shape[0], 1, 1), "g", gain),
        _Tensor(f"{prefix}.weight_v", shape, "v"),
    ]


def _residual_units(prefix: str, dim: int, first: int) -> list[_Tensor]:
    """Units `first`, first+1, first+2 of `prefix`: Snake, dilated conv, Snake, 1×1 conv."""
    plan = []
    for i in range(first, first + len(RESIDUAL_DILATIONS)):
        unit = f"{prefix}.{i}.block"
        plan += [_Tensor(f"{unit}.0.alpha", (1, dim, 1), "alpha")]
        plan += _conv(f"{unit}.1", (dim, dim, RESIDUAL_KERNEL))
        plan += [_Tensor(f"{unit}.2.alpha", (1, dim, 1), "alpha")]
        plan += _conv(f"{unit}.3", (dim, dim, 1), RESIDUAL_GAIN)
    return plan


def _tensor_plan(kwargs: DacKwargs) -> list[_Tensor]:
    """Every tensor of `dac.DAC(**kwargs).state_dict()`, in its order."""
    dim = kwargs.encoder_dim
    plan = _conv("encoder.block.0", (dim, 1, OUTER_KERNEL))
    for i, stride in enumerate(kwargs.encoder_rates, start=1):
        dim *= 2
        plan += _residual_units(f"encoder.block.{i}.block", dim // 2, 0)
        plan += [_Tensor(f"encoder.block.{i}.block.3.alpha", (1, dim // 2, 1), "alpha")]
        plan += _conv(f"encoder.block.{i}.block.4", (dim, dim // 2, 2 * stride))
    last = len(kwargs.encoder_rates) + 1
    plan += [_Tensor(f"encoder.block.{last}.alpha", (1, dim, 1), "alpha")]
    plan += _conv(f"encoder.block.{last + 1}", (kwargs.latent_dim, dim, LATENT_KERNEL))

    for j in range(kwargs.n_codebooks):
        q = f"quantizer.quantizers.{j}"
        plan += _conv(f"{q}.in_proj", (kwargs.codebook_dim, kwargs.latent_dim, 1))
        plan += _conv(f"{q}.out_proj", (kwargs.latent_dim, kwargs.codebook_dim, 1))
        plan += [
            _Tensor(f"{q}.codebook.weight", (kwargs.codebook_size, kwargs.codebook_dim), "codebook")
        ]

    plan += _conv("decoder.model.0", (kwargs.decoder_dim, kwargs.latent_dim, OUTER_KERNEL))
    for i, rate in enumerate(kwargs.decoder_rates):
        in_dim, out_dim = kwargs.decoder_dim // 2**i, kwargs.decoder_dim // 2 ** (i + 1)
        block = f"decoder.model.{i + 1}.block"
        plan += [_Tensor(f"{block}.0.alpha", (1, in_dim, 1), "alpha")]
        plan += _conv(f"{block}.1", (in_dim, out_dim, 2 * rate), math.sqrt(rate / 2), True)
        plan += _residual_units(block, out_dim, 2)
    last = len(kwargs.decoder_rates) + 1
    out_dim = kwargs.decoder_dim // 2 ** len(kwargs.decoder_rates)
    plan += [_Tensor(f"decoder.model.{last}.alpha", (1, out_dim, 1), "alpha")]
    plan += _conv(f"decoder.model.{last + 1}", (1, out_dim, OUTER_KERNEL), OUTPUT_GAIN)
    return plan


def _values(tensor: _Tensor, rng: np.random.Generator) -> np.ndarray:
    """The tensor's random values, float32."""
    if tensor.kind == "alpha":
        return rng.uniform(*ALPHA_RANGE, tensor.shape).astype(np.float32)
    if tensor.kind == "g":  # ± 20 % around the gain
        return (tensor.gain * rng.uniform(0.8, 1.2, tensor.shape)).astype(np.float32)
    std = BIAS_STD if tensor.kind == "bias" else 1.0  # v: only its direction counts
    return rng.standard_normal(tensor.shape, dtype=np.float32) * np.float32(std)


# ---- writing ----------------------------------------------------------------------------------


def write_dac(path: Path, kwargs: DacKwargs, seed: int) -> None:
    """Write a random DAC checkpoint to `path` (overwriting it); the same seed gives the same
    tensors."""
    start = time.monotonic()
    rng = np.random.default_rng(seed)
    plan = _tensor_plan(kwargs)
    state = OrderedDict((t.name, torch.from_numpy(_values(t, rng))) for t in plan)
    torch.save({"state_dict": state, "metadata": {"kwargs": asdict(kwargs)}}, path)
    _LOGGER.info(
        "Wrote %s: DAC, %.1f M params, %d tensors, %.0f MB in %.1f s",
        path,
        sum(t.numel() for t in state.values()) / 1e6,
        len(plan),
        path.stat().st_size / 1e6,
        time.monotonic() - start,
    )


def write_tiny_dac(directory: Path) -> Path:
    """`directory/dac-tiny-24khz.pth` (`TINY_DAC`), written unless it exists."""
    return write_once(directory / TINY_FILE, lambda partial: write_dac(partial, TINY_DAC, SEED))


def write_full_dac(directory: Path) -> Path:
    """`directory/weights_24khz_1.5kbps_v1.0-random.pth` (`FULL_DAC`, 300 MB), written unless it
    exists."""
    return write_once(directory / FULL_FILE, lambda partial: write_dac(partial, FULL_DAC, SEED))
