"""The benchmark report: Markdown for people (stdout), JSON with every raw number (`--json`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .machine import Machine
from .results import (
    DECODE_RATIO_GOAL,
    DISTURBED_CORES,
    FIRST_AUDIO_RATIO_GOAL,
    Ceiling,
    Row,
    WarmUp,
)


@dataclass(frozen=True)
class BenchSettings:
    """What the command line asked for."""

    full_size: bool
    """Full-size random models (cached in `models_dir`) instead of tiny ones."""
    models_dir: Path
    threads: int
    runs: int
    """Timed requests per voice and mode, and raw-ceiling runs."""
    max_tokens: int
    """Tokens generated per request (the catalog's `max_tokens` for token-capped models)."""
    max_frames: int
    """Frames generated per request (the catalog's `max_frames` for frame-capped models)."""
    text: str
    voices_limit: int
    """Voices benchmarked per model."""
    engines: tuple[str, ...]
    """Engines whose models are benchmarked."""
    options: dict[str, Any]
    """Catalog options set on every benchmarked model (`--option`)."""
    device: str | None
    """Every benchmarked model's device (`--device`); None: the catalog's."""
    json_path: Path | None

    @property
    def size(self) -> str:
        """`tiny` or `full-size`, as `modelgen` names them."""
        return "full-size" if self.full_size else "tiny"


@dataclass(frozen=True)
class Report:
    """Everything one benchmark run found."""

    settings: BenchSettings
    machine: Machine
    load_averages: dict[str, tuple[float, float, float]]
    """"start" and "end" of the measurements → 1, 5 and 15-minute load averages."""
    others_cores: float | None
    """Cores other processes kept busy during the measurements, on average."""
    warmups: dict[str, WarmUp]
    ceilings: dict[str, Ceiling]
    rows: list[Row]


def _num(value: float) -> str:
    """Three significant digits: 26.3, 5.41, 0.0123."""
    return f"{value:.3g}"


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


def _goal(ratio: float, met: bool) -> str:
    return f"{ratio:.2f} ({'met' if met else 'missed'})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def render_markdown(report: Report) -> str:
    """The report as Markdown: settings and machine, raw ceiling, server table, goal ratios."""
    s, m = report.settings, report.machine
    versions = ", ".join(f"{name} {version}" for name, version in m.versions.items())
    lines = [
        "# wyoming-multitts benchmark",
        "",
        f"- Models: {s.size} random-weight models; max_tokens {s.max_tokens} "
        f"(Qwen3-TTS: max_frames {s.max_frames}) per request; "
        f"runs per row: {s.runs}; threads: {s.threads}; device: {s.device or 'auto'}"
        + "".join(f"; {name}: {value}" for name, value in s.options.items()),
        f'- Text ({len(s.text)} characters): "{s.text}"',
        f"- Machine: {m.cpu}, {m.cores} cores, {m.ram_gib:.1f} GiB RAM; Python {m.python}; "
        f"{versions}",
        "- Load average (1 / 5 / 15 min): "
        + "; ".join(f"{phase} {_load(load)}" for phase, load in report.load_averages.items()),
    ]
    lines += [f"- GPU: {gpu}" for gpu in m.gpus]
    others = "?" if report.others_cores is None else f"{report.others_cores:.2f}"
    lines.append(f"- Other processes kept {others} cores busy on average meanwhile")
    lines += [f"- {name}: {c.system_info}" for name, c in report.ceilings.items()]

    lines += ["", "## Raw ceiling (llama.cpp C API or, for Bark, its torch stages; greedy)", ""]
    ceiling_rows = []
    for name, c in report.ceilings.items():
        for prompt_tokens in sorted(c.prefill_s):
            ceiling_rows.append(
                [
                    name,
                    _num(c.load_s),
                    str(c.cached_tokens),
                    str(prompt_tokens),
                    _num(c.prefill_tok_s(prompt_tokens)),
                    _num(c.decode_tok_s),
                    c.clean_runs,
                    f"{c.codec_window_frames} frames: {_num(c.codec_window_s)} s"
                    + (" (disturbed)" if c.codec_disturbed else ""),
                    _num(c.codec_window_s / c.codec_window_audio_s),
                ]
            )
    header = ["model", "load s", "cached tokens", "prompt tokens", "prefill tok/s", "decode tok/s"]
    header.append("clean runs")
    lines += _table(header + ["codec first window", "codec s per audio s"], ceiling_rows)

    lines += [
        "",
        "## Server over Wyoming",
        "",
        "Medians of the clean runs: those during which other processes kept at most "
        f"{DISTURBED_CORES} cores busy (all runs if none was clean).",
        "",
    ]
    for name, warmup in report.warmups.items():
        loaded = "?" if warmup.load_s is None else _num(warmup.load_s)
        estimated = "?" if warmup.estimated_mb is None else f"{warmup.estimated_mb:.0f}"
        peak = "?" if warmup.peak_resident_mb is None else f"{warmup.peak_resident_mb:.0f}"
        lines.append(
            f"- {name}: model load {loaded} s; warm-up request TTFA "
            f"{_num(warmup.timing.ttfa_s)} s, total {_num(warmup.timing.total_s)} s; worker "
            f"memory estimated {estimated} MB, peak resident {peak} MB"
        )
    lines.append("")
    summaries = [(row, row.summary()) for row in report.rows]
    lines += _table(
        [
            "model",
            "voice",
            "mode",
            "clean runs",
            "TTFA s",
            "total s",
            "audio s",
            "RTF",
            "decode tok/s",
            "prefill tok/s",
            "codec s per audio s",
            "raw prefill tok/s",
            "raw decode tok/s",
        ],
        [
            [row.model, row.voice, row.mode, x["clean_runs"]]
            + [
                _num(x[key])
                for key in (
                    "ttfa_s",
                    "total_s",
                    "audio_s",
                    "rtf",
                    "server_decode_tok_s",
                    "server_prefill_tok_s",
                    "codec_s_per_audio_s",
                    "raw_prefill_tok_s",
                    "raw_decode_tok_s",
                )
            ]
            for row, x in summaries
        ],
    )

    lines += [
        "",
        "## Goals",
        "",
        "Decode: the median over rounds of each request's rate over the raw run of its own round "
        "(raw after the server's requests in odd rounds, before them in even ones), so a busy "
        "neighbour slows both sides of a ratio alike; min – max: the spread of those ratios.",
        "",
    ]
    lines += _table(
        [
            "model",
            "voice",
            "mode",
            f"server decode / raw decode (goal ≥ {DECODE_RATIO_GOAL})",
            "paired ratios min – max",
            "ideal first audio s",
            f"TTFA / ideal (goal ≤ {FIRST_AUDIO_RATIO_GOAL})",
        ],
        [
            [
                row.model,
                row.voice,
                row.mode,
                _goal(x["decode_ratio"], x["decode_ratio"] >= DECODE_RATIO_GOAL),
                " – ".join(f"{ratio:.2f}" for ratio in x["decode_ratio_spread"]),
                _num(x["ideal_first_audio_s"]),
                _goal(x["first_audio_ratio"], x["first_audio_ratio"] <= FIRST_AUDIO_RATIO_GOAL),
            ]
            for row, x in summaries
        ],
    )
    return "\n".join(lines + _split_table(summaries)) + "\n"


def _split_table(summaries: list[tuple[Row, dict[str, Any]]]) -> list[str]:
    """Milliseconds per frame of each stage, server beside raw, for multi-stage engines."""
    rows = []
    for row, x in summaries:
        raw = row.ceiling.split_s_per_frame
        for stage, seconds in x["split_s_per_frame"].items():
            raw_ms = f"{raw[stage] * 1000:.3g}" if stage in raw else "-"
            rows.append([row.model, row.voice, row.mode, stage, f"{seconds * 1000:.3g}", raw_ms])
    if not rows:
        return []
    return [
        "",
        "## Stage split (ms per frame)",
        "",
        "Server: the engine's `split` log lines over the frames it generated; raw: the ceiling's "
        "greedy frames, then as many random frames through the decoder in the engine's windows "
        "(codec; where the ceiling has no such loop, its first window per frame).",
        "",
    ] + _table(["model", "voice", "mode", "stage", "server ms", "raw ms"], rows)


def report_json(report: Report) -> dict[str, Any]:
    """Every number of the run: settings, machine, ceilings, each request and each row's medians."""
    return {
        "settings": {
            **dataclasses.asdict(report.settings),
            "models_dir": str(report.settings.models_dir),
            "json_path": str(report.settings.json_path),
        },
        "machine": dataclasses.asdict(report.machine),
        "load_averages": report.load_averages,
        "others_cores": report.others_cores,
        "warmups": {name: dataclasses.asdict(w) for name, w in report.warmups.items()},
        "ceilings": {name: c.raw for name, c in report.ceilings.items()},
        "rows": [
            {
                "model": row.model,
                "voice": row.voice,
                "mode": row.mode,
                "summary": row.summary(),
                "requests": [dataclasses.asdict(r) for r in row.requests],
            }
            for row in report.rows
        ],
    }
