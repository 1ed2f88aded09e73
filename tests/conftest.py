"""Shared fixtures: tiny random-weight models in real formats, and the real server on a free port.

Nothing here is mocked: the server runs as `python -m wyoming_multitts` and tests talk to it with
the `wyoming` client over TCP, as Home Assistant does.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, NoReturn, TypeVar

import numpy as np
import pytest
import yaml
from wyoming.client import AsyncTcpClient
from wyoming.event import Event

READ_TIMEOUT = 60.0
"""Seconds any single read may take before the test fails (generous: 2 shared cores)."""
START_TIMEOUT = 60.0
"""Seconds the server may take to start listening."""
TEST_THREADS = "2"
TEST_DEVICE = os.environ.get("MULTITTS_TEST_DEVICE")
"""Every test server's `--device` when set (script/gpu-check runs tests/test_server.py on
`cuda`); else each model's catalog device, `auto`."""
STRICT = bool(os.environ.get("MULTITTS_TEST_STRICT"))
"""Set by `.ci/run`: there a prerequisite that is missing (an oracle environment, the browser, a
linter) fails its tests instead of skipping them, so CI never passes without their proofs."""
ArgumentT = TypeVar("ArgumentT")
GROWTH_TEXT = 4
GROWTH_LIMIT = 8.0
FAST_SECONDS = 0.25
"""Linear time is checked by growth, not against a clock, so that a slower or busier machine
passes too: a step given GROWTH_TEXT times the text may take at most GROWTH_LIMIT times as long
(linear: 4x, quadratic: 16x), or under FAST_SECONDS however it grows (at the lengths tested, a
quadratic step takes far longer than that)."""
TIMING_TRIES = 3
"""The longer text is timed up to this many times and its fastest run counts: a busy neighbour
only slows a run down (the suite once failed so beside a model build), while a quadratic step
fails every try."""


def missing_prerequisite(reason: str) -> NoReturn:
    """Skip the calling test for want of what `reason` names; fail it under `STRICT` (CI)."""
    if STRICT:
        pytest.fail(f"{reason} (MULTITTS_TEST_STRICT is set: CI must run this test)")
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port nobody listens on (bind port 0, as wyoming's own tests do)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RunningServer:
    """A `python -m wyoming_multitts` process and how to reach it."""

    def __init__(self, port: int, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.port = port
        self.process = process
        self.log_path = log_path

    def log(self) -> str:
        """Everything the server logged so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def client(self) -> AsyncTcpClient:
        """A new (not yet connected) client; use `async with`."""
        return AsyncTcpClient("127.0.0.1", self.port)

    def stop(self) -> int:
        """SIGTERM, then wait; returns the exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)


def start_server(
    voices: Path, log_dir: Path, *extra: str, bind: str = "127.0.0.1"
) -> RunningServer:
    """Start the server on a free port of `bind` and wait until it accepts connections."""
    port = free_port()
    log_path = log_dir / f"server-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "wyoming_multitts",
                "--uri",
                f"tcp://{bind}:{port}",
                "--voices",
                str(voices),
                "--threads",
                TEST_THREADS,
                *(["--device", TEST_DEVICE] if TEST_DEVICE else []),
                *extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            # speaker profiles made from recordings are cached there, not in the user's home
            env={**os.environ, "XDG_CACHE_HOME": str(log_dir / "cache")},
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return RunningServer(port, process, log_path)
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"server did not listen within {START_TIMEOUT} s:\n{log_path.read_text()}")


def repeated(pattern: str, n_chars: int) -> str:
    """The pattern repeated to exactly n_chars characters."""
    return (pattern * (n_chars // len(pattern) + 1))[:n_chars]


def seconds(step: Callable[[ArgumentT], object], argument: ArgumentT) -> float:
    """Wall-clock seconds of `step(argument)`."""
    started = time.perf_counter()
    step(argument)
    return time.perf_counter() - started


def assert_linear_time(step: Callable[[str], object], pattern: str, n_chars: int) -> None:
    """`step` on `pattern` repeated to n_chars characters takes time linear in the length.

    Python's cyclic garbage collector is paused meanwhile: its collections walk the objects the
    step keeps alive, more of them the longer the text, which made linear steps look quadratic
    inside the full suite (15x the time for 4x the text; 4-5x with the collector paused)."""
    gc.collect()
    gc.disable()
    try:
        short = seconds(step, repeated(pattern, n_chars // GROWTH_TEXT))
        limit = max(FAST_SECONDS, GROWTH_LIMIT * short)
        text = repeated(pattern, n_chars)
        full = seconds(step, text)
        for _ in range(TIMING_TRIES - 1):
            if full < limit:
                break
            full = min(full, seconds(step, text))
    finally:
        gc.enable()
    assert full < limit, (pattern[:20], short, full)


async def read_event(client: AsyncTcpClient, timeout: float = READ_TIMEOUT) -> Event | None:
    """One event (None when the server closed the connection)."""
    return await asyncio.wait_for(client.read_event(), timeout=timeout)


async def read_until(
    client: AsyncTcpClient, last_type: str, timeout: float = READ_TIMEOUT
) -> list[Event]:
    """Events up to and including the first of type `last_type` (or an error / disconnect)."""
    events: list[Event] = []
    while True:
        event = await read_event(client, timeout)
        if event is None:
            return events
        events.append(event)
        if event.type in (last_type, "error"):
            return events


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of tiny random models made by `script/make-tiny-models`, with its voices.yaml."""
    directory = tmp_path_factory.mktemp("tiny-models")
    root = Path(__file__).resolve().parent.parent
    subprocess.run([str(root / "script" / "make-tiny-models"), str(directory)], check=True)
    return directory


@pytest.fixture(scope="session")
def server(tiny_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One server over the tiny models, shared by the tests that don't need their own."""
    running = start_server(tiny_models / "voices.yaml", tmp_path_factory.mktemp("logs"))
    yield running
    running.stop()


def write_catalog(directory: Path, tiny_models: Path, models: dict, voices: dict) -> Path:
    """A voices.yaml in `directory`; `path:` entries are taken relative to `tiny_models`."""
    for model in models.values():
        for ref in model.get("files", {}).values():
            if "path" in ref and not Path(ref["path"]).is_absolute():
                ref["path"] = str(tiny_models / ref["path"])
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "voices.yaml"
    path.write_text(yaml.safe_dump({"models": models, "voices": voices}, sort_keys=False))
    return path


def tiny_model_entry(tiny_models: Path, **changes: object) -> dict:
    """A copy of the tiny Orpheus model entry of the generated catalog, with changes."""
    catalog = yaml.safe_load((tiny_models / "voices.yaml").read_text())
    entry = dict(catalog["models"]["orpheus-tiny"])
    entry["files"] = {role: dict(ref) for role, ref in entry["files"].items()}
    entry.update(changes)
    return entry


def oracle_python(script: str, venv: Path) -> Path:
    """The Python of a reference ("oracle") venv, made by `script/<script> VENV` when missing;
    skips the calling test when that fails (e.g. offline on a fresh clone)."""
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        [str(root / "script" / script), str(venv)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if result.returncode != 0:
        missing_prerequisite(
            f"no oracle environment (script/{script} failed; offline?):\n"
            f"{result.stdout[-500:]}{result.stderr[-1500:]}"
        )
    return venv / "bin" / "python"


def run_oracle_script(python: Path, script: Path, out: Path, *args: str) -> dict[str, np.ndarray]:
    """Run `python script *args` (an oracle script that writes the arrays to `out`, an .npz, and
    prints a JSON summary line last) and read the arrays."""
    result = subprocess.run(
        [str(python), str(script), *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout.strip().splitlines()[-1], file=sys.stderr)
    with np.load(out) as npz:
        return {name: npz[name] for name in npz.files}


def copy_tiny(tiny_models: Path, destination: Path) -> Path:
    """A private copy of the tiny model folder (for tests that break or delete files)."""
    shutil.copytree(tiny_models, destination)
    return destination


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """Mounts a tmpfs of a given size in MB under `tmp_path` (a filesystem of the test's own: its
    free space, or a read-only remount, as root in CI); skips the test where mounting is not
    allowed; unmounts afterwards."""
    mounts: list[Path] = []

    def mount(size_mb: int) -> Path:
        point = tmp_path / f"tmpfs-{len(mounts)}"
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(point)],
            capture_output=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounts.append(point)
        return point

    yield mount
    for point in mounts:
        subprocess.run(["umount", "-l", str(point)], check=False)
