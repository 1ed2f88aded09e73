"""Random-weight WavTokenizer decoders (OuteTTS 0.2/0.3's vocoder) as llama.cpp GGUFs.

Architecture `wavtokenizer-dec`: codebook → Conv1d k7 → PosNet (resnet, resnet, attention,
resnet, resnet, GroupNorm) → LayerNorm → ConvNeXt blocks → LayerNorm → a linear head giving one
spectrum frame (641 log-magnitudes + 641 phases) per code. Tensor names, shapes and metadata
follow llama.cpp's converter and loader (`conversion/wavtokenizer.py`,
`src/models/wavtokenizer-dec.cpp`, vendored in llama-cpp-python 0.3.36); docs/engines.md,
"WavTokenizer: GGUF layout" and "WavTokenizer: tiny GGUF and llama.cpp accuracy". Matrices are
F16 like the published `WavTokenizer-Large-75-F16.gguf`; norms, biases and layer scales F32, as
the converter keeps them.

Weights are scaled so that every layer sees roughly unit-variance input, norms and biases are
random too (a layout mistake changes the output, so the numeric oracle catches it), and the
head's log-magnitudes centre on `LOG_MAGNITUDE_MEAN`: the ISTFT then gives noise at a speech-like
level, far below the magnitude clip.

The encoder (making 0.2/0.3 speaker profiles) is written as outetts 0.4.4's `WavEncoder.
save_pretrained` writes it, an `encoder/` folder, with the codebook of a decoder GGUF. Its SEANet
has the real size whatever the decoder's (the package fixes it), and its codebook is 512 wide, so
it pairs with a decoder whose `n_features` is 512, not with `TINY_WAVTOKENIZER`.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch

from wyoming_multitts.codecs.encodec24 import encodec_modules
from wyoming_multitts.codecs.wavtokenizer_encoder import (
    CODEBOOK,
    DIMENSION,
    ENCODER_PREFIX,
    SAMPLE_RATE,
    SEANET_ARGS,
    WAVTOKENIZER_ENCODER_FILES,
    decoder_codebook,
)
from wyoming_multitts.formats import PARTIAL_SUFFIX
from wyoming_multitts.formats.gguf import GgufTensor, write_gguf

from .files import write_once

_LOGGER = logging.getLogger(__name__)

ARCH = "wavtokenizer-dec"
"""`general.architecture` of llama.cpp's WavTokenizer decoder."""

POSNET_LAYERS = 6
"""resnet, resnet, attention, resnet, resnet, norm: llama.cpp hard-codes this layout."""
POSNET_RESNETS = (0, 1, 3, 4)
POSNET_ATTENTION = 2
POSNET_NORM = 5
CONV_KERNEL = 7
"""Kernel of the input convolution and of the ConvNeXt depthwise convolutions."""
RESNET_KERNEL = 3
"""Kernel of the PosNet resnet convolutions."""

NORM_EPS = 1e-6
"""LayerNorm and GroupNorm epsilon of WavTokenizer (config.json `layer_norm_epsilon`)."""
CONTEXT_LENGTH = 8192
"""`context_length` the converter writes (config.json `max_position_embeddings`)."""

NORM_SCALE_STD = 0.1
"""Norm weights are 1 + N(0, this); biases N(0, this)."""
LAYER_SCALE_MEAN = 0.1
"""ConvNeXt `gamma` (layer scale) values centre here, keeping the residual stream bounded."""
HEAD_STD = 0.5
"""Standard deviation of each head output (log-magnitude and phase) around its mean."""
LOG_MAGNITUDE_MEAN = 1.0
"""Mean log-magnitude of the head (its bias): |X| ≈ e, about -25 dBFS of noise after the ISTFT,
and well under the clip at 100 (log 4.6)."""

TINY_FILE = "wavtokenizer-tiny.gguf"
FULL_FILE = "WavTokenizer-Large-75-random-F16.gguf"
SEED = 75


@dataclass(frozen=True)
class WavTokenizerShape:
    """The hyper-parameters of a WavTokenizer decoder, as llama.cpp reads them from GGUF."""

    n_codes: int
    """Codebook rows (`vocab_size`): code ids are 0 … n_codes-1."""
    n_features: int
    """Codebook width (`features_length`), the input convolution's channels."""
    n_embd: int
    """Channels C of PosNet and ConvNeXt (`posnet/convnext.embedding_length`)."""
    n_ff: int
    """Hidden size of the ConvNeXt feed-forward (`feed_forward_length`)."""
    n_convnext: int
    """ConvNeXt blocks."""
    n_groups: int
    """GroupNorm groups of PosNet; must divide n_embd."""
    n_embd_out: int
    """Head outputs per code (`embedding_length`): log-magnitudes then phases (1282 = 2 x 641)."""
    weight_type: gguf.GGMLQuantizationType = gguf.GGMLQuantizationType.F16
    """Storage of the matrices (convolutions, linears, codebook): F16 or F32."""

    def __post_init__(self) -> None:
        problems = []
        sizes = ("n_codes", "n_features", "n_embd", "n_ff", "n_convnext", "n_groups", "n_embd_out")
        problems += [f"{name} must be positive" for name in sizes if getattr(self, name) <= 0]
        if self.n_groups > 0 and self.n_embd % self.n_groups:
            problems.append(f"n_embd {self.n_embd} is not a multiple of n_groups {self.n_groups}")
        if self.n_embd_out % 2:
            problems.append(f"n_embd_out {self.n_embd_out} must be even (magnitudes + phases)")
        if self.weight_type not in _NUMPY_TYPES:
            problems.append(f"weight_type must be F16 or F32, not {self.weight_type.name}")
        if problems:
            raise ValueError(f"invalid WavTokenizerShape: {'; '.join(problems)}")

    @property
    def block_count(self) -> int:
        """`block_count`: llama.cpp asserts it covers both the PosNet and the ConvNeXt layers."""
        return max(POSNET_LAYERS, self.n_convnext)

    @property
    def n_params(self) -> int:
        """Number of parameters."""
        return sum(int(np.prod(tensor.shape)) for tensor in _tensor_plan(self))


_NUMPY_TYPES = {
    gguf.GGMLQuantizationType.F16: (np.float16, gguf.LlamaFileType.MOSTLY_F16),
    gguf.GGMLQuantizationType.F32: (np.float32, gguf.LlamaFileType.ALL_F32),
}

TINY_WAVTOKENIZER = WavTokenizerShape(
    n_codes=4096, n_features=16, n_embd=32, n_ff=48, n_convnext=2, n_groups=8, n_embd_out=1282
)
"""Every tensor kind at toy size; real code ids and the real 1282-wide spectrum frames, so the
real ISTFT applies. About 0.1 M params."""

FULL_WAVTOKENIZER = WavTokenizerShape(
    n_codes=4096,
    n_features=512,
    n_embd=768,
    n_ff=2304,
    n_convnext=12,
    n_groups=32,
    n_embd_out=1282,
)
"""WavTokenizer-large-speech-75token (`novateur/...`, OuteTTS 0.2/0.3): about 65 M params,
130 MB at F16 (docs/engines.md, "WavTokenizer: decoder architecture")."""


# ----------------------------------------------------------------------------------------------
# Tensors


@dataclass(frozen=True)
class _Tensor:
    name: str
    shape: tuple[int, ...]
    """torch order; GGUF stores it reversed (ne0 = the last axis)."""
    std: float
    mean: float = 0.0
    matrix: bool = False
    """A weight matrix or kernel (stored as `weight_type`); otherwise F32."""


def _tensor_plan(shape: WavTokenizerShape) -> list[_Tensor]:
    """Every tensor llama.cpp loads for `shape`, in the converter's order (docs/engines.md,
    "WavTokenizer: GGUF layout")."""
    channels, features, k = shape.n_embd, shape.n_features, CONV_KERNEL
    # posnet norms and biases, conv biases: [channels, 1] for ggml's broadcast over time
    column = (channels, 1)

    def scale(name: str, dims: tuple[int, ...]) -> _Tensor:
        return _Tensor(name, dims, NORM_SCALE_STD, mean=1.0)

    def shift(name: str, dims: tuple[int, ...]) -> _Tensor:
        return _Tensor(name, dims, NORM_SCALE_STD)

    def kernel(name: str, dims: tuple[int, ...], fan_in: int) -> _Tensor:
        return _Tensor(name, dims, 1.0 / np.sqrt(fan_in), matrix=True)

    plan = [
        _Tensor("token_embd.weight", (shape.n_codes, features), 1.0, matrix=True),
        kernel("conv1d.weight", (channels, features, k), features * k),
        shift("conv1d.bias", column),
    ]
    for i in range(POSNET_LAYERS):
        p = f"posnet.{i}."
        if i in POSNET_RESNETS:
            for n in ("1", "2"):
                plan += [
                    scale(p + f"norm{n}.weight", column),
                    shift(p + f"norm{n}.bias", column),
                    kernel(
                        p + f"conv{n}.weight",
                        (channels, channels, RESNET_KERNEL),
                        channels * RESNET_KERNEL,
                    ),
                    shift(p + f"conv{n}.bias", column),
                ]
        elif i == POSNET_ATTENTION:
            plan += [scale(p + "attn_norm.weight", column), shift(p + "attn_norm.bias", column)]
            for proj in ("attn_q", "attn_k", "attn_v", "attn_output"):
                plan += [
                    kernel(p + proj + ".weight", (channels, channels, 1), channels),
                    shift(p + proj + ".bias", column),
                ]
        else:  # POSNET_NORM; llama.cpp names it attn_norm too
            plan += [scale(p + "attn_norm.weight", column), shift(p + "attn_norm.bias", column)]
    plan += [
        scale("token_embd_norm.weight", (channels,)),
        shift("token_embd_norm.bias", (channels,)),
    ]
    for i in range(shape.n_convnext):
        p = f"convnext.{i}."
        plan += [
            kernel(p + "dw.weight", (channels, 1, k), k),
            shift(p + "dw.bias", column),
            scale(p + "norm.weight", (channels,)),
            shift(p + "norm.bias", (channels,)),
            kernel(p + "pw1.weight", (shape.n_ff, channels), channels),
            shift(p + "pw1.bias", (shape.n_ff,)),
            kernel(p + "pw2.weight", (channels, shape.n_ff), shape.n_ff),
            shift(p + "pw2.bias", (channels,)),
            _Tensor(
                p + "gamma.weight", (channels,), LAYER_SCALE_MEAN * NORM_SCALE_STD, LAYER_SCALE_MEAN
            ),
        ]
    plan += [
        scale("output_norm.weight", (channels,)),
        shift("output_norm.bias", (channels,)),
        _Tensor(
            "output.weight", (shape.n_embd_out, channels), HEAD_STD / np.sqrt(channels), matrix=True
        ),
        _Tensor("output.bias", (shape.n_embd_out,), HEAD_STD),  # + LOG_MAGNITUDE_MEAN, first half
    ]
    return plan


def _values(tensor: _Tensor, rng: np.random.Generator) -> np.ndarray:
    """The tensor's random values in torch order, float32."""
    values = rng.standard_normal(tensor.shape, dtype=np.float32) * np.float32(tensor.std)
    values += np.float32(tensor.mean)
    if tensor.name == "output.bias":
        values[: tensor.shape[0] // 2] += np.float32(LOG_MAGNITUDE_MEAN)  # log-magnitudes
    return values


# ----------------------------------------------------------------------------------------------
# Writing


def write_wavtokenizer(path: Path, shape: WavTokenizerShape, seed: int) -> None:
    """Write a random-weight WavTokenizer decoder GGUF to `path` (overwriting it).

    The same `seed` gives the same file. Tensors are made and written one at a time (the largest
    full-size one is 8 MB), so memory stays small. Callers that must never leave a half-written
    file behind write to `files.atomic_path(...)`.
    """
    start = time.monotonic()
    weight_dtype, file_type = _NUMPY_TYPES[shape.weight_type]
    plan = _tensor_plan(shape)

    # metadata (docs/engines.md, "WavTokenizer: GGUF layout") through gguf-py, then the tensors
    # in plan order
    def metadata(writer: gguf.GGUFWriter) -> None:
        writer.add_name(Path(path.name.removesuffix(PARTIAL_SUFFIX)).stem)
        writer.add_file_type(file_type)
        writer.add_context_length(CONTEXT_LENGTH)
        writer.add_embedding_length(shape.n_embd_out)
        writer.add_block_count(shape.block_count)
        writer.add_head_count(1)
        writer.add_layer_norm_eps(NORM_EPS)
        writer.add_vocab_size(shape.n_codes)
        writer.add_features_length(shape.n_features)
        writer.add_feed_forward_length(shape.n_ff)
        writer.add_group_norm_eps(NORM_EPS)
        writer.add_group_norm_groups(shape.n_groups)
        writer.add_posnet_embedding_length(shape.n_embd)
        writer.add_posnet_block_count(POSNET_LAYERS)
        writer.add_convnext_embedding_length(shape.n_embd)
        writer.add_convnext_block_count(shape.n_convnext)
        writer.add_causal_attention(False)
        writer.add_tokenizer_model("none")

    rng = np.random.default_rng(seed)

    def producer(tensor: _Tensor) -> Callable[[], np.ndarray]:
        return lambda: _values(tensor, rng)  # drawn in plan order: same seed, same file

    tensors = [
        GgufTensor(
            tensor.name,
            tensor.shape,
            weight_dtype if tensor.matrix else np.float32,
            producer(tensor),
        )
        for tensor in plan
    ]
    write_gguf(path, ARCH, metadata, tensors)
    size = path.stat().st_size
    _LOGGER.info(
        "Wrote %s: %s, %.1f M params, %d tensors, %.0f MB in %.1f s",
        path,
        ARCH,
        shape.n_params / 1e6,
        len(plan),
        size / 1e6,
        time.monotonic() - start,
    )


def write_tiny_wavtokenizer(directory: Path) -> Path:
    """`directory/wavtokenizer-tiny.gguf` (`TINY_WAVTOKENIZER`), written unless it exists."""
    return _write_once(directory / TINY_FILE, TINY_WAVTOKENIZER)


def write_full_wavtokenizer(directory: Path) -> Path:
    """`directory/WavTokenizer-Large-75-random-F16.gguf` (130 MB), written unless it exists."""
    return _write_once(directory / FULL_FILE, FULL_WAVTOKENIZER)


def _write_once(path: Path, shape: WavTokenizerShape) -> Path:
    return write_once(path, lambda partial: write_wavtokenizer(partial, shape, SEED))


# ----------------------------------------------------------------------------------------------
# The encoder

ENCODER_RATIOS = (8, 5, 4, 2)
"""`dowmsamples` of outetts' `WavEncoder._create_config`: 320 samples per code."""
ENCODER_CONFIG = {
    "feature_extractor_class": "decoder.feature_extractors.EncodecFeatures",
    "feature_extractor_config": {
        "encodec_model": "encodec_24khz",
        "bandwidths": [6.6, 6.6, 6.6, 6.6],
        "train_codebooks": True,
        "num_quantizers": 1,
        "dowmsamples": list(ENCODER_RATIOS),
        "vq_bins": 4096,
        "vq_kmeans": 200,
    },
}
"""outetts 0.4.4 `WavEncoder._create_config()`, the `config.json` it saves (`vq_bins` is set to
the decoder's code count)."""
CODEBOOK_PREFIX = CODEBOOK.removesuffix("embed")
"""`…_codebook.`: the codebook and its training buffers."""
UNUSED_PREFIX = "feature_extractor.encodec.decoder."
"""EnCodec's SEANet decoder: in the state dict (the package loads it strictly), never run."""

WEIGHT_G_STD = 0.1
"""Weight-norm magnitudes (the norm of each output channel's weights) are 1 + N(0, this):
unit-variance inputs give roughly unit-variance outputs."""
BIAS_STD = 0.1
"""Biases are N(0, this)."""
PROBE_LEVEL = 0.1
"""Standard deviation of the 1 s noise the encoder's output scale is set on (speech-like)."""
ENCODER_OUTPUT_STD = 1.0
"""The encoder's output scale on that noise, set through its last conv: the codebook entries
(`token_embd`) are N(0, 1), so frames pick many different codes."""

TINY_ENCODER_DIR = "wavtokenizer-encoder-tiny"
TINY_PAIRED_FILE = "wavtokenizer-tiny-512.gguf"
TINY_PAIRED_WAVTOKENIZER = replace(TINY_WAVTOKENIZER, n_features=DIMENSION)
"""`TINY_WAVTOKENIZER` with the encoder's 512-wide codebook: the decoder the tiny encoder pairs
with (the codebook adds 4 MB)."""


def _random_encoder(encoder: Any, generator: torch.Generator) -> dict:
    """Random tensors for a weight-normed SEANet encoder (`weight_g`, `weight_v`), loaded into it
    and returned. The first conv's gain makes speech-level input unit-variance; the last conv is
    shifted and scaled so that on noise each output channel has mean 0 and the whole output
    standard deviation `ENCODER_OUTPUT_STD` (frames then differ as much as codebook entries)."""
    state = {}
    for name, tensor in encoder.state_dict().items():
        noise = torch.randn(tensor.shape, generator=generator)
        if name.endswith("weight_g"):
            state[name] = 1.0 + WEIGHT_G_STD * noise
        elif name.endswith("weight_v"):
            state[name] = noise  # a direction: its scale does not matter
        elif "bias" in name:
            state[name] = BIAS_STD * noise
        else:  # LSTM weights (4·hidden, hidden)
            state[name] = noise / np.sqrt(tensor.shape[1])
    first, last = "model.0.conv.conv.", f"model.{len(encoder.model) - 1}.conv.conv."
    state[first + "weight_g"] /= PROBE_LEVEL
    encoder.load_state_dict(state)
    probe = PROBE_LEVEL * torch.randn((1, 1, SAMPLE_RATE), generator=generator)  # (1, 1, 1 s)
    with torch.inference_mode():
        output = encoder(probe)[0]  # (512, 75)
    mean = output.mean(dim=1)  # (512,)
    scale = ENCODER_OUTPUT_STD / float((output - mean[:, None]).std())
    state[last + "weight_g"] = state[last + "weight_g"] * scale
    state[last + "bias"] = (state[last + "bias"] - mean) * scale
    return state


def write_wavtokenizer_encoder(folder: Path, decoder: Path, seed: int) -> None:
    """Write a random WavTokenizer encoder snapshot into `folder` (created): the
    `WAVTOKENIZER_ENCODER_FILES` as `WavEncoder.save_pretrained` writes them, with the codebook of
    the decoder GGUF `decoder` (which must be 512 wide). The same `seed` gives the same files.

    The package loads the state dict strictly, so it holds EnCodec's unused SEANet decoder and
    the codebook's training buffers too; they are zeros stored as one value each (stride 0),
    which keeps the file at the encoder's 35 MB plus the codebook.
    """
    start = time.monotonic()
    codebook = torch.from_numpy(decoder_codebook(decoder))  # (bins, 512) float32
    if codebook.shape[1] != DIMENSION:
        raise ValueError(f"{decoder}: the codebook is {codebook.shape[1]} wide, not {DIMENSION}")
    modules, _ = encodec_modules()
    arguments = {**SEANET_ARGS, "ratios": list(ENCODER_RATIOS), "norm": "weight_norm"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # encodec uses torch's old weight_norm
        encoder = modules.SEANetEncoder(**arguments)
        with torch.device("meta"):  # names and shapes only
            unused = modules.SEANetDecoder(**arguments).state_dict()
    generator = torch.Generator().manual_seed(seed)
    state = {
        ENCODER_PREFIX + name: tensor
        for name, tensor in _random_encoder(encoder, generator).items()
    }
    zero = torch.zeros(())
    state.update({UNUSED_PREFIX + name: zero.expand(t.shape) for name, t in unused.items()})
    bins = codebook.shape[0]
    state.update(
        {
            CODEBOOK_PREFIX + "inited": torch.ones(1),  # True: no k-means on the first input
            CODEBOOK_PREFIX + "cluster_size": zero.expand(bins),
            CODEBOOK: codebook,
            CODEBOOK_PREFIX + "embed_avg": zero.expand(bins, DIMENSION),
        }
    )
    config_path, weights_path = (folder / name for name in WAVTOKENIZER_ENCODER_FILES)
    weights_path.parent.mkdir(parents=True)
    torch.save(state, weights_path)
    config = json.loads(json.dumps(ENCODER_CONFIG))  # a copy
    config["feature_extractor_config"]["vq_bins"] = bins
    config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    _LOGGER.info(
        "Wrote %s: WavTokenizer encoder, codebook of %s, %.0f MB in %.1f s",
        folder,
        decoder.name,
        weights_path.stat().st_size / 1e6,
        time.monotonic() - start,
    )


def write_tiny_wavtokenizer_encoder(directory: Path) -> tuple[Path, Path]:
    """`(decoder GGUF, encoder folder)`: `directory/wavtokenizer-tiny-512.gguf`
    (`TINY_PAIRED_WAVTOKENIZER`) and `directory/wavtokenizer-encoder-tiny/` with its codebook,
    each written unless it exists. About 4 MB and 43 MB."""
    decoder = _write_once(directory / TINY_PAIRED_FILE, TINY_PAIRED_WAVTOKENIZER)
    encoder = write_once(
        directory / TINY_ENCODER_DIR,
        lambda partial: write_wavtokenizer_encoder(partial, decoder, SEED),
    )
    return decoder, encoder
