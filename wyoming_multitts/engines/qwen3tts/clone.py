"""Voice cloning with Qwen3-TTS Base models: a voice's reference recording (the catalog's
`reference:`) → a `CloneReference`, computed once per voice (qwen-tts 0.1.1
`Qwen3TTSModel.create_voice_clone_prompt`, `generate_voice_clone`).

The speaker encoder (`speaker_encoder.py`) turns the recording into an x-vector that takes the
prefill's speaker slot. With a transcript the clone is also "in context" (ICL): the
speech-tokenizer encoder (`codecs/qwen3_12hz_encoder.py`, loaded on first use: x-vector-only
voices never need it) turns the recording into codes, and the prefill holds the transcript's
text plus the new text alongside those frames (`prompt.py`). Without a transcript, or with
`x_vector_only`, only the x-vector is used.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ...audio import read_wav, resample
from ...codecs.qwen3_12hz_encoder import (
    ENCODER_SAMPLE_RATE,
    Qwen3SpeechEncoder,
    load_speech_encoder,
)
from ...errors import EngineError
from ..base import ReferenceAudio, VoiceSettings
from .config import Qwen3Options
from .prompt import CloneReference
from .speaker_encoder import MEL_SAMPLE_RATE, SpeakerEncoder

_LOGGER = logging.getLogger(__name__)

REFERENCE_MIN_SECONDS = 1.0
"""Shorter reference recordings are refused (3 s or more is what cloning wants)."""
REFERENCE_MAX_SECONDS = 60.0
"""Longer ones too: ICL puts 12.5 prefill rows per second of reference into the talker's
PROMPT_ROWS_MAX, and the x-vector gains nothing from more."""

ReferenceKey = tuple[object, ...]
"""What a reference was computed from: path, mtime, size, and for ICL transcript and silence."""


def refuse_reference(voice: VoiceSettings, model: str, kind: str) -> None:
    """A model that cannot clone (`kind` is not Base): an EngineError if `voice` asks to."""
    if voice.reference is not None:
        raise EngineError(
            f"model {model} ({kind}) cannot clone a voice: remove 'reference:' from "
            "the voice, or use a Base model (e.g. Qwen/Qwen3-TTS-12Hz-0.6B-Base)"
        )


class VoiceCloner:
    """A Base model's voice cloning: the speaker encoder, the speech-tokenizer encoder (loaded
    on first ICL use) and every voice's computed reference."""

    def __init__(
        self,
        model: str,
        speaker_encoder: SpeakerEncoder,
        speech_tokenizer_dir: Path,
        torch_device: torch.device,
        tokenize: Callable[[str], list[int]],
    ) -> None:
        self._model = model
        self._speaker_encoder = speaker_encoder
        self._speech_tokenizer_dir = speech_tokenizer_dir
        self._torch_device = torch_device
        self._tokenize = tokenize
        """Text → token ids without special tokens (the transcript's, for ICL)."""
        self._speech_encoder: Qwen3SpeechEncoder | None = None
        self._references: dict[str, tuple[ReferenceKey, CloneReference]] = {}
        """voice name → (what the reference was computed from, the result)."""

    def reference(self, voice: VoiceSettings, options: Qwen3Options) -> CloneReference:
        """The voice's x-vector (and, for ICL, reference codes and transcript tokens), computed
        once per voice and recomputed only when the recording, transcript or mode change."""
        ref = voice.reference
        if ref is None:
            raise EngineError(
                f"model {self._model} is a Qwen3-TTS Base (voice cloning) model, so the "
                "voice needs a reference recording: add `reference: {path: alice.wav, text: "
                '"what alice.wav says"}` to the voice in the catalog (3-10 s of clean speech; '
                "without 'text' only its x-vector is used)"
            )
        transcript = (ref.text or "").strip()
        icl = bool(transcript) and not options.x_vector_only
        key = _reference_key(ref, transcript if icl else None, options)
        cached = self._references.get(voice.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        reference = self._compute(ref, transcript if icl else None, options)
        self._references[voice.name] = (key, reference)
        return reference

    def _compute(
        self, ref: ReferenceAudio, transcript: str | None, options: Qwen3Options
    ) -> CloneReference:
        """Read, check and encode the recording; `transcript`: the ICL transcript, or None."""
        started = time.monotonic()
        audio, rate, seconds = _read_reference(ref.path)  # audio at 24 kHz, float32
        x_vector = self._speaker_encoder.embed(audio)  # (H,) float32
        codes: np.ndarray | None = None
        text_ids: list[int] = []
        if transcript is not None:
            silence = np.zeros(round(options.reference_silence * ENCODER_SAMPLE_RATE), np.float32)
            codes = self._load_speech_encoder().encode(np.concatenate([audio, silence]))
            text_ids = self._tokenize(transcript)  # codes (T_ref, G)
        _LOGGER.info(
            "Reference %s (%.1f s at %d Hz): x-vector%s in %.2f s",
            ref.path,
            seconds,
            rate,
            "" if codes is None else f", {len(codes)} reference frames (in-context clone)",
            time.monotonic() - started,
        )
        return CloneReference(x_vector=x_vector, codes=codes, text_ids=text_ids)

    def _load_speech_encoder(self) -> Qwen3SpeechEncoder:
        if self._speech_encoder is None:
            self._speech_encoder = load_speech_encoder(
                self._speech_tokenizer_dir, self._torch_device
            )
        return self._speech_encoder


def _reference_key(
    ref: ReferenceAudio, transcript: str | None, options: Qwen3Options
) -> ReferenceKey:
    """What the reference depends on: the file's identity, and for ICL (`transcript` given)
    the transcript and the appended silence."""
    try:
        stat = ref.path.stat()
    except OSError as err:
        raise EngineError(
            f"cannot read the reference audio {ref.path} ({err.strerror}); fix "
            "'reference:' of the voice in the catalog"
        ) from err
    return (
        ref.path,
        stat.st_mtime_ns,
        stat.st_size,
        transcript,
        options.reference_silence if transcript is not None else None,
    )


def _read_reference(path: Path) -> tuple[np.ndarray, int, float]:
    """The recording resampled to the speaker encoder's 24 kHz, its own rate and its length in
    seconds, which must be REFERENCE_MIN_SECONDS … REFERENCE_MAX_SECONDS."""
    try:
        audio, rate = read_wav(path)  # (n,) float32
    except (OSError, ValueError) as err:
        raise EngineError(
            f"cannot read the reference audio {path} ({err}); use a 16-bit PCM " "or float WAV file"
        ) from err
    seconds = len(audio) / rate
    if not REFERENCE_MIN_SECONDS <= seconds <= REFERENCE_MAX_SECONDS:
        raise EngineError(
            f"the reference audio {path} lasts {seconds:.1f} s; use "
            f"{REFERENCE_MIN_SECONDS:g}-{REFERENCE_MAX_SECONDS:g} s (3-10 s of clean speech "
            "works best)"
        )
    return resample(audio, rate, MEL_SAMPLE_RATE), rate, seconds  # (n · 24000 / rate,)
