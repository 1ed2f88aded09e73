"""The OuteTTS engine on tiny random models in the real formats (llama.cpp LM and vocoder)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from wyoming_multitts.catalog import ModelSpec, load_catalog
from wyoming_multitts.codecs.wavtokenizer import WavTokenizerVocoder
from wyoming_multitts.codecs.windowed import WindowedDecoder
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines.base import VoiceSettings
from wyoming_multitts.engines.outetts import engine as outetts
from wyoming_multitts.errors import VoiceError

CODE_SAMPLES = 320  # one WavTokenizer code is 320 samples at 24 kHz
STREAM_MIN_SNR_DB = 18.0  # windowed vs one whole decode (measured: 21 dB tiny, 23 dB full size)


def load_engine(tiny_models: Path, model: str, **options: object) -> outetts.OuteTTS:
    spec = load_catalog(tiny_models / "voices.yaml").models[model]
    spec = ModelSpec(**{**spec.__dict__, "options": {**spec.options, **options}})
    paths = {
        "model": tiny_models / f"{model}.gguf",
        "vocoder": tiny_models / "wavtokenizer-tiny.gguf",
    }
    return outetts.load(spec, paths, CPU, threads=2)


@pytest.fixture(scope="module", params=["outetts-0.3-tiny", "outetts-0.2-tiny"])
def engine(request: pytest.FixtureRequest, tiny_models: Path) -> Iterator[outetts.OuteTTS]:
    loaded = load_engine(tiny_models, request.param)
    yield loaded
    loaded.close()


def speak(
    engine: outetts.OuteTTS, text: str, speaker: str | None = "en_male_1", **options: object
) -> list[np.ndarray]:
    voice = VoiceSettings(name="v", speaker=speaker, language="en", options=options)
    return list(engine.synthesize(text, voice, threading.Event()))


def test_audio_streams_in_windows_of_whole_codes(engine: outetts.OuteTTS) -> None:
    pieces = speak(engine, "Hello there, how are you?")
    assert len(pieces) >= 2, "audio leaves window by window, not at the end"
    assert all(p.dtype == np.float32 and p.size % CODE_SAMPLES == 0 for p in pieces)
    audio = np.concatenate(pieces)
    assert audio.size > 0 and np.isfinite(audio).all()


def test_turn_layout_keeps_the_speaker_in_the_kv_cache(
    engine: outetts.OuteTTS, tiny_models: Path
) -> None:
    speak(engine, "Someone else first.", speaker="en_female_1", prompt_layout="turn")
    first = speak(engine, "The first request.", prompt_layout="turn")
    full_prefill = engine.last_prefill_tokens
    cached = speak(engine, "Hello there, how are you?", seed=4, prompt_layout="turn")
    assert engine.last_prefill_tokens < full_prefill / 10  # only the new words were evaluated
    # reusing the cache changes nothing: a fresh engine says exactly the same
    fresh = load_engine(tiny_models, f"outetts-{engine.version}-tiny", prompt_layout="turn")
    try:
        again = speak(fresh, "Hello there, how are you?", seed=4)
        assert fresh.last_prefill_tokens > 10 * engine.last_prefill_tokens  # it had no cache
    finally:
        fresh.close()
    np.testing.assert_allclose(np.concatenate(cached), np.concatenate(again), atol=1e-5)
    assert first  # the first request spoke too


def test_other_speaker_replaces_the_cached_prefix(engine: outetts.OuteTTS) -> None:
    speak(engine, "One.", speaker="en_male_1", prompt_layout="turn")
    speak(engine, "Two.", speaker="en_female_1", prompt_layout="turn")
    assert engine.last_prefill_tokens > 200  # a new speaker profile was evaluated


def test_official_inline_layout_is_the_default(engine: outetts.OuteTTS) -> None:
    """The layout the models were trained on: the speaker's audio follows the new words, so every
    request evaluates it again (only the speaker's words before the new text stay cached)."""
    assert engine._settings.model.options.prompt_layout == "inline"
    speak(engine, "One.")
    assert speak(engine, "Two.")
    assert engine.last_prefill_tokens > 200


def test_no_speaker_works_too(engine: outetts.OuteTTS) -> None:
    assert speak(engine, "No speaker at all.", speaker=None)


def test_long_output_never_overflows_the_vocoder(tiny_models: Path) -> None:
    """More codes than the vocoder's n_ubatch would abort llama.cpp: windows keep them apart."""
    engine = load_engine(tiny_models, "outetts-0.3-tiny", max_tokens=400, max_chunk_codes=40)
    try:
        audio = np.concatenate(speak(engine, "A sentence long enough for many codes. " * 3))
        assert audio.size > engine._windows.max_frames * CODE_SAMPLES
    finally:
        engine.close()


def test_unknown_speaker_names_the_built_ins(engine: outetts.OuteTTS) -> None:
    with pytest.raises(VoiceError, match="en_male_1"):
        speak(engine, "Hello.", speaker="nobody_here_9")


def test_cancel_stops_within_a_token(engine: outetts.OuteTTS) -> None:
    cancel = threading.Event()
    cancel.set()
    voice = VoiceSettings(name="v", speaker="en_male_1", language="en")
    assert list(engine.synthesize("Hello.", voice, cancel)) == []


def test_windowed_vocoder_stream_is_close_to_one_whole_decode(tiny_models: Path) -> None:
    """WavTokenizer's posnet normalises (GroupNorm) and attends over the whole sequence, so no
    window is exact and a "whole decode" itself depends on the utterance's length. With the
    default 40/20 codes of context the joined stream's error stays STREAM_MIN_SNR_DB below the
    signal; measured on random weights: 21 dB (tiny), 23 dB (full-size shape)."""
    codes = np.random.default_rng(3).integers(0, 4096, size=600)
    vocoder = WavTokenizerVocoder(
        tiny_models / "wavtokenizer-tiny.gguf", CPU, max_codes=600, threads=2
    )
    try:
        whole = vocoder.decode(codes)
        defaults = outetts.OuteOptions()
        windows = WindowedDecoder(
            lambda first, end: vocoder.decode(codes[first:end]),
            CODE_SAMPLES,
            defaults.context_left,
            defaults.context_right,
            defaults.first_chunk_codes,
            defaults.max_chunk_codes,
        )
        pieces = [p for n in range(1, codes.size + 1) for p in windows.push(n)]
        streamed = np.concatenate(pieces + list(windows.finish(codes.size)))
    finally:
        vocoder.close()
    assert streamed.shape == whole.shape
    snr_db = 10 * np.log10(np.sum(whole**2) / np.sum((streamed - whole) ** 2))
    assert snr_db > STREAM_MIN_SNR_DB, snr_db
