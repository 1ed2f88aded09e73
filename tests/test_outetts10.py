"""OuteTTS 1.0 in the engine: the tiny Llama GGUF with 1.0's vocabulary on llama.cpp and the tiny
DAC in torch (both from tools/modelgen), the built-in speaker profile; nothing mocked."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from wyoming_multitts.catalog import ModelSpec, load_catalog
from wyoming_multitts.codecs.windowed import StreamWindows
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines.base import VoiceSettings
from wyoming_multitts.engines.outetts import dialects
from wyoming_multitts.engines.outetts import engine as outetts
from wyoming_multitts.engines.outetts.prompt10 import DEFAULT_SAMPLING
from wyoming_multitts.errors import EngineError, OptionError, SpeakerError
from wyoming_multitts.formats.gguf import gguf_attention_scores_bytes, gguf_kv_cache_bytes
from wyoming_multitts.llm.model import DEFAULT_BATCH
from wyoming_multitts.stats import PieceStats

MODEL = "outetts-1.0-tiny"
SPEAKER = "en-female-1-neutral"
FRAME_SAMPLES = 320  # one DAC frame (a c1 and a c2 code) is 320 samples at 24 kHz
TINY_MAX_TOKENS = 240  # the tiny catalog's max_tokens
TEXT = "Hello there, how are you?"
STREAM_TOLERANCE = 1e-5
"""max |stream - one whole decode| of the engine's default windows (10/10 frames of context,
DAC's receptive field). Measured on the tiny model, 5 seeds: at most 2.2e-6 (float32 rounding;
SNR over 119 dB). With 5/5 frames of context: 0.21 (18 dB); 2/2: 0.47 (11 dB)."""


def model_spec(tiny_models: Path, model: str = MODEL, **options: object) -> ModelSpec:
    spec = load_catalog(tiny_models / "voices.yaml").models[model]
    return ModelSpec(**{**spec.__dict__, "options": {**spec.options, **options}})


def files(tiny_models: Path, vocoder: str = "dac-tiny-24khz.pth") -> dict[str, Path]:
    return {"model": tiny_models / f"{MODEL}.gguf", "vocoder": tiny_models / vocoder}


def load_engine(tiny_models: Path, **options: object) -> outetts.OuteTTS:
    return outetts.load(model_spec(tiny_models, **options), files(tiny_models), CPU, threads=2)


@pytest.fixture(scope="module")
def engine(tiny_models: Path) -> Iterator[outetts.OuteTTS]:
    loaded = load_engine(tiny_models)
    yield loaded
    loaded.close()


def speak(
    engine: outetts.OuteTTS,
    text: str = TEXT,
    speaker: str | None = SPEAKER,
    cancel: threading.Event | None = None,
    **options: object,
) -> tuple[list[np.ndarray], PieceStats]:
    voice = VoiceSettings(name="v", speaker=speaker, language="en", options=options)
    stats = PieceStats("v")
    pieces = list(engine.synthesize(text, voice, cancel or threading.Event(), stats))
    return pieces, stats


# ----------------------------------------------------------------------------------------------
# Loading: the version, its defaults and its codec


def test_version_and_its_defaults_come_from_the_vocabulary(engine: outetts.OuteTTS) -> None:
    assert engine.version == "1.0"
    assert (engine.sample_rate, engine.max_text_chars) == (24_000, 200)
    options = engine._settings.model.options
    assert options == replace(outetts.default_options("1.0"), max_tokens=TINY_MAX_TOKENS)
    assert (options.prompt_layout, options.guide_tokens, options.n_ctx) == ("inline", False, 6144)
    assert engine._windows == StreamWindows(10, 10, 1, 64)  # exact: DAC's 10/10
    assert engine._settings.model.sampling == DEFAULT_SAMPLING


def test_0_3_keeps_its_own_defaults(tiny_models: Path) -> None:
    loaded = outetts.load(
        model_spec(tiny_models, "outetts-0.3-tiny"),
        {
            "model": tiny_models / "outetts-0.3-tiny.gguf",
            "vocoder": tiny_models / "wavtokenizer-tiny.gguf",
        },
        CPU,
        threads=2,
    )
    try:
        assert loaded.version == "0.3"
        assert loaded._settings.model.options.prompt_layout == "inline"
        assert loaded._windows == StreamWindows(40, 20, 10, 150)
    finally:
        loaded.close()


@pytest.mark.parametrize(
    ("model", "vocoder", "words"),
    [
        (MODEL, "wavtokenizer-tiny.gguf", ["OuteTTS 1.0", dialects.DAC_REPO, dialects.DAC_FILE]),
        (
            "outetts-0.3-tiny",
            "dac-tiny-24khz.pth",
            ["OuteTTS 0.2/0.3", dialects.WAVTOKENIZER_REPO, dialects.WAVTOKENIZER_FILE],
        ),
    ],
)
def test_the_other_versions_vocoder_is_named_with_the_fix(
    tiny_models: Path, model: str, vocoder: str, words: list[str]
) -> None:
    paths = {"model": tiny_models / f"{model}.gguf", "vocoder": tiny_models / vocoder}
    with pytest.raises(EngineError) as raised:
        outetts.load(model_spec(tiny_models, model), paths, CPU, threads=2)
    assert all(word in str(raised.value) for word in [str(paths["vocoder"]), *words])


def test_memory_estimate_holds_the_dac_and_its_window_buffers(tiny_models: Path) -> None:
    paths = files(tiny_models)
    gguf, dac = paths["model"].stat().st_size, paths["vocoder"].stat().st_size
    kv = gguf_kv_cache_bytes(paths["model"], 6144)  # 1.0's n_ctx
    scores = gguf_attention_scores_bytes(paths["model"], 6144, DEFAULT_BATCH)
    llm = gguf + kv + scores
    buffers = outetts.estimate_bytes(model_spec(tiny_models), paths) - llm - dac
    # windows of 84 frames; measured on the tiny DAC: +7.5 MB at 21 frames, +11 MB at 100
    assert 11e6 < buffers < 30e6
    larger = outetts.estimate_bytes(model_spec(tiny_models, max_chunk_codes=500), paths)
    assert larger - llm - dac > 2 * buffers  # windows of 520 frames


# ----------------------------------------------------------------------------------------------
# Speaking


def test_audio_streams_in_growing_windows_of_whole_frames(engine: outetts.OuteTTS) -> None:
    pieces, stats = speak(engine)
    frames = [piece.size // FRAME_SAMPLES for piece in pieces]
    assert frames[:6] == [1, 2, 4, 8, 16, 32], "first audio after 1 + 10 frames, then doubling"
    assert all(p.dtype == np.float32 and p.size % FRAME_SAMPLES == 0 for p in pieces)
    audio = np.concatenate(pieces)
    # every frame read from the reply is in the audio, 320 samples each (the utterance's last 8
    # are DAC's missing samples, padded with silence)
    assert audio.size == stats.frames * FRAME_SAMPLES
    assert 1 <= stats.frames <= stats.tokens // 2 and stats.tokens <= TINY_MAX_TOKENS
    assert stats.end == "max_tokens"  # random weights never say <|audio_end|>
    assert np.isfinite(audio).all() and 0.01 < audio.std() and np.abs(audio).max() < 1
    assert not audio[-8:].any()


def test_stream_equals_one_whole_decode(engine: outetts.OuteTTS, tiny_models: Path) -> None:
    """The same seed gives the same frames; the default windows (10/10 frames of context) give
    the audio of one DAC pass over them all."""
    streamed, stats = speak(engine, seed=7)
    whole_engine = load_engine(tiny_models, first_chunk_codes=400, max_chunk_codes=400)
    try:
        whole, whole_stats = speak(whole_engine, seed=7)
    finally:
        whole_engine.close()
    assert len(whole) == 1 and whole_stats.frames == stats.frames
    error = np.abs(np.concatenate(streamed) - whole[0]).max()
    assert error <= STREAM_TOLERANCE, error


def test_inline_layout_reads_the_profile_every_time(engine: outetts.OuteTTS) -> None:
    speak(engine, "One.")
    _, stats = speak(engine, "Two.")
    assert stats.cached_tokens == 3  # <|im_start|>\n<|text_start|>: the rest follows the text
    assert stats.prompt_tokens > 1800  # the profile's ~1 800 tokens, again


def test_turn_layout_keeps_the_profile_in_the_cache(
    engine: outetts.OuteTTS, tiny_models: Path
) -> None:
    speak(engine, "First.", prompt_layout="turn")
    cached, stats = speak(engine, TEXT, prompt_layout="turn", seed=4)
    assert stats.cached_tokens > 1800 and stats.prompt_tokens < 100
    fresh = load_engine(tiny_models)
    try:
        again, fresh_stats = speak(fresh, TEXT, prompt_layout="turn", seed=4)
        assert fresh_stats.cached_tokens == 0
    finally:
        fresh.close()
    np.testing.assert_allclose(np.concatenate(cached), np.concatenate(again), atol=1e-5)


def test_no_speaker_and_guide_tokens_speak_too(engine: outetts.OuteTTS) -> None:
    plain = np.concatenate(speak(engine)[0])
    guided = np.concatenate(speak(engine, guide_tokens=True)[0])
    assert guided.size and not np.array_equal(plain, guided)  # the first word was written for it
    assert speak(engine, speaker=None)[0]


def test_other_versions_speaker_is_refused_naming_the_built_in(engine: outetts.OuteTTS) -> None:
    with pytest.raises(SpeakerError, match=SPEAKER):
        speak(engine, speaker="en_male_1")


def test_cancel_stops_within_a_token_and_the_model_speaks_on(engine: outetts.OuteTTS) -> None:
    cancel = threading.Event()
    cancel.set()
    assert speak(engine, cancel=cancel)[0] == []
    assert engine._lm.n_past <= 3  # not even the ~2 000-token prompt was evaluated
    before = np.concatenate(speak(engine, "Again, please.")[0])
    cancel = threading.Event()
    voice = VoiceSettings(name="v", speaker=SPEAKER, language="en")
    stream = engine.synthesize(TEXT, voice, cancel, PieceStats("v"))
    assert next(stream).size == FRAME_SAMPLES
    cancel.set()
    assert list(stream) == []  # stops at the next token, before any further window
    assert np.array_equal(np.concatenate(speak(engine, "Again, please.")[0]), before)


# ----------------------------------------------------------------------------------------------
# Options


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"context_right": 0}, OptionError, "context_right must be at least 1"),
        ({"prompt_layout": "sideways"}, OptionError, "prompt_layout must be one of inline, turn"),
        ({"temprature": 0.5}, OptionError, "unknown option(s) temprature"),
        ({"guide_tokens": "yes"}, OptionError, "guide_tokens must be true or false"),
    ],
)
def test_bad_model_options_are_named(
    tiny_models: Path, options: dict, error: type, words: str
) -> None:
    with pytest.raises(error) as raised:
        load_engine(tiny_models, **options).close()
    assert words in str(raised.value)


def test_a_context_too_small_for_the_profile_says_which_option(tiny_models: Path) -> None:
    small = load_engine(tiny_models, n_ctx=1024)
    try:
        with pytest.raises(EngineError, match="raise the model's n_ctx option"):
            speak(small)
        assert speak(small, prompt_layout="turn", speaker=None)[0]  # without a profile it fits
    finally:
        small.close()


def test_voice_options_override_the_models(engine: outetts.OuteTTS) -> None:
    _, stats = speak(engine, max_tokens=40)
    assert stats.tokens == 40 and stats.frames <= 20
    with pytest.raises(OptionError, match="max_tokens"):
        speak(engine, max_tokens="many")
