"""`script/benchmark` end to end in its quick default mode: tiny real models, the real server.

Only the report's shape and that its numbers are positive are checked: speed depends on the
machine and its load, so no test asserts a timing.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import yaml
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event

from tools.bench.client import RequestTiming
from tools.bench.models import _complete
from tools.bench.satellite import Heard
from tools.modelgen.__main__ import model_names
from wyoming_multitts.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
BENCHMARK_TIMEOUT = 600
"""Seconds the tiny benchmark may take on 2 busy cores (usually well under a minute)."""
TINY_VOICES = {  # voice → model; the first two voices of every benchmarked model
    "tiny-tara": "orpheus-tiny",
    "tiny-leo": "orpheus-tiny",
    "tiny-oute2-en-male-1": "outetts-0.2-tiny",
    "tiny-oute3-en-male-1": "outetts-0.3-tiny",
    "tiny-oute3-fr-female-1": "outetts-0.3-tiny",
    "tiny-oute10-en-female-1": "outetts-1.0-tiny",
    "tiny-oute10-own-voice": "outetts-1.0-tiny",
    "tiny-qwen3-ryan": "qwen3tts-tiny",
    "tiny-qwen3-vivian": "qwen3tts-tiny",
    "tiny-qwen3-clone": "qwen3tts-tiny-base",
    "tiny-qwen3-clone-xvector": "qwen3tts-tiny-base",
    "tiny-bark-en": "bark-tiny",
    "tiny-bark-de": "bark-tiny",
}
MODES = ("plain", "streaming")
FIRST_WINDOW_FRAMES = {
    "orpheus-tiny": 3,
    "outetts-0.2-tiny": 30,
    "outetts-0.3-tiny": 30,
    "outetts-1.0-tiny": 11,
    "qwen3tts-tiny": 4,
    "qwen3tts-tiny-base": 4,
    "bark-tiny": 210,
}
"""First streamed window: Orpheus 1 + 2 frames of lookahead; OuteTTS 10 + 20 codes (1.0: 1 + 10
frames of 2 codes); Qwen3-TTS 4 frames; Bark the whole sentence (140 semantic tokens make 210
frames)."""
MAX_TOKENS = {"qwen3tts-tiny": 20 * 4 + 1, "qwen3tts-tiny-base": 20 * 4 + 1}
"""The benchmark's default caps: 140 tokens; Qwen3-TTS 20 frames of (the tiny model's) 4 codes,
plus an EOS."""


def test_tiny_benchmark_reports_every_voice_and_mode(tmp_path: Path) -> None:
    json_path = tmp_path / "bench.json"
    result = subprocess.run(
        [
            str(ROOT / "script" / "benchmark"),
            "--runs=1",
            "--voices-limit=2",
            "--threads=2",
            f"--json={json_path}",
        ],
        capture_output=True,
        text=True,
        timeout=BENCHMARK_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]

    markdown, _, split_table = result.stdout.partition("## Stage split (ms per frame)")
    for heading in ("## Raw ceiling", "## Server over Wyoming", "## Goals"):
        assert heading in markdown
    for voice, model in TINY_VOICES.items():
        for mode in MODES:
            # one row in the server table, one in the goals table
            assert markdown.count(f"| {model} | {voice} | {mode} |") == 2, (voice, mode)

    report = json.loads(json_path.read_text())
    rows = {(row["voice"], row["mode"]): row for row in report["rows"]}
    assert set(rows) == {(voice, mode) for voice in TINY_VOICES for mode in MODES}
    for row in rows.values():
        assert row["model"] == TINY_VOICES[row["voice"]] and len(row["requests"]) == 1
        summary = row["summary"]
        assert summary["tokens"] <= MAX_TOKENS.get(row["model"], 140)
        numbers = {
            key: value
            for key, value in summary.items()
            if key not in ("clean_runs", "split_s_per_frame", "decode_ratio_spread")
        }
        assert all(value > 0 for value in numbers.values()), summary
        low, high = summary["decode_ratio_spread"]  # paired ratios, one per round
        assert low <= summary["decode_ratio"] <= high
    for warmup in report["warmups"].values():  # every worker's memory, estimated and measured
        assert warmup["estimated_mb"] > 0 and warmup["peak_resident_mb"] > 0
    for model, frames in FIRST_WINDOW_FRAMES.items():
        ceiling = report["ceilings"][model]
        assert ceiling["first_window_frames"] == frames and ceiling["codec"]["audio_s"] > 0
        assert len(ceiling["runs"]) == 1 and ceiling["runs"][0]["decode_tok_s"] > 0
    # OuteTTS keeps the speaker profile cached: the ceiling prefills and decodes at its depth
    for model in ("outetts-0.2-tiny", "outetts-0.3-tiny"):
        cached = report["ceilings"][model]["runs"][0]["cached_tokens"]
        assert cached > 0
        # (a request right after one of the other voice evaluates its own profile: 0 cached)
        assert cached == max(
            request["pieces"][0]["cached_tokens"]
            for row in report["rows"]
            if row["model"] == model
            for request in row["requests"]
        )
    # Qwen3-TTS: the talker/predictor/codec split, server and raw
    for voice in ("tiny-qwen3-ryan", "tiny-qwen3-vivian"):
        for stage in ("talker", "predictor", "codec"):
            assert f"| qwen3tts-tiny | {voice} | plain | {stage} |" in split_table
    for stage in ("semantic", "coarse", "fine", "codec"):
        assert f"| bark-tiny | tiny-bark-en | plain | {stage} |" in split_table
    bark_run = report["ceilings"]["bark-tiny"]["runs"][0]
    assert set(bark_run["split_s_per_frame"]) == {"semantic", "coarse", "fine"}
    split = rows[("tiny-qwen3-ryan", "plain")]["summary"]["split_s_per_frame"]
    assert set(split) == {"talker", "predictor", "codec"} and min(split.values()) > 0
    raw_split = report["ceilings"]["qwen3tts-tiny"]["runs"][0]["split_s_per_frame"]
    assert set(raw_split) == {"talker", "predictor", "codec"} and min(raw_split.values()) > 0


def test_a_models_folder_lacking_a_newer_model_is_built_again(tmp_path: Path) -> None:
    """A full-size folder built before OuteTTS 1.0 had a model lacks it: the benchmark builds
    the engine's models again (modelgen keeps the files already there) instead of skipping 1.0."""
    names = model_names("full-size", ("outetts",))
    assert names == {"outetts-0.3-500m-random", "outetts-1.0-1b-random"}
    models = {}
    for name in sorted(names):
        for role in ("model", "vocoder"):
            (tmp_path / f"{name}.{role}").write_bytes(b"x")
        files = {role: {"path": f"{name}.{role}"} for role in ("model", "vocoder")}
        models[name] = {"engine": "outetts", "files": files}
    voices = {f"{name}-voice": {"model": name} for name in models}
    catalog = tmp_path / "voices.yaml"
    catalog.write_text(yaml.safe_dump({"models": models, "voices": voices}))
    assert _complete(load_catalog(catalog), names)
    del models["outetts-1.0-1b-random"], voices["outetts-1.0-1b-random-voice"]
    catalog.write_text(yaml.safe_dump({"models": models, "voices": voices}))
    assert not _complete(load_catalog(catalog), names)


def test_a_request_without_audio_is_reported_not_fatal() -> None:
    """A random model may write no audio code (OuteTTS 1.0 on some CPUs): its row shows an
    infinite RTF and first audio at the end, and the other rows are still reported."""
    timing = RequestTiming(ttfa_s=3.0, total_s=3.0, audio_s=0.0)
    assert timing.rtf == math.inf


def test_the_satellite_listener_tells_stalls_in_a_piece_from_pauses_between() -> None:
    """`script/benchmark --satellite` plays each chunk at real time from the first one: a chunk
    that comes after the audio before it has played out is a stall, inside a cycle or between
    two (the pause the hold moves there)."""
    rate = 1000

    def chunk(seconds: float) -> Event:
        return AudioChunk(
            rate=rate, width=2, channels=1, audio=bytes(int(2 * rate * seconds))
        ).event()

    heard = Heard(sent=0.0)
    for event, arrived in [
        (AudioStart(rate=rate, width=2, channels=1).event(), 0.5),
        (chunk(1.0), 1.0),  # plays 1.0-2.0
        (chunk(1.0), 1.5),  # in time: 2.0-3.0
        (chunk(1.0), 3.5),  # 0.5 s dry inside the piece
        (AudioStop().event(), 3.6),
        (AudioStart(rate=rate, width=2, channels=1).event(), 3.7),
        (chunk(1.0), 5.0),  # 0.5 s between pieces (the last played until 4.5)
    ]:
        heard.event(event, arrived)
    assert heard.first_audio == 1.0
    assert heard.in_piece == [0.5] and heard.between == [0.5]
