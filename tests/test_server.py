"""The server end to end, as Home Assistant uses it: real process and protocol, tiny real models."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from wyoming.audio import AudioChunk, AudioStart
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from .conftest import (
    READ_TIMEOUT,
    RunningServer,
    read_event,
    read_until,
    start_server,
    write_catalog,
)

SAMPLES_PER_CHUNK = 1024  # the server's default --samples-per-chunk
FRAME_SAMPLES = {
    "tiny-tara": 2048,  # Orpheus: one SNAC frame (7 tokens) is 2048 samples at 24 kHz
    "tiny-oute3-en-male-1": 320,  # OuteTTS 0.3: one WavTokenizer code is 320 samples
    "tiny-oute2-en-male-1": 320,  # OuteTTS 0.2
    "tiny-oute10-en-female-1": 320,  # OuteTTS 1.0: one DAC frame (a c1 and a c2 code)
    "tiny-oute10-own-voice": 320,  # OuteTTS 1.0, profile made from a recording on first use
    "tiny-qwen3-ryan": 1920,  # Qwen3-TTS: one 12.5 Hz frame (all its codebooks) is 1920 samples
    "tiny-qwen3-clone": 1920,  # Qwen3-TTS Base, in-context clone of a 16 kHz reference WAV
    "tiny-bark-en": 320,  # Bark: one EnCodec frame (8 fine codes) is 320 samples
}
"""One voice of each engine and dialect; the behaviours below must hold for every one."""
MAX_FRAMES = {
    "tiny-tara": 10,
    "tiny-oute3-en-male-1": 120,
    "tiny-oute2-en-male-1": 120,
    "tiny-oute10-en-female-1": 120,
    "tiny-oute10-own-voice": 120,
    "tiny-qwen3-ryan": 12,
    "tiny-qwen3-clone": 12,
    "tiny-bark-en": 24,
}
"""Frames one text piece can make: the tiny catalog's max_tokens (70 / 7; 120 codes; OuteTTS 1.0
240 / 2) or max_frames (Qwen3-TTS); Bark: 16 semantic tokens make 24 frames."""
ENGINE_VOICES = pytest.mark.parametrize("voice", list(FRAME_SAMPLES))
THREE_SENTENCES = "Hello there. The weather is fine today! Shall we go for a walk?"


def audio_bytes(events: list[Event]) -> bytes:
    """PCM of all audio-chunk events, in order."""
    return b"".join(e.payload or b"" for e in events if AudioChunk.is_type(e.type))


def types(events: list[Event]) -> list[str]:
    """Event types with runs of audio-chunk collapsed (audio-start, audio-chunk, audio-stop)."""
    collapsed: list[str] = []
    for event in events:
        if not (collapsed and collapsed[-1] == event.type == "audio-chunk"):
            collapsed.append(event.type)
    return collapsed


async def synthesize(
    server: RunningServer,
    text: str,
    voice: str | None = "tiny-tara",
    speaker: str | None = None,
    timeout: float = READ_TIMEOUT,
) -> list[Event]:
    """A plain synthesize request; events up to audio-stop (or error)."""
    async with server.client() as client:
        request_voice = SynthesizeVoice(name=voice, speaker=speaker) if voice else None
        await client.write_event(Synthesize(text=text, voice=request_voice).event())
        return await read_until(client, "audio-stop", timeout)


async def assert_closed_after_error(client, code: str) -> Event:  # type: ignore[no-untyped-def]
    """The next event is an error with `code`, and then the server closes the connection."""
    event = await read_event(client)
    assert event is not None and event.type == "error", event
    assert event.data["code"] == code, event.data
    assert await read_event(client) is None
    return event


# ---- describe


async def test_describe_lists_every_voice_in_one_streaming_program(server: RunningServer) -> None:
    async with server.client() as client:
        await client.write_event(Describe().event())
        event = await read_event(client)
    assert event is not None
    info = Info.from_event(event)
    assert len(info.tts) == 1
    program = info.tts[0]
    assert program.installed and program.supports_synthesize_streaming
    assert [v.name for v in program.voices][:2] == ["tiny-tara", "tiny-leo"]
    assert set(FRAME_SAMPLES) <= {v.name for v in program.voices}
    assert all(v.installed and v.languages and v.description for v in program.voices)


async def test_ping_select_program_and_unknown_events_keep_the_connection(
    server: RunningServer,
) -> None:
    async with server.client() as client:
        await client.write_event(Event(type="select-program", data={"name": "multitts"}))
        await client.write_event(Event(type="some-future-event", data={"x": 1}))
        await client.write_event(Ping(text="hi").event())
        pong = await read_event(client)
        assert pong is not None and pong.type == "pong" and pong.data.get("text") == "hi"
        await client.write_event(Describe().event())
        info = await read_event(client)
        assert info is not None and info.type == "info"


# ---- plain synthesize (Home Assistant's non-streaming path)


@ENGINE_VOICES
async def test_synthesize_sends_one_audio_cycle(server: RunningServer, voice: str) -> None:
    events = await synthesize(server, "Hello there.", voice=voice)
    assert types(events) == ["audio-start", "audio-chunk", "audio-stop"]
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (24000, 2, 1)
    chunks = [AudioChunk.from_event(e) for e in events if AudioChunk.is_type(e.type)]
    assert all((c.rate, c.width, c.channels) == (24000, 2, 1) for c in chunks)
    # every chunk but the last is exactly --samples-per-chunk samples
    assert all(len(c.audio) == SAMPLES_PER_CHUNK * 2 for c in chunks[:-1])
    assert 0 < len(chunks[-1].audio) <= SAMPLES_PER_CHUNK * 2
    # the audio is whole codec frames: first and last frames are emitted too
    n_samples = len(audio_bytes(events)) // 2
    assert n_samples % FRAME_SAMPLES[voice] == 0
    assert 1 <= n_samples // FRAME_SAMPLES[voice] <= MAX_FRAMES[voice]


@ENGINE_VOICES
async def test_long_text_is_spoken_in_pieces_within_one_cycle(
    server: RunningServer, voice: str
) -> None:
    text = " ".join([THREE_SENTENCES] * 3)
    events = await synthesize(server, text, voice=voice)
    assert types(events) == ["audio-start", "audio-chunk", "audio-stop"]
    # nine sentences, each its own piece: more audio than one piece can hold
    assert len(audio_bytes(events)) // 2 > MAX_FRAMES[voice] * FRAME_SAMPLES[voice]


@ENGINE_VOICES
async def test_same_text_voice_and_seed_give_the_same_audio(
    server: RunningServer, voice: str
) -> None:
    first = audio_bytes(await synthesize(server, "Hello there.", voice=voice))
    second = audio_bytes(await synthesize(server, "Hello there.", voice=voice))
    other_voice = audio_bytes(await synthesize(server, "Hello there.", voice="tiny-leo"))
    assert first == second
    assert first != other_voice


async def test_request_without_voice_uses_the_first_voice(server: RunningServer) -> None:
    assert audio_bytes(await synthesize(server, "Hello there.", voice=None)) == audio_bytes(
        await synthesize(server, "Hello there.", voice="tiny-tara")
    )


# ---- streaming (Home Assistant 2025.7+ sends this for every request)


@ENGINE_VOICES
async def test_streaming_speaks_each_sentence_as_it_completes(
    server: RunningServer, voice: str
) -> None:
    async with server.client() as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name=voice)).event())
        for piece in ("Hello th", "ere. The weath", "er is fine today! Sha"):
            await client.write_event(SynthesizeChunk(text=piece).event())
        # two sentences are complete: their audio arrives while the text is still open
        first_cycle = await read_until(client, "audio-stop")
        assert types(first_cycle) == ["audio-start", "audio-chunk", "audio-stop"]
        await client.write_event(SynthesizeChunk(text="ll we go for a walk?").event())
        await client.write_event(
            Synthesize(text=THREE_SENTENCES, voice=SynthesizeVoice(name=voice)).event()
        )
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")
    events = first_cycle + rest
    assert types(events) == ["audio-start", "audio-chunk", "audio-stop"] * 3 + [
        "synthesize-stopped"
    ], "one cycle per sentence, and the compatibility synthesize is not spoken again"
    formats = {
        (e.data["rate"], e.data["width"], e.data["channels"])
        for e in events
        if e.type in ("audio-start", "audio-chunk")
    }
    assert formats == {(24000, 2, 1)}


@ENGINE_VOICES
async def test_streamed_sentences_sound_like_plain_requests(
    server: RunningServer, voice: str
) -> None:
    async with server.client() as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name=voice)).event())
        await client.write_event(SynthesizeChunk(text="Hello there. ").event())
        await client.write_event(SynthesizeStop().event())
        streamed = audio_bytes(await read_until(client, "synthesize-stopped"))
    assert streamed == audio_bytes(await synthesize(server, "Hello there.", voice=voice))


async def test_stream_without_text_ends_with_an_error(server: RunningServer) -> None:
    async with server.client() as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text=" ... ").event())
        await client.write_event(SynthesizeStop().event())
        await assert_closed_after_error(client, "empty-text")


# ---- bad input: an error event naming the problem, then the connection closes


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        ({"text": "Hi.", "voice": {"name": "nobody"}}, "unknown-voice", "nobody"),
        (
            {"text": "Hi.", "voice": {"name": "tiny-tara", "speaker": "zoe"}},
            "unknown-speaker",
            "tiny-tara",
        ),
        ({"text": "Hi.", "voice": {"language": "xx"}}, "unknown-language", "xx"),
        ({"text": ""}, "empty-text", "empty"),
        ({"text": " ?! ... "}, "empty-text", "symbols"),
        ({"text": 42}, "malformed-event", "text"),
        ({"text": "Hi.", "voice": "tiny-tara"}, "malformed-event", "voice"),
        ({"text": "Hi.", "voice": {"name": 7}}, "malformed-event", "name"),
        ({"text": "word " * 5000}, "text-too-long", "characters"),
    ],
)
async def test_bad_synthesize_gets_an_error_and_a_close(
    server: RunningServer, data: dict, code: str, words: str
) -> None:
    async with server.client() as client:
        await client.write_event(Event(type="synthesize", data=data))
        error = await assert_closed_after_error(client, code)
    assert words in error.data["text"]
    # one short line, as Home Assistant 2026.11 shows it: no list of the catalog's voices
    assert "\n" not in error.data["text"] and len(error.data["text"]) < 200
    assert "tiny-leo" not in error.data["text"]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"this is not json\n", "malformed-event"),
        (b'{"data": {"text": "no type"}}\n', "malformed-event"),
        (b'{"type": "synthesize", "data_length": 5}\nnope!', "malformed-event"),
        (b'{"type": "synthesize", "data_length": 99999999}\n', "event-too-large"),
        (b'{"type": "synthesize-chunk", "data": {"text": "no start"}}\n', "unexpected-event"),
    ],
)
async def test_malformed_events_get_an_error_and_a_close(
    server: RunningServer, raw: bytes, code: str
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(raw)
    await writer.drain()
    header = json.loads(await asyncio.wait_for(reader.readline(), 30))
    data = json.loads(await reader.readexactly(header["data_length"]))
    assert header["type"] == "error" and data["code"] == code, data
    assert await asyncio.wait_for(reader.read(), 30) == b""  # closed
    writer.close()


async def test_server_keeps_serving_after_bad_input(server: RunningServer) -> None:
    for _ in range(3):
        async with server.client() as client:
            await client.write_event(Event(type="synthesize", data={"text": 1}))
            await assert_closed_after_error(client, "malformed-event")
    events = await synthesize(server, "Still here.")
    assert types(events) == ["audio-start", "audio-chunk", "audio-stop"]


# ---- concurrency, cancellation, a loop that never blocks


async def test_six_concurrent_clients_all_get_their_audio(server: RunningServer) -> None:
    voices = [*FRAME_SAMPLES] * 2  # two clients per model: they queue, the models run in parallel
    texts = [f"Client number {i} says hello." for i in range(len(voices))]
    # the last in a queue waits for its model's load and the request before it, while every
    # other worker loads and speaks on the same 2 cores: minutes on a slow machine
    crowd_timeout = len(voices) * READ_TIMEOUT
    results = await asyncio.gather(
        *(synthesize(server, t, v, timeout=crowd_timeout) for t, v in zip(texts, voices))
    )
    for events in results:
        assert types(events) == ["audio-start", "audio-chunk", "audio-stop"]
    # one request at a time per model: the result does not depend on the crowd
    for i in (0, 1):
        alone = await synthesize(server, texts[i], voices[i])
        assert audio_bytes(results[i]) == audio_bytes(alone)


async def test_describe_answers_quickly_during_synthesis(server: RunningServer) -> None:
    long_text = " ".join(f"Sentence number {i} is here." for i in range(12))
    async with server.client() as busy:
        await busy.write_event(Synthesize(text=long_text).event())
        first = await read_event(busy)  # synthesis is under way
        assert first is not None and first.type == "audio-start"
        latencies = []
        for _ in range(5):
            started = time.monotonic()
            async with server.client() as client:
                await client.write_event(Describe().event())
                assert (await read_event(client, timeout=5)) is not None
            latencies.append(time.monotonic() - started)
        events = await read_until(busy, "audio-stop")
        assert events[-1].type == "audio-stop"
    assert max(latencies) < 0.5, latencies  # Home Assistant allows 1 s


@ENGINE_VOICES
async def test_client_vanishing_mid_stream_frees_the_model(
    server: RunningServer, voice: str
) -> None:
    long_text = " ".join(f"Sentence number {i} is quite long indeed." for i in range(40))
    async with server.client() as client:
        await client.write_event(Synthesize(text=long_text, voice=SynthesizeVoice(voice)).event())
        chunk = await read_event(client)  # audio-start: the model is busy with us
        assert chunk is not None
    # gone without a word; the next request is served at once, not after 40 sentences
    started = time.monotonic()
    events = await synthesize(server, "Next please.", voice=voice)
    assert types(events) == ["audio-start", "audio-chunk", "audio-stop"]
    assert time.monotonic() - started < 20
    await asyncio.sleep(0.2)
    assert "cancelled" in server.log()


async def test_new_request_on_the_same_connection_replaces_the_old_one(
    server: RunningServer,
) -> None:

    long_text = " ".join(f"Sentence number {i} is quite long indeed." for i in range(40))
    async with server.client() as client:
        await client.write_event(Synthesize(text=long_text).event())
        assert (await read_event(client)) is not None  # audio-start of the first request
        await client.write_event(Synthesize(text="Short one.").event())
        events = await read_until(client, "audio-stop")
    # the first cycle ends early (or never); the second one runs to its end
    assert events[-1].type == "audio-stop"
    assert "audio-start" in types(events)


async def test_cloned_voices_need_a_readable_reference(tiny_models: Path, tmp_path: Path) -> None:
    """Qwen3-TTS Base voices: without a reference, or with one that cannot be had, the request
    gets an error naming the voice and what to fix, then a close; x-vector cloning works."""
    base = {"engine": "qwen3tts", "files": {"model": {"path": "qwen3tts-tiny-base"}}}
    base["options"] = {"max_frames": 4}
    voices = {
        "bare": {"model": "base"},
        "lost": {"model": "base", "reference": {"path": str(tmp_path / "lost.wav")}},
        "hub": {"model": "base", "reference": {"repo": "me/voices", "file": "alice.wav"}},
        "xvector": {
            "model": "base",
            "reference": {"path": str(tiny_models / "qwen3tts-tiny-reference.wav")},
        },
    }
    catalog = write_catalog(tmp_path, tiny_models, {"base": base}, voices)
    server = start_server(catalog, tmp_path, "--offline", "--download-dir", str(tmp_path / "hf"))
    try:
        for voice, code, words in (
            ("bare", "engine-error", "add `reference: {path:"),
            ("lost", "engine-error", "reference audio …/lost.wav"),  # the folders: in the log
            ("hub", "model-file-missing", "me/voices/alice.wav"),
        ):
            async with server.client() as client:
                request = Synthesize(text="Hello.", voice=SynthesizeVoice(voice))
                await client.write_event(request.event())
                events = await read_until(client, "audio-stop")  # the engine's error: after
                assert await read_event(client) is None  # audio-start, then the close
            error = events[-1]
            assert error.type == "error" and error.data["code"] == code, error
            assert f"voice {voice}" in error.data["text"] and words in error.data["text"]
        assert f"reference audio {tmp_path / 'lost.wav'}" in server.log()
        events = await synthesize(server, "Hello there.", voice="xvector")
        assert types(events) == ["audio-start", "audio-chunk", "audio-stop"]
        assert len(audio_bytes(events)) == 4 * 1920 * 2  # max_frames: 4
    finally:
        server.stop()
