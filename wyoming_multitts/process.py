"""The server's handle on one model's worker process (`worker.py`): start it, load the model,
stream one request's audio at a time, cancel, measure its memory, stop or kill it.

Everything here is asyncio and never blocks the loop: the worker's replies arrive on a pipe read
by a task; a worker that dies (abort, segfault, SIGKILL, OOM kill) ends that pipe, and whoever
waits for it gets a `WorkerDiedError` naming the cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
from typing import AsyncIterator, Awaitable, Callable, TypeVar

from . import channel
from .engines.base import VoiceSettings
from .errors import (
    EngineError,
    LoadTimeoutError,
    RefusedInstructionError,
    VoiceError,
    WorkerDiedError,
    code_error,
)

_LOGGER = logging.getLogger(__name__)

STOP_SECONDS = 5.0
"""How long a worker asked to exit may take before it is killed."""
TERM_SECONDS = 1.0
"""How long a worker sent SIGTERM may take to exit before it gets SIGKILL."""
CANCEL_SECONDS = 10.0
"""How long a cancelled request may take to stop inside the worker before the worker is killed
(engines stop within one token or frame; this is for a worker stuck in native code)."""
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
REFUSED_INSTRUCTION = (
    "an instruction this CPU or virtual machine refuses: llama-cpp-python (or torch) was built "
    "for another CPU; rebuild it on this machine with script/setup, or rebuild the image "
    "(docs/cpus.md)"
)
"""What SIGILL means for a worker, and what to do."""

_request_ids = itertools.count(1)
_Reply = TypeVar("_Reply")


class _Dead:
    """Queued when the worker's pipe ends: everything waiting on the worker gets the cause."""


_DEAD = _Dead()


def describe_exit(returncode: int | None) -> str:
    """How a process ended, in words a user can act on."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hints = {
            "SIGABRT": "an abort inside llama.cpp/ggml or torch, e.g. a failed assertion on a bad "
            "model file or a GPU out of memory",
            "SIGKILL": "killed, e.g. by the kernel when memory ran out",
            "SIGSEGV": "a crash in native code",
            "SIGILL": REFUSED_INSTRUCTION,
        }
        return f"{name}: {hints[name]}" if name in hints else name
    return f"exit status {returncode}"


class ModelProcess:
    """One worker process and the model it holds."""

    def __init__(self, process: asyncio.subprocess.Process, model: str) -> None:
        self._process = process
        self.model = model
        self.pid = process.pid
        self._replies: asyncio.Queue[object] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read_replies(), name=f"worker {model} replies")
        self.loaded: channel.Loaded | None = None
        self.gpu_bytes = 0

    @classmethod
    async def start(cls, model: str, log_level: str, log_format: str) -> "ModelProcess":
        """Start a worker (it imports nothing heavy until it is told what to load)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "wyoming_multitts.worker",
            log_level,
            log_format,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,  # Ctrl-C and SIGTERM reach the server, which stops workers
        )
        _LOGGER.debug("Started worker %d for model %s", process.pid, model)
        return cls(process, model)

    # ---- state

    @property
    def alive(self) -> bool:
        """Whether the worker still runs (its reply pipe is open)."""
        return not self._reader.done()

    def exit_cause(self) -> str:
        """How the worker ended (for error messages)."""
        return describe_exit(self._process.returncode)

    def resident_bytes(self) -> int:
        """The worker's resident memory now (0 where /proc is missing)."""
        try:
            with open(f"/proc/{self.pid}/statm", encoding="ascii") as statm:
                return int(statm.read().split()[1]) * PAGE_BYTES
        except (OSError, ValueError, IndexError):
            return 0

    # ---- load

    async def load(
        self, load: channel.Load, make_room: Callable[[int], Awaitable[None]], timeout: float
    ) -> channel.Loaded:
        """Fetch files and estimate (no time limit: downloads), let the registry make room for
        the estimate plus the worker's own memory, then load within `timeout` seconds or kill
        the worker."""
        self.send(load)
        estimated = await self._reply(channel.Estimated, load.where)
        baseline = self.resident_bytes()  # Python, numpy and the engine's libraries, no model
        _LOGGER.info(
            "Worker %d for %s: %.0f MB resident before loading, model estimated at %.0f MB",
            self.pid,
            self.model,
            baseline / 1e6,
            estimated.bytes / 1e6,
        )
        await make_room(baseline + estimated.bytes)
        self.send(channel.Proceed())
        loaded = await self._loaded_within(load.where, timeout)
        self.loaded, self.gpu_bytes = loaded, loaded.gpu_bytes
        return loaded

    async def _loaded_within(self, where: str, timeout: float) -> channel.Loaded:
        """The worker's `Loaded`, its load's own work limited to `timeout` seconds (else it is
        killed): a conversion of the model's files, which only a first load makes and which
        takes minutes on a slow board, stops the clock; it starts again when that ends."""
        while True:
            try:
                reply = await asyncio.wait_for(self.next_reply(where), timeout)
            except asyncio.TimeoutError:
                await self.kill()
                raise LoadTimeoutError(
                    f"{where}: loading took longer than {timeout:g} s, so it was stopped; "
                    "raise --load-timeout if this model needs longer on this machine"
                ) from None
            if not (isinstance(reply, channel.Conversion) and reply.running):
                return _expected(reply, channel.Loaded, where)
            _LOGGER.info(
                "Worker %d for %s converts its model's files (once; not counted in "
                "--load-timeout)",
                self.pid,
                self.model,
            )
            await self._reply(channel.Conversion, where)

    # ---- requests

    @contextlib.asynccontextmanager
    async def speak(
        self, pieces: tuple[str, ...], voice: VoiceSettings, max_ahead_samples: int
    ) -> AsyncIterator["SpeechStream"]:
        """Run one request; leaving the block early cancels it and waits until it has stopped
        inside the worker (or kills a worker that does not stop), even when this task is
        cancelled meanwhile, so the next request never overlaps it."""
        request_id = next(_request_ids)
        self.send(channel.Speak(request_id, pieces, voice, max_ahead_samples))
        stream = SpeechStream(self, request_id, voice.name)
        try:
            yield stream
        finally:
            if not stream.ended:
                await finish_even_if_cancelled(self._cancel(stream))

    async def _cancel(self, stream: "SpeechStream") -> None:
        self.send(channel.Cancel(stream.request_id))
        try:
            await asyncio.wait_for(stream.drain(), CANCEL_SECONDS)
        except asyncio.TimeoutError:
            _LOGGER.warning(
                "Worker %d for %s did not stop within %g s of a cancel; killing it",
                self.pid,
                self.model,
                CANCEL_SECONDS,
            )
            await self.kill()

    # ---- the pipe

    def send(self, message: object) -> None:
        """Queue a message to the worker (never waits: the worker reads its stdin at once)."""
        stdin = self._process.stdin
        if stdin is not None and self.alive and not stdin.is_closing():
            stdin.write(channel.encode(message))

    async def _reply(self, kind: type[_Reply], where: str) -> _Reply:
        """The next reply, which must be of `kind`; raises the worker's failure or death."""
        return _expected(await self.next_reply(where), kind, where)

    async def next_reply(self, where: str) -> object:
        """The next message from the worker; `WorkerDiedError` once it is gone."""
        reply = await self._replies.get()
        if reply is _DEAD:
            self._replies.put_nowait(_DEAD)  # everyone after us learns it too
            if self._process.returncode == -signal.SIGILL:  # dies again on every start
                raise RefusedInstructionError(
                    f"{where}: the model's worker died of SIGILL, {REFUSED_INSTRUCTION}"
                )
            raise WorkerDiedError(
                f"{where}: the model's worker process died ({self.exit_cause()}); see the "
                "server log for what it printed. The next request starts it again"
            )
        return reply

    async def _read_replies(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while True:
                header = await stdout.readexactly(channel.LENGTH.size)
                body = await stdout.readexactly(channel.frame_length(header))
                self._replies.put_nowait(channel.decode(body))
        except (asyncio.IncompleteReadError, ValueError, EOFError) as err:
            if not isinstance(err, asyncio.IncompleteReadError):
                _LOGGER.error("Worker %d for %s sent a broken reply: %s", self.pid, self.model, err)
                self._process.kill()
        finally:
            await self._process.wait()
            if self._process.returncode == -signal.SIGILL:
                _LOGGER.error(
                    "Worker %d for %s died of SIGILL, %s", self.pid, self.model, REFUSED_INSTRUCTION
                )
            self._replies.put_nowait(_DEAD)

    # ---- ending

    async def stop(self) -> None:
        """Ask the worker to exit (close its stdin); kill it if it takes too long."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), STOP_SECONDS)
        except asyncio.TimeoutError:
            await self.kill()

    async def kill(self) -> None:
        """End the worker now (all its memory, CPU or GPU, is freed with it): SIGTERM, which
        lets a download in progress close its file and lock, then SIGKILL after
        `TERM_SECONDS` for a worker stuck in native code."""
        with contextlib.suppress(ProcessLookupError):
            self._process.terminate()
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), TERM_SECONDS)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await asyncio.shield(self._reader)


class SpeechStream:
    """One request's audio as it arrives from the worker."""

    def __init__(self, worker: ModelProcess, request_id: int, voice: str) -> None:
        self._worker = worker
        self.request_id = request_id
        self._where = f"voice {voice} (model {worker.model})"
        self.ended = False

    def __aiter__(self) -> "SpeechStream":
        return self

    async def __anext__(self) -> channel.Audio:
        """The next float32 audio piece (and the text piece it is of); raises the worker's
        failure or death."""
        if self.ended:
            raise StopAsyncIteration
        try:
            reply = await self._worker.next_reply(self._where)
        except WorkerDiedError:
            self.ended = True
            raise
        if isinstance(reply, channel.Audio) and reply.request_id == self.request_id:
            return reply
        self.ended = isinstance(reply, (channel.Finished, channel.Failed))
        if isinstance(reply, channel.Finished):
            self._worker.gpu_bytes = reply.gpu_bytes
            raise StopAsyncIteration
        if isinstance(reply, channel.Failed):
            raise _failure(reply)
        raise EngineError(f"{self._where}: the worker sent an unexpected {type(reply).__name__}")

    def taken(self, samples: int) -> None:
        """The client has taken `samples` more samples: the worker may run that much further."""
        self._worker.send(channel.Taken(self.request_id, samples))

    async def drain(self) -> None:
        """Discard audio until the request has stopped inside the worker."""
        with contextlib.suppress(VoiceError):
            async for _ in self:
                pass


def _expected(reply: object, kind: type[_Reply], where: str) -> _Reply:
    """`reply` when it is of `kind`; raises the worker's failure, or says what came instead."""
    if isinstance(reply, channel.Failed):
        raise _failure(reply)
    if not isinstance(reply, kind):
        raise EngineError(f"{where}: the worker sent {type(reply).__name__} for {kind.__name__}")
    return reply


def _failure(reply: channel.Failed) -> VoiceError:
    """The error the worker reported, as the class of its code."""
    return code_error(reply.code, reply.message)


async def finish_even_if_cancelled(work: Awaitable[None]) -> None:
    """Run `work` to its end even if this task is cancelled meanwhile (then re-raise)."""
    cancelled = False
    future = asyncio.ensure_future(work)
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    future.result()
    if cancelled:
        raise asyncio.CancelledError
