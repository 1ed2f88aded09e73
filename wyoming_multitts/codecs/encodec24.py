"""EnCodec 24 kHz decoding (codes → audio) through the `encodec` package, with the weights Bark's
transformers checkpoint carries (`codec_model.*` of `suno/bark`'s `pytorch_model.bin`, the
`facebook/encodec_24khz` model in transformers naming).

Three things differ from `encodec.EncodecModel.encodec_model_24khz()`, none in the maths:
- the weights come from the Bark checkpoint already fetched (cache, offline mode), not from
  encodec's own download URL; `RENAMES` maps their names, every tensor checked;
- weight norm is folded into plain convolution weights once at load (g · v / ‖v‖), which is what
  the hooks would compute on every call;
- encodec 0.1.1's package `__init__` imports torchaudio (for audio file I/O in `utils.py`), which
  has no build for torch 2.13; the decoder and quantizer modules never use it, so without
  torchaudio the package is registered without running its `__init__` (`encodec_modules`).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from types import ModuleType
from typing import Any, Mapping

import torch
from torch import nn

from .folding import folded_weight

CODEC_PREFIX = "codec_model."
"""Prefix of the codec's tensors in Bark's checkpoint."""
SEANET_RENAMES = ((r"^model\.", "layers."), (r"\.conv\.conv\.|\.convtr\.convtr\.", ".conv."))
RENAMES = {
    "encoder": SEANET_RENAMES,
    "decoder": SEANET_RENAMES,
    "quantizer": ((r"^vq\.layers\.", "layers."), (r"\._codebook\.", ".codebook.")),
}
"""Per part, encodec package name → transformers `EncodecModel` name (after the part's prefix):
`decoder.model.3.convtr.convtr.weight` ← `decoder.layers.3.conv.weight`,
`quantizer.vq.layers.0._codebook.embed` ← `quantizer.layers.0.codebook.embed`."""
WEIGHT_NORM_PAIRS = (
    ("weight_g", "weight_v"),
    ("parametrizations.weight.original0", "parametrizations.weight.original1"),
)
"""A weight-normed `weight` is stored as (g, v): by the old torch API (Bark's 2023 checkpoints)
or by the parametrization API (newer transformers)."""
UNUSED_CODEBOOK_BUFFERS = ("inited", "cluster_size", "embed_avg")
"""Training state of each codebook: not needed to decode (and left out of the check)."""


class CodecError(ValueError):
    """The checkpoint's codec tensors do not fit the codec config."""


def encodec_modules() -> tuple[ModuleType, ModuleType]:
    """encodec's `modules` and `quantization` subpackages (see the module docstring for why the
    package may be registered without its `__init__`)."""
    if "encodec" not in sys.modules and importlib.util.find_spec("torchaudio") is None:
        spec = importlib.util.find_spec("encodec")
        if spec is None:
            raise ImportError("the encodec package is not installed (run script/setup)")
        sys.modules["encodec"] = importlib.util.module_from_spec(spec)  # __path__ only
    return importlib.import_module("encodec.modules"), importlib.import_module(
        "encodec.quantization"
    )


def checkpoint_name(part: str, name: str) -> str:
    """The name in Bark's checkpoint of tensor `name` of the encodec package's `part` module
    (`encoder`, `decoder`, `quantizer`)."""
    for pattern, replacement in RENAMES[part]:
        name = re.sub(pattern, replacement, name)
    return f"{CODEC_PREFIX}{part}.{name}"


def codec_state(part: str, module: nn.Module, state: Mapping[str, torch.Tensor]) -> dict:
    """`module`'s state dict (the codec's `part`: decoder or quantizer) taken from Bark's state
    dict, weight norm folded; raises `CodecError` naming a tensor missing, left over or of
    another shape."""
    found: dict[str, torch.Tensor] = {}
    used: set[str] = set()
    for name, wanted in module.state_dict().items():
        if name.endswith(UNUSED_CODEBOOK_BUFFERS):
            continue
        source = checkpoint_name(part, name)
        stem = source.removesuffix("weight")
        pairs = [(stem + g, stem + v) for g, v in WEIGHT_NORM_PAIRS if stem + g in state]
        if source in state:
            value, used = state[source], used | {source}
        elif source.endswith(".weight") and pairs:
            value = folded_weight(state[pairs[0][0]], state[pairs[0][1]])
            used |= set(pairs[0])
        else:
            raise CodecError(f"the checkpoint lacks the codec tensor {source}")
        if value.shape != wanted.shape:
            raise CodecError(
                f"codec tensor {source} has shape {tuple(value.shape)}; the codec config "
                f"needs {tuple(wanted.shape)}"
            )
        found[name] = value
    prefix = f"{CODEC_PREFIX}{part}."
    extra = sorted(
        name
        for name in state
        if name.startswith(prefix)
        and name not in used
        and not name.endswith(UNUSED_CODEBOOK_BUFFERS)
    )
    if extra:
        raise CodecError(f"codec tensors the codec config has no place for: {', '.join(extra[:5])}")
    return found


class Encodec24Decoder:
    """EnCodec's quantizer (codes → embeddings) and SEANet decoder (embeddings → audio)."""

    def __init__(
        self, config: Mapping[str, Any], state: Mapping[str, torch.Tensor], device: torch.device
    ) -> None:
        """`config`: config.json's `codec_config` (transformers `EncodecConfig`); `state`: the
        whole Bark state dict (only `codec_model.*` is read)."""
        modules, quantization = encodec_modules()
        self.sample_rate = int(config.get("sampling_rate", 24_000))
        ratios = [int(r) for r in config.get("upsampling_ratios", (8, 5, 4, 2))]
        dimension = int(config.get("hidden_size", 128))
        self.decoder = modules.SEANetDecoder(
            channels=int(config.get("audio_channels", 1)),
            dimension=dimension,
            n_filters=int(config.get("num_filters", 32)),
            n_residual_layers=int(config.get("num_residual_layers", 1)),
            ratios=ratios,
            norm="none",  # weight norm is folded in by `codec_state`
            kernel_size=int(config.get("kernel_size", 7)),
            last_kernel_size=int(config.get("last_kernel_size", 7)),
            residual_kernel_size=int(config.get("residual_kernel_size", 3)),
            dilation_base=int(config.get("dilation_growth_rate", 2)),
            causal=bool(config.get("use_causal_conv", True)),
            pad_mode=str(config.get("pad_mode", "reflect")),
            true_skip=not bool(config.get("use_conv_shortcut", True)),
            compress=int(config.get("compress", 2)),
            lstm=int(config.get("num_lstm_layers", 2)),
            trim_right_ratio=float(config.get("trim_right_ratio", 1.0)),
        )
        self.hop_length = int(self.decoder.hop_length)
        frame_rate = -(-self.sample_rate // self.hop_length)  # ceil: 75 Hz
        bandwidths = config.get("target_bandwidths", (1.5, 3.0, 6.0, 12.0, 24.0))
        n_q = int(1000 * float(bandwidths[-1]) // (frame_rate * 10))  # 32 (EncodecModel)
        self.quantizer = quantization.ResidualVectorQuantizer(
            dimension=dimension, n_q=n_q, bins=int(config.get("codebook_size", 1024))
        )
        for part, module in (("decoder", self.decoder), ("quantizer", self.quantizer)):
            # strict=False: the unused codebook buffers keep their initial values
            module.load_state_dict(codec_state(part, module, state), strict=False)
        self.decoder.to(device).eval()
        self.quantizer.to(device).eval()
        self.device = device

    @torch.inference_mode()
    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        """Audio (T · hop_length,) float32 of `codes` (n_codebooks, T) int64."""
        embeddings = self.quantizer.decode(codes.to(self.device)[:, None])  # (1, D, T)
        return self.decoder(embeddings)[0, 0].float()  # (T · hop,)
