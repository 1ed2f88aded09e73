"""Timed Wyoming requests, measured the way wyoming-bench measures them (wyoming-bench
2026.10.0, `wyoming_bench/tts/reporting.py`).

Every request uses a fresh connection. The clock starts just before the first event is written;
time to first audio (TTFA, wyoming-bench's "TTFT") ends when the first `audio-chunk` arrives and
the total when the last event arrives (`audio-stop`, or `synthesize-stopped` when streaming).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass

from wyoming.audio import AudioChunk, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from .models import BenchError
from .server import HOST

_LOGGER = logging.getLogger(__name__)

PLAIN = "plain"
"""One `synthesize` event; ends at `audio-stop`."""
STREAMING = "streaming"
"""`synthesize-start`, the text as one `synthesize-chunk` plus a space, `synthesize-stop`;
ends at `synthesize-stopped` (wyoming-bench sends one chunk per sentence, each + " ")."""
MODES = (PLAIN, STREAMING)
READ_TIMEOUT = 600.0
"""Seconds one event may take: the first request of a full-size model loads it (~10-30 s),
and a long text generates for minutes on 2 cores."""


@dataclass(frozen=True)
class RequestTiming:
    """What the client saw of one request."""

    ttfa_s: float
    """Seconds from sending to the first audio chunk (to the end when there was none)."""
    total_s: float
    """Seconds from sending to the last event."""
    audio_s: float
    """Seconds of audio received."""

    @property
    def rtf(self) -> float:
        """Real-time factor: total time / audio duration (below 1 is faster than real time;
        infinite for a request that brought no audio)."""
        return self.total_s / self.audio_s if self.audio_s else math.inf


def request_events(mode: str, text: str, voice: str) -> tuple[list[Event], str]:
    """The events a request of `mode` sends, and the type of the event that ends it."""
    request_voice = SynthesizeVoice(name=voice)
    if mode == PLAIN:
        return [Synthesize(text=text, voice=request_voice).event()], AudioStop().event().type
    return [
        SynthesizeStart(voice=request_voice).event(),
        SynthesizeChunk(text=text + " ").event(),
        SynthesizeStop().event(),
    ], SynthesizeStopped().event().type


async def timed_request(port: int, mode: str, text: str, voice: str) -> RequestTiming:
    """Send one request on a new connection and time it."""
    events, last_type = request_events(mode, text, voice)
    async with AsyncTcpClient(HOST, port) as client:
        sent = time.perf_counter()
        for event in events:
            await client.write_event(event)
        first_audio: float | None = None
        audio_s = 0.0
        while True:
            event = await asyncio.wait_for(client.read_event(), timeout=READ_TIMEOUT)
            arrived = time.perf_counter()
            if event is None:
                raise BenchError(f"{mode} request for {voice}: the server closed the connection")
            if event.type == "error":
                raise BenchError(f"{mode} request for {voice}: server error {event.data}")
            if AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                first_audio = arrived if first_audio is None else first_audio
                audio_s += len(chunk.audio) / (chunk.width * chunk.channels * chunk.rate)
            if event.type == last_type:
                break
    if first_audio is None:  # a random model may write no audio code: its speed still counts
        _LOGGER.warning("%s request for %s: no audio (RTF and TTFA count it as none)", mode, voice)
        first_audio = arrived
    return RequestTiming(ttfa_s=first_audio - sent, total_s=arrived - sent, audio_s=audio_s)
