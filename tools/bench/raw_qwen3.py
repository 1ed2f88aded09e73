"""Raw ceiling of Qwen3-TTS: the talker and the code predictor through llama.cpp's C API.

Per frame the server runs one talker step (one embedding row in; logits and hidden state out)
and the code predictor from a fresh cache: 2 rows (talker hidden state, code-0 embedding), then
14 single rows, each followed by its head in torch (the heads are tables, not in the GGUF) and a
sample. The ceiling does the same work with greedy argmax and fixed random input rows: what is
left to the server's loop is sampling, the sum of the 16 codebook embeddings and Python.
Tokens are counted as the server's `--stats-file` counts them: the 16 codes of a frame.
Each run then decodes as many random frames with the 12 Hz decoder, in the engine's windows
with its state carried (as a request's frames stream out): the decoder stage's raw loop.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import llama_cpp
import numpy as np
import torch

from wyoming_multitts.catalog import ModelSpec
from wyoming_multitts.codecs.qwen3_12hz import Qwen3Codec12Hz, load_qwen3_codec
from wyoming_multitts.devices import Device, torch_device_for
from wyoming_multitts.engines.qwen3tts.config import Qwen3Options, stored_matrix_type
from wyoming_multitts.engines.qwen3tts.convert import convert_once
from wyoming_multitts.engines.qwen3tts.predictor import PREFILL_ROWS, head_logits, torch_heads
from wyoming_multitts.engines.qwen3tts.tables import map_npz
from wyoming_multitts.options import apply_options

from .machine import cpu_clock, others_cores
from .raw_llama import RawLm, decode_rows, last_hidden, last_logits, prefill, raw_lm


@dataclass
class Qwen3Raw:
    """The talker and predictor contexts, the predictor heads and fixed random input rows."""

    talker: RawLm
    predictor: RawLm
    heads: torch.Tensor
    """(G-1, codebook, predictor hidden), the conversion's dtype: one head per predicted code."""
    codebook_size: int
    talker_row: np.ndarray
    """(1, talker hidden) float32: the input of every talker step."""
    predictor_rows: np.ndarray
    """(2, predictor hidden) float32: the input of every predictor prefill."""
    code_rows: np.ndarray
    """(codebook, predictor hidden) float32: the input row of each predicted code."""
    codec: Qwen3Codec12Hz
    options: Qwen3Options
    """The catalog's options: the decoder's windows (first_chunk_frames, max_chunk_frames)."""

    @property
    def codes_per_frame(self) -> int:
        """Code 0 from the talker, the rest from the predictor (16 for the released models)."""
        return len(self.heads) + 1

    def frame(self, position: int) -> tuple[float, float]:
        """One frame at talker `position`: (talker seconds, predictor seconds)."""
        started = time.perf_counter()
        decode_rows(self.talker, self.talker_row, position)
        np.argmax(last_logits(self.talker)[: self.codebook_size])  # code 0
        last_hidden(self.talker)  # the predictor's first row (its value does not change speed)
        talked = time.perf_counter()

        predictor = self.predictor
        llama_cpp.llama_memory_clear(predictor.memory, True)
        decode_rows(predictor, self.predictor_rows, 0)
        for i in range(len(self.heads)):
            state = last_hidden(predictor)  # (Hp,)
            code = int(np.argmax(head_logits(self.heads, i, state)))
            if i + 1 < len(self.heads):
                decode_rows(predictor, self.code_rows[code][None], PREFILL_ROWS + i)
        return talked - started, time.perf_counter() - talked

    def decode_stream(self, frames: int, rng: np.random.Generator) -> float:
        """Seconds to decode `frames` random frames as the engine streams a request's: windows
        of first_chunk_frames, doubling up to max_chunk_frames, the state carried."""
        config = self.codec.config
        codes = rng.integers(0, config.codebook_size, (frames, config.num_quantizers))  # (F, Q)
        stream = self.codec.stream(
            lambda first, end: codes[first:end],
            None,
            self.options.first_chunk_frames,
            self.options.max_chunk_frames,
        )
        started = time.perf_counter()
        for frame in range(1, frames + 1):  # as the engine pushes: after each frame
            for _ in stream.push(frame):
                pass
        for _ in stream.finish(frames):
            pass
        return time.perf_counter() - started


@contextlib.contextmanager
def open_qwen3(
    model: ModelSpec, model_dir: Path, n_ctx: int, threads: int, device: Device
) -> Iterator[Qwen3Raw]:
    """The converted talker (context of `n_ctx` rows) and predictor of `model`'s release folder
    `model_dir` on `device`, as the engine places them, converting it first if the server has
    not yet."""
    options = apply_options(Qwen3Options(), model.options)
    converted = convert_once(model_dir, stored_matrix_type(options.matrix_type, device))
    torch_device = torch_device_for(device)
    codec = load_qwen3_codec(model_dir / "speech_tokenizer", torch_device)
    config = converted.config
    heads = torch_heads(map_npz(converted.tables)["predictor_heads"], torch_device)  # (G-1, C, Hp)
    rng = np.random.default_rng(0)
    with contextlib.ExitStack() as stack:
        talker = stack.enter_context(
            raw_lm(converted.talker, n_ctx, threads, rows=True, llama_device=device.llama_device)
        )
        predictor = stack.enter_context(
            raw_lm(
                converted.code_predictor,
                config.num_code_groups,
                threads,
                n_batch=PREFILL_ROWS,
                rows=True,
                llama_device=device.llama_device,
            )
        )
        yield Qwen3Raw(
            talker,
            predictor,
            heads,
            config.codebook_size,
            rng.standard_normal((1, talker.n_embd), dtype=np.float32),
            rng.standard_normal((PREFILL_ROWS, predictor.n_embd), dtype=np.float32),
            rng.standard_normal((config.codebook_size, predictor.n_embd), dtype=np.float32),
            codec,
            options,
        )


def warm_up(raw: Qwen3Raw, rng: np.random.Generator) -> None:
    """Graph allocation and the first touch of weights, tables and buffers: a short prompt and
    two frames."""
    prefill(raw.talker, 8, rng)
    for position in (8, 9):
        raw.frame(position)
    raw.decode_stream(raw.options.first_chunk_frames, rng)


def measure_run(
    raw: Qwen3Raw,
    prompt_lengths: Sequence[int],
    cached_rows: int,
    decode_frames: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Prefill each prompt length (random rows) after `cached_rows` (the voice rows the server's
    cache kept) on a cleared cache, then `decode_frames` frames after the longest, then decode
    as many; codes per second and the talker/predictor/codec split per frame."""
    lengths = sorted(set(prompt_lengths))
    clock = cpu_clock()
    prefill_s = {str(length): prefill(raw.talker, length, rng, cached_rows) for length in lengths}
    talker_s = predictor_s = 0.0
    for frame in range(decode_frames):
        talked, predicted = raw.frame(cached_rows + lengths[-1] + frame)
        talker_s += talked
        predictor_s += predicted
    codec_s = raw.decode_stream(decode_frames, rng)
    return {
        "prefill_s": prefill_s,
        "cached_tokens": cached_rows,
        "decode_tok_s": decode_frames * raw.codes_per_frame / (talker_s + predictor_s),
        "split_s_per_frame": {
            "talker": talker_s / decode_frames,
            "predictor": predictor_s / decode_frames,
            "codec": codec_s / decode_frames,
        },
        "others_cores": others_cores(clock, cpu_clock()),
    }
