"""The server under test: `python -m wyoming_multitts` on a free port, its log and the figures
it writes to `--stats-file`."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from wyoming_multitts import stats

from .models import BenchError

HOST = "127.0.0.1"
START_TIMEOUT = 60.0
"""Seconds the server may take to listen (models load on the first request, not here)."""
STOP_TIMEOUT = 30.0
"""Seconds between SIGTERM and SIGKILL."""
POLL_INTERVAL = 0.1
"""Seconds between checks while waiting for the port."""
LOG_TAIL_CHARS = 3000
"""How much of the server log an error message quotes."""

LOAD_LINE = re.compile(
    r"Loaded model (?P<model>\S+) \((?P<engine>\w+)\) on (?P<device>\S+) in "
    r"(?P<seconds>[\d.]+) s: worker (?P<pid>\d+), estimated (?P<estimated_mb>[\d.]+) MB, "
    r"[\d.]+ MB counted(?:, torch holds (?P<torch_mb>[\d.]+) MB of GPU memory)?"
)
"""The INFO line `registry.py` logs when a model has loaded."""
PEAK_RESIDENT = re.compile(r"^VmHWM:\s+(\d+) kB$", re.MULTILINE)
"""A process's peak resident memory in /proc/PID/status (Linux)."""


ENGINE_STAGES = ("prefill", "decode", "codec")
"""Stages every engine times; an engine that also times stages of its own (Qwen3-TTS `talker`,
`predictor`; Bark `semantic`, `coarse`, `fine`) has a split."""


@dataclass(frozen=True)
class PieceStats:
    """The engine's figures for one text piece (decode_s excludes codec time)."""

    voice: str
    prompt_tokens: int
    tokens: int
    frames: int
    prefill_s: float
    decode_s: float
    codec_s: float
    cached_tokens: int = 0
    """Tokens the KV cache already held before the prompt (OuteTTS's speaker profile)."""
    split_s: dict[str, float] = field(default_factory=dict)
    """Seconds per stage (`talker`, `predictor`, `codec`, …) of an engine of several stages."""

    @classmethod
    def of(cls, piece: stats.PieceStats) -> "PieceStats":
        """The benchmark's view of what a worker wrote to `--stats-file`."""
        seconds = piece.seconds
        has_split = any(stage not in ENGINE_STAGES for stage in seconds)
        return cls(
            voice=piece.voice,
            prompt_tokens=piece.prompt_tokens,
            tokens=piece.tokens,
            frames=piece.frames,
            prefill_s=seconds.get("prefill", 0.0),
            decode_s=seconds.get("decode", 0.0),
            codec_s=seconds.get("codec", 0.0),
            cached_tokens=piece.cached_tokens,
            split_s=(
                {k: v for k, v in seconds.items() if k not in ("prefill", "decode")}
                if has_split
                else {}
            ),
        )


def free_port() -> int:
    """A TCP port nobody listens on (bind port 0, as wyoming's own tests do)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class BenchServer:
    """A running server whose log goes to a file, read incrementally."""

    def __init__(self, catalog: Path, server_args: Sequence[str], log_path: Path) -> None:
        self.port = free_port()
        self.log_path = log_path
        self.stats_path = log_path.with_suffix(".stats.jsonl")
        self.stats_path.write_bytes(b"")
        self._stats_offset = 0
        self.killed = False
        """Whether `stop` had to SIGKILL it."""
        with log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "wyoming_multitts",
                    "--voices",
                    str(catalog),
                    "--uri",
                    f"tcp://{HOST}:{self.port}",
                    "--stats-file",
                    str(self.stats_path),
                    *server_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            self._wait_listening()
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        """Process id of the server."""
        return int(self._process.pid)

    def exit_code(self) -> int | None:
        """The server's exit status; None while it runs."""
        return self._process.poll()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BenchError(
                    f"the server exited with {self._process.returncode}:\n{self.log_tail()}"
                )
            try:
                socket.create_connection((HOST, self.port), timeout=POLL_INTERVAL).close()
                return
            except OSError:
                time.sleep(POLL_INTERVAL)
        raise BenchError(f"the server did not listen within {START_TIMEOUT} s")

    def log_text(self) -> str:
        """Everything the server and its workers logged."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self) -> str:
        """The end of the server log, for error messages."""
        return self.log_text()[-LOG_TAIL_CHARS:]

    def new_stats(self) -> list[PieceStats]:
        """The figures of the text pieces spoken since the last call, in order.

        A worker writes a piece's line before the handler sends that piece's `audio-stop`, so
        once a request's last event has arrived, all of its lines are in the file.
        """
        with self.stats_path.open("rb") as lines:
            lines.seek(self._stats_offset)
            data = lines.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._stats_offset += len(complete)
        return [
            PieceStats.of(stats.PieceStats.from_json(line))
            for line in complete.decode("utf-8").splitlines()
        ]

    def load_seconds(self, model: str) -> float | None:
        """Load time of `model` from the log (None if it did not log one)."""
        match = self.load_line(model)
        return None if match is None else float(match["seconds"])

    def worker_memory(self, model: str) -> tuple[float | None, float | None]:
        """(the registry's estimate, the worker's peak resident memory so far), in MB, of
        `model`'s worker (None where the log or /proc does not tell)."""
        match = self.load_line(model)
        if match is None:
            return None, None
        try:
            status = Path(f"/proc/{match['pid']}/status").read_text(encoding="ascii")
        except OSError:
            return float(match["estimated_mb"]), None
        peak = PEAK_RESIDENT.search(status)
        return float(match["estimated_mb"]), None if peak is None else int(peak[1]) * 1024 / 1e6

    def load_line(self, model: str) -> re.Match[str] | None:
        """The last `Loaded model` line of `model`."""
        found = [m for m in LOAD_LINE.finditer(self.log_text()) if m["model"] == model]
        return found[-1] if found else None

    def stop(self) -> int:
        """SIGTERM, then SIGKILL if it does not exit in time; its exit status."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.killed = True
                self._process.kill()
                self._process.wait()
        return int(self._process.returncode)
