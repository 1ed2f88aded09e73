"""Streaming decode of a frame-based codec in overlapping windows.

Neural codecs like SNAC are non-causal: the audio of a frame depends on a few frames either side.
To stream, each window decodes the frames to emit plus `left` frames of context before and `right`
frames of lookahead after, and keeps only the emitted frames' samples. With enough context the
joined stream equals one decode of the whole utterance (SNAC: 3/3 frames; docs/engines.md,
"SNAC: streaming windows"). Unlike the official Orpheus decoder, the first frame and the last
frames are emitted too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

DecodeFrames = Callable[[int, int], np.ndarray]
"""decode(first, end): float32 audio of frames [first, end) decoded together as one window."""


@dataclass(frozen=True)
class StreamWindows:
    """How a stream is cut into windows (in frames of the codec)."""

    left: int
    """Frames of context decoded before the emitted ones."""
    right: int
    """Frames of lookahead decoded after the emitted ones."""
    first_chunk: int = 1
    """Frames the first window emits (fast first audio)."""
    max_chunk: int = 8
    """Each later window emits up to twice as many as the one before, capped here (fewer,
    larger codec calls)."""

    def __post_init__(self) -> None:
        if self.left < 0 or self.right < 0:
            raise ValueError("context frames must be >= 0")
        if not 1 <= self.first_chunk <= self.max_chunk:
            raise ValueError("the first chunk must be >= 1 and <= the largest chunk")

    @property
    def max_frames(self) -> int:
        """The most frames one `decode` call is given: what a codec must be sized for."""
        return self.left + self.max_chunk + self.right


class WindowedDecoder:
    """Turns a growing list of frames into final audio pieces, window by window (the one
    streaming mechanism of every codec)."""

    def __init__(
        self,
        decode: DecodeFrames,
        samples_per_frame: int,
        left: int,
        right: int,
        first_chunk: int = 1,
        max_chunk: int = 8,
        *,
        start: int = 0,
    ) -> None:
        """`start`: the first frames are context only (a cloned voice's reference): their audio
        is never emitted."""
        self.windows = StreamWindows(left, right, first_chunk, max_chunk)
        self._decode = decode
        self._samples_per_frame = samples_per_frame
        self._chunk = first_chunk
        self.emitted = start
        """Frames whose audio has been returned (or that are context only)."""

    @classmethod
    def over(
        cls, decode: DecodeFrames, samples_per_frame: int, windows: StreamWindows, start: int = 0
    ) -> "WindowedDecoder":
        """A decoder cut as `windows` says."""
        return cls(decode, samples_per_frame, *dataclasses.astuple(windows), start=start)

    def push(self, n_frames: int) -> Iterator[np.ndarray]:
        """Audio that became final now that `n_frames` frames exist."""
        while n_frames - self.emitted - self.windows.right >= self._chunk:
            yield self._emit(self._chunk, n_frames)
            self._chunk = min(2 * self._chunk, self.windows.max_chunk)

    def finish(self, n_frames: int) -> Iterator[np.ndarray]:
        """The rest of the audio once no more frames will come (windows stay within max_chunk)."""
        while n_frames > self.emitted:
            yield self._emit(min(n_frames - self.emitted, self.windows.max_chunk), n_frames)

    def _emit(self, count: int, n_frames: int) -> np.ndarray:
        first = max(0, self.emitted - self.windows.left)
        end = min(n_frames, self.emitted + count + self.windows.right)
        audio = self._decode(first, end)  # (samples_per_frame * (end - first),)
        offset = (self.emitted - first) * self._samples_per_frame
        self.emitted += count
        return audio[offset : offset + count * self._samples_per_frame]
