"""OuteTTS 0.2/0.3: speaker prompt and reply parsing (`prompt.py`), speaker profiles
(`speakers.py`), generation and the WavTokenizer vocoder (`engine.py`)."""

from .engine import FILES, estimate_bytes, load

__all__ = ["FILES", "estimate_bytes", "load"]
