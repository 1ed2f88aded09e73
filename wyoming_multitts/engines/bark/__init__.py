"""Bark: three GPT stages (`gpt.py`) read from the release (`checkpoint.py`), speaker presets and
their history (`presets.py`), and the generation loop with EnCodec (`engine.py`)."""

from .engine import FILES, estimate_bytes, load, planned_bytes

__all__ = ["FILES", "estimate_bytes", "load", "planned_bytes"]
