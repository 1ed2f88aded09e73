"""The raw-ceiling worker (`python -m tools.bench.ceiling`) seen from the benchmark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

from .models import BenchError

STOP_TIMEOUT = 30.0
"""Seconds to wait for the worker to exit once its input is closed (it times the codec first)."""


class CeilingProcess:
    """A running `ceiling` worker for one model: loaded and warmed up once started."""

    def __init__(
        self, catalog: Path, model: str, threads: int, decode_tokens: int, decode_frames: int
    ) -> None:
        self.model = model
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tools.bench.ceiling",
                str(catalog),
                model,
                f"--threads={threads}",
                f"--decode-tokens={decode_tokens}",
                f"--decode-frames={decode_frames}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._runs: list[dict[str, Any]] = []
        try:
            self._ready = self._read()
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        """Process id of the worker."""
        return int(self._process.pid)

    def _read(self) -> dict[str, Any]:
        """The worker's next JSON line (other output, if any, is skipped)."""
        assert self._process.stdout is not None  # opened with stdout=PIPE
        for line in self._process.stdout:
            if line.startswith("{"):
                message: dict[str, Any] = json.loads(line)
                return message
        raise BenchError(
            f"the raw ceiling of {self.model} stopped (exit code {self._process.wait()})"
        )

    def run(self, prompt_lengths: Iterable[int], cached_tokens: int) -> dict[str, Any]:
        """One raw run: prefill each prompt length after `cached_tokens`, then decode; its
        figures."""
        assert self._process.stdin is not None  # opened with stdin=PIPE
        request = {"prompt_tokens": sorted(prompt_lengths), "cached_tokens": cached_tokens}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        result = self._read()
        self._runs.append(result)
        return result

    def finish(self) -> dict[str, Any]:
        """End the runs; the worker times the codec and exits. Everything it measured."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        final = self._read()
        self._process.wait(timeout=STOP_TIMEOUT)
        return {**self._ready, "runs": self._runs, **final}

    def stop(self) -> None:
        """Kill the worker if it is still running (after an error)."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
