"""Reading reference WAVs and resampling them (audio.py), against float64 references."""

from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np
import pytest

from wyoming_multitts.audio import read_wav, resample, write_wav

RESAMPLE_TOLERANCE = 1e-5
"""max |resampled - the same tones evaluated in float64 at the new instants| away from the
edges, for tones up to 0.8 of the lower Nyquist frequency (peak 1; measured 2.9e-6 to 3.5e-6)."""
STOP_BAND_TOLERANCE = 1e-4
"""Peak left of a full-scale tone above the new Nyquist frequency (measured 3.5e-7 for 15 kHz
at 48 → 24 kHz, 6.6e-5 for 12.5 kHz at 44.1 → 24 kHz, inside the transition band)."""
EDGE = 0.1
"""Share of the output at either end left out of the comparison (the signal starts and ends
there: the filter sees zeros beyond it)."""


def tones(rate: int, n: int, freqs: list[float]) -> np.ndarray:
    """Sum of unit sines (float64) with distinct phases, scaled to peak <= 1."""
    t = np.arange(n) / rate
    return sum(np.sin(2 * np.pi * f * t + i) for i, f in enumerate(freqs)) / len(freqs)


@pytest.mark.parametrize("rate_in", [8000, 16000, 22050, 44100, 48000, 96000])
def test_resampling_to_24_khz_keeps_tones_below_the_cutoff(rate_in: int) -> None:
    nyquist = min(rate_in, 24000) / 2
    freqs = [0.02 * nyquist, 0.3 * nyquist, 0.8 * nyquist]
    out = resample(tones(rate_in, rate_in, freqs).astype(np.float32), rate_in, 24000)
    assert out.dtype == np.float32 and len(out) == 24000
    expected = tones(24000, len(out), freqs)  # float64: the same tones at the new instants
    edge = int(EDGE * len(out))
    assert np.abs(out - expected)[edge:-edge].max() <= RESAMPLE_TOLERANCE


@pytest.mark.parametrize(("rate_in", "freq"), [(48000, 15000.0), (44100, 12500.0)])
def test_resampling_down_removes_what_the_new_rate_cannot_hold(rate_in: int, freq: float) -> None:
    out = resample(tones(rate_in, rate_in, [freq]), rate_in, 24000)
    edge = int(EDGE * len(out))
    assert np.abs(out)[edge:-edge].max() <= STOP_BAND_TOLERANCE


def test_resampling_lengths_and_the_same_rate() -> None:
    x = np.linspace(-1, 1, 1001, dtype=np.float32)
    assert np.array_equal(resample(x, 24000, 24000), x)
    assert len(resample(x, 44100, 24000)) == -(-1001 * 80 // 147)  # ceil(n · up / down)
    assert len(resample(x, 16000, 24000)) == 1502
    with pytest.raises(ValueError, match="positive"):
        resample(x, 0, 24000)


def write_raw_wav(
    path: Path, payload: bytes, tag: int, channels: int, rate: int, bits: int, extensible: bool
) -> None:
    """A WAV with any format tag, plain or WAVE_FORMAT_EXTENSIBLE, and an extra chunk."""
    block = channels * bits // 8
    fmt = struct.pack(
        "<HHIIHH", 0xFFFE if extensible else tag, channels, rate, rate * block, block, bits
    )
    if extensible:
        guid_tail = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
        fmt += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", tag) + guid_tail
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt
    chunks += b"LIST" + struct.pack("<I", 3) + b"abc\x00"  # odd size: padded to even
    chunks += b"data" + struct.pack("<I", len(payload)) + payload
    path.write_bytes(b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks)


@pytest.mark.parametrize("extensible", [False, True])
@pytest.mark.parametrize(
    ("tag", "bits", "dtype", "scale"),
    [
        (1, 8, np.uint8, 128.0),
        (1, 16, np.int16, 32768.0),
        (1, 24, None, 2.0**23),
        (1, 32, np.int32, 2.0**31),
        (3, 32, np.float32, 1.0),
        (3, 64, np.float64, 1.0),
    ],
)
def test_read_wav_formats_mix_channels_to_mono(
    tmp_path: Path, tag: int, bits: int, dtype: type | None, scale: float, extensible: bool
) -> None:
    rng = np.random.default_rng(bits)
    stereo = rng.uniform(-0.9, 0.9, (500, 2))  # (frames, channels) float64
    if tag == 3:
        payload = stereo.astype(dtype).tobytes()
        expected = stereo.astype(dtype).astype(np.float64)
    elif bits == 8:
        ints = np.round(stereo * scale + 128).astype(np.uint8)
        payload, expected = ints.tobytes(), (ints.astype(np.float64) - 128) / scale
    elif bits == 24:
        ints = np.round(stereo * scale).astype("<i4")
        payload = ints.view(np.uint8).reshape(-1, 4)[:, :3].tobytes()  # the low 3 bytes
        expected = ints / scale
    else:
        ints = np.round(stereo * scale).astype(dtype)
        payload, expected = ints.tobytes(), ints / scale
    path = tmp_path / "ref.wav"
    write_raw_wav(path, payload, tag, 2, 22050, bits, extensible)
    audio, rate = read_wav(path)
    assert rate == 22050 and audio.dtype == np.float32 and audio.shape == (500,)
    np.testing.assert_allclose(audio, expected.mean(axis=1), atol=1e-7)


def test_read_wav_reads_what_write_wav_and_the_wave_module_write(tmp_path: Path) -> None:
    samples = np.sin(np.linspace(0, 20, 1000)).astype(np.float32) * 0.5
    write_wav(tmp_path / "ours.wav", samples, 16000)
    audio, rate = read_wav(tmp_path / "ours.wav")
    # write_wav scales by 32767 (to_pcm16), read_wav divides by 32768 (as soundfile does)
    assert rate == 16000 and np.abs(audio - samples).max() <= 2 / 32767
    with wave.open(str(tmp_path / "stdlib.wav"), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(np.array([0, 16384, -32768], "<i2").tobytes())
    audio, rate = read_wav(tmp_path / "stdlib.wav")
    assert rate == 8000 and list(audio) == [0.0, 0.5, -1.0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"ID3 not a wave file at all", "not a WAV file"),
        (b"RIFF\x04\x00\x00\x00WAVE", "without a 'fmt ' or 'data' chunk"),
    ],
)
def test_read_wav_says_what_is_wrong(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_wav(path)


def test_read_wav_refuses_compressed_encodings(tmp_path: Path) -> None:
    path = tmp_path / "alaw.wav"
    write_raw_wav(path, b"\x00" * 100, 6, 1, 8000, 8, extensible=False)  # A-law
    with pytest.raises(ValueError, match=r"format tag 6, 8 bits\): use 16-bit PCM"):
        read_wav(path)
