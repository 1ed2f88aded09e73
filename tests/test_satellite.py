"""Voice satellites, against the real server and tiny models: the first clause of a streamed
answer is spoken before its sentence has arrived, and a listener that plays the audio at real
time from its first chunk (as a satellite does) never runs dry inside a piece: a model slower
than real time is held (`WYOMING_MULTITTS_TEST_RATE` makes the worker that slow), a fast one is
not."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Iterator

import pytest
from wyoming.audio import AudioChunk
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from tools.bench.satellite import Heard

from .conftest import RunningServer, read_event, read_until, start_server

VOICE = "tiny-qwen3-ryan"
TEXT = (
    "I checked the weather for you, and it will be sunny and warm tomorrow afternoon. "
    "In the evening some clouds come in from the west, and there may be a little rain at night."
)
FAST_ENOUGH = 2.0
"""Seconds of audio a second the tiny model must make in the warm-up for the fast test (it
makes 20 or more on an idle 2-core machine)."""
SLOW_RATE = 0.5
"""Seconds of audio a second the slow worker makes: half real time."""


async def listen(client: object, last_type: str) -> tuple[Heard, int]:
    """One request as a satellite hears it (`tools/bench/satellite.Heard`), up to `last_type`,
    and its number of audio cycles."""
    heard, cycles = Heard(sent=time.monotonic()), 0
    while True:
        event = await read_event(client, timeout=120)  # type: ignore[arg-type]
        assert event is not None and event.type != "error", event
        heard.event(event, time.monotonic())
        cycles += event.type == "audio-start"
        if event.type == last_type:
            return heard, cycles


async def speak_streamed(server: RunningServer, text: str) -> tuple[Heard, int]:
    """Home Assistant's sequence, the text in chunks as an LLM writes it (5 words a chunk)."""
    async with server.client() as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(VOICE)).event())
        words = text.split(" ")
        for start in range(0, len(words), 5):
            chunk = " ".join(words[start : start + 5]) + " "
            await client.write_event(SynthesizeChunk(text=chunk).event())
        await client.write_event(Synthesize(text=text, voice=SynthesizeVoice(VOICE)).event())
        await client.write_event(SynthesizeStop().event())
        return await listen(client, "synthesize-stopped")


async def warm_up(server: RunningServer) -> None:
    """Load the model and measure its speed (two requests: the first starts from the safe
    estimate)."""
    for _ in range(2):
        async with server.client() as client:
            await client.write_event(Synthesize(text=TEXT, voice=SynthesizeVoice(VOICE)).event())
            assert (await read_until(client, "audio-stop"))[-1].type == "audio-stop"


@pytest.fixture
def slow_server(
    tiny_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RunningServer]:
    monkeypatch.setenv("WYOMING_MULTITTS_TEST_RATE", str(SLOW_RATE))
    server = start_server(tiny_models / "voices.yaml", tmp_path)
    yield server
    server.stop()


async def test_the_first_clause_is_spoken_before_its_sentence_has_arrived(
    tiny_models: Path, tmp_path: Path
) -> None:
    server = start_server(tiny_models / "voices.yaml", tmp_path)
    try:
        await warm_up(server)
        async with server.client() as client:
            await client.write_event(SynthesizeStart(voice=SynthesizeVoice(VOICE)).event())
            await client.write_event(
                SynthesizeChunk(text="I checked the weather for you, and").event()
            )
            await client.write_event(SynthesizeChunk(text=" it").event())
            # nothing more is sent until audio comes: the sentence is not complete
            first, second = [await read_event(client, timeout=60) for _ in range(2)]
            assert first is not None and first.type == "audio-start"
            assert second is not None and AudioChunk.is_type(second.type)
            await client.write_event(SynthesizeChunk(text=" will be sunny.").event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
        assert [e.type for e in events].count("audio-start") == 1  # the rest of the sentence
    finally:
        server.stop()


async def test_a_slow_model_is_held_and_never_runs_dry_inside_a_piece(
    slow_server: RunningServer,
) -> None:
    await warm_up(slow_server)
    heard, cycles = await speak_streamed(slow_server, TEXT)
    assert cycles >= 2
    assert not heard.in_piece, heard.in_piece
    assert "Held the first" in slow_server.log()


async def test_without_the_hold_a_slow_model_runs_dry(
    tiny_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same slow model with --no-hold-audio: the listener runs dry (what the hold saves)."""
    monkeypatch.setenv("WYOMING_MULTITTS_TEST_RATE", str(SLOW_RATE))
    server = start_server(tiny_models / "voices.yaml", tmp_path, "--no-hold-audio")
    try:
        await warm_up(server)
        heard, _ = await speak_streamed(server, TEXT)
        assert heard.in_piece
        assert "Held the first" not in server.log()
    finally:
        server.stop()


async def test_a_fast_model_is_not_held(tiny_models: Path, tmp_path: Path) -> None:
    server = start_server(tiny_models / "voices.yaml", tmp_path)
    try:
        await warm_up(server)
        spoken = re.findall(r"Spoke ([\d.]+) s of audio .* in ([\d.]+) s", server.log())
        audio, took = spoken[-1]  # the second warm-up: the model loaded, its speed measured
        if float(audio) / float(took) < FAST_ENOUGH:
            pytest.skip("this machine is too busy now for the tiny model to be fast")
        heard, _ = await speak_streamed(server, TEXT)
        assert not heard.in_piece
        log = server.log()
        assert "Held the first" not in log[log.index("Spoke") :]  # after the first, measured
    finally:
        server.stop()
