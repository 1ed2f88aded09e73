"""Audio plumbing shared by all engines: float32 pieces to 16-bit PCM chunks, WAV files (writing,
and reading reference recordings), resampling, mel filters."""

from __future__ import annotations

import math
import struct
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


# ---- reading reference recordings

WAVE_FORMAT_PCM = 1
WAVE_FORMAT_IEEE_FLOAT = 3
WAVE_FORMAT_EXTENSIBLE = 0xFFFE
"""WAV `fmt ` format tags (Microsoft RIFF spec); EXTENSIBLE carries the real one in its subformat
GUID, whose first two bytes are that tag."""
WAV_FMT = struct.Struct("<HHIIHH")
"""format tag, channels, sample rate, byte rate, block align, bits per sample."""
WAV_SUBFORMAT_OFFSET = 24
"""Offset of the subformat GUID in an EXTENSIBLE `fmt ` chunk."""


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """A WAV file as float32 mono samples in [-1, 1] (channels averaged) and its sample rate.

    Reads 8/16/24/32-bit integer PCM and 32/64-bit float WAVs, plain or WAVE_FORMAT_EXTENSIBLE
    (the stdlib `wave` reads integer PCM only). Integers are scaled like soundfile and librosa
    do (16-bit: / 32768). Raises OSError when the file cannot be read and ValueError, saying
    what is wrong, when it is not a WAV this reads.
    """
    data = path.read_bytes()
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a WAV file (no RIFF/WAVE header)")
    fmt, payload, pos = None, None, 12
    while pos + 8 <= len(data):
        chunk, size = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        body = data[pos + 8 : pos + 8 + size]  # a streamed file's size may overrun: the rest
        if chunk == b"fmt ":
            fmt = body
        elif chunk == b"data":
            payload = body
        pos += 8 + size + (size & 1)  # chunks are padded to even sizes
    if fmt is None or len(fmt) < WAV_FMT.size or payload is None:
        raise ValueError("WAV file without a 'fmt ' or 'data' chunk")
    tag, channels, rate, _, block_align, bits = WAV_FMT.unpack(fmt[: WAV_FMT.size])
    if tag == WAVE_FORMAT_EXTENSIBLE and len(fmt) >= WAV_SUBFORMAT_OFFSET + 2:
        tag = int.from_bytes(fmt[WAV_SUBFORMAT_OFFSET : WAV_SUBFORMAT_OFFSET + 2], "little")
    if channels < 1 or rate < 1 or block_align != channels * bits // 8:
        raise ValueError(f"inconsistent WAV header ({channels} channels, {bits} bits, {rate} Hz)")
    raw = payload[: len(payload) - len(payload) % block_align]
    if tag == WAVE_FORMAT_PCM and bits == 8:
        samples = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128) / 128
    elif tag == WAVE_FORMAT_PCM and bits in (16, 32):
        ints = np.frombuffer(raw, f"<i{bits // 8}")
        samples = (ints / float(2 ** (bits - 1))).astype(np.float32)
    elif tag == WAVE_FORMAT_PCM and bits == 24:
        triples = np.frombuffer(raw, np.uint8).reshape(-1, 3)  # (n, 3) little-endian
        ints = np.zeros((len(triples), 4), np.uint8)  # (n, 4): the 3 bytes at the top of an int32
        ints[:, 1:] = triples
        samples = (ints.view("<i4")[:, 0] / float(2**31)).astype(np.float32)
    elif tag == WAVE_FORMAT_IEEE_FLOAT and bits in (32, 64):
        samples = np.frombuffer(raw, f"<f{bits // 8}").astype(np.float32)
    else:
        raise ValueError(
            f"unsupported WAV encoding (format tag {tag}, {bits} bits): use 16-bit PCM or 32-bit "
            "float"
        )
    frames = samples.reshape(-1, channels)  # (n, channels)
    return frames.mean(axis=1, dtype=np.float32), rate  # (n,) float32


# ---- resampling

RESAMPLE_ZERO_CROSSINGS = 32
"""Zero crossings of the windowed sinc on each side (at the lower of the two rates)."""
RESAMPLE_ROLLOFF = 0.95
"""Cutoff as a share of the lower Nyquist frequency: 11.4 kHz when resampling to 24 kHz."""
RESAMPLE_KAISER_BETA = 10.0
"""Kaiser window shape: stop band below about -90 dB."""
RESAMPLE_CHUNK = 16384
"""Output samples computed at a time (bounds the gathered (chunk, taps) block)."""


def resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Band-limited resampling of mono float audio: a Kaiser-windowed sinc evaluated at each
    output instant (polyphase: the ratio is reduced to up/down, so there are `up` distinct
    filter phases, tabulated once). Output length ceil(n · rate_out / rate_in), float32; the
    first output sample is at the first input sample's instant, as in scipy's resample_poly."""
    x = np.asarray(samples, np.float64)  # (n,)
    if rate_in == rate_out:
        return x.astype(np.float32)
    if rate_in < 1 or rate_out < 1:
        raise ValueError(f"sample rates must be positive, not {rate_in} and {rate_out}")
    common = math.gcd(rate_in, rate_out)
    up, down = rate_out // common, rate_in // common
    cutoff = RESAMPLE_ROLLOFF * min(1.0, up / down)  # of the input Nyquist
    half = RESAMPLE_ZERO_CROSSINGS / cutoff  # filter half-length, in input samples
    reach = math.ceil(half)
    offsets = np.arange(1 - reach, reach + 1)  # (taps,): inputs base + offset
    tau = np.arange(up)[:, None] / up - offsets[None, :]  # (up, taps): output - input instant
    inside = np.clip(1.0 - (tau / half) ** 2, 0.0, None)  # (up, taps)
    window = np.i0(RESAMPLE_KAISER_BETA * np.sqrt(inside)) / np.i0(RESAMPLE_KAISER_BETA)
    weights = cutoff * np.sinc(cutoff * tau) * np.where(np.abs(tau) < half, window, 0.0)
    n_out = -(-len(x) * up // down)
    padded = np.pad(x, (reach, reach + 1))  # (n + 2·reach + 1,)
    out = np.empty(n_out, np.float32)
    for start in range(0, n_out, RESAMPLE_CHUNK):
        position = np.arange(start, min(start + RESAMPLE_CHUNK, n_out)) * down  # (c,) in 1/up
        base, phase = position // up, position % up  # (c,), (c,)
        block = padded[base[:, None] + offsets[None, :] + reach]  # (c, taps)
        out[start : start + len(base)] = np.einsum("ct,ct->c", block, weights[phase])
    return out


SLANEY_F_SP = 200.0 / 3
"""Slaney mel scale: linear below 1 kHz at 200/3 Hz per mel, logarithmic above (librosa
`hz_to_mel(htk=False)`)."""
SLANEY_MIN_LOG_HZ = 1000.0
SLANEY_LOGSTEP = float(np.log(6.4) / 27.0)


def slaney_mel_filters(rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """Triangular mel filters (n_mels, n_fft // 2 + 1) float32, area-normalised ("slaney"), on
    the slaney mel scale: librosa 0.11 `filters.mel(sr, n_fft, n_mels, fmin, fmax)`, step by
    step in the same precision (float64 ramps, float32 weights)."""
    bins = np.fft.rfftfreq(n=n_fft, d=1.0 / rate)  # (n_fft // 2 + 1,) Hz
    edges = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))  # (n+2,)
    widths = np.diff(edges)  # (n_mels + 1,)
    ramps = np.subtract.outer(edges, bins)  # (n_mels + 2, bins)
    weights = np.zeros((n_mels, len(bins)), np.float32)
    for i in range(n_mels):
        lower = -ramps[i] / widths[i]
        upper = ramps[i + 2] / widths[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2 : n_mels + 2] - edges[:n_mels]))[:, None]  # slaney area norm
    return weights


def _hz_to_mel(hz: float) -> float:
    if hz < SLANEY_MIN_LOG_HZ:
        return hz / SLANEY_F_SP
    return SLANEY_MIN_LOG_HZ / SLANEY_F_SP + float(np.log(hz / SLANEY_MIN_LOG_HZ)) / SLANEY_LOGSTEP


def _mel_to_hz(mels: np.ndarray) -> np.ndarray:
    hz = SLANEY_F_SP * mels
    min_log_mel = SLANEY_MIN_LOG_HZ / SLANEY_F_SP
    log_part = mels >= min_log_mel
    hz[log_part] = SLANEY_MIN_LOG_HZ * np.exp(SLANEY_LOGSTEP * (mels[log_part] - min_log_mel))
    return hz
