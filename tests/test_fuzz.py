"""Fuzzing the live server: thousands of generated inputs over TCP, many connections at once.

Garbage bytes, headers with mutated fields, odd event sequences, and odd texts for the two cheap
tiny voices. The server must survive all of it, answer `describe` within Home Assistant's 1 s
throughout, refuse every malformed input with an `error` event or a close within 5 s, never log a
traceback, and still speak afterwards. The inputs come from a fixed seed: a failure names an input
that reproduces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import math
import random
import socket
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from wyoming.tts import Synthesize, SynthesizeVoice

from wyoming_multitts.handler import MAX_DATA_BYTES, MAX_HEADER_BYTES

from .conftest import RunningServer, read_until, start_server

SEED = 20_240_917
INPUTS = 5_000
CONCURRENCY = 16
"""Fuzzing connections open at once (the server allows 64)."""
SPEECH_LANES = 3
"""Of those, the ones for requests that synthesize (each model speaks one at a time)."""
HOST = "127.0.0.1"
REFUSAL_SECONDS = 5.0
"""A malformed input gets an `error` event or a close within this."""
IDLE_TIMEOUT = 2 * REFUSAL_SECONDS
"""The server's --idle-timeout: longer, so that its closing an idle connection is never taken
for the refusal of a malformed input."""
SERVER_ARGS = (
    *("--client-timeout", "5", "--idle-timeout", f"{IDLE_TIMEOUT:g}"),
    # long texts are refused before they reach a model, instead of taking minutes of 2 cores
    *("--max-speech-seconds", "20", "--max-pieces", "4"),
)
CHEAP_VOICES = ("tiny-tara", "tiny-oute3-en-male-1")
"""The only voices that really synthesize here (tiny Orpheus and OuteTTS 0.3)."""
WIRE_VERSION = "1.10.2"
"""The `version` the wyoming library puts in every header."""

REPLY_SECONDS = 15.0
"""A well-formed input without synthesis is answered within this (a hang otherwise)."""
SPEECH_SECONDS = 90.0
"""A request that synthesizes ends within this (several queue for one model on 2 cores)."""
MONITOR_INTERVAL = 0.25
"""Seconds between two `describe` probes of the monitor."""
MONITOR_TIMEOUT = 10.0
"""Seconds a probe waits before it counts as unanswered."""
MAX_DESCRIBE_SECONDS = 1.0
"""Home Assistant's timeout for `describe`."""
READ_LIMIT = 4 * MAX_DATA_BYTES
"""Longest reply header line the fuzzing client reads (the server's are short)."""
BARRIER_TEXT = "fuzz-barrier"
"""The `ping` text that follows well-formed inputs: its `pong` ends the exchange."""
SHOWN_FAILURES = 20
"""Failing inputs listed in the assertion message."""

DEEP = 60_000
"""Nesting depth of the deeply nested JSON (Python's recursion limit is 1,000)."""
HUGE_INT = "9" * 5_000
"""An integer over Python's 4,300-digit limit for converting decimal text."""
LONG_INT = "9" * 4_000
"""An integer under that limit."""
SHORT_TYPE, LONG_TYPE = 1_000, 60_000
"""Lengths of type strings that still fit in a header line."""
TOO_LONG_TYPE = MAX_HEADER_BYTES + 4_000
"""Length of a type string that does not."""
MAX_TEXT_CHARS = 20_000
"""The server's default --max-text-chars."""
GARBAGE_SIZES = (1, 16, 256, 4_096)
"""Upper bounds of garbage lengths (one picked at random, then a length up to it)."""
PLAIN_SHARE = 0.6
"""Share of synthesis requests that are a plain `synthesize` (the rest are streamed)."""
REPLACED_SHARE = 0.2
"""Share of synthesis requests that follow (and so replace) up to MAX_REPLACED others sent on
the same connection just before."""
MAX_REPLACED = 10
LEAVING_WEIGHTS = (2, 2, 1)
"""How often the client of a synthesis request leaves at once, after the first reply, or at
the end of the reply (only the last lets the model speak all of it)."""
LONG_TEXT_SHARE = 0.15
"""Share of synthesis requests with a long text (refused by the limits, after normalisation)."""

REFUSAL_CODES = frozenset(
    (
        "malformed-event",
        "event-too-large",
        "payload-not-accepted",
        "unexpected-event",
        "unknown-voice",
        "unknown-speaker",
        "unknown-language",
        "empty-text",
        "text-too-long",
        "speech-too-long",
        "too-many-pieces",
    )
)
"""The codes of the server's refusals of bad requests; any other error (an engine failing on a
text, `internal-error`) is a failure."""
QUIET_TYPES = ("describe", "ping", "select-program", "fuzz-unknown", "audio-stop")
"""Event types the server accepts without an error when well-formed: a missing refusal of a
mutated header then shows as a connection left open."""
IGNORED_TYPES = (
    "audio-start",
    "audio-stop",
    "error",
    "info",
    "pong",
    "synthesize-stopped",
    "transcribe",
    "run-pipeline",
    "SYNTHESIZE",
    "synthesize ",
    "",
    "\u00e9v\u00e9nement",
    "\U0001f600",
)
"""Event types the server does not handle (future events, events of other roles)."""
BAD_LENGTHS = (
    "-1",
    "-9223372036854775809",
    "18446744073709551616",
    str(MAX_DATA_BYTES + 1),
    "1.5",
    "1e3",
    "1e400",
    "0.0",
    "-0.0",
    "true",
    "false",
    '"12"',
    '""',
    "[]",
    "{}",
    "[1]",
    '{"n": 1}',
    "NaN",
    "Infinity",
    "-Infinity",
    HUGE_INT,
)
"""`data_length` / `payload_length` values that are not a non-negative integer in range."""
BAD_TYPES = (
    "1",
    "1.5",
    "null",
    "true",
    "false",
    "[]",
    '["describe"]',
    '{"describe": 1}',
    '"\\ud800"',
    '"describe\\udfff"',
    '"\\udc00\\ud800"',
    HUGE_INT,
)
"""`type` values that are not a string, or not valid Unicode."""
BAD_INLINE_DATA = ("[]", "0", '""', "false", "[1]", '"text"', "1", "true", "-0.5")
"""Header `data` values that are not an object."""
BAD_BLOCKS = (
    b"[]",
    b'"text"',
    b"1",
    b"null",
    b"true",
    b"{",
    b'{"text": }',
    b"{'text': 'hi'}",
    b'{"text": "hi",}',
    b"[" * DEEP,
    b"[" * DEEP + b"]" * DEEP,
    b'{"a":' * (DEEP // 6) + b"1" + b"}" * (DEEP // 6),
    b'{"n": ' + HUGE_INT.encode() + b"}",
    b'{"text": "\\ud800"}',
    b'{"text": "hi \\udfff there"}',
    b'{"voice": {"name": "tiny-tara\\ud800"}}',
    b'{"name": "\\udbff"}',
    b'{"\\ud800": 1}',
    b'{"text": "\xff\xfe"}',
    b'{"text": "\xc3\x28"}',
    b'{"text": "\xc0\xaf"}',
    b'{"text": "\xed\xa0\x80"}',
    b'{"text": "\xf4\x90\x80\x80"}',
)
"""Data blocks that are not a JSON object of valid Unicode."""
ODD_TEXTS = (
    "",
    " ",
    "?!...",
    "\U0001f642",
    "\U0001f600 hello \U0001f44b",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u4f60\u597d\uff0c\u4e16\u754c\u3002",
    "\u3053\u3093\u306b\u3061\u306f",
    "e\u0301\u0301\u0301 n\u0303",
    "Z\u0334\u0321a\u0336l\u0337g\u0338o",
    "# Title\n- item **bold** _it_ `code` [link](http://x.y)",
    "\x00",
    "a\x00b.",
    "\x07\x1b[31mred\x1b[0m",
    "\r\n\t\r\n",
    "\u200b\u200e\u202e\u2066",
    "$3.50, 12:30, 3rd, 50%, 1.2.3, -7",
    "<speak>Hi</speak>",
    "[laughs] hi <giggle>",
    "\ufeffHi",
    "\U0010ffff\U0001f600",
    "A" * 300,
    "Mr. Dr. e.g. i.e.",
    "...!!!???",
    "Hi.\n\nHo.",
    "\ud83d\ude00 ok",
)
"""Odd texts for real voices, short so that synthesis stays cheap."""
LONG_TEXTS = (
    "1" * MAX_TEXT_CHARS,
    "*a " * 6_000,
    "word " * (MAX_TEXT_CHARS // 5 + 1),
    "x" * (MAX_TEXT_CHARS + 1),
    "12:30 " * 3_000,
)
"""Long texts: refused by the limits (after normalisation for those within --max-text-chars)."""
WORDS = ("hello", "there", "general", "kenobi", "weather", "fine", "walk", "today")
"""Words for stream chunks that end no sentence (so no synthesis starts)."""


class Outcome(enum.Enum):
    """How an exchange ended."""

    ERROR = "error"  # an `error` event
    CLOSE = "close"  # the server closed (or reset) the connection
    ANSWER = "answer"  # a well-formed input got the reply it waited for
    LEFT = "left"  # the client left without reading
    HANG = "hang"  # nothing of the above within the case's time
    INVALID = "invalid"  # the server sent bytes that are not a Wyoming event
    UNREACHABLE = "unreachable"  # no connection: the server is gone or refuses


@dataclass(frozen=True)
class Case:
    """One generated input and what answers it."""

    name: str
    raw: bytes
    refuse: bool
    """Malformed: only an `error` event or a close may answer it."""
    until: str | None = ""
    """Well-formed: the reply type that ends the exchange ("" the first reply; `pong` is the
    barrier's; None: leave without reading)."""
    eof: bool = False
    """Half-close the connection after sending."""
    seconds: float = REFUSAL_SECONDS
    """How long the exchange may take."""
    speech: bool = False
    """May synthesize (runs in a lane of its own)."""

    def shown(self) -> str:
        """The input, short enough to read in a failure message."""
        raw = self.raw if len(self.raw) <= 200 else self.raw[:160] + b"..." + self.raw[-40:]
        return f"{self.name} ({len(self.raw)} bytes{', then EOF' if self.eof else ''}): {raw!r}"


@dataclass(frozen=True)
class Reply:
    """One event the server sent."""

    type: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Result:
    """A case, how it ended and when."""

    case: Case
    outcome: Outcome
    seconds: float
    detail: str
    """What went wrong, or the text of an `error` event."""
    code: str | None
    """The code of an `error` event."""


class InvalidReplyError(Exception):
    """The server sent bytes that are not a Wyoming event."""


# ---- encoding


def event(event_type: str, data: dict[str, Any] | None = None, ensure_ascii: bool = False) -> bytes:
    """An event as the wyoming library writes it: a header line, then the data as a block (a lone
    surrogate in `data` becomes an escape, or invalid UTF-8 without `ensure_ascii`)."""
    header: dict[str, Any] = {"type": event_type, "version": WIRE_VERSION}
    block = b""
    if data:
        block = json.dumps(data, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")
        header["data_length"] = len(block)
    return json.dumps(header).encode() + b"\n" + block


def raw_header(fields: dict[str, str]) -> bytes:
    """A header line from raw JSON values (so that invalid JSON can be written)."""
    body = ", ".join(f"{json.dumps(key)}: {value}" for key, value in fields.items())
    return ("{" + body + "}\n").encode("utf-8", "surrogatepass")


BARRIER = event("ping", {"text": BARRIER_TEXT})
STREAM_TOO_LONG = event("synthesize-chunk", {"text": "word " * (MAX_TEXT_CHARS // 20)}) * 5
"""Five chunks of a quarter of --max-text-chars each (no sentence end: nothing is spoken)."""
PAYLOAD_EVENT = raw_header({"type": '"audio-chunk"', "payload_length": "4"}) + b"\0\0\0\0"
"""Audio from the client: a text-to-speech server takes no payload."""


def refused(name: str, raw: bytes, eof: bool = False) -> Case:
    """A malformed input."""
    return Case(name, raw, refuse=True, eof=eof)


def answered(name: str, raw: bytes) -> Case:
    """A well-formed (or debatable) input that needs no synthesis, then the barrier ping."""
    return Case(name, raw + BARRIER, refuse=False, until="pong", seconds=REPLY_SECONDS)


def left(name: str, raw: bytes) -> Case:
    """A well-formed input whose client leaves without reading the replies."""
    return Case(name, raw, refuse=False, until=None, seconds=REPLY_SECONDS)


def spoken(name: str, raw: bytes, until: str | None) -> Case:
    """A request that may synthesize: the exchange ends at `until`."""
    return Case(name, raw, refuse=False, until=until, seconds=SPEECH_SECONDS, speech=True)


def quiet_event(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A well-formed event the server answers without an error (or ignores)."""
    event_type = rng.choice(QUIET_TYPES)
    if event_type == "ping":
        return event_type, {"text": rng.choice(WORDS)}
    if event_type == "select-program":
        return event_type, {"name": "multitts"}
    return event_type, {}


def words(rng: random.Random) -> str:
    """A few words that end no sentence."""
    return " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))


# ---- generators: each makes one case from the random source


def garbage(rng: random.Random) -> Case:
    """Random bytes, or JSON-like noise, ended by a newline or an EOF."""
    size = rng.randint(0, rng.choice(GARBAGE_SIZES))
    if rng.random() < 0.5:
        raw = rng.randbytes(size)
    else:
        raw = "".join(rng.choices('{}[]":, 0123456789.-eEtrufalsnNI\\u', k=size)).encode()
    if rng.random() < 0.5:
        return refused("garbage+EOF", raw, eof=True)
    return refused("garbage", raw + b"\n")


def bad_header(rng: random.Random) -> Case:
    """A malformed header or data block; nothing follows unless the input needs it."""
    event_type, data = quiet_event(rng)
    kind = json.dumps(event_type)
    block = json.dumps(data).encode()
    mutation = rng.randrange(12)
    if mutation == 0:
        key = rng.choice(("data_length", "payload_length"))
        return refused(f"bad {key}", raw_header({"type": kind, key: rng.choice(BAD_LENGTHS)}))
    if mutation == 1:
        return refused("bad type", raw_header({"type": rng.choice(BAD_TYPES)}))
    if mutation == 2:
        fields = {"data": json.dumps(data), "version": json.dumps(WIRE_VERSION)}
        return refused("no type", raw_header(fields))
    if mutation == 3:
        return refused(
            "bad inline data", raw_header({"type": kind, "data": rng.choice(BAD_INLINE_DATA)})
        )
    if mutation == 4:
        nested = rng.choice(("[" * DEEP, '{"a": ' * (DEEP // 6), f'{{"n": {HUGE_INT}}}'))
        return refused("bad inline data", raw_header({"type": kind, "data": nested}))
    if mutation == 5:
        bad = rng.choice(BAD_BLOCKS)
        return refused(
            "bad data block", raw_header({"type": kind, "data_length": str(len(bad))}) + bad
        )
    if mutation == 6:
        line = rng.choice(
            (
                b"[" * DEEP,
                b'{"type": ' * (DEEP // 9),
                b'["describe"]',
                b'"describe"',
                b"null",
                b"42",
                b'{"type": "describe", "type": 5}',
                b'{"type": "des\xffcribe"}',
                b'{"type": "describe", "data": {"text": "\xc3\x28"}}',
                b'{"\\ud800": "describe", "type": 1}',
                b'{"type": "' + b"x" * TOO_LONG_TYPE + b'"}',
            )
        )
        return refused("bad header line", line + b"\n")
    if mutation == 7:  # data_length says more than is sent: the EOF ends the wait
        header = raw_header({"type": kind, "data_length": str(len(block) + rng.randint(1, 9_999))})
        return refused("data_length over", header + block, eof=True)
    if mutation == 8:  # data_length says less: what it covers is not a whole object
        header = raw_header({"type": kind, "data_length": str(rng.randint(1, len(block) - 1))})
        return refused("data_length under", header + block)
    if mutation == 9:
        payload = rng.randbytes(rng.randint(1, 4_096))
        header = raw_header({"type": kind, "payload_length": str(len(payload))})
        return refused("payload", header + (payload if rng.random() < 0.5 else b""))
    if mutation == 10:
        header = event(event_type, data).split(b"\n")[0]
        return refused("no newline+EOF", header, eof=True)
    bad_text = rng.choice(("\ud800", "x\udfff", "\udc00\ud800"))
    bad_event = rng.choice(
        (
            ("synthesize", {"text": bad_text}),
            ("synthesize", {"text": "Hi.", "voice": {"name": bad_text}}),
            ("ping", {"text": bad_text}),
            ("select-program", {"name": bad_text}),
            ("describe", {bad_text: 1}),
        )
    )
    return refused("lone surrogate", event(*bad_event, ensure_ascii=rng.random() < 0.5))


def odd_header(rng: random.Random) -> Case:
    """A header that is odd but not malformed (or debatable), then the barrier."""
    event_type, data = quiet_event(rng)
    kind = json.dumps(event_type)
    mutation = rng.randrange(8)
    if mutation == 0:
        key = rng.choice(("data", "data_length", "payload_length"))
        value = "null" if key == "data" else rng.choice(("null", "0"))
        return answered(f"{key} {value}", raw_header({"type": kind, key: value}))
    if mutation == 1:
        fields = {"type": kind, "version": rng.choice(('"0"', "null", "[1]", LONG_INT)), "x": "{}"}
        return answered("extra header fields", raw_header(fields))
    if mutation == 2:
        length = rng.choice((0, 1, SHORT_TYPE, LONG_TYPE))
        return answered("long type", event(rng.choice("xyz") * length))
    if mutation == 3:
        return answered("ignored type", event(rng.choice(IGNORED_TYPES), {"text": words(rng)}))
    if mutation == 4:
        depth = rng.randint(1, 100)
        nested = {"text": "hi", "context": json.loads("[" * depth + "]" * depth)}
        return answered("nested data", event(event_type, {**data, **nested}))
    if mutation == 5:
        extra = rng.choice(("NaN", "Infinity", "-Infinity", LONG_INT, "1e400", '"\\ud83d\\ude00"'))
        block = f'{{"odd": {extra}}}'.encode()
        header = raw_header({"type": kind, "data_length": str(len(block))})
        return answered("odd data value", header + block)
    if mutation == 6:
        encoding = rng.choice(("utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"))
        return answered(f"{encoding} header", event(event_type).decode().encode(encoding))
    inline = raw_header({"type": kind, "data": json.dumps(data) if data else "{}"})
    return answered("inline data", inline)


def odd_sequence(rng: random.Random) -> Case:
    """Events in an order (or with data) the protocol does not expect, or mixed together."""
    voice = {"name": rng.choice(CHEAP_VOICES)}
    start = event("synthesize-start", {"voice": voice})
    chunk = event("synthesize-chunk", {"text": words(rng)})
    stop = event("synthesize-stop")
    quiet = [event(*quiet_event(rng)) for _ in range(rng.randint(0, 3))]
    bad_voice = rng.choice(
        (
            {"name": "nobody"},
            {"name": rng.choice(CHEAP_VOICES), "speaker": "zoe"},
            {"language": "xx"},
            {"name": 7},
            "tiny-tara",
            [],
            0,
            False,
        )
    )
    refusals = (
        ("chunk without start", [chunk]),
        ("stop without start", [stop]),
        ("chunk after stop", [start, stop, chunk]),
        ("stop twice", [start, stop, stop]),
        ("start, stop, no text", [start, stop]),
        ("start with bad voice", [event("synthesize-start", {"voice": bad_voice})]),
        ("synthesize with bad voice", [event("synthesize", {"text": "Hi.", "voice": bad_voice})]),
        (
            "chunk text not a string",
            [start, event("synthesize-chunk", {"text": rng.choice((5, None, []))})],
        ),
        (
            "synthesize text not a string",
            [event("synthesize", {"text": rng.choice((5, None, {}))})],
        ),
        ("ping text not a string", [event("ping", {"text": rng.choice((5, [], {}))})]),
        ("stream too long", [start, STREAM_TOO_LONG]),
        ("audio from the client", [PAYLOAD_EVENT]),
    )
    answers = (
        ("start twice", [start, start, chunk]),
        ("synthesize inside a stream", [start, chunk, event("synthesize", {"text": words(rng)})]),
        ("stream left open", [start, *[chunk] * rng.randint(1, 20)]),
        ("describe and ping", [event("describe"), event("ping"), event("describe")]),
        (
            "select-program",
            [event("select-program", {"name": rng.choice(("multitts", "", 5, None, "x" * 1_000))})],
        ),
        ("unknown events", [event(rng.choice(IGNORED_TYPES), {"x": 1}) for _ in range(3)]),
        ("flood", [event(rng.choice(("describe", "ping")))] * rng.randint(10, 100)),
    )
    if rng.random() < 0.5:
        name, events = rng.choice(refusals)
        return refused(name, b"".join(quiet + events))
    name, events = rng.choice(answers)
    mixed = list(events)
    for extra in quiet:
        mixed.insert(rng.randint(0, len(mixed)), extra)
    if rng.random() < 0.1:  # the server writes its replies to a connection already gone
        return left(f"{name}, client gone", b"".join(mixed))
    return answered(name, b"".join(mixed))


def odd_text(rng: random.Random) -> Case:
    """A real request for a cheap voice with an odd text, plain or streamed; the client leaves
    at once, after the first reply (both cancel the request) or at the end of the reply."""
    if rng.random() < LONG_TEXT_SHARE:
        text = rng.choice(LONG_TEXTS)
    else:
        text = "".join(rng.choices(ODD_TEXTS, k=rng.randint(1, 2)))
    voice = {"name": rng.choice(CHEAP_VOICES)}
    if rng.random() < PLAIN_SHARE:
        raw = event("synthesize", {"text": text, "voice": voice}, ensure_ascii=rng.random() < 0.5)
        name, last = "odd text", "audio-stop"
    else:
        cuts = sorted(rng.sample(range(len(text) + 1), k=min(len(text) + 1, rng.randint(1, 4))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        chunks = [event("synthesize-chunk", {"text": piece}) for piece in pieces]
        start = event("synthesize-start", {"voice": voice})
        raw = b"".join([start, *chunks, event("synthesize-stop")])
        name, last = "odd streamed text", "synthesize-stopped"
    if rng.random() < REPLACED_SHARE:
        earlier = event("synthesize", {"text": words(rng) + ".", "voice": voice})
        raw = earlier * rng.randint(1, MAX_REPLACED) + raw
        name += " replacing others"
    return spoken(name, raw, rng.choices((None, "", last), LEAVING_WEIGHTS)[0])


GENERATORS: tuple[tuple[Callable[[random.Random], Case], float], ...] = (
    (garbage, 20),
    (bad_header, 35),
    (odd_header, 15),
    (odd_sequence, 26),
    (odd_text, 1.5),
)
"""Each generator and its weight: synthesis (odd_text) stays a small minority."""


def generate(seed: int, count: int) -> list[Case]:
    """`count` cases, always the same for the same seed."""
    rng = random.Random(seed)
    makers, weights = zip(*GENERATORS)
    return [rng.choices(makers, weights)[0](rng) for _ in range(count)]


# ---- talking to the server


async def read_reply(reader: asyncio.StreamReader) -> Reply | None:
    """One event from the server, checked to be well-formed; None at a clean end of stream."""
    line = await reader.readline()
    if not line:
        return None
    try:
        header = json.loads(line)
        if not line.endswith(b"\n") or not isinstance(header.get("type"), str):
            raise ValueError("no newline or no string type")
        data: dict[str, Any] = header.get("data") or {}
        data_length, payload_length = header.get("data_length", 0), header.get("payload_length", 0)
        if data_length:
            data = {**data, **json.loads(await reader.readexactly(data_length))}
        if payload_length:
            await reader.readexactly(payload_length)
    except (ValueError, TypeError, AttributeError, asyncio.IncompleteReadError) as err:
        raise InvalidReplyError(f"{err!r} after header {line[:200]!r}") from err
    return Reply(header["type"], data)


def ends_exchange(case: Case, reply: Reply) -> bool:
    """Whether `reply` is the last one a well-formed case waits for."""
    if case.until == "pong":
        return reply.type == "pong" and reply.data.get("text") == BARRIER_TEXT
    return case.until in ("", reply.type)


async def talk(port: int, case: Case) -> tuple[Outcome, Reply | None]:
    """Send the case on a new connection and read until its exchange ends; the last reply."""
    reader, writer = await asyncio.open_connection(HOST, port, limit=READ_LIMIT)
    try:
        with contextlib.suppress(ConnectionError):  # the server may refuse before reading all
            writer.write(case.raw)
            await writer.drain()
            if case.eof:
                writer.write_eof()
        if case.until is None:
            return Outcome.LEFT, None
        while (reply := await read_reply(reader)) is not None:
            if reply.type == "error":
                return Outcome.ERROR, reply
            if not case.refuse and ends_exchange(case, reply):
                return Outcome.ANSWER, reply
        return Outcome.CLOSE, None
    except ConnectionError:
        return Outcome.CLOSE, None
    finally:
        writer.close()


async def exchange(port: int, case: Case) -> Result:
    """Run one case within its time."""
    started = time.monotonic()
    detail, code = "", None
    try:
        outcome, reply = await asyncio.wait_for(talk(port, case), case.seconds)
        if outcome is Outcome.ERROR and reply is not None:
            detail, code = str(reply.data.get("text"))[:200], reply.data.get("code")
    except asyncio.TimeoutError:
        outcome = Outcome.HANG
    except InvalidReplyError as err:
        outcome, detail = Outcome.INVALID, str(err)
    except OSError as err:  # raised by connecting only: talk() handles the rest
        outcome, detail = Outcome.UNREACHABLE, repr(err)
    return Result(case, outcome, time.monotonic() - started, detail, code)


async def fuzz(port: int, cases: list[Case]) -> list[Result]:
    """Run every case, CONCURRENCY connections at a time: SPEECH_LANES of them for the cases
    that synthesize, so that those waiting for a model do not hold up the others."""
    results: list[Result] = []

    async def lane(queue: Iterator[Case]) -> None:
        for case in queue:
            results.append(await exchange(port, case))

    speech = iter([case for case in cases if case.speech])
    rest = iter([case for case in cases if not case.speech])
    queues = [speech] * SPEECH_LANES + [rest] * (CONCURRENCY - SPEECH_LANES)
    await asyncio.gather(*(lane(queue) for queue in queues))
    return results


def failure(result: Result) -> str | None:
    """What is wrong with how a case ended, if anything."""
    if result.outcome in (Outcome.CLOSE, Outcome.ANSWER, Outcome.LEFT):
        return None
    if result.outcome is Outcome.ERROR and result.code in REFUSAL_CODES:
        return None
    code = f" {result.code}" if result.code else ""
    what = f"{result.outcome.value}{code} after {result.seconds:.2f} s"
    if result.outcome is Outcome.HANG and result.case.refuse:
        what = f"no error and no close within {result.case.seconds:g} s"
    detail = f" ({result.detail})" if result.detail else ""
    return f"{what}{detail}: {result.case.shown()}"


class DescribeMonitor:
    """Sends `describe` on a fresh connection every MONITOR_INTERVAL s, from a thread of its own
    (so the fuzzing client's own work does not count), and records how long each answer took."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.latencies: list[float] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        """Probe until stopped."""
        while not self._stopping.wait(MONITOR_INTERVAL):
            self.latencies.append(self._probe())

    def stop(self) -> None:
        """Make `run` return after the probe in progress."""
        self._stopping.set()

    def _probe(self) -> float:
        """Seconds until the whole `info` arrived (infinite when it did not)."""
        started = time.monotonic()
        try:
            with socket.create_connection((HOST, self.port), timeout=MONITOR_TIMEOUT) as sock:
                sock.sendall(event("describe"))
                stream = sock.makefile("rb")
                header = json.loads(stream.readline())
                data = stream.read(header.get("data_length", 0))
                if header.get("type") != "info" or "tts" not in json.loads(data):
                    return math.inf
        except (OSError, ValueError):
            return math.inf
        return time.monotonic() - started


async def speak(server: RunningServer) -> list[str]:
    """The reply types to a plain request for a cheap voice."""
    async with server.client() as client:
        request = Synthesize(text="Still here.", voice=SynthesizeVoice(CHEAP_VOICES[0]))
        await client.write_event(request.event())
        return [reply.type for reply in await read_until(client, "audio-stop")]


# ---- the test


@pytest.mark.slow
async def test_fuzzed_inputs_never_break_the_server(tiny_models: Path, tmp_path: Path) -> None:
    """INPUTS generated inputs, CONCURRENCY connections at a time, with `describe` monitored."""
    cases = generate(SEED, INPUTS)
    server = start_server(tiny_models / "voices.yaml", tmp_path, *SERVER_ARGS)
    try:
        monitor = DescribeMonitor(server.port)
        monitoring = asyncio.create_task(asyncio.to_thread(monitor.run))
        started = time.monotonic()
        try:
            results = await fuzz(server.port, cases)
        finally:
            monitor.stop()
            await monitoring
        seconds = time.monotonic() - started
        alive = server.process.poll() is None
        after = await speak(server) if alive else []
    finally:
        exit_code = server.stop()

    outcomes = Counter(result.outcome for result in results)
    failures = [text for result in results if (text := failure(result))]
    max_latency = max(monitor.latencies, default=math.inf)
    print(
        f"fuzz: {len(results)} inputs in {seconds:.1f} s: {outcomes[Outcome.ERROR]} errors, "
        f"{outcomes[Outcome.CLOSE]} closes, {outcomes[Outcome.ANSWER]} answers, "
        f"{outcomes[Outcome.LEFT]} left early, "
        f"{len(failures)} failures; max describe latency {max_latency:.3f} s "
        f"({len(monitor.latencies)} probes)",
        file=sys.stderr,
    )
    assert alive, f"the server died:\n{server.log()[-3000:]}"
    assert len(results) >= INPUTS
    assert not failures, f"{len(failures)} inputs failed, e.g.:\n" + "\n".join(
        list(dict.fromkeys(failures))[:SHOWN_FAILURES]
    )
    assert max_latency < MAX_DESCRIBE_SECONDS, sorted(monitor.latencies)[-10:]
    assert after[0] == "audio-start" and after[-1] == "audio-stop", after
    assert "Traceback" not in server.log(), server.log()[-5000:]
    assert exit_code == 0, f"the server did not stop cleanly:\n{server.log()[-3000:]}"
