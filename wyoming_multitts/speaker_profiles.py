"""OuteTTS voices made from a recording: a catalog voice with `reference: {path, text}` on an
OuteTTS model gets a speaker profile made by `create-speaker` on its first request, then cached.

The profile is made in a process of its own (`python -m wyoming_multitts create-speaker`): its
Whisper and codec encoder (a few GB for Whisper turbo) are freed when it exits, a crash there
takes no model down, and the server's loop only waits on the process. The cache key covers
everything the profile depends on (the recording's bytes, its transcript and language, the
models), so editing any of them makes a new profile. Each catalog change removes the profiles no
voice needs any more (`prune`); a renamed voice takes its old name's profile over.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from .catalog import FileRef, ModelSpec, VoiceSpec
from .create_speaker import DEFAULT_ALIGNER, ERROR_PREFIX, format_ref
from .engines.base import ReferenceAudio
from .errors import LoadTimeoutError, ModelTooLargeError, SpeakerError, VoiceError
from .formats.safetensors import WEIGHTS
from .hub import Hub

_LOGGER = logging.getLogger(__name__)

PROFILE_FORMAT = "1"
"""Part of the cache key: raise it when `create-speaker` changes what it writes."""
KEY_CHARS = 16
"""Hex digits of the key in a profile's file name (`<voice>-<key>.json`)."""
PROFILE_NAME = re.compile(rf"(?P<voice>.+)-(?P<key>[0-9a-f]{{{KEY_CHARS}}})\.json")
"""A file this cache wrote; `prune` leaves any other file in the folder alone."""
LOG_TAIL_LINES = 20
"""Lines of the command's log kept to find that line."""
RUN_WORKING_BYTES = 1_500_000_000
"""A run's memory besides Whisper's weights: Python and torch, the codec's encoder, Whisper's
activations over 30 s of audio (with turbo's 3.2 GB of weights, about the 4.9 GB peak that
docs/process-model.md gives)."""
FLOAT32_PER_STORED = 2
"""Whisper's weights are read into float32 (`whisper.py`): twice the hub's fp16 files (an fp32
file is counted twice too: an estimate on the safe side)."""
FIRST_BACKOFF_SECONDS = 30.0
"""After a failed run, the same recording is not tried again for this long, then twice as long
after each further failure..."""
MAX_BACKOFF_SECONDS = 3600.0
"""...up to an hour."""


@dataclass
class SpeakerProfiles:
    """Profiles made from catalog voices' recordings, one `create-speaker` run per new key."""

    cache_dir: Path
    hub: Hub
    threads: int
    timeout: float
    """Seconds a run may take (`--load-timeout`)."""
    reserve: Callable[[int, str], contextlib.AbstractAsyncContextManager[None]]
    """Counts a run's memory against the registry's budget while it runs (`ModelRegistry`)."""
    _runs: dict[str, asyncio.Task[Path]] = field(default_factory=dict)
    _failures: dict[str, tuple[float, float, VoiceError]] = field(default_factory=dict)
    """By key: when the last run failed, how long to wait before the next, and its error."""
    _voices: set[str] = field(default_factory=set)
    """The voices made from recordings as the last `prune` saw them (`_found` moves a profile
    of a voice not among them, and copies one of a voice still there)."""
    _pruning: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One prune at a time, in the order of the catalog changes."""

    async def profile(
        self, voice: VoiceSpec, model: ModelSpec, ref: ReferenceAudio, device: str
    ) -> Path:
        """The profile of `voice` (made now if not cached): a JSON path for `speaker:`. A run
        belongs to the cache, not to the request: one that leaves meanwhile leaves it running,
        and requests for the same key wait for the same run."""
        if voice.speaker is not None:
            raise SpeakerError(
                f"voice {voice.name}: give either speaker: (a profile) or reference: "
                "(a recording to make one from), not both"
            )
        if not ref.text:
            raise SpeakerError(
                f"voice {voice.name}: reference: needs text: (what {ref.path.name} says, word "
                "for word) to make an OuteTTS speaker profile"
            )
        key = await asyncio.to_thread(self._key, voice, model, ref)
        out = self.cache_dir / f"{voice.name}-{key[:KEY_CHARS]}.json"
        async with self._pruning:  # after the last catalog change's prune, which `_found` follows
            if await asyncio.to_thread(self._found, out, key[:KEY_CHARS]):  # a stat can block
                return out
        if key in self._failures:
            failed_at, backoff, error = self._failures[key]
            wait = failed_at + backoff - time.monotonic()
            if wait > 0:
                raise type(error)(f"{error} (next try in {wait:.0f} s)")
        run = self._runs.get(key)
        if run is None:
            run = asyncio.create_task(
                self._make(voice, model, ref, device, out), name=f"profile {out}"
            )
            self._runs[key] = run
            run.add_done_callback(partial(self._ended, key))
        return await asyncio.shield(run)

    async def prune(self, voices: list[tuple[VoiceSpec, ModelSpec, ReferenceAudio | None]]) -> None:
        """Remove the profiles that no voice of the catalog in force needs: those of voices gone
        and those of a recording, transcript or model since changed. `voices`: every voice made
        from a recording, with its model and recording (None while not on disk yet: a hub-hosted
        one not fetched, whose files stay). A profile whose key a voice of another name needs
        stays for it (a renamed voice: `_found` takes it over)."""
        async with self._pruning:
            try:
                await asyncio.to_thread(self._prune, voices)
            except OSError as err:
                _LOGGER.warning("Old speaker profiles in %s stay: %s", self.cache_dir, err)

    def _prune(self, voices: list[tuple[VoiceSpec, ModelSpec, ReferenceAudio | None]]) -> None:
        wanted: dict[str, str | None] = {}
        for voice, model, ref in voices:
            wanted[voice.name] = None
            if ref is not None:
                with contextlib.suppress(SpeakerError):  # unreadable now: its files stay
                    wanted[voice.name] = self._key(voice, model, ref)[:KEY_CHARS]
        self._voices = set(wanted)
        keys = set(wanted.values())
        unknown = {name for name, key in wanted.items() if key is None}
        for path in self.cache_dir.glob("*.json"):
            named = _voice_and_key(path)
            if named is None or named[0] in unknown or named[1] in keys:
                continue
            path.unlink(missing_ok=True)
            _LOGGER.info("Removed speaker profile %s: no voice needs it any more", path)

    def _found(self, out: Path, key: str) -> bool:
        """Whether profile `out` (of file key `key`) is on disk, taken over if need be from a
        voice of another name with the same key (the profile depends on the recording, not on
        the voice's name): moved from a voice gone, copied from one still in the catalog."""
        if out.is_file():
            return True
        for other in self.cache_dir.glob(f"*-{key}.json"):
            voice = other.name.removesuffix(f"-{key}.json")
            copy = out.with_name(f".{out.name}.partial")
            try:
                if voice in self._voices:  # still in the catalog: it keeps its own
                    shutil.copyfile(other, copy)
                    os.replace(copy, out)
                else:
                    os.replace(other, out)
            except OSError:  # removed meanwhile: look further, else make it
                copy.unlink(missing_ok=True)
                continue
            _LOGGER.info("Speaker profile %s taken over from %s", out, other.name)
            return True
        return False

    def _ended(self, key: str, run: asyncio.Task[Path]) -> None:
        """Forget the run; after a failure, refuse the same key for a while (doubling each
        time): a run takes gigabytes and minutes, and a broken recording fails every time."""
        self._runs.pop(key, None)
        error = None if run.cancelled() else run.exception()
        if error is None:
            self._failures.pop(key, None)
        elif not isinstance(error, ModelTooLargeError):  # refused before running: no backoff
            backoff = self._failures[key][1] * 2 if key in self._failures else FIRST_BACKOFF_SECONDS
            failure = error if isinstance(error, VoiceError) else SpeakerError(str(error))
            self._failures[key] = (time.monotonic(), min(backoff, MAX_BACKOFF_SECONDS), failure)

    def _key(self, voice: VoiceSpec, model: ModelSpec, ref: ReferenceAudio) -> str:
        try:
            recording = ref.path.read_bytes()
        except OSError as err:
            raise SpeakerError(
                f"voice {voice.name}: cannot read its reference recording {ref.path} ({err}); "
                "fix reference: path: in the voice catalog"
            ) from err
        digest = hashlib.sha256(recording)
        parts = [PROFILE_FORMAT, ref.text or "", voice.languages[0]]
        parts += [_describe(model.files.get(role)) for role in ("vocoder", "aligner", "encoder")]
        for part in parts:
            digest.update(b"\0" + part.encode("utf-8"))
        return digest.hexdigest()

    async def _make(
        self, voice: VoiceSpec, model: ModelSpec, ref: ReferenceAudio, device: str, out: Path
    ) -> Path:
        vocoder = await asyncio.to_thread(self.hub.fetch_file, model.files["vocoder"])
        command = [
            *(sys.executable, "-m", "wyoming_multitts", "create-speaker", str(ref.path)),
            *("--text", ref.text or "", "--language", voice.languages[0]),
            *("--vocoder", str(vocoder), "--out", str(out)),
            *("--device", device, "--threads", str(self.threads)),
        ]
        for role, flag in (("aligner", "--aligner"), ("encoder", "--codec")):
            if role in model.files:
                command += [flag, format_ref(model.files[role])]
        if self.hub.cache_dir is not None:
            command += ["--download-dir", str(self.hub.cache_dir)]
        if self.hub.offline:
            command.append("--offline")
        aligner = model.files.get("aligner") or FileRef(repo=DEFAULT_ALIGNER)
        needed = (
            RUN_WORKING_BYTES
            + FLOAT32_PER_STORED
            * (await asyncio.to_thread(self.hub.sizes, aligner, (WEIGHTS,))).total
        )
        where = f"voice {voice.name} (its speaker profile, aligner {aligner.describe()})"
        async with self.reserve(needed, where):
            return await self._run(voice, ref, command, out)

    async def _run(
        self, voice: VoiceSpec, ref: ReferenceAudio, command: list[str], out: Path
    ) -> Path:
        _LOGGER.info("voice %s: making its speaker profile from %s", voice.name, ref.path)
        process = await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.PIPE)
        try:
            last_lines = await asyncio.wait_for(_relay_log(process), self.timeout)
        except asyncio.TimeoutError:
            raise LoadTimeoutError(
                f"voice {voice.name}: making its speaker profile from {ref.path} took over "
                f"{self.timeout:g} s; raise --load-timeout or name a smaller aligner "
                "(files: aligner: {repo: openai/whisper-small})"
            ) from None
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
        if process.returncode != 0 or not out.is_file():
            errors = [line for line in last_lines if line.startswith(ERROR_PREFIX)]
            reason = (errors or last_lines or [f"exit status {process.returncode}"])[-1]
            raise SpeakerError(
                f"voice {voice.name}: no speaker profile from {ref.path}: "
                + reason.removeprefix(ERROR_PREFIX)
            )
        _LOGGER.info("voice %s: speaker profile %s", voice.name, out)
        return out


def _voice_and_key(path: Path) -> tuple[str, str] | None:
    """The voice and key part of a profile's file name; None for a file this cache did not write."""
    named = PROFILE_NAME.fullmatch(path.name)
    return None if named is None else (named["voice"], named["key"])


def _describe(ref: FileRef | None) -> str:
    """A model file's identity for the cache key (a local file: its path and size and time)."""
    if ref is None:
        return ""
    if ref.path is not None and ref.path.exists():
        stat = ref.path.stat()
        return f"{ref.path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    return f"{ref.describe()}@{ref.revision or ''}"


async def _relay_log(process: asyncio.subprocess.Process) -> list[str]:
    """Log the command's stderr as it comes (downloads take a while); its last lines."""
    assert process.stderr is not None
    tail: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
    async for raw in process.stderr:
        line = raw.decode("utf-8", "replace").rstrip()
        _LOGGER.info("create-speaker: %s", line)
        tail.append(line)
    await process.wait()
    return list(tail)
