"""The Wyoming event handler: one per connection.

- `describe` → `info` (from the catalog in force, never waiting on a model: a voice added while
  the server runs shows at once, `live_catalog.py`);
- `synthesize` → exactly one `audio-start`, the chunks of every text piece, one `audio-stop`;
- `synthesize-start/-chunk/-stop` → one audio cycle per finished sentence while text still arrives,
  then `synthesize-stopped` (the compatibility `synthesize` inside a stream is not spoken twice);
- bad input → an `error` event naming what is wrong, then the connection closes (Home Assistant
  ignores `error` and would otherwise wait);
- synthesis runs in a task so this connection keeps reading: a client that disconnects (or sends a
  new request) cancels its synthesis within one generated token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
)

from . import __version__
from .audio import PCM_CHANNELS, PCM_WIDTH
from .catalog import Catalog, VoiceSpec
from .engines.base import VoiceSettings
from .errors import InternalError, VoiceError, for_client
from .info import build_info
from .live_catalog import LiveCatalog
from .registry import ModelRegistry
from .speech import (
    RequestError,
    Speech,
    SpeechSettings,
    nothing_to_say,
    voice_settings,
)
from .text import TextFrontEnd, TextPolicy, spoken_sentences

_LOGGER = logging.getLogger(__name__)

WARNINGS_PER_MINUTE = 5
"""WARNING lines about one client address in a minute (`ClientWarnings`)."""
MAX_CLIENTS_TRACKED = 1024
"""Addresses remembered before those of past minutes are forgotten."""

MAX_HEADER_BYTES = 64 * 1024
"""Longest event header line we read (asyncio's default stream limit)."""
MAX_DATA_BYTES = 1024 * 1024
"""Largest event data block accepted; text beyond `--max-text-chars` is refused anyway."""


@dataclass(frozen=True)
class HandlerSettings(SpeechSettings):
    """What the handler needs from the command line: a request's bounds (`SpeechSettings`) and
    the connection's (every bound: docs/process-model.md)."""

    streaming: bool = True
    """Speak each sentence of a streamed text as it completes (False: once, at the end)."""
    client_timeout: float = 60.0
    """Drop a client that takes none of its audio for this many seconds (frees its model)."""
    idle_timeout: float = 120.0
    """Close a connection that sends nothing and has nothing in progress for this long."""


class ClientStalledError(ConnectionError):
    """The client took nothing for `client_timeout` seconds."""


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """Read one event; None at end of stream, `RequestError` for anything malformed.

    `wyoming.event.async_read_event` turns malformed input into None, which looks like a clean
    disconnect; Home Assistant users deserve an `error` event saying what was wrong instead.
    """
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as err:
        if not err.partial.strip():
            return None
        raise RequestError("event header ends without a newline", "malformed-event") from err
    except asyncio.LimitOverrunError as err:
        raise RequestError(
            f"event header longer than {MAX_HEADER_BYTES} bytes", "event-too-large"
        ) from err
    header = _parse_json(line, "event header")
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise RequestError("event header needs a string 'type'", "malformed-event")
    data = header.get("data")
    data = {} if data is None else data
    data_length = _length(header, "data_length", MAX_DATA_BYTES)
    if data_length:
        extra = _parse_json(await reader.readexactly(data_length), "event data")
        if not isinstance(extra, dict) or not isinstance(data, dict):
            raise RequestError("event data must be a JSON object", "malformed-event")
        data = {**data, **extra}
    if not isinstance(data, dict):
        raise RequestError("event data must be a JSON object", "malformed-event")
    if _length(header, "payload_length", None):
        raise RequestError(
            f"event {header['type'][:40]!r} carries a payload; a text-to-speech server takes none",
            "payload-not-accepted",
        )
    return Event(type=header["type"], data=data)


def _parse_json(raw: bytes, what: str) -> Any:
    """JSON that can be handled and echoed safely: no syntax error, no nesting deeper than
    Python's recursion limit, no integer too long to convert, no lone surrogate."""
    try:
        value = json.loads(raw)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except RecursionError as err:
        raise RequestError(f"{what} is nested too deeply", "malformed-event") from err
    except UnicodeEncodeError as err:
        raise RequestError(
            f"{what} has invalid Unicode (a lone surrogate escape)", "malformed-event"
        ) from err
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, integer too long
        raise RequestError(
            f"{what} is not valid JSON: {str(err)[:200]}", "malformed-event"
        ) from err
    return value


def _length(header: dict[str, Any], key: str, limit: int | None) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RequestError(f"event {key} must be a non-negative integer", "malformed-event")
    if limit is not None and value > limit:
        raise RequestError(f"event {key} {value} is over the limit of {limit}", "event-too-large")
    return value


class SynthesisHandler(AsyncEventHandler):
    """Serves one Wyoming connection."""

    def __init__(
        self,
        catalog: LiveCatalog,
        registry: ModelRegistry,
        settings: HandlerSettings,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._catalog = catalog
        self._registry = registry
        self._settings = settings
        self._speech = Speech(catalog, registry, settings)
        self._task: asyncio.Task[None] | None = None
        self._stream: _TextStream | None = None
        self._last_activity = time.monotonic()

    # ---- connection

    async def run(self) -> None:
        """Read events until the client leaves or idles, then cancel whatever it asked for."""
        self._is_running = True
        pending: asyncio.Task[Event | None] | None = None
        try:
            while self._is_running:
                if pending is None:
                    pending = asyncio.create_task(read_event(self.reader))
                if not await self._wait_for_client(pending):
                    _LOGGER.info(
                        "Closing a connection idle for %g s (--idle-timeout)",
                        self._settings.idle_timeout,
                    )
                    break
                try:
                    event = pending.result()
                except RequestError as err:
                    await self._send_error(err)
                    break
                pending = None
                self._last_activity = time.monotonic()
                if event is None or not await self.handle_event(event):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client vanished mid-event
        finally:
            if pending is not None:
                pending.cancel()
            await self._cancel_synthesis()
            self.writer.close()

    def _busy(self) -> bool:
        """Whether a request is being spoken (a stream that has spoken all its text so far and
        waits for more is not: a client that opens streams and sends nothing is idle)."""
        speaking = self._task is not None and not self._task.done()
        return speaking and not (self._stream is not None and self._stream.waiting_for_text)

    def idle_seconds(self) -> float:
        """How long the connection has received nothing and had nothing to speak (0: busy)."""
        return 0.0 if self._busy() else time.monotonic() - self._last_activity

    async def _wait_for_client(self, pending: asyncio.Task[Event | None]) -> bool:
        """Wait for the next event; False once the connection has been idle too long (nothing
        received and nothing in progress for `idle_timeout` seconds)."""
        while True:
            busy = self._busy()
            if busy:
                self._last_activity = time.monotonic()
            left = self._last_activity + self._settings.idle_timeout - time.monotonic()
            if left <= 0:
                return False
            done, _ = await asyncio.wait({pending}, timeout=min(left, 1.0) if busy else left)
            if done:
                return True

    async def write_event(self, event: Event) -> None:
        """Send an event; `ClientStalledError` when the client takes nothing for
        `client_timeout` seconds (what waits in the socket buffer stays bounded by it)."""
        try:
            await asyncio.wait_for(
                async_write_event(event, self.writer), self._settings.client_timeout
            )
        except asyncio.TimeoutError:
            raise ClientStalledError(
                f"the client took nothing for {self._settings.client_timeout:g} s"
            ) from None

    async def finish(self, grace: float) -> None:
        """The server is stopping: let the request in progress end within `grace` seconds,
        then close the connection (which cancels what is left of it)."""
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=grace)  # never raises: it only waits
        await self.stop()

    async def handle_event(self, event: Event) -> bool:
        """Dispatch one event; False closes the connection."""
        try:
            return await self._dispatch(event)
        except RequestError as err:
            await self._send_error(err)
            return False

    async def _dispatch(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            info = build_info(self._catalog.current, self._settings.streaming, __version__)
            await self.write_event(info.event())
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=_optional_str(event.data, "text")).event())
        elif Synthesize.is_type(event.type):
            text = _text(event.data)
            if self._stream is not None:
                return True  # the compatibility copy of a streamed text: already being spoken
            spec, voice = self._request(event.data.get("voice"))
            self._speech.check_text(text)
            await self._start(self._speech.speak_once(spec, voice, text, self))
        elif SynthesizeStart.is_type(event.type):
            spec, voice = self._request(event.data.get("voice"))
            self._stream = _TextStream(
                self._speech.text_policy(spec),
                self._settings.streaming,
                self._speech.starts_on_a_clause(spec),
            )
            await self._start(self._speak_stream(spec, voice, self._stream))
        elif SynthesizeChunk.is_type(event.type):
            stream = self._expect_stream(event.type)
            text = _text(event.data)
            if stream.total_chars + len(text) > self._settings.max_text_chars:
                raise self._speech.too_long()
            await stream.add(text)
        elif SynthesizeStop.is_type(event.type):
            await self._expect_stream(event.type).finish()
            self._stream = None
        else:
            _LOGGER.debug("Ignoring event %s", event.type[:40])  # select-program, future events
        return True

    def _expect_stream(self, event_type: str) -> "_TextStream":
        if self._stream is None:
            raise RequestError(f"{event_type} without synthesize-start", "unexpected-event")
        return self._stream

    # ---- validation

    def _request(self, voice: Any) -> tuple[VoiceSpec, VoiceSettings]:
        """The catalog voice a request names, and the voice the engine speaks in: looked up
        once, in the catalog in force, and kept to the request's end whatever changes."""
        catalog = self._catalog.current
        if voice is None or voice == {}:
            spec = catalog.default_voice
            return spec, voice_settings(spec, spec.speaker)
        if not isinstance(voice, dict):
            raise RequestError("'voice' must be an object with 'name'", "malformed-event")
        name = _optional_str(voice, "name")
        speaker = _optional_str(voice, "speaker")
        language = _optional_str(voice, "language")
        if name is None:
            spec = _voice_for_language(catalog, language)
        elif name in catalog.voices:
            spec = catalog.voices[name]
        else:  # no list: there are over 100 voices, and Home Assistant shows this line
            raise RequestError(
                f"unknown voice {name[:80]!r}: pick one of this server's voices in Home "
                "Assistant's voice picker (they are in its describe answer)",
                "unknown-voice",
            )
        if speaker is not None and speaker != spec.speaker and speaker not in spec.speakers:
            offered = ", ".join(spec.speakers or ((spec.speaker,) if spec.speaker else ()))
            raise RequestError(
                f"voice {spec.name} has no speaker {speaker[:80]!r} "
                f"(speakers: {offered or 'none'})",
                "unknown-speaker",
            )
        return spec, voice_settings(spec, speaker or spec.speaker)

    # ---- synthesis

    async def _start(self, work: Awaitable[None]) -> None:
        """Run `work` as this connection's synthesis, cancelling any earlier one first."""
        await self._cancel_synthesis()
        self._task = asyncio.create_task(self._guard(work))

    async def _guard(self, work: Awaitable[None]) -> None:
        """Turn a failure of the synthesis into an `error` event and close the connection."""
        try:
            await work
            return
        except ClientStalledError as err:
            self._drop(err)
            return
        except ConnectionError:
            return  # the client left; nothing to tell
        except RequestError as err:
            await self._send_error(err)
        except VoiceError as err:
            await self._send_error(RequestError(str(err), err.code))
        except Exception as err:  # a bug: still tell the client and keep serving the others
            _LOGGER.exception("Unexpected error during synthesis")
            text = f"internal error ({type(err).__name__}); the server log has the details"
            await self._send_error(RequestError(text, InternalError.code))
        await self.stop()

    async def _cancel_synthesis(self) -> None:
        if self._task is not None and not self._task.done():
            _LOGGER.info("Synthesis cancelled (client left or sent a new request)")
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def _speak_stream(
        self, spec: VoiceSpec, voice: VoiceSettings, stream: "_TextStream"
    ) -> None:
        """A streamed request: one audio cycle per sentence as sentences complete."""
        voice = await self._speech.with_reference(spec, voice)
        bounds = self._speech.bounds()
        spoken_anything = False
        async for sentences in stream.cycles():
            await self._speech.speak_cycle(spec, voice, sentences, bounds, self)
            spoken_anything = True
        if not spoken_anything:
            raise nothing_to_say(stream.text)
        await self.write_event(SynthesizeStopped().event())

    # ---- the audio sink of `Speech`: Wyoming events

    async def audio_start(self, rate: int) -> None:
        await self.write_event(
            AudioStart(rate=rate, width=PCM_WIDTH, channels=PCM_CHANNELS).event()
        )

    async def audio_chunk(self, rate: int, pcm: bytes) -> None:
        event = AudioChunk(rate=rate, width=PCM_WIDTH, channels=PCM_CHANNELS, audio=pcm)
        await self.write_event(event.event())

    async def audio_stop(self) -> None:
        await self.write_event(AudioStop().event())

    def _drop(self, stalled: ClientStalledError) -> None:
        CLIENT_WARNINGS.warn(self.writer, "Dropping a client: %s (--client-timeout)", stalled)
        self.writer.transport.abort()  # frees what waits in the socket buffer

    async def _send_error(self, err: RequestError) -> None:
        CLIENT_WARNINGS.warn(self.writer, "Refusing request: %s", err)
        try:
            await self.write_event(Error(text=for_client(str(err)), code=err.code).event())
        except ClientStalledError as stalled:  # a closed writer would wait for it forever
            self._drop(stalled)
        except (ConnectionError, RuntimeError):
            pass


class ClientWarnings:
    """WARNING log lines about clients, at most `WARNINGS_PER_MINUTE` per client address a
    minute; the rest go to DEBUG, and the next minute's first line says how many did. A client
    that sends bad requests in a loop cannot flood the log (or the add-on's log view)."""

    def __init__(self) -> None:
        self._minutes: dict[str, tuple[float, int]] = {}
        """By address: when its minute began, and its lines in that minute."""

    def warn(self, writer: asyncio.StreamWriter, message: str, *args: object) -> None:
        """Log `message % args` about the client on `writer`."""
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) else "local"
        now = time.monotonic()
        began, lines = self._minutes.get(address, (now, 0))
        if now - began >= 60:
            if lines > WARNINGS_PER_MINUTE:
                _LOGGER.warning(
                    "%d more warnings about client %s went to the debug log in a minute",
                    lines - WARNINGS_PER_MINUTE,
                    address,
                )
            began, lines = now, 0
        if len(self._minutes) >= MAX_CLIENTS_TRACKED:
            self._minutes = {a: m for a, m in self._minutes.items() if now - m[0] < 60}
        self._minutes[address] = (began, lines + 1)
        level = logging.WARNING if lines < WARNINGS_PER_MINUTE else logging.DEBUG
        _LOGGER.log(level, message, *args)


CLIENT_WARNINGS = ClientWarnings()
"""One for the whole server: the handler's refusals and the listener's."""


class _TextStream:
    """Text arriving in `synthesize-chunk`s, handed out as spoken sentences: each as it
    completes (one audio cycle each), or all of them at the end (one cycle, without
    `--streaming`). The text front end runs in a thread: a long chunk never holds the loop."""

    def __init__(self, policy: TextPolicy, split_sentences: bool, first_clause: bool) -> None:
        self._policy = policy
        self._first_clause = first_clause
        self._front_end = TextFrontEnd(policy, first_clause) if split_sentences else None
        self._queue: asyncio.Queue[list[str] | None] = asyncio.Queue()
        self._parts: list[str] = []
        self.total_chars = 0
        self.waiting_for_text = False
        """Everything received is spoken and more text is awaited: the connection is idle."""

    @property
    def text(self) -> str:
        """Everything received so far."""
        return "".join(self._parts)

    async def add(self, chunk: str) -> None:
        self._parts.append(chunk)
        self.total_chars += len(chunk)
        if self._front_end is not None and chunk:
            for sentence in await asyncio.to_thread(self._front_end.add, chunk):
                self._queue.put_nowait([sentence])

    async def finish(self) -> None:
        if self._front_end is not None:
            for sentence in await asyncio.to_thread(self._front_end.finish):
                self._queue.put_nowait([sentence])
        else:
            sentences = await asyncio.to_thread(
                spoken_sentences, self.text, self._policy, self._first_clause
            )
            if sentences:
                self._queue.put_nowait(sentences)
        self._queue.put_nowait(None)

    async def cycles(self) -> AsyncIterator[list[str]]:
        """The sentences of each audio cycle, in order, until the text ends."""
        while True:
            self.waiting_for_text = self._queue.empty()
            sentences = await self._queue.get()
            self.waiting_for_text = False
            if sentences is None:
                return
            yield sentences


def _voice_for_language(catalog: Catalog, language: str | None) -> VoiceSpec:
    """The first voice of `catalog` that speaks `language` (the default voice for None)."""
    if language is None:
        return catalog.default_voice
    for spec in catalog.voices.values():
        if any(lang.split("-")[0] == language.split("-")[0] for lang in spec.languages):
            return spec
    raise RequestError(f"no voice speaks language {language[:40]!r}", "unknown-language")


def _text(data: dict[str, Any]) -> str:
    text = data.get("text")
    if not isinstance(text, str):
        raise RequestError("'text' must be a string", "malformed-event")
    return text


def _optional_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise RequestError(f"'{key}' must be a string", "malformed-event")
    return value
