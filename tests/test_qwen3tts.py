"""The Qwen3-TTS engine on the tiny random model in the official layout: real conversion, real
llama.cpp (talker, code predictor, tokenizer) and torch (decoder), compared with qwen-tts itself
(the oracle environment, script/make-qwen-tts-oracle-env) where it has something to say."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from tools.modelgen import qwen3tts as tiny_models
from tools.modelgen.qwen3tts import TINY_SHAPE
from wyoming_multitts.catalog import FileRef, ModelSpec
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines.base import VoiceSettings
from wyoming_multitts.engines.qwen3tts import convert as qwen3_convert
from wyoming_multitts.engines.qwen3tts import engine as qwen3tts
from wyoming_multitts.engines.qwen3tts import memory as qwen3_memory
from wyoming_multitts.engines.qwen3tts import prompt as qwen3_prompt
from wyoming_multitts.engines.qwen3tts.tables import map_npz
from wyoming_multitts.errors import ConvertError, EngineError, OptionError, VoiceError
from wyoming_multitts.formats.safetensors import SafetensorsFiles
from wyoming_multitts.stats import PieceStats

from .test_qwen3tts_convert import run_oracle

THREADS = 2
ORACLE_FRAMES = 12
"""Greedy frames compared with qwen-tts (it runs ORACLE_FRAMES + 1 talker steps); all equal, also
with the 16-bit conversions (measured)."""
GREEDY = {"temperature": 0, "subtalker_temperature": 0}
"""Voice options that make both samplers greedy (qwen-tts `do_sample=False`,
`subtalker_dosample=False`); the repetition penalty stays on, as in qwen-tts."""
PREFILL_TOLERANCE = 1e-5
"""max |ours - qwen-tts| / max |qwen-tts| of the prefill rows (f32 tables; measured 1.0e-7)."""
AUDIO_TOLERANCE = 1e-5
"""max |ours - qwen-tts| of the greedy audio: the same codes, our decoder streamed in windows vs
the official whole decode (peak 0.88; measured 2.2e-6 for 6 and 1.9e-6 for 12 frames)."""
STREAM_TOLERANCE = 1e-5
"""max |stream - one whole decode| with the default streaming (state carried between windows),
peak 1.0: rounding only, windows of other lengths."""
TEXT = "Hello the world, this is user."
"""qwen3tts_oracle.py's default text."""


def tiny_spec(snapshot: Path, **options: object) -> ModelSpec:
    """A catalog entry for the tiny snapshot, converted with f32 matrices (exact numerics)."""
    return ModelSpec(
        name="qwen3tts-tiny",
        engine="qwen3tts",
        files={"model": FileRef(path=snapshot)},
        device="cpu",
        options={"matrix_type": "f32", "max_frames": 200, **options},
    )


def load_engine(snapshot: Path, **options: object) -> qwen3tts.Qwen3TTS:
    paths = {"model": snapshot}
    return qwen3tts.load(tiny_spec(snapshot, **options), paths, CPU, THREADS)


@contextlib.contextmanager
def copied_engine(snapshot: Path, tmp_path: Path, **options: object) -> Iterator[qwen3tts.Qwen3TTS]:
    """The engine on a copy of `snapshot` (its own conversion), closed afterwards."""
    source = tmp_path / "snapshot"
    shutil.copytree(snapshot, source)
    loaded = load_engine(source, **options)
    try:
        yield loaded
    finally:
        loaded.close()


def voice(speaker: str | None = "ryan", language: str = "en", **options: object) -> VoiceSettings:
    return VoiceSettings(name="v", speaker=speaker, language=language, options=options)


def speak(engine: qwen3tts.Qwen3TTS, text: str, settings: VoiceSettings) -> list[np.ndarray]:
    return list(engine.synthesize(text, settings, threading.Event()))


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("qwen3tts-tiny")
    tiny_models.write_tiny(directory)
    return directory


@pytest.fixture(scope="module")
def snapshot(tiny_dir: Path) -> Path:
    return tiny_dir / tiny_models.TINY_DIR


@pytest.fixture(scope="module")
def engine(snapshot: Path) -> Iterator[qwen3tts.Qwen3TTS]:
    loaded = load_engine(snapshot)
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def oracle(snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    out = tmp_path_factory.mktemp("oracle") / "greedy.npz"
    return run_oracle(snapshot, out, "--frames", str(ORACLE_FRAMES), "--text", TEXT)


# ----------------------------------------------------------------------------------------------
# Against qwen-tts


@pytest.mark.slow
def test_prefill_rows_equal_qwen_tts(
    engine: qwen3tts.Qwen3TTS, oracle: dict[str, np.ndarray]
) -> None:
    prompt = engine.prompt(TEXT, voice(), engine._options)
    expected = oracle["prefill_embeddings"]  # (P, H)
    assert prompt.rows.shape == expected.shape
    error = np.abs(prompt.rows - expected).max()
    assert error <= PREFILL_TOLERANCE * np.abs(expected).max(), error
    assert prompt.text_tokens == len(oracle["input_ids"]) - 8  # role 3, end 5
    assert prompt.trailing.shape == (0, expected.shape[1])


@pytest.mark.slow
def test_greedy_codes_and_audio_equal_qwen_tts(
    engine: qwen3tts.Qwen3TTS, oracle: dict[str, np.ndarray]
) -> None:
    pieces = speak(engine, TEXT, voice(max_frames=ORACLE_FRAMES, **GREEDY))
    assert np.array_equal(engine.last_codes, oracle["codes"])
    audio = np.concatenate(pieces)
    assert audio.shape == oracle["pcm"].shape
    assert np.abs(audio - oracle["pcm"]).max() <= AUDIO_TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("matrix_type", ["auto", "f16", "bf16"])
def test_16_bit_conversions_give_the_same_greedy_codes(
    snapshot: Path, tmp_path: Path, oracle: dict[str, np.ndarray], matrix_type: str
) -> None:
    """The default (`auto`: bf16 on CPUs with bf16 dot products, else f16) and both 16-bit
    types it picks from give qwen-tts's greedy codes, every one of ORACLE_FRAMES."""
    with copied_engine(snapshot, tmp_path, matrix_type=matrix_type) as loaded:
        speak(loaded, TEXT, voice(max_frames=ORACLE_FRAMES, **GREEDY))
        assert np.array_equal(loaded.last_codes, oracle["codes"])


def test_q8_0_conversion_synthesizes(
    engine: qwen3tts.Qwen3TTS, snapshot: Path, tmp_path: Path
) -> None:
    """8-bit talker matrices (the tiny predictor's are too narrow, F16): the same greedy codes
    as the f32 conversion, all ORACLE_FRAMES of them (measured), and their audio."""
    settings = voice(max_frames=ORACLE_FRAMES, **GREEDY)
    speak(engine, TEXT, settings)
    expected = engine.last_codes
    with copied_engine(snapshot, tmp_path, matrix_type="q8_0") as loaded:
        audio = np.concatenate(speak(loaded, TEXT, settings))
        codes = loaded.last_codes
    assert np.array_equal(codes, expected) and np.isfinite(audio).all()
    assert len(audio) == len(codes) * engine.config.samples_per_frame


# ----------------------------------------------------------------------------------------------
# Prompt layout


def test_streaming_text_mode_moves_the_text_to_the_steps(engine: qwen3tts.Qwen3TTS) -> None:
    """docs/engines.md, "Qwen3-TTS: prefill layout" 4a: the prefill ends with the first text
    token + codec_bos; the rest of the text, then tts_eos, is added to the inputs of the first
    generation steps."""
    config = engine.config
    codec = engine._codec_table
    whole = engine.prompt(TEXT, voice(), engine._options)
    options = qwen3tts.apply_options(engine._options, {"streaming_text": True})
    streamed = engine.prompt(TEXT, voice(), options)
    n = whole.text_tokens
    tags = len(whole.rows) - n - 2  # role + codec tag rows, shared by both modes
    text_rows = whole.rows[tags : tags + n] - codec[config.codec_pad_id]  # (n, H)
    assert np.array_equal(streamed.rows[:tags], whole.rows[:tags])
    assert streamed.rows.shape[0] == tags + 1
    np.testing.assert_allclose(
        streamed.rows[tags], text_rows[0] + codec[config.codec_bos_id], atol=1e-6
    )
    np.testing.assert_allclose(streamed.trailing[:-1], text_rows[1:], atol=1e-6)
    np.testing.assert_allclose(streamed.trailing[-1], engine._tts_eos, atol=1e-6)
    pieces = speak(engine, TEXT, voice(streaming_text=True, max_frames=3))
    assert sum(p.size for p in pieces) == 3 * tiny_models.SAMPLES_PER_FRAME


def test_instruct_rows_come_first(engine: qwen3tts.Qwen3TTS) -> None:
    plain = engine.prompt(TEXT, voice(), engine._options)
    options = qwen3tts.apply_options(engine._options, {"instruct": "Speak slowly."})
    instructed = engine.prompt(TEXT, voice(), options)
    extra = len(instructed.rows) - len(plain.rows)
    instruct_ids = engine._tokenizer.tokenize(
        "<|im_start|>user\nSpeak slowly.<|im_end|>\n", special=True
    )
    assert extra == len(instruct_ids) and instruct_ids[0] == engine.config.im_start_id
    np.testing.assert_array_equal(instructed.rows[extra:], plain.rows)
    np.testing.assert_array_equal(instructed.rows[:extra], engine._text_rows(instruct_ids))


def test_language_chooses_the_codec_language_id(engine: qwen3tts.Qwen3TTS) -> None:
    config = engine.config
    think = [config.codec_think_id, config.codec_think_bos_id]
    end = [config.codec_think_eos_id]
    tail = [config.speakers["ryan"], config.codec_pad_id, config.codec_bos_id]
    nothink = [config.codec_nothink_id, config.codec_think_bos_id, config.codec_think_eos_id]
    languages = config.languages
    assert engine.codec_prefix("en", "ryan") == think + [languages["english"]] + end + tail
    assert engine.codec_prefix("de-DE", "ryan")[2] == languages["german"]
    assert engine.codec_prefix("pt_BR", "ryan")[2] == languages["portuguese"]
    assert engine.codec_prefix("zh", "ryan")[2] == languages["chinese"] == 39
    assert engine.codec_prefix("xx", "ryan") == nothink + tail  # unknown: auto
    assert engine.codec_prefix("en", "ryan", "auto") == nothink + tail
    assert engine.codec_prefix("en", None) == think + [languages["english"]] + end + tail[1:]
    # dialect speakers speak their dialect for Chinese and auto (qwen-tts generate)
    assert engine.codec_prefix("zh", "eric")[2] == languages["sichuan_dialect"]
    assert engine.codec_prefix("xx", "dylan")[2] == languages["beijing_dialect"]
    assert engine.codec_prefix("en", "eric")[2] == languages["english"]
    assert engine.codec_prefix("en", "ryan", "sichuan_dialect")[2] == languages["sichuan_dialect"]
    with pytest.raises(EngineError, match=r"klingon.*auto, chinese, english"):
        engine.codec_prefix("en", "ryan", "klingon")


def test_ten_languages_are_mapped() -> None:
    assert sorted(qwen3_prompt.LANGUAGE_NAMES) == sorted(
        ["zh", "en", "ja", "ko", "de", "fr", "ru", "pt", "es", "it"]
    )
    assert set(qwen3_prompt.LANGUAGE_NAMES.values()) <= set(tiny_models.LANGUAGE_OFFSETS)


def test_unknown_speaker_names_the_speakers(engine: qwen3tts.Qwen3TTS) -> None:
    with pytest.raises(VoiceError, match=r"no speaker 'bob' \(speakers: serena, vivian, .*dylan"):
        speak(engine, "Hi.", voice("bob"))
    with pytest.raises(VoiceError, match=r"needs a speaker \(speakers: serena"):
        speak(engine, "Hi.", voice(None))
    speak(engine, "Hi.", voice("Vivian", "zh", max_frames=1))  # names match lower-case


# ----------------------------------------------------------------------------------------------
# Generation, streaming, stopping


def test_stream_equals_one_whole_decode(engine: qwen3tts.Qwen3TTS) -> None:
    settings = voice(first_chunk_frames=1, max_chunk_frames=4, max_frames=20)
    pieces = speak(engine, "Hello there, how are you today?", settings)
    frames = len(engine.last_codes)
    assert frames == 20
    sizes = [p.size // tiny_models.SAMPLES_PER_FRAME for p in pieces]
    assert sizes == [1, 2, 4, 4, 4, 4, 1]  # first audio after one frame, then doubling windows
    whole = engine._codec.decode(engine.last_codes)
    assert np.abs(np.concatenate(pieces) - whole).max() <= STREAM_TOLERANCE
    # too little context is not exact (the tiny decoder reaches 42 frames back)
    short = speak(engine, "Hello there, how are you today?", voice(context_frames=0, **GREEDY))
    assert np.abs(np.concatenate(short) - engine._codec.decode(engine.last_codes)).max() > 1e-4


def test_first_audio_leaves_after_first_chunk_frames(engine: qwen3tts.Qwen3TTS) -> None:
    pieces = iter(engine.synthesize("Hello there.", voice(), threading.Event()))
    first = next(pieces)
    assert first.size == 4 * tiny_models.SAMPLES_PER_FRAME  # first_chunk_frames default
    assert first.dtype == np.float32 and 0 < np.abs(first).max() <= 1.0
    pieces.close()  # type: ignore[attr-defined]


def test_same_seed_same_codes(engine: qwen3tts.Qwen3TTS) -> None:
    def codes(**options: object) -> np.ndarray:
        speak(engine, "Hello there.", voice(max_frames=8, **options))
        return engine.last_codes.copy()

    first = codes()
    assert np.array_equal(first, codes())
    assert not np.array_equal(first, codes(seed=7))
    assert not np.array_equal(first, codes(**GREEDY))


def test_voice_rows_stay_cached_between_requests(engine: qwen3tts.Qwen3TTS) -> None:
    """The role and codec tag rows are evaluated once for a run of requests in one voice, and
    the audio is the same whether they came from the cache or not."""

    def spoken(language: str) -> tuple[np.ndarray, PieceStats]:
        stats = PieceStats("v")
        settings = voice(language=language, max_frames=6)
        audio = engine.synthesize("Hello there.", settings, threading.Event(), stats)
        return np.concatenate(list(audio)), stats

    prompt = engine.prompt("Hello there.", voice(), engine._options)
    # before the text: role 3 and the tags; after it: tts_eos and codec_bos rows
    assert prompt.voice_rows == len(prompt.rows) - prompt.text_tokens - 2
    spoken("zh")  # another language tag: other voice rows in the cache
    fresh, first = spoken("en")
    again, second = spoken("en")
    assert (first.cached_tokens, first.prompt_tokens) == (0, len(prompt.rows))
    assert second.cached_tokens == prompt.voice_rows
    assert second.prompt_tokens == len(prompt.rows) - prompt.voice_rows
    np.testing.assert_array_equal(again, fresh)


def test_cancel_stops_within_a_frame(
    engine: qwen3tts.Qwen3TTS, caplog: pytest.LogCaptureFixture
) -> None:
    cancel = threading.Event()
    settings = voice(first_chunk_frames=1, max_chunk_frames=1)
    pieces = []
    with caplog.at_level(logging.INFO, logger=qwen3tts.__name__):
        for piece in engine.synthesize("Hello there, how are you today?", settings, cancel):
            pieces.append(piece)
            cancel.set()
    assert len(pieces) == 1
    assert "cancelled after 1 frames" in caplog.text
    cancel = threading.Event()
    cancel.set()
    assert list(engine.synthesize("Hello there.", voice(), cancel)) == []


def test_runaway_is_bounded_by_the_text_length(engine: qwen3tts.Qwen3TTS) -> None:
    """The tiny talker's EOS logit is 0: greedy decoding never stops by itself."""
    speak(engine, "Hi.", voice(**GREEDY))
    assert len(engine.last_codes) == qwen3tts.MIN_FRAMES
    text = "Hello there, how are you?"
    tokens = engine.prompt(text, voice(), engine._options).text_tokens
    assert qwen3tts.MIN_FRAMES < tokens * qwen3tts.FRAMES_PER_TEXT_TOKEN < 200  # max_frames
    speak(engine, text, voice(**GREEDY))
    assert len(engine.last_codes) == tokens * qwen3tts.FRAMES_PER_TEXT_TOKEN
    speak(engine, text, voice(max_frames=5, **GREEDY))
    assert len(engine.last_codes) == 5
    speak(engine, text, voice(max_frames=100_000, **GREEDY))  # the model's context still caps
    assert len(engine.last_codes) == tokens * qwen3tts.FRAMES_PER_TEXT_TOKEN


def test_eos_ends_the_piece(snapshot: Path, tmp_path: Path) -> None:
    """With a random (not zero) EOS row in the talker's head, sampling reaches EOS now and then,
    never before the third frame, and the piece ends there."""
    source = tmp_path / "snapshot"
    shutil.copytree(snapshot, source)
    plan = [
        dataclasses.replace(tensor, zero_rows=()) for tensor in tiny_models.model_plan(TINY_SHAPE)
    ]
    tiny_models.write_safetensors(source / "model.safetensors", plan, "BF16", 1)
    loaded = load_engine(source)
    try:
        frames = []
        for seed in range(8):
            speak(loaded, "Hello there.", voice(seed=seed, max_frames=30))
            frames.append(len(loaded.last_codes))
    finally:
        loaded.close()
    assert min(frames) >= qwen3tts.MIN_NEW_FRAMES and min(frames) < 30, frames


# ----------------------------------------------------------------------------------------------
# Loading, options, files


def test_conversion_is_cached_beside_the_folder(engine: qwen3tts.Qwen3TTS, snapshot: Path) -> None:
    converted = snapshot.with_name(snapshot.name + ".f32.converted")
    assert (converted / "qwen3tts.json").is_file() and (converted / "talker.gguf").is_file()
    assert engine.sample_rate == 24000


def test_hub_conversions_are_keyed_by_the_weights_and_the_matrix_type(
    snapshot: Path, tmp_path: Path
) -> None:
    """Another commit with the same weights reuses the conversion; each matrix type has its own
    folder; once the weights leave the cache, the next conversion deletes theirs."""
    repo = tmp_path / "models--Qwen--Qwen3-TTS-12Hz-0.6B-CustomVoice"
    weights = (snapshot / "model.safetensors").read_bytes()
    blob = repo / "blobs" / hashlib.sha256(weights).hexdigest()
    blob.parent.mkdir(parents=True)
    blob.write_bytes(weights)

    def commit(name: str, blob: Path) -> Path:
        folder = repo / "snapshots" / name
        shutil.copytree(snapshot, folder)
        (folder / "model.safetensors").unlink()
        (folder / "model.safetensors").symlink_to(os.path.relpath(blob, folder))
        return folder

    first = qwen3_convert.convert_once(commit("c1", blob), "f32")
    key = blob.name[:16]
    assert first.directory == repo / "qwen3tts-converted" / f"{key}-f32" and not first.reused
    assert qwen3_convert.convert_once(commit("c2", blob), "f32").reused
    assert qwen3_convert.converted_dir(commit("c3", blob), "q8_0").name == f"{key}-q8_0"

    other = repo / "blobs" / ("f" * 64)
    other.write_bytes(weights)
    blob.unlink()
    second = qwen3_convert.convert_once(commit("c4", other), "f32")
    assert not second.reused and not first.directory.exists()


def test_a_short_or_foreign_conversion_is_not_taken(snapshot: Path, tmp_path: Path) -> None:
    """A converted file cut short is converted again; a folder of files this server did not
    write is left alone, with an error that names it."""
    out = tmp_path / "converted"
    done = qwen3_convert.convert(snapshot, out, matrix_type="f32")
    whole = done.talker.read_bytes()
    done.talker.write_bytes(whole[:-64])
    assert not qwen3_convert.convert(snapshot, out, matrix_type="f32").reused
    assert done.talker.read_bytes() == whole

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "talker.gguf").write_bytes(b"mine")
    with pytest.raises(ConvertError, match=f"{foreign} is in the way .*not written by this"):
        qwen3_convert.convert(snapshot, foreign, matrix_type="f32")
    assert (foreign / "talker.gguf").read_bytes() == b"mine"


def test_files_are_the_release_folder(snapshot: Path) -> None:
    for name in qwen3tts.FILES["model"] or ():
        assert (snapshot / name).is_file(), name


def test_tables_are_mapped_not_read(snapshot: Path, tmp_path: Path) -> None:
    """The engine maps tables.npz (the text table is 311 MB for the 0.6B and a request reads a
    few rows of it): every array equals what np.load reads, and none is in memory."""
    converted = qwen3_convert.convert(snapshot, tmp_path, matrix_type="f16")
    mapped = map_npz(converted.tables)
    with np.load(converted.tables) as npz:
        assert sorted(mapped) == sorted(npz.files)
        for name in npz.files:
            assert isinstance(mapped[name], np.memmap), name
            np.testing.assert_array_equal(mapped[name], npz[name])
        compressed = tmp_path / "compressed.npz"
        np.savez_compressed(compressed, **{name: npz[name] for name in npz.files})
    with pytest.raises(EngineError, match=r"compressed\.npz is not a table file of this version"):
        map_npz(compressed)


def test_estimate_counts_what_stays_resident(snapshot: Path, tmp_path: Path) -> None:
    """The converted weights, the tables read every frame, the decoder as float32 and the KV
    cache, on top of the measured working memory; not the text table (mapped, barely read)."""
    spec = tiny_spec(snapshot)  # f32
    converted = qwen3_convert.convert(snapshot, tmp_path, matrix_type="f32")
    tables = map_npz(converted.tables)
    decoder = SafetensorsFiles.open(snapshot / "speech_tokenizer")
    decoder_values = sum(
        int(np.prod(decoder.shape(name))) for name in decoder.names if name.startswith("decoder.")
    )
    talker = json.loads((snapshot / "config.json").read_text())["talker_config"]
    n_ctx = qwen3_prompt.PROMPT_ROWS_MAX + spec.options["max_frames"]
    head_dim = talker.get("head_dim") or talker["hidden_size"] // talker["num_attention_heads"]
    # K and V in f16 for every layer, position and KV head
    kv = 2 * talker["num_hidden_layers"] * n_ctx * talker["num_key_value_heads"] * head_dim * 2
    resident = (
        converted.talker.stat().st_size
        + converted.code_predictor.stat().st_size
        + tables["predictor_heads"].nbytes
        + tables["predictor_embeddings"].nbytes
        + 4 * tables["codec_embeddings"].size
        + 4 * decoder_values
    )
    estimate = qwen3_memory.estimate_bytes(spec, {"model": snapshot}) - qwen3_memory.WORKING_BYTES
    assert 0.9 * (resident + kv) < estimate < 1.1 * (resident + kv), (estimate, resident, kv)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_frame": 3}, r"unknown option\(s\) max_frame"),
        ({"first_chunk_frames": 8, "max_chunk_frames": 4}, r"max_chunk_frames must be >="),
        ({"matrix_type": "f32"}, r"matrix_type is a model option"),
        ({"subtalker_top_p": 0}, r"sampling"),
    ],
)
def test_bad_voice_options_are_named(
    engine: qwen3tts.Qwen3TTS, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(VoiceError, match=message):
        speak(engine, "Hi.", voice(**options))


def test_bad_model_option_is_named(snapshot: Path) -> None:
    message = r"matrix_type must be one of auto, f16, bf16, f32, q8_0, q6_k, q4_k, not 'q4'"
    with pytest.raises(OptionError, match=message):
        load_engine(snapshot, matrix_type="q4")
