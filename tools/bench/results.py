"""The benchmark's numbers: the raw ceiling, each timed request, and the medians per table row.

Goal ratios (set by the project):
* `server decode / raw decode` ≥ 0.95: the server's token loop (sampling, Python, the codec
  sharing the cores) costs at most 5 % of llama.cpp's own speed;
* `TTFA / ideal first audio` ≤ 1.2, where ideal = raw prefill of the same prompt + the tokens of
  the first streamed window at the raw decode rate + one first-window codec decode.

On a shared machine another process that takes one of two cores slows llama.cpp's 2-thread
decode several-fold (its threads wait for each other at every step), so each run records how
many cores other processes kept busy, and medians use the undisturbed runs when there are any.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Sequence, TypeVar

from .client import RequestTiming
from .server import PieceStats

DECODE_RATIO_GOAL = 0.95
"""Server decode tok/s over raw decode tok/s must be at least this."""
FIRST_AUDIO_RATIO_GOAL = 1.2
"""Measured time to first audio over the ideal must be at most this."""
DISTURBED_CORES = 0.1
"""A run during which other processes kept more cores than this busy (on average) is disturbed."""

T = TypeVar("T")


def is_disturbed(others_cores: float | None) -> bool:
    """Whether other processes took enough CPU to skew a run (unknown counts as undisturbed)."""
    return others_cores is not None and others_cores > DISTURBED_CORES


def undisturbed(items: Sequence[T], others: Sequence[float | None]) -> list[T]:
    """The items whose run was not disturbed; all of them if every run was."""
    clean = [item for item, cores in zip(items, others) if not is_disturbed(cores)]
    return clean or list(items)


def count_undisturbed(others: Sequence[float | None]) -> str:
    """`2/3`: undisturbed runs of all."""
    return f"{sum(not is_disturbed(cores) for cores in others)}/{len(others)}"


@dataclass(frozen=True)
class Ceiling:
    """Raw llama.cpp and codec figures of one model (medians of the undisturbed `ceiling` runs)."""

    load_s: float
    prefill_s: dict[int, float]
    """Prompt length in tokens → seconds to prefill it (after `cached_tokens`)."""
    cached_tokens: int
    """Tokens evaluated before each timed prompt, as the server's cache held them."""
    decode_tok_s: float
    clean_runs: str
    """Undisturbed runs of all, e.g. `2/3`."""
    codec_window_s: float
    """One decode of the first streamed window."""
    codec_disturbed: bool
    codec_window_frames: int
    codec_window_audio_s: float
    frame_tokens: int
    first_audio_tokens: int
    """Tokens generated before the first audio: the first window's (Bark: the sentence's)."""
    split_s_per_frame: dict[str, float]
    """Stage → seconds per frame of the raw decode (Qwen3-TTS: talker, predictor and the
    decoder's stream; Bark: its stages, plus the codec's per frame of its first window); empty
    for single-stage engines."""
    system_info: str
    raw: dict[str, Any]
    """Everything the `ceiling` process printed, per-run values included."""

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "Ceiling":
        """Medians of what the `ceiling` worker printed (`CeilingProcess.finish`)."""
        runs = raw["runs"]
        others = [run["others_cores"] for run in runs]
        lengths = {length for run in runs for length in run["prefill_s"]}
        prefill_s = {
            int(length): statistics.median(
                undisturbed(
                    [run["prefill_s"][length] for run in runs if length in run["prefill_s"]],
                    [run["others_cores"] for run in runs if length in run["prefill_s"]],
                )
            )
            for length in lengths
        }
        return cls(
            load_s=raw["load_s"],
            prefill_s=prefill_s,
            cached_tokens=max(run.get("cached_tokens", 0) for run in runs),
            decode_tok_s=statistics.median(
                undisturbed([run["decode_tok_s"] for run in runs], others)
            ),
            clean_runs=count_undisturbed(others),
            codec_window_s=statistics.median(raw["codec"]["window_s_runs"]),
            codec_disturbed=is_disturbed(raw["codec"]["others_cores"]),
            codec_window_frames=raw["first_window_frames"],
            codec_window_audio_s=raw["codec"]["audio_s"],
            frame_tokens=raw["frame_tokens"],
            first_audio_tokens=raw["first_audio_tokens"],
            split_s_per_frame=_raw_split(runs, raw),
            system_info=raw["system_info"],
            raw=raw,
        )

    def prefill_tok_s(self, prompt_tokens: int) -> float:
        """Raw prefill speed for a prompt of this length."""
        return prompt_tokens / self.prefill_s[prompt_tokens]

    def ideal_first_audio_s(self, prompt_tokens: int) -> float:
        """Prefill + the first window's tokens at the raw decode rate + one window of the codec."""
        return (
            self.prefill_s[prompt_tokens]
            + self.first_audio_tokens / self.decode_tok_s
            + self.codec_window_s
        )


def _raw_split(runs: list[dict[str, Any]], raw: dict[str, Any]) -> dict[str, float]:
    """Median seconds per frame of each stage over the undisturbed raw runs, and the codec's."""
    split_runs = [run for run in runs if "split_s_per_frame" in run]
    if not split_runs:
        return {}
    others = [run["others_cores"] for run in split_runs]
    split = {
        stage: statistics.median(
            undisturbed([run["split_s_per_frame"][stage] for run in split_runs], others)
        )
        for stage in split_runs[0]["split_s_per_frame"]
    }
    if "codec" in split:  # the decoder's own raw loop over the request's frames (Qwen3-TTS)
        return split
    codec_runs = raw["codec"]["window_s_runs"]
    return {**split, "codec": statistics.median(codec_runs) / raw["first_window_frames"]}


@dataclass(frozen=True)
class RequestRecord:
    """One timed request, the engine's figures for its text pieces, and the disturbance."""

    timing: RequestTiming
    pieces: list[PieceStats]
    others_cores: float | None
    """Cores other processes (not the server, not the benchmark) kept busy meanwhile."""

    @property
    def decode_tok_s(self) -> float:
        """Tokens per second of the server's decode loop, codec time excluded."""
        return sum(p.tokens for p in self.pieces) / sum(p.decode_s for p in self.pieces)

    @property
    def prefill_tok_s(self) -> float:
        """Prompt tokens per second of the server's prefill."""
        return sum(p.prompt_tokens for p in self.pieces) / sum(p.prefill_s for p in self.pieces)

    def split_s_per_frame(self) -> dict[str, float]:
        """Stage → seconds per generated frame over the pieces' `split` lines (empty if none)."""
        frames = sum(p.frames for p in self.pieces)
        stages = {stage for p in self.pieces for stage in p.split_s}
        return {
            stage: sum(p.split_s.get(stage, 0.0) for p in self.pieces) / frames
            for stage in sorted(stages)
        }

    @property
    def codec_s_per_audio_s(self) -> float:
        """Codec seconds per second of audio (infinite when there was none)."""
        codec_s = sum(p.codec_s for p in self.pieces)
        return codec_s / self.timing.audio_s if self.timing.audio_s else math.inf


@dataclass(frozen=True)
class Row:
    """One model/voice/mode: medians over its requests, beside the model's raw ceiling."""

    model: str
    voice: str
    mode: str
    requests: list[RequestRecord]
    ceiling: Ceiling

    @property
    def prompt_tokens(self) -> int:
        """Prompt length of the first text piece (the one first audio waits for)."""
        return self.requests[0].pieces[0].prompt_tokens

    def summary(self) -> dict[str, Any]:
        """Medians of the undisturbed requests, the ceiling beside them, the two goal ratios."""
        others = [r.others_cores for r in self.requests]
        requests = undisturbed(self.requests, others)

        def median(values: list[float]) -> float:
            return statistics.median(values)

        ttfa = median([r.timing.ttfa_s for r in requests])
        splits = [r.split_s_per_frame() for r in requests]
        decode = median([r.decode_tok_s for r in requests])
        # request k ran in round k, beside raw run k: a busy neighbour slows both alike
        paired = [
            request.decode_tok_s / run["decode_tok_s"]
            for request, run in zip(self.requests, self.ceiling.raw["runs"])
        ]
        ideal = self.ceiling.ideal_first_audio_s(self.prompt_tokens)
        return {
            "clean_runs": count_undisturbed(others),
            "prompt_tokens": self.prompt_tokens,
            "tokens": median([sum(p.tokens for p in r.pieces) for r in requests]),
            "ttfa_s": ttfa,
            "total_s": median([r.timing.total_s for r in requests]),
            "audio_s": median([r.timing.audio_s for r in requests]),
            "rtf": median([r.timing.rtf for r in requests]),
            "server_decode_tok_s": decode,
            "server_prefill_tok_s": median([r.prefill_tok_s for r in requests]),
            "codec_s_per_audio_s": median([r.codec_s_per_audio_s for r in requests]),
            "raw_prefill_tok_s": self.ceiling.prefill_tok_s(self.prompt_tokens),
            "raw_decode_tok_s": self.ceiling.decode_tok_s,
            "ideal_first_audio_s": ideal,
            "decode_ratio": median(paired),
            "decode_ratio_spread": (min(paired), max(paired)),
            "decode_ratio_of_medians": decode / self.ceiling.decode_tok_s,
            "first_audio_ratio": ttfa / ideal,
            "split_s_per_frame": {
                stage: median([split[stage] for split in splits]) for stage in splits[0]
            },
        }


@dataclass(frozen=True)
class WarmUp:
    """The first request to a model: it loads the model, so it is not in the medians."""

    load_s: float | None
    """Model load time the server logged."""
    timing: RequestTiming
    estimated_mb: float | None = None
    """The registry's memory estimate for the model's worker (logged at load)."""
    peak_resident_mb: float | None = None
    """The worker's peak resident memory after every timed run (Linux VmHWM)."""
