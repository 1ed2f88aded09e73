"""Wyoming text-to-speech server for Home Assistant with several neural engines."""

__version__ = "0.1.0"
