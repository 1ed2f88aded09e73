"""The three features of an OuteTTS 1.0 speaker profile: energy, spectral centroid and pitch of a
word's (or the whole recording's) audio, each a [0, 1] measure scaled to an integer 0..100.

A port of outetts 0.4.4 `version/v3/audio_processor.py` (`calculate_pitch`,
`extract_single_pitch_value`, `Features.extract_audio_features`): the same torch float32
operations in the same order, so a profile's features equal the package's. One difference: audio
too short for a single pitch frame (1..240 samples at 24 kHz, after padding less than 400) gets
pitch 0, where the package's `unfold` raises a RuntimeError and no profile is made.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .speakers10 import FEATURE_MAX, FEATURE_NAMES

SPECTRUM_EPS = 1e-10
"""Added to the spectrum's sum before dividing (`Features.eps`)."""

PITCH_MIN_HZ = 75.0
"""Lowest pitch searched; unvoiced frames count as this too (`calculate_pitch`'s clamp)."""
PITCH_MAX_HZ = 600.0
"""Highest pitch searched."""
PITCH_FRAME = 400
"""Samples per autocorrelation frame (`frame_length`, 16.7 ms at 24 kHz)."""
PITCH_HOP = 160
"""Samples between frames (`hop_length`)."""
VOICING_THRESHOLD = 0.3
"""A frame is voiced when its autocorrelation peak is above 0.3 of its energy."""
PITCH_EPS = 1e-8
"""Keeps the interpolation's and the voicing test's divisions finite."""


def pitch_track(audio: torch.Tensor, rate: int) -> torch.Tensor:
    """Pitch (Hz, PITCH_MIN_HZ..PITCH_MAX_HZ) of each frame of `audio` (n,) or (channels, n)
    by autocorrelation with parabolic peak interpolation (`calculate_pitch`); unvoiced frames
    get PITCH_MIN_HZ. (0,) when the padded audio is shorter than one frame."""
    if audio.dim() > 1:
        audio = torch.mean(audio, dim=0)
    audio = audio.squeeze()  # (n,)

    # frames: the audio padded so the hops cover it, windowed
    pad_len = (PITCH_FRAME - (audio.shape[-1] % PITCH_HOP)) % PITCH_HOP
    audio = F.pad(audio, (0, pad_len))  # (n + pad_len,)
    if audio.shape[-1] < PITCH_FRAME:  # outetts raises here (unfold), see the module docstring
        return audio.new_zeros(0)
    frames = audio.unfold(0, PITCH_FRAME, PITCH_HOP)  # (n_frames, PITCH_FRAME)
    num_frames = frames.shape[0]
    window = torch.hann_window(PITCH_FRAME, device=audio.device)
    frames_windowed = frames * window

    # autocorrelation as the inverse FFT of the power spectrum, zero-padded to twice the frame
    f = torch.fft.rfft(frames_windowed, n=2 * PITCH_FRAME, dim=1)  # (n_frames, PITCH_FRAME + 1)
    power_spectrum = f.real.pow(2) + f.imag.pow(2)
    autocorr = torch.fft.irfft(power_spectrum, dim=1)[:, :PITCH_FRAME]  # (n_frames, PITCH_FRAME)

    # the strongest lag between the shortest and the longest period
    min_idx = max(1, int(rate / PITCH_MAX_HZ))
    max_idx = min(PITCH_FRAME, int(rate / PITCH_MIN_HZ))
    peak_values, peak_indices = torch.max(autocorr[:, min_idx:max_idx], dim=1)  # (n_frames,)
    peak_indices += min_idx

    # parabolic interpolation around the peak for a fraction of a sample
    indices = torch.clamp(peak_indices, 1, PITCH_FRAME - 2)
    alpha = autocorr[torch.arange(num_frames), indices - 1]
    beta = autocorr[torch.arange(num_frames), indices]
    gamma = autocorr[torch.arange(num_frames), indices + 1]
    delta = 0.5 * (alpha - gamma) / (alpha - 2 * beta + gamma + PITCH_EPS)
    delta = torch.where((peak_indices > 0) & (peak_indices < PITCH_FRAME - 1), delta, 0.0)

    # period → pitch, unvoiced frames 0, then everything clamped into the searched range
    best_period = (peak_indices + delta) / rate
    pitch = torch.where(best_period > 0, 1.0 / best_period, 0.0)
    voiced = (peak_values / (autocorr[:, 0] + PITCH_EPS)) > VOICING_THRESHOLD
    pitch = torch.where(voiced, pitch, 0.0)
    return torch.clamp(pitch, PITCH_MIN_HZ, PITCH_MAX_HZ)  # (n_frames,)


def mean_pitch(audio: torch.Tensor, rate: int) -> float:
    """The mean frame pitch mapped from PITCH_MIN_HZ..PITCH_MAX_HZ to 0..1
    (`extract_single_pitch_value`); 0.0 when the audio has no pitch frame."""
    track = pitch_track(audio, rate)
    if track.numel() == 0:
        return 0.0
    normalized = (torch.mean(track) - PITCH_MIN_HZ) / (PITCH_MAX_HZ - PITCH_MIN_HZ)
    return float(torch.clamp(normalized, 0.0, 1.0).item())


def audio_features(audio: torch.Tensor, rate: int) -> dict[str, int]:
    """`{"energy", "spectral_centroid", "pitch"}` of float32 `audio` (channels, n), each [0, 1]
    measure as round(value · FEATURE_MAX) (`Features.extract_audio_features` and
    `scale_values`); all 0 for empty or non-finite audio."""
    if audio.numel() == 0 or not bool(torch.isfinite(audio).all()):
        return dict.fromkeys(FEATURE_NAMES, 0)
    if audio.dim() == 2 and audio.shape[0] > 1:
        audio = torch.mean(audio, dim=0, keepdim=True)  # (1, n)

    # RMS energy, raw (speech is about 0.05-0.15)
    energy = float(torch.sqrt(torch.mean(audio**2)))

    # spectral centroid over half the sample rate; the frequency axis is linspace's, which for
    # odd n is not exactly k·rate/n (kept as the package has it)
    spec = torch.abs(torch.fft.rfft(audio))  # (1, n // 2 + 1)
    freqs = torch.linspace(0, rate / 2, spec.shape[-1], device=audio.device)
    spec_sum = torch.sum(spec) + SPECTRUM_EPS
    centroid = torch.sum(freqs * spec.squeeze()) / spec_sum
    spectral_centroid = float(centroid / (rate / 2))

    values = {
        "energy": energy,
        "spectral_centroid": spectral_centroid,
        "pitch": mean_pitch(audio, rate),
    }
    return {name: round(values[name] * FEATURE_MAX) for name in FEATURE_NAMES}
