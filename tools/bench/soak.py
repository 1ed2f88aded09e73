"""Soak test: the server under mixed and misbehaving clients for minutes (`script/soak`).

`script/soak --minutes N [--models DIR] [--voices FILE] [--clients K] [--json OUT] [-- SERVER ARGS]`

It starts `python -m wyoming_multitts` on a free loopback port, over tiny random models unless
`--voices` names a catalog, and sends one warm-up request per model (loading it). Then K clients
run for N minutes, each going round a mix of request kinds on one voice of every model in turn:
plain and streaming requests as Home Assistant sends them, clients that vanish mid-request, slow
readers, describe storms and malformed input. Meanwhile silent clients (they never read) wait to be
dropped after the server's `--client-timeout` (so a soak lasts at least that long), and a monitor
thread times a `describe` on a fresh connection every 0.5 s and samples the memory and connections
of the server and its model workers. At the end every voice must still speak.

A Markdown summary goes to stdout, progress to stderr. Exit status 1 when the server died, a
describe took 1 s or more or got no answer, or anything unexpected happened (a traceback, ERROR
line or model worker death in the server log included); 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import math
import os
import random
import re
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, AsyncIterator, Awaitable, Callable, Sequence

import psutil
from wyoming.audio import AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from wyoming_multitts.catalog import CatalogError, load_catalog

from .models import BenchError, ensure_models
from .server import HOST, POLL_INTERVAL, STOP_TIMEOUT, BenchServer

_LOGGER = logging.getLogger("tools.bench.soak")

# ---- kinds of client and what counts as their success

PLAIN = "plain"
STREAMING = "streaming"
SLOW = "slow-reader"
VANISHING = "vanishing"
SILENT = "silent"
STORM = "describe-storm"
MALFORMED = "malformed"
EVERY_MODEL = "every-model"
TRICKLE = "trickle-reader"
FINAL = "final-check"
WARMUP = "warm-up"
KIND_MEANINGS = {
    WARMUP: "loads the model (before the clock starts): as plain",
    PLAIN: "audio-start, audio-chunks, audio-stop",
    STREAMING: "HA's sequence: audio cycles, then synthesize-stopped",
    SLOW: "served in full (plain or streaming) while reading slowly through a small buffer",
    VANISHING: "left mid-request (nothing read, or just audio-start)",
    SILENT: "never read (plain or streaming): dropped by the server (--client-timeout)",
    TRICKLE: "read 1 KiB/s (a fiftieth of real time): ended by the server (--min-client-rate), "
    "or served where the model is slower still",
    EVERY_MODEL: "a plain request to every model at once: each served, or refused while the "
    "server is full",
    STORM: "every describe of the storm answered",
    MALFORMED: "the expected error code, then a close",
    FINAL: "the voice still speaks after the soak",
}
"""Every kind, in report order, and what an `ok` run of it means."""
VOICE_KINDS = (WARMUP, PLAIN, STREAMING, SLOW, VANISHING, SILENT, TRICKLE, FINAL)
"""Kinds that speak with a voice (reported by engine)."""
ROTATION = (
    PLAIN,
    STREAMING,
    SLOW,
    VANISHING,
    STREAMING,
    PLAIN,
    STORM,
    STREAMING,
    VANISHING,
    PLAIN,
    MALFORMED,
    SLOW,
    EVERY_MODEL,
    TRICKLE,
)
"""What a client slot runs, in turn (silent clients have their own slot); client k starts
k/K of the way round so that even a short run covers every kind."""
OK = "ok"
REFUSED = "refused"
RESET = "reset"
"""The server reset the connection. It does so when it closes on a client still sending (after
a refusal or an error), and the reset may overtake its error event; so resets count as refusals
when the server refused anything, and as failures when it did not."""
UNEXPECTED = "unexpected"
OUTCOMES = (OK, REFUSED, RESET, UNEXPECTED)
LOAD_REFUSALS = frozenset({"model-busy", "server-busy", "model-too-large"})
"""Error codes that refuse a valid request because the server is full: expected under load."""

AUDIO_START, AUDIO_CHUNK, AUDIO_STOP = "audio-start", "audio-chunk", "audio-stop"
AUDIO_CYCLE = [AUDIO_START, AUDIO_CHUNK, AUDIO_STOP]
"""The events of one audio cycle, runs of audio-chunk collapsed."""
SYNTHESIZE_STOPPED = "synthesize-stopped"

# ---- pacing and limits

DEFAULT_CLIENTS = 4
DEFAULT_SEED = 1
MAX_RUNS_PER_CLIENT = 100_000
"""Bound on one client slot's loop (the deadline ends it long before)."""
MAX_EVENTS = 100_000
"""Bound on the events read for one request (an hour of audio in 1024-sample chunks is 85,000)."""
SERVER_CLIENT_TIMEOUT = 60.0
"""The server's default `--client-timeout`, used unless server arguments set another."""
SERVER_CLIENT_RATE_GRACE = 10.0
"""The server's default `--client-rate-grace`, used unless server arguments set another."""
SERVER_MAX_CONNECTIONS = 64
"""The server's default `--max-connections`, used unless server arguments set another."""
EXTRA_CONNECTIONS = 10
"""Connections besides the clients' and a storm's: the silent client, the monitor, and some that
clients have closed but the server has not yet (a storm leaves a burst of them)."""
EVENT_TIMEOUT_MARGIN = 120.0
"""Seconds an event may take beyond `--client-timeout`: a request may queue behind a silent client
(which holds its model that long), then behind a model load and a few requests."""
RUN_LIMIT_MARGIN = 600.0
"""Seconds one client run may take beyond `--client-timeout` before it counts as a hang."""
STREAM_CHUNK_PAUSE = 0.05
"""Seconds between the `synthesize-chunk`s of a streamed request (text arriving from an LLM)."""
STREAM_CHUNK_CHARS = (3, 12)
"""Shortest and longest streamed text chunk: not on word boundaries, as HA's are not."""
SLOW_RCVBUF = 4096
"""SO_RCVBUF of slow and silent clients (the kernel doubles it)."""
SLOW_READ_BYTES = 2048
SLOW_READ_PAUSE = 0.1
"""A slow reader takes 2 KiB every 0.1 s: 20 KB/s, under half real time at 24 kHz 16-bit."""
FAST_READ_BYTES = 65536
TRICKLE_READ_BYTES = 1024
TRICKLE_PAUSE = 1.0
"""A trickle reader takes 1 KiB a second: a fiftieth of real time at 24 kHz."""
TRICKLE_GRACE = 60.0
"""Seconds past `--client-rate-grace` of reading slower than the server writes within which the
server must have ended a trickle reader."""
VANISH_WAIT = 10.0
"""Seconds a vanishing client waits for `audio-start` before it leaves anyway."""
SILENT_SENTENCES = 40
"""Sentences a silent client asks for: more audio than all socket buffers hold, so that the
server has to wait for it (tiny Bark: 40 × 15 KB)."""
SILENT_GRACE = 120.0
"""Seconds past `--client-timeout` within which the server must have dropped a silent client.
The buffers fill first: about 4 s of audio (~100 KB of socket buffers plus 64 KiB of asyncio's),
which models sharing 2 busy cores may take a minute to make; a queue for the model comes first."""
SILENT_PAUSE = 5.0
"""Seconds between one silent client's end and the next one's start."""
ACCEPT_TIMEOUT = 10.0
"""Seconds the server may take to accept a connection (its event loop does it at once)."""
ACCEPT_POLL = 0.01
"""Seconds between looks at whether the server has accepted a connection."""
DRAIN_TIMEOUT = 10.0
"""Seconds to read what is left on a dropped client's socket."""
STORM_SIZE = 16
"""Concurrent describes of one storm (the server's default --max-connections is 64)."""
VANISH_VARIANTS = 4
"""Ways of vanishing: see `Soak._vanishing`."""

# ---- the monitor

MONITOR_INTERVAL = 0.5
"""Seconds between the monitor's describes (and memory samples)."""
PROGRESS_INTERVAL = 10.0
"""Seconds between progress lines on stderr."""
DESCRIBE_LIMIT = 1.0
"""Home Assistant waits 1 s for `info` (`load_wyoming_info(..., timeout=1)` in
`homeassistant/components/wyoming/data.py`): a describe this slow fails the soak."""
DESCRIBE_TIMEOUT = 5.0
"""Seconds a describe may take before it counts as unanswered."""
MIB = 1024**2
P99 = 0.99

# ---- the server log

TRACEBACK = "Traceback (most recent call last)"
LOG_ERROR = re.compile(r"(?:^|\s)(?:ERROR|CRITICAL)[:\s]")
LOG_WARNING = re.compile(r"(?:^|\s)WARNING[:\s]")
DROP_LINE = "Dropping a client"
"""What the handler logs when it drops a client (`--client-timeout`)."""
WORKER_DEATH = re.compile(r"had died|did not stop within .* of a cancel")
"""What the registry logs when it finds a model worker dead, or kills one that ignored a cancel."""
LOG_EXCERPT_LINES = 12
"""Lines quoted from the server log after each of the first tracebacks."""
MAX_LISTED = 20
"""Unexpected results and tracebacks listed in the summary (the JSON has every result)."""

SENTENCES = (
    "The living room lights are off.",
    "It is 21.5 °C outside and the front door is locked.",
    "Your timer for 10 minutes has finished!",
    "Good morning, today will be sunny with a light breeze.",
    "The garage door has been open for 3 hours; shall I close it?",
    "Playing your favourite playlist in the kitchen.",
    "Is the washing machine done yet?",
)
"""Texts like Home Assistant's answers, with numbers and symbols to spell out."""


@dataclass(frozen=True)
class MalformedCase:
    """Bytes a broken client sends, and the error code the server must answer with."""

    raw: bytes
    code: str
    half_close: bool = False
    """Shut our side down after sending (a header cut short by the end of the stream)."""


MALFORMED_CASES = (
    MalformedCase(b"this is not json\n", "malformed-event"),
    MalformedCase(b'{"data": {"text": "no type"}}\n', "malformed-event"),
    MalformedCase(b'{"type": "synthesize", "data_length": 5}\nnope!', "malformed-event"),
    MalformedCase(b'{"type": "synthesize", "data_length": 99999999}\n', "event-too-large"),
    MalformedCase(b'{"type": "synthesize-chunk", "data": {"text": "x"}}\n', "unexpected-event"),
    MalformedCase(b'{"type": "synthesize", "data": {"text": 42}}\n', "malformed-event"),
    MalformedCase(b'{"type": "synthesize", "data": {"text": "\\ud800"}}\n', "malformed-event"),
    MalformedCase(
        b'{"type": "synthesize", "data": {"text": ' + b"[" * 5000 + b"]" * 5000 + b"}}\n",
        "malformed-event",
    ),
    MalformedCase(
        b'{"type": "synthesize", "data": {"text": "Hi.", "voice": {"name": "nobody"}}}\n',
        "unknown-voice",
    ),
    MalformedCase(b'{"type": "synthesize", "data": {"text": " ?! "}}\n', "empty-text"),
    MalformedCase(
        b'{"type": "synthesize", "data": {"text": "Hi."}, "payload_length": 3}\n',
        "payload-not-accepted",
    ),
    MalformedCase(b'{"type": "synthe', "malformed-event", half_close=True),
)
"""Every case ends where the server stops reading: bytes left unread would make the server's
close a reset, which may overtake its error event."""


# ---- settings and command line


@dataclass(frozen=True)
class SoakSettings:
    """What one soak run does."""

    minutes: float
    clients: int
    models_dir: Path | None
    """Where the tiny models are made (None: a temporary folder)."""
    voices: Path | None
    """A catalog to serve instead of the tiny models."""
    json_path: Path | None
    server_log: Path | None
    """Where the server's log is kept (None: a temporary file, quoted on failure)."""
    seed: int
    server_args: tuple[str, ...]
    client_timeout: float
    """The server's `--client-timeout`, read from `server_args`."""
    client_rate_grace: float = SERVER_CLIENT_RATE_GRACE
    """The server's `--client-rate-grace`, read from `server_args`."""

    @property
    def event_timeout(self) -> float:
        """Seconds any one event of a valid request may take to arrive."""
        return self.client_timeout + EVENT_TIMEOUT_MARGIN

    @property
    def run_limit(self) -> float:
        """Seconds one client run may take before it counts as a hang."""
        return self.client_timeout + RUN_LIMIT_MARGIN


def build_parser() -> argparse.ArgumentParser:
    """The command line (`--help` lists it)."""
    parser = argparse.ArgumentParser(
        prog="script/soak",
        usage="%(prog)s --minutes N [options] [-- SERVER ARGS]",
        description="Run the server under mixed and misbehaving clients for a while; arguments "
        "after `--` go to the server (e.g. -- --client-timeout 10 --threads 1).",
        epilog="Exit status 1 when the server died, a describe took 1 s or more or got no "
        "answer, or anything unexpected happened; the summary says which.",
    )
    parser.add_argument(
        "--minutes", type=float, required=True, help="how long clients run (e.g. 0.5)"
    )
    parser.add_argument(
        "--models",
        type=Path,
        metavar="DIR",
        help="make (or reuse) the tiny models in DIR (default: a temporary folder)",
    )
    parser.add_argument(
        "--voices", type=Path, metavar="FILE", help="serve this catalog instead of tiny models"
    )
    parser.add_argument(
        "--clients",
        type=int,
        metavar="K",
        default=DEFAULT_CLIENTS,
        help=f"concurrent mixed clients, besides the silent one and the monitor "
        f"(default {DEFAULT_CLIENTS})",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results here")
    parser.add_argument(
        "--server-log", type=Path, metavar="FILE", help="keep the server's log in FILE"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"seed of the texts and chunkings chosen (default {DEFAULT_SEED})",
    )
    return parser


def server_limits(server_args: Sequence[str]) -> tuple[float, int, float]:
    """The `--client-timeout`, `--max-connections` and `--client-rate-grace` the server will
    use (its defaults unless `server_args` set them)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--client-timeout", type=float, default=SERVER_CLIENT_TIMEOUT)
    parser.add_argument("--max-connections", type=int, default=SERVER_MAX_CONNECTIONS)
    parser.add_argument("--client-rate-grace", type=float, default=SERVER_CLIENT_RATE_GRACE)
    known, _ = parser.parse_known_args(list(server_args))
    return float(known.client_timeout), int(known.max_connections), known.client_rate_grace


def parse_settings(argv: Sequence[str] | None) -> SoakSettings:
    """Parse the command line (exits with a hint on errors)."""
    args = list(sys.argv[1:] if argv is None else argv)
    server_args: list[str] = []
    if "--" in args:
        split = args.index("--")
        args, server_args = args[:split], args[split + 1 :]
    parser = build_parser()
    parsed = parser.parse_args(args)
    if not parsed.minutes > 0 or parsed.clients < 1:
        parser.error("--minutes must be above 0 and --clients at least 1")
    if parsed.voices is not None and parsed.models is not None:
        parser.error("--voices and --models exclude each other")
    client_timeout, max_connections, client_rate_grace = server_limits(server_args)
    if not client_timeout > 0:
        parser.error("the server's --client-timeout must be above 0")
    if parsed.clients + STORM_SIZE + EXTRA_CONNECTIONS > max_connections:
        _LOGGER.warning(
            "%d clients, a storm of %d describes, the silent client and the monitor may need "
            "more than the server's --max-connections %d: refused connections count as "
            "refused, but a refused monitor describe fails the soak",
            parsed.clients,
            STORM_SIZE,
            max_connections,
        )
    return SoakSettings(
        minutes=parsed.minutes,
        clients=parsed.clients,
        models_dir=parsed.models,
        voices=parsed.voices,
        json_path=parsed.json,
        server_log=parsed.server_log,
        seed=parsed.seed,
        server_args=tuple(server_args),
        client_timeout=client_timeout,
        client_rate_grace=client_rate_grace,
    )


# ---- what was seen


@dataclass(frozen=True)
class SoakVoice:
    """The voice that stands for one model of the catalog."""

    name: str
    model: str
    engine: str


@dataclass
class MemoryPeak:
    """RSS of the server process plus all its children (the model workers)."""

    start_bytes: int = 0
    peak_bytes: int = 0
    peak_processes: int = 0
    end_bytes: int = 0

    def sample(self, rss: int, processes: int) -> None:
        """Count one sample."""
        self.start_bytes = self.start_bytes or rss
        self.end_bytes = rss
        if rss > self.peak_bytes:
            self.peak_bytes, self.peak_processes = rss, processes


@dataclass
class ConnectionPeak:
    """The most connections the server had open at once, and in which TCP states."""

    peak: int = 0
    states: dict[str, int] = field(default_factory=dict)
    """State → connections at the peak; CLOSE_WAIT: the client has gone, the server not yet."""

    def sample(self, connections: Sequence[Any]) -> None:
        """Count one sample of `SoakServer.connections`."""
        if len(connections) > self.peak:
            self.peak = len(connections)
            self.states = dict(Counter(conn.status for conn in connections))


@dataclass
class Tally:
    """Everything the clients and the monitor saw (the monitor thread only appends)."""

    runs: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(kind, voice or "-", outcome) → runs."""
    errors: Counter[str] = field(default_factory=Counter)
    """Error code → `error` events received, malformed input's included."""
    unexpected: list[str] = field(default_factory=list)
    monitor_s: list[float] = field(default_factory=list)
    """Seconds each monitor describe took."""
    monitor_unanswered: int = 0
    """Monitor describes that got no `info` (an error, a close or a timeout)."""
    storm_s: list[float] = field(default_factory=list)
    storm_unanswered: int = 0
    """Storm describes that got no `info` (each also makes its storm unexpected or refused)."""
    memory: MemoryPeak = field(default_factory=MemoryPeak)
    connections: ConnectionPeak = field(default_factory=ConnectionPeak)
    silent_drop_s: list[float] = field(default_factory=list)
    """Seconds from each silent client's request until the server closed its connection."""
    death: str | None = None
    """How the server ended, if it died during the soak."""

    def record(self, kind: str, voice: str, outcome: str, problem: str | None = None) -> None:
        """Count one run; `problem` says what was unexpected about it."""
        self.runs[(kind, voice, outcome)] += 1
        if problem is not None:
            self.unexpected.append(f"{kind} {voice}: {problem}")


# ---- the server


class SoakServer(BenchServer):
    """The benchmark's server process, plus a look at its open connections."""

    def connections(self) -> list[Any]:
        """The server's open TCP connections (psutil's `pconn`s; none once it has gone)."""
        try:
            connections = psutil.Process(self.pid).net_connections(kind="tcp")
        except psutil.Error:
            return []
        return [conn for conn in connections if conn.raddr]

    def holds_connection(self, client_port: int) -> bool:
        """Whether the server still has the connection from our `client_port` open."""
        return any(conn.raddr.port == client_port for conn in self.connections())


def process_tree_rss(pid: int) -> tuple[int, int]:
    """RSS of process `pid` plus all its descendants, and how many processes that is."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    total = 0
    counted = 0
    for process in processes:
        try:
            total += process.memory_info().rss
            counted += 1
        except psutil.Error:
            pass  # exited meanwhile
    return total, counted


# ---- the monitor thread


def timed_describe(port: int) -> tuple[float, bool]:
    """Seconds a describe took on a fresh connection, connecting included, and whether `info`
    came back (within DESCRIBE_TIMEOUT). Blocking sockets in a thread: the clients' event loop
    cannot delay it."""
    started = time.perf_counter()
    try:
        with socket.create_connection((HOST, port), timeout=DESCRIBE_TIMEOUT) as sock:
            sock.sendall(encode_event(Describe().event()))
            with sock.makefile("rb") as stream:
                header = json.loads(stream.readline())
                data_length = int(header.get("data_length") or 0)
                answered = len(stream.read(data_length)) == data_length
    except (OSError, ValueError, AttributeError):
        return time.perf_counter() - started, False
    return time.perf_counter() - started, answered and header.get("type") == "info"


class Monitor(threading.Thread):
    """Every MONITOR_INTERVAL: is the server alive, how fast is a describe, how much memory."""

    def __init__(self, server: SoakServer, tally: Tally) -> None:
        super().__init__(name="soak monitor", daemon=True)
        self._server = server
        self._tally = tally
        self._stopping = threading.Event()
        self.server_died = threading.Event()

    def run(self) -> None:
        """Sample until `stop` (or the server's death)."""
        while not self._stopping.wait(MONITOR_INTERVAL):
            if not self.check_alive():
                return
            seconds, answered = timed_describe(self._server.port)
            self._tally.monitor_s.append(seconds)
            self._tally.monitor_unanswered += 0 if answered else 1
            self._tally.memory.sample(*process_tree_rss(self._server.pid))
            self._tally.connections.sample(self._server.connections())

    def check_alive(self) -> bool:
        """False (and the death recorded) once the server has exited."""
        code = self._server.exit_code()
        if code is None:
            return True
        if not self.server_died.is_set():
            self._tally.death = f"the server exited with status {code} during the soak"
            self.server_died.set()
        return False

    def stop(self) -> None:
        """End the sampling and wait for it."""
        self._stopping.set()
        self.join()


# ---- clients


def encode_event(event: Event) -> bytes:
    """An event without payload as Wyoming bytes: a JSON header line, then its data."""
    header: dict[str, Any] = {"type": event.type}
    data = json.dumps(event.data, ensure_ascii=False).encode("utf-8") if event.data else b""
    if data:
        header["data_length"] = len(data)
    return json.dumps(header).encode("utf-8") + b"\n" + data


def collapsed_types(events: Sequence[Event]) -> list[str]:
    """Event types with runs of audio-chunk collapsed into one."""
    collapsed: list[str] = []
    for event in events:
        if not (collapsed and collapsed[-1] == event.type == AUDIO_CHUNK):
            collapsed.append(event.type)
    return collapsed


def audio_problem(events: Sequence[Event], streaming: bool) -> str | None:
    """What is wrong with a finished request's events (None: nothing).

    Plain: exactly one audio cycle. Streaming: one or more, then `synthesize-stopped`; one audio
    format throughout, as Home Assistant takes it from the first `audio-start` only.
    """
    types = collapsed_types(events)
    if streaming:
        ends_well = bool(types) and types[-1] == SYNTHESIZE_STOPPED
        cycles = len(types[:-1]) // len(AUDIO_CYCLE)
        if not ends_well or not cycles or types[:-1] != AUDIO_CYCLE * cycles:
            return f"events {types[:12]} are not audio cycles, then synthesize-stopped"
    elif types != AUDIO_CYCLE:
        return f"events {types[:12]} are not one audio cycle"
    formats = {
        (event.data.get("rate"), event.data.get("width"), event.data.get("channels"))
        for event in events
        if event.type in (AUDIO_START, AUDIO_CHUNK)
    }
    if len(formats) != 1:
        return f"audio formats change within the request: {sorted(map(str, formats))}"
    return None


@contextlib.asynccontextmanager
async def wyoming_client(port: int) -> AsyncIterator[AsyncTcpClient]:
    """Home Assistant's client on a fresh connection. A connection the server has closed already
    (after an error or a refusal) is no failure of ours: closing it does not raise."""
    client = AsyncTcpClient(HOST, port)
    await client.connect()
    try:
        yield client
    finally:
        with contextlib.suppress(ConnectionError):
            await client.disconnect()


class RawClient:
    """A connection on a plain socket: our own receive buffer size, reads of a chosen size and
    pace, and a close that may be a reset. Events are parsed from what the reads took."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.events = asyncio.StreamReader()
        self._pump: asyncio.Task[None] | None = None
        self._read_size, self._read_pause = FAST_READ_BYTES, 0.0

    @classmethod
    async def connect(cls, port: int, rcvbuf: int | None = None) -> "RawClient":
        """Connect to the server; `rcvbuf` is set first, so it bounds the TCP window."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            if rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
        except BaseException:
            sock.close()
            raise
        return cls(sock)

    @property
    def local_port(self) -> int:
        """Our side's port (the server sees it as the remote one)."""
        return int(self.sock.getsockname()[1])

    async def send(self, data: bytes) -> None:
        """Send raw bytes. A server that refused us may have closed already: what it said is
        read afterwards."""
        with contextlib.suppress(ConnectionError):
            await asyncio.get_running_loop().sock_sendall(self.sock, data)

    def start_reading(self, size: int = FAST_READ_BYTES, pause: float = 0.0) -> None:
        """Read `size` bytes at most every `pause` seconds from now on, until the end (called
        again: at the new pace from the next read)."""
        self._read_size, self._read_pause = size, pause
        if self._pump is None:
            self._pump = asyncio.create_task(self._read_loop())

    async def _read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while data := await loop.sock_recv(self.sock, self._read_size):
                self.events.feed_data(data)
                if self._read_pause:
                    await asyncio.sleep(self._read_pause)
        except OSError as err:
            self.events.set_exception(err)
            return
        self.events.feed_eof()

    async def read_event(self, timeout: float) -> Event | None:
        """The next event; None once the server has closed (mid-event or by a reset too)."""
        try:
            return await asyncio.wait_for(async_read_event(self.events), timeout)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def close(self, reset: bool = False) -> None:
        """Close; with `reset`, abruptly (a TCP RST instead of a FIN). The reads stop first: the
        event loop must forget the socket before its descriptor is reused."""
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if reset:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


class Soak:
    """The clients of one soak run and what they saw."""

    def __init__(
        self,
        server: SoakServer,
        monitor: Monitor,
        voices: Sequence[SoakVoice],
        settings: SoakSettings,
        tally: Tally,
    ) -> None:
        self._server = server
        self._monitor = monitor
        self._voices = list(voices)
        self._settings = settings
        self.tally = tally
        self._rng = random.Random(settings.seed)
        self._voice_turns = itertools.cycle(self._voices)
        self._deadline = math.inf
        """Set when the warm-up is over."""
        self._vanish_turns = itertools.count()
        self._malformed_turns = itertools.count()
        self._slow_turns = itertools.count()
        self._silent_turns = itertools.count()
        self._storm_turn = asyncio.Lock()

    def _over(self) -> bool:
        return time.monotonic() >= self._deadline or self._monitor.server_died.is_set()

    async def run(self) -> None:
        """A warm-up request per voice (it loads the model: a short soak would otherwise be
        mostly loading), every client slot until the deadline, then a final check per voice."""
        await asyncio.gather(*(self._one_run(WARMUP, voice, self._plain) for voice in self._voices))
        _LOGGER.info(
            "Warm-up done; %d clients run for %g min",
            self._settings.clients,
            self._settings.minutes,
        )
        self._deadline = time.monotonic() + self._settings.minutes * 60.0
        slots: list[Awaitable[None]] = [self._client_slot(k) for k in range(self._settings.clients)]
        progress = asyncio.create_task(self._log_progress())
        try:
            await asyncio.gather(*slots, self._silent_slot())
        finally:
            progress.cancel()
        if not self._monitor.server_died.is_set():
            _LOGGER.info("Clients done; a final request per voice")
            await asyncio.gather(
                *(self._one_run(FINAL, voice, self._plain) for voice in self._voices)
            )

    async def _log_progress(self) -> None:
        """A line on stderr every PROGRESS_INTERVAL seconds (a soak may run for hours)."""
        started = time.monotonic()
        while True:
            await asyncio.sleep(PROGRESS_INTERVAL)
            outcomes = Counter[str]()
            for (_, _, outcome), runs in self.tally.runs.items():
                outcomes[outcome] += runs
            _LOGGER.info(
                "%.0f s: runs %s; describe worst %s ms; peak RSS %s MiB",
                time.monotonic() - started,
                ", ".join(f"{outcomes[outcome]} {outcome}" for outcome in OUTCOMES),
                _ms(max(self.tally.monitor_s, default=None)),
                _mib(self.tally.memory.peak_bytes),
            )

    async def _client_slot(self, index: int) -> None:
        """One mixed client: the rotation from its own starting point until the deadline."""
        offset = index * len(ROTATION) // self._settings.clients
        for turn in range(MAX_RUNS_PER_CLIENT):
            if self._over():
                return
            kind = ROTATION[(offset + turn) % len(ROTATION)]
            if kind == STORM:
                await self._one_run(STORM, None, self._storm)
            elif kind == EVERY_MODEL:
                await self._one_run(EVERY_MODEL, None, self._every_model)
            elif kind == MALFORMED:
                await self._one_run(MALFORMED, None, self._malformed)
            else:
                voice = next(self._voice_turns)
                action = {
                    PLAIN: self._plain,
                    STREAMING: self._streaming,
                    SLOW: self._slow_reader,
                    TRICKLE: self._trickle,
                    VANISHING: self._vanishing,
                }[kind]
                await self._one_run(kind, voice, action)

    async def _silent_slot(self) -> None:
        """Silent clients one after the other: the first at the start (so a soak lasts at least
        the server's --client-timeout), later ones while one can still be dropped in time."""
        for turn in range(MAX_RUNS_PER_CLIENT):
            if self._monitor.server_died.is_set():
                return
            if turn and self._deadline - time.monotonic() < self._settings.client_timeout:
                return
            await self._one_run(SILENT, self._voices[turn % len(self._voices)], self._silent)
            await asyncio.sleep(SILENT_PAUSE)

    async def _one_run(
        self,
        kind: str,
        voice: SoakVoice | None,
        action: Callable[..., Awaitable[tuple[str, str | None]]],
    ) -> None:
        """Run one client and count its outcome; a hang or a socket error is unexpected."""
        name = voice.name if voice is not None else "-"
        args = () if voice is None else (voice,)
        try:
            outcome, problem = await asyncio.wait_for(action(*args), self._settings.run_limit)
        except asyncio.TimeoutError:
            outcome, problem = UNEXPECTED, (
                f"timed out: an event took over {self._settings.event_timeout:g} s or the run "
                f"over {self._settings.run_limit:g} s"
            )
        except ConnectionError:
            outcome, problem = RESET, None
        except (OSError, EOFError) as err:  # EOFError: a connection closed mid-event
            outcome, problem = UNEXPECTED, f"{type(err).__name__}: {err}"
        self.tally.record(kind, name, outcome, problem)
        if problem is not None:
            _LOGGER.warning("Unexpected: %s %s: %s", kind, name, problem)

    def _error_outcome(self, event: Event) -> tuple[str, str | None]:
        """An `error` event answering a valid request: refused under load, else unexpected."""
        error = Error.from_event(event)
        code = error.code or "?"
        self.tally.errors[code] += 1
        if code in LOAD_REFUSALS:
            return REFUSED, None
        return UNEXPECTED, f"error {code}: {error.text[:200]}"

    def _text(self, sentences: int) -> str:
        return " ".join(self._rng.choice(SENTENCES) for _ in range(sentences))

    async def _read_request(
        self, client: AsyncTcpClient | RawClient, streaming: bool
    ) -> tuple[str, str | None]:
        """Read a request's answer up to its last event (`audio-stop`, or `synthesize-stopped`
        when streaming), then judge it."""
        last_type = SYNTHESIZE_STOPPED if streaming else AUDIO_STOP
        events: list[Event] = []
        for _ in range(MAX_EVENTS):
            if isinstance(client, RawClient):
                event = await client.read_event(self._settings.event_timeout)
            else:
                event = await asyncio.wait_for(client.read_event(), self._settings.event_timeout)
            if event is None:
                return UNEXPECTED, (
                    f"the server closed the connection after {collapsed_types(events)[:12]}, "
                    f"without {last_type} or an error"
                )
            if Error.is_type(event.type):
                return self._error_outcome(event)
            events.append(event)
            if event.type == last_type:
                problem = audio_problem(events, streaming)
                return (OK, None) if problem is None else (UNEXPECTED, problem)
        return UNEXPECTED, f"more than {MAX_EVENTS} events without {last_type}"

    async def _plain(self, voice: SoakVoice) -> tuple[str, str | None]:
        """Home Assistant's plain request: one `synthesize`, read up to `audio-stop`."""
        request = Synthesize(text=self._text(2), voice=SynthesizeVoice(name=voice.name))
        async with wyoming_client(self._server.port) as client:
            with contextlib.suppress(ConnectionError):  # refused and closed: read why below
                await client.write_event(request.event())
            return await self._read_request(client, streaming=False)

    def _chunks(self, text: str) -> list[str]:
        """`text` cut anywhere, as an LLM's output arrives."""
        chunks: list[str] = []
        while text:
            size = self._rng.randint(*STREAM_CHUNK_CHARS)
            chunks.append(text[:size])
            text = text[size:]
        return chunks

    async def _streaming(self, voice: SoakVoice) -> tuple[str, str | None]:
        """Home Assistant's streaming request: synthesize-start, synthesize-chunks as the text
        arrives, the whole text again in a `synthesize`, synthesize-stop; reading meanwhile, up
        to `synthesize-stopped`."""
        text = self._text(3)
        request_voice = SynthesizeVoice(name=voice.name)
        async with wyoming_client(self._server.port) as client:

            async def write() -> None:
                await client.write_event(SynthesizeStart(voice=request_voice).event())
                for chunk in self._chunks(text):
                    await client.write_event(SynthesizeChunk(text=chunk).event())
                    await asyncio.sleep(STREAM_CHUNK_PAUSE)
                await client.write_event(Synthesize(text=text, voice=request_voice).event())
                await client.write_event(SynthesizeStop().event())

            writing = asyncio.create_task(write())
            try:
                result = await self._read_request(client, streaming=True)
            finally:
                writing.cancel()  # nothing to cancel once it has sent everything
                (sent,) = await asyncio.gather(writing, return_exceptions=True)
            if isinstance(sent, Exception) and result[0] == OK:
                return UNEXPECTED, f"sending failed: {sent!r}"
            return result

    def _request_bytes(self, voice: SoakVoice, text: str, streaming: bool) -> bytes:
        """A whole request as Home Assistant sends it, at once: `synthesize`; or, streaming,
        synthesize-start, the text in chunks, `synthesize` with all of it, synthesize-stop."""
        request_voice = SynthesizeVoice(name=voice.name)
        whole = Synthesize(text=text, voice=request_voice).event()
        if not streaming:
            return encode_event(whole)
        events = [
            SynthesizeStart(voice=request_voice).event(),
            *(SynthesizeChunk(text=chunk).event() for chunk in self._chunks(text)),
            whole,
            SynthesizeStop().event(),
        ]
        return b"".join(map(encode_event, events))

    async def _slow_reader(self, voice: SoakVoice) -> tuple[str, str | None]:
        """A request read SLOW_READ_BYTES at a time through a small receive buffer; plain and
        streaming in turn. The server must serve it in full, slowly."""
        streaming = next(self._slow_turns) % 2 == 1
        client = await RawClient.connect(self._server.port, SLOW_RCVBUF)
        try:
            await client.send(self._request_bytes(voice, self._text(1), streaming))
            client.start_reading(SLOW_READ_BYTES, SLOW_READ_PAUSE)
            return await self._read_request(client, streaming)
        finally:
            await client.close()

    async def _trickle(self, voice: SoakVoice) -> tuple[str, str | None]:
        """A long plain request read TRICKLE_READ_BYTES a second through a small buffer for
        `--client-timeout` + `--client-rate-grace` + TRICKLE_GRACE seconds (the request may
        queue first, and the kernel's socket buffers hide a slow reader from the server until
        they are full), then read at full speed: the server must have ended the request
        (`client-too-slow`, or a reset), or, where the model is slower than the reader (tiny
        Bark makes a few KB a second), go on serving it. `tests/test_workers.py` shows the
        server ending a 1 KiB/s reader once the buffers are full; this checks that nothing
        breaks around it."""
        text = " ".join(SENTENCES[i % len(SENTENCES)] for i in range(SILENT_SENTENCES))
        client = await RawClient.connect(self._server.port, SLOW_RCVBUF)
        try:
            await client.send(self._request_bytes(voice, text, False))
            if not await self._server_accepts(client):
                return REFUSED, None
            client.start_reading(TRICKLE_READ_BYTES, TRICKLE_PAUSE)
            settings = self._settings
            await asyncio.sleep(
                settings.client_timeout + settings.client_rate_grace + TRICKLE_GRACE
            )
            client.start_reading()  # now at full speed
            for _ in range(MAX_EVENTS):
                event = await client.read_event(settings.event_timeout)
                if event is None or event.type == AUDIO_STOP:  # ended, or all written
                    return OK, None
                if Error.is_type(event.type):
                    code = Error.from_event(event).code
                    return (OK, None) if code == "client-too-slow" else self._error_outcome(event)
            return UNEXPECTED, f"over {MAX_EVENTS} events"
        finally:
            await client.close(reset=True)

    async def _every_model(self) -> tuple[str, str | None]:
        """A plain request to one voice of every model, all at once: first loads, evictions and
        refusals meet. The worst outcome of them counts."""
        results = await asyncio.gather(*(self._plain(voice) for voice in self._voices))
        return max(results, key=lambda result: OUTCOMES.index(result[0]))

    async def _vanishing(self, voice: SoakVoice) -> tuple[str, str | None]:
        """A request, then gone without a word, in turn: plain, reading nothing; plain, after
        `audio-start`, by a reset; streaming, reading nothing, by a reset; streaming, after
        `audio-start` (text still open)."""
        variant = next(self._vanish_turns) % VANISH_VARIANTS
        streaming, wait_for_start, reset = variant >= 2, variant % 2 == 1, variant in (1, 2)
        request_voice = SynthesizeVoice(name=voice.name)
        text = self._text(12)
        if streaming:
            request = encode_event(SynthesizeStart(voice=request_voice).event()) + encode_event(
                SynthesizeChunk(text=text).event()
            )
        else:
            request = encode_event(Synthesize(text=text, voice=request_voice).event())
        client = await RawClient.connect(self._server.port)
        try:
            await client.send(request)
            if not wait_for_start:
                return OK, None
            client.start_reading()
            try:
                event = await client.read_event(VANISH_WAIT)
            except asyncio.TimeoutError:
                return OK, None  # still queued: gone while waiting
            if event is None:
                return UNEXPECTED, "the server closed the connection without audio or an error"
            if Error.is_type(event.type):
                return self._error_outcome(event)
            if not AudioStart.is_type(event.type):
                return UNEXPECTED, f"the first event was {event.type}, not audio-start"
            return OK, None
        finally:
            await client.close(reset=reset)

    async def _silent(self, voice: SoakVoice) -> tuple[str, str | None]:
        """A long request (plain and streaming in turn), then nothing read: the server must drop
        us once it has waited `--client-timeout` for a write; what we then read must end before
        the request's last event."""
        streaming = next(self._silent_turns) % 2 == 1
        last_type = SYNTHESIZE_STOPPED if streaming else AUDIO_STOP
        text = " ".join(SENTENCES[i % len(SENTENCES)] for i in range(SILENT_SENTENCES))
        client = await RawClient.connect(self._server.port, SLOW_RCVBUF)
        try:
            await client.send(self._request_bytes(voice, text, streaming))
            sent = time.monotonic()
            accepted = await self._server_accepts(client)
            limit = sent + self._settings.client_timeout + SILENT_GRACE
            while accepted and await self._server_holds(client):
                if time.monotonic() > limit:
                    return UNEXPECTED, (
                        f"not dropped within --client-timeout + {SILENT_GRACE:g} s (did all its "
                        "audio fit in the socket buffers?)"
                    )
                await asyncio.sleep(POLL_INTERVAL)
            dropped_after = time.monotonic() - sent
            client.start_reading()
            for _ in range(MAX_EVENTS):
                event = await client.read_event(DRAIN_TIMEOUT)
                if event is None:
                    break
                if Error.is_type(event.type):
                    return self._error_outcome(event)  # a refusal, most likely
                if event.type == last_type:
                    return UNEXPECTED, "served in full and closed, not dropped"
            if not accepted:
                return UNEXPECTED, "the server neither accepted the connection nor said why"
            self.tally.silent_drop_s.append(dropped_after)
            return OK, None
        finally:
            await client.close()

    async def _server_holds(self, client: RawClient) -> bool:
        """Whether the server has `client`'s connection open (False once it died)."""
        if self._monitor.server_died.is_set():
            return False
        return await asyncio.to_thread(self._server.holds_connection, client.local_port)

    async def _server_accepts(self, client: RawClient) -> bool:
        """Wait until the server has accepted `client`'s connection (one still in the listen
        queue is not the server's yet); False when it does not within ACCEPT_TIMEOUT (it
        refused and closed it, most likely)."""
        limit = time.monotonic() + ACCEPT_TIMEOUT
        while time.monotonic() < limit:
            if await self._server_holds(client):
                return True
            await asyncio.sleep(ACCEPT_POLL)
        return False

    async def _storm(self) -> tuple[str, str | None]:
        """STORM_SIZE describes at once, each on a fresh connection (one storm at a time: the
        connections of a soak stay within clients + STORM_SIZE + EXTRA_CONNECTIONS)."""
        async with self._storm_turn:
            answers = await asyncio.gather(
                *(self._timed_describe() for _ in range(STORM_SIZE)), return_exceptions=True
            )
        problems: list[str] = []
        outcomes = Counter[str]()
        for answer in answers:
            if isinstance(answer, ConnectionError):
                outcomes[RESET] += 1
                continue
            if isinstance(answer, BaseException):
                problems.append(f"{type(answer).__name__} {answer}")
                continue
            seconds, event = answer
            self.tally.storm_s.append(seconds)
            if event is not None and Info.is_type(event.type):
                outcomes[OK] += 1
            elif event is not None and Error.is_type(event.type):
                outcome, problem = self._error_outcome(event)
                outcomes[outcome] += 1
                problems += [problem] if problem else []
            else:
                problems.append(f"answered {event.type if event else 'nothing'}")
        self.tally.storm_unanswered += STORM_SIZE - outcomes[OK]
        if problems:
            return UNEXPECTED, f"{len(problems)} of {STORM_SIZE} describes failed: {problems[0]}"
        return (REFUSED if outcomes[REFUSED] else RESET if outcomes[RESET] else OK), None

    async def _timed_describe(self) -> tuple[float, Event | None]:
        """A describe on a fresh connection: seconds until its answer, and the answer."""
        started = time.perf_counter()
        async with wyoming_client(self._server.port) as client:
            with contextlib.suppress(ConnectionError):  # refused and closed: read why below
                await client.write_event(Describe().event())
            event = await asyncio.wait_for(client.read_event(), DESCRIBE_TIMEOUT)
        return time.perf_counter() - started, event

    async def _malformed(self) -> tuple[str, str | None]:
        """One of MALFORMED_CASES: its error code must come back, then a close."""
        case = MALFORMED_CASES[next(self._malformed_turns) % len(MALFORMED_CASES)]
        client = await RawClient.connect(self._server.port)
        try:
            await client.send(case.raw)
            if case.half_close:
                client.sock.shutdown(socket.SHUT_WR)
            client.start_reading()
            event = await client.read_event(self._settings.event_timeout)
            if event is None or not Error.is_type(event.type):
                return UNEXPECTED, f"{case.raw[:40]!r}: answered {event.type if event else None}"
            code = Error.from_event(event).code or "?"
            self.tally.errors[code] += 1
            if code in LOAD_REFUSALS:
                return REFUSED, None
            if code != case.code:
                return UNEXPECTED, f"{case.raw[:40]!r}: error {code}, not {case.code}"
            after = await client.read_event(self._settings.event_timeout)
            if after is not None:
                return UNEXPECTED, f"{case.raw[:40]!r}: {after.type} after the error, no close"
            return OK, None
        finally:
            await client.close()


# ---- the run


@dataclass
class SoakResult:
    """One soak run: settings, what was seen, and the server's end."""

    settings: SoakSettings
    voices: list[SoakVoice]
    tally: Tally
    seconds: float
    server_exit: int | None
    """Exit status after our SIGTERM (None if it had died before)."""
    server_killed: bool
    log_warnings: int
    log_errors: int
    log_drops: int
    worker_deaths: int
    tracebacks: list[str]
    log_path: Path


def soak_voices(catalog_path: Path) -> list[SoakVoice]:
    """The first voice of every model in the catalog."""
    catalog = load_catalog(catalog_path)
    chosen: dict[str, SoakVoice] = {}
    for voice in catalog.voices.values():
        engine = catalog.models[voice.model].engine
        chosen.setdefault(voice.model, SoakVoice(voice.name, voice.model, engine))
    return list(chosen.values())


def traceback_excerpts(log: str) -> list[str]:
    """Each traceback in the log, with the lines around it that say what failed."""
    lines = log.splitlines()
    return [
        "\n".join(lines[max(0, i - 1) : i + LOG_EXCERPT_LINES])
        for i, line in enumerate(lines)
        if TRACEBACK in line
    ]


def run_soak(settings: SoakSettings, work: Path) -> SoakResult:
    """Models, server, monitor and clients; everything the report needs."""
    if settings.voices is not None:
        catalog = settings.voices
    else:
        catalog = ensure_models(
            "tiny", settings.models_dir or work / "models", threads=os.cpu_count() or 1
        )
    voices = soak_voices(catalog)
    log_path = settings.server_log or work / "server.log"
    _LOGGER.info(
        "Soaking %s for %g min with %d clients over %s",
        catalog,
        settings.minutes,
        settings.clients,
        ", ".join(f"{v.name} ({v.engine})" for v in voices),
    )
    tally = Tally()
    started = time.monotonic()
    server = SoakServer(catalog, settings.server_args, log_path)
    monitor = Monitor(server, tally)
    try:
        monitor.start()
        asyncio.run(Soak(server, monitor, voices, settings, tally).run())
        monitor.check_alive()
    finally:
        monitor.stop()
        died = tally.death is not None
        server_exit = server.stop()
    log = server.log_text()
    return SoakResult(
        settings=settings,
        voices=voices,
        tally=tally,
        seconds=time.monotonic() - started,
        server_exit=None if died else server_exit,
        server_killed=server.killed,
        log_warnings=sum(1 for line in log.splitlines() if LOG_WARNING.search(line)),
        log_errors=sum(1 for line in log.splitlines() if LOG_ERROR.search(line)),
        log_drops=log.count(DROP_LINE),
        worker_deaths=len(WORKER_DEATH.findall(log)),
        tracebacks=traceback_excerpts(log),
        log_path=log_path,
    )


# ---- the report


def p99(values: Sequence[float]) -> float | None:
    """The 99th percentile (nearest rank); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(P99 * len(ordered)) - 1)]


def failures(result: SoakResult) -> list[str]:
    """Why the soak failed (empty: it passed)."""
    tally = result.tally
    reasons: list[str] = []
    if tally.death is not None:
        reasons.append(tally.death)
    slow = [s for s in tally.monitor_s + tally.storm_s if s >= DESCRIBE_LIMIT]
    if slow:
        reasons.append(f"{len(slow)} describe(s) took {DESCRIBE_LIMIT:g} s or more")
    if tally.monitor_unanswered:
        reasons.append(f"{tally.monitor_unanswered} monitor describe(s) got no info")
    if tally.unexpected:
        reasons.append(f"{len(tally.unexpected)} unexpected result(s)")
    resets = sum(runs for (_, _, outcome), runs in tally.runs.items() if outcome == RESET)
    if resets and not any(tally.errors[code] for code in LOAD_REFUSALS):
        reasons.append(f"{resets} connection(s) reset although the server refused nothing")
    if result.tracebacks or result.log_errors:
        reasons.append(
            f"the server log has {len(result.tracebacks)} traceback(s) and "
            f"{result.log_errors} ERROR line(s)"
        )
    if result.worker_deaths:
        reasons.append(f"{result.worker_deaths} model worker(s) died or were killed")
    if result.server_killed:
        reasons.append(f"the server did not stop within {STOP_TIMEOUT:g} s of SIGTERM")
    return reasons


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}"


def _mib(value: int) -> str:
    return f"{value / MIB:.0f}"


def _kind_counts(tally: Tally, kind: str, voice: str | None = None) -> dict[str, int]:
    return {
        outcome: sum(
            n
            for (k, v, o), n in tally.runs.items()
            if k == kind and o == outcome and voice in (None, v)
        )
        for outcome in OUTCOMES
    }


def _kinds_table(tally: Tally) -> list[str]:
    lines = [
        "| kind | runs | " + " | ".join(OUTCOMES) + " | ok means |",
        "|---|---:|" + "---:|" * len(OUTCOMES) + "---|",
    ]
    for kind, meaning in KIND_MEANINGS.items():
        counts = _kind_counts(tally, kind)
        cells = " | ".join(str(counts[outcome]) for outcome in OUTCOMES)
        lines.append(f"| {kind} | {sum(counts.values())} | {cells} | {meaning} |")
    return lines


def _engines_table(tally: Tally, voices: Sequence[SoakVoice]) -> list[str]:
    lines = [
        "| engine | voice | " + " | ".join(VOICE_KINDS) + " |",
        "|---|---|" + "---:|" * len(VOICE_KINDS),
    ]
    for voice in voices:
        cells = " | ".join(str(_kind_counts(tally, kind, voice.name)[OK]) for kind in VOICE_KINDS)
        lines.append(f"| {voice.engine} | {voice.name} | {cells} |")
    return lines


def _describe_table(tally: Tally) -> list[str]:
    rows = (
        (f"monitor, every {MONITOR_INTERVAL:g} s", tally.monitor_s, tally.monitor_unanswered),
        (f"storms, {STORM_SIZE} at once", tally.storm_s, tally.storm_unanswered),
    )
    lines = [
        f"| probe | describes | p99 ms | worst ms | ≥ {DESCRIBE_LIMIT:g} s | no info |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for probe, seconds, unanswered in rows:
        slow = sum(1 for s in seconds if s >= DESCRIBE_LIMIT)
        lines.append(
            f"| {probe} | {len(seconds)} | {_ms(p99(seconds))} | "
            f"{_ms(max(seconds, default=None))} | {slow} | {unanswered} |"
        )
    return lines


def render_summary(result: SoakResult) -> str:
    """The Markdown summary."""
    tally, settings, memory = result.tally, result.settings, result.tally.memory
    end = tally.death or f"alive at the end; exit status {result.server_exit} after SIGTERM"
    reasons = failures(result)
    kept = settings.server_log is not None or reasons  # `main` keeps the log of a failed soak
    log_where = str(result.log_path) if kept else "temporary; --server-log FILE keeps it"
    errors = [f"| {code} | {n} |" for code, n in sorted(tally.errors.items())]
    lines = [
        "# Soak",
        "",
        f"{settings.minutes:g} min of {settings.clients} mixed clients plus silent ones; "
        f"{result.seconds:.0f} s in all. Server: {end}.",
        "",
        "## Runs by kind",
        "",
        *_kinds_table(tally),
        "",
        "## Ok runs by engine",
        "",
        *_engines_table(tally, result.voices),
        "",
        "## Errors by code",
        "",
        *(["| code | events |", "|---|---:|", *errors] if errors else ["None."]),
        "",
        "## Describe latency (fresh connection each)",
        "",
        *_describe_table(tally),
        "",
        "## Server",
        "",
        f"- Memory (RSS, server and model workers): start {_mib(memory.start_bytes)} MiB, "
        f"peak {_mib(memory.peak_bytes)} MiB ({memory.peak_processes} processes), "
        f"end {_mib(memory.end_bytes)} MiB.",
        f"- Open connections at most (sampled with memory): {tally.connections.peak} "
        f"({', '.join(f'{n} {state}' for state, n in sorted(tally.connections.states.items()))})"
        f"; the monitor's own included.",
        f"- Silent clients (--client-timeout {settings.client_timeout:g} s) dropped after: "
        f"{', '.join(f'{s:.1f} s' for s in tally.silent_drop_s) or 'none'}; the log names "
        f"{result.log_drops} drop(s).",
        f"- Log ({log_where}): {result.log_warnings} WARNING, {result.log_errors} "
        f"ERROR/CRITICAL lines, {len(result.tracebacks)} traceback(s), "
        f"{result.worker_deaths} model worker death(s).",
    ]
    if tally.unexpected:
        lines += ["", f"## Unexpected results ({len(tally.unexpected)})", ""]
        lines += [f"- {problem}" for problem in tally.unexpected[:MAX_LISTED]]
    if result.tracebacks:
        lines += ["", f"## Tracebacks in the server log ({len(result.tracebacks)})", ""]
        for excerpt in result.tracebacks[:MAX_LISTED]:
            lines += ["```", excerpt, "```"]
    lines += ["", f"**{'FAIL: ' + '; '.join(reasons) if reasons else 'PASS'}**"]
    return "\n".join(lines) + "\n"


def result_json(result: SoakResult) -> dict[str, Any]:
    """Every number of the run, for `--json`."""
    tally, settings = result.tally, result.settings
    return {
        "passed": not failures(result),
        "failures": failures(result),
        "settings": {
            "minutes": settings.minutes,
            "clients": settings.clients,
            "seed": settings.seed,
            "server_args": list(settings.server_args),
            "client_timeout_s": settings.client_timeout,
        },
        "seconds": result.seconds,
        "voices": [vars(voice) for voice in result.voices],
        "runs": {
            kind: {
                "total": _kind_counts(tally, kind),
                "by_voice": {
                    voice.name: _kind_counts(tally, kind, voice.name)
                    for voice in result.voices
                    if kind in VOICE_KINDS
                },
            }
            for kind in KIND_MEANINGS
        },
        "errors": dict(tally.errors),
        "unexpected": tally.unexpected,
        "describe": {
            "monitor_s": tally.monitor_s,
            "monitor_unanswered": tally.monitor_unanswered,
            "monitor_p99_s": p99(tally.monitor_s),
            "monitor_worst_s": max(tally.monitor_s, default=None),
            "storm_s": tally.storm_s,
            "storm_unanswered": tally.storm_unanswered,
            "storm_p99_s": p99(tally.storm_s),
            "storm_worst_s": max(tally.storm_s, default=None),
        },
        "memory_bytes": vars(tally.memory),
        "connections_peak": vars(tally.connections),
        "silent_drop_s": tally.silent_drop_s,
        "server": {
            "died": tally.death,
            "exit_status": result.server_exit,
            "killed": result.server_killed,
            "log": str(result.log_path),
            "log_warnings": result.log_warnings,
            "log_errors": result.log_errors,
            "log_drops": result.log_drops,
            "worker_deaths": result.worker_deaths,
            "tracebacks": result.tracebacks,
        },
    }


def keep_log(log_path: Path) -> Path:
    """A copy of a temporary server log that outlives the run (to look into a failure)."""
    handle, kept = tempfile.mkstemp(prefix="wyoming-multitts-soak-", suffix=".log")
    os.close(handle)
    shutil.copyfile(log_path, kept)
    return Path(kept)


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    sys.exit(f"soak stopped by signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak; print the summary, write the JSON if asked; 0 when it passed."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = parse_settings(argv)
    # SIGTERM unwinds like an error, so the server is stopped too
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        with tempfile.TemporaryDirectory(prefix="wyoming-multitts-soak-") as work:
            result = run_soak(settings, Path(work))
            reasons = failures(result)
            if reasons and settings.server_log is None:
                result.log_path = keep_log(result.log_path)
    except (BenchError, CatalogError) as err:
        sys.exit(f"soak failed: {err}")
    print(render_summary(result), end="", flush=True)
    if settings.json_path:
        settings.json_path.write_text(
            json.dumps(result_json(result), indent=2) + "\n", encoding="utf-8"
        )
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main())
