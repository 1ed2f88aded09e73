"""`script/gpu-check`: every engine on a GPU in one prepared run that writes one report file.

    script/gpu-check [--device cuda] [--tiny] [--report FILE] [--models-dir DIR] [--runs N]
        [--tests EXPR] [--engine NAME]…

Made for a machine reached briefly and without network (docs/gpu.md): it takes what
`script/gpu-carry` brought, writes the random models there, and in five steps checks

1. the environment: torch sees the GPU and this llama.cpp build has the device;
2. the models: random full-size models of every engine (`--tiny`: tiny ones, seconds);
3. behaviour: the server's tests (tests/test_server.py, `-k EXPR` of `--tests`) with every
   test server on the device;
4. placement: one request per model through a server on the device, then from its log and
   `nvidia-smi` every llama.cpp layer on the GPU, the worker's GPU memory and torch's share;
5. speed: `script/benchmark` on the device (server and raw ceiling alike).

The report (Markdown) is rewritten after every step, so a run cut short keeps what it found.
`--device cpu --tiny` runs the same steps on the CPU in a minute or two: the test suite's
smoke test of this script (tests/test_gpu_check.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from tools.bench.__main__ import DEFAULT_MAX_FRAMES, DEFAULT_MAX_TOKENS
from tools.bench.client import PLAIN, timed_request
from tools.bench.machine import nvidia_gpus
from tools.bench.models import (
    BENCH_CATALOG,
    BENCHMARKED_ENGINES,
    benchmarked_voices,
    ensure_models,
    write_bench_catalog,
)
from tools.bench.server import BenchServer
from wyoming_multitts.catalog import ModelSpec
from wyoming_multitts.engines.outetts.dialects import version_of_vocoder

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODELS_DIR = REPO / "local" / "gpu-check-models"
DEFAULT_REPORT = REPO / "local" / "gpu-check.md"
"""Beside the models, in the git-ignored local/."""
DEFAULT_RUNS = 2
"""Benchmark rounds per voice and mode: the least that pairs server and raw runs both ways."""
TEST_FILE = "tests/test_server.py"
TEST_TIMEOUT_S = 600
BENCHMARK_TIMEOUT_S = 900
PLACEMENT_TEXT = "The front door is locked."
LOG_FORMAT = "%(process)d %(levelname)s %(name)s: %(message)s"
"""The server's `--log-format` here: each line names its process, so the worker's llama.cpp
lines can be told apart."""
OFFLOADED = re.compile(
    r"^(?P<pid>\d+) .*offloaded (?P<on_gpu>\d+)/(?P<layers>\d+) layers to GPU", re.MULTILINE
)
"""llama.cpp's line at each model load in a build with a GPU backend (src/llama-model.cpp,
`load_tensors`; at DEBUG here): the layers asked for, not yet where they went."""
BUFFER = re.compile(
    r"^(?P<pid>\d+) .*load_tensors: +(?P<buffer>\S+) model buffer size = +(?P<mib>[\d.]+) MiB",
    re.MULTILINE,
)
"""llama.cpp's lines after that: the weights' bytes per buffer (`CUDA0`, `CPU_Mapped`, …), where
they went (the token embeddings always stay on the CPU: llama-model.cpp, `load_tensors`)."""
ALARM = re.compile(r"^\d+ (WARNING|ERROR|CRITICAL) ")
"""A log line of the server's or a worker's at warning level or above (LOG_FORMAT)."""
LOG_LINES = 40
"""Lines of a failing step's output the report keeps."""
MIB = 2**20
TORCH_ONLY_ENGINES = {"bark"}
"""Engines with no llama.cpp part."""


class CheckFailed(Exception):
    """A step found the machine or the server not as it must be; the message says what."""


@dataclass
class Step:
    """One step's outcome in the report."""

    name: str
    passed: bool
    seconds: float
    lines: list[str] = field(default_factory=list)


@dataclass
class Report:
    """The report file, rewritten as steps finish."""

    path: Path
    device: str
    size: str
    steps: list[Step] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    gpus: list[str] = field(default_factory=nvidia_gpus)
    """`nvidia-smi`'s GPUs, asked once."""

    def add(self, step: Step) -> None:
        """Record a finished step and rewrite the file."""
        self.steps.append(step)
        self.write()

    def write(self) -> None:
        """The whole report as Markdown: a summary table, then each step's findings."""
        elapsed = time.monotonic() - self.started
        lines = [
            "# wyoming-multitts GPU check",
            "",
            f"- Device: {self.device}; models: {self.size}; {len(self.steps)} steps in "
            f"{elapsed:.0f} s; {platform.node()}, Python {platform.python_version()}",
            *[f"- GPU: {gpu}" for gpu in self.gpus],
            "",
            "| step | result | seconds |",
            "| --- | --- | --- |",
            *[
                f"| {s.name} | {'passed' if s.passed else '**FAILED**'} | {s.seconds:.0f} |"
                for s in self.steps
            ],
        ]
        for step in self.steps:
            lines += ["", f"## {step.name}", "", *step.lines]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    @property
    def passed(self) -> bool:
        """Whether every step passed."""
        return all(step.passed for step in self.steps)


def run_step(report: Report, name: str, work: Callable[[list[str]], object]) -> None:
    """Run one step, time it, add its lines (or its failure, whatever raised it: the later
    steps still run, and the report is the one thing a short lease brings back) to the report."""
    print(f"gpu-check: {name}…", file=sys.stderr, flush=True)
    started = time.monotonic()
    lines: list[str] = []
    try:
        work(lines)
        passed = True
    except CheckFailed as err:
        lines.append(f"**Failed:** {err}")
        passed = False
    except Exception as err:  # a bug or a library failure: keep it in the report
        lines.append(f"**Failed:** {type(err).__name__}: {err}")
        passed = False
    report.add(Step(name, passed, time.monotonic() - started, lines))
    print(f"gpu-check: {name}: {'passed' if passed else 'FAILED'}", file=sys.stderr, flush=True)


def check_environment(device: str, lines: list[str]) -> None:
    """torch and llama.cpp see the device (for `cpu`: just what they are)."""
    import llama_cpp
    import torch

    from wyoming_multitts.llm import build

    cuda = torch.cuda.is_available()
    gpu = f", {torch.cuda.get_device_name(0)}" if cuda else ""
    lines.append(
        f"- torch {torch.__version__} (CUDA {torch.version.cuda or 'none'}): "
        f"CUDA available {cuda}{gpu}"
    )
    devices = build.backend_devices()
    lines.append(
        f"- llama-cpp-python {llama_cpp.__version__}: devices "
        + ", ".join(f"{d.name} ({d.description})" for d in devices)
    )
    if device.startswith("cuda"):
        if not cuda:
            raise CheckFailed("torch sees no CUDA GPU: a CPU build of torch, or no driver")
        if not any(d.name.startswith("CUDA") for d in devices):
            raise CheckFailed(
                "this llama-cpp-python has no CUDA device: install the wheel of "
                "script/gpu-carry (gpu-carry/wheels), or build with CMAKE_ARGS=-DGGML_CUDA=on"
            )


def write_models(size: str, models_dir: Path, engines: tuple[str, ...], lines: list[str]) -> Path:
    """The random models (built unless there already); their catalog."""
    try:
        catalog = ensure_models(size, models_dir, os.cpu_count() or 1, engines)
    except Exception as err:
        raise CheckFailed(f"writing the {size} models failed: {err}") from err
    total = sum(f.stat().st_size for f in models_dir.rglob("*") if f.is_file())
    lines.append(f"- {size} models of {', '.join(engines)} in {models_dir}: {total / 1e9:.2f} GB")
    return catalog


def run_command(
    command: list[str], timeout_s: int, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` in the repository, its output captured; CheckFailed past `timeout_s`."""
    try:
        return subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired as err:
        raise CheckFailed(f"`{' '.join(command[2:])}` ran past {timeout_s} s") from err


def run_behaviour_tests(device: str, tests: str, lines: list[str]) -> None:
    """tests/test_server.py (`-k tests`) with every test server on `device`."""
    command = [sys.executable, "-m", "pytest", TEST_FILE, "-q", "-p", "no:cacheprovider"]
    if tests:
        command += ["-k", tests]
    env = {**os.environ, "MULTITTS_TEST_DEVICE": device}
    result = run_command(command, TEST_TIMEOUT_S, env)
    output = result.stdout.strip().splitlines()
    lines.append(f"- `{' '.join(command[2:])}` on {device}: {output[-1] if output else '?'}")
    if result.returncode != 0:
        stderr = result.stderr.strip().splitlines()
        lines += ["", "```", *output[-LOG_LINES:], *stderr[-LOG_LINES:], "```"]
        raise CheckFailed(f"the behaviour tests failed on {device} (exit {result.returncode})")


@dataclass(frozen=True)
class Placement:
    """Where one model's parts ran, from the server's log and `nvidia-smi`."""

    model: str
    engine: str
    has_torch_part: bool
    device: str
    llama_layers: list[tuple[int, int]]
    """(on the GPU, of all) for each GGUF llama.cpp loaded."""
    llama_gpu_mb: float
    """Weights llama.cpp put in GPU buffers, all its GGUFs together."""
    llama_cpu_mb: float
    torch_gpu_mb: float
    worker_gpu_mb: float | None
    audio_s: float

    def problems(self, wanted: str) -> list[str]:
        """What is not where `wanted` says; empty when all is."""
        found = []
        if self.device != wanted and not self.device.startswith(f"{wanted}:"):
            found.append(f"loaded on {self.device}, not {wanted}")
        if not wanted.startswith("cuda"):
            return found
        if self.engine not in TORCH_ONLY_ENGINES:
            if not self.llama_layers:
                found.append("no llama.cpp offload line in the log")
            found += [
                f"only {on}/{of} llama.cpp layers on the GPU"
                for on, of in self.llama_layers
                if on < of
            ]
            if self.llama_gpu_mb <= 0:
                found.append("llama.cpp put no weights in GPU buffers")
        if self.has_torch_part and self.torch_gpu_mb <= 0:
            found.append("its torch part holds no GPU memory: the codec ran on the CPU")
        return found


def worker_gpu_mb(pid: int) -> float | None:
    """GPU memory (MB) `nvidia-smi` lists for process `pid`; None when it lists none."""
    if shutil.which("nvidia-smi") is None:
        return None
    query = ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]
    result = subprocess.run(query, capture_output=True, text=True, timeout=30, check=False)
    for line in result.stdout.splitlines():
        listed_pid, _, used = line.partition(",")
        if listed_pid.strip() == str(pid):
            try:
                return float(used) * MIB / 1e6
            except ValueError:  # "[N/A]" where the driver does not tell (some containers)
                return None
    return None


def has_torch_part(model: ModelSpec) -> bool:
    """Whether the engine runs a part of `model` in torch on the device: Orpheus's SNAC,
    Qwen3-TTS's 12 Hz decoder, OuteTTS 1.0's DAC, Bark whole (OuteTTS 0.2/0.3's vocoder is a
    llama.cpp model)."""
    if model.engine != "outetts":
        return True
    vocoder = model.files["vocoder"].path
    return vocoder is not None and version_of_vocoder(vocoder) == "1.0"


def check_placement(
    catalog: Path, device: str, engines: tuple[str, ...], work: Path, lines: list[str]
) -> None:
    """One plain request per model through a server on `device`; where each part ran."""
    bench_catalog = write_bench_catalog(
        catalog, work / BENCH_CATALOG, DEFAULT_MAX_TOKENS, DEFAULT_MAX_FRAMES, {}
    )
    voices = benchmarked_voices(bench_catalog, 1, engines)
    server_args = ["--device", device, "--debug", "--log-format", LOG_FORMAT]
    server = BenchServer(work / BENCH_CATALOG, server_args, work / "placement.log")
    placements, failed = [], []
    try:
        for model, (voice, *_) in voices.items():
            try:
                timing = asyncio.run(timed_request(server.port, PLAIN, PLACEMENT_TEXT, voice))
            except Exception as err:  # the other models are still worth checking
                failed.append(f"{model}: {type(err).__name__}: {err}")
                continue
            log = server.log_text()
            loaded = server.load_line(model)
            if loaded is None:
                failed.append(f"{model}: no load line in the server's log")
                continue
            pid = int(loaded["pid"])
            layers = [
                (int(m["on_gpu"]), int(m["layers"]))
                for m in OFFLOADED.finditer(log)
                if int(m["pid"]) == pid
            ]
            buffers = [m for m in BUFFER.finditer(log) if int(m["pid"]) == pid]
            gpu_mib = sum(float(m["mib"]) for m in buffers if not m["buffer"].startswith("CPU"))
            cpu_mib = sum(float(m["mib"]) for m in buffers if m["buffer"].startswith("CPU"))
            placements.append(
                Placement(
                    model,
                    loaded["engine"],
                    has_torch_part(bench_catalog.models[model]),
                    loaded["device"],
                    layers,
                    gpu_mib * MIB / 1e6,
                    cpu_mib * MIB / 1e6,
                    float(loaded["torch_mb"] or 0.0),
                    worker_gpu_mb(pid),
                    timing.audio_s,
                )
            )
    finally:
        server.stop()
    if failed:  # the server's warnings and errors (its debug log is mostly llama.cpp's chatter)
        alarms = [line for line in server.log_text().splitlines() if ALARM.search(line)]
        lines += ["The server's warnings and errors:", "", "```", *alarms[-LOG_LINES:], "```"]
    lines += [
        "| model | engine | device | llama.cpp layers on the GPU | llama.cpp weights GPU / CPU MB "
        "| torch GPU MB | worker GPU MB (nvidia-smi) | audio s | problems |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in placements:
        problems = p.problems(device)
        failed += [f"{p.model}: {problem}" for problem in problems]
        on_gpu = ", ".join(f"{on}/{of}" for on, of in p.llama_layers) or "—"
        gpu_mb = "—" if p.worker_gpu_mb is None else f"{p.worker_gpu_mb:.0f}"
        lines.append(
            f"| {p.model} | {p.engine} | {p.device} | {on_gpu} | "
            f"{p.llama_gpu_mb:.0f} / {p.llama_cpu_mb:.0f} | {p.torch_gpu_mb:.0f} | "
            f"{gpu_mb} | {p.audio_s:.2f} | {'; '.join(problems) or 'none'} |"
        )
    if failed:
        raise CheckFailed("; ".join(failed))


def run_benchmark(
    size: str,
    models_dir: Path,
    device: str,
    engines: tuple[str, ...],
    runs: int,
    work: Path,
    lines: list[str],
) -> None:
    """`script/benchmark` on `device`; its Markdown goes into the report."""
    command = [sys.executable, "-m", "tools.bench", "--device", device, "--runs", str(runs)]
    command += [f"--engine={engine}" for engine in engines]
    if size == "full-size":
        command += ["--full-size", "--models-dir", str(models_dir)]
    command += ["--json", str(work / "benchmark.json")]
    result = run_command(command, BENCHMARK_TIMEOUT_S)
    if result.returncode != 0:
        lines += ["```", *result.stderr.strip().splitlines()[-LOG_LINES:], "```"]
        raise CheckFailed(f"the benchmark failed (exit {result.returncode})")
    # one level down: the benchmark's own headings become subsections of this step
    lines += [f"#{line}" if line.startswith("#") else line for line in result.stdout.splitlines()]


def build_parser() -> argparse.ArgumentParser:
    """The command line (`--help` lists it)."""
    parser = argparse.ArgumentParser(
        prog="script/gpu-check",
        description="Run every engine on a GPU: environment, behaviour tests, placement and "
        "the benchmark, into one report file.",
    )
    parser.add_argument("--device", default="cuda", help="the device to check (default cuda)")
    parser.add_argument(
        "--tiny", action="store_true", help="tiny random models instead of full-size ones"
    )
    parser.add_argument(
        "--report", type=Path, default=DEFAULT_REPORT, help=f"default {DEFAULT_REPORT}"
    )
    parser.add_argument(
        "--models-dir",
        type=Path,
        default=DEFAULT_MODELS_DIR,
        help=f"where the full-size models are written (default {DEFAULT_MODELS_DIR})",
    )
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help=f"benchmark rounds (default {DEFAULT_RUNS})"
    )
    parser.add_argument(
        "--tests",
        default="",
        metavar="EXPR",
        help=f"only the tests of {TEST_FILE} pytest's -k EXPR selects (default: all)",
    )
    parser.add_argument(
        "--engine",
        action="append",
        choices=BENCHMARKED_ENGINES,
        help="only this engine's models (repeatable; default: all)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Run the steps; exit 1 when one failed (the report says which and why)."""
    args = build_parser().parse_args(argv)
    size = "tiny" if args.tiny else "full-size"
    engines = tuple(args.engine or BENCHMARKED_ENGINES)
    report = Report(args.report, args.device, size)
    with tempfile.TemporaryDirectory(prefix="wyoming-multitts-gpu-check-") as work_dir:
        work = Path(work_dir)
        models_dir = args.models_dir if size == "full-size" else work / "models"
        run_step(report, "environment", lambda lines: check_environment(args.device, lines))
        if not report.passed:
            sys.exit(f"gpu-check: the environment is not ready; see {args.report}")
        catalogs: list[Path] = []
        run_step(
            report,
            "models",
            lambda lines: catalogs.append(write_models(size, models_dir, engines, lines)),
        )
        if not catalogs:
            sys.exit(f"gpu-check: no models; see {args.report}")
        run_step(
            report,
            "behaviour tests",
            lambda lines: run_behaviour_tests(args.device, args.tests, lines),
        )
        run_step(
            report,
            "placement",
            lambda lines: check_placement(catalogs[0], args.device, engines, work, lines),
        )
        run_step(
            report,
            "benchmark",
            lambda lines: run_benchmark(
                size, models_dir, args.device, engines, args.runs, work, lines
            ),
        )
    print(f"gpu-check: report in {args.report}", file=sys.stderr)
    if not report.passed:
        sys.exit(1)


if __name__ == "__main__":
    main()
