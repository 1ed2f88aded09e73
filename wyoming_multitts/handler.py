"""The Wyoming event handler: one per connection.

- `describe` → `info` (from the catalog, never waiting on a model);
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
import threading
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable

import numpy as np
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
)

from .audio import PCM_CHANNELS, PCM_WIDTH, PcmChunker, to_pcm16
from .catalog import Catalog, VoiceSpec
from .engines.base import Engine, ReferenceAudio, VoiceSettings
from .errors import VoiceError
from .registry import ModelRegistry
from .text import SentenceSplitter, is_speakable, text_pieces

_LOGGER = logging.getLogger(__name__)

MAX_HEADER_BYTES = 64 * 1024
"""Longest event header line we read (asyncio's default stream limit)."""
MAX_DATA_BYTES = 1024 * 1024
"""Largest event data block accepted; text beyond `--max-text-chars` is refused anyway."""
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
"""Largest payload accepted (a TTS server receives none; bounded so a bad length can't stall us)."""


class RequestError(ValueError):
    """The client's request is wrong; the text goes back in an `error` event."""

    def __init__(self, text: str, code: str) -> None:
        super().__init__(text)
        self.code = code


@dataclass(frozen=True)
class HandlerSettings:
    """What the handler needs from the command line."""

    samples_per_chunk: int = 1024
    """Samples per `audio-chunk` (wyoming-piper's default)."""
    streaming: bool = True
    """Speak each sentence of a streamed text as it completes (False: once, at the end)."""
    max_text_chars: int = 20_000
    """Longest text one request may carry (plain or streamed in total)."""


@dataclass
class _Request:
    """A validated request: who speaks and in which language."""

    voice: VoiceSpec
    speaker: str | None

    def settings(self, reference: ReferenceAudio | None = None) -> VoiceSettings:
        return VoiceSettings(
            name=self.voice.name,
            speaker=self.speaker,
            language=self.voice.languages[0],
            options=self.voice.options,
            reference=reference,
        )


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
    try:
        header = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RequestError(f"event header is not JSON: {err}", "malformed-event") from err
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise RequestError("event header needs a string 'type'", "malformed-event")
    data = header.get("data") or {}
    data_length = _length(header, "data_length", MAX_DATA_BYTES)
    if data_length:
        try:
            extra = json.loads(await reader.readexactly(data_length))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise RequestError(f"event data is not JSON: {err}", "malformed-event") from err
        if not isinstance(extra, dict) or not isinstance(data, dict):
            raise RequestError("event data must be a JSON object", "malformed-event")
        data = {**data, **extra}
    if not isinstance(data, dict):
        raise RequestError("event data must be a JSON object", "malformed-event")
    payload_length = _length(header, "payload_length", MAX_PAYLOAD_BYTES)
    payload = await reader.readexactly(payload_length) if payload_length else None
    return Event(type=header["type"], data=data, payload=payload)


def _length(header: dict[str, Any], key: str, limit: int) -> int:
    value = header.get(key) or 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RequestError(f"event {key} must be a non-negative integer", "malformed-event")
    if value > limit:
        raise RequestError(f"event {key} {value} is over the limit of {limit}", "event-too-large")
    return value


class SynthesisHandler(AsyncEventHandler):
    """Serves one Wyoming connection."""

    def __init__(
        self,
        info: Info,
        catalog: Catalog,
        registry: ModelRegistry,
        settings: HandlerSettings,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._info_event = info.event()
        self._catalog = catalog
        self._registry = registry
        self._settings = settings
        self._task: asyncio.Task[None] | None = None
        self._cancel = threading.Event()
        self._stream: _TextStream | None = None

    # ---- connection

    async def run(self) -> None:
        """Read events until the client leaves, then cancel whatever it asked for."""
        self._is_running = True
        try:
            while self._is_running:
                try:
                    event = await read_event(self.reader)
                except RequestError as err:
                    await self._send_error(err)
                    break
                if event is None or not await self.handle_event(event):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client vanished mid-event
        finally:
            await self._cancel_synthesis()
            self.writer.close()

    async def handle_event(self, event: Event) -> bool:
        """Dispatch one event; False closes the connection."""
        try:
            return await self._dispatch(event)
        except RequestError as err:
            await self._send_error(err)
            return False

    async def _dispatch(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(self._info_event)
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=_optional_str(event.data, "text")).event())
        elif Synthesize.is_type(event.type):
            if self._stream is not None:
                return True  # the compatibility copy of a streamed text: already being spoken
            text = _text(event.data)
            request = self._request(event.data.get("voice"))
            self._check_text(text)
            await self._start(self._speak_once(request, text))
        elif SynthesizeStart.is_type(event.type):
            request = self._request(event.data.get("voice"))
            self._stream = _TextStream(self._settings.streaming)
            await self._start(self._speak_stream(request, self._stream))
        elif SynthesizeChunk.is_type(event.type):
            stream = self._expect_stream(event.type)
            stream.add(_text(event.data))
            if stream.total_chars > self._settings.max_text_chars:
                raise self._too_long()
        elif SynthesizeStop.is_type(event.type):
            self._expect_stream(event.type).finish()
            self._stream = None
        else:
            _LOGGER.debug("Ignoring event %s", event.type)  # select-program, future events
        return True

    def _expect_stream(self, event_type: str) -> "_TextStream":
        if self._stream is None:
            raise RequestError(f"{event_type} without synthesize-start", "unexpected-event")
        return self._stream

    # ---- validation

    def _request(self, voice: Any) -> _Request:
        if voice is None or voice == {}:
            return _Request(self._catalog.default_voice, self._catalog.default_voice.speaker)
        if not isinstance(voice, dict):
            raise RequestError("'voice' must be an object with 'name'", "malformed-event")
        name = _optional_str(voice, "name")
        speaker = _optional_str(voice, "speaker")
        language = _optional_str(voice, "language")
        if name is None:
            spec = self._voice_for_language(language)
        elif name in self._catalog.voices:
            spec = self._catalog.voices[name]
        else:
            known = ", ".join(self._catalog.voices)
            raise RequestError(f"unknown voice {name!r} (voices: {known})", "unknown-voice")
        if speaker is not None and speaker != spec.speaker and speaker not in spec.speakers:
            offered = ", ".join(spec.speakers or ((spec.speaker,) if spec.speaker else ()))
            raise RequestError(
                f"voice {spec.name} has no speaker {speaker!r} (speakers: {offered or 'none'})",
                "unknown-speaker",
            )
        return _Request(spec, speaker or spec.speaker)

    def _voice_for_language(self, language: str | None) -> VoiceSpec:
        if language is None:
            return self._catalog.default_voice
        for spec in self._catalog.voices.values():
            if any(lang.split("-")[0] == language.split("-")[0] for lang in spec.languages):
                return spec
        raise RequestError(f"no voice speaks language {language!r}", "unknown-language")

    def _check_text(self, text: str) -> None:
        if len(text) > self._settings.max_text_chars:
            raise self._too_long()
        if not is_speakable(text):
            raise RequestError(
                f"nothing to speak in {text[:40]!r}: the text is empty or only symbols",
                "empty-text",
            )

    def _too_long(self) -> RequestError:
        return RequestError(
            f"text longer than {self._settings.max_text_chars} characters (--max-text-chars)",
            "text-too-long",
        )

    # ---- synthesis

    async def _start(self, work: Awaitable[None]) -> None:
        """Run `work` as this connection's synthesis, cancelling any earlier one first."""
        await self._cancel_synthesis()
        self._cancel = threading.Event()
        self._task = asyncio.create_task(self._guard(work))

    async def _guard(self, work: Awaitable[None]) -> None:
        """Turn a failure of the synthesis into an `error` event and close the connection."""
        try:
            await work
            return
        except ConnectionError:
            return  # the client left; nothing to tell
        except RequestError as err:
            await self._send_error(err)
        except VoiceError as err:
            await self._send_error(RequestError(str(err), type(err).__name__))
        except Exception as err:  # a bug: still tell the client and keep serving the others
            _LOGGER.exception("Unexpected error during synthesis")
            await self._send_error(RequestError(f"internal error: {err}", type(err).__name__))
        await self.stop()

    async def _cancel_synthesis(self) -> None:
        self._cancel.set()
        if self._task is not None and not self._task.done():
            _LOGGER.info("Synthesis cancelled (client left or sent a new request)")
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def _speak_once(self, request: _Request, text: str) -> None:
        """A plain `synthesize`: every piece of the text in one audio cycle."""
        await self._speak_cycle(request, text, final_event=None)

    async def _speak_stream(self, request: _Request, stream: "_TextStream") -> None:
        """A streamed request: one audio cycle per sentence as sentences complete."""
        spoken_anything = False
        async for sentence in stream.sentences():
            if is_speakable(sentence):
                await self._speak_cycle(request, sentence, final_event=None)
                spoken_anything = True
        if not spoken_anything:
            self._check_text(stream.text)
        await self.write_event(SynthesizeStopped().event())

    async def _speak_cycle(self, request: _Request, text: str, final_event: Event | None) -> None:
        """`audio-start`, chunks of all pieces of `text`, `audio-stop`."""
        voice = request.settings(await self._registry.reference_audio(request.voice))
        started = time.monotonic()
        audio_samples = 0
        chunker = PcmChunker(self._settings.samples_per_chunk)
        async with self._registry.acquire(request.voice.model, voice.name) as engine:
            rate = engine.sample_rate
            await self.write_event(
                AudioStart(rate=rate, width=PCM_WIDTH, channels=PCM_CHANNELS).event()
            )
            async for piece in _run_engine(engine, text, voice, self._cancel):
                audio_samples += piece.size
                for chunk in chunker.add(to_pcm16(piece)):
                    await self._write_chunk(rate, chunk)
        tail = chunker.flush()
        if tail:
            await self._write_chunk(rate, tail)
        await self.write_event(AudioStop().event())
        elapsed = time.monotonic() - started
        _LOGGER.info(
            "Spoke %.2f s of audio for voice %s in %.2f s (%d characters)",
            audio_samples / rate,
            voice.name,
            elapsed,
            len(text),
        )

    async def _write_chunk(self, rate: int, pcm: bytes) -> None:
        await self.write_event(
            AudioChunk(rate=rate, width=PCM_WIDTH, channels=PCM_CHANNELS, audio=pcm).event()
        )

    async def _send_error(self, err: RequestError) -> None:
        _LOGGER.warning("Refusing request: %s", err)
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.write_event(Error(text=str(err), code=err.code).event())


class _TextStream:
    """Text arriving in `synthesize-chunk`s, handed out as sentences complete."""

    def __init__(self, split_sentences: bool) -> None:
        self._split = split_sentences
        self._splitter = SentenceSplitter()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._parts: list[str] = []
        self.total_chars = 0

    @property
    def text(self) -> str:
        """Everything received so far."""
        return "".join(self._parts)

    def add(self, chunk: str) -> None:
        self._parts.append(chunk)
        self.total_chars += len(chunk)
        if self._split:
            for sentence in self._splitter.add(chunk):
                self._queue.put_nowait(sentence)

    def finish(self) -> None:
        rest = self._splitter.finish() if self._split else [self.text]
        for sentence in rest:
            self._queue.put_nowait(sentence)
        self._queue.put_nowait(None)

    async def sentences(self) -> AsyncIterator[str]:
        while (sentence := await self._queue.get()) is not None:
            yield sentence


_DONE = object()


async def _run_engine(
    engine: Engine, text: str, voice: VoiceSettings, cancel: threading.Event
) -> AsyncIterator[np.ndarray]:
    """Run the engine over every piece of `text` in a worker thread, yielding its audio here.

    The worker hands pieces to the loop with `call_soon_threadsafe`; however this generator ends
    (done, error, cancelled), the worker has stopped before it returns, so the model is free.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def work() -> None:
        try:
            for piece in text_pieces(text, engine.max_text_chars, voice.language):
                for audio in engine.synthesize(piece, voice, cancel):
                    loop.call_soon_threadsafe(queue.put_nowait, audio)
                if cancel.is_set():
                    break
        except BaseException as err:  # handed to the loop, raised there
            loop.call_soon_threadsafe(queue.put_nowait, err)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    worker = loop.run_in_executor(None, work)
    finished = False
    try:
        while (item := await queue.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
        finished = True
    finally:
        if not finished:
            cancel.set()  # stop the worker within one token
        await _wait_for_worker(worker)


async def _wait_for_worker(worker: Awaitable[None]) -> None:
    """Wait for a worker thread even if this task is cancelled meanwhile (then re-raise)."""
    cancelled = False
    future = asyncio.ensure_future(worker)
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


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


InfoFactory = Callable[[], Info]
