"""The model cache's disk: a download that would leave less free than `--min-free-disk` is
refused before it starts, with a clear error and nothing partial left, and one that fits goes
through. The files come from a local stand-in for the hub (`hub_server.py`) through the real
huggingface_hub, into a tmpfs of the test's own (skipped where mounting is not allowed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from wyoming.tts import Synthesize, SynthesizeVoice

from .conftest import read_until, start_server
from .hub_server import LocalHub

CACHE_MOUNT_MB = 128
REPO = "example/orpheus-tiny-GGUF"


@pytest.fixture
def cache_mount(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "cache"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={CACHE_MOUNT_MB}m", "tmpfs", str(mount)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


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
