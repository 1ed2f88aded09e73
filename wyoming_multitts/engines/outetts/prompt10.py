"""The language side of OuteTTS 1.0: token ids, the "v3" prompt, replies, guided words.

Pure Python, no llama.cpp, as `prompt.py` is for 0.2/0.3: the engine hands in two functions of
its model, `token_id(text) -> int | None` (the id of a special token, None when the vocabulary
has no single token for it) and `tokenize(text) -> list[int]` (plain text, special tokens not
parsed), and gets token-id lists back. The prompt is the outetts package's "v3" format (outetts
0.4.4 `version/v3/prompt_processor.py` and `tokens.py`, Apache-2.0), the one
`OuteAI/Llama-OuteTTS-1.0-1B-GGUF` and `OuteAI/OuteTTS-1.0-0.6B-GGUF` were trained on:

    <|im_start|>\\n<|text_start|>The cat ... fragile white. Good day!<|text_end|>\\n
    <|audio_start|>\\n
    <|word_start|>The<|features|><|t_0.20|><|energy_10|><|spectral_centroid_15|><|pitch_45|>
        <|code|><|c1_720|><|c2_658|><|c1_720|><|c2_663|>...<|word_end|>\\n
    ...
    <|word_start|>white.<|features|>...<|word_end|>\\n<|word_start|>

(one line per speaker word, wrapped here). The model goes on with the next word's text, its
duration and features, then one `<|c1_N|><|c2_N|>` pair per DAC frame (75 per second), and ends
with `<|word_end|>\\n<|audio_end|>\\n<|im_end|>`. Unlike 0.2/0.3 the text keeps its case and
punctuation and is written as one string; words keep their punctuation (`windowsill,`).

Two layouts put a speaker profile in the prompt:

* `inline`, the official one (`get_completion_prompt`, the default): the speaker's transcript
  and the new text share one text part, then the speaker's word lines follow, and the prompt
  ends with `<|word_start|>` for the model's first new word. Since the new text comes before the
  speaker's audio, only `<|im_start|>\\n<|text_start|>` is the same from request to request.
* `turn`: the speaker profile is a finished earlier turn, exactly as the model was trained on
  one sample (`get_training_prompt`, global features included), and the request is a new turn
  as `get_completion_prompt` writes it without a speaker. Everything up to the new text (about
  1 800 tokens for the built-in profile) is the same for every request, so the engine can keep
  it in the KV cache: a request then costs only its own few dozen tokens of prefill instead of
  the whole profile again. The model writes the new turn's global features itself.
"""

from __future__ import annotations

import html.entities
import re
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ...errors import VocabularyError
from ...sampling import SamplingConfig
from .prompt import Prompt, _PromptIds
from .speakers10 import (
    FEATURE_MAX,
    FEATURE_NAMES,
    MAX_WORD_SECONDS,
    N_CODES,
    Features,
    SpeakerProfile10,
    SpeakerWord10,
)

# ----------------------------------------------------------------------------------------------
# Constants

LAYOUTS = ("inline", "turn")
"""Where the speaker profile goes in the prompt (module docstring)."""

FRAMES_PER_SECOND = 75
"""DAC.speech.v1.0: 24 kHz audio, 320 samples per frame (outetts 0.4.4
`version/v3/audio_processor.py`, `tps = 75`); each frame is one c1 and one c2 token."""

TOKENS_PER_AUDIO_SECOND = 180
"""Most tokens the model writes per second of audio, for the speech budget: 150 code tokens and
about 10 per word (`<|word_start|>`, the word's text, `<|features|>`, its duration, three
features, `<|code|>`, `<|word_end|>`, `\\n`). The built-in profile speaks 2.6 words per second:
176 tokens per second counting one token per word's text."""

MAX_SEQUENCE_TOKENS = 8192
"""Prompt plus reply that 1.0 models handle (outetts 0.4.4 `models/info.py`, `max_seq_length` of
both 1.0 models; `models/config.py`, `GenerationConfig.max_length`)."""

DEFAULT_SAMPLING = SamplingConfig(
    temperature=0.4,
    top_k=40,
    top_p=0.9,
    min_p=0.05,
    repetition_penalty=1.1,
    penalty_window=64,
)
"""outetts 0.4.4 `models/config.py`, `SamplerConfig` (the package's only sampling for 1.0). The
penalty looks only at the last 64 tokens: the package patches transformers' whole-context
penalty to that window as "essential" for 1.0 (`models/hf_model.py`) and gives llama.cpp
`last_n_tokens_size=64` (`models/gguf_model.py`). The seed is the engine's to set."""

CJK_SEPARATOR = "。"
"""Between a Chinese or Japanese speaker transcript and the new text (`_get_separator`)."""
SENTENCE_SEPARATOR = ". "
"""Between any other transcript and the new text, unless the transcript ends a sentence."""
CJK_SENTENCE_ENDS = "。？！?!"
"""Transcript endings that need no `CJK_SEPARATOR` (`merge_speaker_text`)."""
SENTENCE_ENDS = ".?!"
"""Transcript endings that need only a space (`merge_speaker_text`)."""

# The reference's `text_normalizations` after ftfy and NFKC, in its order (outetts 0.4.4
# `version/v3/prompt_processor.py`): pattern, replacement.
_NORMALIZATIONS = (
    (re.compile(r"\.{2,}"), "..."),
    (re.compile(r"[“”„‟«»]"), '"'),
    (re.compile(r"[‘’‛‹›`´]"), "'"),
    (re.compile(r"[–—―−‐]"), "-"),
    (re.compile(r"-{2,}"), "-"),
    (re.compile(r"[\x00-\x1F\x7F-\x9F\u00AD\u200B-\u200D\uFEFF]"), ""),
    (re.compile(r"\s+"), " "),
    (re.compile(r"\s+([,.?!:;])"), r"\1"),
    (re.compile(r"([,.?!:;])(?=[^\s,.?!:;])"), r"\1 "),
    (re.compile(r"(\w)\s+'\s*(\w)"), r"\1'\2"),
    (re.compile(r"(\w)\s+'\s*([,.?!:;\s]|$)"), r"\1'\2"),
    (re.compile(r"(\w)\s*'\s*([tsdmreSNTDMRE])\b", re.IGNORECASE), r"\1'\2"),
    (re.compile(r"([?!])\1+"), r"\1"),
    (re.compile(r"\s+"), " "),
)

# What ftfy 6.3.1 `fix_text` (the reference's first step) changes in well-formed text:
# `unescape_html` (entities ending in ";", until a line has a "<"), `fix_c1_controls` (C1 controls
# read as Windows-1252), `uncurl_quotes`, `remove_terminal_escapes`, `remove_control_chars`;
# `fix_latin_ligatures`, `fix_character_width`, `fix_line_breaks` and its NFC are subsumed by the
# NFKC and whitespace steps that follow. Left out: `fix_encoding` (mojibake repair, a large
# heuristic; Home Assistant hands us proper Unicode) and `fix_surrogates` (Python `str` from
# JSON holds none).
_FTFY_HTML_ENTITY_RE = re.compile(r"&#?[0-9A-Za-z]{1,24};")
_FTFY_C1_CONTROL_RE = re.compile(r"[\x80-\x9f]")
_FTFY_SINGLE_QUOTE_RE = re.compile("[\u02bc\u2018-\u201b]")
_FTFY_DOUBLE_QUOTE_RE = re.compile("[\u201c-\u201f]")
_FTFY_TERMINAL_ESCAPE_RE = re.compile("\033\\[((?:\\d|;)*)([a-zA-Z])")
_FTFY_CONTROL_CHARS = dict.fromkeys(
    [*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, *range(0x206A, 0x2070), 0xFEFF]
    + [*range(0xFFF9, 0xFFFD)]
)
"""ftfy `chardata._build_control_char_mapping`: code points `remove_control_chars` deletes."""


def _ftfy_html_entities() -> dict[str, str]:
    """ftfy `chardata._build_html_entities`: HTML5 entities ending in ";", plus upper-case forms
    of the lower-case ones that are not entities of their own (`&NTILDE;` → "Ñ")."""
    entities = {}
    for name, char in html.entities.html5.items():
        if name.endswith(";"):
            entities["&" + name] = char
            upper = "&" + name.upper()
            if name == name.lower() and html.unescape(upper) == upper:
                entities[upper] = char.upper()
    return entities


_FTFY_HTML_ENTITIES = _ftfy_html_entities()


# ----------------------------------------------------------------------------------------------
# Token ids


@dataclass(frozen=True)
class OuteTokens10:
    """The token ids an OuteTTS 1.0 engine needs, read from the model's vocabulary."""

    im_start: int
    im_end: int
    text_start: int
    text_end: int
    audio_start: int
    audio_end: int
    word_start: int
    word_end: int
    features: int
    """`<|features|>`: after a word's text, before its duration and features."""
    code: int
    """`<|code|>`: before a word's c1/c2 pairs."""
    global_features_start: int
    global_features_end: int
    duration_base: int
    """`<|t_0.00|>`; a duration of n hundredths is duration_base + n."""
    c1_base: int
    """`<|c1_0|>`; code c of the first codebook is c1_base + c."""
    c2_base: int
    """`<|c2_0|>`; code c of the second codebook is c2_base + c."""
    energy_base: int
    """`<|energy_0|>`; energy v is energy_base + v."""
    spectral_centroid_base: int
    pitch_base: int

    @property
    def end_tokens(self) -> frozenset[int]:
        """Tokens that end a reply: `<|audio_end|>`, then `<|im_end|>`."""
        return frozenset({self.audio_end, self.im_end})

    def c1_code(self, token: int) -> int | None:
        """The first-codebook code of a token, None if it is none (or `<|c1_1024|>`)."""
        code = token - self.c1_base
        return code if 0 <= code < N_CODES else None

    def c2_code(self, token: int) -> int | None:
        """The second-codebook code of a token, None if it is none (or `<|c2_1024|>`)."""
        code = token - self.c2_base
        return code if 0 <= code < N_CODES else None

    def duration_token(self, seconds: float) -> int:
        """`<|t_{seconds:.2f}|>`, formatted as the reference does."""
        return self.duration_base + int(f"{seconds:.2f}".replace(".", ""))

    def feature_tokens(self, features: Features) -> tuple[int, int, int]:
        """`<|energy_N|><|spectral_centroid_N|><|pitch_N|>`."""
        return (
            self.energy_base + features.energy,
            self.spectral_centroid_base + features.spectral_centroid,
            self.pitch_base + features.pitch,
        )


def is_1_0_vocabulary(token_id: Callable[[str], int | None]) -> bool:
    """Whether a vocabulary is OuteTTS 1.0's: it has the DAC code and word tokens (0.2 and 0.3
    have neither; `prompt.detect_version` tells those two apart)."""
    return all(token_id(text) is not None for text in ("<|c1_0|>", "<|c2_0|>", "<|word_start|>"))


def read_tokens(token_id: Callable[[str], int | None]) -> OuteTokens10:
    """Read every id a 1.0 engine needs (the caller names the file in errors).

    Checks that the codes, durations and feature values are contiguous, since the prompt and
    reply arithmetic rely on it.
    """

    def need(text: str) -> int:
        token = token_id(text)
        if token is None:
            raise VocabularyError(
                f"the vocabulary has no single token {text!r}; is this an OuteTTS 1.0 model "
                "(OuteAI/Llama-OuteTTS-1.0-1B-GGUF or OuteAI/OuteTTS-1.0-0.6B-GGUF)?"
            )
        return token

    def base(first: str, *checks: tuple[str, int]) -> int:
        """The id of `first`, checking that each (token, offset) sits at that offset from it."""
        token = need(first)
        for text, offset in checks:
            if need(text) != token + offset:
                raise VocabularyError(
                    f"{text} is {need(text)}, expected {token + offset} ({first} + {offset}): "
                    "the tokens are not contiguous; not an OuteTTS 1.0 vocabulary"
                )
        return token

    last_code = N_CODES - 1
    max_hundredths = round(MAX_WORD_SECONDS * 100)
    feature_bases = [
        base(f"<|{name}_0|>", (f"<|{name}_1|>", 1), (f"<|{name}_{FEATURE_MAX}|>", FEATURE_MAX))
        for name in FEATURE_NAMES
    ]
    return OuteTokens10(
        im_start=need("<|im_start|>"),
        im_end=need("<|im_end|>"),
        text_start=need("<|text_start|>"),
        text_end=need("<|text_end|>"),
        audio_start=need("<|audio_start|>"),
        audio_end=need("<|audio_end|>"),
        word_start=need("<|word_start|>"),
        word_end=need("<|word_end|>"),
        features=need("<|features|>"),
        code=need("<|code|>"),
        global_features_start=need("<|global_features_start|>"),
        global_features_end=need("<|global_features_end|>"),
        duration_base=base(
            "<|t_0.00|>",
            ("<|t_0.01|>", 1),
            ("<|t_1.00|>", 100),
            (f"<|t_{MAX_WORD_SECONDS:.2f}|>", max_hundredths),
        ),
        c1_base=base("<|c1_0|>", (f"<|c1_{last_code}|>", last_code)),
        c2_base=base("<|c2_0|>", (f"<|c2_{last_code}|>", last_code)),
        energy_base=feature_bases[0],
        spectral_centroid_base=feature_bases[1],
        pitch_base=feature_bases[2],
    )


# ----------------------------------------------------------------------------------------------
# Text


def normalize_text(text: str) -> str:
    """The reference's `text_normalizations`: ftfy's clean-up (see `_FTFY_*` for what is left
    out), NFKC, then its replacements: `…` and runs of dots to `...`, curly quotes straight,
    dashes to `-`, no control characters, single spaces, spacing around `,.?!:;`, apostrophes
    joined (`can 't` → `can't`), `!!` → `!`, and every `"` removed."""
    text = _ftfy_clean(text)
    text = unicodedata.normalize("NFKC", text)
    text = text.replace("…", "...")
    for pattern, replacement in _NORMALIZATIONS:
        text = pattern.sub(replacement, text)
    return text.replace('"', "").strip()


def _ftfy_clean(text: str) -> str:
    """ftfy 6.3.1 `fix_text` on well-formed text: line by line, each fix until nothing changes.

    HTML entities are decoded only before the first line with a `<` (`unescape_html="auto"`
    turns itself off for that line and every later one).
    """
    lines = []
    unescape = True
    for line in re.findall(r"[^\n]*\n|[^\n]+", text):
        unescape = unescape and "<" not in line
        lines.append(_ftfy_clean_line(line, unescape))
    return "".join(lines)


def _ftfy_clean_line(line: str, unescape: bool) -> str:
    """One line through ftfy's fixes, repeated until it no longer changes (`fix_and_explain`)."""
    while True:
        before = line
        if unescape:
            line = _FTFY_HTML_ENTITY_RE.sub(_unescape_entity, line)
        line = _FTFY_C1_CONTROL_RE.sub(_c1_as_windows_1252, line)
        line = _FTFY_SINGLE_QUOTE_RE.sub("'", _FTFY_DOUBLE_QUOTE_RE.sub('"', line))
        line = _FTFY_TERMINAL_ESCAPE_RE.sub("", line)
        line = line.translate(_FTFY_CONTROL_CHARS)
        if line == before:
            return line


def _unescape_entity(match: re.Match[str]) -> str:
    """ftfy `fixes._unescape_fixup`: a known entity or a complete numeric reference, else as is."""
    entity = match.group(0)
    if entity in _FTFY_HTML_ENTITIES:
        return _FTFY_HTML_ENTITIES[entity]
    if entity.startswith("&#"):
        unescaped = html.unescape(entity)
        return entity if ";" in unescaped else unescaped
    return entity


def _c1_as_windows_1252(match: re.Match[str]) -> str:
    """ftfy `fixes.fix_c1_controls`: a C1 control read as the Windows-1252 byte it likely was
    (the five bytes Windows-1252 leaves undefined stay as they are)."""
    char = match.group(0)
    return char.encode("latin-1").decode("cp1252", errors="ignore") or char


def merge_speaker_text(text: str, speaker_text: str) -> tuple[str, str]:
    """The reference's `merge_speaker_text`: `(transcript + separator + text, mark)`, where
    `mark` is what the separator adds to the transcript's last word (`.`, `。` or nothing).

    Chinese or Japanese transcripts get `。` unless they end in `。？！?!`; others get `. `
    unless they end in `.?!`, which then get a space.
    """
    speaker_text = speaker_text.strip()
    cjk = any(
        "\u3040" <= char <= "\u309f" or "\u30a0" <= char <= "\u30ff" or "\u4e00" <= char <= "\u9fff"
        for char in speaker_text
    )
    separator, ends = (
        (CJK_SEPARATOR, CJK_SENTENCE_ENDS) if cjk else (SENTENCE_SEPARATOR, SENTENCE_ENDS)
    )
    joint = ""
    if speaker_text:
        if speaker_text[-1] not in ends:
            joint = separator
        elif not cjk:
            joint = " "
    return speaker_text + joint + text.strip(), joint.strip()


# ----------------------------------------------------------------------------------------------
# Prompts


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown prompt layout {layout!r}; use one of {', '.join(LAYOUTS)}")


def _request_text(text: str) -> str:
    """The normalised request text; an error when nothing is left to say."""
    normalized = normalize_text(text)
    if not normalized:
        raise ValueError(f"an OuteTTS prompt needs some text, {text!r} has none")
    return normalized


def _add_turn_start(out: _PromptIds, tokens: OuteTokens10) -> None:
    """`<|im_start|>\\n<|text_start|>`: the start of every prompt turn."""
    out.special(tokens.im_start)
    out.text("\n")
    out.special(tokens.text_start)


def _add_text_end(out: _PromptIds, tokens: OuteTokens10) -> None:
    """`<|text_end|>\\n<|audio_start|>\\n`: the end of a text part."""
    out.special(tokens.text_end)
    out.text("\n")
    out.special(tokens.audio_start)
    out.text("\n")


def _add_word_lines(
    out: _PromptIds, tokens: OuteTokens10, words: Sequence[SpeakerWord10], mark: str = ""
) -> None:
    """The speaker's word lines (`create_codes`) joined by `\\n`, with no ending; `mark` is
    appended to the last word (`merge_speaker_text`)."""
    for index, word in enumerate(words):
        if index:
            out.text("\n")
        out.special(tokens.word_start)
        out.text(word.word + mark if index == len(words) - 1 else word.word)
        out.special(
            tokens.features,
            tokens.duration_token(word.duration),
            *tokens.feature_tokens(word.features),
            tokens.code,
        )
        frames = ((tokens.c1_base + c1, tokens.c2_base + c2) for c1, c2 in zip(word.c1, word.c2))
        out.special(*(token for frame in frames for token in frame), tokens.word_end)


def speaker_prefix(
    tokens: OuteTokens10,
    layout: str,
    speaker: SpeakerProfile10 | None,
    tokenize: Callable[[str], list[int]],
) -> list[int]:
    """The part of every prompt for this speaker and layout that does not depend on the request.

    `<|im_start|>\\n<|text_start|>`, after the whole speaker turn (`get_training_prompt`) for
    `turn` with a speaker.
    """
    _check_layout(layout)
    out = _PromptIds(tokenize)
    if speaker is not None and layout == "turn":
        _add_turn_start(out, tokens)
        out.text(normalize_text(speaker.text))
        _add_text_end(out, tokens)
        out.special(
            tokens.global_features_start,
            *tokens.feature_tokens(speaker.global_features),
            tokens.global_features_end,
        )
        out.text("\n")
        _add_word_lines(out, tokens, speaker.words)
        out.text("\n")
        out.special(tokens.audio_end)
        out.text("\n")
        out.special(tokens.im_end)
        out.text("\n")
    _add_turn_start(out, tokens)
    return out.ids()


def request_suffix(
    tokens: OuteTokens10,
    layout: str,
    speaker: SpeakerProfile10 | None,
    text: str,
    tokenize: Callable[[str], list[int]],
) -> list[int]:
    """The request's part of the prompt, after `speaker_prefix`: the (merged) text, the start of
    the audio part and, `inline` with a speaker, the speaker's word lines and `<|word_start|>`."""
    _check_layout(layout)
    normalized = _request_text(text)
    out = _PromptIds(tokenize)
    if speaker is None or layout == "turn":
        out.text(normalized)
        _add_text_end(out, tokens)
        return out.ids()
    merged, mark = merge_speaker_text(normalized, speaker.text)
    out.text(merged)
    _add_text_end(out, tokens)
    _add_word_lines(out, tokens, speaker.words, mark)
    out.text("\n")
    out.special(tokens.word_start)
    return out.ids()


def build_prompt(
    tokens: OuteTokens10,
    layout: str,
    speaker: SpeakerProfile10 | None,
    text: str,
    tokenize: Callable[[str], list[int]],
) -> Prompt:
    """The whole prompt for `text` as (speaker prefix, request suffix)."""
    return Prompt(
        speaker_prefix(tokens, layout, speaker, tokenize),
        request_suffix(tokens, layout, speaker, text, tokenize),
    )


# ----------------------------------------------------------------------------------------------
# Guided words


class WordGuide:
    """Keeps the model on the request's words (outetts 0.4.4 `version/interface.py`,
    `guided_words_generation`, the experimental `GenerationType.GUIDED_WORDS`), token by token.

    The words are the normalised text split at spaces, with their punctuation, as profiles write
    them. Whenever the model starts a word (`<|word_start|>`, or the prompt's last token) it gets
    the next word and `<|features|>` written for it; when it ends early (`<|audio_end|>` or
    `<|im_end|>`) the next word is started for it instead; when it starts a word after the last
    one, `<|audio_end|>` replaces it and `exhausted` is set. Unlike the reference, the request's
    text part stays as it is (the reference also writes the first word and `<|features|>` into
    it) and words are not re-split with MeCab.
    """

    def __init__(
        self, text: str, tokens: OuteTokens10, tokenize: Callable[[str], list[int]]
    ) -> None:
        self._words = deque(tokenize(word) for word in normalize_text(text).split())
        self._tokens = tokens
        self.exhausted = False
        """True once the model started a word after the last one (the reply ends there)."""

    @property
    def remaining(self) -> int:
        """Words not yet started."""
        return len(self._words)

    def apply(self, previous_token: int, sampled_token: int) -> list[int]:
        """The tokens to use instead of `sampled_token`, which followed `previous_token` (for the
        first token of a reply, the last token of the prompt)."""
        tokens = self._tokens
        if previous_token == tokens.word_start:  # the prompt ends in <|word_start|>
            return self._next_word([])
        if sampled_token == tokens.word_start or (
            sampled_token in tokens.end_tokens and self._words
        ):
            return self._next_word([tokens.word_start])
        return [sampled_token]

    def _next_word(self, start: list[int]) -> list[int]:
        if not self._words:
            self.exhausted = True
            return [self._tokens.audio_end]
        return [*start, *self._words.popleft(), self._tokens.features]


# ----------------------------------------------------------------------------------------------
# Replies


class Frame(NamedTuple):
    """One DAC frame: a code of each codebook (0..1023)."""

    c1: int
    c2: int


def extract_codes(tokens: OuteTokens10, reply: Iterable[int]) -> tuple[list[int], list[int]]:
    """The reference's `extract_audio_from_tokens`: every c1 code and every c2 code of the reply
    in order, both cut to the shorter length. `<|c1_1024|>`/`<|c2_1024|>`, which the reference
    counts as code 1024 (outside the DAC codebook), are skipped."""
    ids = list(reply)
    c1 = [code for code in map(tokens.c1_code, ids) if code is not None]
    c2 = [code for code in map(tokens.c2_code, ids) if code is not None]
    length = min(len(c1), len(c2))
    return c1[:length], c2[:length]


class ReplyReader:
    """Turns generated tokens into DAC frames as they come, for streaming.

    The n-th frame pairs the n-th c1 code with the n-th c2 code, as `extract_codes` does, so
    the frames read token by token are exactly the reference's. Everything else (words,
    durations, features) yields nothing; `<|audio_end|>` or `<|im_end|>` ends the reply, and
    codes after it are not read.
    """

    def __init__(self, tokens: OuteTokens10) -> None:
        self._tokens = tokens
        self._c1: deque[int] = deque()  # c1 codes still waiting for their c2
        self._c2: deque[int] = deque()  # c2 codes still waiting for their c1
        self.n_frames = 0
        """Frames read so far."""
        self.finished = False
        """True after an end token: later tokens yield nothing."""

    def feed(self, token: int) -> Frame | None:
        """The frame one generated token completes, if any."""
        if self.finished:
            return None
        if token in self._tokens.end_tokens:
            self.finished = True
            return None
        c1, c2 = self._tokens.c1_code(token), self._tokens.c2_code(token)
        if c1 is not None:
            self._c1.append(c1)
        elif c2 is not None:
            self._c2.append(c2)
        if not (self._c1 and self._c2):
            return None
        self.n_frames += 1
        return Frame(self._c1.popleft(), self._c2.popleft())

    def frames(self, token: int) -> list[Frame]:
        """`feed` as a list, the engine's `Reader` (as 0.2/0.3's `ReplyParser.frames`)."""
        frame = self.feed(token)
        return [] if frame is None else [frame]
