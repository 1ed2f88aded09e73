"""Command line: `script/benchmark [--full-size] [--models-dir DIR] [--threads N] [--runs N]
[--max-tokens N] [--max-frames N] [--text TEXT] [--voices-limit N] [--engine NAME]…
[--option NAME=VALUE]… [--device DEVICE] [--json FILE]`, or
`script/benchmark --text-front-end [--runs N]` (tools/bench/text.py), or
`script/benchmark --create-speaker [--runs N]` (tools/bench/speaker.py), or
`script/benchmark --kernels [--runs N]` (tools/bench/kernels.py), or
`script/benchmark --satellite [--full-size] [--engine NAME]… [--runs N]` (tools/bench/satellite.py).

Run order: models; the server and, per model, a warm-up request (it loads the model); the raw
ceiling worker; then `--runs` rounds of every voice × mode on a fresh connection followed by one
raw run with the prompt lengths the server reported; last, the first codec window. Markdown goes
to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import signal
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any, Sequence

import yaml

from wyoming_multitts.__main__ import configure_thread_pools, request_huge_pages

from . import kernels, satellite, speaker
from . import text as text_front_end
from .ceiling_process import CeilingProcess
from .client import MODES, PLAIN, timed_request
from .machine import cpu_clock, describe_machine, load_average, others_cores
from .models import (
    BENCH_CATALOG,
    BENCHMARKED_ENGINES,
    BenchError,
    benchmarked_voices,
    ensure_models,
    write_bench_catalog,
)
from .report import BenchSettings, Report, render_markdown, report_json
from .results import Ceiling, RequestRecord, Row, WarmUp
from .server import BenchServer

_LOGGER = logging.getLogger("tools.bench")

DEFAULT_MODELS_DIR = Path(__file__).resolve().parents[2] / "local" / "benchmark-models"
"""Where `--full-size` keeps its models between runs (git-ignored)."""
DEFAULT_TEXT = "The living room lights are off, and the front door is locked."
"""A typical Home Assistant answer: one sentence, one text piece."""
DEFAULT_MAX_TOKENS = 140
"""Orpheus: 20 SNAC frames ≈ 1.7 s of audio (≈ 26 s a request at 5.4 tok/s); OuteTTS: 140 codes ≈
1.9 s."""
DEFAULT_MAX_FRAMES = 20
"""Qwen3-TTS: 20 frames of 16 codes = 1.6 s of audio, about what the token cap gives the others."""
DEFAULT_RUNS = 3
DEFAULT_VOICES_LIMIT = 1
"""Voices of a model differ only in the speaker name of the prompt, so one is usually enough."""


def build_parser() -> argparse.ArgumentParser:
    """The command line (`--help` lists it)."""
    parser = argparse.ArgumentParser(
        prog="script/benchmark",
        description="Time the server over Wyoming next to the raw llama.cpp and codec ceiling.",
    )
    parser.add_argument(
        "--full-size",
        action="store_true",
        help="full-size random models (Orpheus-3B Q4_K_M, 2.4 GB; built once, minutes) "
        "instead of tiny ones in a temporary folder",
    )
    parser.add_argument(
        "--models-dir",
        type=Path,
        metavar="DIR",
        default=DEFAULT_MODELS_DIR,
        help=f"where --full-size keeps its models (default: {DEFAULT_MODELS_DIR})",
    )
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        default=os.cpu_count() or 1,
        help="threads for llama.cpp and torch, server and ceiling (default: all cores)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_RUNS,
        metavar="N",
        help=f"timed runs per row (default {DEFAULT_RUNS})",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        default=DEFAULT_MAX_TOKENS,
        help=f"tokens generated per request (default {DEFAULT_MAX_TOKENS}: random weights "
        "rarely stop on their own)",
    )
    parser.add_argument(
        "--max-frames",
        type=int,
        metavar="N",
        default=DEFAULT_MAX_FRAMES,
        help=f"frames generated per request by Qwen3-TTS (default {DEFAULT_MAX_FRAMES})",
    )
    parser.add_argument("--text", default=DEFAULT_TEXT, help="the text every request speaks")
    parser.add_argument(
        "--voices-limit",
        type=int,
        metavar="N",
        default=DEFAULT_VOICES_LIMIT,
        help=f"voices benchmarked per model (default {DEFAULT_VOICES_LIMIT})",
    )
    parser.add_argument(
        "--engine",
        action="append",
        choices=BENCHMARKED_ENGINES,
        help="benchmark only this engine's models (repeatable; default: all)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a catalog option of every benchmarked model, the value read as YAML "
        "(repeatable; e.g. --engine bark --option weights=int8)",
    )
    parser.add_argument(
        "--device",
        metavar="DEVICE",
        help="every benchmarked model's device, for the server and the raw ceiling alike: "
        "cpu, cuda[:N], … (default: the catalog's, auto)",
    )
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="also write every raw number to this file"
    )
    return parser


Records = dict[tuple[str, str, str], list[RequestRecord]]
"""(model, voice, mode) → its timed requests."""


def _cores(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"


async def timed_server_request(
    server: BenchServer, ceiling: CeilingProcess, voice: str, mode: str, text: str
) -> RequestRecord:
    """One request on a fresh connection, its text pieces' figures and the disturbance meanwhile."""
    ours = [server.pid, ceiling.pid]
    clock = cpu_clock(ours)
    timing = await timed_request(server.port, mode, text, voice)
    others = others_cores(clock, cpu_clock(ours))
    pieces = server.new_stats()
    if not pieces:
        raise BenchError(f"no figures for {voice} {mode} in {server.stats_path}")
    return RequestRecord(timing, pieces, others)


def _prompt_lengths(records: Records) -> set[int]:
    """Prompt lengths of the first text pieces the server has seen."""
    return {r.pieces[0].prompt_tokens for requests in records.values() for r in requests}


def _cached_tokens(records: Records) -> int:
    """The deepest cached prefix the first text pieces started after (0 when none)."""
    return max(r.pieces[0].cached_tokens for requests in records.values() for r in requests)


async def measure_model(
    server: BenchServer, catalog: Path, model: str, voices: list[str], settings: BenchSettings
) -> tuple[WarmUp, Records, Ceiling]:
    """Warm-up, then `runs` rounds of every voice × mode through the server and one raw run.

    Raw runs alternate with server requests (after them in odd rounds, before them in even
    ones) so both see the machine in the same state; each request's ratio is taken against the
    raw run of its own round (`Row.summary`).
    """
    _LOGGER.info("%s: warm-up request (loads the model)", model)
    timing = await timed_request(server.port, PLAIN, settings.text, voices[0])
    server.new_stats()  # not part of the medians
    warmup = WarmUp(server.load_seconds(model), timing)
    _LOGGER.info("%s: starting the raw ceiling", model)
    ceiling = await asyncio.to_thread(
        CeilingProcess,
        catalog,
        model,
        settings.threads,
        settings.max_tokens,
        settings.max_frames,
    )
    records: Records = {}
    try:
        for run in range(1, settings.runs + 1):
            # alternate which goes first, so a trend in the machine's load favours neither
            if run % 2 == 0:
                await raw_run(ceiling, records, run, settings.runs)
            for voice in voices:
                for mode in MODES:
                    record = await timed_server_request(server, ceiling, voice, mode, settings.text)
                    records.setdefault((model, voice, mode), []).append(record)
                    _LOGGER.info(
                        "run %d/%d %s %s: TTFA %.2f s, total %.2f s, %.1f tok/s; others %s cores",
                        run,
                        settings.runs,
                        voice,
                        mode,
                        record.timing.ttfa_s,
                        record.timing.total_s,
                        record.decode_tok_s,
                        _cores(record.others_cores),
                    )
            if run % 2 == 1:
                await raw_run(ceiling, records, run, settings.runs)
        _LOGGER.info("%s: timing the first codec window", model)
        result = await asyncio.to_thread(ceiling.finish)
    finally:
        ceiling.stop()
    estimated_mb, peak_mb = server.worker_memory(model)
    warmup = dataclasses.replace(warmup, estimated_mb=estimated_mb, peak_resident_mb=peak_mb)
    return warmup, records, Ceiling.from_json(result)


async def raw_run(ceiling: CeilingProcess, records: Records, run: int, runs: int) -> None:
    """One run of the raw ceiling with the prompt lengths the server's requests had."""
    raw = await asyncio.to_thread(ceiling.run, _prompt_lengths(records), _cached_tokens(records))
    _LOGGER.info(
        "run %d/%d raw: %.1f tok/s; others %s cores",
        run,
        runs,
        raw["decode_tok_s"],
        _cores(raw["others_cores"]),
    )


async def measure(
    server: BenchServer, catalog: Path, voices: dict[str, list[str]], settings: BenchSettings
) -> dict[str, tuple[WarmUp, Records, Ceiling]]:
    """`measure_model` for every benchmarked model, one after the other."""
    return {
        model: await measure_model(server, catalog, model, model_voices, settings)
        for model, model_voices in voices.items()
    }


def run_benchmark(settings: BenchSettings, work: Path) -> Report:
    """Models, then server and raw ceiling: everything `main` reports."""
    models_dir = settings.models_dir if settings.full_size else work / "models"
    source = ensure_models(settings.size, models_dir, settings.threads, settings.engines)
    catalog = write_bench_catalog(
        source,
        work / BENCH_CATALOG,
        settings.max_tokens,
        settings.max_frames,
        settings.options,
        settings.device,
    )
    voices = benchmarked_voices(catalog, settings.voices_limit, settings.engines)

    load_start = load_average()
    clock = cpu_clock()
    # one piece a request, its audio sent as it is made, as the raw ceiling does: no first
    # clause apart and no hold of a slow model's first audio (--satellite measures both)
    flags = ["--threads", str(settings.threads), "--no-first-clause", "--no-hold-audio"]
    server = BenchServer(catalog.path, flags, work / "server.log")
    try:
        results = asyncio.run(measure(server, catalog.path, voices, settings))
    except BenchError as err:
        raise BenchError(f"{err}\n--- end of the server log:\n{server.log_tail()}") from err
    finally:
        server.stop()
    return Report(
        settings=settings,
        machine=describe_machine(),
        load_averages={"start": load_start, "end": load_average()},
        others_cores=others_cores(clock, cpu_clock()),
        warmups={model: warmup for model, (warmup, _, _) in results.items()},
        ceilings={model: ceiling for model, (_, _, ceiling) in results.items()},
        rows=[
            Row(model, voice, mode, requests, ceiling)
            for model, (_, records, ceiling) in results.items()
            for (_, voice, mode), requests in records.items()
        ],
    )


def parse_settings(argv: Sequence[str] | None) -> BenchSettings:
    """Parse the command line into `BenchSettings` (exits with a hint on errors)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if min(args.threads, args.runs, args.max_tokens, args.max_frames, args.voices_limit) < 1:
        parser.error(
            "--threads, --runs, --max-tokens, --max-frames and --voices-limit must be at least 1"
        )
    options: dict[str, Any] = {}
    for option in args.option:
        name, equals, value = option.partition("=")
        if not (name and equals):
            parser.error(f"--option {option!r}: expected NAME=VALUE, e.g. weights=int8")
        options[name] = yaml.safe_load(value)
    return BenchSettings(
        full_size=args.full_size,
        models_dir=args.models_dir,
        threads=args.threads,
        runs=args.runs,
        max_tokens=args.max_tokens,
        max_frames=args.max_frames,
        text=args.text,
        voices_limit=args.voices_limit,
        engines=tuple(args.engine or BENCHMARKED_ENGINES),
        options=options,
        device=args.device,
        json_path=args.json,
    )


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    sys.exit(f"benchmark stopped by signal {signum}")


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark; print the Markdown report, write the JSON one if asked."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--text-front-end"]:
        text_front_end.main(argv[1:])
        return
    if argv[:1] == ["--kernels"]:
        kernels.main(argv[1:])
        return
    if argv[:1] == ["--create-speaker"]:
        speaker.main(argv[1:])
        return
    if argv[:1] == ["--satellite"]:
        satellite.main(argv[1:])
        return
    settings = parse_settings(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # The server sets these pools and huge pages itself; the ceiling process inherits them from
    # here, so both run llama.cpp and torch with the same thread and memory settings.
    configure_thread_pools(settings.threads)
    request_huge_pages()
    # SIGTERM unwinds like an error, so the server and the ceiling worker are stopped too
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        with tempfile.TemporaryDirectory(prefix="wyoming-multitts-bench-") as work:
            report = run_benchmark(settings, Path(work))
    except BenchError as err:
        sys.exit(f"benchmark failed: {err}")
    print(render_markdown(report), end="")
    if settings.json_path:
        settings.json_path.write_text(
            json.dumps(report_json(report), indent=2) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
