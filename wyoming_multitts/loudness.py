"""Loudness of a recording (ITU-R BS.1770 integrated loudness, LUFS) and normalising it, as the
OuteTTS 1.0 speaker profile needs before DAC encoding.

A port of pyloudnorm 0.2.0 (`meter.py` `Meter.integrated_loudness`, `normalize.py` `loudness`
and `peak`) as outetts 0.4.4 calls it (`dac/interface.py` `process_audio_tensor`), without its
scipy dependency: the two K-weighting biquads run as scipy's `lfilter` does (direct form II
transposed, float64), each stage's output cast back to the input's dtype as pyloudnorm's
in-place assignment does, so a float32 recording measures exactly as in the package.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np

from .errors import SpeakerError


class Biquad(NamedTuple):
    """An RBJ cookbook filter stage as pyloudnorm's `IIRfilter` designs it."""

    kind: Literal["high_shelf", "high_pass"]
    gain_db: float
    q: float
    cutoff_hz: float


K_WEIGHTING = (
    Biquad("high_shelf", 4.0, 1 / math.sqrt(2), 1500.0),
    Biquad("high_pass", 0.0, 0.5, 38.0),
)
"""The BS.1770 pre-filter, in order (pyloudnorm 0.2.0 `Meter.filter_class`, "K-weighting")."""
BLOCK_OVERLAP = 0.75
"""Gating blocks overlap by 75 % (pyloudnorm's `Meter` default, BS.1770-4)."""
ABSOLUTE_GATE_LUFS = -70.0
"""Blocks quieter than this are not counted at all."""
RELATIVE_GATE_LU = 10.0
"""Blocks more than this below the absolutely gated loudness are not counted either."""
LOUDNESS_OFFSET = -0.691
"""BS.1770's constant: loudness = -0.691 + 10·log10(mean square of the K-weighted signal)."""
GATING_BLOCK_SECONDS = 0.4
"""The meter's gating block (pyloudnorm's default, which outetts passes explicitly); shorter
recordings are measured with zeros appended up to one block."""


def integrated_loudness(
    samples: np.ndarray, rate: int, block_seconds: float = GATING_BLOCK_SECONDS
) -> float:
    """The gated loudness (LUFS) of mono float `samples`; -inf when every block is below
    -70 LUFS. Raises ValueError when shorter than one block (pyloudnorm's `valid_audio`)."""
    if samples.ndim != 1 or samples.dtype.kind != "f":
        raise ValueError(f"samples must be mono float audio, got {samples.dtype} {samples.shape}")
    if samples.shape[0] < block_seconds * rate:
        raise ValueError(f"audio must be at least one block ({block_seconds} s) long")
    weighted = samples
    for stage in K_WEIGHTING:
        b, a = _coefficients(stage, rate)
        weighted = _lfilter(b, a, weighted).astype(samples.dtype)  # (S,) pyloudnorm's cast

    # mean square of each gating block (eq. 1), in the dtype of the samples as pyloudnorm sums
    step = 1.0 - BLOCK_OVERLAP
    seconds = samples.shape[0] / rate
    n_blocks = int(np.round((seconds - block_seconds) / (block_seconds * step))) + 1
    power = np.zeros(n_blocks)  # (n_blocks,) float64
    block_loudness = np.zeros(n_blocks)  # (n_blocks,) float64, -inf where silent
    for j in range(n_blocks):
        lower = int(block_seconds * (j * step) * rate)
        upper = int(block_seconds * (j * step + 1) * rate)
        power[j] = (1.0 / (block_seconds * rate)) * np.sum(np.square(weighted[lower:upper]))
        with np.errstate(divide="ignore"):
            block_loudness[j] = LOUDNESS_OFFSET + 10.0 * np.log10(power[j])  # (eq. 4)

    # absolute gate, then relative gate 10 LU under the absolutely gated loudness (eq. 5-7)
    above_absolute = block_loudness >= ABSOLUTE_GATE_LUFS
    if not above_absolute.any():
        return -math.inf
    relative_gate = (
        LOUDNESS_OFFSET + 10.0 * np.log10(np.mean(power[above_absolute])) - RELATIVE_GATE_LU
    )
    gated = (block_loudness > relative_gate) & (block_loudness > ABSOLUTE_GATE_LUFS)
    if not gated.any():
        return -math.inf
    return float(LOUDNESS_OFFSET + 10.0 * np.log10(np.mean(power[gated])))


def normalize_loudness(
    samples: np.ndarray, rate: int, target_lufs: float = -18.0, peak_db: float = -1.0
) -> np.ndarray:
    """Mono float `samples` scaled to `target_lufs`, then down to a peak of `peak_db` dBFS if
    louder than that (outetts' `process_audio_tensor`); the same dtype and length.

    Audio shorter than a gating block is measured with zeros appended, as outetts does. A
    silent recording (no block above -70 LUFS) raises SpeakerError: its loudness is -inf, and
    the package scales it by an infinite gain into NaN audio.
    """
    min_samples = int(GATING_BLOCK_SECONDS * rate)
    padded = np.pad(samples, (0, max(0, min_samples - samples.shape[0])))  # (max(S, block),)
    measured = integrated_loudness(padded, rate)
    if math.isinf(measured):
        raise SpeakerError(
            f"the recording is silent (no {GATING_BLOCK_SECONDS:g} s stretch louder than "
            f"{ABSOLUTE_GATE_LUFS:g} LUFS), so there is no voice to make a speaker profile of; "
            "record again closer to the microphone"
        )
    gain = np.power(10.0, (target_lufs - np.float64(measured)) / 20.0)
    normalized = gain * padded  # (S',) float64, as pyloudnorm's `loudness`
    if np.max(np.abs(normalized)) > 10 ** (peak_db / 20):
        normalized = np.power(10.0, peak_db / 20.0) / np.max(np.abs(normalized)) * normalized
    return normalized[: samples.shape[0]].astype(samples.dtype)


def _coefficients(stage: Biquad, rate: int) -> tuple[np.ndarray, np.ndarray]:
    """(b, a), a[0] == 1, of an RBJ cookbook biquad (pyloudnorm 0.2.0 `iirfilter.py`
    `IIRfilter.generate_coefficients`; the same expressions, so the same float64 values)."""
    big_a = 10 ** (stage.gain_db / 40.0)
    w0 = 2.0 * np.pi * (stage.cutoff_hz / rate)
    alpha = np.sin(w0) / (2.0 * stage.q)
    if stage.kind == "high_shelf":
        root = 2 * np.sqrt(big_a) * alpha
        b0 = big_a * ((big_a + 1) + (big_a - 1) * np.cos(w0) + root)
        b1 = -2 * big_a * ((big_a - 1) + (big_a + 1) * np.cos(w0))
        b2 = big_a * ((big_a + 1) + (big_a - 1) * np.cos(w0) - root)
        a0 = (big_a + 1) - (big_a - 1) * np.cos(w0) + root
        a1 = 2 * ((big_a - 1) - (big_a + 1) * np.cos(w0))
        a2 = (big_a + 1) - (big_a - 1) * np.cos(w0) - root
    else:  # high_pass
        b0 = (1 + np.cos(w0)) / 2
        b1 = -(1 + np.cos(w0))
        b2 = (1 + np.cos(w0)) / 2
        a0 = 1 + alpha
        a1 = -2 * np.cos(w0)
        a2 = 1 - alpha
    return np.array([b0, b1, b2]) / a0, np.array([a0, a1, a2]) / a0


def _lfilter(b: np.ndarray, a: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """scipy.signal.lfilter(b, a, samples) for a biquad with a[0] == 1: direct form II
    transposed in float64, each product and sum in scipy's order, so bit-identical."""
    b0, b1, b2 = (float(value) for value in b)
    a1, a2 = float(a[1]), float(a[2])
    z0 = z1 = 0.0
    out = []
    for x in samples.tolist():  # Python floats are float64: the same rounding as scipy's C loop
        y = z0 + b0 * x
        z0 = z1 + x * b1 - y * a1
        z1 = x * b2 - y * a2
        out.append(y)
    return np.array(out)  # (S,) float64
