"""Random-weight OuteTTS models, codecs and catalog entries: 0.2 / 0.3 (Qwen2 GGUFs with their
vocabularies, the WavTokenizer vocoder) and 1.0 (`outetts10.py`'s Llama GGUF, the DAC codec).

The vocabulary has the real size (157 696) and every OuteTTS token by name as a CONTROL token:
Qwen2.5's specials at their real ids, then the TTS tokens. For 0.2 the ids are the real ones
(`<|im_start|>` 151644, `<|code_end|>` 151670, `<|0|>` 151672, `<|t_0.00|>` 155772;
docs/engines.md, "OuteTTS: token ids"). The 0.3 order is not published: ours is plausible and on
purpose different (durations before codes), so nothing can depend on 0.2's ids. Plain text maps
to byte tokens, `"\\n"` included, instead of the real BPE ids; the engine reads every id it needs
from the vocabulary. The vocoder is the WavTokenizer GGUF of `modelgen.wavtokenizer`; 1.0's is
the DAC checkpoint of `modelgen.dac`.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from wyoming_multitts.audio import write_wav
from wyoming_multitts.engines.outetts.prompt import PUNCTUATION_TOKENS
from wyoming_multitts.engines.outetts.speakers import SPEAKERS_DIR
from wyoming_multitts.formats.gguf import LmShape

from . import outetts10
from .dac import write_full_dac, write_tiny_dac
from .files import CatalogEntries, atomic_path
from .gguf_lm import Vocab, byte_level_vocab, toy_size, write_lm_gguf, write_quantized_lm
from .qwen3tts import reference_recording
from .wavtokenizer import write_full_wavtokenizer, write_tiny_wavtokenizer
from .whisper import write_whisper

_LOGGER = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# Vocabulary (Qwen2.5 + OuteTTS tokens)

OUTETTS_N_VOCAB = 157_696
"""OuteTTS-0.2-500M `config.json` `vocab_size` (0.3-500M has the same Qwen2.5-0.5B base);
docs/engines.md, "OuteTTS: model shape". Ids past the last OuteTTS token are filler."""

# fmt: off
QWEN2_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
)
# fmt: on
"""Qwen2.5's added tokens, ids 151643..151664 in this order (Qwen2.5 tokenizer_config.json)."""

QWEN2_FIRST_SPECIAL_ID = 151_643
"""`<|endoftext|>`: Qwen2.5's first special token; ids below are its BPE tokens."""

OUTETTS_FIRST_ID = QWEN2_FIRST_SPECIAL_ID + len(QWEN2_SPECIAL_TOKENS)
"""151665: OuteTTS's first added token (`<|text_start|>`)."""

N_CODE_TOKENS = 4100
"""`<|0|>`..`<|4099|>` (outetts maps range(4100); codes past 4095 are never valid)."""

N_DURATION_TOKENS = 1001
"""`<|t_0.00|>`..`<|t_10.00|>` in 0.01 s steps. The real count is unverified (docs/engines.md,
"OuteTTS: token ids"); it only has to cover the durations of speaker profiles (under 2 s in the
built-in ones)."""

BOS_ID = QWEN2_FIRST_SPECIAL_ID
"""`<|endoftext|>`, as llama.cpp's converter writes Qwen2's BOS (never added: add_bos false)."""
EOS_ID = QWEN2_FIRST_SPECIAL_ID + 2
"""`<|im_end|>` (151645), where OuteTTS replies end."""

PRE_TOKENIZER = "qwen2"
"""llama.cpp's name for Qwen2's pre-tokenizer regex."""


def _code_tokens() -> list[str]:
    return [f"<|{code}|>" for code in range(N_CODE_TOKENS)]


def _duration_tokens() -> list[str]:
    return [f"<|t_{n // 100}.{n % 100:02d}|>" for n in range(N_DURATION_TOKENS)]


def outetts_tokens(version: str) -> list[str]:
    """OuteTTS's added tokens in id order from `OUTETTS_FIRST_ID`, for "0.2" or "0.3"."""
    if version == "0.2":
        return [
            "<|text_start|>",
            "<|text_end|>",
            "<|audio_start|>",
            "<|audio_end|>",
            "<|code_start|>",
            "<|code_end|>",
            "<|text_sep|>",
            *_code_tokens(),  # <|0|> = 151672
            *_duration_tokens(),  # <|t_0.00|> = 155772
        ]
    if version == "0.3":
        punctuation = list(dict.fromkeys(PUNCTUATION_TOKENS.values()))  # "…" and "..." share one
        return [
            "<|text_start|>",
            "<|text_end|>",
            "<|voice_characteristic_start|>",
            "<|voice_characteristic_end|>",
            "<|emotion_start|>",
            "<|emotion_end|>",
            "<|audio_start|>",
            "<|audio_end|>",
            "<|text_sep|>",
            "<|space|>",
            "<|syllable_sep|>",
            *punctuation,
            *_duration_tokens(),
            *_code_tokens(),
        ]
    raise ValueError(f"unknown OuteTTS version {version!r}; use 0.2 or 0.3")


def audio_code_ids(version: str) -> range:
    """Token ids of `<|0|>`…`<|4095|>` in the `version` vocabulary (what random models favour)."""
    code0 = outetts_vocab(version).tokens.index("<|0|>")
    return range(code0, code0 + 4096)


def outetts_vocab(version: str) -> Vocab:
    """The OuteTTS `version` vocabulary: byte-level BPE, every special token CONTROL, eos im_end."""
    names = [*QWEN2_SPECIAL_TOKENS, *outetts_tokens(version)]
    special = {QWEN2_FIRST_SPECIAL_ID + offset: name for offset, name in enumerate(names)}
    return byte_level_vocab(
        OUTETTS_N_VOCAB, special, pre=PRE_TOKENIZER, bos_id=BOS_ID, eos_id=EOS_ID, pad_id=BOS_ID
    )


# ----------------------------------------------------------------------------------------------
# Shapes

OUTETTS_500M_SHAPE = LmShape(
    arch="qwen2",
    n_vocab=OUTETTS_N_VOCAB,
    n_embd=896,
    n_layer=24,
    n_head=14,
    n_head_kv=2,
    head_dim=64,
    n_ff=4864,
    rope_base=1_000_000.0,
    rms_eps=1e-6,
    tied_embeddings=True,
    qkv_bias=True,
    n_ctx_train=32_768,
)
"""OuteTTS-0.2/0.3-500M (Qwen2.5-0.5B body, tied head): 0.499 B params; docs/engines.md,
"OuteTTS: model shape"."""

OUTETTS_TINY_SHAPE = toy_size(OUTETTS_500M_SHAPE)
"""The same graph at toy size: 10 M params (almost all the tied 157 696-row embedding), 20 MB."""

# ----------------------------------------------------------------------------------------------
# Files and catalog entries

TINY_SEED = 2
TINY_MODELS = {"0.2": "outetts-0.2-tiny", "0.3": "outetts-0.3-tiny"}
"""Version → tiny model name; the GGUF is NAME.gguf."""
TINY_MAX_TOKENS = 120
"""About 1.4 s of audio: keeps a tiny-model request short."""
TINY_VOICES = {
    "tiny-oute2-en-male-1": ("0.2", "en_male_1", "en"),
    "tiny-oute3-en-male-1": ("0.3", "en_male_1", "en"),
    "tiny-oute3-fr-female-1": ("0.3", "fr_female_1", "fr"),
}
"""Voice → (version, built-in speaker, language)."""
TINY_CUSTOM_VOICE = "tiny-oute3-custom-speaker"
TINY_CUSTOM_SPEAKER = "outetts-custom-speaker.json"
"""A speaker profile given as a file (a copy of the 0.3 `en_female_1`), relative to the
catalog's folder like every `path:` of the catalog."""
TINY10_MAX_TOKENS = 240
"""1.0: at most 120 DAC frames (a c1 and a c2 token each), 1.6 s."""
TINY10_VOICE = "tiny-oute10-en-female-1"
SPEAKER10 = "en-female-1-neutral"
"""The built-in 1.0 speaker (data/outetts/v1.0)."""
TINY_ALIGNER = "whisper-tiny"
"""The tiny Whisper folder (the 1.0 model's `aligner:`, which times a reference's words)."""
TINY_REFERENCE_VOICE = "tiny-oute10-own-voice"
TINY_REFERENCE = "outetts-tiny-reference.wav"
TINY_REFERENCE_TEXT = "Hello there, this is my own voice."
TINY_REFERENCE_SECONDS = 3.0
TINY_REFERENCE_RATE = 22_050
"""A voice with `reference:`: the server makes its 1.0 profile from this recording on first use
(not at 24 kHz, so the resampling runs too)."""

FULL_SEED = 4
FULL_MODEL = "outetts-0.3-500m-random"
FULL_GGUF = "OuteTTS-0.3-500M-random-Q4_K_M.gguf"
FULL_QUANT = "q4_k_m"
"""As the GGUF repo's `OuteTTS-0.3-500M-Q4_K_M.gguf` (real ≈ 403 MB; ours ≈ 402 MB)."""
FULL_MAX_TOKENS = 2048
"""About 23 s of audio at ~88 tokens per second; outetts caps prompt + reply at 4096."""
FULL_VOICES = {
    "random-oute3-en-male-1": ("0.3", "en_male_1", "en"),
    "random-oute3-en-female-1": ("0.3", "en_female_1", "en"),
}
FULL10_MAX_TOKENS = 4000
"""1.0: about 22 s of audio at ~180 tokens per second (the engine's default)."""
FULL10_VOICE = "random-oute10-en-female-1"

TINY_MODEL_NAMES = (*TINY_MODELS.values(), outetts10.TINY_MODEL)
FULL_MODEL_NAMES = (FULL_MODEL, outetts10.FULL_MODEL)
"""The models `write_tiny` and `write_full_size` add to the catalog."""


def write_tiny(directory: Path) -> CatalogEntries:
    """Write the tiny OuteTTS GGUFs (0.2, 0.3, 1.0), the tiny vocoder, DAC and Whisper, a speaker
    file and a recording to make a speaker from; return catalog entries.

    Deterministic (fixed seeds): about 70 MB in a few seconds.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for version, model in TINY_MODELS.items():
        with atomic_path(directory / f"{model}.gguf") as partial:
            write_lm_gguf(
                partial,
                OUTETTS_TINY_SHAPE,
                outetts_vocab(version),
                TINY_SEED,
                name=model,
                favoured_tokens=audio_code_ids(version),  # random weights: speak codes
            )
    vocoder = write_tiny_wavtokenizer(directory)
    with atomic_path(directory / TINY_CUSTOM_SPEAKER) as partial:
        shutil.copyfile(SPEAKERS_DIR / "v0.3" / "en_female_1.json", partial)
    gguf10 = outetts10.write_tiny(directory)
    dac = write_tiny_dac(directory)
    aligner = write_whisper(directory / TINY_ALIGNER)
    recording = reference_recording(TINY_REFERENCE_SECONDS, TINY_REFERENCE_RATE)
    with atomic_path(directory / TINY_REFERENCE) as partial:
        write_wav(partial, recording, TINY_REFERENCE_RATE)

    models = {
        model: _model_entry(
            f"Tiny random OuteTTS {version} (tests)", f"{model}.gguf", vocoder.name, TINY_MAX_TOKENS
        )
        for version, model in TINY_MODELS.items()
    }
    models[outetts10.TINY_MODEL] = _model_entry(
        "Tiny random OuteTTS 1.0 (tests)", gguf10.name, dac.name, TINY10_MAX_TOKENS
    )
    models[outetts10.TINY_MODEL]["files"]["aligner"] = {"path": aligner.name}
    voices = {
        voice: _voice_entry(TINY_MODELS[version], speaker, language, f"{speaker} (tiny OuteTTS)")
        for voice, (version, speaker, language) in TINY_VOICES.items()
    }
    voices[TINY_CUSTOM_VOICE] = _voice_entry(
        TINY_MODELS["0.3"], TINY_CUSTOM_SPEAKER, "en", "Speaker from a JSON file (tiny OuteTTS)"
    )
    voices[TINY10_VOICE] = _voice_entry(
        outetts10.TINY_MODEL, SPEAKER10, "en", f"{SPEAKER10} (tiny OuteTTS 1.0)"
    )
    voices[TINY_REFERENCE_VOICE] = {
        "model": outetts10.TINY_MODEL,
        "reference": {"path": TINY_REFERENCE, "text": TINY_REFERENCE_TEXT},
        "languages": ["en"],
        "description": "Profile made from a recording (tiny OuteTTS 1.0)",
    }
    return models, voices


def write_full_size(directory: Path, threads: int) -> CatalogEntries:
    """Build OuteTTS-0.3-500M- and Llama-OuteTTS-1.0-1B-shaped Q4_K_M GGUFs, the full vocoder
    and DAC; return catalog entries.

    Skips whatever already exists. Needs llama-cpp-python and, for a while, 3.3 GB of disk: each
    F16 model (1.0 and 2.5 GB, seconds) is quantized (≈ 0.4 and 0.8 GB; ~10 and ~30 s on 2
    cores) and then deleted.
    """
    directory.mkdir(parents=True, exist_ok=True)
    write_quantized_lm(
        directory / FULL_GGUF,
        OUTETTS_500M_SHAPE,
        outetts_vocab("0.3"),
        FULL_SEED,
        FULL_QUANT,
        threads,
        favoured_tokens=audio_code_ids("0.3"),  # codes, so the vocoder runs too
    )
    vocoder = write_full_wavtokenizer(directory)
    gguf10 = outetts10.write_full_size(directory, threads)
    dac = write_full_dac(directory)

    models = {
        FULL_MODEL: _model_entry(
            "Random-weight OuteTTS-0.3-500M, Q4_K_M (benchmarks: real speed, noise for audio)",
            FULL_GGUF,
            vocoder.name,
            FULL_MAX_TOKENS,
        ),
        outetts10.FULL_MODEL: _model_entry(
            "Random-weight Llama-OuteTTS-1.0-1B, Q4_K_M, DAC (benchmarks)",
            gguf10.name,
            dac.name,
            FULL10_MAX_TOKENS,
        ),
    }
    voices = {
        voice: _voice_entry(FULL_MODEL, speaker, language, f"{speaker} (random OuteTTS-0.3-500M)")
        for voice, (_version, speaker, language) in FULL_VOICES.items()
    }
    voices[FULL10_VOICE] = _voice_entry(
        outetts10.FULL_MODEL, SPEAKER10, "en", f"{SPEAKER10} (random Llama-OuteTTS-1.0-1B)"
    )
    return models, voices


def _model_entry(description: str, gguf_file: str, vocoder_file: str, max_tokens: int) -> dict:
    """The catalog entry of one OuteTTS model."""
    return {
        "engine": "outetts",
        "description": description,
        "files": {"model": {"path": gguf_file}, "vocoder": {"path": vocoder_file}},
        "device": "cpu",
        "options": {"max_tokens": max_tokens},
    }


def _voice_entry(model: str, speaker: str, language: str, description: str) -> dict:
    """The catalog entry of one OuteTTS voice."""
    return {"model": model, "speaker": speaker, "languages": [language], "description": description}
