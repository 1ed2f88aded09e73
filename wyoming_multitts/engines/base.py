"""The one interface every engine implements, and what a request tells it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Protocol

import numpy as np

from ..catalog import ModelSpec
from ..devices import Device
from ..stats import PieceStats


@dataclass(frozen=True)
class ReferenceAudio:
    """A voice's reference recording (voice cloning), as a local file."""

    path: Path
    """The WAV file (fetched from the hub when the catalog names a repo)."""
    text: str | None
    """Its transcript, if the catalog gives one."""


@dataclass(frozen=True)
class VoiceSettings:
    """The voice a request is spoken in, as the engine sees it."""

    name: str
    """Catalog voice name (for logs and errors)."""
    speaker: str | None
    """Speaker of a multi-speaker model (Orpheus: `tara`, …), or None."""
    language: str
    """Language code of the voice (`en`, `fr`, …)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Per-voice engine options (over the model's own `options`)."""
    reference: ReferenceAudio | None = None
    """The recording a cloned voice imitates (catalog `reference:`), or None."""


class Engine(Protocol):
    """A loaded model that turns text into audio. Not re-entrant: one request at a time."""

    sample_rate: int
    """Rate of the audio `synthesize` yields, in Hz."""
    max_text_chars: int
    """Longest text piece `synthesize` takes; the handler cuts longer text into pieces."""

    def synthesize(
        self,
        text: str,
        voice: VoiceSettings,
        cancel: threading.Event,
        stats: PieceStats | None = None,
    ) -> Iterator[np.ndarray]:
        """Float32 mono audio pieces, in order, each as soon as it is final.

        Checks `cancel` at least once per generated token or frame and stops early when set.
        Fills `stats` (tokens, frames, seconds per stage) as it goes, if given.
        """

    def close(self) -> None:
        """Free the model (native memory, device buffers); safe to call once after any load."""


@dataclass(frozen=True)
class PlannedBytes:
    """What a model will take, known from its files' sizes alone, before they are downloaded."""

    memory: int
    """A floor of the loaded model's memory: one over the budget need not be downloaded."""
    converted: int
    """The most its conversions write into the cache beside the downloads."""


class EngineModule(Protocol):
    """What `engines/<name>.py` exposes."""

    FILES: Mapping[str, tuple[str, ...] | None]
    """Catalog file roles: None for one file (`file:`), or the names read from a folder repo."""

    def planned_bytes(self, model: ModelSpec, file_bytes: Mapping[str, int]) -> PlannedBytes:
        """Memory and conversions from the bytes of each role's files (`FILES`), before
        downloading them."""

    def estimate_bytes(self, model: ModelSpec, paths: Mapping[str, Path]) -> int:
        """Memory the loaded model will take (weights plus caches), before loading it."""

    def load(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int
    ) -> Engine:
        """Load the model from local files on `device` using `threads` CPU threads.

        Errors name the file, the problem and the next step; the caller adds who asked (the
        worker prefixes "voice tara (model orpheus-3b)" with `errors.context`).
        """


MIN_SPEECH_SECONDS = 2.0
"""Speech a text piece may always take: room for a short word with pauses."""
MAX_SPEECH_SECONDS_PER_CHAR = 0.15
"""Speech a text piece may take per character: a generous upper bound (people speak ~15
characters a second), so a model that never says its end token stops in bounded time."""


def speech_budget(text: str, steps_per_second: float) -> int:
    """Most generation steps (tokens, frames) a text piece may take, at `steps_per_second` of
    audio: bounds the work of one piece when a model rambles or never ends."""
    return round(steps_per_second * (MIN_SPEECH_SECONDS + MAX_SPEECH_SECONDS_PER_CHAR * len(text)))
