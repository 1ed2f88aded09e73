"""OuteTTS speakers from a user's recording: `create-speaker` (the command) and catalog voices
with `reference:` whose profile the server makes on first use and caches (`speaker_profiles`).

Everything runs for real: the command in its own process with the tiny Whisper, DAC and
WavTokenizer encoder in their release formats, the server over TCP. What the profiles contain is
checked against outetts itself elsewhere (`test_outetts_create.py`, `test_outetts10_prompt.py`,
`test_wavtokenizer_encoder.py`, `test_whisper.py`).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from wyoming.audio import AudioChunk
from wyoming.tts import Synthesize, SynthesizeVoice

from tools.modelgen import outetts as modelgen_outetts
from tools.modelgen.qwen3tts import reference_recording
from tools.modelgen.wavtokenizer import write_tiny_wavtokenizer_encoder
from wyoming_multitts.audio import write_wav
from wyoming_multitts.catalog import load_catalog
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines import outetts
from wyoming_multitts.engines.base import VoiceSettings
from wyoming_multitts.engines.outetts import speakers

from .conftest import RunningServer, read_until, start_server, write_catalog
from .test_live_catalog import CHANGE_SECONDS, described_when, edit

TEXT = "Hello there, this is my own voice."
MAKING = "making its speaker profile"
"""What the server logs once per profile it makes."""
COMMAND_TIMEOUT = 120


def create_speaker(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m wyoming_multitts create-speaker ARGS` as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "wyoming_multitts", "create-speaker", *args, "--threads", "2"],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )


def audio_of(events: list) -> bytes:
    return b"".join(e.payload or b"" for e in events if AudioChunk.is_type(e.type))


async def speak(server: RunningServer, voice: str) -> list:
    async with server.client() as client:
        await client.write_event(Synthesize(text="Hi.", voice=SynthesizeVoice(name=voice)).event())
        return await read_until(client, "audio-stop")


def outetts10_entry(tiny_models: Path) -> dict:
    """The tiny OuteTTS 1.0 model's catalog entry, its files as absolute paths."""
    model = load_catalog(tiny_models / "voices.yaml").models["outetts-1.0-tiny"]
    return {
        "engine": "outetts",
        "files": {role: {"path": str(ref.path)} for role, ref in model.files.items()},
        "device": "cpu",
        "options": dict(model.options),
    }


@pytest.fixture()
def own_voice_server(tiny_models: Path, tmp_path: Path) -> Iterator[tuple[RunningServer, Path]]:
    """A server whose catalog has OuteTTS 1.0 voices made from recordings: `mine` (good), `noise`
    (a file that is no WAV), `untold` (no transcript), `both` (a profile and a recording)."""
    entry = outetts10_entry(tiny_models)
    recording = tmp_path / "mine.wav"
    write_wav(recording, reference_recording(2.0, 16_000, seed=3), 16_000)
    (tmp_path / "noise.wav").write_bytes(b"RIFF, but not really a WAV file")

    def voice(path: str, text: str | None = TEXT, **more: str) -> dict:
        reference = {"path": path, **({"text": text} if text else {})}
        return {"model": "own", "reference": reference, "languages": ["en"], **more}

    voices = {
        "mine": voice(str(recording)),
        "noise": voice(str(tmp_path / "noise.wav")),
        "untold": voice(str(recording), text=None),
        "both": voice(str(recording), speaker="en-female-1-neutral"),
        "builtin": {"model": "own", "speaker": "en-female-1-neutral", "languages": ["en"]},
    }
    path = write_catalog(tmp_path / "catalog", tiny_models, {"own": entry}, voices)
    server = start_server(path, tmp_path)
    yield server, tmp_path
    server.stop()


async def test_concurrent_first_requests_make_one_profile_then_use_the_cache(
    own_voice_server: tuple[RunningServer, Path],
) -> None:
    server, log_dir = own_voice_server
    first, second = await asyncio.gather(speak(server, "mine"), speak(server, "mine"))
    assert first[-1].type == second[-1].type == "audio-stop"
    assert audio_of(first) and audio_of(second)
    again = await speak(server, "mine")
    assert audio_of(again)
    assert server.log_path.read_text().count(MAKING) == 1
    (profile,) = (log_dir / "cache" / "wyoming-multitts" / "speakers").glob("mine-*.json")
    assert json.loads(profile.read_text())["interface_version"] == 3


async def test_a_client_that_leaves_leaves_the_profile_being_made(
    own_voice_server: tuple[RunningServer, Path],
) -> None:
    server, log_dir = own_voice_server
    async with server.client() as client:
        await client.write_event(Synthesize(text="Hi.", voice=SynthesizeVoice(name="mine")).event())
    # the next request waits for the same run instead of starting another
    assert audio_of(await speak(server, "mine"))
    assert server.log_path.read_text().count(MAKING) == 1


@pytest.mark.parametrize(
    ("voice", "says"),
    [
        ("noise", r"voice noise: no speaker profile from .*noise\.wav: .*not a WAV file"),
        ("untold", r"voice untold: reference: needs text:"),
        ("both", r"voice both: give either speaker: .* or reference: .*not both"),
    ],
)
async def test_a_bad_reference_is_an_error_for_its_voice_only(
    own_voice_server: tuple[RunningServer, Path], voice: str, says: str
) -> None:
    server, _ = own_voice_server
    events = await speak(server, voice)
    assert events[-1].type == "error"
    assert events[-1].data["code"] == "bad-speaker"
    assert re.search(says, events[-1].data["text"]), events[-1].data["text"]
    assert audio_of(await speak(server, "builtin"))  # the model and the server still serve


def test_command_errors_name_the_problem(tmp_path: Path, tiny_models: Path) -> None:
    aligner = str(tiny_models / modelgen_outetts.TINY_ALIGNER)
    long = tmp_path / "long.wav"
    write_wav(long, np.zeros(21 * 16_000, np.float32), 16_000)
    cases = {
        "No such file": ["missing.wav", "--text", TEXT],
        "more than 20 s": [str(long), "--text", TEXT],
        "transcript": [str(tiny_models / modelgen_outetts.TINY_REFERENCE), "--text", " "],
    }
    for says, args in cases.items():
        result = create_speaker(*args, "--aligner", aligner, "--out", str(tmp_path / "p.json"))
        assert result.returncode == 2, result.stderr
        assert says in result.stderr.splitlines()[-1]
        assert not (tmp_path / "p.json").exists()


def test_a_0_3_profile_from_a_recording_speaks(tmp_path: Path, tiny_models: Path) -> None:
    """`--version 0.3`: Whisper times the words our 0.3 prompt uses, WavTokenizer's encoder (its
    codebook checked against the vocoder GGUF) makes the codes; the 0.3 engine speaks with it."""
    vocoder, encoder = write_tiny_wavtokenizer_encoder(tmp_path)
    profile = tmp_path / "mine03.json"
    result = create_speaker(
        str(tiny_models / modelgen_outetts.TINY_REFERENCE),
        *("--text", TEXT, "--version", "0.3", "--language", "en"),
        *("--aligner", str(tiny_models / modelgen_outetts.TINY_ALIGNER)),
        *("--codec", str(encoder), "--vocoder", str(vocoder), "--out", str(profile)),
    )
    assert result.returncode == 0, result.stderr
    loaded = speakers.load_speaker(profile)
    assert [w.word for w in loaded.words] == ["hello", "there", "this", "is", "my", "own", "voice"]
    spec = load_catalog(tiny_models / "voices.yaml").models["outetts-0.3-tiny"]
    paths = {"model": tiny_models / "outetts-0.3-tiny.gguf", "vocoder": vocoder}
    engine = outetts.load(spec, paths, CPU, threads=2)
    try:
        voice = VoiceSettings(name="mine03", speaker=str(profile), language="en")
        pieces = list(engine.synthesize("Good day.", voice, threading.Event()))
    finally:
        engine.close()
    assert np.concatenate(pieces).size > 0


async def test_a_failed_profile_is_not_made_again_at_once(
    own_voice_server: tuple[RunningServer, Path],
) -> None:
    """A run that failed is refused for a while (it takes gigabytes and minutes, and a broken
    recording fails every time): the next request gets the same error at once."""
    server, _ = own_voice_server
    first = (await speak(server, "noise"))[-1]
    second = (await speak(server, "noise"))[-1]
    assert first.data["code"] == second.data["code"] == "bad-speaker"
    assert second.data["text"].startswith(first.data["text"])
    assert re.search(r"next try in \d+ s", second.data["text"])
    assert server.log_path.read_text().count(f"voice noise: {MAKING}") == 1


async def test_making_a_profile_counts_in_the_memory_budget(
    tiny_models: Path, tmp_path: Path
) -> None:
    """The run's Whisper and encoder count against --max-loaded-bytes: a budget they cannot fit
    is refused before anything runs, naming the aligner, and is not held against the voice."""
    entry = outetts10_entry(tiny_models)
    recording = tmp_path / "mine.wav"
    write_wav(recording, reference_recording(2.0, 16_000, seed=3), 16_000)
    voices = {"mine": {"model": "own", "reference": {"path": str(recording), "text": TEXT}}}
    path = write_catalog(tmp_path / "catalog", tiny_models, {"own": entry}, voices)
    server = start_server(path, tmp_path, "--max-loaded-bytes", "1G")
    try:
        for _ in range(2):
            end = (await speak(server, "mine"))[-1]
            assert end.data["code"] == "model-too-large", end.data
            assert "its speaker profile, aligner" in end.data["text"]
            assert "next try" not in end.data["text"]
        assert MAKING not in server.log_path.read_text()
    finally:
        server.stop()


async def test_profiles_follow_the_catalog_and_a_renamed_voice_keeps_its_own(
    own_voice_server: tuple[RunningServer, Path],
) -> None:
    """A renamed voice takes its profile over (nothing is made again), a changed transcript
    replaces it, and a voice taken out of the catalog takes its profile with it."""
    server, log_dir = own_voice_server
    catalog = log_dir / "catalog" / "voices.yaml"
    speakers = log_dir / "cache" / "wyoming-multitts" / "speakers"
    assert audio_of(await speak(server, "mine"))
    (made,) = speakers.glob("*.json")

    mine = yaml.safe_load(catalog.read_text())["voices"]["mine"]
    edit(catalog, {"mine": None, "ours": mine})
    await described_when(server, lambda voices: "ours" in voices)
    assert audio_of(await speak(server, "ours"))
    assert server.log_path.read_text().count(MAKING) == 1
    renamed = made.name.replace("mine-", "ours-", 1)
    assert [path.name for path in speakers.glob("*.json")] == [renamed]

    retold = {**mine, "reference": {**mine["reference"], "text": TEXT + " Really."}}
    edit(catalog, {"ours": retold, "both": None})  # `both` has the same recording and text
    assert await profiles_when(speakers, lambda names: not names) == []
    assert audio_of(await speak(server, "ours"))
    assert server.log_path.read_text().count(MAKING) == 2
    (remade,) = await profiles_when(speakers, lambda names: bool(names))
    assert remade.startswith("ours-") and remade != renamed

    edit(catalog, {"ours": None})
    assert await profiles_when(speakers, lambda names: not names) == []


async def profiles_when(folder: Path, done: Callable[[list[str]], bool]) -> list[str]:
    """The profiles' file names in `folder` once `done(names)` holds (removals run in the
    background after a catalog change), or after `CHANGE_SECONDS`."""
    deadline = time.monotonic() + CHANGE_SECONDS
    while True:
        names = sorted(path.name for path in folder.glob("*.json"))
        if done(names) or time.monotonic() > deadline:
            return names
        await asyncio.sleep(0.2)
