"""The language side of OuteTTS 0.2 / 0.3: token ids, prompts, guide tokens, replies.

Pure Python, no llama.cpp: the engine (`engine.py`) hands in two functions of its
model, `token_id(text) -> int | None` (the id of a special token, None when the vocabulary has no
single token for it) and `tokenize(text) -> list[int]` (plain text, special tokens not parsed),
and gets token-id lists back. Words come from `text.spoken_words`.

The two prompt dialects (docs/engines.md, "OuteTTS: prompt formats"; outetts 0.2.3
`version/v1/prompt_processor.py` and 0.3.3 `version/v2/prompt_processor.py`, Apache-2.0):

    0.2  <|im_start|>\\n<|text_start|>the<|text_sep|>cat<|text_end|>\\n<|audio_start|>\\n
         the<|t_0.08|><|code_start|><|257|><|740|>...<|code_end|>\\n
         cat<|t_0.36|><|code_start|>...<|code_end|>
    0.3  <|im_start|>\\n<|text_start|>the<|space|>cat<|period|><|text_end|>\\n<|audio_start|>\\n
         the<|t_0.08|><|257|><|740|>...<|space|>\\n
         cat<|period|><|t_0.36|>...<|space|>\\n

A speaker profile (a few seconds of a real voice, already encoded) is written in the same form
and the model continues in that voice. Two layouts put it in the prompt:

* `inline`, the official one: the speaker's words and the new words share one text part, then the
  speaker's audio lines follow, and the model continues with the new words' audio. Only
  `<|im_start|>\\n<|text_start|>{speaker words}{separator}` stays the same from request to
  request, since the new text comes before the speaker's audio.
* `turn`: the speaker profile is a finished earlier turn, exactly as the models were trained on
  single samples (`get_training_prompt`: `...\\n<|audio_end|>\\n<|im_end|>\\n`), and the request is
  a new turn of its own:
  `<|im_start|>\\n<|text_start|>{new words}<|text_end|>\\n<|audio_start|>\\n`.
  Everything up to the new words (1000+ tokens) is the same for every request, so the engine can
  keep it in the KV cache; a request then costs only its own few dozen tokens of prefill.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ...errors import VocabularyError
from ...sampling import SamplingConfig
from ...text import SpokenWord
from .speakers import N_CODES, SpeakerProfile, speaker_words

# ----------------------------------------------------------------------------------------------
# Constants

VERSIONS = ("0.2", "0.3")
"""Prompt dialects: OuteTTS 0.2 (the package's "v1" interface) and 0.3 ("v2")."""

LAYOUTS = ("inline", "turn")
"""Where the speaker profile goes in the prompt (module docstring)."""

CODES_PER_SECOND = 75
"""WavTokenizer-Large-75: one code per 320 samples at 24 kHz."""

PUNCTUATION_TOKENS = {
    ".": "<|period|>",
    "!": "<|exclamation_mark|>",
    "?": "<|question_mark|>",
    ",": "<|comma|>",
    '"': "<|double_quote|>",
    "„": "<|low_double_quote|>",
    "¡": "<|inverted_exclamation|>",
    "¿": "<|inverted_question|>",
    "…": "<|ellipsis|>",
    "...": "<|ellipsis|>",
    "。": "<|cjk_period|>",
    "！": "<|cjk_exclamation|>",
    "？": "<|cjk_question|>",
    "，": "<|cjk_comma|>",
    "؟": "<|arabic_question|>",
}
"""0.3: punctuation mark → its token (outetts 0.3.3 `version/v2/tokens.py`). `spoken_words` only
returns the first five (the reference transliterates the others to them before mapping)."""

DEFAULT_SAMPLING = {
    version: SamplingConfig(
        temperature=0.1,
        top_k=40,
        top_p=0.95,
        min_p=0.05,
        repetition_penalty=1.1,
        penalty_window=64,
    )
    for version in VERSIONS
}
"""Sampling of outetts ≤0.3 with its GGUF backend: temperature 0.1 and repetition penalty 1.1
set by the package, top-k/top-p/min-p and the 64-token penalty window from llama-cpp-python's
`Llama.generate` defaults (docs/engines.md, "OuteTTS: sampling defaults"). The seed is the
engine's to set."""


# ----------------------------------------------------------------------------------------------
# Token ids


@dataclass(frozen=True)
class OuteTokens:
    """The token ids an OuteTTS engine needs, read from the model's vocabulary."""

    version: str
    """The prompt dialect, "0.2" or "0.3"."""
    newline: int
    """`\\n`, a plain text token: it starts every audio line."""
    im_start: int
    im_end: int
    text_start: int
    text_end: int
    audio_start: int
    audio_end: int
    code_base: int
    """`<|0|>`; code c is code_base + c."""
    duration_base: int
    """`<|t_0.00|>`; a duration of n hundredths is duration_base + n."""
    word_sep: int
    """Between the words of the text part: `<|text_sep|>` (0.2) or `<|space|>` (0.3)."""
    word_end: int
    """Ends a word's audio line, before its `\\n`: `<|code_end|>` (0.2) or `<|space|>` (0.3)."""
    code_start: int | None = None
    """0.2 only: `<|code_start|>`, opens a word's codes."""
    punctuation: Mapping[str, int] = field(default_factory=dict)
    """0.3 only: punctuation mark (a key of `PUNCTUATION_TOKENS`) → token id."""
    end_of_text: int | None = None
    """`<|endoftext|>`, if the vocabulary has it (another end of a reply)."""

    @property
    def end_tokens(self) -> frozenset[int]:
        """Tokens that end a reply."""
        ends = {self.audio_end, self.im_end}
        if self.end_of_text is not None:
            ends.add(self.end_of_text)
        return frozenset(ends)

    def code_token(self, code: int) -> int:
        """The token of audio code `code` (0..4095)."""
        return self.code_base + code

    def code_of(self, token: int) -> int | None:
        """The audio code of a token, None if it is no valid code (0..4095)."""
        code = token - self.code_base
        return code if 0 <= code < N_CODES else None

    def duration_token(self, seconds: float) -> int:
        """`<|t_{seconds:.2f}|>`, formatted as the reference does."""
        return self.duration_base + int(f"{seconds:.2f}".replace(".", ""))


def detect_version(token_id: Callable[[str], int | None]) -> str:
    """The dialect: "0.3" if `<|space|>` is a single token, else "0.2" (as llama.cpp decides)."""
    return "0.3" if token_id("<|space|>") is not None else "0.2"


def read_tokens(token_id: Callable[[str], int | None]) -> OuteTokens:
    """Detect the version and read every id the engine needs (the caller names the file in
    errors).

    Checks that the 4096 code tokens and the duration tokens are contiguous, since the prompt and
    reply arithmetic rely on it.
    """
    version = detect_version(token_id)

    def need(text: str) -> int:
        token = token_id(text)
        if token is None:
            raise VocabularyError(
                f"the vocabulary has no single token {text!r}; is this an OuteTTS "
                f"{version} model (OuteAI/OuteTTS-{version}-500M-GGUF)?"
            )
        return token

    def check(text: str, expected: int, what: str) -> None:
        if need(text) != expected:
            raise VocabularyError(
                f"{text} is {need(text)}, expected {expected}: the {what} tokens are "
                "not contiguous; not an OuteTTS 0.2/0.3 vocabulary"
            )

    code_base = need("<|0|>")
    check(f"<|{N_CODES - 1}|>", code_base + N_CODES - 1, "audio code")
    duration_base = need("<|t_0.00|>")
    check("<|t_0.01|>", duration_base + 1, "duration")
    check("<|t_1.00|>", duration_base + 100, "duration")
    space = need("<|space|>") if version == "0.3" else None
    return OuteTokens(
        version=version,
        newline=need("\n"),
        im_start=need("<|im_start|>"),
        im_end=need("<|im_end|>"),
        text_start=need("<|text_start|>"),
        text_end=need("<|text_end|>"),
        audio_start=need("<|audio_start|>"),
        audio_end=need("<|audio_end|>"),
        code_base=code_base,
        duration_base=duration_base,
        word_sep=space if space is not None else need("<|text_sep|>"),
        word_end=space if space is not None else need("<|code_end|>"),
        code_start=None if space is not None else need("<|code_start|>"),
        punctuation=(
            {mark: need(text) for mark, text in PUNCTUATION_TOKENS.items()}
            if space is not None
            else {}
        ),
        end_of_text=token_id("<|endoftext|>"),
    )


# ----------------------------------------------------------------------------------------------
# Prompts


class Prompt(NamedTuple):
    """A prompt in two parts: `prefix + suffix` is the whole prompt.

    `prefix` depends only on the speaker and layout (the engine may keep it in the KV cache);
    `suffix` holds the request.
    """

    prefix: list[int]
    suffix: list[int]

    @property
    def ids(self) -> list[int]:
        """The whole prompt."""
        return self.prefix + self.suffix


class _PromptIds:
    """Token ids of text interleaved with special tokens, tokenized as llama.cpp tokenizes the
    whole string with special-token parsing: each run of text between special tokens at once."""

    def __init__(self, tokenize: Callable[[str], list[int]]) -> None:
        self._tokenize = tokenize
        self._ids: list[int] = []
        self._text: list[str] = []

    def text(self, text: str) -> None:
        self._text.append(text)

    def special(self, *tokens: int) -> None:
        self._flush()
        self._ids.extend(tokens)

    def ids(self) -> list[int]:
        self._flush()
        return self._ids

    def _flush(self) -> None:
        if self._text:
            self._ids.extend(self._tokenize("".join(self._text)))
            self._text.clear()


def _check_layout(tokens: OuteTokens, layout: str) -> None:
    if tokens.version not in VERSIONS:
        raise ValueError(f"unknown OuteTTS version {tokens.version!r}; use one of {VERSIONS}")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown prompt layout {layout!r}; use one of {', '.join(LAYOUTS)}")


def _add_word(out: _PromptIds, tokens: OuteTokens, word: SpokenWord) -> None:
    """A word of the text part or of an audio line (0.3: with its punctuation tokens)."""
    out.text(word.word)
    if tokens.version == "0.3":
        out.special(
            *(tokens.punctuation[mark] for mark in word.marks if mark in tokens.punctuation)
        )


def _add_text_words(out: _PromptIds, tokens: OuteTokens, words: Sequence[SpokenWord]) -> None:
    """Words of the text part, joined by the word separator."""
    for index, word in enumerate(words):
        if index:
            out.special(tokens.word_sep)
        _add_word(out, tokens, word)


def _add_audio_lines(out: _PromptIds, tokens: OuteTokens, speaker: SpeakerProfile) -> None:
    """The speaker's audio lines, joined as the reference joins them, with no ending.

    0.2: `word<|t_d|><|code_start|><|c|>...<|code_end|>` joined by `\\n`;
    0.3: `word<|t_d|><|c|>...` joined by `<|space|>\\n`.
    """
    words = speaker_words(speaker, tokens.version)
    for index, (word, audio) in enumerate(zip(words, speaker.words)):
        if index:
            if tokens.code_start is None:  # 0.3: <|space|> ends the line
                out.special(tokens.word_end)
            out.text("\n")
        _add_word(out, tokens, word)
        out.special(tokens.duration_token(audio.duration))
        codes = (tokens.code_base + code for code in audio.codes)
        if tokens.code_start is None:
            out.special(*codes)
        else:  # 0.2: <|code_start|> codes <|code_end|>
            out.special(tokens.code_start, *codes, tokens.word_end)


def _add_audio_start(out: _PromptIds, tokens: OuteTokens) -> None:
    """`<|text_end|>\\n<|audio_start|>\\n`: the end of a text part."""
    out.special(tokens.text_end)
    out.text("\n")
    out.special(tokens.audio_start)
    out.text("\n")


def _add_turn_start(out: _PromptIds, tokens: OuteTokens) -> None:
    """`<|im_start|>\\n<|text_start|>`: the start of every prompt turn."""
    out.special(tokens.im_start)
    out.text("\n")
    out.special(tokens.text_start)


def speaker_prefix(
    tokens: OuteTokens,
    layout: str,
    speaker: SpeakerProfile | None,
    tokenize: Callable[[str], list[int]],
) -> list[int]:
    """The part of every prompt for this speaker and layout that does not depend on the request.

    No speaker: `<|im_start|>\\n<|text_start|>`. `inline`: that, the speaker's words and a word
    separator. `turn`: the whole speaker turn, then `<|im_start|>\\n<|text_start|>`.
    """
    _check_layout(tokens, layout)
    out = _PromptIds(tokenize)
    _add_turn_start(out, tokens)
    if speaker is None:
        return out.ids()
    _add_text_words(out, tokens, speaker_words(speaker, tokens.version))
    if layout == "inline":
        out.special(tokens.word_sep)
        return out.ids()
    # turn: the speaker's sample as the models were trained on it, then a new turn
    _add_audio_start(out, tokens)
    _add_audio_lines(out, tokens, speaker)
    out.text("\n")
    out.special(tokens.audio_end)
    out.text("\n")
    out.special(tokens.im_end)
    out.text("\n")
    _add_turn_start(out, tokens)
    return out.ids()


def request_suffix(
    tokens: OuteTokens,
    layout: str,
    speaker: SpeakerProfile | None,
    words: Sequence[SpokenWord],
    tokenize: Callable[[str], list[int]],
) -> list[int]:
    """The request's part of the prompt, after `speaker_prefix`: the new words, the start of the
    audio part and (`inline` with a speaker) the speaker's audio lines."""
    _check_layout(tokens, layout)
    if not words:
        raise ValueError("an OuteTTS prompt needs at least one word")
    out = _PromptIds(tokenize)
    _add_text_words(out, tokens, words)
    _add_audio_start(out, tokens)
    if speaker is not None and layout == "inline":
        _add_audio_lines(out, tokens, speaker)
        if tokens.version == "0.3":  # 0.3 ends the speaker's lines with `<|space|>\n`
            out.special(tokens.word_end)
            out.text("\n")
    return out.ids()


def build_prompt(
    tokens: OuteTokens,
    layout: str,
    speaker: SpeakerProfile | None,
    words: Sequence[SpokenWord],
    tokenize: Callable[[str], list[int]],
) -> Prompt:
    """The whole prompt for `words` as (speaker prefix, request suffix)."""
    return Prompt(
        speaker_prefix(tokens, layout, speaker, tokenize),
        request_suffix(tokens, layout, speaker, words, tokenize),
    )


# ----------------------------------------------------------------------------------------------
# Guide tokens


def guide_tokens(words: Sequence[SpokenWord], tokenize: Callable[[str], list[int]]) -> list[int]:
    """The first token of each new word, in order (llama.cpp `prepare_guide_tokens`).

    llama.cpp starts the list with `\\n`, which only fits a prompt that ends right before the
    model's first `\\n` (0.2 `inline` with a speaker, ending in `<|code_end|>`); with the other
    prompts (ending in `\\n`) that forced `\\n` would add an empty line. `GuideTokens` forces the
    `\\n` after every word's end token instead, so the list holds the words only, for every layout.
    """
    return [ids[0] for ids in (tokenize(word.word) for word in words) if ids]


class GuideTokens:
    """Keeps the model on the words of the request, token by token (llama.cpp's guide tokens).

    `apply(previous, sampled, is_control)`: a sampled non-control token right after a word's end
    token (0.2 `<|code_end|>`, 0.3 `<|space|>`) becomes `\\n`; one right after `\\n` (the start
    of an audio line) becomes the next word's first token. When a line starts but every word has
    been said, it returns `<|audio_end|>` and sets `exhausted`: the model was about to say more
    than asked. Control tokens (codes, durations, punctuation, the ends) pass unchanged.
    """

    def __init__(self, guide: Sequence[int], tokens: OuteTokens) -> None:
        self._guide = list(guide)
        self._next = 0
        self._newline = tokens.newline
        self._word_end = tokens.word_end
        self._stop = tokens.audio_end
        self.exhausted = False
        """True once a line started after the last word (the returned token ends the reply)."""

    @property
    def remaining(self) -> int:
        """Words not yet started."""
        return len(self._guide) - self._next

    def apply(self, previous_token: int, sampled_token: int, is_control: bool) -> int:
        """The token to use instead of `sampled_token`, which followed `previous_token`.

        For the first token of a reply, `previous_token` is the last token of the prompt.
        """
        if is_control:
            return sampled_token
        if previous_token == self._word_end:
            return self._newline
        if previous_token != self._newline:
            return sampled_token
        if self._next == len(self._guide):
            self.exhausted = True
            return self._stop
        self._next += 1
        return self._guide[self._next - 1]


# ----------------------------------------------------------------------------------------------
# Replies


CODE = "code"
"""A `ReplyEvent` carrying one audio code."""
WORD_END = "word_end"
"""A `ReplyEvent`: the codes since the last one form one word."""
END = "end"
"""A `ReplyEvent`: the reply is over (nothing after it counts)."""


class ReplyEvent(NamedTuple):
    """What one generated token meant."""

    kind: str
    """`CODE`, `WORD_END` or `END`."""
    code: int = -1
    """The audio code (0..4095) of a `CODE` event."""


class ReplyParser:
    """Turns the generated tokens into audio codes, word ends and the end, as they come.

    Codes are `<|0|>`..`<|4095|>` (`<|4096|>`..`<|4099|>` are ignored). A word ends at its end
    token (0.2 `<|code_end|>`, 0.3 `<|space|>`) or at the `\\n` after its codes (0.3 writes no
    `<|space|>` after the last word). `<|audio_end|>`, `<|im_end|>` and `<|endoftext|>` end the
    reply, ending the current word first. Words, durations and other tokens yield nothing.
    """

    def __init__(self, tokens: OuteTokens) -> None:
        self._tokens = tokens
        self._word_ends = frozenset({tokens.word_end, tokens.newline})
        self._ends = tokens.end_tokens
        self._pending = 0  # codes of the current word
        self.n_codes = 0
        """Codes yielded so far."""
        self.finished = False
        """True after the end: later tokens yield nothing."""

    def feed(self, token: int) -> list[ReplyEvent]:
        """The events of one generated token, in order (mostly none or one)."""
        if self.finished:
            return []
        code = self._tokens.code_of(token)
        if code is not None:
            self._pending += 1
            self.n_codes += 1
            return [ReplyEvent(CODE, code)]
        events = []
        if self._pending and (token in self._word_ends or token in self._ends):
            self._pending = 0
            events.append(ReplyEvent(WORD_END))
        if token in self._ends:
            self.finished = True
            events.append(ReplyEvent(END))
        return events

    def frames(self, token: int) -> list[tuple[int]]:
        """The audio frames (one code each) one token completes: the engine's `Reader`."""
        return [(event.code,) for event in self.feed(token) if event.kind == CODE]
