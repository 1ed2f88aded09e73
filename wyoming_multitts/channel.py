"""What the server and a model's worker process say to each other, and how it is framed.

Each message is a small frozen dataclass, pickled and sent as a 4-byte big-endian length plus the
pickle over the worker's stdin (server → worker) and a private copy of its stdout (worker → server;
the worker points its own stdout at stderr so that nothing a C library prints can corrupt it).
Both ends are this package, so pickle is safe here; nothing from a client is ever unpickled.

One model load, then any number of requests, one at a time:

    server                               worker
    Load(model, hub, …)          →
                                 ←       Estimated(bytes)      files fetched, engine imported
    Proceed()                    →                             (after the registry made room)
                                 ←       Conversion(True) … Conversion(False)   only while
                                                                converting files (first load)
                                 ←       Loaded(rate, …)  or  Failed(None, …)
    Speak(id, pieces, voice, …)  →
    Taken(id, samples) …         →  ←    Audio(id, samples, piece) …  at most `max_ahead`
                                                                samples untaken
    Cancel(id)                   →
                                 ←       Finished(id, …)  or  Failed(id, …)

Closing the worker's stdin asks it to exit.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .catalog import ModelSpec
from .engines.base import VoiceSettings
from .hub import Hub

LENGTH = struct.Struct(">I")
"""Frame header: the pickle's length in bytes."""
MAX_FRAME_BYTES = 256 * 1024 * 1024
"""Largest frame either side accepts (a bad length means a broken worker, not a big message)."""


# ---- server → worker


@dataclass(frozen=True)
class Load:
    """Fetch the model's files, import its engine and report the memory it will need."""

    model: ModelSpec
    hub: Hub
    device: str
    """Catalog or `--device` device name (resolved inside the worker)."""
    threads: int
    where: str
    """Who asked, for error messages: "voice tara (model orpheus-3b)"."""
    memory_budget: int
    """The memory all models may take together: a model that cannot fit is not downloaded."""
    stats_file: Path | None = None
    """Where to append each text piece's `PieceStats` as a JSON line (`--stats-file`)."""


@dataclass(frozen=True)
class Proceed:
    """The registry made room for the model: load it."""


@dataclass(frozen=True)
class Speak:
    """Speak these pieces (already normalised and cut to the engine's length) in `voice`."""

    request_id: int
    pieces: tuple[str, ...]
    voice: VoiceSettings
    max_ahead_samples: int
    """Audio the worker may send beyond what the server reported `Taken` (backpressure)."""


@dataclass(frozen=True)
class Taken:
    """The client took this much more audio of request `request_id`."""

    request_id: int
    samples: int


@dataclass(frozen=True)
class Cancel:
    """Stop request `request_id` at the next token or frame."""

    request_id: int


# ---- worker → server


@dataclass(frozen=True)
class Estimated:
    """Memory the loaded model will take (the engine's estimate, before loading)."""

    bytes: int


@dataclass(frozen=True)
class Conversion:
    """A conversion of the model's files starts (`running`) or ends: the load's time limit
    does not count it (`--load-timeout`)."""

    running: bool


@dataclass(frozen=True)
class Loaded:
    """The model is loaded and ready for requests."""

    sample_rate: int
    max_text_chars: int
    device: str
    gpu_bytes: int
    """GPU memory the worker holds as far as its runtimes report it (0 on the CPU)."""


@dataclass(frozen=True)
class Audio:
    """Float32 mono samples of request `request_id`, in order."""

    request_id: int
    samples: np.ndarray
    piece: int = 0
    """Which of `Speak.pieces` they are of (the server holds a slow model's audio per piece)."""


@dataclass(frozen=True)
class Finished:
    """Request `request_id` has stopped inside the worker (done or cancelled)."""

    request_id: int
    cancelled: bool
    gpu_bytes: int


@dataclass(frozen=True)
class Failed:
    """A load (`request_id` None) or a request failed; `code` is the `error` event's code."""

    request_id: int | None
    code: str
    message: str


def encode(message: object) -> bytes:
    """One frame: length, then the pickle."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return LENGTH.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    """The body length of a frame header; ValueError for a length no frame has."""
    (length,) = LENGTH.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {length} bytes (limit {MAX_FRAME_BYTES})")
    return int(length)


def decode(body: bytes) -> object:
    """The message of a frame body."""
    return pickle.loads(body)


def read_blocking(stream: BinaryIO) -> object | None:
    """The next message from a blocking stream; None at end of stream."""
    header = stream.read(LENGTH.size)
    if len(header) < LENGTH.size:
        return None
    length = frame_length(header)
    body = stream.read(length)
    if len(body) < length:
        return None
    return decode(body)
