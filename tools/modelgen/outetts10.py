"""Random-weight OuteTTS 1.0 language models: Llama GGUFs with the 1.0 vocabulary by name.

`OuteAI/Llama-OuteTTS-1.0-1B-GGUF` is Llama-3.2-1B with OuteTTS's tokens added after Llama 3's
128 256. What is known: the token strings (outetts 0.4.4 `version/v3/tokens.py`; codes
`<|c1_0|>`..`<|c1_1024|>` and `<|c2_0|>`..`<|c2_1024|>`, since its prompt processor maps
range(1025); features 0..100, `version/v3/audio_processor.py`), and that `<|c1_0|>` is 128256 and
`<|c2_0|>` 129281 in the real 1B GGUF, i.e. the two codebooks come first (as llama.rn reads them
from the real file; reported there, not checked here). Inferred: the order of the other added
tokens (here `version/v3/tokens.py`'s `SpecialTokens` order, each `{}` family expanded in
place: `<|im_start|>`, `<|im_end|>`, the text, voice, emotion and audio markers, the durations
`<|t_0.00|>`..`<|t_10.00|>` (their real count is not published), `<|code|>`, the three feature
families, the word and global-feature markers) and the vocabulary's size (ours ends at the last
OuteTTS token). The engine reads every id by name, so none of this can leak into it. Plain text
maps to byte tokens instead of the real BPE ids. The codec (DAC, `dac.py`) and the catalog
entries are written by `outetts.py`, with those of 0.2/0.3. The 0.6B (Qwen3) release has the
same tokens on Qwen3's vocabulary.
"""

from __future__ import annotations

import logging
from pathlib import Path

from wyoming_multitts.engines.outetts.speakers10 import FEATURE_MAX, FEATURE_NAMES
from wyoming_multitts.formats.gguf import LmShape

from .files import atomic_path
from .gguf_lm import Vocab, byte_level_vocab, toy_size, write_lm_gguf, write_quantized_lm
from .orpheus import BOS_ID, CUSTOM_TOKEN_BASE_ID, PRE_TOKENIZER, orpheus_special_tokens

_LOGGER = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# Vocabulary (Llama 3.2 + OuteTTS 1.0 tokens)

LLAMA3_N_VOCAB = CUSTOM_TOKEN_BASE_ID
"""128 256: Llama 3's vocabulary, its special tokens included; OuteTTS's tokens follow."""

N_CODE_TOKENS = 1025
"""`<|c1_0|>`..`<|c1_1024|>` per codebook (the DAC codebook is 0..1023)."""

N_DURATION_TOKENS = 1001
"""`<|t_0.00|>`..`<|t_10.00|>` in 0.01 s steps (inferred: it only has to cover the durations of
speaker profiles, at most `speakers10.MAX_WORD_SECONDS`)."""

EOS_TOKEN = "<|im_end|>"
"""The GGUF's end of sequence: where a 1.0 reply ends (inferred; llama.cpp also stops on Llama's
own end tokens)."""


def _durations() -> list[str]:
    return [f"<|t_{n // 100}.{n % 100:02d}|>" for n in range(N_DURATION_TOKENS)]


def outetts10_tokens() -> list[str]:
    """OuteTTS 1.0's added tokens in id order from 128256 (module docstring: what is inferred)."""
    features = [f"<|{name}_{v}|>" for name in FEATURE_NAMES for v in range(FEATURE_MAX + 1)]
    return [
        *(f"<|c1_{code}|>" for code in range(N_CODE_TOKENS)),  # 128256
        *(f"<|c2_{code}|>" for code in range(N_CODE_TOKENS)),  # 129281
        "<|im_start|>",
        "<|im_end|>",
        "<|text_start|>",
        "<|text_end|>",
        "<|voice_characteristic_start|>",
        "<|voice_characteristic_end|>",
        "<|emotion_start|>",
        "<|emotion_end|>",
        "<|audio_start|>",
        "<|audio_end|>",
        *_durations(),
        "<|code|>",
        *features,
        "<|word_start|>",
        "<|word_end|>",
        "<|features|>",
        "<|global_features_start|>",
        "<|global_features_end|>",
    ]


def audio_code_ids() -> range:
    """Token ids of every `<|c1_N|>` and `<|c2_N|>` (what random models favour)."""
    return range(LLAMA3_N_VOCAB, LLAMA3_N_VOCAB + 2 * N_CODE_TOKENS)


def outetts10_vocab() -> Vocab:
    """The 1.0 vocabulary: Llama 3's byte-level BPE and special tokens, then OuteTTS's, every
    special token CONTROL; eos `<|im_end|>`, bos Llama's `<|begin_of_text|>` (never added)."""
    special = {i: t for i, t in orpheus_special_tokens().items() if i < LLAMA3_N_VOCAB}
    added = outetts10_tokens()
    special.update({LLAMA3_N_VOCAB + offset: name for offset, name in enumerate(added)})
    return byte_level_vocab(
        LLAMA3_N_VOCAB + len(added),
        special,
        pre=PRE_TOKENIZER,
        bos_id=BOS_ID,
        eos_id=LLAMA3_N_VOCAB + added.index(EOS_TOKEN),
    )


# ----------------------------------------------------------------------------------------------
# Shapes

LLAMA_OUTETTS_1B_SHAPE = LmShape(
    arch="llama",
    n_vocab=LLAMA3_N_VOCAB + len(outetts10_tokens()),
    n_embd=2048,
    n_layer=16,
    n_head=32,
    n_head_kv=8,
    head_dim=64,
    n_ff=8192,
    rope_base=500_000.0,
    rms_eps=1e-5,
    tied_embeddings=True,
    rope_freqs=True,
    n_ctx_train=131_072,
)
"""Llama-OuteTTS-1.0-1B: Llama-3.2-1B's shapes (its `config.json`: hidden 2048, 16 layers, 32
heads, 8 key/value heads, intermediate 8192, rope theta 500000 with Llama 3 scaling, tied
embeddings), with our vocabulary: 1.24 B params. That the finetune kept the tie is inferred."""

LLAMA_OUTETTS_TINY_SHAPE = toy_size(LLAMA_OUTETTS_1B_SHAPE)
"""The same graph at toy size: 8.5 M params (almost all the tied 131 626-row embedding), 20 MB."""

# ----------------------------------------------------------------------------------------------
# Files (their catalog entries, with the DAC's, are written by `outetts.py`)

TINY_SEED = 5
TINY_MODEL = "outetts-1.0-tiny"
TINY_GGUF = f"{TINY_MODEL}.gguf"

FULL_SEED = 6
FULL_MODEL = "outetts-1.0-1b-random"
FULL_GGUF = "Llama-OuteTTS-1.0-1B-random-Q4_K_M.gguf"
FULL_QUANT = "q4_k_m"
"""As the GGUF repo's `Llama-OuteTTS-1.0-1B-Q4_K_M.gguf` (its size is not published)."""


def write_tiny(directory: Path) -> Path:
    """Write the tiny 1.0 GGUF into `directory` (a second, in a few seconds); return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / TINY_GGUF) as partial:
        write_lm_gguf(
            partial,
            LLAMA_OUTETTS_TINY_SHAPE,
            outetts10_vocab(),
            TINY_SEED,
            name=TINY_MODEL,
            favoured_tokens=audio_code_ids(),  # random weights: speak codes
        )
    return directory / TINY_GGUF


def write_full_size(directory: Path, threads: int) -> Path:
    """Build a Llama-OuteTTS-1.0-1B-shaped Q4_K_M GGUF, for the benchmark; return its path.

    Skips it if it exists. Needs llama-cpp-python and, for a while, 3.3 GB of disk: the F16
    model (2.5 GB) is quantized (≈ 0.8 GB) and then deleted.
    """
    directory.mkdir(parents=True, exist_ok=True)
    write_quantized_lm(
        directory / FULL_GGUF,
        LLAMA_OUTETTS_1B_SHAPE,
        outetts10_vocab(),
        FULL_SEED,
        FULL_QUANT,
        threads,
        favoured_tokens=audio_code_ids(),
    )
    return directory / FULL_GGUF
