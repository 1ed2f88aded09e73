"""A catalog model's files on disk, for the web page: which models are downloaded, a download
started now (with its progress), and deleting a model's downloaded files.

What a model's files are depends on its engine (`FILES`), and importing an engine imports torch
or llama.cpp, which the server process never does. So every question that needs the file list
is answered by a short process of its own, `python -m wyoming_multitts.model_files`, and a
download runs in one too, fetching the files the way a model worker does
(`worker.fetch_files`, with its disk checks). Cancelling a download stops its process, and the
partial file it leaves is deleted as after a stopped worker (`Hub.remove_stale_downloads`);
huggingface_hub publishes only whole files into the cache, so nothing half-downloaded is ever
taken for a model.

Progress is measured from outside, the same way for a download started here and one a first
request started in a model worker: the bytes in the blob folders of the model's repos
(complete files and `*.incomplete` ones) grow against the sizes the hub listed (`Hub.sizes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pickle
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog import Catalog, ModelSpec
from .hub import ALTERNATIVES, Hub

_LOGGER = logging.getLogger(__name__)

RECENT_WRITE_SECONDS = 10.0
"""A partial download (`*.incomplete`) written to this recently is being downloaded."""
RATE_WINDOW_SECONDS = 5.0
"""The download rate shown is measured over about this long."""
PROCESS_TIMEOUT = 120.0
"""Seconds a status, plan or delete process may take (it imports the catalog's engines)."""
ERROR_PREFIX = "model-files error: "
"""The line the process prints last when it fails: the message for the page."""


def repo_folder(hub: Hub, repo: str) -> Path:
    """The hub cache's folder of `repo` (huggingface_hub's layout: `models--org--name`)."""
    from huggingface_hub import constants

    cache = hub.cache_dir or Path(constants.HF_HUB_CACHE)
    return cache / ("models--" + repo.replace("/", "--"))


def _repos(spec: ModelSpec) -> list[str]:
    return sorted({ref.repo for ref in spec.files.values() if ref.repo is not None})


@dataclass
class _Blobs:
    """Bytes in the blob folders of some repos: all, and those of partial files written to
    lately (a download in progress)."""

    total: int = 0
    partial_recent: int = 0


def _blobs(hub: Hub, repos: list[str]) -> _Blobs:
    found = _Blobs()
    now = time.time()
    for repo in repos:
        for blob in (repo_folder(hub, repo) / "blobs").glob("*"):
            with contextlib.suppress(OSError):  # published or removed meanwhile
                info = blob.stat()
                found.total += info.st_size
                recent = now - info.st_mtime < RECENT_WRITE_SECONDS
                if blob.name.endswith(".incomplete") and recent:
                    found.partial_recent += info.st_size
    return found


@dataclass
class Progress:
    """One download of one model, as the page shows it."""

    missing: int
    """Bytes the hub listed as not yet in the cache when the download was first seen."""
    baseline: int
    """Bytes in the repos' blob folders then, not counting what the download had written."""
    samples: list[tuple[float, int]] = field(default_factory=list)
    """(when, bytes done) of the last few looks, for the rate."""

    def view(self, blob_bytes: int) -> dict[str, Any]:
        """Bytes done and in all, bytes a second, seconds left (None until known)."""
        now = time.monotonic()
        done = max(0, min(self.missing, blob_bytes - self.baseline))
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[1][0] >= RATE_WINDOW_SECONDS:
            self.samples.pop(0)
        then, done_then = self.samples[0]
        rate = (done - done_then) / (now - then) if now > then else 0.0
        left = (self.missing - done) / rate if rate > 0 else None
        return {"done": done, "total": self.missing, "rate": rate, "seconds_left": left}


class ModelFilesError(RuntimeError):
    """A model-files process failed; the message is its reason."""


class ModelFiles:
    """What the page knows of each model's files. Every look at the disk runs in a thread and
    every one that needs an engine's file list in a process of its own: the loop never waits."""

    def __init__(self, catalog: Catalog, hub: Hub) -> None:
        self.catalog = catalog
        self._hub = hub
        self.on_disk: dict[str, bool] = {}
        """By model: all its files are in the cache or on a local path (from the last status)."""
        self.errors: dict[str, str] = {}
        """By model: why its last download here failed (shown until the next one)."""
        self._progress: dict[str, Progress] = {}
        self._planning: set[str] = set()
        self._downloads: dict[str, asyncio.subprocess.Process] = {}
        self._cancelled: set[str] = set()
        self._refreshing: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _background(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- status

    def refresh(self) -> None:
        """Ask again which models are on disk, in the background (one status process)."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.create_task(self._refresh())

    async def _refresh(self) -> None:
        try:
            reply = await _run(["status"], (self.catalog, self._hub))
        except ModelFilesError as err:
            _LOGGER.warning("Could not tell which models are downloaded: %s", err)
            return
        self.on_disk = {name: bool(value) for name, value in reply.items()}

    async def downloads(self) -> dict[str, dict[str, Any]]:
        """Downloads in progress by model (started here or by a request), with their progress."""
        models = {name: _repos(spec) for name, spec in self.catalog.models.items()}
        looks = await asyncio.to_thread(
            lambda: {name: _blobs(self._hub, repos) for name, repos in models.items() if repos}
        )
        shown: dict[str, dict[str, Any]] = {}
        for name, blobs in looks.items():
            if name not in self._downloads and blobs.partial_recent == 0:
                if self._progress.pop(name, None) is not None:
                    self.refresh()  # a request's download ended: on disk now, or not
                continue
            progress = self._progress.get(name)
            if progress is None:
                self._plan(name, blobs)
                shown[name] = {"done": 0, "total": None, "rate": 0.0, "seconds_left": None}
            else:
                shown[name] = progress.view(blobs.total)
        return shown

    def _plan(self, name: str, blobs: _Blobs) -> None:
        """List the sizes of `name`'s missing files (a process: the hub's listing)."""
        if name in self._planning or name in self._downloads:
            return  # a download started here reports its own plan
        self._planning.add(name)

        async def plan() -> None:
            try:
                reply = await _run(["plan", name], (self.catalog, self._hub))
                baseline = blobs.total - blobs.partial_recent
                self._progress[name] = Progress(int(reply["missing"]), baseline)
            except ModelFilesError as err:
                _LOGGER.warning("Could not list the files of model %s: %s", name, err)
            finally:
                self._planning.discard(name)

        self._background(plan())

    # ---- download, cancel, delete

    def downloading(self, name: str) -> bool:
        """Whether a download of model `name` is known to be in progress."""
        return name in self._downloads or name in self._progress

    async def download(self, name: str) -> None:
        """Start downloading model `name`'s files in a process of its own."""
        if name in self._downloads:
            return
        self.errors.pop(name, None)
        repos = _repos(self.catalog.models[name])
        blobs = await asyncio.to_thread(_blobs, self._hub, repos)
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", __name__, "download", name),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self._downloads[name] = process
        self._background(self._follow(name, process, blobs))

    async def _follow(self, name: str, process: asyncio.subprocess.Process, blobs: _Blobs) -> None:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(pickle.dumps((self.catalog, self._hub)))
        process.stdin.close()
        _LOGGER.info("Downloading the files of model %s (from the web page)", name)
        try:
            first = await process.stdout.readline()  # the plan, before any byte is fetched
            with contextlib.suppress(ValueError, KeyError):
                baseline = blobs.total - blobs.partial_recent
                self._progress[name] = Progress(int(json.loads(first)["missing"]), baseline)
            _, err = await process.communicate()
        finally:
            self._downloads.pop(name, None)
        if process.returncode == 0:
            _LOGGER.info("Downloaded the files of model %s", name)
        elif name in self._cancelled:
            _LOGGER.info("Download of model %s cancelled", name)
        else:
            lines = err.decode("utf-8", "replace").splitlines()
            self.errors[name] = _failure(lines, process.returncode)
            _LOGGER.warning("Download of model %s failed: %s", name, self.errors[name])
        freed = await asyncio.to_thread(self._hub.remove_stale_downloads)
        if freed:
            _LOGGER.info("Freed %.1f MB of a stopped download", freed / 1e6)
        self._progress.pop(name, None)
        self._cancelled.discard(name)
        self.refresh()

    async def cancel(self, name: str) -> bool:
        """Stop a download started here; False when there is none."""
        process = self._downloads.get(name)
        if process is None:
            return False
        self._cancelled.add(name)
        process.terminate()  # it unwinds: its file closes and its lock is released
        try:
            await asyncio.wait_for(process.wait(), 10)
        except asyncio.TimeoutError:
            process.kill()
        return True

    async def delete(self, name: str) -> int:
        """Delete model `name`'s downloaded files that no other model of the catalog uses
        (local `path:` files are never touched); the bytes freed."""
        reply = await _run(["delete", name], (self.catalog, self._hub))
        self.on_disk[name] = False
        self.refresh()
        return int(reply["freed"])

    async def close(self) -> None:
        """Stop the downloads started here."""
        for name in list(self._downloads):
            await self.cancel(name)


async def _run(args: list[str], payload: object) -> dict[str, Any]:
    """Run the model-files process with `args`, `payload` pickled on its stdin; its JSON reply."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", __name__, *args),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        communicate = process.communicate(pickle.dumps(payload))
        out, err = await asyncio.wait_for(communicate, PROCESS_TIMEOUT)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        raise ModelFilesError(f"{' '.join(args)} took over {PROCESS_TIMEOUT:g} s") from None
    if process.returncode != 0:
        lines = err.decode("utf-8", "replace").splitlines()
        raise ModelFilesError(_failure(lines, process.returncode))
    reply = json.loads(out.decode("utf-8").splitlines()[-1])
    if not isinstance(reply, dict):
        raise ModelFilesError(f"{' '.join(args)} answered {reply!r}")
    return reply


def _failure(lines: list[str], returncode: int | None) -> str:
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    return (errors or lines or [f"exit status {returncode}"])[-1].removeprefix(ERROR_PREFIX)


# ---- the process (engine modules are imported here only)


def _cached(hub: Hub, spec: ModelSpec) -> list[Path] | None:
    """The model's downloaded files in the cache (snapshot paths); None when one is missing.
    Local `path:` files must exist but are not listed: they are the user's."""
    from huggingface_hub import try_to_load_from_cache

    from .engines import engine_module

    found: list[Path] = []
    for role, names in engine_module(spec.engine).FILES.items():
        ref = spec.files.get(role)
        if ref is None:
            return None
        if ref.path is not None:
            if not ref.path.exists():
                return None
            continue
        for name in [ref.file or ""] if names is None else names:
            paths = [
                try_to_load_from_cache(
                    ref.repo or "", one, cache_dir=hub.cache_dir, revision=ref.revision
                )
                for one in name.split(ALTERNATIVES)
            ]
            hit = next((path for path in paths if isinstance(path, str)), None)
            if hit is None:
                return None
            found.append(Path(hit))
    return found


def _on_disk(hub: Hub, spec: ModelSpec) -> bool:
    from .errors import VoiceError

    try:
        return _cached(hub, spec) is not None
    except VoiceError:  # its engine cannot be imported here: its voices say why
        return False


def _plan(hub: Hub, spec: ModelSpec) -> dict[str, int]:
    from .engines import engine_module

    roles = engine_module(spec.engine).FILES
    return {"missing": sum(hub.sizes(spec.files[r], n).missing for r, n in roles.items())}


def _download(catalog: Catalog, hub: Hub, name: str) -> None:
    from . import channel
    from .engines import engine_module
    from .worker import fetch_files

    spec = catalog.models[name]
    print(json.dumps(_plan(hub, spec)), flush=True)
    # the memory budget is the loading worker's business: a download alone is not refused
    load = channel.Load(spec, hub, "cpu", 1, f"model {name}", sys.maxsize)
    fetch_files(load, engine_module(spec.engine))
    print(json.dumps({"done": True}), flush=True)


def _delete(catalog: Catalog, hub: Hub, name: str) -> dict[str, int]:
    """Unlink the model's snapshot files and their blobs, but not those another model uses."""
    mine = _cached(hub, catalog.models[name]) or []
    shared = {
        path
        for other, spec in catalog.models.items()
        if other != name
        for path in (_cached(hub, spec) or [])
    }
    freed = 0
    for path in mine:
        if path in shared:
            continue
        blob = path.resolve()
        with contextlib.suppress(FileNotFoundError):
            freed += blob.stat().st_size
            blob.unlink()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return {"freed": freed}


def main(argv: list[str]) -> int:
    """`status` | `plan MODEL` | `download MODEL` | `delete MODEL`, with the catalog and hub
    pickled on stdin (by the server: both ends are this package); a JSON reply on stdout."""
    from .errors import VoiceError

    logging.basicConfig(level=logging.INFO, format=logging.BASIC_FORMAT)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    catalog, hub = pickle.loads(sys.stdin.buffer.read())
    try:
        if argv[0] == "status":
            print(json.dumps({name: _on_disk(hub, spec) for name, spec in catalog.models.items()}))
        elif argv[0] == "plan":
            print(json.dumps(_plan(hub, catalog.models[argv[1]])))
        elif argv[0] == "download":
            _download(catalog, hub, argv[1])
        elif argv[0] == "delete":
            print(json.dumps(_delete(catalog, hub, argv[1])))
    except VoiceError as err:
        print(ERROR_PREFIX + str(err), file=sys.stderr)
        return 1
    return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """Unwind (a cancelled download): its file closes and its lock is released, so the server
    can delete what it left."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main(sys.argv[1:]))
