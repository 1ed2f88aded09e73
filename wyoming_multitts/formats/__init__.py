"""The model file formats, read and written once for every engine and tool: GGUF (`gguf.py`:
llama.cpp's models, their header, a language model's shape) and safetensors (`safetensors.py`:
Hugging Face checkpoints, read into numpy or strictly into a torch module).

Nothing here imports an engine; torch, safetensors and gguf-py are imported only by the
functions that need them, so reading a GGUF header costs neither.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from ..errors import ConvertError, EngineError

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


Converted = TypeVar("Converted")


def convert_once(
    out: Path,
    reused: Callable[[], Converted | None],
    convert: Callable[[], Converted],
    cannot_write: str,
) -> Converted:
    """The conversion cached at `out`: an earlier, complete one as `reused` finds it, read
    without writing anything (a read-only cache serves), else `convert`'s, made under
    `conversion_lock` after looking again (another process may have finished it meanwhile)."""
    done = reused()
    if done is not None:
        return done
    with conversion_lock(out, cannot_write):
        done = reused()
        return convert() if done is None else done


@contextlib.contextmanager
def conversion_lock(out: Path, cannot_write: str) -> Iterator[None]:
    """Hold an exclusive file lock beside `out` (created with its folder) while converting into
    it: two servers loading the same model wait for one conversion instead of clobbering it.
    A folder it cannot write is an EngineError: `cannot_write` (which says what to do), then
    the OS's reason."""
    lock_path = out.with_name(f".{out.name}.lock")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = open(lock_path, "a+b")  # pylint: disable=consider-using-with
    except OSError as err:
        raise EngineError(f"{cannot_write} ({err})") from err
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
