"""OuteTTS 1.0 speaker profiles from a recording and its word timings (`engines.outetts.create10`,
`features`, `loudness`) against the official package.

The reference is outetts 0.4.4 itself: `tests/outetts_speaker_oracle.py` runs its
`AudioProcessor.create_speaker_from_dict`, `Features` and `process_audio_tensor` (with pyloudnorm
0.2.0) in the DAC oracle venv (`script/make-dac-oracle-env`) on the tiny random DAC checkpoint
(`tools/modelgen/dac.py`). Profiles, features and loudness must be equal, not close; the profile's
prompt must be the package's prompt token for token (`tests/outetts10_oracle.py`).
"""

from __future__ import annotations

import json
import logging
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tools.modelgen import dac as dac_models
from tools.modelgen import outetts10 as modelgen
from wyoming_multitts import loudness
from wyoming_multitts.alignment import WordTiming
from wyoming_multitts.codecs.dac_encoder import DacEncoder, load_dac_encoder
from wyoming_multitts.engines.outetts import create10, features
from wyoming_multitts.engines.outetts import prompt10 as op
from wyoming_multitts.engines.outetts import speakers10
from wyoming_multitts.errors import SpeakerError

from .conftest import oracle_python, run_oracle_script
from .test_outetts10_prompt import Vocab

ROOT = Path(__file__).resolve().parent.parent
ORACLE_VENV = ROOT / "local" / "dac-oracle-venv"
ORACLE_SCRIPT = Path(__file__).resolve().parent / "outetts_speaker_oracle.py"
PROMPT_ORACLE_VENV = ROOT / "local" / "outetts-oracle-venv"
PROMPT_ORACLE_SCRIPT = Path(__file__).resolve().parent / "outetts10_oracle.py"
PROMPT_ORACLE_TIMEOUT = 120
RATE = 24_000
THREADS = 2
"""Torch threads here and in the oracle: float32 sums may split differently with another count."""
CPU = torch.device("cpu")
PCM_SCALE = 32_768
"""16-bit PCM reads as int / 32768, in torchaudio (the package) and `audio.read_wav` alike."""
PEAK_LIMIT = 10 ** (-1 / 20)
"""-1 dBFS, the normalised audio's highest peak."""

WORDS = [
    WordTiming("Hello,", 0.52, 1.16),  # 1.16 · 24000 = 27839.999999999996: sample 27839
    WordTiming("this", 1.3, 1.64),  # 1.64 · 75 = 122.99999999999999: frame 122
    WordTiming(" is ", 1.7, 1.86),  # the package strips the word
    WordTiming("a", 2.1, 2.2),
    WordTiming("recording", 2.34, 3.08),
    WordTiming("made", 3.3, 3.71),
    WordTiming("of", 3.8, 3.95),
    WordTiming("chirps", 4.1, 5.0),
    WordTiming("uh", 4.99, 5.005),  # ends in the frame "chirps" ended in: no codes
    WordTiming("that", 5.2, 5.62),
    WordTiming("—", 5.62, 5.62),  # no audio at all: every feature 0
    WordTiming("cross", 5.8, 6.43),
    WordTiming("windows,", 6.6, 7.5),
    WordTiming("every", 7.7, 8.21),
    WordTiming("five", 8.4, 8.96),
    WordTiming("seconds", 9.2, 10.3),
    WordTiming("and", 10.5, 10.77),
    WordTiming("end.", 10.9, 11.55),
]
"""Word timings of the 12 s recording: its DAC windows end at 5 and 10 s."""
RECORDING_SECONDS = 12.0
TEXT = (
    "Hello, this is a recording made of chirps, uh, that cross windows, every five seconds and end."
)
EMPTY_WORD, SILENT_WORD = 8, 10
"""Indices in WORDS of the word with no codes and of the word with no audio."""

SHORT_WORDS = [WordTiming("Hi.", 0.05, 0.25)]
SHORT_SECONDS = 0.3
"""A recording shorter than the loudness meter's 0.4 s block, its last word cut by its end."""

TRANSCRIPTS = [
    "  “Hello”\tthere…  it’s me — again\n",
    "tabs\tand\x07bells\x9f and ‘quotes’ – dashes",
    "",
]


def _chirps(timings: list[WordTiming], seconds: float, seed: int) -> np.ndarray:
    """int16 audio: one harmonic chirp per word (its pitch sweeping, its level different), quiet
    noise between them."""
    rng = np.random.default_rng(seed)
    audio = 0.003 * rng.standard_normal(int(seconds * RATE))
    for timing in timings:
        first, last = int(timing.start * RATE), int(timing.end * RATE)
        if last - first < 2:
            continue
        t = np.arange(last - first) / RATE
        f0 = np.linspace(rng.uniform(90, 250), rng.uniform(90, 350), len(t))  # Hz
        phase = 2 * np.pi * np.cumsum(f0) / RATE
        voice = sum(np.sin(k * phase) / k for k in (1, 2, 3, 5))
        audio[first:last] += rng.uniform(0.1, 0.5) * np.hanning(len(t)) * voice
    return np.clip(np.round(audio * PCM_SCALE), -PCM_SCALE, PCM_SCALE - 1).astype(np.int16)


def _loudness_signals() -> dict[str, np.ndarray]:
    """Float32 signals for the meter and the normalisation."""
    rng = np.random.default_rng(7)
    t = np.arange(6 * RATE) / RATE
    speechy = 0.2 * np.sin(2 * np.pi * 180 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    speechy[: 2 * RATE] *= 0.02  # a quiet start the relative gate drops
    clicks = 0.002 * rng.standard_normal(3 * RATE)
    clicks[::9000] = 0.6  # a high crest: -18 LUFS would put these far above -1 dBFS
    return {
        "short": (0.1 * rng.standard_normal(int(0.25 * RATE))).astype(np.float32),
        "long": (speechy + 0.01 * rng.standard_normal(len(t))).astype(np.float32),
        "peaky": clicks.astype(np.float32),
        "silent": np.zeros(RATE, np.float32),
    }


def _feature_signals() -> dict[str, np.ndarray]:
    """Float32 word-like signals, some too short for the pitch tracker."""
    rng = np.random.default_rng(8)
    t = np.arange(int(0.5 * RATE)) / RATE
    tone = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.1 * np.sin(2 * np.pi * 440 * t)
    noise = 0.2 * rng.standard_normal(int(0.3 * RATE))
    return {
        "tone": tone.astype(np.float32),
        "noise": noise.astype(np.float32),
        "empty": np.zeros(0, np.float32),
        "too_short": noise[:240].astype(np.float32),  # padded to 240 < 400: no pitch frame
        "one_frame": noise[:241].astype(np.float32),  # padded to 400: one frame
    }


def _recording(pcm: np.ndarray) -> np.ndarray:
    return pcm.astype(np.float32) / PCM_SCALE


def _request(words: list[WordTiming], text: str) -> str:
    return json.dumps({"text": text, "words": [timing._asdict() for timing in words]})


# ----------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def tiny_pth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dac_models.write_tiny_dac(tmp_path_factory.mktemp("dac-tiny"))


@pytest.fixture(scope="module")
def encoder(tiny_pth: Path) -> DacEncoder:
    torch.set_num_threads(THREADS)
    return load_dac_encoder(tiny_pth, CPU)


@pytest.fixture(scope="module")
def recordings() -> dict[str, tuple[np.ndarray, list[WordTiming], str]]:
    """name → (int16 audio, word timings, text)."""
    return {
        "chirps": (_chirps(WORDS, RECORDING_SECONDS, 1), WORDS, TEXT),
        "short": (_chirps(SHORT_WORDS, SHORT_SECONDS, 2), SHORT_WORDS, "Hi."),
    }


@pytest.fixture(scope="module")
def oracle(
    tiny_pth: Path,
    recordings: dict[str, tuple[np.ndarray, list[WordTiming], str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """The package's answers: `lufs/…`, `normalized/…`, `features`, `texts`, `profile/…`,
    `loaded/…` (see the oracle script)."""
    directory = tmp_path_factory.mktemp("speaker-oracle")
    signals: dict[str, Any] = {"texts": np.array(json.dumps(TRANSCRIPTS))}
    signals.update({f"loudness/{name}": x for name, x in _loudness_signals().items()})
    signals.update({f"features/{name}": x for name, x in _feature_signals().items()})
    for name, (pcm, words, text) in recordings.items():
        signals[f"profile/{name}"] = pcm
        signals[f"profile/{name}/request"] = np.array(_request(words, text))
    np.savez(directory / "in.npz", **signals)
    out = directory / "out.npz"
    python = oracle_python("make-dac-oracle-env", ORACLE_VENV)
    answers: dict[str, Any] = run_oracle_script(
        python, ORACLE_SCRIPT, out, str(tiny_pth), str(directory / "in.npz"), str(out)
    )
    return answers


@pytest.fixture(scope="module")
def profile(
    encoder: DacEncoder, recordings: dict[str, tuple[np.ndarray, list[WordTiming], str]]
) -> dict[str, Any]:
    pcm, words, text = recordings["chirps"]
    return create10.profile10(_recording(pcm), words, text, encoder)


@pytest.fixture(scope="module")
def vocab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vocab]:
    """The tiny 1.0 GGUF's vocabulary (`modelgen.outetts10`)."""
    directory = tmp_path_factory.mktemp("outetts10")
    vocab = Vocab(modelgen.write_tiny(directory))
    yield vocab
    vocab.llm.close()


# ----------------------------------------------------------------------------------------------
# Loudness, against pyloudnorm and `process_audio_tensor`


@pytest.mark.parametrize("name", ["short", "long", "peaky"])
def test_loudness_equals_pyloudnorm(oracle: dict[str, Any], name: str) -> None:
    signal = _loudness_signals()[name]
    padded = np.pad(signal, (0, max(0, int(0.4 * RATE) - len(signal))))
    assert loudness.integrated_loudness(padded, RATE) == float(oracle[f"lufs/{name}"])
    normalized = loudness.normalize_loudness(signal, RATE)
    assert normalized.dtype == np.float32 and normalized.shape == signal.shape
    assert np.array_equal(normalized, oracle[f"normalized/{name}"])
    peak = np.abs(normalized).max()
    if name == "peaky":  # the peak limit's branch: scaled down to exactly -1 dBFS
        assert peak == np.float32(PEAK_LIMIT)
    else:
        assert peak < PEAK_LIMIT


def test_silent_recording_is_an_error(oracle: dict[str, Any]) -> None:
    """The package measures -inf and normalises to NaN; we say what is wrong."""
    assert oracle["lufs/silent"] == -np.inf and np.isnan(oracle["normalized/silent"]).all()
    silent = _loudness_signals()["silent"]
    assert loudness.integrated_loudness(silent, RATE) == -math.inf
    with pytest.raises(SpeakerError, match="the recording is silent"):
        loudness.normalize_loudness(silent, RATE)
    with pytest.raises(ValueError, match="at least one block"):
        loudness.integrated_loudness(silent[:100], RATE)


# ----------------------------------------------------------------------------------------------
# Features and text, against the package


@pytest.mark.parametrize("name", sorted(_feature_signals()))
def test_features_equal_the_package(oracle: dict[str, Any], name: str) -> None:
    reference = json.loads(str(oracle["features"]))[name]
    ours = features.audio_features(torch.from_numpy(_feature_signals()[name])[None], RATE)
    if name == "too_short":  # the package cannot make a profile with such a word
        assert reference == {
            "error": "RuntimeError: maximum size for tensor at dimension 0 is 240 but size is 400"
        }
        assert ours["pitch"] == 0 and ours["energy"] > 0
        return
    assert list(ours.items()) == list(reference.items())
    if name == "tone":
        assert ours["pitch"] > 0 and ours["spectral_centroid"] > 0


def test_features_of_non_finite_audio_are_zero() -> None:
    audio = torch.tensor([[0.1, math.nan, 0.2]])
    assert features.audio_features(audio, RATE) == {"energy": 0, "spectral_centroid": 0, "pitch": 0}


def test_transcript_normalisation_equals_the_package(oracle: dict[str, Any]) -> None:
    assert [create10.normalize_transcript(text) for text in TRANSCRIPTS] == json.loads(
        str(oracle["texts"])
    )


# ----------------------------------------------------------------------------------------------
# Whole profiles, against `create_speaker_from_dict`


@pytest.mark.parametrize("name", ["chirps", "short"])
def test_profile_equals_create_speaker_from_dict(
    encoder: DacEncoder,
    recordings: dict[str, tuple[np.ndarray, list[WordTiming], str]],
    oracle: dict[str, Any],
    name: str,
) -> None:
    pcm, words, text = recordings[name]
    audio = _recording(pcm)
    assert np.array_equal(audio, oracle[f"loaded/{name}"])  # what torchaudio.load reads
    ours = create10.profile10(audio, words, text, encoder)
    assert json.dumps(ours) == str(oracle[f"profile/{name}"])  # values, types and key order


def test_profile_covers_windows_margins_and_empty_words(profile: dict[str, Any]) -> None:
    """The chirps recording exercises what the equality above is meant to check."""
    words = profile["words"]
    frames = [len(word["c1"]) for word in words]
    assert sum(frames) > 2 * 375  # three DAC windows
    assert frames[EMPTY_WORD] == 0 and words[EMPTY_WORD]["duration"] == 0.0
    assert words[EMPTY_WORD]["c2"] == []
    assert words[SILENT_WORD]["features"] == {"energy": 0, "spectral_centroid": 0, "pitch": 0}
    assert frames[:2] == [87 - (39 - 20), 122 - 87]  # the first word's margin; int() truncates
    assert frames[-1] == int(11.55 * 75) + 20 - int(10.77 * 75)  # the last word's margin
    assert words[2]["word"] == "is"
    assert all(0 < word["features"]["pitch"] for i, word in enumerate(words) if i != SILENT_WORD)
    assert list(profile) == ["text", "words", "global_features", "interface_version"]


def test_profile_loads_and_prompts_as_the_package(
    profile: dict[str, Any], vocab: Vocab, tmp_path: Path
) -> None:
    """`load_speaker` takes the word with no codes, and our prompt for the profile is the
    package's (its `<|code|>` with no pairs), in both layouts."""
    path = tmp_path / "made.json"
    path.write_text(json.dumps(profile, indent=2), encoding="utf-8")
    speaker = speakers10.load_speaker(path)
    assert speaker.words[EMPTY_WORD].c1 == () and speaker.n_frames == sum(
        len(word["c1"]) for word in profile["words"]
    )

    python = oracle_python("make-outetts-oracle-env", PROMPT_ORACLE_VENV)
    layouts = ["inline", "turn"]
    request = {
        "prompts": [{"text": "Good day!", "speaker": str(path), "layout": x} for x in layouts]
    }
    (tmp_path / "request.json").write_text(json.dumps(request), encoding="utf-8")
    result = subprocess.run(
        [
            str(python),
            str(PROMPT_ORACLE_SCRIPT),
            str(tmp_path / "request.json"),
            str(tmp_path / "answers.json"),
        ],
        capture_output=True,
        text=True,
        timeout=PROMPT_ORACLE_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    references = json.loads((tmp_path / "answers.json").read_text(encoding="utf-8"))["prompts"]
    tokens = op.read_tokens(vocab.token_id)
    for layout, reference in zip(layouts, references):
        assert "<|word_start|>uh<|features|><|t_0.00|>" in reference
        prompt = op.build_prompt(tokens, layout, speaker, "Good day!", vocab.tokenize)
        assert prompt.ids == vocab.llm.tokenize(reference, special=True)


# ----------------------------------------------------------------------------------------------
# Our checks


def test_recording_length_rules(caplog: pytest.LogCaptureFixture) -> None:
    create10.check_recording(np.zeros(10 * RATE, np.float32), RATE)
    with caplog.at_level(logging.WARNING):
        create10.check_recording(np.zeros(16 * RATE, np.float32), RATE)
    assert "16.0 s long; up to 15 s" in caplog.text
    with pytest.raises(SpeakerError, match="20.5 s long, more than 20 s"):
        create10.check_recording(np.zeros(int(20.5 * RATE), np.float32), RATE)
    with pytest.raises(SpeakerError, match="the recording is empty"):
        create10.check_recording(np.zeros(0, np.float32), RATE)


def test_profile_needs_words(encoder: DacEncoder) -> None:
    with pytest.raises(SpeakerError, match="no words"):
        create10.profile10(np.zeros(RATE, np.float32), [], "", encoder)
