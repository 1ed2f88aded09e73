"""A model's worker process: `python -m wyoming_multitts.worker LEVEL FORMAT`.

It holds one model and nothing else. Whatever happens inside it (a llama.cpp abort, a segfault,
an out-of-memory kill) ends this process only; the server turns that into an `error` for the
requests on this model and starts a fresh worker for the next one (docs/process-model.md).

Two threads: the main thread loads the model and runs one request at a time; a reader thread
takes the server's messages as they come, so a `Cancel` or `Taken` reaches a running request
within one token or frame. The messages and their order are described in `channel.py`.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np

from . import channel
from .devices import resolve_device
from .engines import engine_module, uses_llama_cpp
from .engines.base import Engine, EngineModule
from .errors import EngineError, InternalError, ModelTooLargeError, VoiceError, context
from .formats import report_conversions
from .stats import PieceStats

_LOGGER = logging.getLogger(__name__)

EXIT_GRACE_SECONDS = 5.0
"""After the server is gone, how long the main thread may take to stop before the process exits
anyway (a load in progress cannot be interrupted)."""
TEST_RATE = float(os.environ.get("WYOMING_MULTITTS_TEST_RATE", "0"))
"""For tests of what the server does with a slow model: when set, every model's audio comes no
faster than this many seconds of audio per second (0: as fast as the engine makes it)."""
SEE_THE_LOG = "the server log has the details"
"""Where an unforeseen failure's text goes instead of the client."""
ROOM_WAIT_SECONDS = 0.1
"""How often a request that is `max_ahead` samples ahead looks at its cancel flag."""


class _Current:
    """The request the main thread runs now, as the reader thread sees it."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self.request_id: int | None = None
        self.cancel = threading.Event()
        self._sent = 0
        self._taken = 0

    def begin(self, request_id: int) -> None:
        """Mark `request_id` as running; the server must never send a second one meanwhile."""
        with self._lock:
            if self.request_id is not None:
                _LOGGER.critical(
                    "request %d arrived while request %d still runs in this model: "
                    "two requests overlap inside one engine (a bug in the server)",
                    request_id,
                    self.request_id,
                )
                os.abort()
            self.request_id, self._sent, self._taken = request_id, 0, 0
            self.cancel = threading.Event()

    def end(self) -> None:
        """The running request has stopped inside the engine."""
        with self._lock:
            self.request_id = None

    def cancel_if(self, request_id: int) -> None:
        with self._lock:
            if self.request_id == request_id:
                self.cancel.set()
                self._lock.notify_all()

    def taken(self, request_id: int, samples: int) -> None:
        with self._lock:
            if self.request_id == request_id:
                self._taken += samples
                self._lock.notify_all()

    def wait_for_room(self, samples: int, max_ahead: int) -> None:
        """Block while the client is more than `max_ahead` samples behind (backpressure)."""
        with self._lock:
            while self._sent - self._taken > max_ahead and not self.cancel.is_set():
                self._lock.wait(ROOM_WAIT_SECONDS)
            self._sent += samples

    def cancel_all(self) -> None:
        with self._lock:
            self.cancel.set()
            self._lock.notify_all()


class Worker:
    """The main thread's side: load, then serve requests until the server closes stdin."""

    def __init__(self, commands: BinaryIO, replies: BinaryIO) -> None:
        self._replies = replies
        self._commands = commands
        self._inbox: queue.Queue[object | None] = queue.Queue()
        self._stats_file: Path | None = None
        self._current = _Current()

    def send(self, message: object) -> None:
        self._replies.write(channel.encode(message))
        self._replies.flush()

    def read_commands(self) -> None:
        """Reader thread: route cancels and acknowledgements at once, queue the rest."""
        try:
            while (message := channel.read_blocking(self._commands)) is not None:
                if isinstance(message, channel.Cancel):
                    self._current.cancel_if(message.request_id)
                elif isinstance(message, channel.Taken):
                    self._current.taken(message.request_id, message.samples)
                else:
                    if isinstance(message, channel.Speak):
                        self._current.begin(message.request_id)
                    self._inbox.put(message)
        finally:  # the server closed our stdin or died: stop what runs, then leave
            self._current.cancel_all()
            self._inbox.put(None)
            exit_timer = threading.Timer(EXIT_GRACE_SECONDS, os._exit, (0,))
            exit_timer.daemon = True
            exit_timer.start()

    def run(self) -> None:
        """Load the model, then run requests one at a time."""
        load = self._inbox.get()
        if not isinstance(load, channel.Load):
            return
        try:
            with context(load.where):
                engine = self._load(load)
        except VoiceError as err:
            self.send(channel.Failed(None, err.code, str(err)))
            return
        except Exception as err:  # a library failed in a way we did not foresee: keep the cause
            _LOGGER.exception("%s: failed to load", load.where)
            message = f"{load.where}: failed to load ({type(err).__name__}); {SEE_THE_LOG}"
            self.send(channel.Failed(None, InternalError.code, message))
            return
        if engine is None:
            return
        while isinstance(speak := self._inbox.get(), channel.Speak):
            self._speak(engine, speak)

    def _load(self, load: channel.Load) -> Engine | None:
        spec = load.model
        self._stats_file = load.stats_file
        module = engine_module(spec.engine)
        paths = fetch_files(load, module)
        self.send(channel.Estimated(module.estimate_bytes(spec, paths)))
        if not isinstance(self._inbox.get(), channel.Proceed):
            return None
        device = resolve_device(load.device, uses_llama_cpp(spec.engine))
        engine = module.load(spec, paths, device, load.threads)
        self.send(
            channel.Loaded(engine.sample_rate, engine.max_text_chars, device.name, gpu_bytes())
        )
        return engine

    def _engine_audio(
        self, engine: Engine, speak: channel.Speak, cancel: threading.Event
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Every audio piece of every text piece, with the text piece's index, stopping at
        `cancel`; each text piece's figures go to the log and to `--stats-file`."""
        for index, piece in enumerate(speak.pieces):
            stats = PieceStats(speak.voice.name)
            for audio in engine.synthesize(piece, speak.voice, cancel, stats):
                yield index, audio
            if cancel.is_set():
                return
            _LOGGER.info("%s", stats.log_line())
            if self._stats_file is not None:
                with self._stats_file.open("a", encoding="utf-8") as out:
                    out.write(stats.to_json() + "\n")

    def _speak(self, engine: Engine, speak: channel.Speak) -> None:
        cancel = self._current.cancel
        voice = speak.voice
        started, made = time.monotonic(), 0
        try:
            with context(f"voice {voice.name}"):
                for piece, audio in self._engine_audio(engine, speak, cancel):
                    made += audio.size
                    if TEST_RATE:  # a slow engine, for tests: audio no faster than TEST_RATE
                        time.sleep(
                            max(
                                0.0,
                                started + made / engine.sample_rate / TEST_RATE - time.monotonic(),
                            )
                        )
                    self._current.wait_for_room(audio.size, speak.max_ahead_samples)
                    if cancel.is_set():
                        break
                    self.send(channel.Audio(speak.request_id, audio, piece))
            reply: object = channel.Finished(speak.request_id, cancel.is_set(), gpu_bytes())
        except VoiceError as err:
            reply = channel.Failed(speak.request_id, err.code, str(err))
        except Exception as err:  # a bug or a library failure: tell the client, keep the model
            _LOGGER.exception("voice %s: synthesis failed", voice.name)
            message = f"voice {voice.name}: internal error ({type(err).__name__}); {SEE_THE_LOG}"
            reply = channel.Failed(speak.request_id, InternalError.code, message)
        self._current.end()
        self.send(reply)


def fetch_files(load: channel.Load, module: EngineModule) -> dict[str, Path]:
    """Local paths of the model's files by role, downloading what is missing. Before anything
    is downloaded, the files' sizes (one listing of each repo) must show that the model can fit
    the memory budget and that its downloads and conversions leave the disk its reserve."""
    spec = load.model
    hub = load.hub
    if not spec.download:
        hub = replace(hub, offline=True, offline_because="the catalog says download: false")
    roles = module.FILES
    missing = [role for role in roles if role not in spec.files]
    if missing:
        raise EngineError(
            f"{spec.source} has no files.{missing[0]} for this model; "
            f"engine {spec.engine} needs files: {', '.join(roles)}"
        )
    sizes = {role: hub.sizes(spec.files[role], names) for role, names in roles.items()}
    planned = module.planned_bytes(spec, {role: size.total for role, size in sizes.items()})
    if planned.memory > load.memory_budget:
        raise ModelTooLargeError(
            f"the model needs over {planned.memory / 1e9:.1f} GB but the memory budget is "
            f"{load.memory_budget / 1e9:.1f} GB; raise --max-loaded-bytes, or pick a smaller "
            "model or matrix type"
        )
    to_download = sum(size.missing for size in sizes.values())
    if to_download:  # what is cached converted before; a fresh download converts anew
        repos = sorted(
            {spec.files[role].describe() for role, size in sizes.items() if size.missing}
        )
        hub.check_room(to_download + planned.converted, ", ".join(repos))
    return {
        role: (
            hub.fetch_file(spec.files[role])
            if names is None
            else hub.fetch_folder(spec.files[role], names)
        )
        for role, names in roles.items()
    }


def gpu_bytes() -> int:
    """GPU memory this process holds, as far as torch reports it (llama.cpp reports none)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return 0
    return int(torch.cuda.memory_reserved())


def main() -> None:
    """Entry point: keep a private copy of stdout for replies and point stdout at stderr."""
    level, log_format = sys.argv[1], sys.argv[2]
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=level, format=log_format)
    if level != "DEBUG":
        logging.getLogger("llama.cpp").setLevel(logging.WARNING)
    worker = Worker(sys.stdin.buffer, replies)
    report_conversions(lambda running: worker.send(channel.Conversion(running)))
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    threading.Thread(target=worker.read_commands, name="commands", daemon=True).start()
    try:
        worker.run()
    finally:
        logging.shutdown()
        os._exit(0)  # skip interpreter teardown: native libraries' destructors have nothing to save


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """Unwind the main thread (the server stops this worker): a download in progress closes its
    file and releases its lock, so the server can delete what it left."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
