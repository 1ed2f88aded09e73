"""Engine names mapped to their modules, imported only when a model of that engine loads.

torch and llama.cpp are never imported for a catalog that uses none of their engines, and a
missing optional dependency is a clear error for that model's voices only.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import cast

from ..errors import EngineError
from .base import EngineModule

ENGINE_MODULES = {
    "bark": "wyoming_multitts.engines.bark",
    "orpheus": "wyoming_multitts.engines.orpheus",
    "outetts": "wyoming_multitts.engines.outetts",
    "qwen3tts": "wyoming_multitts.engines.qwen3tts",
}
"""Catalog `engine:` value → module implementing it."""

ENGINE_REQUIREMENTS = {
    "bark": ("torch", "encodec", "einops", "tokenizers"),
    "orpheus": ("llama_cpp", "torch", "snac"),
    "outetts": ("llama_cpp",),
    "qwen3tts": ("llama_cpp", "torch", "gguf", "safetensors"),
}
"""Python packages each engine imports (checked before importing, so the error can say which)."""

ENGINE_NATIVE_TEXT = {
    "qwen3tts": frozenset(("zh", "ja", "ko")),
}
"""Languages whose digits, dates and units an engine reads well itself, so the text front end's
`normalize: auto` leaves them written as they are (docs/text.md). Qwen3-TTS is a large
language model trained on text as people write it; in Korean and Japanese the reading of a
number depends on the counter after it (3시 is "세 시"), which spelling it out by rule gets
wrong."""

PROFILE_FROM_REFERENCE = frozenset(("outetts",))
"""Engines that speak from speaker profiles: a voice's `reference:` recording is made into one
(`create-speaker`, run by the server once per recording and cached: `speaker_profiles.py`)."""


def uses_llama_cpp(name: str) -> bool:
    """Whether engine `name` runs a part on llama.cpp (its device must be a llama.cpp one)."""
    return "llama_cpp" in ENGINE_REQUIREMENTS.get(name, ())


def engine_module(name: str) -> EngineModule:
    """The module of engine `name`; raises `EngineError` naming what is missing."""
    if name not in ENGINE_MODULES:
        raise EngineError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINE_MODULES))})")
    missing = [pkg for pkg in ENGINE_REQUIREMENTS[name] if importlib.util.find_spec(pkg) is None]
    if missing:
        raise EngineError(
            f"engine {name} needs the Python package(s) {', '.join(missing)}; "
            "run script/setup (or pip install them into the server's environment)"
        )
    return cast(EngineModule, importlib.import_module(ENGINE_MODULES[name]))
