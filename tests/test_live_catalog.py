"""The catalog changes while the server runs (issue 32): the real server over Wyoming with tiny
models, its catalog edited on disk and its own voices edited through `own_voices`, the code the
web page's `LiveCatalog` runs; and `LiveCatalog` itself with a real registry."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import AsyncIterator, Callable

import pytest
import yaml
from wyoming.audio import AudioChunk
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from wyoming_multitts import own_voices
from wyoming_multitts.catalog import Catalog, load_catalog
from wyoming_multitts.hub import Hub
from wyoming_multitts.live_catalog import LiveCatalog
from wyoming_multitts.registry import ModelRegistry, RegistrySettings

from .conftest import RunningServer, read_event, read_until, start_server

CHANGE_SECONDS = 15.0
"""How long a change may take to show in `describe` (the server looks every 2 s; 2 busy cores)."""
ORPHEUS = "orpheus-tiny"
QWEN_BASE = "qwen3tts-tiny-base"


def tiny_catalog(tiny_models: Path, directory: Path, voices: list[str]) -> Path:
    """The tiny models' catalog with only `voices` (all its models), in `directory`."""
    doc = yaml.safe_load((tiny_models / "voices.yaml").read_text())
    for model in doc["models"].values():
        for ref in model["files"].values():
            ref["path"] = str(tiny_models / ref["path"])
    for voice in doc["voices"].values():
        if "reference" in voice:
            voice["reference"]["path"] = str(tiny_models / voice["reference"]["path"])
    doc["voices"] = {name: doc["voices"][name] for name in voices}
    doc.pop("cpu_voice", None)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "voices.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def edit(path: Path, change: dict) -> None:
    """Save `path` with `change` over its voices, as an editor does (a new file renamed over)."""
    doc = yaml.safe_load(path.read_text())
    doc["voices"] = {**doc["voices"], **change}
    doc["voices"] = {name: voice for name, voice in doc["voices"].items() if voice is not None}
    new = path.with_name(path.name + ".new")
    new.write_text(yaml.safe_dump(doc, sort_keys=False))
    new.replace(path)


async def described(server: RunningServer) -> dict[str, str]:
    """The voices `describe` lists now, with their descriptions."""
    async with server.client() as client:
        await client.write_event(Describe().event())
        event = await read_event(client)
    assert event is not None
    return {v.name: v.description or "" for v in Info.from_event(event).tts[0].voices}


async def described_when(
    server: RunningServer, done: Callable[[dict[str, str]], bool]
) -> dict[str, str]:
    """`describe`'s voices once `done(voices)` holds (the server polls its files)."""
    deadline = time.monotonic() + CHANGE_SECONDS
    while True:
        voices = await described(server)
        if done(voices) or time.monotonic() > deadline:
            return voices
        await asyncio.sleep(0.2)


def logged_when(server: RunningServer, text: str) -> str:
    """The server's log once it holds `text` (or after `CHANGE_SECONDS`)."""
    deadline = time.monotonic() + CHANGE_SECONDS
    while text not in server.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    return server.log()


@pytest.fixture
def live_server(tiny_models: Path, tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A server of Orpheus's two tiny voices, with a data folder for own voices."""
    voices = tiny_catalog(tiny_models, tmp_path / "user", ["tiny-tara", "tiny-leo"])
    running = start_server(voices, tmp_path, "--data-dir", str(tmp_path / "data"))
    yield running  # type: ignore[misc]
    running.stop()


async def test_a_request_keeps_its_voice_while_the_catalog_changes_under_it(
    live_server: RunningServer, tmp_path: Path
) -> None:
    async with live_server.client() as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="tiny-tara")).event())
        await client.write_event(SynthesizeChunk(text="Hello there. How are").event())
        first = await read_until(client, "audio-stop")
        assert first[-1].type == "audio-stop", first[-1]

        # the voice this request speaks, and its model's last voice, go; another is renamed
        again = {"model": ORPHEUS, "speaker": "leo", "description": "Leo again"}
        edit(
            tmp_path / "user" / "voices.yaml",
            {"tiny-tara": None, "tiny-leo": None, "leo-again": again},
        )
        voices = await described_when(live_server, lambda v: "tiny-tara" not in v)
        assert voices == {"leo-again": "Leo again"}

        await client.write_event(SynthesizeChunk(text=" you today?").event())
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")
    assert [e.type for e in rest if e.type != "audio-chunk"] == [
        "audio-start",
        "audio-stop",
        "synthesize-stopped",
    ]
    assert any(AudioChunk.is_type(e.type) for e in rest)

    async with live_server.client() as client:  # a new request gets the new catalog
        await client.write_event(Synthesize("Hi.", voice=SynthesizeVoice("tiny-tara")).event())
        error = await read_event(client)
    assert error is not None and error.data["code"] == "unknown-voice"
    assert "Catalog changed: 1 voices of" in live_server.log()


async def test_a_broken_edit_keeps_the_last_good_catalog_and_names_file_and_key(
    live_server: RunningServer, tmp_path: Path
) -> None:
    user = tmp_path / "user" / "voices.yaml"
    good = yaml.safe_load(user.read_text())
    edit(user, {"tiny-leo": {"model": "no-such-model", "speaker": "leo"}})
    log = logged_when(live_server, "Catalog change refused")
    assert "ERROR" in log and f"{user}: voices.tiny-leo.model: unknown model" in log
    assert set(await described(live_server)) == {"tiny-tara", "tiny-leo"}
    events = await speak(live_server, "tiny-leo")  # still spoken as before
    assert events[-1].type == "audio-stop", events[-1]

    user.write_text("voices: [this is: not a catalog\n")
    assert "not valid YAML" in logged_when(live_server, "not valid YAML")
    good["voices"]["tiny-leo"]["description"] = "Leo, fixed"
    user.write_text(yaml.safe_dump(good, sort_keys=False))  # fixed: taken
    voices = await described_when(live_server, lambda v: v.get("tiny-leo") == "Leo, fixed")
    assert voices["tiny-leo"] == "Leo, fixed"


async def speak(server: RunningServer, voice: str, text: str = "Hello there.") -> list:
    async with server.client() as client:
        await client.write_event(Synthesize(text, voice=SynthesizeVoice(voice)).event())
        return await read_until(client, "audio-stop")


async def test_own_voices_come_and_go_without_a_restart_and_their_model_with_them(
    live_server: RunningServer, tmp_path: Path, tiny_models: Path
) -> None:
    folder = tmp_path / "data" / own_voices.OWN_VOICES_FOLDER
    main = load_catalog(tmp_path / "user" / "voices.yaml")
    wav = (tiny_models / "qwen3tts-tiny-reference.wav").read_bytes()
    added = own_voices.add_voice(folder, main, "Grandpa Joe", QWEN_BASE, wav, "Hello.", "en")
    voices = await described_when(live_server, lambda v: added.name in v)
    assert voices[added.name] == "Grandpa Joe"
    events = await speak(live_server, added.name)
    assert events[-1].type == "audio-stop", events[-1]
    assert any(AudioChunk.is_type(e.type) for e in events)

    own_voices.rename_voice(folder, main, added.name, "Grandpa")
    voices = await described_when(live_server, lambda v: "grandpa" in v)
    assert "grandpa-joe" not in voices and voices["grandpa"] == "Grandpa"

    own_voices.delete_voice(folder, main, "grandpa")
    voices = await described_when(live_server, lambda v: "grandpa" not in v)
    assert set(voices) == {"tiny-tara", "tiny-leo"}
    log = logged_when(live_server, f"Unloading model {QWEN_BASE}")
    assert f"Unloading model {QWEN_BASE} (no voice uses it any more)" in log


# ---- LiveCatalog in this process, with a real registry


@pytest.fixture
async def live(
    tiny_models: Path, tmp_path: Path
) -> AsyncIterator[tuple[LiveCatalog, ModelRegistry]]:
    voices = tiny_catalog(tiny_models, tmp_path / "user", ["tiny-tara", "tiny-qwen3-ryan"])
    catalog = LiveCatalog(
        voices, tmp_path / "data" / own_voices.OWN_VOICES_FOLDER, poll_seconds=0.1
    )
    registry = ModelRegistry(catalog.load(), RegistrySettings(hub=Hub(offline=True), threads=2))
    catalog.subscribe(registry.update)
    catalog.start()
    yield catalog, registry
    await catalog.close()
    await registry.close()


async def test_the_api_changes_the_catalog_in_force_and_unloads_what_no_voice_uses(
    live: tuple[LiveCatalog, ModelRegistry], tiny_models: Path
) -> None:
    catalog, registry = live
    seen: list[Catalog] = []
    catalog.subscribe(seen.append)
    wav = (tiny_models / "qwen3tts-tiny-reference.wav").read_bytes()
    voice = await catalog.add_own_voice("Zoë", QWEN_BASE, wav, "Hello, this is my voice.", "en")
    assert voice.name == "zoe" and catalog.current.own_voices == ("zoe",)
    assert seen == [catalog.current] and catalog.version == 2
    oute = await catalog.add_own_voice("Oute", "outetts-1.0-tiny", wav, "Hello.", "en")
    assert oute.reference is not None and catalog.current.own_voices == ("zoe", "oute")
    await catalog.delete_own_voice("oute")

    async with registry.acquire(QWEN_BASE, "zoe"):
        pass
    assert QWEN_BASE in registry.loaded_models()
    renamed = await catalog.rename_own_voice("zoe", "Zoe Two")
    assert renamed.name == "zoe-two" and list(catalog.current.voices)[-1] == "zoe-two"
    assert QWEN_BASE in registry.loaded_models()  # still used, by the renamed voice

    await catalog.delete_own_voice("zoe-two")
    assert catalog.current.own_voices == () and catalog.version == 6
    assert QWEN_BASE not in registry.loaded_models()  # no voice uses it: unloaded at once


async def test_a_model_in_use_is_unloaded_after_its_request(
    live: tuple[LiveCatalog, ModelRegistry],
) -> None:
    catalog, registry = live
    user = catalog.voices
    async with registry.acquire(ORPHEUS, "tiny-tara"):
        version = catalog.version
        edit(user, {"tiny-tara": None})
        await asyncio.wait_for(catalog.changed(version), CHANGE_SECONDS)
        assert ORPHEUS in registry.loaded_models()  # its request goes on
    assert ORPHEUS not in registry.loaded_models()
    assert registry.model(ORPHEUS).name == ORPHEUS  # its slot stays for requests in flight


async def test_a_broken_own_file_is_refused_and_logged(
    live: tuple[LiveCatalog, ModelRegistry], caplog: pytest.LogCaptureFixture
) -> None:
    catalog, _ = live
    assert catalog.own_file is not None
    catalog.own_file.parent.mkdir(parents=True)
    catalog.own_file.write_text("voices:\n  tiny-tara: {model: orpheus-tiny}\n")
    with caplog.at_level(logging.ERROR):
        assert not await catalog.reload()
    assert f"{catalog.own_file}: voices.tiny-tara: {catalog.voices} has a voice" in caplog.text
    assert catalog.version == 1 and catalog.current.own_voices == ()


async def test_a_change_that_takes_the_default_voice_away_is_refused(
    tiny_models: Path, tmp_path: Path
) -> None:
    voices = tiny_catalog(tiny_models, tmp_path, ["tiny-tara", "tiny-qwen3-ryan"])
    catalog = LiveCatalog(voices, None, lambda c: c.with_default_voice("tiny-qwen3-ryan"))
    assert catalog.load().default_voice.name == "tiny-qwen3-ryan"
    edit(voices, {"tiny-qwen3-ryan": None})
    assert not await catalog.reload()
    assert catalog.current.default_voice.name == "tiny-qwen3-ryan" and catalog.version == 1
    edit(voices, {"tiny-qwen3-ryan": {"model": "qwen3tts-tiny", "speaker": "ryan"}})
    assert await catalog.reload() and catalog.version == 2
    with pytest.raises(own_voices.OwnVoiceError, match="start it with --data-dir"):
        await catalog.delete_own_voice("tiny-tara")
