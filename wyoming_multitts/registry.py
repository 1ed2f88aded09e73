"""Loaded models: load on first use (once), share between voices, one request at a time per model,
evict the least recently used idle models to stay within a memory budget, unload idle ones.

Everything slow (downloads, loads, closes) runs in worker threads; the asyncio loop only does
bookkeeping, so `describe` is never stuck behind a model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Mapping

from .catalog import Catalog, ModelSpec, VoiceSpec
from .devices import resolve_device
from .engines import engine_module, uses_llama_cpp
from .engines.base import Engine, EngineError, ReferenceAudio
from .errors import VoiceError
from .hub import Hub

_LOGGER = logging.getLogger(__name__)

DEFAULT_MEMORY_SHARE = 0.75
"""Default memory budget: this share of the machine's RAM."""
IDLE_CHECK_SECONDS = 5.0
"""How often idle models are looked at when `--unload-after` is set (at most)."""


class ModelTooLargeError(EngineError):
    """A model does not fit the memory budget even with every other model unloaded."""


def machine_memory_bytes() -> int:
    """Physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@dataclass
class _Slot:
    """One catalog model: its loaded engine (if any) and who is using or waiting for it."""

    spec: ModelSpec
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by the one request using the model (asyncio locks are fair: arrival order)."""
    engine: Engine | None = None
    reserved_bytes: int = 0
    """Memory counted against the budget while loading or loaded."""
    holders: int = 0
    """Requests using or waiting for this model; such a model is never evicted."""
    last_used: float = 0.0


@dataclass(frozen=True)
class RegistrySettings:
    """How the registry loads and keeps models."""

    hub: Hub
    threads: int
    device_override: str | None = None
    """`--device`: used instead of every model's catalog device."""
    max_loaded_bytes: int = 0
    """Budget for all loaded models (0: `DEFAULT_MEMORY_SHARE` of RAM)."""
    unload_after: float | None = None
    """Unload a model idle this many seconds (None: keep loaded)."""


class ModelRegistry:
    """Owns every loaded model of a catalog."""

    def __init__(self, catalog: Catalog, settings: RegistrySettings) -> None:
        self._settings = settings
        self._budget = settings.max_loaded_bytes or int(
            machine_memory_bytes() * DEFAULT_MEMORY_SHARE
        )
        self._slots = {name: _Slot(spec) for name, spec in catalog.models.items()}
        self._idle_task: asyncio.Task[None] | None = None

    @property
    def budget_bytes(self) -> int:
        """Memory all loaded models may take together."""
        return self._budget

    def loaded_models(self) -> dict[str, int]:
        """Models loaded now, with the memory each is counted for (bytes)."""
        return {
            name: slot.reserved_bytes
            for name, slot in self._slots.items()
            if slot.engine is not None
        }

    @contextlib.asynccontextmanager
    async def acquire(self, model: str, voice: str) -> AsyncIterator[Engine]:
        """Wait for the model's turn, load it if needed, and hold it for one request."""
        slot = self._slots[model]
        slot.holders += 1
        try:
            async with slot.turn:
                if slot.engine is None:
                    slot.engine = await self._load(slot, voice)
                yield slot.engine
        finally:
            slot.holders -= 1
            slot.last_used = time.monotonic()

    async def reference_audio(self, voice: VoiceSpec) -> ReferenceAudio | None:
        """The voice's reference recording as a local file (fetched from the hub if need be;
        a local path is not checked here: the engine names it if it cannot read it)."""
        ref = voice.reference
        if ref is None:
            return None
        if ref.audio.path is not None:
            return ReferenceAudio(ref.audio.path, ref.text)
        where = f"voice {voice.name} (reference audio)"
        path = await asyncio.to_thread(self._settings.hub.fetch_file, ref.audio, where)
        return ReferenceAudio(path, ref.text)

    async def _load(self, slot: _Slot, voice: str) -> Engine:
        spec = slot.spec
        where = f"voice {voice} (model {spec.name})"
        loaded = False
        try:
            module = await asyncio.to_thread(engine_module, spec.engine)
            paths = await asyncio.to_thread(self._fetch, spec, module.FILES, where)
            needed = await asyncio.to_thread(module.estimate_bytes, spec, paths, where)
            await self._make_room(slot, needed, where)
            slot.reserved_bytes = needed
            device_name = self._settings.device_override or spec.device
            started = time.monotonic()
            device = await asyncio.to_thread(
                resolve_device, device_name, where, uses_llama_cpp(spec.engine)
            )
            engine = await asyncio.to_thread(
                module.load, spec, paths, device, self._settings.threads, where
            )
            loaded = True
        except VoiceError:
            raise
        except Exception as err:  # a library failed in a way we did not foresee: keep the cause
            raise EngineError(f"{where}: failed to load: {type(err).__name__}: {err}") from err
        finally:
            if not loaded:
                slot.reserved_bytes = 0
        _LOGGER.info(
            "Loaded model %s (%s) on %s in %.1f s, ~%.0f MB",
            spec.name,
            spec.engine,
            device.name,
            time.monotonic() - started,
            needed / 1e6,
        )
        return engine

    def _fetch(
        self, spec: ModelSpec, roles: Mapping[str, tuple[str, ...] | None], where: str
    ) -> dict[str, Path]:
        hub = self._settings.hub
        paths: dict[str, Path] = {}
        for role, folder_files in roles.items():
            if role not in spec.files:
                raise EngineError(
                    f"{where}: {spec.source} has no files.{role} for this model; "
                    f"engine {spec.engine} needs files: {', '.join(roles)}"
                )
            ref = spec.files[role]
            paths[role] = (
                hub.fetch_file(ref, where)
                if folder_files is None
                else hub.fetch_folder(ref, folder_files, where)
            )
        return paths

    async def _make_room(self, loading: _Slot, needed: int, where: str) -> None:
        """Unload least recently used idle models until `needed` more bytes fit the budget."""
        if needed > self._budget:
            raise ModelTooLargeError(
                f"{where}: the model needs ~{needed / 1e9:.1f} GB but the "
                f"memory budget is {self._budget / 1e9:.1f} GB; raise --max-loaded-bytes"
            )
        idle = sorted(
            (s for s in self._slots.values() if s.engine is not None and s.holders == 0),
            key=lambda s: s.last_used,
        )
        for slot in idle:
            if self._reserved() + needed <= self._budget:
                break
            await self._unload(slot, "to make room for " + loading.spec.name)
        if self._reserved() + needed > self._budget:
            raise ModelTooLargeError(
                f"{where}: the model needs ~{needed / 1e6:.0f} MB; models "
                f"in use take {self._reserved() / 1e6:.0f} MB of the {self._budget / 1e6:.0f} MB "
                "budget; try again when they are idle, or raise --max-loaded-bytes"
            )

    def _reserved(self) -> int:
        return sum(slot.reserved_bytes for slot in self._slots.values())

    async def _unload(self, slot: _Slot, why: str) -> None:
        engine, slot.engine, slot.reserved_bytes = slot.engine, None, 0
        if engine is not None:
            _LOGGER.info("Unloading model %s (%s)", slot.spec.name, why)
            await asyncio.to_thread(engine.close)

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
                if slot.engine is not None and slot.holders == 0:
                    if now - slot.last_used >= unload_after:
                        await self._unload(slot, f"idle for {unload_after:g} s")

    async def close(self) -> None:
        """Stop the idle task and unload every model."""
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_task
        for slot in self._slots.values():
            await self._unload(slot, "server stopping")
