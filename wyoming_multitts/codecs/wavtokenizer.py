"""WavTokenizer decoding (OuteTTS 0.2/0.3's vocoder): llama.cpp's network, then our numpy ISTFT.

llama.cpp runs the network (`wavtokenizer-dec` GGUF, loaded as an encoder through `llm.model`) and
returns one spectrum frame per code; `istft` turns the frames into 24 kHz audio the way
WavTokenizer's `ISTFTHead` (padding "same") does. This is torch's maths, not llama.cpp's tts.cpp
port: tts.cpp's naive inverse DFT divides by 641 and skips the Hermitian doubling of the interior
bins (docs/engines.md, "WavTokenizer: llama.cpp's tts.cpp ISTFT"), numpy's `irfft` does it right.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ..devices import Device
from ..errors import LlamaError
from ..llm.model import LlamaModel

_LOGGER = logging.getLogger(__name__)

# WavTokenizer-large-speech-75token, ISTFTHead(dim=768, n_fft=1280, hop_length=320,
# padding="same") (outetts 0.3.3 wav_tokenizer/model.py, WavDecoder._create_config;
# docs/engines.md, "WavTokenizer: decoder architecture")
N_FFT = 1280
"""Samples per inverse-FFT frame, also the window length."""
HOP = 320
"""Samples between frames: one code = 320 samples = 1/75 s at 24 kHz."""
SAMPLE_RATE = 24_000
"""Output rate in Hz."""
N_BINS = N_FFT // 2 + 1
"""Frequency bins per frame (641)."""
SPECTRUM_CHANNELS = 2 * N_BINS
"""Head outputs per code (1282): N_BINS log-magnitudes, then N_BINS phases."""
MAX_MAGNITUDE = 100.0
"""ISTFTHead clips exp(log-magnitude) here (`torch.clip(mag, max=1e2)`)."""
OVERLAP = N_FFT // HOP
"""Frames covering each sample (4)."""
TRIM = (N_FFT - HOP) // 2
"""Samples cut from each end of the overlap-added signal (480): padding "same"."""

ARCH = "wavtokenizer-dec"
"""`general.architecture` of the vocoder GGUF."""

WINDOW = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(N_FFT) / N_FFT)
"""Periodic Hann window (`torch.hann_window(1280)`), float64."""


def istft(spectrum_frames: np.ndarray) -> np.ndarray:
    """24 kHz audio (HOP·T,) float32 from the vocoder's frames (T, 1282): log-magnitudes, phases.

    Inverse real FFT per frame, Hann window, overlap-add with hop 320, division by the
    overlap-added squared window, and the "same" trim of 480 samples at each end.
    """
    n_frames, width = spectrum_frames.shape
    if width != SPECTRUM_CHANNELS:
        raise ValueError(f"istft needs {SPECTRUM_CHANNELS} values per frame, got {width}")
    frames = spectrum_frames.astype(np.float64)
    magnitude = np.minimum(np.exp(frames[:, :N_BINS]), MAX_MAGNITUDE)  # (T, 641)
    spectrum = magnitude * np.exp(1j * frames[:, N_BINS:])  # (T, 641) complex128
    segments = np.fft.irfft(spectrum, n=N_FFT, axis=1) * WINDOW  # (T, 1280)

    # Overlap-add: frame t covers hops t … t+3 of the (T+3)-hop output, so cut each frame into
    # its 4 hops and add hop j of every frame at once, shifted by j.
    pieces = segments.reshape(n_frames, OVERLAP, HOP)  # (T, 4, 320)
    window_pieces = (WINDOW**2).reshape(OVERLAP, HOP)  # (4, 320)
    audio = np.zeros((n_frames + OVERLAP - 1, HOP))  # (T+3, 320)
    envelope = np.zeros((n_frames + OVERLAP - 1, HOP))  # (T+3, 320)
    for j in range(OVERLAP):
        audio[j : j + n_frames] += pieces[:, j]
        envelope[j : j + n_frames] += window_pieces[j]
    kept = slice(TRIM, TRIM + n_frames * HOP)
    # after the trim the envelope is at least 0.73 (one frame), so the division is safe
    return (audio.reshape(-1)[kept] / envelope.reshape(-1)[kept]).astype(np.float32)  # (320·T,)


class WavTokenizerVocoder:
    """A WavTokenizer decoder GGUF on one device: codes (T,) → 24 kHz audio (320·T,).

    Decodes at most `max_codes` codes per call: llama.cpp runs the whole sequence as one batch
    (its attention and convolutions span all of it), sized once at load. Longer utterances go
    through `WindowedDecoder` in windows. Not thread-safe, like `LlamaModel`.
    """

    sample_rate = SAMPLE_RATE
    samples_per_frame = HOP

    def __init__(self, path: Path, device: Device, *, max_codes: int, threads: int) -> None:
        if max_codes < 1:
            raise ValueError(f"max_codes must be at least 1, got {max_codes}")
        self.max_codes = max_codes
        self._path = path
        self._model = LlamaModel(path, device, n_ctx=max_codes, threads=threads, embeddings=True)
        try:
            arch = self._model.metadata("general.architecture")
            if arch != ARCH or self._model.n_embd_out != SPECTRUM_CHANNELS:
                raise LlamaError(
                    f"{path} is not a WavTokenizer decoder (architecture {arch}, "
                    f"{self._model.n_embd_out} outputs per token; expected {ARCH}, "
                    f"{SPECTRUM_CHANNELS}); check the catalog's codec file"
                )
        except BaseException:
            self._model.close()
            raise
        self.n_codes: int = self._model.n_vocab
        """Codebook size: valid codes are 0 … n_codes-1 (4096)."""

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Audio (320·T,) float32 of codes (T,), decoded together as one window."""
        return istft(self.spectrum_frames(codes))  # (320·T,) float32

    def spectrum_frames(self, codes: np.ndarray) -> np.ndarray:
        """The network's output for codes (T,): frames (T, 1282) float32 for `istft`.

        Raises LlamaError for more than `max_codes` codes or codes outside the codebook (llama.cpp
        would abort the process or reject the batch).
        """
        codes = np.asarray(codes)
        if codes.ndim != 1 or codes.size == 0 or codes.dtype.kind not in "iu":
            raise ValueError(f"codes must be a non-empty 1-D integer array, got {codes.shape}")
        if codes.size > self.max_codes:
            raise LlamaError(
                f"{codes.size} codes are more than the vocoder's window of "
                f"{self.max_codes} ({self._path}); decode them in windows"
            )
        low, high = int(codes.min()), int(codes.max())
        if low < 0 or high >= self.n_codes:
            raise LlamaError(
                f"code {low if low < 0 else high} is outside the codebook "
                f"0..{self.n_codes - 1} of {self._path}"
            )
        return self._model.encode(codes)  # (T, 1282) float32

    def close(self) -> None:
        """Free the model (idempotent)."""
        self._model.close()
