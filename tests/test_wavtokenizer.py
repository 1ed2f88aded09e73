"""The WavTokenizer vocoder (llama.cpp graph + our ISTFT) against an independent float64 numpy
re-computation of WavTokenizer's decoder (docs/engines.md, "WavTokenizer: decoder architecture",
steps 1-8), from the same weights read back with `gguf.GGUFReader`."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import gguf
import numpy as np
import pytest
import torch

from tools.modelgen.wavtokenizer import (
    FULL_WAVTOKENIZER,
    POSNET_ATTENTION,
    POSNET_NORM,
    POSNET_RESNETS,
    SEED,
    TINY_WAVTOKENIZER,
    write_tiny_wavtokenizer,
    write_wavtokenizer,
)
from wyoming_multitts.codecs.wavtokenizer import (
    HOP,
    N_BINS,
    N_FFT,
    SPECTRUM_CHANNELS,
    WavTokenizerVocoder,
    istft,
)
from wyoming_multitts.devices import CPU
from wyoming_multitts.errors import LlamaError

N_CODES = 40
"""Codes per oracle run (more than the 7-tap convolutions' reach, several ISTFT overlaps)."""
MAX_CODES = 64
THREADS = 2

HEAD_TOLERANCE = 1e-3
"""max |llama.cpp - reference| / max |reference| allowed on the head output (T, 1282).
Measured 2.3e-4 to 3.3e-4 over 6 seeds (6.3e-4 on another tiny shape: docs/engines.md,
"WavTokenizer: tiny GGUF and llama.cpp accuracy").
llama.cpp computes in float32, casts the convolutions' inputs to F16 (ggml's im2col) and uses a
tanh GELU from an F16 table where torch uses the exact erf GELU; with a tanh GELU in the
reference the error stays 2.3e-4, so float32/F16 rounding dominates."""
AUDIO_TOLERANCE = 2e-3
"""The same, on the audio: exp() turns an absolute log-magnitude error into a relative
magnitude error of the same size. Measured 3.1e-4 to 4.5e-4."""
ISTFT_TOLERANCE = 1e-5
"""Our vectorised ISTFT vs the plain per-frame loop on the same frames (measured 5e-8)."""
ROUND_TRIP_TOLERANCE = 1e-5
"""torch.stft analysis then our ISTFT reproduce the signal (measured ~1e-7)."""


@pytest.fixture(scope="module")
def vocoder_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_wavtokenizer(tmp_path_factory.mktemp("wavtokenizer"))


@pytest.fixture(scope="module")
def vocoder(vocoder_path: Path) -> Iterator[WavTokenizerVocoder]:
    model = WavTokenizerVocoder(vocoder_path, CPU, max_codes=MAX_CODES, threads=THREADS)
    yield model
    model.close()


# ----------------------------------------------------------------------------------------------
# The reference: WavTokenizer's decoder in float64 numpy, written from the torch model's maths


def read_weights(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the GGUF in torch order, float64."""
    return {t.name: np.array(t.data, dtype=np.float64) for t in gguf.GGUFReader(path).tensors}


def conv1d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """torch Conv1d, padding k//2: x (Cin, T), weight (Cout, Cin, k) → (Cout, T)."""
    k = weight.shape[2]
    padded = np.pad(x, ((0, 0), (k // 2, k // 2)))  # (Cin, T+k-1)
    windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=1)  # (Cin, T, k)
    return np.einsum("oik,itk->ot", weight, windows) + bias.reshape(-1, 1)


def depthwise_conv1d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """torch Conv1d(groups=C), padding k//2: x (C, T), weight (C, 1, k) → (C, T)."""
    k = weight.shape[2]
    padded = np.pad(x, ((0, 0), (k // 2, k // 2)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=1)  # (C, T, k)
    return np.einsum("ck,ctk->ct", weight[:, 0], windows) + bias.reshape(-1, 1)


def group_norm(x: np.ndarray, groups: int, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """torch GroupNorm over x (C, T), eps 1e-6."""
    channels, length = x.shape
    grouped = x.reshape(groups, channels // groups * length)
    normed = (grouped - grouped.mean(axis=1, keepdims=True)) / np.sqrt(
        grouped.var(axis=1, keepdims=True) + 1e-6
    )
    return normed.reshape(channels, length) * weight.reshape(-1, 1) + bias.reshape(-1, 1)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """torch LayerNorm over the last axis of x (T, C), eps 1e-6."""
    normed = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-6)
    return normed * weight + bias


def swish(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def gelu(x: np.ndarray) -> np.ndarray:
    """torch's exact GELU, x·Φ(x) with the error function."""
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def reference_frames(w: dict[str, np.ndarray], codes: np.ndarray, groups: int) -> np.ndarray:
    """WavDecoder steps 1-7: codes (T,) → head output (T, 1282), float64."""
    x = w["token_embd.weight"][codes].T  # (F, T) step 1: codebook lookup
    x = conv1d(x, w["conv1d.weight"], w["conv1d.bias"])  # (C, T) step 2: embed
    channels = x.shape[0]
    for i in range(POSNET_NORM + 1):  # step 3: PosNet
        p = f"posnet.{i}."
        if i in POSNET_RESNETS:
            h = swish(group_norm(x, groups, w[p + "norm1.weight"], w[p + "norm1.bias"]))
            h = conv1d(h, w[p + "conv1.weight"], w[p + "conv1.bias"])
            h = swish(group_norm(h, groups, w[p + "norm2.weight"], w[p + "norm2.bias"]))
            x = x + conv1d(h, w[p + "conv2.weight"], w[p + "conv2.bias"])
        elif i == POSNET_ATTENTION:
            h = group_norm(x, groups, w[p + "attn_norm.weight"], w[p + "attn_norm.bias"])
            q, k, v = (
                conv1d(h, w[p + name + ".weight"], w[p + name + ".bias"])  # (C, T)
                for name in ("attn_q", "attn_k", "attn_v")
            )
            scores = q.T @ k / np.sqrt(channels)  # (T queries, T keys)
            scores = np.exp(scores - scores.max(axis=1, keepdims=True))
            attention = scores / scores.sum(axis=1, keepdims=True)
            h = v @ attention.T  # (C, T)
            x = x + conv1d(h, w[p + "attn_output.weight"], w[p + "attn_output.bias"])
        else:
            x = group_norm(x, groups, w[p + "attn_norm.weight"], w[p + "attn_norm.bias"])
    # step 4: AdaLayerNorm with bandwidth id 0 = LayerNorm with row 0 (token_embd_norm)
    x = layer_norm(x.T, w["token_embd_norm.weight"], w["token_embd_norm.bias"]).T  # (C, T)
    layer = 0
    while f"convnext.{layer}.dw.weight" in w:  # step 5: ConvNeXt blocks
        p = f"convnext.{layer}."
        h = depthwise_conv1d(x, w[p + "dw.weight"], w[p + "dw.bias"]).T  # (T, C)
        h = layer_norm(h, w[p + "norm.weight"], w[p + "norm.bias"])
        h = gelu(h @ w[p + "pw1.weight"].T + w[p + "pw1.bias"])  # (T, n_ff)
        h = (h @ w[p + "pw2.weight"].T + w[p + "pw2.bias"]) * w[p + "gamma.weight"]  # (T, C)
        x = x + h.T
        layer += 1
    x = layer_norm(x.T, w["output_norm.weight"], w["output_norm.bias"])  # (T, C) step 6
    return x @ w["output.weight"].T + w["output.bias"]  # (T, 1282) step 7: head


def reference_istft(frames: np.ndarray) -> np.ndarray:
    """Step 8 written plainly: an explicit inverse real DFT per frame, window, overlap-add."""
    n_frames = frames.shape[0]
    magnitude = np.minimum(np.exp(frames[:, :N_BINS]), 100.0)
    spectrum = magnitude * np.exp(1j * frames[:, N_BINS:])
    # irfft by definition: x[n] = (X_0 + X_{N/2}(-1)^n + 2 Σ Re(X_k e^{2πikn/N})) / N,
    # the imaginary parts of the DC and Nyquist bins ignored
    n = np.arange(N_FFT)
    weights = np.full(N_BINS, 2.0)
    weights[0] = weights[-1] = 1.0
    basis = np.exp(2j * np.pi * np.outer(np.arange(N_BINS), n) / N_FFT)  # (641, 1280)
    window = np.array([0.5 - 0.5 * np.cos(2 * np.pi * i / N_FFT) for i in range(N_FFT)])
    length = (n_frames - 1) * HOP + N_FFT
    audio = np.zeros(length)
    envelope = np.zeros(length)
    for t in range(n_frames):
        coefficients = spectrum[t] * weights
        coefficients[0] = coefficients[0].real
        coefficients[-1] = coefficients[-1].real
        frame = (coefficients @ basis).real / N_FFT
        audio[t * HOP : t * HOP + N_FFT] += frame * window
        envelope[t * HOP : t * HOP + N_FFT] += window**2
    pad = (N_FFT - HOP) // 2
    return audio[pad : length - pad] / envelope[pad : length - pad]


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(ours - reference).max() / np.abs(reference).max())


# ----------------------------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("seed", [0, 1])
def test_vocoder_matches_numpy_reference(
    vocoder: WavTokenizerVocoder, vocoder_path: Path, seed: int
) -> None:
    """llama.cpp's graph + our ISTFT equal the float64 reference: the head output within
    HEAD_TOLERANCE = 1e-3 (measured 2.3e-4 to 3.3e-4 relative: float32, F16 im2col,
    tanh-vs-erf GELU), the audio within AUDIO_TOLERANCE = 2e-3 (measured 3.1e-4 to 4.5e-4)."""
    codes = np.random.default_rng(seed).integers(0, TINY_WAVTOKENIZER.n_codes, N_CODES)
    weights = read_weights(vocoder_path)
    expected_frames = reference_frames(weights, codes, TINY_WAVTOKENIZER.n_groups)
    expected_audio = reference_istft(expected_frames)

    frames = vocoder.spectrum_frames(codes)
    audio = vocoder.decode(codes)

    assert frames.shape == (N_CODES, SPECTRUM_CHANNELS)
    assert relative_error(frames, expected_frames) < HEAD_TOLERANCE
    assert audio.shape == (N_CODES * HOP,) and audio.dtype == np.float32
    assert relative_error(audio, expected_audio) < AUDIO_TOLERANCE
    assert 0.01 < float(audio.std()) < 1.0  # audio-like level, neither silent nor clipping


@pytest.mark.parametrize("n_frames", [1, 2, 5, 75])
def test_istft_matches_plain_loop_and_length(n_frames: int) -> None:
    frames = np.random.default_rng(n_frames).normal(0.0, 1.0, (n_frames, SPECTRUM_CHANNELS))
    frames[:, :N_BINS] += 1.0
    audio = istft(frames.astype(np.float32))
    assert audio.shape == (HOP * n_frames,) and audio.dtype == np.float32
    reference = reference_istft(frames.astype(np.float32).astype(np.float64))
    assert relative_error(audio, reference) < ISTFT_TOLERANCE


def test_istft_inverts_torch_stft() -> None:
    """Analyse a signal with torch.stft (Hann, hop 320, "same" framing: 480 zeros each side),
    feed log-magnitude and phase to our ISTFT: the signal comes back, edges included."""
    n_frames = 30
    signal = torch.from_numpy(np.random.default_rng(3).normal(0.0, 0.1, n_frames * HOP))
    pad = (N_FFT - HOP) // 2
    spectrum = torch.stft(
        torch.nn.functional.pad(signal, (pad, pad)),
        n_fft=N_FFT,
        hop_length=HOP,
        window=torch.hann_window(N_FFT, dtype=torch.float64),
        center=False,
        return_complex=True,
    ).T.numpy()  # (T, 641) complex128
    assert spectrum.shape == (n_frames, N_BINS)
    frames = np.concatenate([np.log(np.abs(spectrum)), np.angle(spectrum)], axis=1)
    audio = istft(frames)
    assert relative_error(audio, signal.numpy()) < ROUND_TRIP_TOLERANCE


def test_istft_clips_magnitude() -> None:
    """exp(log-magnitude) is clipped at 100, as ISTFTHead does: huge values stay finite."""
    frames = np.zeros((4, SPECTRUM_CHANNELS), dtype=np.float32)
    frames[:, :N_BINS] = 80.0  # exp(80) overflows float32
    clipped = frames.copy()
    clipped[:, :N_BINS] = np.log(100.0)
    np.testing.assert_allclose(istft(frames), istft(clipped), rtol=1e-6)


def test_decode_rejects_too_many_codes(vocoder: WavTokenizerVocoder) -> None:
    """More codes than the window would abort llama.cpp; we raise instead, and stay usable."""
    with pytest.raises(LlamaError, match=f"window of {MAX_CODES}"):
        vocoder.decode(np.zeros(MAX_CODES + 1, dtype=np.int64))
    assert vocoder.decode(np.zeros(MAX_CODES, dtype=np.int64)).shape == (MAX_CODES * HOP,)


@pytest.mark.parametrize("bad_code", [-1, 4096])
def test_decode_rejects_codes_outside_the_codebook(
    vocoder: WavTokenizerVocoder, bad_code: int
) -> None:

    codes = np.array([5, bad_code, 7])
    with pytest.raises(LlamaError, match=f"code {bad_code} is outside the codebook 0..4095"):
        vocoder.decode(codes)
    with pytest.raises(ValueError):
        vocoder.decode(np.array([], dtype=np.int64))


def test_vocoder_rejects_a_language_model(tiny_models: Path) -> None:
    """A wrong file in the codec role is an error naming it, not garbage audio."""
    path = tiny_models / "orpheus-tiny.gguf"
    with pytest.raises(LlamaError, match="is not a WavTokenizer decoder"):
        WavTokenizerVocoder(path, CPU, max_codes=8, threads=THREADS)


def test_writer_metadata_and_determinism(vocoder_path: Path, tmp_path: Path) -> None:
    """The KV of docs/engines.md, "WavTokenizer: GGUF layout", the same bytes for the same seed,
    and `write_tiny_*` keeps a file."""
    fields = gguf.GGUFReader(vocoder_path).fields
    expected = {
        "general.architecture": "wavtokenizer-dec",
        "wavtokenizer-dec.embedding_length": 1282,
        "wavtokenizer-dec.block_count": 6,  # max(posnet 6, convnext 2): llama.cpp asserts it
        "wavtokenizer-dec.vocab_size": 4096,
        "wavtokenizer-dec.features_length": 16,
        "wavtokenizer-dec.posnet.block_count": 6,
        "wavtokenizer-dec.convnext.block_count": 2,
        "wavtokenizer-dec.attention.group_norm_groups": 8,
        "wavtokenizer-dec.attention.causal": False,
        "tokenizer.ggml.model": "none",
    }
    assert {key: fields[key].contents() for key in expected} == expected

    copy = tmp_path / "again.gguf"
    write_wavtokenizer(copy, TINY_WAVTOKENIZER, SEED)
    again = read_weights(copy)
    assert all(
        np.array_equal(again[name], values) for name, values in read_weights(vocoder_path).items()
    )
    before = vocoder_path.stat().st_mtime_ns
    assert write_tiny_wavtokenizer(vocoder_path.parent) == vocoder_path
    assert vocoder_path.stat().st_mtime_ns == before

    assert 64e6 < FULL_WAVTOKENIZER.n_params < 66e6  # WavTokenizer-large: about 65 M
    with pytest.raises(ValueError, match="not a multiple of n_groups"):
        replace(TINY_WAVTOKENIZER, n_embd=30)
