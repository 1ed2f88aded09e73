"""llama.cpp's C API straight, for the raw ceiling: load, prefill, greedy decode.

The method: prefill a prompt in batches of BATCH_TOKENS (flash attention off), then greedy steps
of a 1-row `llama_batch`, `llama_decode` and `np.argmax` over the logits. Nothing of
`wyoming_multitts.llm` is used but its placement on a device, so the figures are a ceiling
the server's loop is measured against. Models fed with embedding rows instead of tokens (the
Qwen3-TTS talker and code predictor) use the same calls with `llama_batch.embd` and read the
hidden state as well.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import llama_cpp
import numpy as np

from wyoming_multitts.llm.build import init_runtime
from wyoming_multitts.llm.model import place_on_device

BATCH_TOKENS = 512
"""n_batch and n_ubatch, as the server's `LlamaModel` uses (llama.cpp's default n_batch)."""
PROMPT_TOKEN_RANGE = (300, 128_000)
"""Random prompt tokens are drawn from here: ordinary text tokens of the Llama-3 vocabulary."""


@dataclass(frozen=True)
class RawLm:
    """A llama.cpp model, its context and a batch, straight from the C API."""

    ctx: Any
    batch: Any
    memory: Any
    n_vocab: int
    n_embd: int
    """Width of an input row and of the hidden state; 0 for a token-input model."""


@contextlib.contextmanager
def raw_lm(
    path: Path,
    n_ctx: int,
    threads: int,
    n_batch: int = BATCH_TOKENS,
    rows: bool = False,
    llama_device: str | None = None,
    extra_buffers: bool = True,
) -> Iterator[RawLm]:
    """Load `path` with the server's context size and threads, every layer on `llama_device`
    (`CUDA0`, …; None: the CPU); free it afterwards.

    `rows=True` makes a context fed with embedding rows that also returns the hidden state
    (llama.cpp's `embeddings` on), as `LlamaModel(hidden_states=True)` does.
    `extra_buffers=False` keeps ggml's extra buffer types (repacked weights) off.
    """
    with contextlib.ExitStack() as stack:
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = 0
        # weights read into buffers, as the server's workers load them (`LlamaModel`): with the
        # huge-pages tunable this process inherits, both sides stream weights from 2 MB pages
        model_params.load_mode = llama_cpp.LLAMA_LOAD_MODE_NONE
        model_params.use_extra_bufts = extra_buffers
        device_list = None  # must outlive the load call
        if llama_device is not None:
            device_list = place_on_device(model_params, llama_device, path)
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), model_params)
        del device_list
        if not model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        stack.callback(llama_cpp.llama_model_free, model)

        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_threads = threads
        params.n_threads_batch = threads
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED  # no flash attention
        if rows:
            params.embeddings = True  # the hidden state as well as the logits
            params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_NONE  # one row per position
            params.n_outputs_max = n_batch  # with embeddings on, every row is an output
        ctx = llama_cpp.llama_init_from_model(model, params)
        if not ctx:
            raise RuntimeError(f"llama.cpp could not create a context of {n_ctx} for {path}")
        stack.callback(llama_cpp.llama_free, ctx)

        n_embd = llama_cpp.llama_model_n_embd(model) if rows else 0
        batch = llama_cpp.llama_batch_init(n_batch, n_embd, 1)
        stack.callback(llama_cpp.llama_batch_free, batch)
        n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
        yield RawLm(ctx, batch, llama_cpp.llama_get_memory(ctx), n_vocab, n_embd)


def _fill_positions(lm: RawLm, n_rows: int, first_position: int) -> None:
    lm.batch.n_tokens = n_rows
    for i in range(n_rows):
        lm.batch.pos[i] = first_position + i
        lm.batch.n_seq_id[i] = 1
        lm.batch.seq_id[i][0] = 0
        lm.batch.logits[i] = i == n_rows - 1


def _run(lm: RawLm) -> None:
    status = llama_cpp.llama_decode(lm.ctx, lm.batch)
    if status != 0:
        raise RuntimeError(f"llama_decode failed with status {status}")


def decode_tokens(lm: RawLm, tokens: Sequence[int], first_position: int) -> None:
    """One `llama_decode` of `tokens` at positions first_position…, logits of the last only."""
    _fill_positions(lm, len(tokens), first_position)
    for i, token in enumerate(tokens):
        lm.batch.token[i] = int(token)
    _run(lm)


def decode_rows(lm: RawLm, rows: np.ndarray, first_position: int) -> None:
    """One `llama_decode` of embedding rows (n, n_embd) float32 at positions first_position…"""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    _fill_positions(lm, len(rows), first_position)
    ctypes.memmove(lm.batch.embd, rows.ctypes.data, rows.nbytes)
    _run(lm)


def last_logits(lm: RawLm) -> np.ndarray:
    """The last decoded row's logits (n_vocab,) float32, a view into llama.cpp's buffer."""
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(lm.ctx, -1), shape=(lm.n_vocab,))


def last_hidden(lm: RawLm) -> np.ndarray:
    """The last decoded row's final hidden state (n_embd,) float32, a copy (`rows=True` only)."""
    hidden = llama_cpp.llama_get_embeddings_ith(lm.ctx, -1)
    return np.ctypeslib.as_array(hidden, shape=(lm.n_embd,)).copy()


def prefill(lm: RawLm, n_tokens: int, rng: np.random.Generator, cached: int = 0) -> float:
    """Seconds to evaluate a prompt of `n_tokens` random tokens (random rows for a row-input
    model) on a cleared cache, after `cached` random ones (not timed): the depth at which the
    server's prompt starts when its cache held a prefix (OuteTTS's speaker profile)."""
    llama_cpp.llama_memory_clear(lm.memory, True)
    _evaluate(lm, _random_input(lm, cached, rng), 0)
    prompt = _random_input(lm, n_tokens, rng)
    started = time.perf_counter()
    _evaluate(lm, prompt, cached)
    return time.perf_counter() - started


def _random_input(lm: RawLm, n: int, rng: np.random.Generator) -> np.ndarray:
    """n random rows (n, n_embd) float32 for a row-input model, else n random tokens (n,)."""
    if lm.n_embd:
        return rng.standard_normal((n, lm.n_embd), dtype=np.float32)
    return rng.integers(*PROMPT_TOKEN_RANGE, size=n)


def _evaluate(lm: RawLm, inputs: np.ndarray, first_position: int) -> None:
    """Evaluate tokens or rows at first_position…, BATCH_TOKENS at a time."""
    for first in range(0, len(inputs), BATCH_TOKENS):
        part = inputs[first : first + BATCH_TOKENS]
        if lm.n_embd:
            decode_rows(lm, part, first_position + first)
        else:
            decode_tokens(lm, part.tolist(), first_position + first)


def greedy_decode(lm: RawLm, first_position: int, n_tokens: int) -> float:
    """Seconds for `n_tokens` greedy steps after the cached prompt (argmax over every token)."""
    started = time.perf_counter()
    for position in range(first_position, first_position + n_tokens):
        decode_tokens(lm, [int(np.argmax(last_logits(lm)))], position)
    return time.perf_counter() - started


def quiet_llama_cpp() -> None:
    """Initialise llama.cpp's backends as the server does (`init_runtime`: dynamically loaded
    ones too) and drop its log output (the worker's stdout is JSON)."""
    init_runtime()
    llama_cpp.llama_log_set(_QUIET, ctypes.c_void_p(0))


_QUIET = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
"""Kept at module level: llama.cpp calls it long after `quiet_llama_cpp` returns."""
