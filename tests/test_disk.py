"""Files from the hub, through a local stand-in for it (`hub_server.py`) and the real
huggingface_hub: a download that would leave less free than `--min-free-disk` on the cache's
disk (a tmpfs of the test's own; skipped where mounting is not allowed) is refused before it
starts, with a clear error and nothing partial left, and one that fits goes through; a
hub-hosted reference recording is fetched once."""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from pathlib import Path
from typing import Callable, Iterator

import psutil
import pytest
import yaml
from wyoming.tts import Synthesize, SynthesizeVoice

from .conftest import read_until, start_server
from .hub_server import LocalHub

CACHE_MOUNT_MB = 128


@pytest.fixture
def cache_mount(tmpfs: Callable[[int], Path]) -> Path:
    return tmpfs(CACHE_MOUNT_MB)


REPOS = ("example/orpheus-tiny-GGUF", "example/orpheus-tiny-2-GGUF", "example/orpheus-tiny-3-GGUF")
"""Three hub repos of the tiny Orpheus GGUF (44 MB each): three models of one catalog."""
REPO = REPOS[0]


@pytest.fixture
def local_hub(tiny_models: Path, tmp_path: Path) -> Iterator[LocalHub]:
    for repo_id in REPOS:
        repo = tmp_path / "hub" / repo_id
        repo.mkdir(parents=True)
        shutil.copy(tiny_models / "orpheus-tiny.gguf", repo / "orpheus-tiny.gguf")
    hub = LocalHub(tmp_path / "hub")
    yield hub
    hub.close()


def hub_catalog(tiny_models: Path, tmp_path: Path) -> Path:
    """A catalog of one model (and voice) per repo of `REPOS`: `hub0`, `hub1`, `hub2`."""
    tiny = yaml.safe_load((tiny_models / "voices.yaml").read_text())
    model = tiny["models"]["orpheus-tiny"]
    codec = {"path": str(tiny_models / model["files"]["codec"]["path"])}
    models, voices = {}, {}
    for i, repo in enumerate(REPOS):
        files = {"model": {"repo": repo, "file": "orpheus-tiny.gguf"}, "codec": codec}
        models[f"hub{i}"] = {**model, "files": files}
        voices[f"hub{i}"] = {"model": f"hub{i}", "speaker": "tara"}
    catalog = tmp_path / "voices.yaml"
    catalog.write_text(yaml.safe_dump({"models": models, "voices": voices}))
    return catalog


async def speak(server: object, voice: str = "hub0") -> list:
    async with server.client() as client:  # type: ignore[attr-defined]
        await client.write_event(Synthesize(text="Hello.", voice=SynthesizeVoice(voice)).event())
        return await read_until(client, "audio-stop")


def downloads(hub: LocalHub) -> list[str]:
    return [r for r in hub.requests if r.startswith("GET") and "orpheus-tiny.gguf" in r]


@pytest.fixture
def catalog(
    tiny_models: Path, tmp_path: Path, local_hub: LocalHub, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """`hub_catalog`, its repos served by `local_hub` (HF_ENDPOINT)."""
    monkeypatch.setenv("HF_ENDPOINT", local_hub.endpoint)
    return hub_catalog(tiny_models, tmp_path)


async def test_downloads_that_would_fill_the_disk_are_refused_before_they_start(
    tiny_models: Path, tmp_path: Path, cache_mount: Path, local_hub: LocalHub, catalog: Path
) -> None:
    """First requests for every model of the catalog at once, none of which fits the reserve:
    each ends with a clear error, nothing is downloaded and nothing partial is left."""
    size_mb = (tiny_models / "orpheus-tiny.gguf").stat().st_size / 1e6
    assert CACHE_MOUNT_MB - size_mb < 100  # so a 0.1 GB reserve cannot be kept

    server = start_server(
        catalog, tmp_path, "--download-dir", str(cache_mount), "--min-free-disk", "0.1"
    )
    try:
        results = await asyncio.gather(*(speak(server, f"hub{i}") for i in range(len(REPOS))))
    finally:
        server.stop()
    for repo, events in zip(REPOS, results):
        assert [e.type for e in events] == ["error"]
        assert events[0].data["code"] == "not-enough-disk"
        assert "--min-free-disk" in events[0].data["text"] and repo in events[0].data["text"]
    assert not [path for path in cache_mount.rglob("*") if path.is_file()]  # nothing partial
    assert not downloads(local_hub)

    server = start_server(
        catalog, tmp_path, "--download-dir", str(cache_mount), "--min-free-disk", "0.001"
    )
    try:
        assert (await speak(server))[-1].type == "audio-stop"
    finally:
        server.stop()
    assert len(downloads(local_hub)) == 1


async def test_what_conversion_writes_counts_and_the_cache_keeps_its_budget(
    tmp_path: Path, cache_mount: Path, local_hub: LocalHub, catalog: Path
) -> None:
    """The tiny GGUF (44 MB) alone would leave the 60 MB reserve on the 128 MB disk; with the
    reduced head's copy beside it (counted at up to its size) it would not. A cache budget
    below the same sum is refused naming --max-model-disk; one above it serves."""
    for flags, refused_by in (
        (("--min-free-disk", "0.06"), "--min-free-disk"),
        (("--min-free-disk", "0", "--max-model-disk", "0.05"), "--max-model-disk"),
        (("--min-free-disk", "0", "--max-model-disk", "0.1"), None),
    ):
        server = start_server(catalog, tmp_path, "--download-dir", str(cache_mount), *flags)
        try:
            events = await speak(server)
        finally:
            server.stop()
        if refused_by is None:
            assert events[-1].type == "audio-stop"
        else:
            assert events[0].data["code"] == "not-enough-disk", events
            assert refused_by in events[0].data["text"]
            assert not downloads(local_hub)


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
            assert (await speak(server, "hub"))[-1].type == "audio-stop", server.log()[-2000:]
    finally:
        server.stop()
        hub.close()
    assert len([r for r in hub.requests if "me.wav" in r and r.startswith("HEAD")]) == 1


async def test_sigterm_during_a_download_leaves_nothing_and_a_start_cleans_up(
    tiny_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server stopped while a worker downloads: the worker is gone (SIGTERM, then the
    server's own stop) and its partial file deleted. A partial file left by a server that could
    not clean up (SIGKILL) is deleted by the next start."""
    repo = tmp_path / "hub" / REPO
    repo.mkdir(parents=True)
    shutil.copy(tiny_models / "orpheus-tiny.gguf", repo / "orpheus-tiny.gguf")
    hub = LocalHub(tmp_path / "hub", bytes_per_second=2e6)  # 44 MB: over 20 s
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    cache = tmp_path / "cache"
    server = start_server(
        hub_catalog(tiny_models, tmp_path), tmp_path, "--download-dir", str(cache)
    )
    try:
        request = asyncio.create_task(speak(server))
        deadline = time.monotonic() + 30
        while not list(cache.glob("*/blobs/*.incomplete")) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert list(cache.glob("*/blobs/*.incomplete")), server.log()[-2000:]
        workers = psutil.Process(server.process.pid).children(recursive=True)
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
        request.cancel()
    finally:
        server.stop()
        hub.close()
    assert not [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
    assert not list(cache.glob("*/blobs/*.incomplete"))

    left = cache / "models--example--orpheus-tiny-GGUF" / "blobs" / "0123.incomplete"
    left.parent.mkdir(parents=True, exist_ok=True)
    left.write_bytes(b"half of a model")
    server = start_server(
        hub_catalog(tiny_models, tmp_path), tmp_path, "--download-dir", str(cache)
    )
    server.stop()
    assert not left.exists()
