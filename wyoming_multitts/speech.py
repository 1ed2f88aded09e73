"""One request's way from text to audio, the same for both faces (the Wyoming handler and the web
page): the text front end, the registry's worker for the voice's model, the bounds on what a
request may cost, the hold of a slow model's first audio, and PCM chunks handed to an
`AudioSink` (Wyoming events, or an HTTP response). Nothing here knows the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .audio import PCM_CHANNELS, PCM_WIDTH, PcmChunker, to_pcm16
from .catalog import VoiceSpec
from .engines import ENGINE_NATIVE_TEXT
from .engines.base import VoiceSettings
from .live_catalog import LiveCatalog
from .registry import SPOKEN_CHARS_PER_SECOND, ModelRegistry, Speed
from .text import TextPolicy, is_speakable, split_to_length, spoken_sentences

_LOGGER = logging.getLogger(__name__)

FIRST_CLAUSE_MIN_RATE = 0.25
"""A model this fast or faster (seconds of audio a second) starts on a request's first clause:
even one slower than real time (Qwen3-TTS 0.6B makes about 0.5 on 2 Zen 4 cores) gets its first
audio out seconds sooner than with the whole first sentence, the hold keeping the pause after
it between the pieces. Slower (Orpheus 3B on 2 cores, 0.2), the pause after a short clause
would be as long as the sentence: it speaks the first sentence whole."""
MAX_HELD_SECONDS = 30.0
"""Audio a request may hold at most (2.9 MB at 24 kHz): a long text on a slow model is released
after that much rather than held whole in the server's memory."""
HOLD_MARGIN = 1.25
"""A piece is taken to need this much longer to make than its text and the model's measured
speed suggest (a voice may speak slower than its average), so that it does not run dry near
its end."""


class RequestError(ValueError):
    """The client's request is wrong; the text goes back to the client (an `error` event, an
    HTTP error) with its code."""

    def __init__(self, text: str, code: str) -> None:
        super().__init__(text)
        self.code = code


@dataclass(frozen=True)
class SpeechSettings:
    """The bounds and choices of one request's speech (every bound: docs/process-model.md)."""

    samples_per_chunk: int = 1024
    """Samples per audio chunk (wyoming-piper's default)."""
    max_text_chars: int = 20_000
    """Longest text one request may carry (plain or streamed in total)."""
    max_speech_seconds: float = 900.0
    """Most audio one request may ask for, estimated from its normalised text."""
    max_pieces: int = 500
    """Most text pieces (engine calls) one request may cause after normalisation."""
    max_audio_ahead: float = 4.0
    """Seconds of audio a worker may make beyond what the client has taken."""
    min_client_rate: float = 0.5
    """End a request whose client takes its audio slower than this many times real time, counted
    over the time the server waited on it beyond `client_rate_grace` (0: never)."""
    client_rate_grace: float = 10.0
    """Seconds a request may wait on its client before `min_client_rate` applies."""
    first_clause: bool = True
    """Start on the first clause of a request's first sentence when the voice's model is fast
    enough (`FIRST_CLAUSE_MIN_RATE`): `text/clauses.py`."""
    hold_audio: bool = True
    """Hold the first audio of a cycle a model makes slower than real time until the rest can
    follow without running dry (`_Hold`): a pause falls between pieces, not mid-word."""


class AudioSink(Protocol):
    """Where a face sends one audio cycle: a start with the sample rate, 16-bit mono PCM
    chunks, a stop. A write that waits on a slow client is what `--min-client-rate` counts."""

    async def audio_start(self, rate: int) -> None: ...

    async def audio_chunk(self, rate: int, pcm: bytes) -> None: ...

    async def audio_stop(self) -> None: ...


def voice_settings(spec: VoiceSpec, speaker: str | None) -> VoiceSettings:
    """What the engine is told about the voice (its reference is fetched later)."""
    return VoiceSettings(
        name=spec.name, speaker=speaker, language=spec.languages[0], options=spec.options
    )


def nothing_to_say(text: str) -> RequestError:
    """The error for a text with nothing speakable in it."""
    return RequestError(
        f"nothing to speak in {text[:40]!r}: the text is empty, or only symbols, code or emoji",
        "empty-text",
    )


class Speech:
    """Speaks requests of one catalog through the registry's workers, within `settings`."""

    def __init__(
        self, catalog: LiveCatalog, registry: ModelRegistry, settings: SpeechSettings
    ) -> None:
        self.catalog = catalog
        """The catalog in force: a request looks its voice up in `catalog.current` once."""
        self._registry = registry
        self._settings = settings

    def text_policy(self, spec: VoiceSpec) -> TextPolicy:
        """How the voice's text is made speakable: its languages, the text options of its model
        and its own, and what its engine reads itself."""
        model = self._registry.model(spec.model)  # outlives a catalog change
        return TextPolicy(
            languages=spec.languages,
            native_languages=ENGINE_NATIVE_TEXT.get(model.engine, frozenset()),
            **{**model.text_options, **spec.text_options},  # normalize, emoji (checked)
        )

    def starts_on_a_clause(self, spec: VoiceSpec) -> bool:
        """Whether a request's first clause is spoken alone (`text/clauses.py`): when the
        voice's model makes at least `FIRST_CLAUSE_MIN_RATE` of real time here (measured), so
        that the rest of the sentence follows after a short pause at most."""
        speed = self._registry.speed(spec.model)
        fast = speed.measured and speed.rate >= FIRST_CLAUSE_MIN_RATE
        return self._settings.first_clause and fast

    def check_text(self, text: str) -> None:
        """`RequestError` for a text too long, or with nothing to speak."""
        if len(text) > self._settings.max_text_chars:
            raise self.too_long()
        if not is_speakable(text):
            raise nothing_to_say(text)

    def too_long(self) -> RequestError:
        """The error for a text over `--max-text-chars`."""
        return RequestError(
            f"text longer than {self._settings.max_text_chars} characters (--max-text-chars)",
            "text-too-long",
        )

    def bounds(self) -> "RequestBounds":
        """What one new request may still cost, and how fast its client must take its audio."""
        return RequestBounds(_SpeechBudget(self._settings), _ClientPace(self._settings))

    async def with_reference(self, spec: VoiceSpec, voice: VoiceSettings) -> VoiceSettings:
        """The voice with its reference recording fetched (cloned voices) or made into a speaker
        profile (OuteTTS)."""
        return await self._registry.with_reference(spec, voice)

    async def speak_once(
        self, spec: VoiceSpec, voice: VoiceSettings, text: str, sink: AudioSink
    ) -> None:
        """A whole text: every piece of it in one audio cycle."""
        sentences = await asyncio.to_thread(
            spoken_sentences, text, self.text_policy(spec), self.starts_on_a_clause(spec)
        )
        if not sentences:
            raise nothing_to_say(text)
        voice = await self.with_reference(spec, voice)
        await self.speak_cycle(spec, voice, sentences, self.bounds(), sink)

    async def speak_cycle(
        self,
        spec: VoiceSpec,
        voice: VoiceSettings,
        sentences: list[str],
        bounds: "RequestBounds",
        sink: AudioSink,
    ) -> None:
        """Start, chunks of all pieces of the spoken `sentences`, stop; the first audio held
        while the model would not keep up (`_Hold`)."""
        budget, pace = bounds.budget, bounds.pace
        budget.spend(sentences)
        started = time.monotonic()
        audio_samples = 0
        chunker = PcmChunker(self._settings.samples_per_chunk)
        out = _PacedSink(sink, pace, chunker)
        async with self._registry.acquire(spec.model, voice.name) as worker:
            assert worker.loaded is not None
            begun = last_audio = time.monotonic()  # the model's turn: its speed counts from here
            rate, max_chars = worker.loaded.sample_rate, worker.loaded.max_text_chars
            pieces = tuple(
                piece
                for sentence in sentences
                for piece in split_to_length(sentence, max_chars)
                if is_speakable(piece)
            )
            budget.check_pieces(len(pieces))
            await sink.audio_start(rate)
            ahead = int(self._settings.max_audio_ahead * rate)
            speed = self._registry.speed(spec.model)
            hold: _Hold | None = None
            current = -1  # the text piece whose audio comes now
            async with worker.speak(pieces, voice, ahead) as audio:
                async for part in audio:
                    samples = part.samples
                    audio_samples += samples.size
                    if part.piece != current:  # a text piece begins: what is held is whole
                        if hold is not None:
                            await out.held(rate, hold, voice.name)
                        current = part.piece
                        expected = len(pieces[current]) * speed.seconds_per_char
                        settings = self._settings
                        hold = _Hold(speed, expected, last_audio) if settings.hold_audio else None
                    last_audio = time.monotonic()
                    if hold is not None:
                        audio.taken(samples.size)  # held here: the model goes on meanwhile
                        if not hold.add(samples, rate, last_audio):
                            continue
                        await out.held(rate, hold, voice.name)
                        hold = None
                        continue
                    await out.samples(rate, samples)
                    audio.taken(samples.size)
        if hold is not None:
            await out.held(rate, hold, voice.name)
        await out.flush(rate)
        chars = sum(len(piece) for piece in pieces)
        self._registry.measured(spec.model, chars, audio_samples / rate, last_audio - begun)
        await sink.audio_stop()
        _LOGGER.info(
            "Spoke %.2f s of audio for voice %s in %.2f s (%d characters)",
            audio_samples / rate,
            voice.name,
            time.monotonic() - started,
            sum(len(sentence) for sentence in sentences),
        )


@dataclass(frozen=True)
class RequestBounds:
    """One request's budget and its client's pace, shared by all its audio cycles."""

    budget: "_SpeechBudget"
    pace: "_ClientPace"


class _PacedSink:
    """PCM chunks of `samples_per_chunk` to a sink, each write bounded by the client's pace."""

    def __init__(self, sink: AudioSink, pace: "_ClientPace", chunker: PcmChunker) -> None:
        self._sink = sink
        self._pace = pace
        self._chunker = chunker

    async def samples(self, rate: int, samples: np.ndarray) -> None:
        for chunk in self._chunker.add(to_pcm16(samples)):
            await self._write(rate, chunk)

    async def held(self, rate: int, hold: "_Hold", voice: str) -> None:
        """Send the audio `hold` holds, now that the rest of its piece can follow in time (or
        is all there)."""
        if len(hold.held) > 1:  # not released at its first audio: it was held
            _LOGGER.info(
                "Held the first %.2f s of a piece of voice %s: its model is slower than real "
                "time (--no-hold-audio sends it at once)",
                hold.made,
                voice,
            )
        for samples in hold.held:
            await self.samples(rate, samples)

    async def flush(self, rate: int) -> None:
        tail = self._chunker.flush()
        if tail:
            await self._write(rate, tail)

    async def _write(self, rate: int, pcm: bytes) -> None:
        seconds = len(pcm) / (PCM_WIDTH * PCM_CHANNELS) / rate
        started = time.monotonic()
        # one write may wait long (asyncio drains down to its low-water mark): it is stopped
        # once the client's pace has run out, and `wrote` then ends the request
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._sink.audio_chunk(rate, pcm), self._pace.allowance(seconds))
        self._pace.wrote(time.monotonic() - started, seconds)


class _SpeechBudget:
    """What one request may still cost: audio seconds (estimated from its normalised text,
    before anything is made) and pieces."""

    def __init__(self, settings: SpeechSettings) -> None:
        self._settings = settings
        self._chars_left = settings.max_speech_seconds * SPOKEN_CHARS_PER_SECOND

    def spend(self, sentences: list[str]) -> None:
        self._chars_left -= sum(len(sentence) for sentence in sentences)
        if self._chars_left < 0:
            raise RequestError(
                f"the text would take more than {self._settings.max_speech_seconds:g} s to say "
                "once numbers and symbols are spelled out (--max-speech-seconds)",
                "speech-too-long",
            )

    def check_pieces(self, pieces: int) -> None:
        if pieces > self._settings.max_pieces:
            raise RequestError(
                f"the text makes {pieces} pieces for the engine, over the limit of "
                f"{self._settings.max_pieces} (--max-pieces)",
                "too-many-pieces",
            )


class _ClientPace:
    """How fast one request's client takes its audio: the time its writes waited on the client
    (a full socket buffer) against the seconds of audio they carried. A client that reads far
    slower than real time would otherwise hold the model, and everyone waiting for it, for as
    long as it likes (`--client-timeout` only catches one that takes nothing at all)."""

    def __init__(self, settings: SpeechSettings) -> None:
        self._min_rate = settings.min_client_rate
        self._grace = settings.client_rate_grace
        self._waited = 0.0
        self._audio = 0.0

    def allowance(self, audio_seconds: float) -> float | None:
        """How long a write of `audio_seconds` of audio may wait (None: as long as it takes)."""
        if self._min_rate <= 0:
            return None
        return self._grace + (self._audio + audio_seconds) / self._min_rate - self._waited

    def wrote(self, waited: float, audio_seconds: float) -> None:
        """A write of `audio_seconds` of audio waited `waited` seconds for the client (or was
        stopped after its `allowance`)."""
        self._waited += waited
        self._audio += audio_seconds
        if self._min_rate > 0 and self._waited > self._grace + self._audio / self._min_rate:
            raise RequestError(
                f"the client took its audio slower than {self._min_rate:g} times real time "
                "(--min-client-rate), so the request was ended to free the voice's model",
                "client-too-slow",
            )


class _Hold:
    """The first audio of one text piece, held until the rest of the piece will have come
    before the listener runs dry. Engines hand out audio in bursts (a codec window, a whole
    sentence's tail), so what counts is when the last of the piece comes: at `rate` seconds of
    audio a second, a piece of `expected` seconds is all made `expected / rate` after it began;
    what is held goes out once playing it lasts until then. `rate` is the model's measured one,
    or this piece's own so far when slower (the machine got busier). A model faster than real
    time goes at once. A pause then falls between pieces, never inside one."""

    def __init__(self, speed: Speed, expected_seconds: float, started: float) -> None:
        self._rate = speed.rate
        self._expected = expected_seconds * HOLD_MARGIN
        self._started = started
        self.held: list[np.ndarray] = []
        self.made = 0.0
        """Seconds of audio of the piece made so far."""

    def add(self, samples: np.ndarray, sample_rate: int, now: float) -> bool:
        """Hold `samples`, which came at `now`; whether what is held may go out now."""
        self.held.append(samples)
        self.made += samples.size / sample_rate
        if self.made >= MAX_HELD_SECONDS:
            return True
        rate = min(self._rate, self.made / max(now - self._started, 1e-9))
        return rate >= 1.0 or now + self.made >= self._started + self._expected / rate
