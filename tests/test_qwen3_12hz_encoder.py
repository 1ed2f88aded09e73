"""Our Qwen3-TTS 12 Hz speech-tokenizer encoder against the official one (qwen-tts 0.1.1 on
transformers 4.57.3, `tests/qwen3_12hz_encoder_oracle.py`, run by the oracle venv's python) on the
tiny random Base model that `modelgen` writes, plus its loading errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from tools.modelgen import qwen3tts
from wyoming_multitts.codecs import qwen3_12hz_encoder
from wyoming_multitts.codecs.qwen3_12hz_encoder import (
    MimiEncoderConfig,
    Qwen3SpeechEncoder,
    load_speech_encoder,
)
from wyoming_multitts.errors import EngineError

from .test_qwen3tts_convert import oracle_python

ORACLE_SCRIPT = Path(__file__).resolve().parent / "qwen3_12hz_encoder_oracle.py"
ORACLE_TIMEOUT = 300
"""Seconds for the oracle run (about 10 s here: importing qwen_tts and transformers dominates)."""
THREADS = 2
SAMPLE_RATE = 24_000

CLIP_SAMPLES = {
    "three_seconds": 3 * SAMPLE_RATE + 777,
    "whole_frames": 20 * 1920,
    "one_frame_and_a_sample": 1921,
    "last_sample_short": 1919,
    "under_a_frame": 1000,
    "twelve_seconds": 12 * SAMPLE_RATE + 5,
}
"""Test clips by length: mostly not multiples of 1920 samples, so the last frame is partial."""
LATENT_TOLERANCE = 1e-5
"""max |ours - official| allowed on the pre-quantization latent (peak |latent| ≈ 1.2, std 0.3).
Measured: 4.5e-8 on the two clips shorter than a frame, 0.0 on the others; at full size (the
random 0.6B benchmark model, 12 s and 3 s clips) 0.0, with all 16 codes equal."""
WINDOW_EFFECT = 1e-2
"""A sliding-window mask (the config's 16 frames) moves the latent by ≈0.08 on the 12 s clip and
changes 7 % of its codes: the official stack applies no window, and the test could tell."""


def clip(samples: int, seed: int) -> np.ndarray:
    """Deterministic test audio: two tones (one gliding) and a little noise, amplitude-modulated."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / SAMPLE_RATE
    tones = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.2 * np.sin(2 * np.pi * (330 + 200 * t) * t)
    audio = (tones + 0.05 * rng.standard_normal(samples)) * (0.5 + 0.5 * np.sin(3 * np.pi * t))
    return audio.astype(np.float32)


@pytest.fixture(scope="module")
def clips() -> dict[str, np.ndarray]:
    return {name: clip(samples, seed) for seed, (name, samples) in enumerate(CLIP_SAMPLES.items())}


@pytest.fixture(scope="module")
def speech_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Base model's speech_tokenizer/ folder, written by modelgen."""
    models = tmp_path_factory.mktemp("qwen3tts-tiny")
    qwen3tts.write_tiny(models)
    return models / qwen3tts.TINY_BASE_DIR / "speech_tokenizer"


@pytest.fixture(scope="module")
def reference(
    speech_tokenizer: Path, clips: dict[str, np.ndarray], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, np.ndarray]:
    """The official codes and latents of `clips` (see the oracle's docstring)."""
    folder = tmp_path_factory.mktemp("qwen3-12hz-encoder")
    np.savez(folder / "audio.npz", **clips)
    done = subprocess.run(
        [
            str(oracle_python()),
            str(ORACLE_SCRIPT),
            str(speech_tokenizer),
            str(folder / "audio.npz"),
            str(folder / "reference.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=ORACLE_TIMEOUT,
    )
    if done.returncode != 0:
        pytest.fail(f"{ORACLE_SCRIPT.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    with np.load(folder / "reference.npz") as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def encoder(speech_tokenizer: Path) -> Qwen3SpeechEncoder:
    torch.set_num_threads(THREADS)
    return load_speech_encoder(speech_tokenizer, torch.device("cpu"))


def latent(encoder: Qwen3SpeechEncoder, audio: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return encoder.latent(torch.from_numpy(audio)[None, None])[0].numpy()  # (H, T)


@pytest.mark.slow
@pytest.mark.parametrize("name", CLIP_SAMPLES)
def test_matches_official(
    encoder: Qwen3SpeechEncoder,
    clips: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    name: str,
) -> None:
    codes = encoder.encode(clips[name])
    frames = -(-CLIP_SAMPLES[name] // 1920)  # ceil: the partial last frame is encoded too
    assert codes.dtype == np.int64
    assert codes.shape == (frames, 4) == reference[f"{name}.codes"].shape
    np.testing.assert_array_equal(codes, reference[f"{name}.codes"])
    error = np.abs(latent(encoder, clips[name]) - reference[f"{name}.latent"]).max()
    assert error <= LATENT_TOLERANCE


@pytest.mark.slow
def test_official_applies_no_sliding_window(
    encoder: Qwen3SpeechEncoder,
    clips: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the config's window (16 frames) the latent would be clearly off: the comparison above
    sees the attention reach, and transformers 4.57.3 attends to every earlier frame."""
    full_mask = qwen3_12hz_encoder.rope_and_mask
    window = 16
    monkeypatch.setattr(
        qwen3_12hz_encoder,
        "rope_and_mask",
        lambda length, inv_freq, _, dtype: full_mask(length, inv_freq, window, dtype),
    )
    windowed = latent(encoder, clips["twelve_seconds"])
    assert np.abs(windowed - reference["twelve_seconds.latent"]).max() > WINDOW_EFFECT


def test_empty_and_wrong_shape(encoder: Qwen3SpeechEncoder) -> None:
    assert encoder.encode(np.zeros(0, dtype=np.float32)).shape == (0, 4)
    with pytest.raises(ValueError, match="mono"):
        encoder.encode(np.zeros((100, 2), dtype=np.float32))


def test_full_size_layout_matches_modelgen() -> None:
    """At full size our tensors are the release's (modelgen's plan) minus the ones encoding
    never reads: codebooks past the 16 kept codes, `initialized` flags, decode-side projections."""
    shape = qwen3tts.FULL_0B6_SHAPE
    config = MimiEncoderConfig.from_dict(qwen3tts.speech_tokenizer_config(shape)["encoder_config"])
    with torch.device("meta"):
        model = Qwen3SpeechEncoder(config, shape.num_code_groups)
    assert (model.samples_per_frame, config.downsample_kernel) == (1920, 4)
    ours = {f"encoder.{name}": tuple(value.shape) for name, value in model.state_dict().items()}
    plan = {
        tensor.name: tensor.shape
        for tensor in qwen3tts.speech_tokenizer_plan(shape)
        if tensor.name.startswith("encoder.")
    }
    assert {name: plan[name] for name in ours} == ours
    quantizer = "encoder.quantizer.{}_residual_vector_quantizer"
    semantic, acoustic = quantizer.format("semantic"), quantizer.format("acoustic")
    unread = {f"{rvq}.output_proj.weight" for rvq in (semantic, acoustic)}
    unread.add(f"{semantic}.layers.0.codebook.initialized")
    for i in range(31):
        unread.add(f"{acoustic}.layers.{i}.codebook.initialized")
        if i >= 15:
            unread |= {
                f"{acoustic}.layers.{i}.codebook.{buffer}"
                for buffer in ("cluster_usage", "embed_sum")
            }
    assert set(plan) - set(ours) == unread


@pytest.mark.slow
def test_encoder_only_file_loads(
    speech_tokenizer: Path,
    clips: dict[str, np.ndarray],
    encoder: Qwen3SpeechEncoder,
    tmp_path: Path,
) -> None:
    """Only the encoder tensors that encoding uses are read: a file of just those loads and
    encodes the same."""
    state = load_file(speech_tokenizer / "model.safetensors")
    used = {f"encoder.{name}" for name in encoder.state_dict()}
    (tmp_path / "config.json").write_bytes((speech_tokenizer / "config.json").read_bytes())
    save_file({key: state[key] for key in used}, tmp_path / "model.safetensors")
    lean = load_speech_encoder(tmp_path, torch.device("cpu"))
    audio = clips["three_seconds"]
    np.testing.assert_array_equal(lean.encode(audio), encoder.encode(audio))


@pytest.mark.parametrize(
    "broken, file, message",
    [
        ("no config", "config.json", "is missing"),
        ("no weights", "model.safetensors", "is missing"),
        ("garbage config", "config.json", "is not a Qwen3-TTS 12 Hz tokenizer config"),
        ("no encoder config", "config.json", "is not a Qwen3-TTS 12 Hz tokenizer config"),
        ("garbage weights", "model.safetensors", "cannot read"),
        ("dropped tensor", "model.safetensors", "encoder.downsample.conv.weight"),
        ("wrong shape", "model.safetensors", "tensor encoder.downsample.conv.weight has shape"),
    ],
)
def test_broken_files_name_the_file(
    speech_tokenizer: Path, tmp_path: Path, broken: str, file: str, message: str
) -> None:

    config = (speech_tokenizer / "config.json").read_text()
    state = load_file(speech_tokenizer / "model.safetensors")
    if broken == "garbage config":
        config = "{not json"
    elif broken == "no encoder config":
        config = config.replace('"encoder_config"', '"other_config"')
    elif broken == "dropped tensor":
        del state["encoder.downsample.conv.weight"]
    elif broken == "wrong shape":
        state["encoder.downsample.conv.weight"] = torch.zeros(3)
    if broken != "no config":
        (tmp_path / "config.json").write_text(config)
    if broken == "garbage weights":
        (tmp_path / "model.safetensors").write_bytes(b"this is no safetensors file" * 10)
    elif broken != "no weights":
        save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(EngineError, match=message) as caught:
        load_speech_encoder(tmp_path, torch.device("cpu"))
    assert str(tmp_path / file) in str(caught.value)
