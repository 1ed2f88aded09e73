"""Tests for the OuteTTS 1.0 language side (`engines.outetts.prompt10`, `speakers10`).

The reference is the official package itself: `tests/outetts10_oracle.py` runs outetts 0.4.4's
"v3" prompt processor in its own venv (`script/make-outetts-oracle-env`) and returns its prompt
strings, normalised texts and extracted codes. Each reference prompt string, tokenized by
llama.cpp with special-token parsing on the tiny 1.0 GGUF (real vocabulary by name, written by
`modelgen.outetts10`), must be our prompt token for token.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import llama_cpp
import pytest

from tools.modelgen import outetts as modelgen_outetts
from tools.modelgen import outetts10 as modelgen
from tools.modelgen.dac import write_tiny_dac
from tools.modelgen.gguf_lm import write_lm_gguf
from tools.modelgen.qwen3tts import reference_recording
from tools.modelgen.whisper import write_whisper
from wyoming_multitts.audio import write_wav
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines.outetts import prompt as prompt03
from wyoming_multitts.engines.outetts import prompt10 as op
from wyoming_multitts.engines.outetts import speakers10
from wyoming_multitts.engines.outetts.prompt10 import Frame, OuteTokens10, ReplyReader, WordGuide
from wyoming_multitts.errors import LlamaError, SpeakerError, VocabularyError
from wyoming_multitts.llm.model import LlamaModel

from .conftest import oracle_python

ROOT = Path(__file__).resolve().parent.parent
ORACLE_VENV = ROOT / "local" / "outetts-oracle-venv"
ORACLE_SCRIPT = Path(__file__).resolve().parent / "outetts10_oracle.py"
ORACLE_TIMEOUT = 120
"""Seconds for the oracle run (well under one here: it imports only the prompt processor)."""
N_CTX = 512
"""Context of the test models: nothing is evaluated, only tokenized."""

BUILTIN = "en-female-1-neutral"
BUILTIN_SHA256 = "a7a6zKYMl1l0HYScK68q8_YmOlG3WdZ4Ju854e_EQ2w"
"""The built-in profile's hash in the outetts 0.4.4 wheel's RECORD (data/outetts/v1.0/NOTICE.md)."""

USER_SPEAKER: dict[str, Any] = {
    "text": "Hi, there",
    "words": [
        {
            "word": "Hi,",
            "duration": 0.03,
            "c1": [1, 2],
            "c2": [3, 1023],
            "features": {"energy": 0, "spectral_centroid": 100, "pitch": 7},
        },
        {
            "word": "there",
            "duration": 0.04,
            "c1": [0, 1022, 5],
            "c2": [6, 7, 8],
            "features": {"energy": 12, "spectral_centroid": 3, "pitch": 45},
        },
    ],
    "global_features": {"energy": 9, "spectral_centroid": 8, "pitch": 70},
    "interface_version": 3,
}
"""A user's profile: no final punctuation, so the official prompt adds `. ` to the text and `.`
to the last word; codes and features at the ends of their ranges."""

CJK_SPEAKER: dict[str, Any] = {
    "text": "今天很好",
    "words": [
        {
            "word": "今天",
            "duration": 0.01,
            "c1": [10],
            "c2": [11],
            "features": {"energy": 1, "spectral_centroid": 2, "pitch": 3},
        },
        {
            "word": "很好",
            "duration": 0.02,
            "c1": [12, 13],
            "c2": [14, 15],
            "features": {"energy": 4, "spectral_centroid": 5, "pitch": 6},
        },
    ],
    "global_features": {"energy": 1, "spectral_centroid": 1, "pitch": 1},
}
"""A Chinese transcript (no interface_version): the separator is `。`, with no space."""

REQUEST = "Good day! How are you?"

NORMALIZE = [
    "Good day, how are you?",
    "“Quoted” text, it’s fine, ‘ok’ «Bonjour» dit-il",
    "Wait… what.... really..",
    "A—B – C -- D ― E − F",
    "Hello , world !How are you ?Fine:yes;no",
    "can 't won ' t it ' s the dogs ' . I'm",
    "What?!! No!!! ??? ok!?",
    "soft\u00adhyphen zero\u200bwidth\ufeffbom\x07bell",
    "  lots\t of \n\n space  ",
    "ʼtis a ‚low‚ quote",
    "A\x85B and \x93quoted\x94",
    "Tom &amp; Jerry &lt;3, &eacute;t&eacute; &NTILDE; &bogus; &#233;",
    "first line <b>\nsecond &amp; line",
    "one &amp;amp; two\nthree <i> &amp;\nfour &amp;",
    "\x1b[31mred\x1b[0m text",
    "\u206aarabic\ufff9anno\ufffc ok",
    "ﬁne ｆｕｌｌ　width ① ™",
    "It costs 3.50 dollars, i.e. cheap.",
    "你好，世界。 こんにちは",
    '"',
]
"""Texts for `text_normalizations`: its own replacements, and what ftfy's `fix_text` changes in
well-formed text (curly quotes, C1 controls, HTML entities, terminal escapes, control
characters, per-line markup rule)."""

MERGES = [
    ("Hi.", "The cat"),
    ("Hi.", "The cat."),
    ("Hi.", "Really?"),
    ("Hi.", "Wow!"),
    ("Hi.", "It ended;"),
    ("你好", "今天很好"),
    ("你好", "今天很好。"),
    ("你好", "今天很好!"),
    ("你好", "今天很好."),
    ("Hi", "안녕하세요"),
    ("Hi", "こんにちは"),
    ("Hi", ""),
    ("  Hi  ", "  padded  "),
]

CREATED_TEXT = "Well, hello there: it's me!"
CREATED_SECONDS = 2.5
CREATED_RATE = 16_000
"""The recording `create-speaker` makes the "created" profile from (a speech-like test tone)."""

PROMPTS = [
    ("builtin", "inline"),
    ("builtin", "turn"),
    ("user", "inline"),
    ("user", "turn"),
    ("cjk", "inline"),
    ("created", "inline"),
    ("created", "turn"),
    (None, "inline"),
]
"""(speaker, layout) cases compared with the reference string."""

REPLY = (
    "<|global_features_start|><|energy_5|><|spectral_centroid_6|><|pitch_7|>"
    "<|global_features_end|>\n<|word_start|>Good<|features|><|t_0.05|><|energy_1|>"
    "<|spectral_centroid_2|><|pitch_3|><|code|><|c1_5|><|c2_6|><|c1_1023|><|c2_0|><|c1_9|>"
    "<|word_end|>\n<|word_start|>day!<|features|><|t_0.02|><|energy_1|><|spectral_centroid_2|>"
    "<|pitch_3|><|code|><|c2_44|><|c1_45|><|c2_46|><|c1_7|><|word_end|>\n<|audio_end|>\n"
    "<|im_end|>"
)
"""A generated-looking reply: global features, two words, a c1 without its c2, a c2 before its
c1, and the ending."""


# ----------------------------------------------------------------------------------------------
# Fixtures


class Vocab:
    """A tiny model's vocabulary: llama.cpp tokenizer, ids and detokenizer."""

    def __init__(self, path: Path) -> None:
        self.llm = LlamaModel(path, CPU, n_ctx=N_CTX, threads=1)
        self._detok = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)

    def token_id(self, text: str) -> int | None:
        """`LlamaModel.special_token`, wrapped as the engine does."""
        try:
            return self.llm.special_token(text)
        except LlamaError:
            return None

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text, special=False)

    def text(self, ids: list[int]) -> str:
        return self._detok.detokenize(ids, special=True).decode("utf-8")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny 1.0 GGUF (from `modelgen.outetts10`) and a tiny 0.3 one, without vocoder."""
    directory = tmp_path_factory.mktemp("outetts10")
    assert modelgen.write_tiny(directory) == directory / modelgen.TINY_GGUF
    write_lm_gguf(
        directory / "outetts-0.3-tiny.gguf",
        modelgen_outetts.OUTETTS_TINY_SHAPE,
        modelgen_outetts.outetts_vocab("0.3"),
        modelgen_outetts.TINY_SEED,
    )
    return directory


@pytest.fixture(scope="module")
def vocab(model_dir: Path) -> Iterator[Vocab]:
    vocab = Vocab(model_dir / modelgen.TINY_GGUF)
    yield vocab
    vocab.llm.close()


@pytest.fixture(scope="module")
def vocab03(model_dir: Path) -> Iterator[Vocab]:
    vocab = Vocab(model_dir / "outetts-0.3-tiny.gguf")
    yield vocab
    vocab.llm.close()


@pytest.fixture(scope="module")
def tokens(vocab: Vocab) -> OuteTokens10:
    return op.read_tokens(vocab.token_id)


@pytest.fixture(scope="module")
def speaker_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Profiles by case name; "created" is made by `create-speaker` from a WAV (tiny Whisper
    and DAC), as a user makes one."""
    directory = tmp_path_factory.mktemp("speakers10")
    files = {"builtin": speakers10.speaker_path(BUILTIN)}
    for name, doc in (("user", USER_SPEAKER), ("cjk", CJK_SPEAKER)):
        files[name] = directory / f"{name}.json"
        files[name].write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    recording = directory / "recording.wav"
    write_wav(recording, reference_recording(CREATED_SECONDS, CREATED_RATE), CREATED_RATE)
    files["created"] = directory / "created.json"
    command = [
        *(sys.executable, "-m", "wyoming_multitts", "create-speaker", str(recording)),
        *("--text", CREATED_TEXT, "--out", str(files["created"]), "--threads", "2"),
        *("--aligner", str(write_whisper(directory / "whisper"))),
        *("--vocoder", str(write_tiny_dac(directory))),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=ORACLE_TIMEOUT)
    return files


@pytest.fixture(scope="module")
def oracle(
    tmp_path_factory: pytest.TempPathFactory,
    speaker_files: dict[str, Path],
    tokens: OuteTokens10,
    vocab: Vocab,
) -> dict[str, Any]:
    """The official package's answers to every case of this file."""
    python = oracle_python("make-outetts-oracle-env", ORACLE_VENV)
    directory = tmp_path_factory.mktemp("oracle")
    request = {
        "normalize": NORMALIZE,
        "merge": MERGES,
        "prompts": [
            {
                "text": REQUEST,
                "speaker": None if name is None else str(speaker_files[name]),
                "layout": layout,
            }
            for name, layout in PROMPTS
        ],
        # the maps `get_audio_token_map` builds from the tokenizer: range(1025) per codebook
        "c1": {tokens.c1_base + code: code for code in range(speakers10.N_CODES + 1)},
        "c2": {tokens.c2_base + code: code for code in range(speakers10.N_CODES + 1)},
        "reply": vocab.llm.tokenize(REPLY, special=True),
    }
    (directory / "request.json").write_text(json.dumps(request), encoding="utf-8")
    result = subprocess.run(
        [
            str(python),
            str(ORACLE_SCRIPT),
            str(directory / "request.json"),
            str(directory / "answers.json"),
        ],
        capture_output=True,
        text=True,
        timeout=ORACLE_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answers: dict[str, Any] = json.loads((directory / "answers.json").read_text(encoding="utf-8"))
    return answers


def _speaker(files: dict[str, Path], name: str | None) -> speakers10.SpeakerProfile10 | None:
    return None if name is None else speakers10.load_speaker(files[name])


# ----------------------------------------------------------------------------------------------
# Vocabulary


def test_vocabulary_check_tells_1_0_from_0_3(vocab: Vocab, vocab03: Vocab) -> None:
    assert op.is_1_0_vocabulary(vocab.token_id)
    assert not op.is_1_0_vocabulary(vocab03.token_id)
    with pytest.raises(VocabularyError, match=r"no single token '<\|.*\|>'.*OuteTTS 1\.0"):
        op.read_tokens(vocab03.token_id)
    with pytest.raises(VocabularyError, match=r"no single token '<\|0\|>'"):
        prompt03.read_tokens(vocab.token_id)  # the 0.2/0.3 reader refuses a 1.0 vocabulary


def test_ids_come_from_the_vocabulary(vocab: Vocab, tokens: OuteTokens10) -> None:
    assert (tokens.c1_base, tokens.c2_base) == (128_256, 129_281)  # modelgen.outetts10's layout
    llm = vocab.llm
    assert llm.tokenize("<|c1_1023|><|c2_17|>", special=True) == [
        tokens.c1_base + 1023,
        tokens.c2_base + 17,
    ]
    assert llm.tokenize("<|t_0.89|><|t_5.00|>", special=True) == [
        tokens.duration_token(0.89),
        tokens.duration_token(5.0),
    ]
    features = speakers10.Features(energy=23, spectral_centroid=100, pitch=0)
    assert llm.tokenize("<|energy_23|><|spectral_centroid_100|><|pitch_0|>", special=True) == list(
        tokens.feature_tokens(features)
    )
    assert tokens.c1_code(tokens.c1_base + 1023) == 1023
    assert tokens.c1_code(tokens.c1_base + 1024) is None  # <|c1_1024|> is no DAC code
    assert tokens.c2_code(tokens.c1_base) is None
    assert tokens.end_tokens == {
        llm.special_token("<|audio_end|>"),
        llm.special_token("<|im_end|>"),
    }


def test_read_tokens_names_what_is_missing(vocab: Vocab) -> None:
    def without(text: str) -> Callable[[str], int | None]:
        return lambda asked: None if asked == text else vocab.token_id(asked)

    for text in ("<|code|>", "<|global_features_end|>", "<|pitch_100|>", "<|t_5.00|>"):
        expected = f"^the vocabulary has no single token {re.escape(repr(text))}"
        with pytest.raises(VocabularyError, match=expected):
            op.read_tokens(without(text))


def test_read_tokens_checks_contiguous_ids(vocab: Vocab) -> None:
    for text in ("<|c2_1023|>", "<|t_1.00|>", "<|energy_100|>"):

        def shifted(asked: str, text: str = text) -> int | None:
            token = vocab.token_id(asked)
            return token + 1 if asked == text and token is not None else token

        with pytest.raises(VocabularyError, match=f"^{re.escape(text)} is .*not contiguous"):
            op.read_tokens(shifted)


# ----------------------------------------------------------------------------------------------
# Text, against the reference


def test_normalization_equals_reference(oracle: dict[str, Any]) -> None:
    assert [op.normalize_text(text) for text in NORMALIZE] == oracle["normalized"]


def test_speaker_text_merge_equals_reference(oracle: dict[str, Any]) -> None:
    ours = [op.merge_speaker_text(text, speaker) for text, speaker in MERGES]
    assert [merged for merged, _ in ours] == oracle["merged"]
    assert [mark for _, mark in ours] == oracle["marks"]


# ----------------------------------------------------------------------------------------------
# Prompts, against the reference


@pytest.mark.parametrize(("speaker", "layout"), PROMPTS)
def test_prompt_is_the_reference_token_for_token(
    vocab: Vocab,
    tokens: OuteTokens10,
    speaker_files: dict[str, Path],
    oracle: dict[str, Any],
    speaker: str | None,
    layout: str,
) -> None:
    reference = oracle["prompts"][PROMPTS.index((speaker, layout))]
    profile = _speaker(speaker_files, speaker)
    prompt = op.build_prompt(tokens, layout, profile, REQUEST, vocab.tokenize)
    assert prompt.ids == vocab.llm.tokenize(reference, special=True)
    assert vocab.text(prompt.ids) == reference
    if profile is not None and layout == "inline":
        assert reference.endswith("<|word_end|>\n<|word_start|>")


def test_prompt_layouts_split_where_the_cache_can_keep_them(
    vocab: Vocab, tokens: OuteTokens10, speaker_files: dict[str, Path]
) -> None:
    speaker = _speaker(speaker_files, "builtin")
    assert speaker is not None
    first, second = "One.", "Two more words, please!"
    for layout in op.LAYOUTS:
        a = op.build_prompt(tokens, layout, speaker, first, vocab.tokenize)
        b = op.build_prompt(tokens, layout, speaker, second, vocab.tokenize)
        assert a.prefix == b.prefix == op.speaker_prefix(tokens, layout, speaker, vocab.tokenize)
        assert a.suffix == op.request_suffix(tokens, layout, speaker, first, vocab.tokenize)
        cached = a.prefix if layout == "turn" else a.suffix  # where the speaker's codes are
        assert sum(tokens.c1_code(t) is not None for t in cached) == speaker.n_frames == 759
    turn = op.build_prompt(tokens, "turn", speaker, first, vocab.tokenize)
    assert len(turn.prefix) > 1700 and len(turn.suffix) < 15
    assert vocab.text(turn.suffix) == "One.<|text_end|>\n<|audio_start|>\n"


def test_prompt_rejects_bad_arguments(vocab: Vocab, tokens: OuteTokens10) -> None:
    with pytest.raises(ValueError, match="layout"):
        op.build_prompt(tokens, "sideways", None, REQUEST, vocab.tokenize)
    with pytest.raises(ValueError, match="needs some text"):
        op.build_prompt(tokens, "inline", None, ' " ', vocab.tokenize)


# ----------------------------------------------------------------------------------------------
# Replies


def test_extract_codes_equals_reference(
    vocab: Vocab, tokens: OuteTokens10, oracle: dict[str, Any]
) -> None:
    reply = vocab.llm.tokenize(REPLY, special=True)
    c1, c2 = op.extract_codes(tokens, reply)
    assert (c1, c2) == (oracle["c1"], oracle["c2"])
    assert (c1, c2) == ([5, 1023, 9, 45], [6, 0, 44, 46])  # the last c1 has no c2


def test_reply_reader_streams_the_reference_frames(
    vocab: Vocab, tokens: OuteTokens10, oracle: dict[str, Any]
) -> None:
    reply = vocab.llm.tokenize(REPLY, special=True)
    reader = ReplyReader(tokens)
    frames = [frame for frame in map(reader.feed, reply) if frame is not None]
    assert frames == [Frame(c1, c2) for c1, c2 in zip(oracle["c1"], oracle["c2"])]
    assert frames == [Frame(5, 6), Frame(1023, 0), Frame(9, 44), Frame(45, 46)]
    assert reader.finished and reader.n_frames == 4
    assert reader.feed(tokens.c1_base + 1) is None and reader.feed(tokens.c2_base + 1) is None


def test_code_1024_is_no_frame(tokens: OuteTokens10) -> None:
    reply = [tokens.c1_base + 1024, tokens.c2_base + 3, tokens.c1_base + 2, tokens.c2_base + 1024]
    assert op.extract_codes(tokens, reply) == ([2], [3])
    reader = ReplyReader(tokens)
    assert [reader.feed(token) for token in reply] == [None, None, Frame(2, 3), None]


# ----------------------------------------------------------------------------------------------
# Guided words


def test_word_guide_after_a_speaker_prompt(vocab: Vocab, tokens: OuteTokens10) -> None:
    guide = WordGuide("Good “day”,  you!", tokens, vocab.tokenize)
    assert guide.remaining == 3
    plain = 300  # a text token the model might sample
    # the official prompt ends in <|word_start|>: the first word is written for the model
    assert guide.apply(tokens.word_start, plain) == [*vocab.tokenize("Good"), tokens.features]
    code = tokens.c1_base + 4
    assert guide.apply(tokens.features, code) == [code]  # inside a word: untouched
    # the model starts a word: it gets the next one ("day," keeps its comma, loses the quotes)
    assert guide.apply(10, tokens.word_start) == [
        tokens.word_start,
        *vocab.tokenize("day,"),
        tokens.features,
    ]
    # it ends too early: the last word is started instead
    assert guide.apply(10, tokens.audio_end) == [
        tokens.word_start,
        *vocab.tokenize("you!"),
        tokens.features,
    ]
    assert guide.remaining == 0 and not guide.exhausted
    assert guide.apply(10, tokens.audio_end) == [tokens.audio_end]  # it ends by itself
    assert guide.apply(10, tokens.word_start) == [tokens.audio_end]  # or would say more
    assert guide.exhausted


# ----------------------------------------------------------------------------------------------
# Speaker profiles


def test_builtin_speaker_is_the_package_file() -> None:
    path = speakers10.speaker_path(BUILTIN)
    digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=")
    assert digest.decode() == BUILTIN_SHA256
    assert speakers10.builtin_speakers() == (BUILTIN,)
    speaker = speakers10.load_speaker(path)
    assert (speaker.name, len(speaker.words), speaker.n_frames) == (BUILTIN, 26, 759)
    assert speaker.words[5].word == "windowsill,"
    assert speaker.global_features == speakers10.Features(13, 20, 28)


def test_speaker_path(tmp_path: Path) -> None:
    assert speakers10.speaker_path(BUILTIN) == speakers10.SPEAKERS_DIR / f"{BUILTIN}.json"
    (tmp_path / "mine.json").write_text("{}")
    assert speakers10.speaker_path("mine.json", tmp_path) == tmp_path / "mine.json"
    with pytest.raises(SpeakerError, match=f"no such built-in OuteTTS 1.0 speaker \\({BUILTIN}\\)"):
        speakers10.speaker_path("en-male-9-angry")


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change to a profile: set `path` ("words.1.c1.0") to `value`, or delete it if None."""

    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is None:
            del node[int(last) if isinstance(node, list) else last]
        else:
            node[int(last) if isinstance(node, list) else last] = value

    return change


BAD_SPEAKERS = {
    "code too big": (
        _set("words.1.c1.0", 1024),
        r"words\[1\] \('there'\): 'c1'\[0\]: code 1024 is out of range 0\.\.1023",
    ),
    "negative code": (
        _set("words.0.c2.1", -1),
        r"words\[0\] \('Hi,'\): 'c2'\[1\]: code -1 is out of range",
    ),
    "code not int": (
        _set("words.0.c1.0", "5"),
        r"words\[0\] \('Hi,'\): 'c1'\[0\]: code '5' is not an integer",
    ),
    "codes differ": (
        _set("words.1.c2", [1]),
        r"words\[1\] \('there'\): 'c1' has 3 codes but 'c2' 1",
    ),
    "no codes": (
        _set("words.0.c1", []),
        r"words\[0\] \('Hi,'\): 'c1' \(DAC codes\) is missing or empty",
    ),
    "duration text": (
        _set("words.0.duration", "0.1"),
        r"words\[0\] \('Hi,'\): 'duration' \(seconds\) is missing or not a number",
    ),
    "duration long": (
        _set("words.0.duration", 6.0),
        r"words\[0\] \('Hi,'\): bad duration 6\.0: must be 0\.\.5 seconds",
    ),
    "feature float": (
        _set("words.1.features.energy", 1.5),
        r"words\[1\] \('there'\): 'features': 'energy' is 1\.5, not an integer",
    ),
    "feature missing": (
        _set("words.1.features.pitch", None),
        r"words\[1\] \('there'\): 'features': 'pitch' is None, not an integer",
    ),
    "feature range": (
        _set("words.0.features.spectral_centroid", 101),
        r"'spectral_centroid' 101 is out of range 0\.\.100",
    ),
    "no features": (_set("words.0.features", None), r"words\[0\] \('Hi,'\): 'features' is missing"),
    "no global": (_set("global_features", None), r"'global_features' is missing"),
    "word space": (
        _set("words.0.word", "Hi there"),
        r"words\[0\] \('Hi there'\): a word may not contain spaces",
    ),
    "no words": (_set("words", []), r"'words' is missing or empty"),
    "no text": (_set("text", None), r"'text' \(the transcript\) is missing"),
    "version 2": (
        _set("interface_version", 2),
        r"interface_version 2 is not an OuteTTS 1\.0 profile",
    ),
    "0.3 profile": (
        _set("words", [{"word": "hi", "duration": 0.1, "codes": [1]}]),
        r"an OuteTTS 0\.2/0\.3 profile",
    ),
}
"""A change to USER_SPEAKER → the error it must give (after the file name)."""


@pytest.mark.parametrize("case", sorted(BAD_SPEAKERS))
def test_speaker_errors_name_file_word_and_fault(tmp_path: Path, case: str) -> None:
    change, message = BAD_SPEAKERS[case]
    doc = copy.deepcopy(USER_SPEAKER)
    change(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpeakerError, match=f"^{re.escape(str(path))}: .*{message}"):
        speakers10.load_speaker(path)


def test_speaker_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(SpeakerError, match="broken.json: the speaker profile is not valid JSON"):
        speakers10.load_speaker(path)
    with pytest.raises(SpeakerError, match="missing.json: cannot read the speaker profile"):
        speakers10.load_speaker(tmp_path / "missing.json")


def test_sampling_and_rates() -> None:
    sampling = op.DEFAULT_SAMPLING
    assert (sampling.temperature, sampling.top_k, sampling.top_p, sampling.min_p) == (
        0.4,
        40,
        0.9,
        0.05,
    )
    assert (sampling.repetition_penalty, sampling.penalty_window) == (1.1, 64)
    assert op.FRAMES_PER_SECOND == 75 and op.TOKENS_PER_AUDIO_SECOND >= 2 * op.FRAMES_PER_SECOND
