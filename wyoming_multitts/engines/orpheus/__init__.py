"""Orpheus TTS: a Llama-3.2-3B fine-tune writes SNAC codes as tokens (`engine.py`)."""

from .engine import FILES, estimate_bytes, load, planned_bytes

__all__ = ["FILES", "estimate_bytes", "load", "planned_bytes"]
