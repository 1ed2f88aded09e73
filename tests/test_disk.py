"""Files from the hub, through a local stand-in for it (`hub_server.py`) and the real
huggingface_hub: a download that would leave less free than `--min-free-disk` on the cache's
disk (a tmpfs of the test's own; skipped where mounting is not allowed) is refused before it
starts, with a clear error and nothing partial left, and one that fits goes through; a
hub-hosted reference recording is fetched once."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable, Iterator

import pytest
import yaml
from wyoming.tts import Synthesize, SynthesizeVoice

from .conftest import read_until, start_server
from .hub_server import LocalHub

CACHE_MOUNT_MB = 128
REPO = "example/orpheus-tiny-GGUF"


@pytest.fixture
def cache_mount(tmpfs: Callable[[int], Path]) -> Path:
    return tmpfs(CACHE_MOUNT_MB)


@pytest.fixture
def local_hub(tiny_models: Path, tmp_path: Path) -> Iterator[LocalHub]:
    repo = tmp_path / "hub" / REPO
    repo.mkdir(parents=True)
    shutil.copy(tiny_models / "orpheus-tiny.gguf", repo / "orpheus-tiny.gguf")
    hub = LocalHub(tmp_path / "hub")
    yield hub
    hub.close()


async def speak(server: object) -> list:
    async with server.client() as client:  # type: ignore[attr-defined]
        await client.write_event(Synthesize(text="Hello.", voice=SynthesizeVoice("hub")).event())
        return await read_until(client, "audio-stop")


async def test_a_download_is_refused_before_it_would_fill_the_disk(
    tiny_models: Path,
    tmp_path: Path,
    cache_mount: Path,
    local_hub: LocalHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tiny = yaml.safe_load((tiny_models / "voices.yaml").read_text())
    model = tiny["models"]["orpheus-tiny"]
    files = {
        "model": {"repo": REPO, "file": "orpheus-tiny.gguf"},
        "codec": {"path": str(tiny_models / model["files"]["codec"]["path"])},
    }
    catalog = tmp_path / "voices.yaml"
    catalog.write_text(
        yaml.safe_dump(
            {
                "models": {"hub": {**model, "files": files}},
                "voices": {"hub": {"model": "hub", "speaker": "tara"}},
            }
        )
    )
    monkeypatch.setenv("HF_ENDPOINT", local_hub.endpoint)
    size_mb = (tiny_models / "orpheus-tiny.gguf").stat().st_size / 1e6
    assert CACHE_MOUNT_MB - size_mb < 100  # so a 0.1 GB reserve cannot be kept

    server = start_server(
        catalog, tmp_path, "--download-dir", str(cache_mount), "--min-free-disk", "0.1"
    )
    try:
        events = await speak(server)
    finally:
        server.stop()
    assert [e.type for e in events] == ["error"]
    assert events[0].data["code"] == "not-enough-disk"
    assert "--min-free-disk" in events[0].data["text"] and REPO in events[0].data["text"]
    assert not [path for path in cache_mount.rglob("*") if path.is_file()]  # nothing partial
    assert not any("orpheus-tiny.gguf" in r and r.startswith("GET") for r in local_hub.requests)

    server = start_server(
        catalog, tmp_path, "--download-dir", str(cache_mount), "--min-free-disk", "0.001"
    )
    try:
        assert (await speak(server))[-1].type == "audio-stop"
    finally:
        server.stop()
    assert any(r.startswith("GET") and "orpheus-tiny.gguf" in r for r in local_hub.requests)


async def test_a_hub_hosted_reference_is_fetched_once(
    tiny_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cloned voice whose recording is on the hub asks the hub once, not on every request."""
    repo = tmp_path / "hub" / "example" / "voices"
    repo.mkdir(parents=True)
    shutil.copy(tiny_models / "qwen3tts-tiny-reference.wav", repo / "me.wav")
    hub = LocalHub(tmp_path / "hub")
    tiny = yaml.safe_load((tiny_models / "voices.yaml").read_text())
    model = tiny["models"]["qwen3tts-tiny-base"]
    model = {**model, "files": {"model": {"path": str(tiny_models / "qwen3tts-tiny-base")}}}
    voice = {
        "model": "base",
        "reference": {"repo": "example/voices", "file": "me.wav", "text": "Hello, my voice."},
    }
    catalog = tmp_path / "voices.yaml"
    catalog.write_text(yaml.safe_dump({"models": {"base": model}, "voices": {"hub": voice}}))
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    server = start_server(catalog, tmp_path, "--download-dir", str(tmp_path / "cache"))
    try:
        for _ in range(3):
            assert (await speak(server))[-1].type == "audio-stop", server.log()[-2000:]
    finally:
        server.stop()
        hub.close()
    assert len([r for r in hub.requests if "me.wav" in r and r.startswith("HEAD")]) == 1
