"""The `info` answer to `describe`: one TTS program listing every voice of the catalog.

Home Assistant uses only the first installed TTS program, so every engine's voices live in one.
"""

from __future__ import annotations

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice, TtsVoiceSpeaker

from .catalog import Catalog

PROGRAM_NAME = "multitts"
PROGRAM_DESCRIPTION = "Local neural text to speech (Orpheus, OuteTTS, Qwen3-TTS, Bark)"
PROGRAM_ATTRIBUTION = Attribution(
    name="wyoming-multitts", url="https://github.com/wyoming-multitts"
)


def build_info(catalog: Catalog, streaming: bool, version: str) -> Info:
    """Info with one `TtsProgram` whose voices are the catalog's, in catalog order."""
    voices = []
    for voice in catalog.voices.values():
        model = catalog.models[voice.model]
        attribution = (
            Attribution(name=model.attribution.name, url=model.attribution.url)
            if model.attribution
            else PROGRAM_ATTRIBUTION
        )
        voices.append(
            TtsVoice(
                name=voice.name,
                attribution=attribution,
                installed=True,
                description=voice.description or voice.name,
                version=None,
                languages=list(voice.languages),
                speakers=[TtsVoiceSpeaker(name=s) for s in voice.speakers] or None,
            )
        )
    program = TtsProgram(
        name=PROGRAM_NAME,
        attribution=PROGRAM_ATTRIBUTION,
        installed=True,
        description=PROGRAM_DESCRIPTION,
        version=version,
        voices=voices,
        supports_synthesize_streaming=streaming,
    )
    return Info(tts=[program])
