"""OuteTTS 0.2/0.3 and 1.0: generation (`engine.py`), what differs between the versions
(`dialects.py`: the codec, WavTokenizer or DAC, and the rest), prompts and reply parsing
(`prompt.py`, `prompt10.py`), speaker profiles (`speakers.py`, `speakers10.py`)."""

from .engine import FILES, estimate_bytes, load, planned_bytes

__all__ = ["FILES", "estimate_bytes", "load", "planned_bytes"]
