"""The model file formats, read and written once for every engine and tool: GGUF (`gguf.py`:
llama.cpp's models, their header, a language model's shape) and safetensors (`safetensors.py`:
Hugging Face checkpoints, read into numpy or strictly into a torch module).

Nothing here imports an engine; torch, safetensors and gguf-py are imported only by the
functions that need them, so reading a GGUF header costs neither.
"""

PARTIAL_SUFFIX = ".partial"
"""Suffix of a file or folder while it is being written; it gets its final name only when
complete, so an interrupted write is never mistaken for a finished one (the next write deletes
the leftover)."""
