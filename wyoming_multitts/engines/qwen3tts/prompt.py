"""The talker's prompt for one text piece, built exactly as qwen-tts 0.1.1 builds it
(`core/models/modeling_qwen3_tts.py`, `Qwen3TTSForConditionalGeneration.generate` and
`generate_icl_prompt`; docs/engines.md, "Qwen3-TTS: prefill layout"): pure functions of token
ids, codec ids and the tables, so they run without llama.cpp (the engine tokenizes the text).

Every prefill row is the sum of a text-side row (a text token folded through
`text_projection`, or tts_pad/bos/eos) and a codec-side row (a codec id's embedding, or a clone's
x-vector). In order: an optional instruction (text only), the 3 role tokens (text only), the
codec tag rows (think/language tags, the speaker, codec_pad; tts_pad … tts_bos on the text
side), then the text. Non-streaming mode (the CustomVoice default) puts all of the text in the
prefill (text + codec_pad, then tts_eos + codec_pad, then tts_pad + codec_bos); streaming-text
mode puts only the first token there (+ codec_bos) and adds the rest, then tts_eos, to the
inputs of the first generation steps (`Qwen3Prompt.trailing`). An in-context clone has a text
stream (transcript, text, tts_eos) and a codec stream (codec_bos, then the reference's frames)
instead: one after the other, or summed position by position in streaming mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import EngineError
from .config import CUSTOM_VOICE_KIND, Qwen3TTSRuntimeConfig
from .tables import Qwen3Tables

LANGUAGE_NAMES = {
    "zh": "chinese",
    "en": "english",
    "ja": "japanese",
    "ko": "korean",
    "de": "german",
    "fr": "french",
    "ru": "russian",
    "pt": "portuguese",
    "es": "spanish",
    "it": "italian",
}
"""Voice language code → key of config.json's codec_language_id (the model's 10 languages)."""
AUTO_LANGUAGE = "auto"
"""No language tag: the `nothink` prefix, the model picks (qwen-tts `language="auto"`)."""
DIALECT_LANGUAGES = ("chinese", AUTO_LANGUAGE)
"""Languages that dialect speakers (eric, dylan) replace by their dialect (qwen-tts generate)."""

ROLE_TEXT = "<|im_start|>assistant\n"
"""The 3 role tokens before the text (qwen-tts `Qwen3TTSModel._build_assistant_text`)."""
ROLE_TOKENS = 3
INSTRUCT_TEXT = "<|im_start|>user\n{instruct}<|im_end|>\n"
"""An instruction's rows, first in the prefill (qwen-tts `_build_instruct_text`)."""
NO_INSTRUCT_SIZES = ("0b6",)
"""Model sizes whose instruct qwen-tts drops (the 0.6B CustomVoice ignores it)."""
PROMPT_ROWS_MAX = 1024
"""Talker context reserved for the prefill (role, codec tags, text: ~1 row per text token)."""


@dataclass(frozen=True)
class Qwen3Prompt:
    """The talker's input for one text piece."""

    rows: np.ndarray
    """Prefill rows (P, hidden) float32."""
    trailing: np.ndarray
    """(T, hidden) float32 added to the input of generation step k < T (streaming-text mode:
    the rest of the text, then tts_eos); later steps, and every step in non-streaming mode,
    add tts_pad."""
    text_tokens: int
    """Tokens of the spoken text (bounds the frames)."""
    voice_rows: int
    """The first rows, before the text: instruction, role and codec tags (with a clone's
    x-vector). They are the same in every request of a voice and instruction, so the talker's
    KV cache keeps them from one request to the next."""


@dataclass(frozen=True)
class CloneReference:
    """What a cloned voice's reference recording becomes (computed once per voice)."""

    x_vector: np.ndarray
    """The speaker encoder's output (H,) float32: the prefill's speaker slot."""
    codes: np.ndarray | None
    """ICL: the reference's codes (T_ref, G) int64 from the speech-tokenizer encoder; else None."""
    text_ids: list[int]
    """ICL: the transcript's tokens; else empty."""


@dataclass(frozen=True)
class PromptIds:
    """The token and codec ids of one prompt (what the engine tokenizes)."""

    instruct: list[int]
    """`INSTRUCT_TEXT`'s tokens; empty without an instruction (see `instruct_text`)."""
    role: list[int]
    """`ROLE_TEXT`'s 3 tokens."""
    codec_prefix: list[int]
    """`codec_prefix`: the tag rows' codec ids, codec_pad and codec_bos last."""
    text: list[int]
    """The text piece's tokens."""


def instruct_text(instruct: str, config: Qwen3TTSRuntimeConfig) -> str | None:
    """The instruction's wrapped text, or None when there is none or the model ignores it."""
    if not instruct or config.tts_model_size in NO_INSTRUCT_SIZES:
        return None
    return INSTRUCT_TEXT.format(instruct=instruct)


def speaker_key(config: Qwen3TTSRuntimeConfig, name: str | None, model: str) -> str | None:
    """The config's key for a voice's speaker (lower-case), checked against `model`."""
    if config.tts_model_type != CUSTOM_VOICE_KIND:
        if name is not None:
            raise EngineError(
                f"model {model} ({config.tts_model_type}) has no named "
                f"speakers; remove 'speaker: {name}' from the voice"
            )
        return None
    known = ", ".join(config.speakers)
    if name is None:
        raise EngineError(f"model {model} needs a speaker (speakers: {known})")
    if name.lower() not in config.speakers:
        raise EngineError(f"model {model} has no speaker {name!r} (speakers: {known})")
    return name.lower()


def codec_prefix(
    config: Qwen3TTSRuntimeConfig, language: str, speaker: str | None, override: str = ""
) -> list[int]:
    """The codec ids of the prefill's tag rows: think/language tags, the speaker, then
    codec_pad and codec_bos. `language` is the voice's (`en`, `zh-CN`, …); `override` is the
    `codec_language` option."""
    name = override.lower()
    if name and name != AUTO_LANGUAGE and name not in config.languages:
        raise EngineError(
            f"codec_language {override!r} is not a language of this model (languages: "
            f"{AUTO_LANGUAGE}, {', '.join(config.languages)})"
        )
    if not name:
        code = language.lower().replace("_", "-").split("-")[0]
        name = LANGUAGE_NAMES.get(code, AUTO_LANGUAGE)
        if name not in config.languages:
            name = AUTO_LANGUAGE
    if speaker is not None and name in DIALECT_LANGUAGES and speaker in config.dialects:
        name = config.dialects[speaker]
    if name == AUTO_LANGUAGE:
        tags = [config.codec_nothink_id, config.codec_think_bos_id, config.codec_think_eos_id]
    else:
        tags = [
            config.codec_think_id,
            config.codec_think_bos_id,
            config.languages[name],
            config.codec_think_eos_id,
        ]
    speaker_ids = [] if speaker is None else [config.speakers[speaker]]
    return tags + speaker_ids + [config.codec_pad_id, config.codec_bos_id]


def text_rows(tables: Qwen3Tables, ids: list[int]) -> np.ndarray:
    """Text-side input rows (n, H) float32 of token ids (the pre-folded text_projection)."""
    return tables.text[np.asarray(ids, np.int64)].astype(np.float32)


def frame_rows(tables: Qwen3Tables, codes: np.ndarray) -> np.ndarray:
    """Talker input rows (n, H) float32 of whole frames (n, G): the sum of each frame's
    codebook embeddings (code 0 from the talker's table, the others from the predictor's)."""
    rows = tables.codec[codes[:, 0]]  # (n, H)
    for i in range(1, codes.shape[1]):
        rows = rows + tables.predictor[i - 1, codes[:, i]].astype(np.float32)
    return rows


def build_prompt(
    config: Qwen3TTSRuntimeConfig,
    tables: Qwen3Tables,
    ids: PromptIds,
    reference: CloneReference | None,
    streaming: bool,
) -> Qwen3Prompt:
    """The talker's prefill (and trailing text) of `ids`; `reference`: a Base voice's clone
    reference; `streaming`: the streaming-text mode."""
    pieces = []
    if ids.instruct:
        pieces.append(text_rows(tables, ids.instruct))
    pieces.append(text_rows(tables, ids.role))  # (3, H)
    pieces.append(_tag_rows(tables, ids.codec_prefix, reference))
    text, trailing = _text_part(config, tables, ids.text, reference, streaming)
    voice_rows = sum(len(piece) for piece in pieces)
    rows = np.concatenate(pieces + [text])  # (P, H) float32
    if len(rows) > PROMPT_ROWS_MAX:
        clone = (
            ""
            if reference is None or reference.codes is None
            else f"; the reference recording takes {len(reference.codes)} of them: use a "
            "shorter one"
        )
        raise EngineError(
            f"a text piece of {len(ids.text)} tokens is too long for the prompt "
            f"({len(rows)} of {PROMPT_ROWS_MAX} rows{clone})"
        )
    return Qwen3Prompt(rows, trailing, len(ids.text), voice_rows)


def _tag_rows(
    tables: Qwen3Tables, prefix: list[int], reference: CloneReference | None
) -> np.ndarray:
    """The tag rows: tts_pad … tts_pad, tts_bos on the text side, the codec prefix but
    codec_bos on the codec side; a clone's x-vector takes the speaker slot, before codec_pad."""
    codec_side = tables.codec[prefix[:-1]]  # (len(prefix) - 1, H): tags, [speaker], codec_pad
    if reference is not None:
        codec_side = np.insert(codec_side, len(codec_side) - 1, reference.x_vector, axis=0)
    text_side = np.stack([tables.tts_pad] * (len(codec_side) - 1) + [tables.tts_bos])
    return text_side + codec_side


def _text_part(
    config: Qwen3TTSRuntimeConfig,
    tables: Qwen3Tables,
    body: list[int],
    reference: CloneReference | None,
    streaming: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The prefill rows that carry the text (n, H), and the trailing text (T, H)."""
    codec = tables.codec
    if reference is not None and reference.codes is not None:
        return _icl_rows(config, tables, reference.text_ids + body, reference.codes, streaming)
    if streaming:
        # the first text token with codec_bos; the rest arrives with the generated frames
        rows = text_rows(tables, body[:1]) + codec[config.codec_bos_id]
        return rows, np.concatenate([text_rows(tables, body[1:]), tables.tts_eos[None]])
    rows = np.concatenate(
        [
            text_rows(tables, body) + codec[config.codec_pad_id],  # (n, H)
            (tables.tts_eos + codec[config.codec_pad_id])[None],
            (tables.tts_pad + codec[config.codec_bos_id])[None],
        ]
    )
    return rows, np.zeros((0, config.talker_hidden), np.float32)


def _icl_rows(
    config: Qwen3TTSRuntimeConfig,
    tables: Qwen3Tables,
    text_ids: list[int],
    codes: np.ndarray,
    streaming: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The in-context clone's rows and trailing text (qwen-tts `generate_icl_prompt`): a text
    stream (`text_ids`: transcript then new text; tts_eos) and a codec stream (codec_bos, then
    one row per reference frame of `codes` (T_ref, G)), one after the other in non-streaming
    mode, summed position by position in streaming mode (the longer text's rest trails)."""
    codec = tables.codec
    text = np.concatenate([text_rows(tables, text_ids), tables.tts_eos[None]])  # (n, H)
    audio = np.concatenate(
        [codec[config.codec_bos_id][None], frame_rows(tables, codes)]
    )  # (1 + T_ref, H)
    no_trailing = np.zeros((0, config.talker_hidden), np.float32)
    if not streaming:
        rows = [text + codec[config.codec_pad_id], audio + tables.tts_pad]
        return np.concatenate(rows), no_trailing
    if len(text) > len(audio):
        return text[: len(audio)] + audio, text[len(audio) :]
    padding = np.repeat(tables.tts_pad[None], len(audio) - len(text), axis=0)
    return np.concatenate([text, padding]) + audio, no_trailing  # (1 + T_ref, H)
