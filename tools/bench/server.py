"""The server under test: `python -m wyoming_multitts` on a free port, and what its log says."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

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

STATS_LINE = re.compile(
    r"stats voice=(?P<voice>\S+) prompt_tokens=(?P<prompt_tokens>\d+) tokens=(?P<tokens>\d+) "
    r"frames=(?P<frames>\d+) prefill_s=(?P<prefill_s>[\d.]+) decode_s=(?P<decode_s>[\d.]+) "
    r"codec_s=(?P<codec_s>[\d.]+)(?: cached_tokens=(?P<cached_tokens>\d+))?"
)
"""The INFO line every engine logs once per text piece (`engines.base.log_piece_stats`)."""
SPLIT_LINE = re.compile(r"split voice=(?P<voice>\S+) (?P<fields>.*)")
"""The INFO line an engine of several stages logs after a piece's stats line, e.g. Qwen3-TTS:
`split voice=… talker_s=… predictor_s=… codec_s=… end=eos`."""
SPLIT_FIELD = re.compile(r"(?P<stage>\w+)_s=(?P<seconds>[\d.]+)")
LOAD_LINE = re.compile(r"Loaded model (?P<model>\S+) \(.*?\) on \S+ in (?P<seconds>[\d.]+) s")
"""The INFO line `registry.py` logs when a model has loaded."""


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
    """Seconds per stage (`talker`, `predictor`, `codec`, …) from the engine's `split` line."""

    @classmethod
    def parse(cls, line: str) -> "PieceStats | None":
        """The figures of a `stats` log line; None for any other line."""
        match = STATS_LINE.search(line)
        if match is None:
            return None
        values = match.groupdict()
        return cls(
            voice=values["voice"],
            prompt_tokens=int(values["prompt_tokens"]),
            tokens=int(values["tokens"]),
            frames=int(values["frames"]),
            prefill_s=float(values["prefill_s"]),
            decode_s=float(values["decode_s"]),
            codec_s=float(values["codec_s"]),
            cached_tokens=int(values["cached_tokens"] or 0),
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
        self._log_offset = 0
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

    def new_log_lines(self) -> list[str]:
        """Complete log lines written since the last call."""
        with self.log_path.open("rb") as log:
            log.seek(self._log_offset)
            data = log.read()
        complete = data[: data.rfind(b"\n") + 1]
        self._log_offset += len(complete)
        return complete.decode("utf-8", errors="replace").splitlines()

    def new_stats(self) -> list[PieceStats]:
        """The `stats` lines logged since the last call, each with its `split` line if any.

        The engine logs a piece's line before the handler sends that piece's `audio-stop`, so
        once a request's last event has arrived, all of its lines are in the log.
        """
        pieces: list[PieceStats] = []
        for line in self.new_log_lines():
            stats = PieceStats.parse(line)
            split = SPLIT_LINE.search(line)
            if stats is not None:
                pieces.append(stats)
            elif split is not None and pieces and pieces[-1].voice == split["voice"]:
                seconds = {
                    f["stage"]: float(f["seconds"]) for f in SPLIT_FIELD.finditer(split["fields"])
                }
                pieces[-1] = replace(pieces[-1], split_s=seconds)
        return pieces

    def load_seconds(self, model: str) -> float | None:
        """Load time of `model` from the log (None if it did not log one)."""
        for match in LOAD_LINE.finditer(self.log_text()):
            if match["model"] == model:
                return float(match["seconds"])
        return None

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
