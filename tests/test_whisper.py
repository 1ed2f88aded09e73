"""Our Whisper forced aligner (`wyoming_multitts/whisper.py`, `alignment.py`) against openai's own
package (openai-whisper 20250625, in the oracle environment made by script/make-whisper-oracle-env)
on a tiny random Whisper in the hub's format (tools/modelgen/whisper.py), plus its errors.

The audio is synthetic (harmonic bursts with pauses) and the weights random, so the times mean
nothing; what matters is that every step computes what openai's does, bit for bit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from tools.modelgen.whisper import write_whisper
from wyoming_multitts.alignment import (
    ALIGNER_FILES,
    UNSPACED_LANGUAGES,
    AlignedWord,
    Aligner,
    WordTiming,
    adjust_times,
)
from wyoming_multitts.errors import ModelFileError, SpeakerError
from wyoming_multitts.whisper import (
    BUILT_IN_HEADS,
    GENERATION_CONFIG,
    SAMPLE_RATE,
    WhisperShape,
    alignment_heads,
    log_mel,
    mel_filters,
)

from .conftest import oracle_python, run_oracle_script

ROOT = Path(__file__).resolve().parent.parent
ORACLE_VENV = ROOT / "local" / "whisper-oracle-venv"
ORACLE_SCRIPT = Path(__file__).resolve().parent / "whisper_oracle.py"
CPU = torch.device("cpu")
THREADS = 2

CASES = [
    (
        'The quick brown fox, who was tired, jumped over the lazy dog. "Don\'t stop-gap it," '
        "she said (quietly), don't!",
        "en",
        10.0,
    ),
    ("L'été dernier, nous sommes allés à l'école « vite ».", "fr", 5.0),
    ("你好，世界。今天天气很好！", "zh", 4.0),
    ("こんにちは。今日はいい天気ですね。", "ja", 4.0),
]
"""(text, language, seconds): commas, quotes, a hyphen and "don't"; French elisions and
guillemets; Chinese and Japanese split at characters, with a token across two characters."""
CRAFTED_CASES = 300
CRAFTED_POOL = (
    *(" the", " cat", " word", "ing", "'s", ",", ".", "!", "?", "。", "、", ")", '"', "-"),
    *(" (", ' "', " ¿", " -", " “"),
)
"""Words of the crafted alignments: plain, sentence marks, marks to append and to prepend."""
MAX_AUDIO_ERROR = 0.0
"""log-mel and cross-attention logits: measured identical to openai's (same torch operations)."""


def speechlike(seconds: float, seed: int) -> np.ndarray:
    """16 kHz float32: harmonic bursts of 0.1-0.4 s with gaps, a gliding pitch, a little noise."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SAMPLE_RATE)
    envelope = np.zeros(n)
    position = 0
    while position < n:
        length = int(rng.uniform(0.1, 0.4) * SAMPLE_RATE)
        envelope[position : position + length] = np.hanning(len(envelope[position:][:length]))
        position += length + int(rng.uniform(0.02, 0.25) * SAMPLE_RATE)
    times = np.arange(n) / SAMPLE_RATE
    phase = 2 * np.pi * np.cumsum(120 + 40 * np.sin(2 * np.pi * 0.7 * times)) / SAMPLE_RATE
    voice = sum(np.sin(k * phase) / k for k in range(1, 12)) * envelope * 0.3
    return (voice + 0.003 * rng.standard_normal(n)).astype(np.float32)


def crafted_alignments(count: int, seed: int = 7) -> list[list[list[Any]]]:
    """Random `find_alignment` results: [word, tokens, start step, end step] (20 ms steps),
    contiguous as DTW makes them, starting after a pause of up to 3 s, with zero, short and
    long durations."""
    rng = np.random.default_rng(seed)
    alignments = []
    for _ in range(count):
        step, token, words = int(rng.integers(0, 150)), 1, []
        for _ in range(int(rng.integers(1, 12))):
            duration = [0, int(rng.integers(1, 12)), int(rng.integers(12, 150))][rng.integers(3)]
            tokens = list(range(token, token + int(rng.integers(1, 3))))
            words.append([str(rng.choice(CRAFTED_POOL)), tokens, step, step + duration])
            step, token = step + duration, token + len(tokens)
        alignments.append(words)
    return alignments


@pytest.fixture(scope="module")
def tiny_whisper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_whisper(tmp_path_factory.mktemp("whisper") / "whisper-tiny")


@pytest.fixture(scope="module")
def audios(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("whisper-audio")
    paths = []
    for index, (_, _, seconds) in enumerate(CASES):
        paths.append(folder / f"{index}.npy")
        np.save(paths[-1], speechlike(seconds, index))
    return paths


@pytest.fixture(scope="module")
def oracle(
    tiny_whisper: Path, audios: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    folder = tmp_path_factory.mktemp("whisper-oracle")
    cases = [
        {"audio": str(path), "text": text, "language": language}
        for path, (text, language, _) in zip(audios, CASES)
    ]
    cases_path = folder / "cases.json"
    cases_path.write_text(
        json.dumps({"cases": cases, "crafted": crafted_alignments(CRAFTED_CASES)}),
        encoding="utf-8",
    )
    out = folder / "whisper.npz"
    arrays = run_oracle_script(
        oracle_python("make-whisper-oracle-env", ORACLE_VENV),
        ORACLE_SCRIPT,
        out,
        *(str(tiny_whisper), str(cases_path), str(out)),
    )
    return arrays, json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def aligner(tiny_whisper: Path) -> Aligner:
    torch.set_num_threads(THREADS)
    return Aligner.load(tiny_whisper, CPU)


def sot_tokens(aligner: Aligner, language: str, text: str) -> list[int]:
    """The teacher-forced tokens of `text`, as the aligner builds them."""
    tokenizer = aligner.tokenizer
    spaced = text if language in UNSPACED_LANGUAGES else " " + text
    language_token = tokenizer.language_token(language)
    assert language_token is not None
    return [
        *(tokenizer.sot, language_token, tokenizer.transcribe, tokenizer.no_timestamps),
        *(*tokenizer.encode(spaced), tokenizer.eot),
    ]


# ---- against openai-whisper


@pytest.mark.parametrize("n_mels", [80, 128])
def test_mel_filters_equal_openai(n_mels: int, oracle: tuple) -> None:
    ours = mel_filters(n_mels)
    reference = oracle[0][f"mel_filters/{n_mels}"]
    assert ours.shape == reference.shape == (n_mels, 201)
    np.testing.assert_allclose(ours, reference, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("n_mels", [80, 128])
def test_log_mel_equals_openai(n_mels: int, audios: list[Path], oracle: tuple) -> None:
    for index, path in enumerate(audios):
        mel, num_frames = log_mel(np.load(path), n_mels)
        assert num_frames == oracle[1]["cases"][index]["num_frames"]
        reference = oracle[0][f"log_mel/{n_mels}/{index}"]
        assert np.abs(mel.numpy() - reference).max() <= MAX_AUDIO_ERROR


def test_cross_attention_equals_openai(aligner: Aligner, audios: list[Path], oracle: tuple) -> None:
    for index, (path, (text, language, _)) in enumerate(zip(audios, CASES)):
        mel, _ = log_mel(np.load(path), aligner.model.shape.num_mel_bins)
        qk = aligner.model.cross_qk(mel, sot_tokens(aligner, language, text), aligner.heads)
        reference = oracle[0][f"qk/{index}"]
        assert qk.shape == reference.shape
        assert np.abs(qk.numpy() - reference).max() <= MAX_AUDIO_ERROR


def test_tokenizer_equals_tiktoken(aligner: Aligner, oracle: tuple) -> None:
    for text, ids in oracle[1]["probes"].items():
        assert aligner.tokenizer.encode(text) == ids, text
        assert aligner.tokenizer.decode(ids) == text
    for (text, language, _), case in zip(CASES, oracle[1]["cases"]):
        assert sot_tokens(aligner, language, text)[4:-1] == case["tokens"]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[case[1] for case in CASES])
def test_words_and_times_equal_openai(
    index: int, aligner: Aligner, audios: list[Path], oracle: tuple
) -> None:
    text, language, _ = CASES[index]
    ours = aligner.align(np.load(audios[index]), SAMPLE_RATE, text, language)
    expected = [WordTiming(w.strip(), s, e) for w, s, e in oracle[1]["cases"][index]["words"]]
    assert ours == expected


def test_time_adjustments_equal_openai(oracle: tuple) -> None:
    """Sentence-mark trimming, punctuation merging, rounding and the pause rule on crafted
    alignments: identical to `add_word_timestamps`."""
    for crafted, expected in zip(crafted_alignments(CRAFTED_CASES), oracle[1]["crafted"]):
        words = [
            AlignedWord(word, tokens, np.int64(start) / 50, np.int64(end) / 50)
            for word, tokens, start, end in crafted
        ]
        assert adjust_times(words, merge=True) == [
            WordTiming(w.strip(), s, e) for w, s, e in expected
        ], crafted


def test_built_in_heads_are_openais(oracle: tuple) -> None:
    dims = {
        "tiny": (384, 4, 4, 51_865),
        "base": (512, 6, 6, 51_865),
        "small": (768, 12, 12, 51_865),
        "medium": (1024, 24, 24, 51_865),
        "large-v3": (1280, 32, 32, 51_866),
        "large-v3-turbo": (1280, 32, 4, 51_866),
    }
    assert set(BUILT_IN_HEADS) == set(dims.values())
    for name, heads in oracle[1]["heads"].items():
        assert [list(pair) for pair in BUILT_IN_HEADS[dims[name]]] == heads, name


# ---- our own behaviour


def test_the_callers_words_are_timed(aligner: Aligner, audios: list[Path]) -> None:
    audio = np.load(audios[0])
    plain = "the quick brown fox jumped over the lazy dog"
    assert aligner.align(audio, SAMPLE_RATE, plain, "en", plain.split()) == aligner.align(
        audio, SAMPLE_RATE, plain, "en"
    )
    words = ["Don't", "stop-gap", "it,", "(she", "said)."]
    timings = aligner.align(audio, SAMPLE_RATE, " ".join(words), "en", words)
    assert [t.word for t in timings] == words
    assert all(0 <= t.start <= t.end <= len(audio) / SAMPLE_RATE for t in timings)
    chinese = aligner.align(audio, SAMPLE_RATE, "你好，世界。", "zh", ["你好，", "世界。"])
    assert [t.word for t in chinese] == ["你好，", "世界。"]


def test_any_rate_is_resampled(aligner: Aligner) -> None:
    audio = speechlike(3.0, 9)
    rate = 24_000
    upsampled = np.interp(
        np.arange(len(audio) * 3 // 2) / rate * SAMPLE_RATE, np.arange(len(audio)), audio
    )
    timings = aligner.align(upsampled.astype(np.float32), rate, "hello there, world", "en")
    assert [t.word for t in timings] == ["hello", "there,", "world"]
    assert all(0 <= t.start <= t.end <= 3.0 for t in timings)


def test_alignment_head_fallback(tiny_whisper: Path, tmp_path: Path) -> None:
    folder = tmp_path / "whisper"
    folder.mkdir()
    config = json.loads((tiny_whisper / "config.json").read_text())
    config.update(d_model=384, encoder_layers=4, decoder_layers=4, vocab_size=51_865)
    (folder / "config.json").write_text(json.dumps(config))
    shape = WhisperShape.read(folder)
    assert alignment_heads(folder, shape) == BUILT_IN_HEADS[(384, 4, 4, 51_865)]  # no file
    (folder / "generation_config.json").write_text(json.dumps({"lang_to_id": {}}))
    assert alignment_heads(folder, shape) == BUILT_IN_HEADS[(384, 4, 4, 51_865)]  # no key
    (folder / "generation_config.json").write_text(
        json.dumps({"alignment_heads": [[3, 1], [0, 2]]})
    )
    assert alignment_heads(folder, shape) == ((0, 2), (3, 1))  # the file wins, sorted
    config.update(d_model=256)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "generation_config.json").unlink()
    with pytest.raises(ModelFileError, match="no alignment_heads.*d_model 256"):
        alignment_heads(folder, WhisperShape.read(folder))


def test_fp16_weights_become_float32(tiny_whisper: Path, tmp_path: Path) -> None:
    folder = shutil.copytree(tiny_whisper, tmp_path / "whisper-fp16")
    weights = {k: v.half() for k, v in load_file(str(folder / "model.safetensors")).items()}
    save_file(weights, str(folder / "model.safetensors"))
    model = Aligner.load(folder, CPU).model
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    conv = weights["model.encoder.conv1.weight"].float()
    assert torch.equal(model.encoder.conv1.weight, conv)


def test_input_errors(aligner: Aligner) -> None:
    audio = speechlike(2.0, 3)
    with pytest.raises(SpeakerError, match="transcript is empty"):
        aligner.align(audio, SAMPLE_RATE, "  ", "en")
    with pytest.raises(SpeakerError, match="does not know language 'eo'"):
        aligner.align(audio, SAMPLE_RATE, "saluton", "eo")
    with pytest.raises(SpeakerError, match="language 'transcribe'"):
        aligner.align(audio, SAMPLE_RATE, "hello", "transcribe")
    with pytest.raises(SpeakerError, match="30.1 s long; Whisper aligns at most 30 s"):
        aligner.align(np.zeros(30_100 * 16, np.float32), SAMPLE_RATE, "hello", "en")
    with pytest.raises(SpeakerError, match="mono"):
        aligner.align(np.stack([audio, audio]), SAMPLE_RATE, "hello", "en")
    with pytest.raises(SpeakerError, match="control token"):
        aligner.align(audio, SAMPLE_RATE, "hello <|en|> there", "en")
    with pytest.raises(SpeakerError, match="at most 443"):
        aligner.align(audio, SAMPLE_RATE, "a " * 500, "en")
    with pytest.raises(SpeakerError, match="too short"):
        aligner.align(audio[:100], SAMPLE_RATE, "hello", "en")
    with pytest.raises(SpeakerError, match="every word to time must hold text"):
        aligner.align(audio, SAMPLE_RATE, "hello", "en", ["hello", " "])


@pytest.mark.parametrize("missing", [name for name in ALIGNER_FILES if name != GENERATION_CONFIG])
def test_missing_file_is_named(missing: str, tiny_whisper: Path, tmp_path: Path) -> None:
    folder = shutil.copytree(tiny_whisper, tmp_path / "whisper")
    (folder / missing).unlink()
    with pytest.raises(ModelFileError, match=missing):
        Aligner.load(folder, CPU)


def test_model_file_errors(tiny_whisper: Path, tmp_path: Path) -> None:
    folder = shutil.copytree(tiny_whisper, tmp_path / "whisper")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"encoder_layers": 3}))
    with pytest.raises(ModelFileError, match=r"missing model\.encoder\.layers\.2\."):
        Aligner.load(folder, CPU)
    (folder / "config.json").write_text(json.dumps(config | {"vocab_size": 51_864}))
    with pytest.raises(ModelFileError, match="English-only"):
        Aligner.load(folder, CPU)
    (folder / "config.json").write_text(
        json.dumps({k: v for k, v in config.items() if k != "d_model"})
    )
    with pytest.raises(ModelFileError, match="config.json lacks d_model"):
        Aligner.load(folder, CPU)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "generation_config.json").write_text(json.dumps({"alignment_heads": [[2, 0]]}))
    with pytest.raises(ModelFileError, match=r"alignment head \[2, 0\] is not in the model"):
        Aligner.load(folder, CPU)
