"""The one interface every engine implements, and what a request tells it."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Protocol

import numpy as np

from ..catalog import ModelSpec
from ..devices import Device
from ..errors import VoiceError


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
        self, text: str, voice: VoiceSettings, cancel: threading.Event
    ) -> Iterator[np.ndarray]:
        """Float32 mono audio pieces, in order, each as soon as it is final.

        Checks `cancel` at least once per generated token or frame and stops early when set.
        """

    def close(self) -> None:
        """Free the model (native memory, device buffers); safe to call once after any load."""


class EngineModule(Protocol):
    """What `engines/<name>.py` exposes."""

    FILES: Mapping[str, tuple[str, ...] | None]
    """Catalog file roles: None for one file (`file:`), or the names read from a folder repo."""

    def estimate_bytes(self, model: ModelSpec, paths: Mapping[str, Path], where: str) -> int:
        """Memory the loaded model will take (weights plus caches), before loading it."""

    def load(
        self, model: ModelSpec, paths: Mapping[str, Path], device: Device, threads: int, where: str
    ) -> Engine:
        """Load the model from local files on `device` using `threads` CPU threads.

        `where` names the voice and model that asked (e.g. "voice tara (model orpheus-3b)"); every
        error message starts with it.
        """


class EngineError(VoiceError):
    """An engine failed in a way the user can act on; the message names the voice or file."""


def log_piece_stats(
    logger: logging.Logger,
    voice: str,
    prompt_tokens: int,
    tokens: int,
    frames: int,
    prefill_seconds: float,
    decode_seconds: float,
    codec_seconds: float,
    cached_tokens: int = 0,
) -> None:
    """One INFO line per spoken text piece, the same for every engine: script/benchmark reads
    these figures from the server log (decode time excludes the codec's). `prompt_tokens` were
    evaluated after `cached_tokens` already in the KV cache (OuteTTS's speaker profile)."""
    logger.info(
        "stats voice=%s prompt_tokens=%d tokens=%d frames=%d prefill_s=%.3f decode_s=%.3f "
        "codec_s=%.3f cached_tokens=%d",
        voice,
        prompt_tokens,
        tokens,
        frames,
        prefill_seconds,
        decode_seconds,
        codec_seconds,
        cached_tokens,
    )
