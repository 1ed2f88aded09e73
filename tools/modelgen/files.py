"""Outputs that appear whole or not at all, and the catalog entries the writers return."""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

from wyoming_multitts.formats import PARTIAL_SUFFIX

_LOGGER = logging.getLogger(__name__)

CatalogEntries = tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]
"""`(models, voices)`: the `models:` and `voices:` entries of `voices.yaml` for what was written,
with file paths relative to the folder the models were written into."""


@contextlib.contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temporary path next to `final`; rename it to `final` only if the block succeeds.

    Works for a file or a folder. A full-size model takes minutes to write; if the build is
    interrupted, only `NAME.partial` is left behind (removed by the next run), never a truncated
    `NAME` that a later run would take for a finished model.
    """
    partial = final.with_name(final.name + PARTIAL_SUFFIX)
    _remove(partial)
    try:
        yield partial
        if not partial.exists():
            raise FileNotFoundError(f"{partial}: the writer did not create it")
        _remove(final)
        partial.rename(final)
    except BaseException:
        _remove(partial)
        raise


def write_once(path: Path, write: Callable[[Path], object]) -> Path:
    """`write(partial)` under `atomic_path(path)` unless `path` exists already (full-size models
    take minutes to write: a later run keeps them); returns `path`."""
    if path.exists():
        _LOGGER.info("Keeping %s (delete it to rebuild)", path)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as partial:
        write(partial)
    return path


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
