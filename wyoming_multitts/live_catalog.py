"""The catalog in force while the server runs: the user's `voices.yaml` merged with their own
voices (`own_voices.py`), taken again whenever either file changes, from the web page's edits or
on disk, without a restart.

Home Assistant 2026.11 asks `describe` every 30 s and rebuilds its voice list when the answer
changes, so a voice added here shows in its voice picker within half a minute. A change with a
mistake in it is refused (logged with the file and key) and the last good catalog stays in
force: a typo saved in an editor never takes the voices away. Files are read in a thread; the
loop only swaps the finished `Catalog` in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from functools import partial
from pathlib import Path
from typing import Callable

from . import own_voices
from .catalog import Catalog, CatalogError, VoiceSpec, load_catalog, merge_own_voices, read_yaml

_LOGGER = logging.getLogger(__name__)

POLL_SECONDS = 2.0
"""How often both catalog files are looked at (inode, size, modification time): a stat each,
cheaper than a file-watching dependency and the same on every file system (a Home Assistant
add-on's /share included)."""

Stamp = tuple[tuple[int, int, int] | None, ...]
"""Per watched file: (inode, size, modification time in ns), or None when it is missing. An
editor that saves by renaming a new file over the old changes the inode."""


def _as_is(catalog: Catalog) -> Catalog:
    return catalog


class LiveCatalog:
    """The catalog in force (`current`), its changes counted (`version`) and told to listeners,
    and the user's own voices added, renamed and deleted (docs/architecture.md)."""

    def __init__(
        self,
        voices: Path,
        own_dir: Path | None,
        arrange: Callable[[Catalog], Catalog] = _as_is,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.voices = voices
        """The user's catalog file (never written)."""
        self.own_dir = own_dir
        """The folder of the user's own voices (None: none are kept)."""
        self._arrange = arrange
        """Puts the default voice first (`--voice`, or `cpu_voice` without a GPU)."""
        self._poll_seconds = poll_seconds
        self._main: Catalog | None = None
        """The user's catalog alone, as last read well (own voices are checked against it)."""
        self._current: Catalog | None = None
        self._stamp: Stamp = ()
        self.version = 0
        """Counts the changes taken (0: not loaded yet)."""
        self._listeners: list[Callable[[Catalog], None]] = []
        self._changed = asyncio.Event()
        self._reading = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    @property
    def current(self) -> Catalog:
        """The catalog in force: a request takes it once and keeps it."""
        if self._current is None:
            raise RuntimeError("LiveCatalog.load() has not been called")
        return self._current

    @property
    def own_file(self) -> Path | None:
        """The own voices' catalog file (it may not exist yet)."""
        return None if self.own_dir is None else own_voices.catalog_file(self.own_dir)

    def subscribe(self, listener: Callable[[Catalog], None]) -> None:
        """Call `listener(catalog)` on the loop after each change is taken (the registry's
        `update`): before anything else runs, so nothing sees the new catalog without it."""
        self._listeners.append(listener)

    def load(self) -> Catalog:
        """Read the catalog at start (blocking); `CatalogError` when the user's file is wrong.
        A wrong own voices file is logged and left out: the user's voices still serve."""
        stamp = self._stamps()
        main = load_catalog(self.voices)
        try:
            catalog = self._arrange(self._merged(main))
        except CatalogError as err:
            _LOGGER.error("Leaving your own voices out: %s", err)
            catalog = self._arrange(main)
        self._take(main, catalog, stamp)
        return catalog

    async def changed(self, version: int) -> Catalog:
        """The catalog once `version` is past (at once if it already is)."""
        while self.version <= version:
            changed = self._changed
            await changed.wait()
        return self.current

    async def reload(self) -> bool:
        """Read both files again now and take the catalog they make; False when it has a
        mistake (logged with the file and key), the last good catalog staying in force."""
        async with self._reading:
            stamp = await asyncio.to_thread(self._stamps)
            try:
                main = await asyncio.to_thread(load_catalog, self.voices)
                catalog = self._arrange(await asyncio.to_thread(self._merged, main))
            except CatalogError as err:
                self._stamp = stamp  # refused once, not again every poll
                _LOGGER.error("Catalog change refused, the last good catalog stays: %s", err)
                return False
            if catalog != self._current:
                self._take(main, catalog, stamp)
                _LOGGER.info(
                    "Catalog changed: %d voices of %d models (version %d)",
                    len(catalog.voices),
                    len(catalog.models),
                    self.version,
                )
            self._stamp = stamp
            return True

    def start(self) -> None:
        """Look at both files every `poll_seconds` and take what changed."""
        self._task = asyncio.create_task(self._watch(), name="catalog watch")

    async def close(self) -> None:
        """Stop looking at the files."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def add_own_voice(
        self,
        name: str,
        model: str,
        wav: bytes,
        transcript: str | None,
        language: str,
        description: str | None = None,
    ) -> VoiceSpec:
        """Add an own voice made from the recording `wav` (`own_voices.add_voice`); the voice
        as it is now in force (its name is `own_voices.safe_name(name)`)."""
        edit = partial(
            own_voices.add_voice,
            self._own_folder(name),
            self._main_catalog(),
            name,
            model,
            wav,
            transcript,
            language,
            description,
        )
        return await self._edited(edit)

    async def rename_own_voice(self, old: str, new: str) -> VoiceSpec:
        """Rename own voice `old` (`own_voices.rename_voice`); the voice as renamed."""
        edit = partial(
            own_voices.rename_voice, self._own_folder(old), self._main_catalog(), old, new
        )
        return await self._edited(edit)

    async def delete_own_voice(self, name: str) -> None:
        """Delete own voice `name` and its recording (`own_voices.delete_voice`)."""
        edit = partial(own_voices.delete_voice, self._own_folder(name), self._main_catalog(), name)
        await asyncio.to_thread(edit)
        await self.reload()

    async def _edited(self, edit: Callable[[], VoiceSpec]) -> VoiceSpec:
        """Run `edit` in a thread, then take the catalog it made."""
        voice = await asyncio.to_thread(edit)
        await self.reload()
        return self.current.voices.get(voice.name, voice)

    def _own_folder(self, voice: str) -> Path:
        if self.own_dir is None:
            raise own_voices.OwnVoiceError(
                f"voice {voice[:60]}: this server keeps no own voices; start it with --data-dir"
            )
        return self.own_dir

    def _main_catalog(self) -> Catalog:
        if self._main is None:
            raise RuntimeError("LiveCatalog.load() has not been called")
        return self._main

    def _merged(self, main: Catalog) -> Catalog:
        """`main` with the own voices file's voices (blocking)."""
        own = self.own_file
        if own is None:
            return main
        return merge_own_voices(main, read_yaml(own) if own.exists() else None, own)

    def _take(self, main: Catalog, catalog: Catalog, stamp: Stamp) -> None:
        self._main, self._current, self._stamp = main, catalog, stamp
        self.version += 1
        for listener in self._listeners:
            listener(catalog)
        self._changed.set()
        self._changed = asyncio.Event()

    def _stamps(self) -> Stamp:
        return tuple(_stamp(path) for path in (self.voices, self.own_file) if path is not None)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._poll_seconds)
            try:
                if await asyncio.to_thread(self._stamps) != self._stamp:
                    await self.reload()
            except Exception:  # a bug here must not end the watching
                _LOGGER.exception("Looking at the catalog files failed")


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)
