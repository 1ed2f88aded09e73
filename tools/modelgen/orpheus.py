"""Random-weight Orpheus models: a Llama-3 GGUF with Orpheus' vocabulary, and a SNAC folder.

The vocabulary has the real size (156 940) and every special token at its real id, so prompts
built from ids, stop tokens and the audio-code arithmetic (`<custom_token_N>` = 128256 + N,
codes from 128266 on) behave exactly as with `canopylabs/orpheus-3b-0.1-ft`. Plain text maps
to byte tokens instead of the real BPE ids; nothing in the engine depends on those.
Layout and ids: docs/engines.md, "Orpheus: token layout" and "SNAC 24 kHz: config and decoder".
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from wyoming_multitts.formats.gguf import LmShape

from .files import CatalogEntries, atomic_path, write_once
from .gguf_lm import Vocab, byte_level_vocab, toy_size, write_lm_gguf, write_quantized_lm

_LOGGER = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# Vocabulary (Llama 3.2 + Orpheus custom tokens)

ORPHEUS_N_VOCAB = 156_940
"""Orpheus-3B-0.1-ft's vocabulary: Llama 3's 128 256 plus 28 684 `<custom_token_N>`."""

LLAMA3_FIRST_SPECIAL_ID = 128_000
"""Llama 3: ids below are ordinary BPE tokens, 128000-128255 are its special tokens."""

LLAMA3_SPECIAL_TOKENS = {
    128_000: "<|begin_of_text|>",
    128_001: "<|end_of_text|>",
    128_004: "<|finetune_right_pad_id|>",
    128_006: "<|start_header_id|>",
    128_007: "<|end_header_id|>",
    128_008: "<|eom_id|>",
    128_009: "<|eot_id|>",
    128_010: "<|python_tag|>",
}
"""Llama 3.1/3.2's named special tokens; the other ids up to 128255 are
`<|reserved_special_token_K|>`, numbered in id order from K = 0 (Llama-3.2 tokenizer.json)."""

CUSTOM_TOKEN_BASE_ID = 128_256
"""`<custom_token_N>` is id 128256 + N (Orpheus' added tokens; audio codes start at N = 10)."""

BOS_ID = 128_000
"""`<|begin_of_text|>`."""
EOS_ID = 128_009
"""`<|eot_id|>`, the GGUF's end-of-sequence token (llama.cpp also stops on 128001 and 128008)."""

PRE_TOKENIZER = "llama-bpe"
"""llama.cpp's name for the Llama 3 pre-tokenizer regex."""


def orpheus_special_tokens() -> dict[int, str]:
    """Every added token of the Orpheus vocabulary by id: Llama 3's, then the custom tokens."""
    special = dict(LLAMA3_SPECIAL_TOKENS)
    reserved = [i for i in range(LLAMA3_FIRST_SPECIAL_ID, CUSTOM_TOKEN_BASE_ID) if i not in special]
    special.update({i: f"<|reserved_special_token_{k}|>" for k, i in enumerate(reserved)})
    special.update(
        {
            i: f"<custom_token_{i - CUSTOM_TOKEN_BASE_ID}>"
            for i in range(CUSTOM_TOKEN_BASE_ID, ORPHEUS_N_VOCAB)
        }
    )
    return special


def orpheus_vocab() -> Vocab:
    """The Orpheus vocabulary: byte-level BPE, special tokens at the real ids, no automatic BOS.
    The custom tokens are user-defined: Orpheus added them as non-special tokens, and llama.cpp's
    converter writes those so (docs/engines.md, "Orpheus: text that spells a token")."""
    return byte_level_vocab(
        ORPHEUS_N_VOCAB,
        orpheus_special_tokens(),
        pre=PRE_TOKENIZER,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        user_defined=range(CUSTOM_TOKEN_BASE_ID, ORPHEUS_N_VOCAB),
    )


# ----------------------------------------------------------------------------------------------
# Shapes and codec configs

ORPHEUS_3B_SHAPE = LmShape(
    arch="llama",
    n_vocab=ORPHEUS_N_VOCAB,
    n_embd=3072,
    n_layer=28,
    n_head=24,
    n_head_kv=8,
    head_dim=128,
    n_ff=8192,
    rope_base=500_000.0,
    rms_eps=1e-5,
    tied_embeddings=False,  # Orpheus unties Llama-3.2-3B's head: 3.78 B params
    rope_freqs=True,
    n_ctx_train=131_072,
)
"""Orpheus-3B-0.1-ft (a Llama-3.2-3B-Instruct finetune); docs/engines.md,
"Orpheus: model shape"."""

ORPHEUS_TINY_SHAPE = toy_size(ORPHEUS_3B_SHAPE)
"""The same graph at toy size: every tensor kind of the 3B model, 20 M params (mostly the
156 940-row embedding and head), a 40 MB F16 file."""

SNAC_24KHZ_CONFIG: dict[str, Any] = {
    "sampling_rate": 24000,
    "encoder_dim": 48,
    "encoder_rates": [2, 4, 8, 8],
    "decoder_dim": 1024,
    "decoder_rates": [8, 8, 4, 2],
    "attn_window_size": None,
    "codebook_size": 4096,
    "codebook_dim": 8,
    "vq_strides": [4, 2, 1],
    "noise": True,
    "depthwise": True,
}
"""`hubertsiuzdak/snac_24khz/config.json` (19.8 M params; hop 512 samples); docs/engines.md,
"SNAC 24 kHz: config and decoder"."""

SNAC_TINY_CONFIG: dict[str, Any] = {
    **SNAC_24KHZ_CONFIG,
    "encoder_dim": 8,  # latent 8 * 2**4 = 128 channels instead of 768
    "decoder_dim": 32,  # must stay divisible by 16 (halved by each of the 4 decoder blocks)
}
"""SNAC 24 kHz at toy width: same rates, hop (512), codebooks and [4, 2, 1] code layout."""

# ----------------------------------------------------------------------------------------------
# Files and catalog entries

TINY_SEED = 1
TINY_MODEL = "orpheus-tiny"
TINY_GGUF = "orpheus-tiny.gguf"
TINY_SNAC = "snac-tiny"
TINY_MAX_TOKENS = 70
"""10 SNAC frames of 7 tokens: keeps a tiny-model request short."""
TINY_VOICES = {"tiny-tara": "tara", "tiny-leo": "leo"}

FULL_SEED = 3
FULL_MODEL = "orpheus-3b-random"
FULL_GGUF = "orpheus-3b-random-q4_k_m.gguf"
FULL_QUANT = "q4_k_m"
"""Like the community GGUF orpheus-cpp uses (`isaiahbjork/orpheus-3b-0.1-ft-Q4_K_M-GGUF`)."""
FULL_SNAC = "snac-24khz-random"
FULL_MAX_TOKENS = 2048
"""orpheus-cpp's default; ~25 s of audio at 82 tokens/s."""
FULL_VOICES = {"random-tara": "tara", "random-leo": "leo"}


def write_tiny(directory: Path) -> CatalogEntries:
    """Write `orpheus-tiny.gguf` and `snac-tiny/` into `directory`; return their catalog entries.

    Deterministic (fixed seeds) and quick: about 45 MB in a few seconds.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / TINY_GGUF) as partial:
        write_lm_gguf(partial, ORPHEUS_TINY_SHAPE, orpheus_vocab(), TINY_SEED, name=TINY_MODEL)
    with atomic_path(directory / TINY_SNAC) as partial:
        write_snac(partial, SNAC_TINY_CONFIG, TINY_SEED)
    return _entries(
        TINY_MODEL,
        "Tiny random Orpheus (tests)",
        TINY_GGUF,
        TINY_SNAC,
        TINY_MAX_TOKENS,
        {
            voice: (speaker, f"{speaker.title()} (tiny Orpheus)")
            for voice, speaker in TINY_VOICES.items()
        },
    )


def write_full_size(directory: Path, threads: int) -> CatalogEntries:
    """Build an Orpheus-3B-shaped Q4_K_M GGUF and a full SNAC 24 kHz folder; return catalog entries.

    Skips whatever already exists, so an interrupted build resumes where it stopped. Needs
    llama-cpp-python and, for a while, ~10 GB of disk in `directory`: the F16 model (7.6 GB) is
    written first (~20 s), quantized (2.36 GB; ~3 minutes on 2 cores) and then deleted.
    """
    directory.mkdir(parents=True, exist_ok=True)
    write_quantized_lm(
        directory / FULL_GGUF, ORPHEUS_3B_SHAPE, orpheus_vocab(), FULL_SEED, FULL_QUANT, threads
    )

    write_once(directory / FULL_SNAC, lambda p: write_snac(p, SNAC_24KHZ_CONFIG, FULL_SEED))

    return _entries(
        FULL_MODEL,
        "Random-weight Orpheus-3B, Q4_K_M (benchmarks: real speed, noise for audio)",
        FULL_GGUF,
        FULL_SNAC,
        FULL_MAX_TOKENS,
        {
            voice: (speaker, f"{speaker.title()} (random Orpheus-3B)")
            for voice, speaker in FULL_VOICES.items()
        },
    )


def write_snac(directory: Path, config: dict[str, Any], seed: int) -> None:
    """Write a randomly initialised SNAC model as `config.json` + `pytorch_model.bin`.

    The layout of `hubertsiuzdak/snac_24khz`, which `snac.SNAC.from_pretrained(directory)`
    reads: the constructor's keyword arguments as JSON and `torch.save(model.state_dict())`.
    """
    import torch  # pylint: disable=import-outside-toplevel  # heavy; only the codec needs it
    from snac import SNAC  # pylint: disable=import-outside-toplevel

    start = time.monotonic()
    with torch.random.fork_rng(devices=[]):  # leave the caller's torch RNG as it was
        torch.manual_seed(seed)
        model = SNAC(**config)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    torch.save(model.state_dict(), directory / "pytorch_model.bin")
    n_params = sum(p.numel() for p in model.parameters())
    _LOGGER.info(
        "Wrote SNAC %s: %.1f M params in %.1f s",
        directory,
        n_params / 1e6,
        time.monotonic() - start,
    )


def _entries(
    model: str,
    description: str,
    gguf_file: str,
    snac_dir: str,
    max_tokens: int,
    voices: dict[str, tuple[str, str]],
) -> CatalogEntries:
    """Catalog entries for one Orpheus model; `voices` maps voice name to (speaker, description)."""
    models = {
        model: {
            "engine": "orpheus",
            "description": description,
            "files": {"model": {"path": gguf_file}, "codec": {"path": snac_dir}},
            "device": "cpu",
            "options": {"max_tokens": max_tokens},
        }
    }
    voice_entries = {
        voice: {"model": model, "speaker": speaker, "languages": ["en"], "description": text}
        for voice, (speaker, text) in voices.items()
    }
    return models, voice_entries
