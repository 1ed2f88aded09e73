"""Streaming decode of a frame-based codec in overlapping windows.

Neural codecs like SNAC are non-causal: the audio of a frame depends on a few frames either side.
To stream, each window decodes the frames to emit plus `left` frames of context before and `right`
frames of lookahead after, and keeps only the emitted frames' samples. With enough context the
joined stream equals one decode of the whole utterance (SNAC: 3/3 frames, seed 002). Unlike the
official Orpheus decoder, the first frame and the last frames are emitted too.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

DecodeFrames = Callable[[int, int], np.ndarray]
"""decode(first, end): float32 audio of frames [first, end) decoded together as one window."""


class WindowedDecoder:
    """Turns a growing list of frames into final audio pieces, window by window.

    The first window emits `first_chunk` frames (fast first audio); each later window emits up
    to twice as many as the one before, capped at `max_chunk` (fewer, larger codec calls).
    """

    def __init__(
        self,
        decode: DecodeFrames,
        samples_per_frame: int,
        left: int,
        right: int,
        first_chunk: int = 1,
        max_chunk: int = 8,
    ) -> None:
        if left < 0 or right < 0 or first_chunk < 1 or max_chunk < first_chunk:
            raise ValueError("context must be >= 0 and 1 <= first_chunk <= max_chunk")
        self._decode = decode
        self._samples_per_frame = samples_per_frame
        self._left = left
        self._right = right
        self._chunk = first_chunk
        self._max_chunk = max_chunk
        self.emitted = 0
        """Frames whose audio has been returned."""

    def push(self, n_frames: int) -> Iterator[np.ndarray]:
        """Audio that became final now that `n_frames` frames exist."""
        while n_frames - self.emitted - self._right >= self._chunk:
            yield self._emit(self._chunk, n_frames)
            self._chunk = min(2 * self._chunk, self._max_chunk)

    def finish(self, n_frames: int) -> Iterator[np.ndarray]:
        """The rest of the audio once no more frames will come (windows stay within max_chunk)."""
        while n_frames > self.emitted:
            yield self._emit(min(n_frames - self.emitted, self._max_chunk), n_frames)

    @property
    def max_window(self) -> int:
        """The most frames one `decode` call is given."""
        return self._left + self._max_chunk + self._right

    def _emit(self, count: int, n_frames: int) -> np.ndarray:
        first = max(0, self.emitted - self._left)
        end = min(n_frames, self.emitted + count + self._right)
        audio = self._decode(first, end)  # (samples_per_frame * (end - first),)
        offset = (self.emitted - first) * self._samples_per_frame
        self.emitted += count
        return audio[offset : offset + count * self._samples_per_frame]
