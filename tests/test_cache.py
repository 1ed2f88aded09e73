"""The model cache as users have it: a conversion made once serves from a folder that can no
longer be written (a read-only volume, a shared cache), through the real server and tiny models.

The folder is a tmpfs of its own, remounted read-only: as root (CI) a plain chmod would not stop
a write. Skipped where mounting is not allowed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest
import yaml
from wyoming.tts import Synthesize, SynthesizeVoice

from .conftest import read_until, start_server

CACHE_MOUNT_SIZE_MB = 256
VOICES = {"tiny-tara": "orpheus-tiny", "tiny-qwen3-ryan": "qwen3tts-tiny"}
"""The engines that convert at their first load: Orpheus (its reduced output head) and Qwen3-TTS
(the release to GGUF)."""


@pytest.fixture
def cache_mount(tmpfs: Callable[[int], Path]) -> Path:
    return tmpfs(CACHE_MOUNT_SIZE_MB)


async def speak(server: object, voice: str) -> list:
    async with server.client() as client:  # type: ignore[attr-defined]
        await client.write_event(Synthesize(text="Hello.", voice=SynthesizeVoice(voice)).event())
        return await read_until(client, "audio-stop")


async def test_a_read_only_converted_cache_serves_orpheus_and_qwen3_voices(
    tiny_models: Path, cache_mount: Path, tmp_path: Path
) -> None:
    tiny = yaml.safe_load((tiny_models / "voices.yaml").read_text())
    models = {}
    for model in set(VOICES.values()):
        entry = tiny["models"][model]
        files = {}
        for role, ref in entry["files"].items():
            source = tiny_models / ref["path"]
            copy = cache_mount / source.name
            (shutil.copytree if source.is_dir() else shutil.copy)(source, copy)
            files[role] = {"path": str(copy)}
        models[model] = {**entry, "files": files}
    voices = {voice: tiny["voices"][voice] for voice in VOICES}
    catalog = tmp_path / "voices.yaml"
    catalog.write_text(yaml.safe_dump({"models": models, "voices": voices}, sort_keys=False))

    server = start_server(catalog, tmp_path)  # converts into the cache
    try:
        for voice in VOICES:
            assert (await speak(server, voice))[-1].type == "audio-stop", server.log()[-2000:]
    finally:
        assert server.stop() == 0
    before = sorted(path.name for path in cache_mount.iterdir())
    subprocess.run(["mount", "-o", "remount,ro", str(cache_mount)], check=True)

    server = start_server(catalog, tmp_path)
    try:
        for voice in VOICES:
            events = await speak(server, voice)
            assert events[-1].type == "audio-stop", (voice, events[-1].data)
    finally:
        assert server.stop() == 0
    assert sorted(path.name for path in cache_mount.iterdir()) == before
