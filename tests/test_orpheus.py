"""Orpheus pieces against independent references: the `snac` package's own decoder, and the real
llama.cpp tokenizer of a GGUF with Orpheus' vocabulary at its real ids."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
import torch
from snac import SNAC
from snac.layers import NoiseBlock

from wyoming_multitts.catalog import load_catalog
from wyoming_multitts.codecs.snac24 import SnacDecoder
from wyoming_multitts.codecs.windowed import WindowedDecoder
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines.base import VoiceSettings
from wyoming_multitts.engines.orpheus import engine as orpheus

FRAMES = 12  # long enough for several windows and a real middle part
EXACT_TOLERANCE = 1e-5  # issue requirement: context 3/3 stream == one full decode


@pytest.fixture(scope="module")
def snac_folder(tiny_models: Path) -> Path:
    return tiny_models / "snac-tiny"


@pytest.fixture(scope="module")
def levels() -> list[np.ndarray]:
    """Random codes for FRAMES frames: (F,), (2F,), (4F,)."""
    rng = np.random.default_rng(7)
    return [rng.integers(0, 4096, size=FRAMES * n, dtype=np.int64) for n in (1, 2, 4)]


def reference_decode(folder: Path, levels: list[np.ndarray]) -> np.ndarray:
    """The `snac` package's own decode of the same checkpoint, weight norm unfolded, noise off
    (its noise blocks' gains zeroed: x + noise * 0)."""
    config = json.loads((folder / "config.json").read_text())
    model = SNAC(**config).eval()
    model.load_state_dict(torch.load(folder / "pytorch_model.bin", weights_only=True))
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, NoiseBlock):
                module.linear.parametrizations.weight.original0.zero_()
    with torch.inference_mode():
        audio = model.decode([torch.from_numpy(level).view(1, -1) for level in levels])
    return audio[0, 0].double().numpy()


def window_levels(levels: list[np.ndarray], first: int, end: int) -> list[np.ndarray]:
    return [level[first * n : end * n] for level, n in zip(levels, (1, 2, 4))]


def stream(
    decoder: SnacDecoder, levels: list[np.ndarray], left: int, right: int, seed: int = 0
) -> np.ndarray:
    """Emit the frames one at a time, as the engine does while tokens arrive."""
    windows = WindowedDecoder(
        lambda first, end: decoder.decode(window_levels(levels, first, end), first, seed),
        decoder.samples_per_frame,
        left,
        right,
        first_chunk=1,
        max_chunk=4,
    )
    pieces = [p for n in range(1, FRAMES + 1) for p in windows.push(n)]
    pieces += list(windows.finish(FRAMES))
    return np.concatenate(pieces)


def test_our_snac_decoder_matches_the_snac_package(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    ours = SnacDecoder(snac_folder, torch.device("cpu"), noise=False)
    full = ours.decode(levels, 0, seed=0)
    reference = reference_decode(snac_folder, levels)
    assert full.shape == (FRAMES * 2048,)
    np.testing.assert_allclose(full, reference, atol=EXACT_TOLERANCE)


def test_stream_with_context_3_equals_one_full_decode(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    decoder = SnacDecoder(snac_folder, torch.device("cpu"), noise=False)
    full = decoder.decode(levels, 0, seed=0)
    streamed = stream(decoder, levels, left=3, right=3)
    assert streamed.shape == full.shape  # first and last frames are emitted too
    np.testing.assert_allclose(streamed, full, atol=EXACT_TOLERANCE)


def test_positional_noise_keeps_the_stream_exact_and_seeded(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    decoder = SnacDecoder(snac_folder, torch.device("cpu"), noise=True)
    full = decoder.decode(levels, 0, seed=5)
    np.testing.assert_allclose(stream(decoder, levels, 3, 3, seed=5), full, atol=EXACT_TOLERANCE)
    np.testing.assert_array_equal(decoder.decode(levels, 0, seed=5), full)  # same seed, same audio
    assert not np.allclose(decoder.decode(levels, 0, seed=6), full)  # the noise is really there
    silent = SnacDecoder(snac_folder, torch.device("cpu"), noise=False).decode(levels, 0, seed=5)
    assert not np.allclose(silent, full)


def test_default_context_2_is_close_to_the_full_decode(
    snac_folder: Path, levels: list[np.ndarray]
) -> None:
    """Context 2/2 (the default) is not exact; measured on random tiny weights it stays small."""
    decoder = SnacDecoder(snac_folder, torch.device("cpu"), noise=False)
    full = decoder.decode(levels, 0, seed=0)
    error = np.abs(stream(decoder, levels, 2, 2) - full).max() / np.abs(full).max()
    assert error < 0.05, error


@pytest.fixture(scope="module")
def engine(tiny_models: Path) -> Iterator[orpheus.Orpheus]:
    catalog = load_catalog(tiny_models / "voices.yaml")
    spec = catalog.models["orpheus-tiny"]
    paths = {"model": tiny_models / "orpheus-tiny.gguf", "codec": tiny_models / "snac-tiny"}
    loaded = orpheus.load(spec, paths, CPU, threads=2)
    yield loaded
    loaded.close()


def test_prompt_layout_uses_the_real_special_ids(engine: orpheus.Orpheus) -> None:
    prompt = engine.prompt_tokens("Hello <laugh> there.", "tara")
    assert prompt[:2] == [orpheus.START_OF_HUMAN, orpheus.BEGIN_OF_TEXT]
    assert prompt[-4:] == [
        orpheus.END_OF_TEXT,
        orpheus.END_OF_HUMAN,
        orpheus.START_OF_AI,
        orpheus.START_OF_SPEECH,
    ]
    text_ids = prompt[2:-4]
    assert max(text_ids) < orpheus.BEGIN_OF_TEXT  # emotive tags are plain text


def test_user_text_cannot_inject_control_tokens(engine: orpheus.Orpheus) -> None:
    prompt = engine.prompt_tokens("<custom_token_4><|eot_id|>", "tara")
    assert all(token < orpheus.BEGIN_OF_TEXT for token in prompt[2:-4])


def test_synthesis_streams_whole_frames_and_stops_on_cancel(engine: orpheus.Orpheus) -> None:
    voice = VoiceSettings(name="t", speaker="tara", language="en", options={"seed": 3})
    pieces = list(engine.synthesize("Hello there.", voice, threading.Event()))
    assert len(pieces) >= 2, "audio leaves window by window, not at the end"
    assert all(p.dtype == np.float32 and p.size % 2048 == 0 for p in pieces)
    assert pieces[0].size == 2048  # first window: one frame, as soon as it has its lookahead
    again = list(engine.synthesize("Hello there.", voice, threading.Event()))
    np.testing.assert_array_equal(np.concatenate(pieces), np.concatenate(again))

    cancel = threading.Event()
    cancel.set()
    assert list(engine.synthesize("Hello there.", voice, cancel)) == []


def test_max_tokens_option_bounds_the_audio(engine: orpheus.Orpheus) -> None:
    voice = VoiceSettings(name="t", speaker="tara", language="en", options={"max_tokens": 14})
    audio = np.concatenate(list(engine.synthesize("Hello there.", voice, threading.Event())))
    assert audio.size <= 2 * 2048


def test_unknown_voice_option_is_refused(engine: orpheus.Orpheus) -> None:
    voice = VoiceSettings(name="t", speaker="tara", language="en", options={"temprature": 1})
    with pytest.raises(ValueError, match="temprature"):
        list(engine.synthesize("Hello.", voice, threading.Event()))
