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
import logging
import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from ..errors import ConvertError, EngineError

_LOGGER = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".partial"
"""Suffix of a file or folder while it is being written; it gets its final name only when
complete, so an interrupted write is never mistaken for a finished one (the next write deletes
the leftover)."""
HASH_CHARS = 16
"""Hex digits of a source file's hash in the name of its conversion (64 bits)."""

_conversion_listener: Callable[[bool], None] = lambda converting: None


def report_conversions(listener: Callable[[bool], None]) -> None:
    """Call `listener(True)` before a conversion (or the wait for another process's) and
    `listener(False)` after it: the worker tells the server, whose load time limit leaves a
    first conversion out (it can take minutes on a slow board)."""
    global _conversion_listener  # pylint: disable=global-statement  # one per worker process
    _conversion_listener = listener


def partial_path(final: Path) -> Path:
    """A temporary name beside `final` that no other writer uses: the pid alone is not enough,
    as two servers in two containers may share a data folder and a pid."""
    return final.with_name(f".{final.name}.{os.getpid()}-{secrets.token_hex(4)}{PARTIAL_SUFFIX}")


def remove_partials(final: Path) -> None:
    """Delete what interrupted writes of `final` left (under `conversion_lock`: no writer is
    running)."""
    for stale in final.parent.glob(f".{final.name}.*{PARTIAL_SUFFIX}"):
        stale.unlink(missing_ok=True)


def publish(partial: Path, final: Path) -> None:
    """Give the complete file `partial` its final name, durably: its bytes reach the disk
    before the rename, and the rename before this returns, so a power cut never leaves the
    final name on a short file."""
    with open(partial, "rb") as written:
        os.fsync(written.fileno())
    os.replace(partial, final)
    folder = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def remove_orphan_conversions(conversions: Path) -> None:
    """In a repo's folder of the hub cache (`models--Org--Name/<conversions>/`), delete the
    conversions (named by `content_key` first) whose source blob is gone: an upstream commit
    that changed the file, or one removed from the cache, leaves nothing behind."""
    blobs = conversions.parent / "blobs"
    for entry in conversions.glob("*"):
        if entry.name.startswith(".") or any(blobs.glob(entry.name[:HASH_CHARS] + "*")):
            continue
        _LOGGER.info("Removing %s: the file it was converted from is no longer cached", entry)
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def content_key(source: Path) -> str | None:
    """The hash of a file downloaded from the hub (the name of its blob, which a snapshot links
    to: the sha256 of its content for LFS files, the git hash for small ones), shortened to
    `HASH_CHARS`; None for a file of one's own (its conversion is stamped with size and time)."""
    blob = source.resolve()
    if source.is_symlink() and blob.parent.name == "blobs":
        return blob.name[:HASH_CHARS]
    return None


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
    _conversion_listener(True)
    try:
        with conversion_lock(out, cannot_write):
            done = reused()
            if done is not None:
                return done
            remove_partials(out)
            return convert()
    finally:
        _conversion_listener(False)


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
