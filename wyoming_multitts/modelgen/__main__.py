"""Write random-weight models and a `voices.yaml` for them.

    python -m wyoming_multitts.modelgen tiny DIR                    # seconds; for tests
    python -m wyoming_multitts.modelgen full-size DIR [--threads N] # real shapes; minutes, GBs

Then serve them with `python -m wyoming_multitts --voices DIR/voices.yaml ...`.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..catalog import load_catalog
from . import orpheus
from .files import CatalogEntries, atomic_path

_LOGGER = logging.getLogger(__name__)

CATALOG_NAME = "voices.yaml"
"""The catalog written next to the models."""

GGML_LOG_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.WARNING, 4: logging.ERROR}
"""`enum ggml_log_level` (ggml.h: DEBUG 1, INFO 2, WARN 3, ERROR 4) to logging levels: llama.cpp's
INFO lines (one per tensor while quantizing) show only with --debug, its warnings and errors
always. llama-cpp-python's own callback maps these one level off (INFO as WARNING, ERROR as
DEBUG), so no logger level would hide the chatter and keep the errors."""
GGML_LOG_CONTINUE = 5
"""ggml level of a line that continues the previous one."""


@dataclass(frozen=True)
class EngineModels:
    """How to write one engine's random models."""

    engine: str
    tiny: Callable[[Path], CatalogEntries]
    """Writes the tiny model(s) into a folder."""
    full_size: Callable[[Path, int], CatalogEntries]
    """Writes the full-size model(s) into a folder, using that many threads."""


ENGINES = (EngineModels("orpheus", orpheus.write_tiny, orpheus.write_full_size),)
"""Every engine with random models; a new engine adds its line here."""


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line, write the models and their catalog, print a summary."""
    parser = argparse.ArgumentParser(
        prog="python -m wyoming_multitts.modelgen",
        description="Write random-weight models in the real formats, plus DIR/voices.yaml.",
    )
    parser.add_argument(
        "size", choices=("tiny", "full-size"), help="tiny: tests; full-size: benchmarks"
    )
    parser.add_argument("directory", type=Path, help="output folder (created if missing)")
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="threads for quantizing full-size models (default: all cores)",
    )
    parser.add_argument(
        "--debug", action="store_true", help="log every tensor and llama.cpp's output"
    )
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.size == "full-size" and importlib.util.find_spec("llama_cpp") is None:
        parser.error(
            "full-size quantizes with llama.cpp: install llama-cpp-python "
            "(pip install llama-cpp-python==0.3.36, or script/setup)"
        )

    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # gguf-py announces its endianness for every file it writes
    logging.getLogger("gguf").setLevel(logging.DEBUG if args.debug else logging.WARNING)
    if args.size == "full-size":
        _send_llama_logs_to_logging()

    start = time.monotonic()
    command = f"python -m wyoming_multitts.modelgen {args.size} {args.directory}"
    catalog_path = write_models(args.directory, args.size, args.threads, command)
    catalog = load_catalog(catalog_path)
    print(
        f"Wrote {len(catalog.models)} model(s) and {len(catalog.voices)} voice(s) "
        f"({', '.join(catalog.voices)}) in {time.monotonic() - start:.1f} s; "
        f"catalog: {catalog_path}"
    )


_llama_log_callback: list[object] = []
"""Keeps the ctypes callback alive while llama.cpp holds a pointer to it."""


def _send_llama_logs_to_logging() -> None:
    """Route llama.cpp's log through `logging` (logger `llama.cpp`) for this process."""
    import ctypes  # pylint: disable=import-outside-toplevel

    import llama_cpp  # pylint: disable=import-outside-toplevel  # only full-size needs it

    llama_logger = logging.getLogger("llama.cpp")
    state = {"level": logging.DEBUG}

    @llama_cpp.llama_log_callback
    def log_line(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
        if level != GGML_LOG_CONTINUE:
            state["level"] = GGML_LOG_LEVELS.get(level, logging.DEBUG)
        message = text.decode("utf-8", errors="replace").rstrip("\n")
        if message:
            llama_logger.log(state["level"], "%s", message)

    _llama_log_callback.append(log_line)
    llama_cpp.llama_log_set(log_line, ctypes.c_void_p(0))


def write_models(directory: Path, size: str, threads: int, command: str) -> Path:
    """Write every engine's `size` ("tiny"/"full-size") models and the catalog; return its path."""
    models: dict[str, dict[str, Any]] = {}
    voices: dict[str, dict[str, Any]] = {}
    for engine in ENGINES:
        engine_start = time.monotonic()
        _LOGGER.info("%s: writing %s models into %s", engine.engine, size, directory)
        if size == "tiny":
            new_models, new_voices = engine.tiny(directory)
        else:
            new_models, new_voices = engine.full_size(directory, threads)
        models.update(new_models)
        voices.update(new_voices)
        _LOGGER.info("%s: done in %.1f s", engine.engine, time.monotonic() - engine_start)
    return write_catalog(directory / CATALOG_NAME, models, voices, command)


def write_catalog(
    path: Path, models: dict[str, dict[str, Any]], voices: dict[str, dict[str, Any]], command: str
) -> Path:
    """Write a `voices.yaml` for generated models, with a header saying how it was made."""
    header = (
        f"# Generated by `{command}`: random-weight models (noise, not speech)\n"
        "# for tests and benchmarks. Edits are lost when it is regenerated.\n"
    )
    body = yaml.safe_dump({"models": models, "voices": voices}, sort_keys=False, allow_unicode=True)
    with atomic_path(path) as partial:
        partial.write_text(header + body, encoding="utf-8")
    return path


if __name__ == "__main__":
    main()
