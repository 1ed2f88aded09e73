"""Write random-weight models and a `voices.yaml` for them.

    python -m tools.modelgen tiny DIR                    # seconds; for tests
    python -m tools.modelgen full-size DIR [--threads N] # real shapes; minutes, GBs
    python -m tools.modelgen full-size DIR --engine outetts  # one engine's models

Then serve them with `python -m wyoming_multitts --voices DIR/voices.yaml ...`.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from wyoming_multitts.catalog import load_catalog

from . import bark, orpheus, outetts, qwen3tts
from .files import CatalogEntries, atomic_path

_LOGGER = logging.getLogger(__name__)

CATALOG_NAME = "voices.yaml"
"""The catalog written next to the models."""


@dataclass(frozen=True)
class EngineModels:
    """How to write one engine's random models."""

    engine: str
    tiny: Callable[[Path], CatalogEntries]
    """Writes the tiny model(s) into a folder."""
    full_size: Callable[[Path, int], CatalogEntries]
    """Writes the full-size model(s) into a folder, using that many threads."""
    models: Mapping[str, tuple[str, ...]]
    """Size ("tiny", "full-size") → the names of the models its writer adds to the catalog."""


ENGINES = (
    EngineModels(
        "orpheus",
        orpheus.write_tiny,
        orpheus.write_full_size,
        {"tiny": (orpheus.TINY_MODEL,), "full-size": (orpheus.FULL_MODEL,)},
    ),
    EngineModels(
        "outetts",
        outetts.write_tiny,
        outetts.write_full_size,
        {"tiny": outetts.TINY_MODEL_NAMES, "full-size": outetts.FULL_MODEL_NAMES},
    ),
    EngineModels(
        "qwen3tts",
        qwen3tts.write_tiny,
        qwen3tts.write_full_size,
        {
            "tiny": (qwen3tts.TINY_MODEL, qwen3tts.TINY_BASE_MODEL),
            "full-size": (qwen3tts.FULL_MODEL,),
        },
    ),
    EngineModels(
        "bark",
        bark.write_tiny,
        bark.write_full_size,
        {"tiny": (bark.TINY_MODEL,), "full-size": (bark.FULL_MODEL,)},
    ),
)
"""Every engine with random models; a new engine adds its line here."""
ENGINE_NAMES = tuple(engine.engine for engine in ENGINES)
"""Their names: the choices of `--engine`."""


def model_names(size: str, engines: Collection[str] = ENGINE_NAMES) -> set[str]:
    """The models `write_models` puts in the catalog for these engines at this size (a folder
    built before an engine gained a model lacks it: the benchmark then builds it again)."""
    return {name for engine in ENGINES if engine.engine in engines for name in engine.models[size]}


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line, write the models and their catalog, print a summary."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.modelgen",
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
        "--engine",
        action="append",
        choices=ENGINE_NAMES,
        help="write only this engine's models, keeping the other engines' catalog entries "
        "(repeatable; default: all)",
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
        # llama.cpp's log into `logging` (quantizing is chatty)
        from wyoming_multitts.llm.build import init_runtime

        init_runtime()

    start = time.monotonic()
    engines = tuple(args.engine or ENGINE_NAMES)
    command = f"python -m tools.modelgen {args.size} {args.directory}" + "".join(
        f" --engine {engine}" for engine in args.engine or ()
    )
    catalog_path = write_models(args.directory, args.size, args.threads, command, engines)
    catalog = load_catalog(catalog_path)
    print(
        f"Wrote the models of {', '.join(engines)} in {time.monotonic() - start:.1f} s; "
        f"catalog {catalog_path}: {len(catalog.models)} model(s) and {len(catalog.voices)} "
        f"voice(s) ({', '.join(catalog.voices)})"
    )


def write_models(
    directory: Path,
    size: str,
    threads: int,
    command: str,
    engines: Collection[str] = ENGINE_NAMES,
) -> Path:
    """Write the `engines`' `size` ("tiny"/"full-size") models and the catalog; return its path.

    The catalog keeps the entries an earlier build in `directory` wrote for the other engines, so
    building one engine's models and later all of them (or the reverse) loses nothing.
    """
    catalog_path = directory / CATALOG_NAME
    old_models, old_voices = _read_catalog(catalog_path)
    models: dict[str, dict[str, Any]] = {}
    voices: dict[str, dict[str, Any]] = {}
    for engine in ENGINES:
        if engine.engine not in engines:
            kept = {n: m for n, m in old_models.items() if m.get("engine") == engine.engine}
            models.update(kept)
            voices.update({n: v for n, v in old_voices.items() if v.get("model") in kept})
            continue
        engine_start = time.monotonic()
        _LOGGER.info("%s: writing %s models into %s", engine.engine, size, directory)
        if size == "tiny":
            new_models, new_voices = engine.tiny(directory)
        else:
            new_models, new_voices = engine.full_size(directory, threads)
        models.update(new_models)
        voices.update(new_voices)
        _LOGGER.info("%s: done in %.1f s", engine.engine, time.monotonic() - engine_start)
    return write_catalog(catalog_path, models, voices, command)


def _read_catalog(path: Path) -> CatalogEntries:
    """The `models:` and `voices:` entries of the catalog at `path` (none if there is none)."""
    if not path.is_file():
        return {}, {}
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return doc.get("models") or {}, doc.get("voices") or {}


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
