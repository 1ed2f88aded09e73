"""WavTokenizer's encoder (`codecs/wavtokenizer_encoder.py`) against outetts 0.4.4's own
`WavEncoder` (run by tests/wavtokenizer_encoder_oracle.py in the DAC oracle venv) and a float64
re-computation, on the real-size random encoder of `tools/modelgen/wavtokenizer.py`; then OuteTTS
0.2/0.3 speaker profiles made with it (`engines/outetts/create.py`), read back by our loader and
written into 0.2 and 0.3 prompts."""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tools.modelgen.outetts import outetts_vocab
from tools.modelgen.wavtokenizer import (
    ENCODER_RATIOS,
    SEED,
    TINY_PAIRED_WAVTOKENIZER,
    write_tiny_wavtokenizer,
    write_tiny_wavtokenizer_encoder,
    write_wavtokenizer,
)
from wyoming_multitts.alignment import WordTiming
from wyoming_multitts.audio import resample
from wyoming_multitts.codecs.encodec24 import encodec_modules
from wyoming_multitts.codecs.wavtokenizer_encoder import (
    CODEBOOK,
    ENCODER_PREFIX,
    HOP,
    SEANET_ARGS,
    WAVTOKENIZER_ENCODER_FILES,
    WavTokenizerEncoder,
    check_codebook,
    load_wavtokenizer_encoder,
)
from wyoming_multitts.engines.outetts import prompt as op
from wyoming_multitts.engines.outetts import speakers
from wyoming_multitts.engines.outetts.create import (
    EMPTY_WORD_CODES,
    profile03,
    profile03_words,
)
from wyoming_multitts.errors import ConvertError, SpeakerError
from wyoming_multitts.text import SpokenWord, spoken_words

from .conftest import oracle_python, run_oracle_script

ROOT = Path(__file__).resolve().parent.parent
ORACLE_VENV = ROOT / "local" / "dac-oracle-venv"
ORACLE_SCRIPT = Path(__file__).resolve().parent / "wavtokenizer_encoder_oracle.py"
THREADS = 2
RATE = 24_000
ALIGNER_RATE = 16_000
MIN_DISTINCT_CODES = 50
"""The random encoder picks at least this many different codes in a few seconds of audio, so
equal codes are not an accident of one code winning everywhere."""
EMBEDDING_TOLERANCE = 1e-5
"""max |float32 − float64| / max |float64| of the encoder's output (measured 5e-7 to 8e-7)."""


def _clips() -> dict[str, np.ndarray]:
    """24 kHz test audio: noise and a chirp at speech level (lengths not a multiple of the hop)
    and 100 samples (shorter than the reflect padding, one frame)."""
    rng = np.random.default_rng(0)
    seconds = np.arange(3 * RATE + 7) / RATE
    chirp = 0.3 * np.sin(2 * np.pi * (200 + 600 * seconds) * seconds) * (seconds % 0.5 < 0.35)
    return {
        "noise": (0.1 * rng.standard_normal(2 * RATE + 123)).astype(np.float32),
        "chirp": chirp.astype(np.float32),
        "short": (0.1 * rng.standard_normal(100)).astype(np.float32),
    }


@pytest.fixture(scope="module", autouse=True)
def _threads() -> None:
    torch.set_num_threads(THREADS)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the 512-wide tiny decoder GGUF, the encoder snapshot folder with its codebook)."""
    return write_tiny_wavtokenizer_encoder(tmp_path_factory.mktemp("wavtokenizer-encoder"))


@pytest.fixture(scope="module")
def encoder(pair: tuple[Path, Path]) -> WavTokenizerEncoder:
    return load_wavtokenizer_encoder(pair[1], torch.device("cpu"))


@pytest.fixture(scope="module")
def oracle(pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("oracle")
    clips: dict[str, Any] = {f"audio_{name}": clip for name, clip in _clips().items()}
    np.savez(work / "in.npz", **clips)
    return run_oracle_script(
        oracle_python("make-dac-oracle-env", ORACLE_VENV),
        ORACLE_SCRIPT,
        work / "out.npz",
        *(str(pair[1]), str(work / "in.npz"), str(work / "out.npz")),
    )


# ----------------------------------------------------------------------------------------------
# Codes


def test_codes_equal_outetts_wav_encoder(encoder: WavTokenizerEncoder, oracle: dict) -> None:
    for name, clip in _clips().items():
        codes = encoder.encode(clip)
        assert codes.shape == (math.ceil(len(clip) / HOP),) == oracle[f"codes_{name}"].shape
        np.testing.assert_array_equal(codes, oracle[f"codes_{name}"], err_msg=name)
        with torch.inference_mode():
            embeddings = encoder.encoder(torch.from_numpy(clip)[None, None])[0]  # (512, T)
        # weight norm folded by the op its hook runs: the very same float32 numbers
        np.testing.assert_array_equal(embeddings.numpy(), oracle[f"embeddings_{name}"])
        if len(clip) > RATE:
            assert len(set(codes.tolist())) >= MIN_DISTINCT_CODES


def test_codes_equal_a_float64_recomputation(
    encoder: WavTokenizerEncoder, pair: tuple[Path, Path]
) -> None:
    """encodec's weight-normed SEANetEncoder (its own hooks, no folding) in float64 on the
    checkpoint's tensors, and the nearest code in float64."""
    state = torch.load(pair[1] / WAVTOKENIZER_ENCODER_FILES[1], weights_only=True)
    modules, _ = encodec_modules()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # encodec uses torch's old weight_norm
        reference = modules.SEANetEncoder(
            ratios=list(ENCODER_RATIOS), norm="weight_norm", **SEANET_ARGS
        )
    reference.load_state_dict(
        {
            k.removeprefix(ENCODER_PREFIX): v
            for k, v in state.items()
            if k.startswith(ENCODER_PREFIX)
        }
    )
    reference.double().eval()
    codebook = state[CODEBOOK].double()  # (bins, 512)
    for name, clip in _clips().items():
        with torch.inference_mode():
            exact = reference(torch.from_numpy(clip).double()[None, None])[0].T  # (T, 512)
            ours = encoder.encoder(torch.from_numpy(clip)[None, None])[0].T  # (T, 512)
        error = float((ours.double() - exact).abs().max() / exact.abs().max())
        assert error < EMBEDDING_TOLERANCE, name
        distances = (exact**2).sum(1, keepdim=True) - 2 * exact @ codebook.T + (codebook**2).sum(1)
        np.testing.assert_array_equal(encoder.encode(clip), distances.argmin(1).numpy(), name)


def test_encode_rejects_what_is_not_mono_float_audio(encoder: WavTokenizerEncoder) -> None:
    for audio in (np.zeros((2, 100), np.float32), np.zeros(100, np.int16), np.zeros(0, np.float32)):
        with pytest.raises(ValueError, match="mono float"):
            encoder.encode(audio)


# ----------------------------------------------------------------------------------------------
# Loading and the codebook check


def test_codebook_equals_its_decoder(encoder: WavTokenizerEncoder, pair: tuple[Path, Path]) -> None:
    check_codebook(encoder, pair[0])


def test_codebook_mismatch_names_both_files(encoder: WavTokenizerEncoder, tmp_path: Path) -> None:
    narrow = write_tiny_wavtokenizer(tmp_path)  # 16 wide
    with pytest.raises(ConvertError, match="4096 × 16.*4096 × 512") as err:
        check_codebook(encoder, narrow)
    assert str(narrow) in str(err.value) and str(encoder.path) in str(err.value)

    other = tmp_path / "other-seed.gguf"
    write_wavtokenizer(other, TINY_PAIRED_WAVTOKENIZER, SEED + 1)
    with pytest.raises(ConvertError, match="differ.*decode wrongly") as err:
        check_codebook(encoder, other)
    assert str(other) in str(err.value) and str(encoder.path) in str(err.value)

    with pytest.raises(ConvertError, match="cannot read"):
        check_codebook(encoder, encoder.path)  # not a GGUF


def _snapshot(pair: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the encoder snapshot: (its folder, its config file); the weights are linked."""
    config, weights = (tmp_path / name for name in WAVTOKENIZER_ENCODER_FILES)
    config.parent.mkdir(parents=True)
    shutil.copyfile(pair[1] / WAVTOKENIZER_ENCODER_FILES[0], config)
    weights.symlink_to(pair[1] / WAVTOKENIZER_ENCODER_FILES[1])
    return tmp_path, config


def _edit_config(config: Path, **changes: Any) -> None:
    doc = json.loads(config.read_text())
    doc["feature_extractor_config"].update(changes)
    config.write_text(json.dumps(doc))


def test_load_errors_name_the_file(pair: tuple[Path, Path], tmp_path: Path) -> None:
    cpu = torch.device("cpu")
    folder, config = _snapshot(pair, tmp_path / "ratios")
    _edit_config(config, dowmsamples=[8, 5, 4, 4])
    with pytest.raises(ConvertError, match=f"{config}.*640 samples per code"):
        load_wavtokenizer_encoder(folder, cpu)

    folder, config = _snapshot(pair, tmp_path / "model")
    _edit_config(config, encodec_model="encodec_48khz")
    with pytest.raises(ConvertError, match="does not describe"):
        load_wavtokenizer_encoder(folder, cpu)

    folder, _ = _snapshot(pair, tmp_path / "tensors")
    weights = folder / WAVTOKENIZER_ENCODER_FILES[1]
    weights.unlink()  # the link
    torch.save({CODEBOOK: torch.zeros(4096, 512)}, weights)
    with pytest.raises(
        ConvertError, match=f"(?s){weights} does not hold .*Missing key.*model.0.conv"
    ):
        load_wavtokenizer_encoder(folder, cpu)
    torch.save({CODEBOOK: torch.zeros(4096, 16)}, weights)
    with pytest.raises(ConvertError, match=f"(?s){weights} does not hold .*size"):
        load_wavtokenizer_encoder(folder, cpu)

    weights.unlink()
    with pytest.raises(ConvertError, match=f"cannot read {weights}"):
        load_wavtokenizer_encoder(folder, cpu)
    (folder / WAVTOKENIZER_ENCODER_FILES[0]).unlink()
    with pytest.raises(ConvertError, match="config.json is missing"):
        load_wavtokenizer_encoder(folder, cpu)


# ----------------------------------------------------------------------------------------------
# 0.2/0.3 speaker profiles

TEXT = "Hello, my friend. It's fine!"
"""Five words (hello my friend its fine), three of them with marks for 0.3."""
ENDS = (0.30, 0.31, 0.80, 0.80, 1.20)
"""Word end times (s): 22, 23, 60, 60 and 90 frames (round(22.5) is 22); "its" gets none."""


class _CountingEncoder:
    """Stands in for the encoder: frame i gets code i, and the audio it was given is kept."""

    def __init__(self) -> None:
        self.audio = np.zeros(0, np.float32)

    def encode(self, audio24: np.ndarray) -> np.ndarray:
        self.audio = audio24
        return np.arange(math.ceil(len(audio24) / HOP))


def _timings(text: str, language: str, ends: tuple[float, ...]) -> list[WordTiming]:
    words = profile03_words(text, language)
    assert len(words) == len(ends)
    return [WordTiming(word, max(0.0, end - 0.2), end) for word, end in zip(words, ends)]


def _clip16k(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * ALIGNER_RATE)) / ALIGNER_RATE
    return (0.3 * np.sin(2 * np.pi * (150 + 400 * t) * t)).astype(np.float32)


def test_profile03_cuts_the_codes_at_word_ends() -> None:
    fake: Any = _CountingEncoder()
    audio = _clip16k(2.0)
    profile = profile03(audio, _timings(TEXT, "en", ENDS), TEXT, "en", fake)
    # the encoded audio: the 16 kHz recording up to the last word's end, at 24 kHz
    np.testing.assert_array_equal(fake.audio, resample(audio[:19_200], ALIGNER_RATE, RATE))
    assert profile == {
        "text": TEXT,
        "words": [
            {"word": "hello", "duration": 0.29, "codes": list(range(0, 22))},
            {"word": "my", "duration": 0.01, "codes": [22]},
            {"word": "friend", "duration": 0.49, "codes": list(range(23, 60))},
            {"word": "its", "duration": 0.01, "codes": list(EMPTY_WORD_CODES)},
            {"word": "fine", "duration": 0.4, "codes": list(range(60, 90))},
        ],
        "language": "en",
        "interface_version": 2,
    }


def test_profile03_needs_the_transcript_words() -> None:
    fake: Any = _CountingEncoder()
    audio = _clip16k(2.0)
    with pytest.raises(ValueError, match="not the transcript's"):
        profile03(audio, _timings(TEXT, "en", ENDS)[:-1], TEXT, "en", fake)
    with pytest.raises(SpeakerError, match="no words"):
        profile03(audio, [], "...", "en", fake)
    with pytest.raises(SpeakerError, match="no speech"):
        profile03(audio, _timings("hi", "en", (0.0,)), "hi", "en", fake)


class _Vocab:
    """An OuteTTS vocabulary's special tokens by name (tools/modelgen's); each text piece the
    prompt tokenizes gets an id of its own, so ids render back to the prompt string."""

    def __init__(self, version: str) -> None:
        names = outetts_vocab(version).tokens
        self._ids = {name: i for i, name in enumerate(names) if name.startswith("<|")}
        self._names = {i: name for name, i in self._ids.items()}
        self._next = len(names)  # text pieces: ids past the vocabulary

    def token_id(self, text: str) -> int | None:
        return self._ids.get(text) if text != "\n" else self.tokenize(text)[0]

    def tokenize(self, text: str) -> list[int]:
        if text not in self._ids:
            self._ids[text], self._names[self._next] = self._next, text
            self._next += 1
        return [self._ids[text]]

    def text(self, ids: list[int]) -> str:
        return "".join(self._names[i] for i in ids)


def _expected_turn(profile: dict, words: list[SpokenWord], version: str) -> str:
    """The speaker turn as outetts writes it (the formats of tests/test_outetts_prompt.py)."""
    written = [w.word + "".join(op.PUNCTUATION_TOKENS[m] for m in w.marks) for w in words]
    if version == "0.3":
        lines = [
            f"{word}<|t_{entry['duration']:.2f}|>" + "".join(f"<|{c}|>" for c in entry["codes"])
            for word, entry in zip(written, profile["words"])
        ]
        text_part, audio_part = "<|space|>".join(written), "<|space|>\n".join(lines)
    else:
        lines = [
            f"{word}<|t_{entry['duration']:.2f}|><|code_start|>"
            + "".join(f"<|{c}|>" for c in entry["codes"])
            + "<|code_end|>"
            for word, entry in zip(written, profile["words"])
        ]
        text_part, audio_part = "<|text_sep|>".join(written), "\n".join(lines)
    return (
        f"<|im_start|>\n<|text_start|>{text_part}<|text_end|>\n<|audio_start|>\n{audio_part}\n"
        "<|audio_end|>\n<|im_end|>\n<|im_start|>\n<|text_start|>"
    )


@pytest.mark.parametrize(
    ("text", "language", "ends"),
    [(TEXT, "en", ENDS), ("Ça va, très bien !", "fr", (0.25, 0.5, 0.9, 1.4))],
)
def test_profile03_loads_and_prompts(
    encoder: WavTokenizerEncoder,
    tmp_path: Path,
    text: str,
    language: str,
    ends: tuple[float, ...],
) -> None:
    profile = profile03(_clip16k(1.6), _timings(text, language, ends), text, language, encoder)
    path = tmp_path / "speaker.json"
    path.write_text(json.dumps(profile, indent=2), encoding="utf-8")
    speaker = speakers.load_speaker(path)
    assert [w.word for w in speaker.words] == profile03_words(text, language)
    assert speaker.n_codes == sum(len(entry["codes"]) for entry in profile["words"])
    # 0.3 takes the words' punctuation back from the text, 0.2 writes them bare
    marked = spoken_words(text, language, keep_punctuation=True)
    assert speakers.speaker_words(speaker, "0.3") == marked
    for version, words in (("0.3", marked), ("0.2", [SpokenWord(w.word) for w in marked])):
        vocab = _Vocab(version)
        tokens = op.read_tokens(vocab.token_id)
        assert tokens.version == version
        prompt = op.build_prompt(tokens, "turn", speaker, words[:1], vocab.tokenize)
        assert vocab.text(prompt.prefix) == _expected_turn(profile, words, version)
