"""The model file formats, read and written once for every engine and tool: GGUF (`gguf.py`:
llama.cpp's models, their header, a language model's shape) and safetensors (`safetensors.py`:
Hugging Face checkpoints, read into numpy or strictly into a torch module).

Nothing here imports an engine; torch, safetensors and gguf-py are imported only by the
functions that need them, so reading a GGUF header costs neither.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ConvertError

PARTIAL_SUFFIX = ".partial"
"""Suffix of a file or folder while it is being written; it gets its final name only when
complete, so an interrupted write is never mistaken for a finished one (the next write deletes
the leftover)."""


def read_json_object(path: Path, advice: str) -> dict[str, Any]:
    """A JSON object from a checkpoint (config, index), or a ConvertError naming the file and
    `advice` (what to do)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ConvertError(f"{path} is missing; {advice}") from err
    except (OSError, ValueError) as err:
        raise ConvertError(f"cannot read {path} ({err}); {advice}") from err
    if not isinstance(doc, dict):
        raise ConvertError(f"{path} is not a JSON object; {advice}")
    return doc
