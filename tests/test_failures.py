"""Models that fail to download or load: an error for that voice's requests only, a retry on the
next request, and the rest of the server unaffected. Also the loop under a model load."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Iterator

import pytest
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeVoice

from .conftest import (
    RunningServer,
    read_event,
    read_until,
    start_server,
    tiny_model_entry,
    write_catalog,
)


@pytest.fixture(scope="module")
def broken_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("broken")


@pytest.fixture(scope="module")
def failing_server(tiny_models: Path, broken_dir: Path) -> Iterator[RunningServer]:
    (broken_dir / "garbage.gguf").write_bytes(b"GGUF this is not a model" * 100)
    models = {
        "good": tiny_model_entry(tiny_models),
        "late": tiny_model_entry(tiny_models),
        "garbage": tiny_model_entry(tiny_models),
        "hub": tiny_model_entry(tiny_models),
        "gpu": tiny_model_entry(tiny_models, device="cuda"),
    }
    models["late"]["files"]["model"] = {"path": str(broken_dir / "late.gguf")}
    models["garbage"]["files"]["model"] = {"path": str(broken_dir / "garbage.gguf")}
    models["hub"]["files"]["model"] = {"repo": "example/orpheus-GGUF", "file": "model.gguf"}
    models["no-download"] = {**models["hub"], "download": False}
    # OuteTTS with its two files swapped: tokenizing with the tokenizer-less vocoder, or feeding
    # the vocoder more codes than it takes, would abort the whole process inside llama.cpp
    models["swapped"] = {
        "engine": "outetts",
        "files": {
            "model": {"path": str(tiny_models / "wavtokenizer-tiny.gguf")},
            "vocoder": {"path": str(tiny_models / "outetts-0.3-tiny.gguf")},
        },
    }
    # OuteTTS with the other version's vocoder: named, with what to put there instead
    for name, gguf, vocoder in (
        ("oute10-wavtokenizer", "outetts-1.0-tiny.gguf", "wavtokenizer-tiny.gguf"),
        ("oute3-dac", "outetts-0.3-tiny.gguf", "dac-tiny-24khz.pth"),
    ):
        models[name] = {
            "engine": "outetts",
            "files": {
                "model": {"path": str(tiny_models / gguf)},
                "vocoder": {"path": str(tiny_models / vocoder)},
            },
        }
    voices = {name: {"model": name, "speaker": "tara"} for name in models}
    catalog = write_catalog(broken_dir, tiny_models, models, voices)
    server = start_server(
        catalog, broken_dir, "--offline", "--download-dir", str(broken_dir / "cache")
    )
    yield server
    server.stop()


async def request(server: RunningServer, voice: str) -> list:  # type: ignore[type-arg]
    async with server.client() as client:
        await client.write_event(Synthesize(text="Hello.", voice=SynthesizeVoice(voice)).event())
        events = await read_until(client, "audio-stop")
        if events and events[-1].type == "error":
            assert await read_event(client) is None, "the connection closes after an error"
        return events


@pytest.mark.parametrize(
    ("voice", "words"),
    [
        ("late", "late.gguf does not exist"),
        ("garbage", "garbage.gguf"),
        ("hub", "example/orpheus-GGUF/model.gguf"),
        ("no-download", "the catalog says download: false"),
        ("gpu", "device cuda"),
        ("swapped", "wavtokenizer-tiny.gguf"),
        ("oute10-wavtokenizer", "OuteTTS 1.0, whose vocoder is {repo: ibm-research/DAC.speech"),
        ("oute3-dac", "dac-tiny-24khz.pth is not a GGUF file"),
    ],
)
async def test_a_failing_model_is_an_error_for_its_voice_only(
    failing_server: RunningServer, voice: str, words: str
) -> None:
    events = await request(failing_server, voice)
    assert [e.type for e in events] == ["error"]
    assert words in events[0].data["text"] and f"voice {voice}" in events[0].data["text"]
    good = await request(failing_server, "good")
    assert good[0].type == "audio-start" and good[-1].type == "audio-stop"


async def test_the_next_request_retries_the_load(
    failing_server: RunningServer, tiny_models: Path, broken_dir: Path
) -> None:
    assert (await request(failing_server, "late"))[0].type == "error"
    shutil.copy(tiny_models / "orpheus-tiny.gguf", broken_dir / "late.gguf")
    events = await request(failing_server, "late")
    assert events[0].type == "audio-start" and events[-1].type == "audio-stop"


async def test_describe_answers_while_a_model_loads(tiny_models: Path, tmp_path: Path) -> None:
    server = start_server(tiny_models / "voices.yaml", tmp_path)  # nothing loaded yet
    try:
        async with server.client() as busy:
            await busy.write_event(Synthesize(text="Hello.").event())  # starts the first load
            await asyncio.sleep(0.05)
            started = time.monotonic()
            async with server.client() as client:
                await client.write_event(Describe().event())
                assert (await read_event(client, timeout=5)) is not None
            latency = time.monotonic() - started
            assert (await read_until(busy, "audio-stop"))[-1].type == "audio-stop"
        assert latency < 0.5, latency
        assert "Loaded model orpheus-tiny" in server.log()
    finally:
        server.stop()
