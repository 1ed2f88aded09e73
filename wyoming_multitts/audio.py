"""Audio plumbing shared by all engines: float32 pieces to 16-bit PCM chunks, WAV files."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Iterator

import numpy as np

PCM_WIDTH = 2
"""Bytes per sample of the audio we send (16-bit signed PCM, what Home Assistant plays)."""
PCM_CHANNELS = 1
"""Every engine speaks mono."""
PCM_MAX = 32767
"""Full scale of 16-bit PCM; float audio in [-1, 1] is scaled by this."""


def to_pcm16(samples: np.ndarray) -> bytes:
    """Float audio in [-1, 1] as little-endian 16-bit PCM (rounded, clipped)."""
    scaled = np.clip(np.rint(np.asarray(samples, np.float32) * PCM_MAX), -PCM_MAX - 1, PCM_MAX)
    return scaled.astype("<i2").tobytes()


class PcmChunker:
    """Cuts a stream of PCM bytes into chunks of exactly `samples_per_chunk` samples.

    Engines yield pieces of any length; Home Assistant is happiest with regular chunks, so the
    remainder of each piece waits for the next one, and `flush` returns the short tail.
    """

    def __init__(self, samples_per_chunk: int) -> None:
        self._bytes_per_chunk = samples_per_chunk * PCM_WIDTH * PCM_CHANNELS
        self._pending = bytearray()

    def add(self, pcm: bytes) -> Iterator[bytes]:
        """Chunks completed by `pcm`."""
        self._pending.extend(pcm)
        while len(self._pending) >= self._bytes_per_chunk:
            yield bytes(self._pending[: self._bytes_per_chunk])
            del self._pending[: self._bytes_per_chunk]

    def flush(self) -> bytes:
        """The last, shorter chunk (may be empty)."""
        tail = bytes(self._pending)
        self._pending.clear()
        return tail


def write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    """Write float audio as a 16-bit mono WAV file."""
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(PCM_CHANNELS)
        wav.setsampwidth(PCM_WIDTH)
        wav.setframerate(rate)
        wav.writeframes(to_pcm16(samples))
