"""Qwen3-TTS: the checkpoint converted once to GGUF (`convert.py`, reading the release's tensors
with `checkpoint.py` and writing `gguf_files.py` and `tables.py`), its runtime settings
(`config.py`), prompts (`prompt.py`), voice cloning (`clone.py`, `speaker_encoder.py`) and the
generation loop (`engine.py`), and what a loaded model keeps in memory (`memory.py`)."""

from .engine import FILES, load
from .memory import estimate_bytes, planned_bytes

__all__ = ["FILES", "estimate_bytes", "load", "planned_bytes"]
