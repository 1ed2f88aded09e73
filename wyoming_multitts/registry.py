"""Loaded models, each in its own worker process: start on first use (once), share between
voices, one request at a time per model with a bounded queue, evict the least recently used idle
models to stay within a memory budget counted from the workers' real memory, unload idle ones,
and start a fresh worker after one died.

A load belongs to the registry, not to the request that started it: a client that leaves during
a load leaves it running, and its model is counted and reused by the next request.

The catalog may change while the server runs (`live_catalog.py`, `update`): a new model gets a
slot, a changed one is loaded afresh at its next turn, and one no voice uses any more is
unloaded once its requests are done. A slot is never removed, so a request that started with a
voice of the old catalog finishes with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from . import channel
from .catalog import Catalog, FileRef, ModelSpec, VoiceSpec
from .engines import PROFILE_FROM_REFERENCE
from .engines.base import ReferenceAudio, VoiceSettings
from .errors import ModelBusyError, ModelTooLargeError, context
from .hub import Hub
from .process import ModelProcess, finish_even_if_cancelled
from .speaker_profiles import SpeakerProfiles

_LOGGER = logging.getLogger(__name__)

DEFAULT_MEMORY_SHARE = 0.75
"""Default memory budget: this share of the machine's RAM (or of the container's limit)."""
SAFE_RATE = 0.5
"""What a model is taken to make, in seconds of audio a second, before it has been measured:
slow enough that its first request is held rather than stalled (`handler`)."""
SPOKEN_CHARS_PER_SECOND = 15.0
"""People speak about 15 characters (letters and spaces) a second: a model's pace until
measured."""
IDLE_CHECK_SECONDS = 5.0
"""How often idle models are looked at when `--unload-after` is set (at most)."""
CGROUP_MEMORY_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1
)
"""Where a container's memory limit is found ("max", or a huge number, when there is none)."""


def machine_memory_bytes() -> int:
    """Memory this server may use: physical memory, or the container's limit when lower."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in CGROUP_MEMORY_LIMITS:
        with contextlib.suppress(OSError):
            limit = path.read_text(encoding="ascii").strip()
            if limit.isdigit():
                return min(physical, int(limit))
    return physical


@dataclass(frozen=True)
class Speed:
    """How fast a model speaks on this machine, as measured on its requests so far."""

    rate: float = SAFE_RATE
    """Seconds of audio it makes per second of wall time, first audio's wait included."""
    seconds_per_char: float = 1 / SPOKEN_CHARS_PER_SECOND
    """Seconds of audio per character of spoken text (its voices' pace)."""
    measured: bool = False
    """False: the safe estimates above, before any request of the model has been measured."""

    def updated(self, chars: int, audio_seconds: float, seconds: float) -> "Speed":
        """With one more request's figures, weighted as the previous ones together."""
        if chars <= 0 or audio_seconds <= 0 or seconds <= 0:
            return self
        rate, per_char = audio_seconds / seconds, audio_seconds / chars
        if self.measured:
            rate = (rate + self.rate) / 2
            per_char = (per_char + self.seconds_per_char) / 2
        return Speed(rate, per_char, measured=True)


@dataclass
class _Slot:
    """One catalog model: its worker (if any) and who is using or waiting for it."""

    spec: ModelSpec
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by the one request using the model (asyncio locks are fair: arrival order)."""
    worker: ModelProcess | None = None
    """The loaded model's worker (possibly dead: checked at each use)."""
    loader: ModelProcess | None = None
    """The worker while it loads: its memory counts from the moment it is spawned (imports,
    downloads and conversions take memory before the model does)."""
    loading: asyncio.Task[ModelProcess] | None = None
    estimated_bytes: int = 0
    """The engine's estimate, counted from the moment the registry made room for it."""
    holders: int = 0
    """Requests using or waiting for this model; such a model is never evicted."""
    last_used: float = 0.0
    speed: Speed = field(default_factory=Speed)
    """Kept when the model is unloaded: it is the machine's speed, not the worker's."""
    unused: bool = False
    """No voice of the catalog in force speaks through it: unloaded once idle."""
    stale: bool = False
    """Its catalog entry changed since its worker loaded: loaded afresh at its next turn."""

    def counted_bytes(self) -> int:
        """Memory counted against the budget: while loading, the worker's resident memory or
        the estimate once made, then the worker's resident plus GPU memory (never less than
        the estimate: memory maps fill lazily)."""
        if self.worker is not None and self.worker.alive:
            measured = self.worker.resident_bytes() + self.worker.gpu_bytes
            return max(self.estimated_bytes, measured)
        if self.loading is None:
            return 0
        spawned = self.loader.resident_bytes() if self.loader is not None else 0
        return max(self.estimated_bytes, spawned)

    @property
    def idle(self) -> bool:
        return self.worker is not None and self.holders == 0 and self.loading is None

    @property
    def outdated(self) -> bool:
        """Its worker should go as soon as it is idle (the catalog changed)."""
        return self.unused or self.stale


@dataclass(frozen=True)
class RegistrySettings:
    """How the registry loads and keeps models."""

    hub: Hub
    threads: int
    device_override: str | None = None
    """`--device`: used instead of every model's catalog device."""
    max_loaded_bytes: int = 0
    """Budget for all loaded models (0: `DEFAULT_MEMORY_SHARE` of `machine_memory_bytes`)."""
    unload_after: float | None = None
    """Unload a model idle this many seconds (None: keep loaded)."""
    load_timeout: float = 900.0
    """Seconds a worker may take to load its model (after its files are fetched)."""
    max_waiting: int = 8
    """Requests that may wait for one model while it serves another."""
    max_loads: int = 1
    """Models loading at once (worker start, download, conversion, load); the others wait."""
    keep_recent: float = 60.0
    """A model used this many seconds ago or less is not unloaded to make room for another
    (`--keep-recent`): a client asking for model after model cannot push out the one Home
    Assistant just spoke with."""
    log_level: str = "INFO"
    log_format: str = logging.BASIC_FORMAT
    stats_file: Path | None = None
    """`--stats-file`: where workers append each text piece's `PieceStats` as JSON."""
    speaker_dir: Path = Path("speakers")
    """Where speaker profiles made from voices' recordings are cached (`speaker_profiles.py`)."""


class ModelRegistry:
    """Owns every model worker of a catalog."""

    def __init__(self, catalog: Catalog, settings: RegistrySettings) -> None:
        self._settings = settings
        self._budget = settings.max_loaded_bytes or int(
            machine_memory_bytes() * DEFAULT_MEMORY_SHARE
        )
        self._slots: dict[str, _Slot] = {}
        self._profiles = SpeakerProfiles(
            settings.speaker_dir,
            settings.hub,
            settings.threads,
            settings.load_timeout,
            self._reserved,
        )
        self._reserved_bytes = 0
        """Memory of helper processes that run now (`create-speaker`), counted in the budget."""
        self._room = asyncio.Lock()
        self._references: dict[FileRef, Path] = {}
        """Hub-hosted reference recordings, fetched once: asked of the hub on every request,
        they cost a round trip each time and failed whenever the hub did."""
        self._loads = asyncio.Semaphore(settings.max_loads)
        """Taken by each load from its worker's start to its end: 15 first requests for 15
        models must not start 15 workers and 15 downloads at once."""
        self._idle_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        """Work `update` leaves running (`_in_background`): workers of outdated models being
        stopped, speaker profiles no voice needs being removed."""
        self.update(catalog)

    def update(self, catalog: Catalog) -> None:
        """Take a changed catalog (a `LiveCatalog` listener, so synchronous): a new model gets
        a slot, a changed one is loaded afresh at its next turn, and one that no voice uses any
        more is unloaded, at once when idle, else after its last request."""
        used = {voice.model for voice in catalog.voices.values()}
        for name, spec in catalog.models.items():
            slot = self._slots.setdefault(name, _Slot(spec))
            if slot.spec != spec:
                slot.spec, slot.stale = spec, True
        for name, slot in self._slots.items():
            slot.unused = name not in used
            self._settle(slot)
        self._prune_profiles(catalog)

    def _prune_profiles(self, catalog: Catalog) -> None:
        """Remove, in the background, the speaker profiles no voice of `catalog` needs."""
        voices = []
        for voice in catalog.voices.values():
            model = catalog.models[voice.model]
            if voice.reference is None or model.engine not in PROFILE_FROM_REFERENCE:
                continue
            path = voice.reference.audio.path or self._references.get(voice.reference.audio)
            ref = None if path is None else ReferenceAudio(path, voice.reference.text)
            voices.append((voice, model, ref))
        self._in_background(self._profiles.prune(voices), "prune speaker profiles")

    def _in_background(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run `work` as a task that `close` waits for."""
        task = asyncio.create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _settle(self, slot: _Slot) -> None:
        """Stop the worker of an outdated model that is idle now (in the background: callers
        are synchronous or must not wait)."""
        if not (slot.idle and slot.outdated):
            return
        why = "no voice uses it any more" if slot.unused else "its catalog entry changed"
        worker = self._detach(slot, why)
        if worker is not None:
            self._in_background(worker.stop(), f"stop {slot.spec.name}")

    @property
    def budget_bytes(self) -> int:
        """Memory all loaded models may take together."""
        return self._budget

    def model(self, name: str) -> ModelSpec:
        """Model `name` as the registry has it: its slot outlives a catalog change, so a
        request that began before one goes on with the model its voice named."""
        return self._slots[name].spec

    def speed(self, model: str) -> Speed:
        """How fast `model` speaks on this machine (safe estimates until measured)."""
        return self._slots[model].speed

    def measured(self, model: str, chars: int, audio_seconds: float, seconds: float) -> None:
        """One request of `model` made `audio_seconds` of audio from `chars` characters in
        `seconds`, from the request to its last audio."""
        slot = self._slots[model]
        slot.speed = slot.speed.updated(chars, audio_seconds, seconds)

    def loaded_models(self) -> dict[str, int]:
        """Models loaded now (live workers), with the memory each is counted for (bytes)."""
        return {
            name: slot.counted_bytes()
            for name, slot in self._slots.items()
            if slot.worker is not None and slot.worker.alive
        }

    @contextlib.asynccontextmanager
    async def acquire(self, model: str, voice: str) -> AsyncIterator[ModelProcess]:
        """Wait for the model's turn (in arrival order), load it if needed, and hold its worker
        for one request."""
        slot = self._slots[model]
        waiting = slot.holders - 1 if slot.turn.locked() else slot.holders
        if waiting >= self._settings.max_waiting:
            raise ModelBusyError(
                f"voice {voice} (model {model}): {waiting} requests already wait for this "
                f"model (--max-waiting {self._settings.max_waiting}); try again shortly"
            )
        slot.holders += 1
        try:
            async with slot.turn:
                yield await self._loaded_worker(slot, voice)
        finally:
            slot.holders -= 1
            slot.last_used = time.monotonic()
            self._settle(slot)

    async def with_reference(self, spec: VoiceSpec, voice: VoiceSettings) -> VoiceSettings:
        """The voice as its engine takes it: a cloning engine gets the reference recording as a
        local file (fetched from the hub if need be; a local path is not checked here: the
        engine names it if it cannot read it); an engine that speaks from speaker profiles
        (OuteTTS) gets the profile made from the recording as its speaker (made once, cached)."""
        ref = spec.reference
        if ref is None:
            return voice
        path = ref.audio.path or self._references.get(ref.audio)
        if path is None:
            with context(f"voice {spec.name} (reference audio)"):
                path = await asyncio.to_thread(self._settings.hub.fetch_file, ref.audio)
            self._references[ref.audio] = path
        reference = ReferenceAudio(path, ref.text)
        model = self._slots[spec.model].spec
        if model.engine not in PROFILE_FROM_REFERENCE:
            return replace(voice, reference=reference)
        device = self._settings.device_override or model.device
        profile = await self._profiles.profile(spec, model, reference, device)
        return replace(voice, speaker=str(profile))

    async def _loaded_worker(self, slot: _Slot, voice: str) -> ModelProcess:
        if slot.worker is not None and not slot.worker.alive:
            _LOGGER.warning(
                "The worker of model %s had died (%s); starting a new one",
                slot.spec.name,
                slot.worker.exit_cause(),
            )
            slot.worker, slot.estimated_bytes = None, 0
        if slot.worker is not None and slot.stale:  # the requests before this one are done
            await self._unload(slot, "its catalog entry changed")
        if slot.worker is not None:
            return slot.worker
        if slot.loading is None:
            slot.loading = asyncio.create_task(self._load(slot, voice), name=f"load {voice}")
            slot.loading.add_done_callback(_retrieve_exception)
        # shielded: a request cancelled here leaves the load running into the registry
        return await asyncio.shield(slot.loading)

    async def _load(self, slot: _Slot, voice: str) -> ModelProcess:
        if self._loads.locked():
            _LOGGER.info(
                "Model %s waits for %d load(s) in progress (--max-loads)",
                slot.spec.name,
                self._settings.max_loads,
            )
        async with self._loads:
            return await self._load_now(slot, voice)

    async def _load_now(self, slot: _Slot, voice: str) -> ModelProcess:
        spec, settings = slot.spec, self._settings
        where = f"voice {voice} (model {spec.name})"
        started = time.monotonic()
        load = channel.Load(
            spec,
            settings.hub,
            settings.device_override or spec.device,
            settings.threads,
            where,
            self._budget,
            settings.stats_file,
        )
        worker = None
        try:
            worker = slot.loader = await ModelProcess.start(
                spec.name, settings.log_level, settings.log_format
            )
            loaded = await worker.load(
                load, partial(self._make_room, slot, where), settings.load_timeout
            )
            slot.worker = worker
        except BaseException:
            slot.estimated_bytes = 0
            if worker is not None:
                await worker.kill()
                await finish_even_if_cancelled(self._remove_partial_downloads())
            raise
        finally:
            slot.loading, slot.loader = None, None
        slot.stale = slot.spec != spec  # changed again while it loaded
        await self._trim(keep=slot)
        _LOGGER.info(
            "Loaded model %s (%s) on %s in %.1f s: worker %d, estimated %.0f MB, "
            "%.0f MB counted%s",
            spec.name,
            spec.engine,
            loaded.device,
            time.monotonic() - started,
            worker.pid,
            slot.estimated_bytes / 1e6,
            slot.counted_bytes() / 1e6,
            (
                f", torch holds {loaded.gpu_bytes / 1e6:.0f} MB of GPU memory"
                if loaded.gpu_bytes
                else ""
            ),
        )
        self._settle(slot)  # its requests may all have left, and its voices gone meanwhile
        return worker

    async def _remove_partial_downloads(self) -> None:
        """A worker stopped during a download leaves its partial file: delete it now, not at
        the next start (a multi-GB file on a small disk)."""
        freed = await asyncio.to_thread(self._settings.hub.remove_stale_downloads)
        if freed:
            _LOGGER.info("Freed %.1f MB of a stopped download", freed / 1e6)

    async def _make_room(self, loading: _Slot, where: str, needed: int) -> None:
        """Unload least recently used idle models until `needed` more bytes fit the budget,
        then count them for `loading`."""
        async with self._room:
            await self._fit(needed, where, loading)
            loading.estimated_bytes = needed

    @contextlib.asynccontextmanager
    async def _reserved(self, needed: int, where: str) -> AsyncIterator[None]:
        """Count `needed` bytes of a helper process (`create-speaker`) against the budget while
        it runs, making room for them as for a model."""
        async with self._room:
            await self._fit(needed, where, None)
            self._reserved_bytes += needed
        try:
            yield
        finally:
            self._reserved_bytes -= needed

    async def _fit(self, needed: int, where: str, loading: _Slot | None) -> None:
        """Unload idle models not used in the last `keep_recent` seconds, least recently used
        first, until `needed` more bytes fit the budget beside the others (`loading`'s own
        memory so far is part of `needed`); else `ModelTooLargeError`. Under `_room`."""
        if needed > self._budget:
            raise ModelTooLargeError(
                f"{where}: needs ~{needed / 1e9:.1f} GB but the "
                f"memory budget is {self._budget / 1e9:.1f} GB; raise --max-loaded-bytes"
            )
        recent = time.monotonic() - self._settings.keep_recent
        await self._evict_idle(loading, needed, f"to make room for {where}", used_before=recent)
        others = self._counted() - (loading.counted_bytes() if loading else 0)
        if others + needed > self._budget:
            kept = [s.spec.name for s in self._slots.values() if s.idle and s is not loading]
            why = (
                f"; {', '.join(kept)} spoke in the last {self._settings.keep_recent:g} s "
                "(--keep-recent)"
                if kept
                else ""
            )
            raise ModelTooLargeError(
                f"{where}: needs ~{needed / 1e6:.0f} MB; models in use take "
                f"{others / 1e6:.0f} MB of the {self._budget / 1e6:.0f} MB budget{why}; "
                "try again shortly, or raise --max-loaded-bytes"
            )

    async def _trim(self, keep: _Slot) -> None:
        """After a load, measured memory may exceed the estimate: unload least recently used
        idle models until the budget holds again."""
        async with self._room:
            await self._evict_idle(
                keep, keep.counted_bytes(), "over the memory budget after loading " + keep.spec.name
            )

    async def _evict_idle(
        self, keep: _Slot | None, needed: int, why: str, used_before: float = math.inf
    ) -> None:
        """Unload idle models other than `keep` last used before `used_before`, least recently
        used first, until `needed` more bytes fit the budget (or none is left to unload);
        `keep`'s own memory counts in `needed`."""
        idle = sorted(
            (
                s
                for s in self._slots.values()
                if s.idle and s is not keep and s.last_used < used_before
            ),
            key=lambda s: s.last_used,
        )
        for slot in idle:
            if self._counted() - (keep.counted_bytes() if keep else 0) + needed <= self._budget:
                break
            await self._unload(slot, why)

    def _counted(self) -> int:
        return self._reserved_bytes + sum(slot.counted_bytes() for slot in self._slots.values())

    async def _unload(self, slot: _Slot, why: str) -> None:
        worker = self._detach(slot, why)
        if worker is not None:
            await worker.stop()

    @staticmethod
    def _detach(slot: _Slot, why: str) -> ModelProcess | None:
        """Take the slot's worker out of it (the slot then counts nothing); the worker, to stop."""
        worker, slot.worker, slot.estimated_bytes, slot.stale = slot.worker, None, 0, False
        if worker is not None:
            _LOGGER.info("Unloading model %s (%s)", slot.spec.name, why)
        return worker

    def start(self) -> None:
        """Start unloading idle models in the background (when `unload_after` is set)."""
        if self._settings.unload_after is not None:
            self._idle_task = asyncio.create_task(self._unload_idle_forever())

    async def _unload_idle_forever(self) -> None:
        unload_after = self._settings.unload_after or 0.0
        while True:
            await asyncio.sleep(min(IDLE_CHECK_SECONDS, max(unload_after / 2, 0.1)))
            now = time.monotonic()
            for slot in self._slots.values():
                if slot.idle and now - slot.last_used >= unload_after:
                    await self._unload(slot, f"idle for {unload_after:g} s")

    async def close(self) -> None:
        """Stop the idle task, abandon loads in progress and stop every worker."""
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_task
        for slot in self._slots.values():
            if slot.loading is not None:
                slot.loading.cancel()
                with contextlib.suppress(BaseException):
                    await slot.loading
        await asyncio.gather(
            *(self._unload(slot, "server stopping") for slot in self._slots.values()),
            *self._background,
        )


def _retrieve_exception(task: asyncio.Task[ModelProcess]) -> None:
    """A load whose requests all left still fails quietly (its error was theirs to see)."""
    if not task.cancelled() and task.exception() is not None:
        _LOGGER.debug("Load without waiting requests failed: %s", task.exception())
