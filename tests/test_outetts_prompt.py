"""Tests for the OuteTTS language side (`engines.outetts.prompt`) on tiny GGUF vocabularies.

Token ids come from the real llama.cpp tokenizer over the tiny models' vocabularies (written by
`modelgen.outetts`), and prompts are compared, detokenized, character for character with the
formats of the outetts reference package (docs/engines.md, "OuteTTS: prompt formats"), written
out by hand below for a two-word speaker.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import llama_cpp
import pytest

from tools.modelgen import outetts as modelgen_outetts
from wyoming_multitts.catalog import parse_catalog
from wyoming_multitts.devices import CPU
from wyoming_multitts.engines.outetts import prompt as op
from wyoming_multitts.engines.outetts import speakers, speakers10
from wyoming_multitts.engines.outetts.prompt import (
    CODE,
    END,
    WORD_END,
    GuideTokens,
    OuteTokens,
    ReplyEvent,
    ReplyParser,
)
from wyoming_multitts.errors import LlamaError, SpeakerError, VocabularyError
from wyoming_multitts.llm.model import LlamaModel
from wyoming_multitts.text import SpokenWord, spoken_words

N_CTX = 512
"""Context of the test models: nothing is evaluated, only tokenized."""

SMALL_SPEAKER = {
    "text": "Hi, there.",
    "words": [
        {"word": "hi", "duration": 0.08, "codes": [1, 2]},
        {"word": "there", "duration": 0.1, "codes": [3, 4095]},
    ],
}
"""A two-word speaker profile; durations as the JSON files write them (0.1, not 0.10)."""

REQUEST = "Good day!"

# The prompts for SMALL_SPEAKER and REQUEST, written out from the reference prompt processors
# (outetts 0.2.3 v1 `get_completion_prompt` / `get_training_prompt`, 0.3.3 v2 likewise).
EXPECTED = {
    ("0.2", "inline"): (
        "<|im_start|>\n<|text_start|>hi<|text_sep|>there<|text_sep|>",
        "good<|text_sep|>day<|text_end|>\n<|audio_start|>\n"
        "hi<|t_0.08|><|code_start|><|1|><|2|><|code_end|>\n"
        "there<|t_0.10|><|code_start|><|3|><|4095|><|code_end|>",
    ),
    ("0.2", "turn"): (
        "<|im_start|>\n<|text_start|>hi<|text_sep|>there<|text_end|>\n<|audio_start|>\n"
        "hi<|t_0.08|><|code_start|><|1|><|2|><|code_end|>\n"
        "there<|t_0.10|><|code_start|><|3|><|4095|><|code_end|>\n<|audio_end|>\n<|im_end|>\n"
        "<|im_start|>\n<|text_start|>",
        "good<|text_sep|>day<|text_end|>\n<|audio_start|>\n",
    ),
    ("0.3", "inline"): (
        "<|im_start|>\n<|text_start|>hi<|comma|><|space|>there<|period|><|space|>",
        "good<|space|>day<|exclamation_mark|><|text_end|>\n<|audio_start|>\n"
        "hi<|comma|><|t_0.08|><|1|><|2|><|space|>\n"
        "there<|period|><|t_0.10|><|3|><|4095|><|space|>\n",
    ),
    ("0.3", "turn"): (
        "<|im_start|>\n<|text_start|>hi<|comma|><|space|>there<|period|><|text_end|>\n"
        "<|audio_start|>\n"
        "hi<|comma|><|t_0.08|><|1|><|2|><|space|>\n"
        "there<|period|><|t_0.10|><|3|><|4095|>\n<|audio_end|>\n<|im_end|>\n"
        "<|im_start|>\n<|text_start|>",
        "good<|space|>day<|exclamation_mark|><|text_end|>\n<|audio_start|>\n",
    ),
}


class Vocab:
    """A tiny OuteTTS model's vocabulary: llama.cpp tokenizer, ids, detokenizer."""

    def __init__(self, path: Path) -> None:
        self.llm = LlamaModel(path, CPU, n_ctx=N_CTX, threads=1)
        self._detok = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
        self.tokens = op.read_tokens(self.token_id)

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
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("outetts-tiny")
    entries = modelgen_outetts.write_tiny(directory)
    (directory / "entries.json").write_text(json.dumps(entries))
    return directory


@pytest.fixture(scope="module")
def vocabs(tiny_dir: Path) -> Iterator[dict[str, Vocab]]:
    models = {
        version: Vocab(tiny_dir / f"{name}.gguf")
        for version, name in modelgen_outetts.TINY_MODELS.items()
    }
    yield models
    for vocab in models.values():
        vocab.llm.close()


@pytest.fixture
def small_speaker(tmp_path: Path) -> speakers.SpeakerProfile:
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL_SPEAKER))
    return speakers.load_speaker(path)


def _words(version: str, text: str = REQUEST) -> list[SpokenWord]:
    return spoken_words(text, "en", keep_punctuation=version == "0.3")


# ----------------------------------------------------------------------------------------------
# Versions and token ids


def test_version_detection(vocabs: dict[str, Vocab]) -> None:
    for version, vocab in vocabs.items():
        assert op.detect_version(vocab.token_id) == version
        assert vocab.tokens.version == version


def test_ids_of_0_2_are_the_real_ones(vocabs: dict[str, Vocab]) -> None:
    tokens, llm = vocabs["0.2"].tokens, vocabs["0.2"].llm
    assert (tokens.im_start, tokens.im_end, tokens.end_of_text) == (151644, 151645, 151643)
    assert (tokens.audio_start, tokens.audio_end) == (151667, 151668)
    assert (tokens.code_start, tokens.word_end, tokens.word_sep) == (151669, 151670, 151671)
    assert tokens.code_base == 151672 and tokens.duration_base == 155772
    assert not tokens.punctuation
    # llama.cpp's tokenizer: one token each, at the arithmetic's id
    assert llm.tokenize("<|t_0.08|>", special=True) == [155780] == [tokens.duration_token(0.08)]
    assert llm.tokenize("<|257|><|code_end|>", special=True) == [151929, 151670]
    assert llm.tokenize("\n", special=False) == [tokens.newline]


def test_ids_of_0_3_come_from_the_vocabulary(vocabs: dict[str, Vocab]) -> None:
    tokens, llm = vocabs["0.3"].tokens, vocabs["0.3"].llm
    assert tokens.code_base != vocabs["0.2"].tokens.code_base  # nothing hard-coded
    assert tokens.word_sep == tokens.word_end == llm.special_token("<|space|>")
    assert tokens.code_start is None
    assert set(tokens.punctuation) == set(op.PUNCTUATION_TOKENS)
    assert tokens.punctuation["…"] == tokens.punctuation["..."]
    assert llm.tokenize("<|t_1.96|>", special=True) == [tokens.duration_token(1.96)]
    assert llm.tokenize("<|4095|>", special=True) == [tokens.code_token(4095)]
    assert tokens.code_of(tokens.code_token(4095)) == 4095
    assert tokens.code_of(tokens.code_token(4096)) is None
    assert tokens.code_of(tokens.code_base - 1) is None


def test_read_tokens_names_what_is_missing(vocabs: dict[str, Vocab]) -> None:
    real = vocabs["0.2"].token_id
    with pytest.raises(
        VocabularyError, match=r"^the vocabulary has no single token '<\|code_start\|>'"
    ):
        op.read_tokens(lambda text: None if text == "<|code_start|>" else real(text))


def test_read_tokens_checks_contiguous_codes(vocabs: dict[str, Vocab]) -> None:
    real = vocabs["0.2"].token_id

    def shifted(text: str) -> int | None:
        token = real(text)
        return token + 1 if text == "<|4095|>" and token is not None else token

    with pytest.raises(VocabularyError, match="not contiguous"):
        op.read_tokens(shifted)


# ----------------------------------------------------------------------------------------------
# Prompts


@pytest.mark.parametrize(("version", "layout"), sorted(EXPECTED))
def test_prompt_matches_reference_format(
    vocabs: dict[str, Vocab], small_speaker: speakers.SpeakerProfile, version: str, layout: str
) -> None:
    vocab = vocabs[version]
    prompt = op.build_prompt(vocab.tokens, layout, small_speaker, _words(version), vocab.tokenize)
    prefix, suffix = EXPECTED[version, layout]
    assert vocab.text(prompt.prefix) == prefix
    assert vocab.text(prompt.suffix) == suffix
    # the ids are exactly llama.cpp's tokenization of the whole prompt string
    assert prompt.ids == prompt.prefix + prompt.suffix
    assert prompt.ids == vocab.llm.tokenize(prefix + suffix, special=True)


@pytest.mark.parametrize("version", op.VERSIONS)
def test_prompt_without_speaker(vocabs: dict[str, Vocab], version: str) -> None:
    vocab = vocabs[version]
    sep = "<|space|>" if version == "0.3" else "<|text_sep|>"
    day = "day<|exclamation_mark|>" if version == "0.3" else "day"
    for layout in op.LAYOUTS:
        prompt = op.build_prompt(vocab.tokens, layout, None, _words(version), vocab.tokenize)
        assert vocab.text(prompt.prefix) == "<|im_start|>\n<|text_start|>"
        assert vocab.text(prompt.suffix) == f"good{sep}{day}<|text_end|>\n<|audio_start|>\n"


@pytest.mark.parametrize("version", op.VERSIONS)
def test_prefix_is_the_same_for_every_request(vocabs: dict[str, Vocab], version: str) -> None:
    vocab = vocabs[version]
    speaker = speakers.load_speaker(speakers.speaker_path("en_male_1", version))
    first, second = _words(version, "One."), _words(version, "Two more words, please!")
    for layout in op.LAYOUTS:
        a = op.build_prompt(vocab.tokens, layout, speaker, first, vocab.tokenize)
        b = op.build_prompt(vocab.tokens, layout, speaker, second, vocab.tokenize)
        assert (
            a.prefix == b.prefix == op.speaker_prefix(vocab.tokens, layout, speaker, vocab.tokenize)
        )
        assert a.suffix == op.request_suffix(vocab.tokens, layout, speaker, first, vocab.tokenize)
        assert a.ids == vocab.llm.tokenize(vocab.text(a.ids), special=True)
        # every speaker code is in the prefix of `turn`, in the suffix of `inline`
        cached = a.prefix if layout == "turn" else a.suffix
        assert sum(vocab.tokens.code_of(t) is not None for t in cached) == speaker.n_codes
    turn = op.build_prompt(vocab.tokens, "turn", speaker, first, vocab.tokenize)
    assert len(turn.prefix) > 600 and len(turn.suffix) < 10


def test_prompt_rejects_bad_arguments(vocabs: dict[str, Vocab]) -> None:
    vocab = vocabs["0.3"]
    with pytest.raises(ValueError, match="layout"):
        op.build_prompt(vocab.tokens, "sideways", None, _words("0.3"), vocab.tokenize)
    with pytest.raises(ValueError, match="at least one word"):
        op.build_prompt(vocab.tokens, "turn", None, [], vocab.tokenize)


# ----------------------------------------------------------------------------------------------
# Guide tokens


@pytest.mark.parametrize("version", op.VERSIONS)
def test_guide_tokens_are_first_tokens_of_words(vocabs: dict[str, Vocab], version: str) -> None:
    vocab = vocabs[version]
    words = _words(version, "Good day, the end.")
    guide = op.guide_tokens(words, vocab.tokenize)
    assert guide == [vocab.tokenize(word.word)[0] for word in words]
    assert vocab.tokens.newline not in guide  # llama.cpp's leading "\n" is not needed


def test_guide_tokens_steer_a_0_2_reply(vocabs: dict[str, Vocab]) -> None:
    tokens = vocabs["0.2"].tokens
    nl, code_end, stop = tokens.newline, tokens.word_end, tokens.audio_end
    code, duration = tokens.code_token(7), tokens.duration_token(0.1)
    first, second, other = 300, 301, 999  # plain (non-control) tokens
    guide = GuideTokens([first, second], tokens)
    # the 0.2 inline prompt ends with <|code_end|>: any text token becomes "\n"
    assert guide.apply(code_end, other, False) == nl
    assert guide.apply(nl, duration, True) == duration  # control tokens pass, nothing used
    assert guide.apply(nl, other, False) == first
    assert guide.apply(first, other, False) == other  # inside a word: untouched
    assert guide.apply(other, code, True) == code
    assert guide.apply(code_end, nl, False) == nl
    assert guide.apply(nl, other, False) == second
    assert guide.remaining == 0 and not guide.exhausted
    assert guide.apply(nl, stop, True) == stop  # the model ends by itself
    assert guide.apply(nl, other, False) == stop  # or would say more: stop it
    assert guide.exhausted


def test_guide_tokens_steer_a_0_3_reply(vocabs: dict[str, Vocab]) -> None:
    tokens = vocabs["0.3"].tokens
    guide = GuideTokens([400], tokens)
    period = tokens.punctuation["."]
    # the 0.3 prompts end with "\n": the first text token is the first word
    assert guide.apply(tokens.newline, 5, False) == 400
    assert guide.apply(400, period, True) == period
    space = tokens.word_end
    assert guide.apply(tokens.code_token(1), space, True) == space
    assert guide.apply(space, 6, False) == tokens.newline
    assert guide.apply(tokens.newline, 7, False) == tokens.audio_end
    assert guide.exhausted


# ----------------------------------------------------------------------------------------------
# Replies


def _id(token: int | None) -> int:
    assert token is not None
    return token


def _events(tokens: OuteTokens, reply: list[int]) -> list[ReplyEvent]:
    parser = ReplyParser(tokens)
    return [event for token in reply for event in parser.feed(token)]


def test_reply_parser_0_2(vocabs: dict[str, Vocab]) -> None:
    t = vocabs["0.2"].tokens
    word, dur = 300, t.duration_token(0.05)
    code_start, code_end = _id(t.code_start), t.word_end
    reply = [t.newline, word, dur, code_start, t.code_token(1), t.code_token(4095), code_end]
    reply += [t.newline, word, dur, code_start, t.code_token(2), t.code_token(4099), code_end]
    reply += [t.newline, t.audio_end, t.newline, t.im_end]
    assert _events(t, reply) == [
        ReplyEvent(CODE, 1),
        ReplyEvent(CODE, 4095),
        ReplyEvent(WORD_END),
        ReplyEvent(CODE, 2),  # <|4099|> is no code
        ReplyEvent(WORD_END),
        ReplyEvent(END),
    ]


def test_reply_parser_0_3(vocabs: dict[str, Vocab]) -> None:
    t = vocabs["0.3"].tokens
    word, dur, comma = 300, t.duration_token(0.05), t.punctuation[","]
    reply = [word, comma, dur, t.code_token(5), t.code_token(6), t.word_end, t.newline]
    reply += [word, dur, t.code_token(7)]
    reply += [t.newline, t.audio_end, t.code_token(8)]  # the last word has no <|space|>
    assert _events(t, reply) == [
        ReplyEvent(CODE, 5),
        ReplyEvent(CODE, 6),
        ReplyEvent(WORD_END),
        ReplyEvent(CODE, 7),
        ReplyEvent(WORD_END),
        ReplyEvent(END),
    ]


@pytest.mark.parametrize("end", ["im_end", "end_of_text"])
def test_reply_parser_end_closes_the_word(vocabs: dict[str, Vocab], end: str) -> None:
    t = vocabs["0.3"].tokens
    parser = ReplyParser(t)
    assert parser.feed(t.code_token(3)) == [ReplyEvent(CODE, 3)]
    assert parser.feed(_id(getattr(t, end))) == [ReplyEvent(WORD_END), ReplyEvent(END)]
    assert parser.finished and parser.n_codes == 1
    assert parser.feed(t.code_token(4)) == []


# ----------------------------------------------------------------------------------------------
# Speaker profiles


@pytest.mark.parametrize(("version", "count"), [("0.2", 16), ("0.3", 18)])
def test_every_builtin_speaker_loads(version: str, count: int) -> None:
    names = speakers.builtin_speakers(version)
    assert len(names) == count and "en_male_1" in names
    for name in names:
        speaker = speakers.load_speaker(speakers.speaker_path(name, version))
        assert speaker.name == name and speaker.words and speaker.n_codes > 100
        assert len(speakers.speaker_words(speaker, version)) == len(speaker.words)


def test_0_3_speaker_punctuation_comes_from_the_text() -> None:
    speaker = speakers.load_speaker(speakers.speaker_path("en_male_1", "0.3"))
    words = speakers.speaker_words(speaker, "0.3")
    assert [word.word for word in words] == [word.word for word in speaker.words]
    assert str(words[12]) == "drops," and str(words[-1]) == "increases."
    # romanised profiles whose text does not give the same words: no marks
    japanese = speakers.load_speaker(speakers.speaker_path("jp_female_1", "0.3"))
    assert all(not word.marks for word in speakers.speaker_words(japanese, "0.3"))


def test_speaker_path(tmp_path: Path) -> None:
    assert (
        speakers.speaker_path("en_male_1", "0.2")
        == speakers.SPEAKERS_DIR / "v0.2" / "en_male_1.json"
    )
    own = tmp_path / "mine.json"
    own.write_text(json.dumps(SMALL_SPEAKER))
    assert speakers.speaker_path("mine.json", "0.3", base_dir=tmp_path) == own
    assert speakers.speaker_path(str(own), "0.3") == own
    with pytest.raises(SpeakerError, match=r"'de_male_1'.*en_male_1.*no file"):
        speakers.speaker_path("de_male_1", "0.2")  # a 0.3 speaker only


def _profile(tmp_path: Path, change: Callable[[dict], object]) -> Path:
    doc = json.loads(json.dumps(SMALL_SPEAKER))
    change(doc)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("words"), "'words' is missing or empty"),
        (lambda d: d.update(words=[]), "'words' is missing or empty"),
        (lambda d: d.pop("text"), "'text'"),
        (
            lambda d: d["words"][1]["codes"].append(4096),
            r"words\[1\] \('there'\): code 4096 is out",
        ),
        (lambda d: d["words"][0]["codes"].append(-1), r"words\[0\] \('hi'\): code -1 is out"),
        (lambda d: d["words"][0]["codes"].append(1.5), "code 1.5 is not an integer"),
        (lambda d: d["words"][0].update(codes=[]), "'codes' is missing or empty"),
        (lambda d: d["words"][0].update(duration=-0.1), "bad duration -0.1"),
        (lambda d: d["words"][0].update(duration=11), "bad duration 11"),
        (lambda d: d["words"][0].update(duration="0.1"), "'duration' .* not a number"),
        (lambda d: d["words"][0].update(word=""), r"words\[0\]: 'word' is missing"),
        (lambda d: d["words"][0].update(word="two words"), "may not contain spaces"),
    ],
)
def test_load_speaker_errors(
    tmp_path: Path, change: Callable[[dict], object], message: str
) -> None:

    path = _profile(tmp_path, change)
    with pytest.raises(SpeakerError, match=message) as err:
        speakers.load_speaker(path)
    assert str(path) in str(err.value)


def test_load_speaker_unreadable(tmp_path: Path) -> None:
    with pytest.raises(SpeakerError, match="cannot read"):
        speakers.load_speaker(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SpeakerError, match=f"{bad}: .*not valid JSON"):
        speakers.load_speaker(bad)


# ----------------------------------------------------------------------------------------------
# Sampling defaults and the tiny models' catalog


def test_default_sampling() -> None:
    for version in op.VERSIONS:
        config = op.DEFAULT_SAMPLING[version]
        assert (config.temperature, config.top_k, config.top_p, config.min_p) == (
            0.1,
            40,
            0.95,
            0.05,
        )
        assert (config.repetition_penalty, config.penalty_window) == (1.1, 64)


def test_tiny_catalog_entries(tiny_dir: Path) -> None:
    models, voices = json.loads((tiny_dir / "entries.json").read_text())
    catalog = parse_catalog({"models": models, "voices": voices}, tiny_dir / "voices.yaml")
    assert {model.engine for model in catalog.models.values()} == {"outetts"}
    versions = {name: name.split("-")[1] for name in models}  # outetts-0.2-tiny → 0.2
    assert sorted(versions.values()) == ["0.2", "0.3", "1.0"]
    for name, model in catalog.models.items():
        assert all((tiny_dir / str(ref.path)).exists() for ref in model.files.values())
        assert model.options["max_tokens"] == (240 if versions[name] == "1.0" else 120)
    paths = {
        name: (
            speakers10.speaker_path(str(voice.speaker), base_dir=tiny_dir)
            if versions[voice.model] == "1.0"
            else speakers.speaker_path(str(voice.speaker), versions[voice.model], tiny_dir)
        )
        for name, voice in catalog.voices.items()
        if voice.reference is None
    }
    own = catalog.voices[modelgen_outetts.TINY_REFERENCE_VOICE]  # a profile made on first use
    assert own.reference is not None and (tiny_dir / str(own.reference.audio.path)).is_file()
    for name, path in paths.items():
        reader = speakers10 if versions[catalog.voices[name].model] == "1.0" else speakers
        assert reader.load_speaker(path).words
    # one voice names its speaker by a file next to the catalog, the others by built-in name
    assert paths[modelgen_outetts.TINY_CUSTOM_VOICE].parent == tiny_dir
    assert (
        sum(path.parent.parent == speakers.SPEAKERS_DIR for path in paths.values())
        == len(paths) - 1
    )
