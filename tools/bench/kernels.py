"""`script/benchmark --kernels`: llama.cpp's CPU matrix kernels on this machine, for the
quantized types the shipped voices use (Q4_K_M, Q8_0).

Prompt (prefill) and decode speed of an OuteTTS-0.3-500M-shaped random model, loaded as the
workers load it, with ggml's extra buffer types (the weights repacked for this CPU's kernels; a
build with AMX kernels would put them there too) and without them (`use_extra_bufts = false`,
the plain kernels): the runtime switch docs/cpus.md weighs against leaving the AMX kernels out
of the build. Loads alternate between the two in every round, the type order flips each round,
and the figures are medians. Markdown on stdout.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import llama_cpp
import numpy as np

from tools.modelgen.files import atomic_path
from tools.modelgen.gguf_lm import quantize_gguf, write_lm_gguf
from tools.modelgen.outetts import OUTETTS_500M_SHAPE, outetts_vocab

from .machine import describe_machine
from .raw_llama import greedy_decode, prefill, quiet_llama_cpp, raw_lm

DEFAULT_MODELS_DIR = Path(__file__).resolve().parents[2] / "local" / "benchmark-models" / "kernels"
QUANTS = ("q4_k_m", "q8_0")
PROMPT_TOKENS = 128
"""A first text piece's prompt is 60-200 tokens (OuteTTS, Orpheus)."""
DECODE_TOKENS = 64
N_CTX = 512
SEED = 4


def ensure_models(directory: Path, threads: int) -> dict[str, Path]:
    """The Q4_K_M and Q8_0 models, quantized from one F16 model (built once; about a minute)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {quant: directory / f"outetts-500m-{quant}.gguf" for quant in QUANTS}
    f16 = directory / "outetts-500m-f16.gguf"
    missing = [quant for quant, path in paths.items() if not path.exists()]
    if missing and not f16.exists():
        with atomic_path(f16) as partial:
            write_lm_gguf(partial, OUTETTS_500M_SHAPE, outetts_vocab("0.3"), SEED)
    for quant in missing:
        with atomic_path(paths[quant]) as partial:
            quantize_gguf(f16, partial, quant, threads)
    f16.unlink(missing_ok=True)
    return paths


def measure(path: Path, extra_buffers: bool, threads: int, rng: np.random.Generator) -> tuple:
    """(prompt tokens/s, decode tokens/s) of one load."""
    with raw_lm(path, N_CTX, threads, extra_buffers=extra_buffers) as lm:
        prefill(lm, 16, rng)  # warm-up: buffers allocated, weights paged
        prompt_s = prefill(lm, PROMPT_TOKENS, rng)
        decode_s = greedy_decode(lm, PROMPT_TOKENS, DECODE_TOKENS)
    return PROMPT_TOKENS / prompt_s, DECODE_TOKENS / decode_s


def _median_range(values: list[float], digits: int = 1) -> str:
    median, low, high = statistics.median(values), min(values), max(values)
    return f"{median:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def main(argv: list[str]) -> None:
    """Parse `argv`, measure, print the Markdown table."""
    parser = argparse.ArgumentParser(prog="script/benchmark --kernels")
    parser.add_argument("--runs", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--threads", type=int, default=None, help="default: all cores")
    parser.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR)
    args = parser.parse_args(argv)
    machine = describe_machine()
    threads = args.threads or machine.cores
    quiet_llama_cpp()
    paths = ensure_models(args.models_dir, threads)
    rng = np.random.default_rng(0)
    figures: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for run in range(args.runs):
        quants = QUANTS if run % 2 == 0 else QUANTS[::-1]
        for quant in quants:
            for extra in (True, False) if run % 2 == 0 else (False, True):
                figures.setdefault((quant, extra), []).append(
                    measure(paths[quant], extra, threads, rng)
                )
    print(f"CPU: {machine.cpu}, {machine.cores} cores, {threads} threads; {args.runs} rounds")
    print(f"llama.cpp: {llama_cpp.llama_print_system_info().decode().strip()}")
    print()
    print(
        f"| type | extra buffer types | prompt tok/s ({PROMPT_TOKENS}) | "
        f"decode tok/s ({DECODE_TOKENS}) | prompt, off/on | decode, off/on |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for quant in QUANTS:
        on, off = figures[(quant, True)], figures[(quant, False)]
        prompt_ratio = [b[0] / a[0] for a, b in zip(on, off)]
        decode_ratio = [b[1] / a[1] for a, b in zip(on, off)]
        for extra, rows in ((True, on), (False, off)):
            ratios = (
                [_median_range(prompt_ratio, 2), _median_range(decode_ratio, 2)]
                if not extra
                else ["", ""]
            )
            print(
                f"| {quant} | {'on' if extra else 'off'} | "
                f"{_median_range([r[0] for r in rows])} | {_median_range([r[1] for r in rows])} | "
                + " | ".join(ratios)
                + " |"
            )
