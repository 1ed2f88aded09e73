"""Raw ceiling of Bark: the engine's three torch stages driven by a bare greedy loop.

Bark has no llama.cpp part, so its ceiling is the forward passes themselves: the same modules,
prompts of the same lengths and the same number of steps as the server's request (semantic
prefill of the merged 513-token prompt, `S` semantic steps; the coarse windows, each
re-prefilled, `coarse_steps(S)` steps; the fine windows, six codebooks each) and the same voice
preset (its history makes the coarse windows' prompts longer), with an argmax on the device
instead of the engine's sampling. What is left to the server is its samplers (numpy,
over 10,001 / 1,024 logits a step, and the Gumbel draws of the fine stage) and Python. Tokens are
counted as the server's `--stats-file` counts them: semantic tokens.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from wyoming_multitts.catalog import ModelSpec
from wyoming_multitts.devices import Device
from wyoming_multitts.engines.bark import engine as bark
from wyoming_multitts.engines.bark import presets

from .machine import cpu_clock, others_cores

TEXT_TOKENS = 16
"""Random BERT ids of the prompt's text part (its length does not change the work: the text is
padded to 256 either way)."""
BERT_ID_RANGE = (1000, 100_000)


def open_bark(model: ModelSpec, folder: Path, threads: int, device: Device) -> bark.Bark:
    """The engine's loaded model on `device` (its modules are what the ceiling drives)."""
    paths = {"model": folder, "presets": folder}
    return bark.load(model, paths, device, threads)


@torch.inference_mode()
def _semantic(
    engine: bark.Bark, preset: presets.Preset | None, n_tokens: int, rng: np.random.Generator
) -> tuple[float, float]:
    """(prefill seconds, seconds of all the steps) for `n_tokens` greedy semantic tokens."""
    text_ids = rng.integers(*BERT_ID_RANGE, size=TEXT_TOKENS)
    prompt = torch.from_numpy(presets.semantic_input(text_ids, preset))[None]  # (1, 513)
    prompt = prompt.to(engine.device)
    started = time.perf_counter()
    logits, cache = engine.semantic_model(prompt, merge_context=True)
    prefilled = time.perf_counter()
    for _ in range(n_tokens):
        token = int(torch.argmax(logits[: presets.SEMANTIC_VOCAB_SIZE]))
        step = torch.tensor([[token]], device=engine.device)  # (1, 1)
        logits, cache = engine.semantic_model(step, cache)
    return prefilled - started, time.perf_counter() - prefilled


@torch.inference_mode()
def _coarse(
    engine: bark.Bark,
    preset: presets.Preset | None,
    semantic: np.ndarray,
    options: bark.BarkOptions,
) -> tuple[np.ndarray, float]:
    """The coarse codes (2, F) and the seconds of the windows, greedy."""
    semantic_history, coarse_history = presets.coarse_history(preset, options.max_coarse_history)
    all_semantic = np.concatenate((semantic_history, semantic))
    n_steps = presets.coarse_steps(semantic.size)
    generated: list[int] = []
    started = time.perf_counter()
    while len(generated) < n_steps:
        index = semantic_history.size + int(
            round(len(generated) / presets.SEMANTIC_TO_COARSE_RATIO)
        )
        context = np.concatenate((coarse_history, generated)).astype(np.int64)
        window = presets.coarse_window_input(
            all_semantic, context, index, options.max_coarse_history
        )
        step, cache = torch.from_numpy(window)[None].to(engine.device), None  # (1, P)
        for _ in range(min(options.sliding_window_len, n_steps - len(generated))):
            logits, cache = engine.coarse_model(step, cache)
            first = presets.SEMANTIC_VOCAB_SIZE + len(generated) % 2 * presets.CODEBOOK_SIZE
            code = int(torch.argmax(logits[first : first + presets.CODEBOOK_SIZE]))
            generated.append(first + code)
            step = torch.tensor([[first + code]], device=engine.device)  # (1, 1)
    flat = np.asarray(generated, np.int64) - presets.SEMANTIC_VOCAB_SIZE  # (2F,)
    codes = flat.reshape(-1, presets.N_COARSE_CODEBOOKS).T % presets.CODEBOOK_SIZE  # (2, F)
    return codes, time.perf_counter() - started


@torch.inference_mode()
def _fine(engine: bark.Bark, preset: presets.Preset | None, coarse: np.ndarray) -> float:
    """Seconds of the fine windows for `coarse` (2, F), greedy."""
    canvas_np, n_history, _ = presets.fine_input(coarse, preset)
    canvas = torch.from_numpy(canvas_np).to(engine.device)  # (L, 8)
    frames = coarse.shape[1]
    n_windows = (
        max(0, math.ceil((frames - (presets.FINE_WINDOW - n_history)) / presets.FINE_HOP)) + 1
    )
    started = time.perf_counter()
    for index in range(n_windows):
        start = min(index * presets.FINE_HOP, canvas.shape[0] - presets.FINE_WINDOW)
        window = canvas[start : start + presets.FINE_WINDOW]  # (1024, 8) view
        for codebook in range(presets.N_COARSE_CODEBOOKS, presets.N_FINE_CODEBOOKS):
            logits = engine.fine_model(codebook, window[None])[:, : presets.CODEBOOK_SIZE]
            window[:, codebook] = logits.argmax(dim=-1)
    canvas[-1, -1].item()  # waits for a GPU's queued work
    return time.perf_counter() - started


def measure_run(
    engine: bark.Bark,
    options: bark.BarkOptions,
    preset: presets.Preset | None,
    semantic_tokens: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One sentence of `semantic_tokens` through the three stages; the semantic tokens per
    second of all three after the prefill (as the server's stats count them) and seconds per
    fine frame of each stage (the semantic one with its prefill, as the server's split line)."""
    clock = cpu_clock()
    prefill_s, semantic_s = _semantic(engine, preset, semantic_tokens, rng)
    semantic = rng.integers(0, presets.SEMANTIC_VOCAB_SIZE, size=semantic_tokens)
    coarse, coarse_s = _coarse(engine, preset, semantic, options)
    fine_s = _fine(engine, preset, coarse)
    frames = coarse.shape[1]
    return {
        "prefill_s": {str(presets.SEMANTIC_HISTORY_TOKENS + 1): prefill_s},
        "decode_tok_s": semantic_tokens / (semantic_s + coarse_s + fine_s),
        "split_s_per_frame": {
            "semantic": (prefill_s + semantic_s) / frames,
            "coarse": coarse_s / frames,
            "fine": fine_s / frames,
        },
        "others_cores": others_cores(clock, cpu_clock()),
    }
