"""WavTokenizer encoding (24 kHz audio → one code per 320 samples), to make an OuteTTS 0.2/0.3
speaker profile from a user's recording; llama.cpp's GGUF holds only the decoder.

outetts 0.4.4 `wav_tokenizer/model.py` `WavEncoder` runs EnCodec's SEANet encoder, then picks
for each frame the nearest entry of one 4096 × 512 codebook (`quantizer.infer` with n_q = 1, by
Euclidean distance). The encodec package has the same SEANet (WavTokenizer vendors it), so this
is that module with the weights of OuteAI's `encoder/encoder_model.pt`: weight norm folded once
at load (docs/engines.md, "Weight-norm folding") and the distances computed as the package does.
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path
from typing import Mapping

import numpy as np
import torch
from torch import nn

from ..errors import ConvertError
from ..formats import read_json_object
from ..formats.safetensors import DOWNLOAD_AGAIN
from .dac_checkpoint import folded_state
from .encodec24 import encodec_modules

WAVTOKENIZER_ENCODER_REPO = "OuteAI/wavtokenizer-large-75token-interface"
"""Where outetts 0.4.4 downloads the encoder from (`wav_tokenizer/audio_codec.py`)."""
WAVTOKENIZER_ENCODER_FILES = ("encoder/config.json", "encoder/encoder_model.pt")
"""The files of that repo the encoder needs (its `decoder/` is llama.cpp's GGUF for us)."""

SAMPLE_RATE = 24_000
"""Input rate in Hz."""
HOP = 320
"""Samples per code: 75 codes a second, as the decoder (`codecs/wavtokenizer.py`) expects."""
FEATURE_EXTRACTOR = "EncodecFeatures"
"""The config's `feature_extractor_class` ends with this (`decoder.feature_extractors.…`)."""
ENCODEC_MODEL = "encodec_24khz"
"""The config's `encodec_model`: the only one `EncodecFeatures` builds."""
DEFAULT_RATIOS = (6, 5, 5, 4)
"""`EncodecFeatures`' `dowmsamples` default, used where the config gives none."""
DIMENSION = 512
"""Width of the encoder's output and of the codebook entries."""
SEANET_ARGS: Mapping[str, object] = {
    "causal": False,
    "n_residual_layers": 1,
    "pad_mode": "reflect",
    "lstm": 2,
    "dimension": DIMENSION,
    "channels": 1,
    "n_filters": 32,
    "activation": "ELU",
    "kernel_size": 7,
    "residual_kernel_size": 3,
    "last_kernel_size": 7,
    "dilation_base": 2,
    "true_skip": False,
    "compress": 2,
}
"""`EncodecFeatures`' SEANetEncoder arguments, fixed in its code (norm and ratios aside)."""
ENCODER_PREFIX = "feature_extractor.encodec.encoder."
"""The SEANet encoder's tensors in `encoder_model.pt` (the `WavEncoder` state dict)."""
CODEBOOK = "feature_extractor.encodec.quantizer.vq.layers.0._codebook.embed"
"""The codebook (bins × 512); `infer` uses only the first quantizer."""
DECODER_CODEBOOK = "token_embd.weight"
"""The same codebook in the decoder GGUF (docs/engines.md, "WavTokenizer: GGUF layout")."""
CODEBOOK_TOLERANCE = 0.01
"""Largest |encoder − decoder| codebook difference accepted, as a fraction of the largest |entry|:
F16 storage errs by 2^-11 of it, Q8_0 by about 0.4 %, another training run's codebook by ~100 %."""


class WavTokenizerEncoder(nn.Module):
    """Audio (S,) at 24 kHz → codes (ceil(S / 320),), by a SEANet encoder and a codebook."""

    codebook: torch.Tensor
    """(bins, 512) float32: code c stands for row c."""

    def __init__(self, ratios: tuple[int, ...], bins: int, path: Path) -> None:
        super().__init__()
        modules, _ = encodec_modules()
        self.encoder = modules.SEANetEncoder(ratios=list(ratios), norm="none", **SEANET_ARGS)
        self.register_buffer("codebook", torch.zeros(bins, DIMENSION))
        self.path = path
        """The weights file, for messages."""

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        """Audio (1, 1, S) → codes (T,) int64, T = ceil(S / 320)."""
        embeddings = self.encoder(audio)  # (1, 512, T)
        x = embeddings.permute(0, 2, 1).reshape(-1, embeddings.shape[1])  # (T, 512), as einops
        embed = self.codebook.t()  # (512, bins)
        # outetts 0.4.4 wav_tokenizer/encoder/quantization/core_vq.py EuclideanCodebook.quantize
        # takes the largest -(‖x‖² - 2x·e + ‖e‖²): the same float32 ops
        distances = (
            x.pow(2).sum(1, keepdim=True) - 2 * x @ embed + embed.pow(2).sum(0, keepdim=True)
        )
        return distances.argmin(dim=-1)  # (T,)

    def encode(self, audio24: np.ndarray) -> np.ndarray:
        """Codes (ceil(S / 320),) int64 of mono float audio (S,) at 24 kHz, encoded whole."""
        if audio24.ndim != 1 or audio24.dtype.kind != "f" or audio24.size == 0:
            raise ValueError(f"audio must be non-empty mono float samples, got {audio24.shape}")
        batch = torch.as_tensor(audio24, dtype=torch.float32, device=self.codebook.device)
        with torch.inference_mode():
            return self(batch[None, None]).cpu().numpy()  # (T,)


def load_wavtokenizer_encoder(folder: Path, device: torch.device) -> WavTokenizerEncoder:
    """The encoder of a `OuteAI/wavtokenizer-large-75token-interface` snapshot `folder` (its
    `WAVTOKENIZER_ENCODER_FILES`) on `device`; ConvertError naming the file when a file, tensor
    or setting does not fit."""
    config_path, weights_path = (folder / name for name in WAVTOKENIZER_ENCODER_FILES)
    config = read_json_object(config_path, DOWNLOAD_AGAIN)
    features = config.get("feature_extractor_config")
    if not str(config.get("feature_extractor_class")).endswith(FEATURE_EXTRACTOR) or not (
        isinstance(features, dict) and features.get("encodec_model") == ENCODEC_MODEL
    ):
        raise ConvertError(f"{config_path} does not describe WavTokenizer's 24 kHz encoder")
    ratios = tuple(int(r) for r in features.get("dowmsamples", DEFAULT_RATIOS))
    if math.prod(ratios) != HOP:
        raise ConvertError(
            f"{config_path}: downsampling {ratios} gives {math.prod(ratios)} samples per code; "
            f"OuteTTS 0.2/0.3 need {HOP} (75 codes a second)"
        )
    try:
        state = torch.load(weights_path, map_location="cpu", weights_only=True, mmap=True)
    except (pickle.UnpicklingError, RuntimeError, OSError, EOFError, ValueError) as err:
        raise ConvertError(f"cannot read {weights_path} ({err}); {DOWNLOAD_AGAIN}") from err
    if not isinstance(state, dict) or CODEBOOK not in state:
        raise ConvertError(f"{weights_path} has no {CODEBOOK}: not a WavTokenizer encoder")
    encoder = WavTokenizerEncoder(ratios, state[CODEBOOK].shape[0], weights_path)
    tensors = {
        name.removeprefix(ENCODER_PREFIX): tensor
        for name, tensor in state.items()
        if name.startswith(ENCODER_PREFIX)
    }
    try:
        encoder.codebook.copy_(state[CODEBOOK])
        encoder.encoder.load_state_dict(folded_state(tensors, weights_path))
    except RuntimeError as err:  # torch names the missing, unexpected or misshapen tensors
        raise ConvertError(f"{weights_path} does not hold WavTokenizer's encoder: {err}") from err
    return encoder.to(device).eval()


def decoder_codebook(decoder_gguf: Path) -> np.ndarray:
    """The codebook (bins, width) float32 of a WavTokenizer decoder GGUF."""
    import gguf  # pylint: disable=import-outside-toplevel  # only this reads GGUF tensors

    try:
        tensors = {tensor.name: tensor for tensor in gguf.GGUFReader(decoder_gguf).tensors}
    except (OSError, ValueError) as err:
        raise ConvertError(f"cannot read {decoder_gguf} ({err}); {DOWNLOAD_AGAIN}") from err
    if DECODER_CODEBOOK not in tensors:
        raise ConvertError(f"{decoder_gguf} has no {DECODER_CODEBOOK}: not a WavTokenizer GGUF")
    tensor = tensors[DECODER_CODEBOOK]
    return gguf.quants.dequantize(tensor.data, tensor.tensor_type)  # (bins, width) float32


def check_codebook(encoder: WavTokenizerEncoder, decoder_gguf: Path) -> None:
    """ConvertError naming both files unless the decoder GGUF's codebook is the encoder's: codes
    from another encoder would decode as the wrong sounds."""
    decoder = decoder_codebook(decoder_gguf)  # (bins, 512) float32
    ours = encoder.codebook.cpu().numpy()  # (bins, 512) float32
    if decoder.shape != ours.shape:
        raise ConvertError(
            f"the codebook of {decoder_gguf} is {decoder.shape[0]} × {decoder.shape[1]}, that of "
            f"{encoder.path} {ours.shape[0]} × {ours.shape[1]}: they are not one WavTokenizer"
        )
    difference, largest = float(np.abs(decoder - ours).max()), float(np.abs(ours).max())
    if difference > CODEBOOK_TOLERANCE * largest:
        raise ConvertError(
            f"the codebooks of {decoder_gguf} and {encoder.path} differ (by up to "
            f"{difference:.3g}, entries up to {largest:.3g}): codes from this encoder would decode "
            "wrongly; use the encoder and the vocoder of one WavTokenizer"
        )
