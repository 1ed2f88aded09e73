"""`script/benchmark --create-speaker`: what making an OuteTTS speaker from a recording costs.

Runs `python -m wyoming_multitts create-speaker` (as the server does for a catalog voice with
`reference:`) on full-size random models: Whisper large-v3-turbo's shape (the default aligner),
DAC.speech.v1.0's (1.0) and WavTokenizer's encoder paired with the full-size vocoder GGUF (0.3),
for a 10 s recording. Per version, medians of `--runs`: the whole command, its part until the
words are timed (Python, torch and Whisper loading, the alignment), the rest (codec loading,
encoding, cutting, writing), and the command's peak resident memory. Markdown on stdout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tools.modelgen.dac import write_full_dac
from tools.modelgen.files import write_once
from tools.modelgen.qwen3tts import reference_recording
from tools.modelgen.wavtokenizer import write_full_wavtokenizer, write_wavtokenizer_encoder
from tools.modelgen.whisper import write_whisper
from wyoming_multitts.audio import write_wav

DEFAULT_MODELS_DIR = Path(__file__).resolve().parents[2] / "local" / "benchmark-models"
RECORDING_SECONDS = 10.0
RECORDING_RATE = 24_000
TRANSCRIPT = (
    "The living room lights are off, the front door is locked, and the heating will come on "
    "at six tomorrow morning, so the house is warm when you wake up."
)
"""About what 10 s of speech says (30 words)."""
TIMED_MARK = "words timed"
"""The command's log line once Whisper has timed the words (`create_speaker.make_profile`)."""
ENCODER_SEED = 5


def ensure_models(directory: Path) -> dict[str, list[str]]:
    """Write the full-size models once (about 2 GB); the command's arguments per version."""
    whisper = write_whisper(directory / "whisper-large-v3-turbo-random", "full-size")
    dac = write_full_dac(directory)
    vocoder = write_full_wavtokenizer(directory)
    encoder = write_once(
        directory / "wavtokenizer-encoder-random",
        lambda partial: write_wavtokenizer_encoder(partial, vocoder, ENCODER_SEED),
    )
    recording = directory / "speaker-10s.wav"
    if not recording.exists():
        write_wav(recording, reference_recording(RECORDING_SECONDS, RECORDING_RATE), RECORDING_RATE)
    common = [str(recording), "--text", TRANSCRIPT, "--language", "en", "--aligner", str(whisper)]
    return {
        "1.0": [*common, "--vocoder", str(dac)],
        "0.3": [*common, "--version", "0.3", "--codec", str(encoder), "--vocoder", str(vocoder)],
    }


def run_once(args: list[str], threads: int, out: Path) -> tuple[float, float, float]:
    """(whole seconds, seconds until the words are timed, peak resident MiB) of one command."""
    command = [sys.executable, "-m", "wyoming_multitts", "create-speaker", *args]
    start = time.monotonic()
    process = subprocess.Popen(
        [*command, "--threads", str(threads), "--out", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    timed, log = float("nan"), []
    for line in process.stderr:
        log.append(line)
        if TIMED_MARK in line:
            timed = time.monotonic() - start
    _, status, usage = os.wait4(process.pid, 0)
    whole = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"create-speaker failed:\n{''.join(log[-20:])}")
    return whole, timed, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="script/benchmark --create-speaker")
    parser.add_argument("--runs", type=int, default=3, help="commands per version")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR)
    args = parser.parse_args(argv)
    versions = ensure_models(args.models_dir)
    results: dict[str, list[tuple[float, float, float]]] = {version: [] for version in versions}
    for _ in range(args.runs):  # alternate the versions: a noisy machine hits both alike
        for version, command in versions.items():
            out = args.models_dir / f"speaker-{version}.json"
            results[version].append(run_once(command, args.threads, out))
            print(f"{version}: {results[version][-1]}", file=sys.stderr)
    print(f"{RECORDING_SECONDS:g} s recording, {args.threads} threads, medians of {args.runs}\n")
    print("| version | whole command s | until words timed s | codec and the rest s | peak MiB |")
    print("|---|---|---|---|---|")
    for version, runs in results.items():
        whole, timed, peak = (statistics.median(column) for column in zip(*runs))
        print(f"| {version} | {whole:.1f} | {timed:.1f} | {whole - timed:.1f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
