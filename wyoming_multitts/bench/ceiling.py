"""Raw ceiling of one model: llama.cpp prefill and decode speed, and its codec's first window.

A worker the benchmark starts with the server's thread environment and drives over pipes, so
that raw runs alternate with server requests (on a shared VM the speed drifts by 10-20 % over
minutes; runs close in time compare fairly):

    python -m wyoming_multitts.bench.ceiling CATALOG MODEL --threads N --decode-tokens 140

It loads the model, warms up and prints a JSON line `{"load_s": …}`. Then, for every line
`{"prompt_tokens": [66, 65]}` on stdin, it measures one run and prints its figures as a JSON line.
At end of input it times the first codec window (SNAC for Orpheus, the WavTokenizer vocoder for
OuteTTS) and prints a last JSON line.

It talks to llama.cpp's C API directly (the method of perf-anchors.md, appendix `lmbench.py`):
prefill a prompt of random tokens in one batch, then greedy steps of a 1-token `llama_batch`,
`llama_decode`, `llama_get_logits_ith(ctx, -1)` and `np.argmax` over the whole vocabulary. Nothing
of `wyoming_multitts.llm` is used, so the figures are a ceiling the server's loop is measured
against.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import llama_cpp
import numpy as np
import torch

from ..catalog import ModelSpec, load_catalog
from ..codecs.snac24 import SnacDecoder
from ..codecs.wavtokenizer import WavTokenizerVocoder
from ..devices import CPU, set_torch_threads
from ..engines import orpheus, outetts
from ..options import apply_options
from .machine import cpu_clock, others_cores

BATCH_TOKENS = 512
"""n_batch and n_ubatch, as the server's `LlamaModel` uses (llama.cpp's default n_batch)."""
WARMUP_PROMPT_TOKENS = 32
WARMUP_DECODE_TOKENS = 8
"""The warm-up run: graph allocation, page-in of the mmap'd weights."""
CODEC_REPEATS = 7
"""Timed first-window codec decodes (after one warm-up); each is ~0.05-0.3 s on 2 cores."""
SNAC_CODES_PER_FRAME = (1, 2, 4)
"""Codes per frame of SNAC's three levels (vq_strides 4, 2, 1)."""
SNAC_CODEBOOK_SIZE = 4096
WAVTOKENIZER_CODEBOOK_SIZE = 4096
PROMPT_TOKEN_RANGE = (300, 128_000)
"""Random prompt tokens are drawn from here: ordinary text tokens of the Llama-3 vocabulary."""
SEED = 1


@dataclass(frozen=True)
class RawLm:
    """A llama.cpp model, its context and a batch, straight from the C API."""

    ctx: Any
    batch: Any
    memory: Any
    n_vocab: int


@contextlib.contextmanager
def raw_lm(path: Path, n_ctx: int, threads: int) -> Iterator[RawLm]:
    """Load `path` on the CPU with the server's context size and threads; free it afterwards."""
    with contextlib.ExitStack() as stack:
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = 0
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), model_params)
        if not model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        stack.callback(llama_cpp.llama_model_free, model)

        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = BATCH_TOKENS
        params.n_ubatch = BATCH_TOKENS
        params.n_threads = threads
        params.n_threads_batch = threads
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED  # lmbench.py: --fa 0
        ctx = llama_cpp.llama_init_from_model(model, params)
        if not ctx:
            raise RuntimeError(f"llama.cpp could not create a context of {n_ctx} for {path}")
        stack.callback(llama_cpp.llama_free, ctx)

        batch = llama_cpp.llama_batch_init(BATCH_TOKENS, 0, 1)
        stack.callback(llama_cpp.llama_batch_free, batch)
        n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
        yield RawLm(ctx, batch, llama_cpp.llama_get_memory(ctx), n_vocab)


def _decode(lm: RawLm, tokens: Sequence[int], first_position: int) -> None:
    """One `llama_decode` of `tokens` at positions first_position…, logits of the last only."""
    lm.batch.n_tokens = len(tokens)
    for i, token in enumerate(tokens):
        lm.batch.token[i] = int(token)
        lm.batch.pos[i] = first_position + i
        lm.batch.n_seq_id[i] = 1
        lm.batch.seq_id[i][0] = 0
        lm.batch.logits[i] = i == len(tokens) - 1
    status = llama_cpp.llama_decode(lm.ctx, lm.batch)
    if status != 0:
        raise RuntimeError(f"llama_decode failed with status {status}")


def prefill(lm: RawLm, n_tokens: int, rng: np.random.Generator) -> float:
    """Seconds to evaluate a fresh prompt of `n_tokens` random tokens, BATCH_TOKENS at a time."""
    llama_cpp.llama_memory_clear(lm.memory, True)
    tokens = rng.integers(*PROMPT_TOKEN_RANGE, size=n_tokens).tolist()
    started = time.perf_counter()
    for first in range(0, n_tokens, BATCH_TOKENS):
        _decode(lm, tokens[first : first + BATCH_TOKENS], first)
    return time.perf_counter() - started


def greedy_decode(lm: RawLm, first_position: int, n_tokens: int) -> float:
    """Seconds for `n_tokens` greedy steps after the cached prompt (argmax over every token)."""
    started = time.perf_counter()
    for position in range(first_position, first_position + n_tokens):
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(lm.ctx, -1), shape=(lm.n_vocab,)
        )  # (n_vocab,) float32 view
        _decode(lm, [int(np.argmax(logits))], position)
    return time.perf_counter() - started


def measure_run(
    lm: RawLm, prompt_lengths: Sequence[int], decode_tokens: int, rng: np.random.Generator
) -> dict[str, Any]:
    """Prefill each prompt length on a cleared cache, then decode after the longest.

    Also records how many cores other processes kept busy meanwhile.
    """
    lengths = sorted(set(prompt_lengths))
    clock = cpu_clock()
    prefill_s = {str(length): prefill(lm, length, rng) for length in lengths}
    decode_tok_s = decode_tokens / greedy_decode(lm, lengths[-1], decode_tokens)
    return {
        "prefill_s": prefill_s,
        "decode_tok_s": decode_tok_s,
        "others_cores": others_cores(clock, cpu_clock()),
    }


@dataclass(frozen=True)
class CodecWindow:
    """How an engine sizes its context and first streamed window, and how to time that window."""

    n_ctx: int
    frame_tokens: int
    """Tokens the language model writes per codec frame (Orpheus 7; OuteTTS ~1 per code)."""
    first_window_frames: int
    decode: Callable[[], object]
    """One decode of a first window of random codes, with the engine's own decoder."""
    samples_per_frame: int
    sample_rate: int


def orpheus_window(model: ModelSpec, threads: int) -> CodecWindow:
    """Orpheus: SNAC, `first_chunk_frames + context_right` frames of 7 tokens."""
    options = apply_options(orpheus.OrpheusOptions(), model.options, f"model {model.name}")
    frames = options.first_chunk_frames + options.context_right
    set_torch_threads(threads)
    decoder = SnacDecoder(_local_path(model, "codec"), torch.device("cpu"), options.codec_noise)
    rng = np.random.default_rng(SEED)
    levels = [
        rng.integers(0, SNAC_CODEBOOK_SIZE, size=frames * per_frame)  # (F,), (2F,), (4F,) int64
        for per_frame in SNAC_CODES_PER_FRAME
    ]
    return CodecWindow(
        n_ctx=options.max_tokens + orpheus.PROMPT_TOKENS_MAX,  # as the engine sizes its context
        frame_tokens=orpheus.FRAME_TOKENS,
        first_window_frames=frames,
        decode=lambda: decoder.decode(levels, 0, SEED),
        samples_per_frame=decoder.samples_per_frame,
        sample_rate=decoder.sample_rate,
    )


def outetts_window(model: ModelSpec, threads: int) -> CodecWindow:
    """OuteTTS: the WavTokenizer vocoder, `first_chunk_codes + context_right` codes of 1 token."""
    options = apply_options(outetts.OuteOptions(), model.options, f"model {model.name}")
    codes_in_window = options.first_chunk_codes + options.context_right
    vocoder = WavTokenizerVocoder(
        _local_path(model, "vocoder"),
        CPU,
        max_codes=codes_in_window,
        threads=threads,
        where="bench",
    )
    codes = np.random.default_rng(SEED).integers(0, WAVTOKENIZER_CODEBOOK_SIZE, codes_in_window)
    return CodecWindow(
        n_ctx=options.n_ctx,
        frame_tokens=1,
        first_window_frames=codes_in_window,
        decode=lambda: vocoder.decode(codes),
        samples_per_frame=vocoder.samples_per_frame,
        sample_rate=vocoder.sample_rate,
    )


CODEC_WINDOWS = {"orpheus": orpheus_window, "outetts": outetts_window}
"""Engine → how to size its context and time its first codec window."""


def measure_codec(window: CodecWindow) -> dict[str, Any]:
    """Seconds of one decode of the first streamed window, with the engine's decoder."""
    window.decode()  # warm-up
    runs = []
    clock = cpu_clock()
    for _ in range(CODEC_REPEATS):
        started = time.perf_counter()
        window.decode()
        runs.append(time.perf_counter() - started)
    return {
        "frames": window.first_window_frames,
        "audio_s": window.first_window_frames * window.samples_per_frame / window.sample_rate,
        "window_s_runs": runs,
        "others_cores": others_cores(clock, cpu_clock()),
    }


def _local_path(model: ModelSpec, role: str) -> Path:
    ref = model.files[role]
    if ref.path is None:
        raise SystemExit(f"model {model.name}: the benchmark needs a local path for files.{role}")
    return ref.path


def _reply(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve measurement requests from stdin (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m wyoming_multitts.bench.ceiling")
    parser.add_argument("catalog", type=Path)
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--decode-tokens", type=int, required=True)
    args = parser.parse_args(argv)

    model = load_catalog(args.catalog).models[args.model]
    window = CODEC_WINDOWS[model.engine](model, args.threads)
    n_ctx = window.n_ctx

    llama_cpp.llama_backend_init()
    quiet = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
    llama_cpp.llama_log_set(quiet, ctypes.c_void_p(0))
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    with raw_lm(_local_path(model, "model"), n_ctx, args.threads) as lm:
        load_s = time.perf_counter() - started
        prefill(lm, WARMUP_PROMPT_TOKENS, rng)  # graph allocation, page-in of the weights
        greedy_decode(lm, WARMUP_PROMPT_TOKENS, WARMUP_DECODE_TOKENS)
        _reply({"load_s": load_s, "n_ctx": n_ctx})
        for line in sys.stdin:
            _reply(measure_run(lm, json.loads(line)["prompt_tokens"], args.decode_tokens, rng))

    _reply(
        {
            "codec": measure_codec(window),
            "frame_tokens": window.frame_tokens,
            "first_window_frames": window.first_window_frames,
            "system_info": llama_cpp.llama_print_system_info().decode().strip(),
        }
    )


if __name__ == "__main__":
    main()
