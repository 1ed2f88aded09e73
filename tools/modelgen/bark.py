"""Random-weight Bark in the layout of the transformers release (`suno/bark-small`): config.json,
pytorch_model.bin (the three stages and the EnCodec codec, transformers tensor names, causal-mask
buffers included), a WordPiece vocab.txt, and the v2 presets (`speaker_embeddings_path.json` and
one `.npy` per preset array).

Stages keep the real vocabulary sizes and block size (Bark's token ids are hard-wired:
docs/engines.md, "Bark: tiny test model"); the tiny model shrinks layers, heads, width and the
codec's channels. Its catalog entry caps the semantic stage at TINY_SEMANTIC_TOKENS, so a test
request takes a fraction of a second.
"""

from __future__ import annotations

import json
import logging
import string
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from wyoming_multitts.codecs.encodec24 import checkpoint_name, encodec_modules
from wyoming_multitts.engines.bark import checkpoint as bark_checkpoint
from wyoming_multitts.engines.bark import presets
from wyoming_multitts.engines.bark.gpt import CausalGPT, FineGPT, GPTConfig

from .files import CatalogEntries, atomic_path, write_once

_LOGGER = logging.getLogger(__name__)

SEMANTIC_INPUT_VOCAB = 129_600
"""Text ids (BERT id + 10048) and the special ids up to SEMANTIC_INFER_TOKEN."""
SEMANTIC_OUTPUT_VOCAB = 10_048
COARSE_VOCAB = 12_096
FINE_VOCAB = 1_056
BLOCK_SIZE = 1024
INIT_STD = 0.02
"""Normal init of linear and embedding weights (transformers `initializer_range`)."""
CODEC_QUANTIZERS = 32
"""EnCodec 24 kHz has 32 codebooks (24 kbit/s); Bark uses the first 8."""
PRESET_SEMANTIC_TOKENS = 40
"""Tokens of each random preset (real ones: 192..697); its frames are 1.5 times as many."""
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
TINY_WORDS = ("hello", "there", "the", "weather", "is", "fine", "today")
"""Whole words of the tiny vocabulary; every other ASCII word is spelled letter by letter."""


@dataclass(frozen=True)
class BarkShape:
    """Sizes of a random Bark."""

    layers: int
    heads: int
    width: int
    codec_filters: int
    """EnCodec `num_filters` (32 in the release)."""
    codec_width: int
    """EnCodec `hidden_size`, the codebook dimension (128 in the release)."""


TINY_SHAPE = BarkShape(layers=2, heads=2, width=16, codec_filters=4, codec_width=16)
SMALL_SHAPE = BarkShape(layers=12, heads=12, width=768, codec_filters=32, codec_width=128)
"""bark-small: 12 layers, 12 heads, 768 wide per stage; the release's EnCodec."""


def stage_config(shape: BarkShape, input_vocab: int, output_vocab: int) -> dict[str, Any]:
    """A stage's sub-config, as transformers' `BarkSemanticConfig` & co. write it."""
    return {
        "block_size": BLOCK_SIZE,
        "input_vocab_size": input_vocab,
        "output_vocab_size": output_vocab,
        "num_layers": shape.layers,
        "num_heads": shape.heads,
        "hidden_size": shape.width,
        "dropout": 0.0,
        "bias": False,
        "initializer_range": INIT_STD,
        "use_cache": True,
    }


def model_config(shape: BarkShape) -> dict[str, Any]:
    """config.json of a `BarkModel`."""
    return {
        "architectures": ["BarkModel"],
        "model_type": "bark",
        "initializer_range": INIT_STD,
        "torch_dtype": "float32",
        "semantic_config": {
            **stage_config(shape, SEMANTIC_INPUT_VOCAB, SEMANTIC_OUTPUT_VOCAB),
            "model_type": "semantic",
        },
        "coarse_acoustics_config": {
            **stage_config(shape, COARSE_VOCAB, COARSE_VOCAB),
            "model_type": "coarse_acoustics",
        },
        "fine_acoustics_config": {
            **stage_config(shape, FINE_VOCAB, FINE_VOCAB),
            "model_type": "fine_acoustics",
            "n_codes_total": presets.N_FINE_CODEBOOKS,
            "n_codes_given": 1,
        },
        "codec_config": {
            "model_type": "encodec",
            "target_bandwidths": [1.5, 3.0, 6.0, 12.0, 24.0],
            "sampling_rate": presets.SAMPLE_RATE,
            "audio_channels": 1,
            "normalize": False,
            "hidden_size": shape.codec_width,
            "num_filters": shape.codec_filters,
            "num_residual_layers": 1,
            "upsampling_ratios": [8, 5, 4, 2],
            "norm_type": "weight_norm",
            "kernel_size": 7,
            "last_kernel_size": 7,
            "residual_kernel_size": 3,
            "dilation_growth_rate": 2,
            "use_causal_conv": True,
            "pad_mode": "reflect",
            "compress": 2,
            "num_lstm_layers": 2,
            "trim_right_ratio": 1.0,
            "codebook_size": presets.CODEBOOK_SIZE,
            "codebook_dim": shape.codec_width,
            "use_conv_shortcut": True,
        },
    }


def _random_stage(module: CausalGPT | FineGPT, prefix: str, generator: torch.Generator) -> dict:
    """Random tensors for every parameter of `module` (built on the meta device), named as in
    the checkpoint; LayerNorms get ones, biases zeros, the rest N(0, INIT_STD)."""
    state: dict[str, torch.Tensor] = {}
    for name, param in module.state_dict(keep_vars=True).items():
        if "layernorm" in name and name.endswith(".weight"):
            value = torch.ones(param.shape)
        elif name.endswith(".bias"):
            value = torch.zeros(param.shape)
        else:
            value = torch.randn(param.shape, generator=generator) * INIT_STD
        state[prefix + name] = value
    if isinstance(module, FineGPT):  # tied heads: the same tensor as the embeddings
        for index in range(len(module.lm_heads)):
            state[f"{prefix}lm_heads.{index}.weight"] = state[
                f"{prefix}input_embeds_layers.{index + 1}.weight"
            ]
    else:  # transformers keeps each causal layer's mask as a (saved) buffer
        mask = torch.tril(torch.ones(BLOCK_SIZE, BLOCK_SIZE, dtype=torch.bool))[None, None]
        for index in range(len(module.layers)):
            state[f"{prefix}layers.{index}{bark_checkpoint.CAUSAL_MASK_SUFFIX}"] = mask
    return state


def _random_codec(config: dict[str, Any], generator: torch.Generator) -> dict:
    """Random EnCodec tensors in transformers naming: encoder and decoder built by the encodec
    package (weight-normed, its own init), codebooks drawn here."""
    modules, _ = encodec_modules()
    arguments = {
        "dimension": config["hidden_size"],
        "n_filters": config["num_filters"],
        "causal": config["use_causal_conv"],
    }
    state: dict[str, torch.Tensor] = {}
    with torch.random.fork_rng(), warnings.catch_warnings():
        torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=generator)))
        warnings.simplefilter("ignore", FutureWarning)  # encodec uses torch's old weight_norm
        for part, module in (
            ("encoder", modules.SEANetEncoder(**arguments)),
            ("decoder", modules.SEANetDecoder(**arguments)),
        ):
            for name, value in module.state_dict().items():
                state[checkpoint_name(part, name)] = value.detach().clone()
    shape = (presets.CODEBOOK_SIZE, config["codebook_dim"])
    for index in range(CODEC_QUANTIZERS):
        embed = torch.randn(shape, generator=generator)
        codebook = {
            "inited": torch.ones(1),
            "cluster_size": torch.ones(presets.CODEBOOK_SIZE),
            "embed": embed,
            "embed_avg": embed.clone(),
        }
        for name, value in codebook.items():
            state[checkpoint_name("quantizer", f"vq.layers.{index}._codebook.{name}")] = value
    return state


def write_weights(path: Path, config: dict[str, Any], seed: int) -> int:
    """pytorch_model.bin of random weights for `config`; returns its size in bytes."""
    generator = torch.Generator().manual_seed(seed)
    state: dict[str, torch.Tensor] = {}
    for stage, prefix in bark_checkpoint.STAGE_PREFIXES.items():
        gpt_config = GPTConfig.from_json(config[bark_checkpoint.STAGE_CONFIGS[stage]])
        with torch.device("meta"):
            module = FineGPT(gpt_config) if stage == "fine" else CausalGPT(gpt_config)
        state.update(_random_stage(module, prefix, generator))
    state.update(_random_codec(config["codec_config"], generator))
    torch.save(state, path)
    return path.stat().st_size


def tiny_vocab() -> list[str]:
    """A WordPiece vocabulary: special tokens, a few words, every ASCII letter, digit and mark
    alone and as a continuation (`##e`)."""
    characters = string.ascii_letters + string.digits + string.punctuation
    return [*SPECIAL_TOKENS, *TINY_WORDS, *characters, *(f"##{c}" for c in characters)]


def write_presets(directory: Path, seed: int) -> None:
    """The v2 presets (random tokens of the real shapes) and their index, as in the release."""
    rng = np.random.default_rng(seed)
    folder = directory / "speaker_embeddings" / presets.PRESET_VERSION
    folder.mkdir(parents=True, exist_ok=True)
    frames = PRESET_SEMANTIC_TOKENS * 3 // 2
    index: dict[str, Any] = {"repo_or_path": "."}
    for speaker in presets.PRESET_SPEAKERS:
        arrays: dict[str, np.ndarray] = {
            "semantic_prompt": rng.integers(0, presets.SEMANTIC_VOCAB_SIZE, PRESET_SEMANTIC_TOKENS),
            "coarse_prompt": rng.integers(0, presets.CODEBOOK_SIZE, (2, frames)),
            "fine_prompt": rng.integers(0, presets.CODEBOOK_SIZE, (8, frames)).astype(np.int32),
        }
        entry = {}
        for kind, values in arrays.items():
            relative = f"speaker_embeddings/{presets.PRESET_VERSION}{speaker}_{kind}.npy"
            np.save(directory / relative, values)
            entry[kind] = relative
        index[presets.PRESET_VERSION + speaker] = entry
    _write_json(directory / presets.PRESET_INDEX, index)


def write_bark(directory: Path, shape: BarkShape, seed: int) -> int:
    """A complete random release folder of `shape`; returns the weights' size in bytes."""
    start = time.monotonic()
    directory.mkdir(parents=True, exist_ok=True)
    config = model_config(shape)
    _write_json(directory / "config.json", config)
    (directory / "vocab.txt").write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    write_presets(directory, seed)
    size = write_weights(directory / "pytorch_model.bin", config, seed)
    _LOGGER.info(
        "Wrote Bark %s: %.2f GB in %.1f s", directory, size / 1e9, time.monotonic() - start
    )
    return size


def _write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------------------------
# Files and catalog entries

TINY_SEED = 5
TINY_MODEL = "bark-tiny"
TINY_DIR = "bark-tiny"
TINY_SEMANTIC_TOKENS = 16
"""16 semantic tokens → 24 frames → 0.32 s of audio: a tiny-model request stays short."""
TINY_VOICES = {"tiny-bark-en": ("en_speaker_6", "en"), "tiny-bark-de": ("de_speaker_3", "de")}

FULL_SEED = 7
FULL_MODEL = "bark-small-random"
FULL_DIR = "bark-small-random"
FULL_SEMANTIC_TOKENS = 256
"""≈ 5 s of audio per sentence: random weights never end a sentence themselves."""
FULL_VOICES = {"random-bark-en": ("en_speaker_6", "en")}


def write_tiny(directory: Path) -> CatalogEntries:
    """Write the tiny Bark folder into `directory`; return its catalog entries (~20 MB, in a
    few seconds)."""
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / TINY_DIR) as partial:
        write_bark(partial, TINY_SHAPE, TINY_SEED)
    return _entries(
        TINY_MODEL,
        "Tiny random Bark (tests)",
        TINY_DIR,
        TINY_SEMANTIC_TOKENS,
        TINY_VOICES,
        "tiny Bark",
    )


def write_full_size(directory: Path, threads: int) -> CatalogEntries:
    """Write a bark-small-shaped folder (1.7 GB; needs about twice that in memory while it is
    written); keeps an existing one. `threads` is unused: nothing is quantized."""
    del threads
    write_once(directory / FULL_DIR, lambda partial: write_bark(partial, SMALL_SHAPE, FULL_SEED))
    return _entries(
        FULL_MODEL,
        "Random-weight bark-small (benchmarks: real speed, noise for audio)",
        FULL_DIR,
        FULL_SEMANTIC_TOKENS,
        FULL_VOICES,
        "random bark-small",
    )


def _entries(
    model: str, description: str, folder: str, semantic_tokens: int, voices: dict, label: str
) -> CatalogEntries:
    """Catalog entries for one folder; `voices`: name → (speaker, language); `label` ends each
    voice's description."""
    models = {
        model: {
            "engine": "bark",
            "description": description,
            "files": {"model": {"path": folder}, "presets": {"path": folder}},
            "device": "cpu",
            "options": {"max_semantic_tokens": semantic_tokens},
        }
    }
    voice_entries = {
        voice: {
            "model": model,
            "speaker": speaker,
            "languages": [language],
            "description": f"{speaker} ({label})",
        }
        for voice, (speaker, language) in voices.items()
    }
    return models, voice_entries
