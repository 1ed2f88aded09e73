"""SNAC decoding (`hubertsiuzdak/snac_24khz`) through the `snac` package, made fit for streaming.

Three changes to the stock model, none to its maths:
- weights load with `torch.load(weights_only=True)` (no arbitrary pickle code);
- weight norm is folded into the convolutions once (1.5x faster, same output; docs/engines.md,
  "Weight-norm folding");
- the decoder's noise blocks draw their noise from (seed, block, absolute frame) instead of
  `torch.randn`, so a window decodes exactly the samples a whole-utterance decode would and the
  same seed gives the same audio. With `noise=False` they add nothing.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import torch
from snac import SNAC
from snac.layers import DecoderBlock, NoiseBlock
from torch import nn

from .folding import fold_weight_norm

_LOGGER = logging.getLogger(__name__)

SNAC_FILES = ("config.json", "pytorch_model.bin")
"""What `SNAC.from_pretrained` reads from a model folder or repo."""


class _NoiseSource:
    """Noise as a pure function of (seed, noise block, frame): identical for any window."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.seed = 0
        self.first_frame = 0
        """Absolute index of the first frame of the window being decoded."""

    def noise(self, block: int, samples_per_frame: int, length: int) -> torch.Tensor:
        n_frames = length // samples_per_frame
        pieces = [
            np.random.default_rng([self.seed, block, self.first_frame + f]).standard_normal(
                samples_per_frame, dtype=np.float32
            )
            for f in range(n_frames)
        ]
        return torch.from_numpy(np.concatenate(pieces)).view(1, 1, length)  # (1, 1, T)


class _PositionalNoiseBlock(nn.Module):
    """snac's NoiseBlock (x + noise * conv1x1(x)) with positional noise."""

    def __init__(
        self, original: NoiseBlock, block: int, samples_per_frame: int, source: _NoiseSource
    ) -> None:
        super().__init__()
        self.linear = original.linear
        self._block = block
        self._samples_per_frame = samples_per_frame
        self._source = source

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self._source.enabled:
            return x
        _, _, length = x.shape  # x : (B, C, T)
        noise = self._source.noise(self._block, self._samples_per_frame, length).to(x)
        return x + noise * self.linear(x)


class SnacDecoder:
    """Decodes SNAC codes (3 levels, strides 4/2/1) to 24 kHz float audio, one window at a time."""

    def __init__(self, folder: Path, device: torch.device, noise: bool) -> None:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        model = SNAC(**config)
        state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
        model.load_state_dict(state)
        fold_weight_norm(model)

        self.sample_rate: int = int(config["sampling_rate"])
        # One frame = one level-0 code = vq_strides[0] latent steps of hop_length samples.
        self.samples_per_frame: int = int(model.hop_length) * int(model.vq_strides[0])
        self._noise = _NoiseSource(enabled=noise and bool(config.get("noise", True)))
        self._install_positional_noise(model)
        self._model = model.to(device).eval()
        self._device = device

    def _install_positional_noise(self, model: SNAC) -> None:
        """Swap each decoder block's NoiseBlock for one drawing positional noise."""
        latent_steps_per_frame = int(model.vq_strides[0])
        upsampled = 1  # samples per latent step after the blocks seen so far
        for index, block in enumerate(
            b for b in model.decoder.modules() if isinstance(b, DecoderBlock)
        ):
            layers = (
                block.block
            )  # Sequential: Snake, ConvTranspose (stride s), [NoiseBlock], 3 residual units
            upsampled *= next(m for m in layers if isinstance(m, nn.ConvTranspose1d)).stride[0]
            for name, layer in list(layers.named_children()):
                if isinstance(layer, NoiseBlock):
                    samples_per_frame = latent_steps_per_frame * upsampled
                    setattr(
                        layers,
                        name,
                        _PositionalNoiseBlock(layer, index, samples_per_frame, self._noise),
                    )

    def decode(self, levels: list[np.ndarray], first_frame: int, seed: int) -> np.ndarray:
        """Audio of codes `levels` ((F,), (2F,), (4F,) int64) whose first frame is `first_frame`."""
        self._noise.seed = seed
        self._noise.first_frame = first_frame
        codes = [torch.from_numpy(level).view(1, -1).to(self._device) for level in levels]
        with torch.inference_mode():
            audio = self._model.decode(codes)  # (1, 1, samples_per_frame * F)
        return audio[0, 0].float().cpu().numpy()
