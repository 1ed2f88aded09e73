"""Qwen3-TTS Base speaker encoder: a reference recording → one x-vector of talker width.

Our own compact torch copy of qwen-tts 0.1.1's `Qwen3TTSSpeakerEncoder` (ECAPA-TDNN, "ECAPA-TDNN:
Emphasized Channel Attention, Propagation and Aggregation in TDNN Based Speaker Verification",
arXiv 2005.07143) and of its `mel_spectrogram` front-end
(`qwen_tts/core/models/modeling_qwen3_tts.py`), without transformers or librosa: the slaney mel
filterbank is computed here in numpy, as `librosa.filters.mel` does. The x-vector goes into the
speaker slot of the talker's prefill (`prompt.py`; qwen-tts `generate_speaker_prompt`), where a
CustomVoice model puts its speaker's codec embedding.

Module attributes are the checkpoint's names under `speaker_encoder.` in `model.safetensors`,
so `load_state_dict(strict=True)` needs no rename table.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ... import audio
from ...errors import EngineError
from ...formats.safetensors import load_module_tensors, weight_files

_LOGGER = logging.getLogger(__name__)

SPEAKER_PREFIX = "speaker_encoder."
"""Checkpoint key prefix of the speaker encoder (Base models only)."""

MEL_SAMPLE_RATE = 24_000
"""The front-end's rate, Hz (`extract_speaker_embedding` asserts 24 kHz)."""
MEL_N_FFT = 1024
MEL_HOP = 256
MEL_WINDOW = 1024
"""STFT size, hop and Hann window length, in samples (`extract_speaker_embedding`)."""
MEL_BINS = 128
MEL_FMIN = 0.0
MEL_FMAX = 12_000.0
"""Slaney-normalised mel filters on the slaney mel scale, fmin … fmax Hz."""
MAGNITUDE_EPSILON = 1e-9
"""|STFT| = sqrt(re² + im² + MAGNITUDE_EPSILON)."""
LOG_FLOOR = 1e-5
"""log(max(mel, LOG_FLOOR)) (`dynamic_range_compression_torch`)."""

STATS_EPSILON = 1e-12
"""Floor of the variance in attentive statistics pooling."""


@dataclass(frozen=True)
class SpeakerEncoderConfig:
    """config.json's `speaker_encoder_config` (defaults: qwen-tts `Qwen3TTSSpeakerEncoderConfig`,
    which the released 0.6B/1.7B configs repeat but for enc_dim)."""

    enc_dim: int
    """Output width: the talker's hidden size (1024 for 0.6B, 2048 for 1.7B)."""
    mel_dim: int = MEL_BINS
    enc_channels: tuple[int, ...] = (512, 512, 512, 512, 1536)
    enc_kernel_sizes: tuple[int, ...] = (5, 3, 3, 3, 1)
    enc_dilations: tuple[int, ...] = (1, 2, 3, 4, 1)
    enc_attention_channels: int = 128
    enc_res2net_scale: int = 8
    enc_se_channels: int = 128
    sample_rate: int = MEL_SAMPLE_RATE

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "SpeakerEncoderConfig":
        """The known keys of `values` (lists become tuples); unknown keys are ignored."""
        known = {item.name for item in fields(cls)}
        kwargs: dict[str, Any] = {
            key: tuple(value) if isinstance(value, list) else value
            for key, value in values.items()
            if key in known
        }
        return cls(**kwargs)


# ---- mel front-end


def slaney_mel_filters() -> np.ndarray:
    """The speaker encoder's mel filters (MEL_BINS, MEL_N_FFT // 2 + 1)."""
    return audio.slaney_mel_filters(MEL_SAMPLE_RATE, MEL_N_FFT, MEL_BINS, MEL_FMIN, MEL_FMAX)


class MelFrontEnd(nn.Module):
    """24 kHz audio (B, n) → log mel spectrogram (B, 128, frames): reflect padding of
    (n_fft - hop) / 2 each side, STFT without centring, magnitude, mel filters, log."""

    filters: torch.Tensor
    """(mel_bins, n_fft // 2 + 1) slaney filters (a buffer: moves with the module)."""
    window: torch.Tensor
    """(MEL_WINDOW,) periodic Hann window."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("filters", torch.from_numpy(slaney_mel_filters()), persistent=False)
        self.register_buffer("window", torch.hann_window(MEL_WINDOW), persistent=False)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        padding = (MEL_N_FFT - MEL_HOP) // 2
        padded = F.pad(audio[:, None], (padding, padding), mode="reflect")[:, 0]  # (B, n + 768)
        spec = torch.stft(
            padded,
            MEL_N_FFT,
            hop_length=MEL_HOP,
            win_length=MEL_WINDOW,
            window=self.window,
            center=False,
            normalized=False,
            onesided=True,
            return_complex=True,
        )  # (B, n_fft // 2 + 1, frames) complex
        magnitude = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + MAGNITUDE_EPSILON)
        mel = torch.matmul(self.filters, magnitude)  # (B, mel_bins, frames)
        return torch.log(torch.clamp(mel, min=LOG_FLOOR))


# ---- ECAPA-TDNN


class TimeDelayNetBlock(nn.Module):
    """Conv1d ("same" length, reflect padding) + ReLU."""

    def __init__(self, in_dim: int, out_dim: int, kernel: int, dilation: int) -> None:
        super().__init__()
        self.conv = _same_conv(in_dim, out_dim, kernel, dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(x))


def _same_conv(in_dim: int, out_dim: int, kernel: int = 1, dilation: int = 1) -> nn.Conv1d:
    return nn.Conv1d(
        in_dim, out_dim, kernel, dilation=dilation, padding="same", padding_mode="reflect"
    )


class Res2NetBlock(nn.Module):
    """Channels in `scale` groups: the first passes, each later one adds the previous group's
    output before its own TDNN (multi-scale receptive fields)."""

    def __init__(self, dim: int, scale: int, kernel: int, dilation: int) -> None:
        super().__init__()
        self.scale = scale
        width = dim // scale
        self.blocks = nn.ModuleList(
            TimeDelayNetBlock(width, width, kernel, dilation) for _ in range(scale - 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = list(torch.chunk(x, self.scale, dim=1))  # scale × (B, dim / scale, T)
        outputs = [parts[0]]
        for i, block in enumerate(self.blocks, start=1):
            outputs.append(block(parts[i] if i == 1 else parts[i] + outputs[-1]))
        return torch.cat(outputs, dim=1)  # (B, dim, T)


class SqueezeExcitationBlock(nn.Module):
    """Scale each channel by a gate computed from the time-averaged channels."""

    def __init__(self, dim: int, se_dim: int) -> None:
        super().__init__()
        self.conv1 = _same_conv(dim, se_dim)
        self.conv2 = _same_conv(se_dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.conv2(F.relu(self.conv1(x.mean(dim=2, keepdim=True)))))
        return x * gate  # (B, dim, T)


class SqueezeExcitationRes2NetBlock(nn.Module):
    """TDNN → Res2Net → TDNN → squeeze-excitation, plus the input (ECAPA's SE-Res2Block)."""

    def __init__(self, config: SpeakerEncoderConfig, index: int) -> None:
        super().__init__()
        dim = config.enc_channels[index]
        self.tdnn1 = TimeDelayNetBlock(config.enc_channels[index - 1], dim, 1, 1)
        self.res2net_block = Res2NetBlock(
            dim,
            config.enc_res2net_scale,
            config.enc_kernel_sizes[index],
            config.enc_dilations[index],
        )
        self.tdnn2 = TimeDelayNetBlock(dim, dim, 1, 1)
        self.se_block = SqueezeExcitationBlock(dim, config.enc_se_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.se_block(self.tdnn2(self.res2net_block(self.tdnn1(x)))) + x


def _weighted_stats(x: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and standard deviation over time of x (B, C, T) under weights (B, C|1, T)."""
    mean = (weights * x).sum(2)  # (B, C)
    variance = (weights * (x - mean[..., None]).pow(2)).sum(2)  # (B, C)
    return mean, torch.sqrt(variance.clamp(STATS_EPSILON))


class AttentiveStatisticsPooling(nn.Module):
    """Attention over time from [x, global mean, global std]; the attention-weighted mean and
    std of x, concatenated: (B, C, T) → (B, 2C, 1)."""

    def __init__(self, dim: int, attention_dim: int) -> None:
        super().__init__()
        self.tdnn = TimeDelayNetBlock(dim * 3, attention_dim, 1, 1)
        self.conv = _same_conv(attention_dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps = x.shape[-1]
        uniform = torch.full_like(x[:, :1], 1.0 / steps)  # (B, 1, T)
        mean, std = _weighted_stats(x, uniform)  # (B, C) each
        context = torch.cat(
            [x, mean[..., None].expand(-1, -1, steps), std[..., None].expand(-1, -1, steps)], 1
        )  # (B, 3C, T)
        attention = F.softmax(self.conv(torch.tanh(self.tdnn(context))), dim=2)  # (B, C, T)
        mean, std = _weighted_stats(x, attention)
        return torch.cat([mean, std], dim=1)[..., None]  # (B, 2C, 1)


class SpeakerEncoder(nn.Module):
    """ECAPA-TDNN: log mel (B, mel_dim, T) → x-vector (B, enc_dim); `embed` takes raw audio."""

    def __init__(self, config: SpeakerEncoderConfig) -> None:
        super().__init__()
        channels = config.enc_channels
        if not len(channels) == len(config.enc_kernel_sizes) == len(config.enc_dilations):
            raise ValueError("enc_channels, enc_kernel_sizes and enc_dilations differ in length")
        self.config = config
        self.front_end = MelFrontEnd()
        self.blocks = nn.ModuleList(
            [
                TimeDelayNetBlock(
                    config.mel_dim, channels[0], config.enc_kernel_sizes[0], config.enc_dilations[0]
                )
            ]
            + [SqueezeExcitationRes2NetBlock(config, i) for i in range(1, len(channels) - 1)]
        )
        self.mfa = TimeDelayNetBlock(  # over the SE-Res2Net outputs, concatenated
            channels[-1],
            channels[-1],
            config.enc_kernel_sizes[-1],
            config.enc_dilations[-1],
        )
        self.asp = AttentiveStatisticsPooling(channels[-1], config.enc_attention_channels)
        self.fc = _same_conv(channels[-1] * 2, config.enc_dim)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        h = mel
        outputs = []
        for block in self.blocks:
            h = block(h)  # (B, channels[i], T)
            outputs.append(h)
        h = self.mfa(torch.cat(outputs[1:], dim=1))  # multi-layer aggregation (B, C_last, T)
        return self.fc(self.asp(h))[..., 0]  # (B, enc_dim)

    def embed(self, audio: np.ndarray) -> np.ndarray:
        """The x-vector (enc_dim,) float32 of float32 mono audio at 24 kHz."""
        device = self.fc.weight.device
        with torch.inference_mode():
            wave = torch.as_tensor(np.asarray(audio, np.float32), device=device)[None]  # (1, n)
            return self(self.front_end(wave))[0].float().cpu().numpy()  # (enc_dim,)


def load_speaker_encoder(model_dir: Path, device: torch.device) -> SpeakerEncoder:
    """The speaker encoder of a Base snapshot (config.json's speaker_encoder_config, the
    `speaker_encoder.*` tensors of model.safetensors) on `device`, float32."""
    config_path = model_dir / "config.json"
    try:
        raw = json.loads(config_path.read_text(encoding="utf-8"))
        values = raw["speaker_encoder_config"]
        config = SpeakerEncoderConfig.from_dict(
            {"enc_dim": raw["talker_config"]["hidden_size"], **values}
        )
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise EngineError(
            f"{config_path} has no usable speaker_encoder_config ({err}); a Base model's "
            "config.json has one"
        ) from err
    if config.sample_rate != MEL_SAMPLE_RATE or config.mel_dim != MEL_BINS:
        raise EngineError(
            f"{config_path}: the speaker encoder must take {MEL_BINS} mel bins at "
            f"{MEL_SAMPLE_RATE} Hz (qwen-tts's front-end), not {config.mel_dim} at "
            f"{config.sample_rate}"
        )
    encoder = SpeakerEncoder(config)
    count = load_module_tensors(encoder, weight_files(model_dir), SPEAKER_PREFIX, "speaker encoder")
    _LOGGER.debug("%s: loaded %d speaker-encoder tensors", model_dir, count)
    return encoder.to(device).eval()
