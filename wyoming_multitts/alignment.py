"""Word timings of a recording whose transcript is known (forced alignment with Whisper).

openai-whisper 20250625's word timestamps (`whisper/timing.py`, `whisper/tokenizer.py`,
https://github.com/openai/whisper/tree/v20250625), which outetts 0.4.4 uses to cut a 1.0
speaker profile into words, for one 30 s window whose text is given instead of transcribed:

1. the tokens `<|startoftranscript|><|xx|><|transcribe|><|notimestamps|> text <|endoftext|>` go
   through the decoder in one teacher-forced pass (`whisper.WhisperModel.cross_qk`);
2. the alignment heads' cross-attention logits over the audio's frames are softmaxed,
   normalised over the tokens, median-filtered and averaged, and DTW finds the monotone path
   of tokens through 20 ms steps (`find_alignment`, timing.py:163-242);
3. the tokens are grouped into words (split on spaces or, in zh ja th lo my yue, at every
   complete character), each word starting when its first token's path row is reached;
4. `add_word_timestamps` (timing.py:279-370) trims words at sentence marks, merges punctuation
   into its word, rounds to 10 ms and shortens a long first word. The segment-level branches
   are left out: with one segment from 0 to the audio's end they never apply (every time lies
   within it).

Given the same audio, text and weights, the words and times equal openai's, float for float.
The text is tokenized with a leading space (as Whisper writes text after `<|notimestamps|>`),
except in the languages written without spaces.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from .audio import resample
from .errors import ModelFileError, SpeakerError
from .formats.safetensors import WEIGHTS
from .whisper import (
    CONFIG,
    GENERATION_CONFIG,
    HOP_LENGTH,
    N_SAMPLES,
    SAMPLE_RATE,
    TOKENIZER,
    WhisperModel,
    WhisperShape,
    WhisperTokenizer,
    alignment_heads,
    log_mel,
)

ALIGNER_FILES: tuple[str, ...] = (CONFIG, GENERATION_CONFIG, WEIGHTS, TOKENIZER)
"""The files of a hub Whisper repo the aligner reads (generation_config.json may lack
`alignment_heads`: openai's are built in for the openai/whisper-* dimensions)."""

MEDIAN_FILTER_WIDTH = 7
QK_SCALE = 1.0
"""`find_alignment`'s medfilt_width and qk_scale defaults (timing.py:170-171)."""
FRAMES_PER_STEP = 2
TOKENS_PER_SECOND = SAMPLE_RATE // (HOP_LENGTH * FRAMES_PER_STEP)
"""Encoder positions: one per 2 mel frames, 50 a second (audio.py:19-22)."""
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "my", "yue"})
"""Split into words at every complete character (tokenizer.py:278)."""
PREPEND_PUNCTUATIONS = "\"'“¿([{-"
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"
"""Marks joined to the following / previous word (transcribe.py:51-52 defaults)."""
SENTENCE_END_MARKS = ".。!！?？"
MAX_MEDIAN_DURATION = 0.7
"""Seconds: the median word duration is capped here; words at sentence marks and the first word
after a pause are cut to twice it (timing.py:302-317, 346-362)."""
PAUSE_MEDIANS = 4
"""A first word ending more than 4 median durations after the last speech follows a pause."""
REPLACEMENT = "\ufffd"


class WordTiming(NamedTuple):
    """One word of the transcript and where it is spoken, in seconds from the recording's start."""

    word: str
    start: float
    end: float


@dataclass
class AlignedWord:
    """A word while its times are adjusted (openai's `WordTiming` without the probability);
    times are numpy float64, as openai's arithmetic and rounding of them need."""

    word: str
    tokens: list[int]
    start: np.float64
    end: np.float64


# ---- DTW over the alignment heads


def median_filter(x: torch.Tensor, width: int) -> torch.Tensor:
    """Median of `width` (odd) neighbours along the last axis, reflect-padded (timing.py:19-55)."""
    if x.shape[-1] <= width // 2:
        return x
    padded = F.pad(x, (width // 2, width // 2, 0, 0), mode="reflect")
    return padded.unfold(-1, width, 1).sort()[0][..., width // 2]


def dtw(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cheapest monotone path through `cost` (tokens, frames) float64, as (token indices,
    frame indices): openai's `dtw_cpu` + `backtrace` (timing.py:58-105) with its float32 sums
    and its tie-breaking (diagonal, then up, else left), computed one anti-diagonal at a time."""
    rows, cols = cost.shape
    total = np.full((rows + 1, cols + 1), np.inf, np.float32)
    trace = np.full((rows + 1, cols + 1), -1, np.int8)
    total[0, 0] = 0
    for diagonal in range(2, rows + cols + 1):  # cells i + j = diagonal depend on the two before
        i = np.arange(max(1, diagonal - cols), min(rows, diagonal - 1) + 1)  # (n,)
        j = diagonal - i
        c0, c1, c2 = total[i - 1, j - 1], total[i - 1, j], total[i, j - 1]  # (n,) float32 each
        step = np.where((c0 < c1) & (c0 < c2), 0, np.where((c1 < c0) & (c1 < c2), 1, 2))
        total[i, j] = cost[i - 1, j - 1] + np.choose(step, [c0, c1, c2])  # float64 → float32
        trace[i, j] = step
    trace[0, :] = 2
    trace[:, 0] = 1
    i, j, path = rows, cols, []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        step = trace[i, j]
        i, j = (i - 1, j - 1) if step == 0 else (i - 1, j) if step == 1 else (i, j - 1)
    text_indices, time_indices = np.array(path[::-1]).T  # (steps,) each
    return text_indices, time_indices


# ---- words (tokenizer.py:277-327, timing.py:245-276)


def split_on_unicode(
    decode: Callable[[list[int]], str], tokens: list[int]
) -> tuple[list[str], list[list[int]]]:
    """Tokens grouped so each group decodes to whole characters (a replacement character in a
    group counts as whole only where the full text has one too)."""
    full = decode(tokens)
    words: list[str] = []
    word_tokens: list[list[int]] = []
    current: list[int] = []
    offset = 0
    for token in tokens:
        current.append(token)
        decoded = decode(current)
        if REPLACEMENT not in decoded or full[offset + decoded.index(REPLACEMENT)] == REPLACEMENT:
            words.append(decoded)
            word_tokens.append(current)
            current = []
            offset += len(decoded)
    return words, word_tokens


def split_on_spaces(
    decode: Callable[[list[int]], str], tokens: list[int], eot: int
) -> tuple[list[str], list[list[int]]]:
    """Character groups joined into words: a new word starts at a special token, a leading
    space, or punctuation (`strip() in string.punctuation`: a substring test, so "" counts)."""
    words: list[str] = []
    word_tokens: list[list[int]] = []
    for subword, subword_tokens in zip(*split_on_unicode(decode, tokens)):
        special = subword_tokens[0] >= eot
        if special or subword.startswith(" ") or subword.strip() in string.punctuation or not words:
            words.append(subword)
            word_tokens.append(subword_tokens)
        else:
            words[-1] += subword
            word_tokens[-1].extend(subword_tokens)
    return words, word_tokens


def merge_punctuations(words: list[AlignedWord]) -> None:
    """Join the prepend marks to the following word and the append marks to the previous one,
    leaving empty words behind (timing.py:245-276)."""
    i, j = len(words) - 2, len(words) - 1
    while i >= 0:
        previous, following = words[i], words[j]
        if previous.word.startswith(" ") and previous.word.strip() in PREPEND_PUNCTUATIONS:
            following.word = previous.word + following.word
            following.tokens = previous.tokens + following.tokens
            previous.word, previous.tokens = "", []
        else:
            j = i
        i -= 1
    i, j = 0, 1
    while j < len(words):
        previous, following = words[i], words[j]
        if not previous.word.endswith(" ") and following.word in APPEND_PUNCTUATIONS:
            previous.word = previous.word + following.word
            previous.tokens = previous.tokens + following.tokens
            following.word, following.tokens = "", []
        else:
            i = j
        j += 1


def adjust_times(words: list[AlignedWord], merge: bool) -> list[WordTiming]:
    """`add_word_timestamps` for one segment starting at 0 (timing.py:294-362): long words at
    sentence marks cut to twice the median duration, punctuation merged (when `merge`), times
    rounded to 10 ms (numpy's rounding, as openai's `round` of a float64), and a long first word
    shortened when it follows a pause."""
    durations = np.array([word.end - word.start for word in words])
    durations = durations[durations.nonzero()]
    median = min(MAX_MEDIAN_DURATION, float(np.median(durations)) if len(durations) else 0.0)
    longest = median * 2
    if len(durations) > 0:
        for i in range(1, len(words)):
            if words[i].end - words[i].start > longest:
                if words[i].word in SENTENCE_END_MARKS:
                    words[i].end = words[i].start + longest
                elif words[i - 1].word in SENTENCE_END_MARKS:
                    words[i].start = words[i].end - longest
    if merge:
        merge_punctuations(words)
    kept = [
        AlignedWord(word.word, word.tokens, round(word.start, 2), round(word.end, 2))
        for word in words
        if word.word
    ]
    last_speech = 0.0  # no earlier segment
    if kept and kept[0].end - last_speech > median * PAUSE_MEDIANS:
        first, second = kept[0], (kept[1] if len(kept) > 1 else None)
        if first.end - first.start > longest or (
            second is not None and second.end - first.start > longest * 2
        ):
            if second is not None and second.end - second.start > longest:
                boundary = max(second.end / 2, second.end - longest)
                first.end = second.start = boundary
            first.start = max(np.float64(0.0), first.end - longest)
    return [WordTiming(word.word.strip(), float(word.start), float(word.end)) for word in kept]


# ---- the aligner


class Aligner:
    """A Whisper model and tokenizer that time the words of given transcripts."""

    def __init__(
        self,
        model: WhisperModel,
        tokenizer: WhisperTokenizer,
        heads: tuple[tuple[int, int], ...],
        folder: Path,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.heads = heads
        self.folder = folder

    @classmethod
    def load(cls, folder: Path, device: torch.device) -> "Aligner":
        """The Whisper in `folder` (the ALIGNER_FILES of a hub repo) on `device`, float32."""
        shape = WhisperShape.read(folder)
        heads = alignment_heads(folder, shape)
        tokenizer = WhisperTokenizer(folder / TOKENIZER)
        if tokenizer.eot >= shape.vocab_size or tokenizer.no_timestamps >= shape.vocab_size:
            raise ModelFileError(f"{folder}: {TOKENIZER} does not belong to its {CONFIG}")
        return cls(WhisperModel.load(folder, shape, device), tokenizer, heads, folder)

    def align(
        self,
        audio: np.ndarray,
        rate: int,
        text: str,
        language: str,
        words: Sequence[str] | None = None,
    ) -> list[WordTiming]:
        """The words of `text` with their times in `audio` (mono float, any `rate`, at most
        30 s); `language` is a code Whisper knows ("en", "zh", …, ISO 639-1 but for "haw",
        "jw" and "yue").

        Without `words`, the words are Whisper's (punctuation joined to its word, surrounding
        spaces stripped), as openai's word timestamps make them. With `words` (the caller's own
        split of the transcript, e.g. OuteTTS 0.3's text front end's, which `text` should be
        the concatenation of, with spaces), each one is timed as one word: its tokens encoded
        on their own (with a leading space unless the language is written without spaces), the
        times adjusted as above but no punctuation moved, and it comes back exactly as given."""
        if not text.strip():
            raise SpeakerError("the transcript is empty: give the words spoken in the recording")
        eot, decode = self.tokenizer.eot, self.tokenizer.decode
        if words is not None:
            if not words or any(not word.strip() for word in words):
                raise SpeakerError(f"every word to time must hold text, not {list(words)}")
            pieces = [(word, self._encode(word.strip(), language)) for word in words]
            pieces.append((decode([eot]), [eot]))
            timings = self._time(audio, rate, language, pieces, merge=False)
            return [timing._replace(word=word) for timing, word in zip(timings, words)]
        tokens = self._encode(text.strip(), language)
        if language in UNSPACED_LANGUAGES:
            split, split_tokens = split_on_unicode(decode, tokens + [eot])
        else:
            split, split_tokens = split_on_spaces(decode, tokens + [eot], eot)
        return self._time(audio, rate, language, list(zip(split, split_tokens)), merge=True)

    def _encode(self, text: str, language: str) -> list[int]:
        """Text tokens of `text` (with a leading space in spaced languages), checked."""
        tokens = self.tokenizer.encode(text if language in UNSPACED_LANGUAGES else " " + text)
        if any(token >= self.tokenizer.eot for token in tokens):
            raise SpeakerError(f"the transcript holds a Whisper control token: {text!r}")
        return tokens

    def _time(
        self,
        audio: np.ndarray,
        rate: int,
        language: str,
        words: list[tuple[str, list[int]]],
        merge: bool,
    ) -> list[WordTiming]:
        """Times of `words` (text, tokens; the last one `<|endoftext|>`) in `audio`."""
        language_token = self.tokenizer.language_token(language)
        if language_token is None:
            raise SpeakerError(
                f"the Whisper model in {self.folder} does not know language {language!r}"
            )
        samples = np.asarray(audio, np.float32)
        if samples.ndim != 1 or rate < 1:
            raise SpeakerError(f"the recording must be mono audio, not of shape {samples.shape}")
        audio16 = resample(samples, rate, SAMPLE_RATE)  # (n,) float32
        if len(audio16) > N_SAMPLES:
            raise SpeakerError(
                f"the recording is {len(samples) / rate:.1f} s long; Whisper aligns at most "
                f"{N_SAMPLES // SAMPLE_RATE} s: cut it"
            )
        mel, num_frames = log_mel(audio16, self.model.shape.num_mel_bins)
        if num_frames < FRAMES_PER_STEP:
            raise SpeakerError("the recording is too short to align (under 20 ms)")
        sot = [self.tokenizer.sot, language_token, self.tokenizer.transcribe]
        text_tokens = [token for _, tokens in words[:-1] for token in tokens]
        tokens = [*sot, self.tokenizer.no_timestamps, *text_tokens, self.tokenizer.eot]
        if len(tokens) > self.model.shape.max_target_positions:
            raise SpeakerError(
                f"the transcript is {len(text_tokens)} tokens long; Whisper takes at most "
                f"{self.model.shape.max_target_positions - len(sot) - 2}: shorten it"
            )

        # cross-attention → DTW path (timing.py:207-216)
        qk = self.model.cross_qk(mel, tokens, self.heads)  # (heads, T, 1500)
        weights = (qk[:, :, : num_frames // FRAMES_PER_STEP] * QK_SCALE).softmax(dim=-1)
        std, mean = torch.std_mean(weights, dim=-2, keepdim=True, correction=0)
        weights = median_filter((weights - mean) / std, MEDIAN_FILTER_WIDTH)
        matrix = weights.mean(dim=0)[len(sot) : -1]  # (1 + text tokens, frames)
        text_indices, time_indices = dtw(-matrix.double().numpy())

        # word starts: where the path first reaches each word's first row (timing.py:226-231)
        lengths = [len(tokens) for _, tokens in words[:-1]]
        boundaries = np.pad(np.cumsum(lengths), (1, 0))  # (words + 1,) incl. the end row
        jumps = np.pad(np.diff(text_indices), (1, 0), constant_values=1).astype(bool)
        jump_times = time_indices[jumps] / TOKENS_PER_SECOND  # (rows,) float64 s
        timed = [
            AlignedWord(text, list(tokens), jump_times[start], jump_times[end])
            for (text, tokens), start, end in zip(words, boundaries[:-1], boundaries[1:])
        ]
        return adjust_times(timed, merge)
