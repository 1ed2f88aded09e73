"""Raw ceiling of one model: llama.cpp prefill and decode speed, and its codec's first window.

A worker the benchmark starts with the server's thread environment and drives over pipes, so
that raw runs alternate with server requests (on a shared VM the speed drifts by 10-20 % over
minutes; runs close in time compare fairly):

    python -m tools.bench.ceiling CATALOG MODEL --threads N --decode-tokens 140 \
        --decode-frames 20

It loads the model, warms up and prints a JSON line `{"load_s": …}`. Then, for every line
`{"prompt_tokens": [66, 65], "cached_tokens": 0}` on stdin, it measures one run (each prompt
evaluated after that many cached tokens) and prints its figures as a JSON line.
At end of input it times the first codec window (SNAC for Orpheus, the WavTokenizer vocoder for
OuteTTS 0.2/0.3 and DAC for 1.0, the 12 Hz decoder for Qwen3-TTS, Bark's whole EnCodec decode)
and prints a last JSON line.

It talks to llama.cpp's C API directly (`raw_llama`; `raw_qwen3` for the Qwen3-TTS talker and
code predictor): Orpheus and OuteTTS decode `--decode-tokens` greedy tokens, Qwen3-TTS
`--decode-frames` greedy frames of 16 codes. Bark, all torch, runs its own modules in a bare
greedy loop (`raw_bark`) for the catalog's `max_semantic_tokens`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import llama_cpp
import numpy as np
import torch

from wyoming_multitts.catalog import ModelSpec, load_catalog
from wyoming_multitts.codecs.encodec24 import Encodec24Decoder
from wyoming_multitts.codecs.qwen3_12hz import load_qwen3_codec
from wyoming_multitts.codecs.snac24 import SnacDecoder
from wyoming_multitts.devices import Device, resolve_device, set_torch_threads, torch_device_for
from wyoming_multitts.engines.bark import checkpoint as bark_checkpoint
from wyoming_multitts.engines.bark import engine as bark
from wyoming_multitts.engines.orpheus import engine as orpheus
from wyoming_multitts.engines.outetts import dialects as outetts_dialects
from wyoming_multitts.engines.outetts import engine as outetts
from wyoming_multitts.engines.qwen3tts import engine as qwen3tts
from wyoming_multitts.errors import context
from wyoming_multitts.options import apply_options

from . import raw_bark, raw_qwen3
from .machine import cpu_clock, others_cores
from .raw_llama import RawLm, greedy_decode, prefill, quiet_llama_cpp, raw_lm

WARMUP_PROMPT_TOKENS = 32
WARMUP_DECODE_TOKENS = 8
"""The warm-up run: graph allocation and the first touch of every buffer."""
CODEC_REPEATS = 7
"""Timed first-window codec decodes (after one warm-up); each is ~0.05-0.3 s on 2 cores."""
SNAC_CODES_PER_FRAME = (1, 2, 4)
"""Codes per frame of SNAC's three levels (vq_strides 4, 2, 1)."""
SNAC_CODEBOOK_SIZE = 4096
SEED = 1


def measure_run(
    lm: RawLm,
    prompt_lengths: Sequence[int],
    cached_tokens: int,
    decode_tokens: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Prefill each prompt length after `cached_tokens` on a cleared cache, then decode after
    the longest: the same depths as the server's.

    Also records how many cores other processes kept busy meanwhile.
    """
    lengths = sorted(set(prompt_lengths))
    clock = cpu_clock()
    prefill_s = {str(length): prefill(lm, length, rng, cached_tokens) for length in lengths}
    depth = cached_tokens + lengths[-1]
    decode_tok_s = decode_tokens / greedy_decode(lm, depth, decode_tokens)
    return {
        "prefill_s": prefill_s,
        "cached_tokens": cached_tokens,
        "decode_tok_s": decode_tok_s,
        "others_cores": others_cores(clock, cpu_clock()),
    }


@dataclass(frozen=True)
class CodecWindow:
    """How an engine sizes its context and first streamed window, and how to time that window."""

    n_ctx: int
    frame_tokens: int
    """Tokens the language model writes per codec frame (Orpheus 7; OuteTTS ~1 per code, 1.0
    ~2: a c1 and a c2 code)."""
    first_window_frames: int
    decode: Callable[[], object]
    """One decode of a first window of random codes, with the engine's own decoder."""
    samples_per_frame: int
    sample_rate: int
    first_audio_tokens: int | None = None
    """Tokens generated before the first audio can be decoded, when that is not
    `frame_tokens × first_window_frames` (Bark: every semantic token of the sentence)."""


def orpheus_window(model: ModelSpec, threads: int, device: Device) -> CodecWindow:
    """Orpheus: SNAC, `first_chunk_frames + context_right` frames of 7 tokens."""
    options = apply_options(orpheus.OrpheusOptions(), model.options)
    frames = options.first_chunk_frames + options.context_right
    set_torch_threads(threads)
    decoder = SnacDecoder(
        _local_path(model, "codec"), torch_device_for(device), options.codec_noise
    )
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


def outetts_window(model: ModelSpec, threads: int, device: Device) -> CodecWindow:
    """OuteTTS: its codec (the WavTokenizer vocoder for 0.2/0.3, DAC for 1.0), a window of
    `first_chunk_codes + context_right` frames of 1 token (WavTokenizer) or 2 (DAC)."""
    vocoder = _local_path(model, "vocoder")
    version = outetts_dialects.version_of_vocoder(vocoder)
    options = apply_options(outetts.default_options(version), model.options)
    frames = options.first_chunk_codes + options.context_right
    set_torch_threads(threads)
    codec = outetts_dialects.VERSIONS[version].codec(vocoder, device, threads, options.windows)
    codes = np.random.default_rng(SEED).integers(
        0, codec.codebook_size, (frames, codec.codes_per_frame)
    )  # (F, 1 or 2) int64
    return CodecWindow(
        n_ctx=options.n_ctx,
        frame_tokens=codec.codes_per_frame,
        first_window_frames=frames,
        decode=lambda: codec.decode(codes),
        samples_per_frame=codec.samples_per_frame,
        sample_rate=codec.sample_rate,
    )


def qwen3_window(model: ModelSpec, threads: int, device: Device) -> CodecWindow:
    """Qwen3-TTS: the 12 Hz decoder, `first_chunk_frames` frames of 16 codes (no lookahead)."""
    options = apply_options(qwen3tts.Qwen3Options(), model.options)
    set_torch_threads(threads)
    codec = load_qwen3_codec(
        _local_path(model, "model") / "speech_tokenizer", torch_device_for(device)
    )
    frames = options.first_chunk_frames
    codes = np.random.default_rng(SEED).integers(
        0, codec.config.codebook_size, size=(frames, codec.config.num_quantizers)
    )  # (F, Q) int64
    return CodecWindow(
        n_ctx=qwen3tts.PROMPT_ROWS_MAX + options.max_frames,  # as the engine sizes the talker's
        frame_tokens=codec.config.num_quantizers,
        first_window_frames=frames,
        decode=lambda: codec.decode(codes),
        samples_per_frame=codec.samples_per_frame,
        sample_rate=codec.sample_rate,
    )


def bark_window(model: ModelSpec, threads: int, device: Device) -> CodecWindow:
    """Bark: the sentence's whole EnCodec decode (it has no stream): the fine frames of
    `max_semantic_tokens`, after all of those tokens."""
    options = apply_options(bark.BarkOptions(), model.options)
    set_torch_threads(threads)
    folder = _local_path(model, "model")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    weights = bark_checkpoint.load_weights(folder / "pytorch_model.bin")
    codec = Encodec24Decoder(config["codec_config"], weights, torch_device_for(device))
    frames = bark.coarse_steps(options.max_semantic_tokens) // bark.N_COARSE_CODEBOOKS
    codes = torch.from_numpy(
        np.random.default_rng(SEED).integers(0, bark.CODEBOOK_SIZE, (bark.N_FINE_CODEBOOKS, frames))
    )  # (8, F) int64
    return CodecWindow(
        n_ctx=0,  # no llama.cpp context
        frame_tokens=1,
        first_window_frames=frames,
        decode=lambda: codec.decode(codes).cpu(),  # .cpu(): waits for a GPU, as the engine does
        samples_per_frame=codec.hop_length,
        sample_rate=codec.sample_rate,
        first_audio_tokens=options.max_semantic_tokens,
    )


CODEC_WINDOWS = {
    "orpheus": orpheus_window,
    "outetts": outetts_window,
    "qwen3tts": qwen3_window,
    "bark": bark_window,
}
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


def _system_info(engine: str, device: Device) -> str:
    """What ran the ceiling: its device, llama.cpp's CPU features, or torch's build for Bark."""
    if engine == "bark":
        return f"device {device.name}; torch {torch.__version__}, {torch.get_num_threads()} threads"
    system = llama_cpp.llama_print_system_info().decode().strip()
    return f"device {device.name} ({device.llama_device or 'CPU'}); llama.cpp {system}"


def _reply(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


class _TokenLmRuns:
    """Orpheus, OuteTTS: a token-input model; greedy decode of `decode_tokens` tokens."""

    def __init__(self, lm: RawLm, decode_tokens: int) -> None:
        self._lm = lm
        self._decode_tokens = decode_tokens

    def warm_up(self, rng: np.random.Generator) -> None:
        prefill(self._lm, WARMUP_PROMPT_TOKENS, rng)
        greedy_decode(self._lm, WARMUP_PROMPT_TOKENS, WARMUP_DECODE_TOKENS)

    def measure(
        self, prompt_lengths: Sequence[int], cached_tokens: int, rng: np.random.Generator
    ) -> dict[str, Any]:
        return measure_run(self._lm, prompt_lengths, cached_tokens, self._decode_tokens, rng)


class _Qwen3Runs:
    """Qwen3-TTS: talker and code predictor; greedy decode of `decode_frames` frames."""

    def __init__(self, raw: raw_qwen3.Qwen3Raw, decode_frames: int) -> None:
        self._raw = raw
        self._decode_frames = decode_frames

    def warm_up(self, rng: np.random.Generator) -> None:
        raw_qwen3.warm_up(self._raw, rng)

    def measure(
        self, prompt_lengths: Sequence[int], cached_tokens: int, rng: np.random.Generator
    ) -> dict[str, Any]:
        return raw_qwen3.measure_run(
            self._raw, prompt_lengths, cached_tokens, self._decode_frames, rng
        )


class _BarkRuns:
    """Bark: the three torch stages for `max_semantic_tokens` semantic tokens, greedy, with
    the preset of the model's first voice in the catalog (the benchmarked one)."""

    def __init__(self, engine: bark.Bark, options: bark.BarkOptions, speaker: str | None) -> None:
        self._engine = engine
        self._options = options
        self._preset = engine.preset(speaker)

    def warm_up(self, rng: np.random.Generator) -> None:
        raw_bark.measure_run(self._engine, self._options, self._preset, WARMUP_DECODE_TOKENS, rng)

    def measure(
        self, prompt_lengths: Sequence[int], cached_tokens: int, rng: np.random.Generator
    ) -> dict[str, Any]:
        """(The semantic prompt is always 513 tokens merged into 257 positions.)"""
        tokens = self._options.max_semantic_tokens
        return raw_bark.measure_run(self._engine, self._options, self._preset, tokens, rng)


@contextlib.contextmanager
def open_runs(
    model: ModelSpec,
    speaker: str | None,
    window: CodecWindow,
    threads: int,
    device: Device,
    decode_tokens: int,
    decode_frames: int,
) -> Iterator[_TokenLmRuns | _Qwen3Runs | _BarkRuns]:
    """The loaded raw model(s) of `model` on `device`, ready to measure."""
    if model.engine == "bark":
        options = apply_options(bark.BarkOptions(), model.options)
        engine = raw_bark.open_bark(model, _local_path(model, "model"), threads, device)
        try:
            yield _BarkRuns(engine, options, speaker)
        finally:
            engine.close()
    elif model.engine == "qwen3tts":
        model_dir = _local_path(model, "model")
        with raw_qwen3.open_qwen3(model, model_dir, window.n_ctx, threads, device) as raw:
            yield _Qwen3Runs(raw, decode_frames)
    else:
        path = _local_path(model, "model")
        with raw_lm(path, window.n_ctx, threads, llama_device=device.llama_device) as lm:
            yield _TokenLmRuns(lm, decode_tokens)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve measurement requests from stdin (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m tools.bench.ceiling")
    parser.add_argument("catalog", type=Path)
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--decode-tokens", type=int, required=True)
    parser.add_argument("--decode-frames", type=int, required=True)
    args = parser.parse_args(argv)

    catalog = load_catalog(args.catalog)
    model = catalog.models[args.model]
    # the speaker of the model's first voice: the one the benchmark runs first (Bark's preset)
    speaker = next(v.speaker for v in catalog.voices.values() if v.model == model.name)
    with context(f"model {model.name}"):  # what a failure names, as the worker would
        _serve(model, speaker, args.threads, args.decode_tokens, args.decode_frames)


def _serve(
    model: ModelSpec, speaker: str | None, threads: int, decode_tokens: int, decode_frames: int
) -> None:
    """Load the model's raw parts on the catalog's device, as the server places them, answer
    measurement requests, then report the codec's."""
    device = resolve_device(model.device, uses_llama=model.engine != "bark")
    window = CODEC_WINDOWS[model.engine](model, threads, device)

    quiet_llama_cpp()
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    with open_runs(model, speaker, window, threads, device, decode_tokens, decode_frames) as runs:
        load_s = time.perf_counter() - started
        runs.warm_up(rng)  # graph allocation, first touch of every buffer
        _reply({"load_s": load_s, "n_ctx": window.n_ctx})
        for line in sys.stdin:
            request = json.loads(line)
            _reply(runs.measure(request["prompt_tokens"], request["cached_tokens"], rng))

    _reply(
        {
            "codec": measure_codec(window),
            "frame_tokens": window.frame_tokens,
            "first_window_frames": window.first_window_frames,
            "first_audio_tokens": window.first_audio_tokens
            or window.frame_tokens * window.first_window_frames,
            "system_info": _system_info(model.engine, device),
        }
    )


if __name__ == "__main__":
    main()
