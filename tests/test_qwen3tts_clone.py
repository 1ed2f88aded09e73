"""Voice cloning with Qwen3-TTS Base models on the tiny random Base model in the official layout:
the speaker encoder, the x-vector and in-context (ICL) prompts, decoding after the reference,
compared with qwen-tts's `generate_voice_clone` itself (the oracle environment,
script/make-qwen-tts-oracle-env)."""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
import torch

from tools.modelgen import qwen3tts as tiny_models
from wyoming_multitts.audio import read_wav, resample, write_wav
from wyoming_multitts.engines.base import ReferenceAudio, VoiceSettings
from wyoming_multitts.engines.qwen3tts import config as qwen3_config
from wyoming_multitts.engines.qwen3tts import engine as qwen3tts
from wyoming_multitts.engines.qwen3tts import prompt as qwen3_prompt
from wyoming_multitts.engines.qwen3tts.speaker_encoder import MelFrontEnd, slaney_mel_filters
from wyoming_multitts.errors import EngineError

from .test_qwen3tts import GREEDY, load_engine
from .test_qwen3tts_convert import run_oracle

ORACLE_FRAMES = 10
"""Greedy frames compared with qwen-tts (all equal, measured)."""
EXACT_TOLERANCE = 1e-6
"""max |ours - qwen-tts| / max |qwen-tts| of the WAV samples, mel filters, log mel and x-vector:
the same float32 operations in the same order (measured 0.0 for each)."""
PREFILL_TOLERANCE = 1e-5
"""max |ours - qwen-tts| / max |qwen-tts| of the prefill rows, x-vector and reference-frame rows
included (f32 tables; measured 6.3e-8 x-vector, 3.8e-8 and 5.7e-8 ICL)."""
AUDIO_TOLERANCE = 1e-5
"""max |ours - qwen-tts| of the greedy audio (peaks 0.85-0.97): the x-vector clone vs qwen-tts's
decode (measured 1.7e-6); the ICL clones, our stream after the reference frames vs qwen-tts's
decode of reference + new codes with the reference's share cut off (measured 2.0e-6 both)."""
TEXT = "Hello the world, this is user."
REFERENCE_TEXT = "This is the reference."
REFERENCE_SECONDS = 2.5
"""2.5 s at 24 kHz: 32 reference frames, fewer than the transcript + text tokens, so the ICL
prompt's text runs past the reference frames and trails (docs/engines.md,
"Qwen3-TTS: prefill layout", 4c)."""
LONG_REFERENCE_SECONDS = 4.0
"""50 frames: more than a short transcript + text, whose text stream is padded with tts_pad."""


def clone_voice(path: Path, text: str | None, **options: object) -> VoiceSettings:
    return VoiceSettings(
        name="clone",
        speaker=None,
        language="en",
        options={"reference_silence": 0, **options},
        reference=ReferenceAudio(path, text),
    )


def speak(engine: qwen3tts.Qwen3TTS, text: str, settings: VoiceSettings) -> np.ndarray:
    return np.concatenate(list(engine.synthesize(text, settings, threading.Event())))


def options_of(engine: qwen3tts.Qwen3TTS, settings: VoiceSettings) -> qwen3_config.Qwen3Options:
    return qwen3tts.apply_options(engine._options, settings.options)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("qwen3tts-clone")
    tiny_models.write_tiny(directory)
    for name, seconds in (("ref.wav", REFERENCE_SECONDS), ("long.wav", LONG_REFERENCE_SECONDS)):
        write_wav(directory / name, tiny_models.reference_recording(seconds, 24000), 24000)
    return directory


@pytest.fixture(scope="module")
def engine(tiny_dir: Path) -> Iterator[qwen3tts.Qwen3TTS]:
    """The tiny Base model, converted with f32 matrices (exact numerics)."""
    loaded = load_engine(tiny_dir / tiny_models.TINY_BASE_DIR)
    yield loaded
    loaded.close()


def oracle_run(tiny_dir: Path, name: str, *args: str) -> dict[str, np.ndarray]:
    return run_oracle(
        tiny_dir / tiny_models.TINY_BASE_DIR,
        tiny_dir / f"{name}.npz",
        "--frames",
        str(ORACLE_FRAMES),
        "--language",
        "english",
        *args,
    )


@pytest.fixture(scope="module")
def xvector_oracle(tiny_dir: Path) -> dict[str, np.ndarray]:
    ref = str(tiny_dir / "ref.wav")
    return oracle_run(tiny_dir, "xvector", "--text", TEXT, "--ref-audio", ref, "--x-vector-only")


@pytest.fixture(scope="module")
def icl_oracle(tiny_dir: Path) -> dict[str, np.ndarray]:
    ref = str(tiny_dir / "ref.wav")
    return oracle_run(
        tiny_dir, "icl", "--text", TEXT, "--ref-audio", ref, "--ref-text", REFERENCE_TEXT
    )


def relative_error(ours: np.ndarray, theirs: np.ndarray) -> float:
    assert ours.shape == theirs.shape
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


def assert_clone_equals(
    engine: qwen3tts.Qwen3TTS, text: str, settings: VoiceSettings, oracle: dict[str, np.ndarray]
) -> qwen3_prompt.Qwen3Prompt:
    """Prefill rows, greedy codes and audio of `text` in `settings` equal qwen-tts's."""
    options = options_of(engine, settings)
    reference = engine.clone_reference(settings, options)
    prompt = engine.prompt(text, settings, options, reference)
    assert relative_error(prompt.rows, oracle["prefill_embeddings"]) <= PREFILL_TOLERANCE
    audio = speak(engine, text, settings)
    assert np.array_equal(engine.last_codes, oracle["codes"])
    assert audio.shape == oracle["pcm"].shape
    assert np.abs(audio - oracle["pcm"]).max() <= AUDIO_TOLERANCE
    return prompt


# ----------------------------------------------------------------------------------------------
# Against qwen-tts


@pytest.mark.slow
def test_wav_mel_and_x_vector_equal_qwen_tts(
    engine: qwen3tts.Qwen3TTS, tiny_dir: Path, xvector_oracle: dict[str, np.ndarray]
) -> None:
    audio, rate = read_wav(tiny_dir / "ref.wav")
    assert rate == 24000
    assert relative_error(audio, xvector_oracle["ref_audio"]) <= EXACT_TOLERANCE  # librosa.load
    filters = slaney_mel_filters()
    assert relative_error(filters, xvector_oracle["mel_filters"]) <= EXACT_TOLERANCE
    mel = MelFrontEnd()(torch.from_numpy(audio)[None])[0].numpy()  # (128, frames)
    assert relative_error(mel, xvector_oracle["mel"]) <= EXACT_TOLERANCE
    settings = clone_voice(tiny_dir / "ref.wav", None)
    reference = engine.clone_reference(settings, options_of(engine, settings))
    assert reference is not None and reference.codes is None
    assert relative_error(reference.x_vector, xvector_oracle["x_vector"]) <= EXACT_TOLERANCE


@pytest.mark.slow
def test_x_vector_clone_equals_qwen_tts(
    engine: qwen3tts.Qwen3TTS, tiny_dir: Path, xvector_oracle: dict[str, np.ndarray]
) -> None:
    """`generate_voice_clone(x_vector_only_mode=True)`: the x-vector in the speaker slot, the
    streaming-text layout (the Base default), greedy codes and audio."""
    settings = clone_voice(tiny_dir / "ref.wav", None, max_frames=ORACLE_FRAMES, **GREEDY)
    assert options_of(engine, settings).streaming_text  # qwen-tts's default for Base models
    assert_clone_equals(engine, TEXT, settings, xvector_oracle)


@pytest.mark.slow
def test_icl_clone_equals_qwen_tts(
    engine: qwen3tts.Qwen3TTS, tiny_dir: Path, icl_oracle: dict[str, np.ndarray]
) -> None:
    """`generate_voice_clone(ref_audio, ref_text)`: our speech-tokenizer encoder gives the same
    reference codes, the ICL prefill and greedy codes match, and our audio after the reference
    equals qwen-tts's decode-then-cut."""
    settings = clone_voice(tiny_dir / "ref.wav", REFERENCE_TEXT, max_frames=ORACLE_FRAMES, **GREEDY)
    reference = engine.clone_reference(settings, options_of(engine, settings))
    assert reference is not None and reference.codes is not None
    assert np.array_equal(reference.codes, icl_oracle["ref_codes"])
    assert len(reference.codes) == math.ceil(REFERENCE_SECONDS * 24000 / 1920)
    prompt = assert_clone_equals(engine, TEXT, settings, icl_oracle)
    assert len(prompt.trailing) > 0  # the text outruns the reference frames


@pytest.mark.slow
def test_icl_clone_with_a_long_reference_equals_qwen_tts(
    engine: qwen3tts.Qwen3TTS, tiny_dir: Path
) -> None:
    """The other branch of the streaming ICL layout: the text stream is shorter than the
    reference frames and is padded with tts_pad."""
    long_reference = str(tiny_dir / "long.wav")
    args = ("--text", "Hi.", "--ref-audio", long_reference, "--ref-text", "Yes.")
    oracle = oracle_run(tiny_dir, "icl-long", *args)
    settings = clone_voice(tiny_dir / "long.wav", "Yes.", max_frames=ORACLE_FRAMES, **GREEDY)
    prompt = assert_clone_equals(engine, "Hi.", settings, oracle)
    assert len(prompt.trailing) == 0  # the text stream is padded to the reference frames


@pytest.mark.slow
def test_default_f16_conversion_gives_the_same_greedy_clone(
    tiny_dir: Path, tmp_path: Path, icl_oracle: dict[str, np.ndarray]
) -> None:
    source = tmp_path / "snapshot"
    shutil.copytree(tiny_dir / tiny_models.TINY_BASE_DIR, source)
    loaded = load_engine(source, matrix_type="f16")
    try:
        settings = clone_voice(
            tiny_dir / "ref.wav", REFERENCE_TEXT, max_frames=ORACLE_FRAMES, **GREEDY
        )
        speak(loaded, TEXT, settings)
        assert np.array_equal(loaded.last_codes, icl_oracle["codes"])
    finally:
        loaded.close()


# ----------------------------------------------------------------------------------------------
# Prompt layout and decoding


def test_non_streaming_icl_layout(engine: qwen3tts.Qwen3TTS, tiny_dir: Path) -> None:
    """docs/engines.md, "Qwen3-TTS: prefill layout" 4c, non-streaming: text rows + codec_pad,
    then codec_bos and the reference frames + tts_pad; the speaker slot holds the x-vector in
    both clone modes."""
    config, codec = engine.config, engine._codec_table
    settings = clone_voice(tiny_dir / "ref.wav", REFERENCE_TEXT, streaming_text=False)
    options = options_of(engine, settings)
    reference = engine.clone_reference(settings, options)
    assert reference is not None and reference.codes is not None
    prompt = engine.prompt(TEXT, settings, options, reference)
    body = engine._tokenizer.tokenize(TEXT, special=False)
    n_text = len(reference.text_ids) + len(body) + 1  # + tts_eos
    tags = 3 + 6  # role; think, think_bos, english, think_eos, x-vector, codec_pad
    assert prompt.rows.shape[0] == tags + n_text + 1 + len(reference.codes)
    assert len(prompt.trailing) == 0
    np.testing.assert_allclose(
        prompt.rows[tags - 2], engine._tts_pad + reference.x_vector, atol=1e-6
    )
    text_rows = engine._text_rows(reference.text_ids + body)
    np.testing.assert_allclose(
        prompt.rows[tags : tags + n_text - 1], text_rows + codec[config.codec_pad_id], atol=1e-6
    )
    audio_rows = prompt.rows[tags + n_text :]
    np.testing.assert_allclose(
        audio_rows[0], codec[config.codec_bos_id] + engine._tts_pad, atol=1e-6
    )
    np.testing.assert_allclose(
        audio_rows[1:], engine.frame_rows(reference.codes) + engine._tts_pad, atol=1e-5
    )


def test_icl_audio_continues_the_reference(engine: qwen3tts.Qwen3TTS, tiny_dir: Path) -> None:
    """The reference frames are the decoder's left context: the stream equals one decode of
    reference + new frames minus the reference's audio, in windows of any size."""
    settings = clone_voice(
        tiny_dir / "ref.wav", REFERENCE_TEXT, first_chunk_frames=1, max_chunk_frames=2
    )
    pieces = list(engine.synthesize(TEXT, settings, threading.Event()))
    assert pieces[0].size == tiny_models.SAMPLES_PER_FRAME  # the first frame's audio at once
    reference = engine.clone_reference(settings, options_of(engine, settings))
    assert reference is not None and reference.codes is not None
    codes = np.concatenate([reference.codes, engine.last_codes])  # (T_ref + F, G)
    whole = engine._codec.decode(codes, context=len(reference.codes))
    assert np.abs(np.concatenate(pieces) - whole).max() <= AUDIO_TOLERANCE


def test_reference_silence_is_encoded_after_the_reference(
    engine: qwen3tts.Qwen3TTS, tiny_dir: Path
) -> None:
    settings = clone_voice(tiny_dir / "ref.wav", REFERENCE_TEXT)
    silent = clone_voice(tiny_dir / "ref.wav", REFERENCE_TEXT, reference_silence=0.5)
    plain = engine.clone_reference(settings, options_of(engine, settings))
    padded = engine.clone_reference(silent, options_of(engine, silent))
    assert plain is not None and padded is not None
    assert plain.codes is not None and padded.codes is not None
    assert len(padded.codes) == math.ceil((REFERENCE_SECONDS + 0.5) * 24000 / 1920)
    np.testing.assert_array_equal(plain.x_vector, padded.x_vector)  # silence: codes only
    assert qwen3_config.Qwen3Options().reference_silence == 0.5  # faster-qwen3-tts's default


def test_reference_is_computed_once_per_voice(
    engine: qwen3tts.Qwen3TTS, tiny_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "voice.wav"
    write_wav(path, tiny_models.reference_recording(2.0, 24000), 24000)
    settings = clone_voice(path, REFERENCE_TEXT)
    options = options_of(engine, settings)
    first = engine.clone_reference(settings, options)
    assert engine.clone_reference(settings, options) is first
    x_only = qwen3tts.apply_options(options, {"x_vector_only": True})
    xvector = engine.clone_reference(settings, x_only)  # the option drops the ICL part
    assert xvector is not None and xvector.codes is None and xvector.text_ids == []
    write_wav(path, tiny_models.reference_recording(2.0, 24000, seed=5), 24000)
    os.utime(path, ns=(1, 1))  # a new recording: computed again
    again = engine.clone_reference(settings, options)
    assert again is not first and again is not None and first is not None
    assert not np.array_equal(again.x_vector, first.x_vector)


def test_reference_at_another_rate_is_resampled(engine: qwen3tts.Qwen3TTS, tiny_dir: Path) -> None:
    path = tiny_dir / tiny_models.TINY_REFERENCE  # 16 kHz
    audio, rate = read_wav(path)
    assert rate == tiny_models.TINY_REFERENCE_RATE == 16000
    settings = clone_voice(path, tiny_models.TINY_REFERENCE_TEXT)
    reference = engine.clone_reference(settings, options_of(engine, settings))
    assert reference is not None and reference.codes is not None
    assert engine._speaker_encoder is not None
    expected = engine._speaker_encoder.embed(resample(audio, 16000, 24000))
    np.testing.assert_array_equal(reference.x_vector, expected)
    assert len(reference.codes) == math.ceil(len(audio) * 1.5 / 1920)
    assert speak(engine, "Hi there.", settings).size > 0


# ----------------------------------------------------------------------------------------------
# Errors


def test_base_voice_without_reference_says_what_to_add(engine: qwen3tts.Qwen3TTS) -> None:
    settings = VoiceSettings(name="bare", speaker=None, language="en")
    with pytest.raises(
        EngineError, match=r"^model \S+ is a Qwen3-TTS Base \(voice cloning\).*reference: \{path:"
    ):
        speak(engine, "Hi.", settings)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"cannot read the reference audio .*missing\.wav \(No such file"),
        (b"not a wav", r"cannot read the reference audio .*missing\.wav \(not a WAV file"),
        ("short", r"the reference audio .*missing\.wav lasts 0\.5 s; use 1-60 s"),
    ],
)
def test_bad_reference_names_the_file(
    engine: qwen3tts.Qwen3TTS, tmp_path: Path, content: bytes | str | None, message: str
) -> None:
    path = tmp_path / "missing.wav"
    if content == "short":
        write_wav(path, np.zeros(8000, np.float32), 16000)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(EngineError, match=r"^" + message):
        speak(engine, "Hi.", clone_voice(path, None))


def test_named_speaker_is_refused_by_a_base_model(
    engine: qwen3tts.Qwen3TTS, tiny_dir: Path
) -> None:
    settings = VoiceSettings(
        name="v", speaker="ryan", language="en", reference=ReferenceAudio(tiny_dir / "ref.wav", "")
    )
    with pytest.raises(EngineError, match=r"has no named speakers; remove 'speaker: ryan'"):
        speak(engine, "Hi.", settings)


def test_custom_voice_model_refuses_a_reference(tiny_dir: Path) -> None:
    loaded = load_engine(tiny_dir / tiny_models.TINY_DIR)
    try:
        settings = VoiceSettings(
            name="v",
            speaker="ryan",
            language="en",
            reference=ReferenceAudio(tiny_dir / "ref.wav", None),
        )
        with pytest.raises(EngineError, match=r"custom_voice\) cannot clone a voice"):
            speak(loaded, "Hi.", settings)
    finally:
        loaded.close()


def test_base_model_without_speaker_encoder_weights_is_named(
    tiny_dir: Path, tmp_path: Path
) -> None:

    source = tmp_path / "snapshot"
    shutil.copytree(tiny_dir / tiny_models.TINY_DIR, source)  # CustomVoice weights ...
    config = json.loads((source / "config.json").read_text())
    config["tts_model_type"] = "base"  # ... in a Base config
    (source / "config.json").write_text(json.dumps(config))
    with pytest.raises(EngineError, match=r"model\.safetensors does not hold the speaker encoder"):
        load_engine(source)
