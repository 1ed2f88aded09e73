"""`script/soak` for a few seconds over the tiny models: every kind of client runs against every
engine, and the server passes (alive, every describe under 1 s, nothing unexpected)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOAK_TIMEOUT = 300
"""Seconds the soak may take in all on 2 busy cores (about 40: model loads, 18 s of clients, the
last silent client's drop and a final check)."""
CLIENT_TIMEOUT = 5
"""The server's --client-timeout: a silent client is dropped a few seconds after it, within the
18 s of the soak."""
ENGINES = {"orpheus", "outetts", "qwen3tts", "bark"}


@pytest.mark.slow
def test_short_soak_runs_every_kind_of_client_and_passes(tiny_models: Path, tmp_path: Path) -> None:
    json_path = tmp_path / "soak.json"
    result = subprocess.run(
        [
            str(ROOT / "script" / "soak"),
            "--minutes=0.3",
            f"--models={tiny_models}",
            f"--json={json_path}",
            f"--server-log={tmp_path / 'server.log'}",
            "--",
            f"--client-timeout={CLIENT_TIMEOUT}",
            # one thread per model worker: six models busy at once on 2 cores, two threads each,
            # spin against each other and a tiny request takes tens of seconds
            "--threads=1",
        ],
        capture_output=True,
        text=True,
        timeout=SOAK_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.rstrip().endswith("**PASS**")

    report = json.loads(json_path.read_text())
    assert report["passed"] and not report["failures"] and not report["unexpected"]
    assert {voice["engine"] for voice in report["voices"]} == ENGINES
    for kind, runs in report["runs"].items():  # few clients: nothing is refused
        assert runs["total"]["ok"] >= 1, f"{kind} never ran: {runs}"
        assert runs["total"]["ok"] == sum(runs["total"].values()), f"{kind}: {runs}"
    for kind in ("warm-up", "final-check"):  # once per voice, so once for every model
        assert all(counts["ok"] == 1 for counts in report["runs"][kind]["by_voice"].values())
    assert all(seconds >= CLIENT_TIMEOUT for seconds in report["silent_drop_s"])
    assert report["server"]["log_drops"] >= len(report["silent_drop_s"])
    describe = report["describe"]
    assert describe["monitor_s"] and describe["monitor_worst_s"] < 1
    assert report["memory_bytes"]["peak_processes"] >= 1 + len(report["voices"])  # + workers
    assert report["server"]["exit_status"] == 0
