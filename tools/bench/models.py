"""The models a benchmark runs: random models from `modelgen`, and the benchmark's own catalog."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

import yaml

from wyoming_multitts.catalog import Catalog, load_catalog

_LOGGER = logging.getLogger(__name__)

GENERATED_CATALOG = "voices.yaml"
"""The catalog `python -m tools.modelgen SIZE DIR` writes next to the models."""
BENCH_CATALOG = "benchmark-voices.yaml"
"""The benchmark's copy of it: absolute paths and the benchmark's work cap per request."""
BENCHMARKED_ENGINES = ("orpheus", "outetts", "qwen3tts", "bark")
"""Engines whose models get a raw ceiling (`ceiling.CODEC_WINDOWS` knows their codec)."""
TOKEN_CAPS = {"orpheus": "max_tokens", "outetts": "max_tokens", "bark": "max_semantic_tokens"}
"""Engine → its option that caps the tokens a request generates (`--max-tokens`)."""
FRAME_CAPS = {"qwen3tts": "max_frames"}
"""Engine → its option that caps the frames a request generates (`--max-frames`)."""


class BenchError(RuntimeError):
    """The benchmark cannot go on; the message says why and what to look at."""


def ensure_models(
    size: str, directory: Path, threads: int, engines: tuple[str, ...] = BENCHMARKED_ENGINES
) -> Path:
    """Random `size` ("tiny"/"full-size") models of the `engines` in `directory`, built unless all
    there already (the catalog keeps other engines' models an earlier build wrote there)."""
    from tools.modelgen.__main__ import model_names  # imports torch: only here

    catalog = directory / GENERATED_CATALOG
    if catalog.is_file() and _complete(load_catalog(catalog), model_names(size, engines)):
        _LOGGER.info("Using the models in %s", directory)
        return catalog
    _LOGGER.info(
        "Writing %s random models of %s into %s (full-size: minutes)",
        size,
        ", ".join(engines),
        directory,
    )
    command = [sys.executable, "-m", "tools.modelgen", size, str(directory)]
    command += [f"--engine={engine}" for engine in engines]
    # its summary line goes to stderr with our progress: stdout carries only the report
    result = subprocess.run([*command, "--threads", str(threads)], stdout=sys.stderr, check=False)
    if result.returncode != 0:
        raise BenchError(f"`{' '.join(command)}` failed with exit code {result.returncode}")
    return catalog


def _complete(catalog: Catalog, names: set[str]) -> bool:
    """Every model `modelgen` writes for the engines is there with all its files (else the
    catalog is written again; `modelgen` keeps the models already there)."""
    chosen = [model for name, model in catalog.models.items() if name in names]
    return len(chosen) == len(names) and all(
        ref.path is not None and ref.path.exists()
        for model in chosen
        for ref in model.files.values()
    )


def work_cap(engine: str, max_tokens: int, max_frames: int) -> dict[str, int]:
    """The catalog option that caps a request's work for a model of `engine`."""
    if engine in FRAME_CAPS:
        return {FRAME_CAPS[engine]: max_frames}
    return {TOKEN_CAPS[engine]: max_tokens}


def write_bench_catalog(
    source: Path,
    destination: Path,
    max_tokens: int,
    max_frames: int,
    options: Mapping[str, Any],
    device: str | None = None,
) -> Catalog:
    """Copy catalog `source` to `destination` with `options`, `work_cap` and `device` (unless
    None) for every model; return it.

    Random weights rarely sample a stop token, so every request generates exactly `max_tokens`
    tokens (`max_frames` frames): the cap fixes the work per request.
    """
    doc: dict[str, Any] = yaml.safe_load(source.read_text(encoding="utf-8"))
    for model in doc["models"].values():
        cap = work_cap(model["engine"], max_tokens, max_frames)
        model["options"] = {**model.get("options", {}), **options, **cap}
        if device is not None:
            model["device"] = device
        for ref in model["files"].values():
            _absolute(ref, source.parent)
    for voice in doc["voices"].values():
        _absolute(voice.get("reference") or {}, source.parent)
    destination.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_catalog(destination)


def _absolute(ref: dict[str, Any], base_dir: Path) -> None:
    """Make a file reference's `path:` absolute (the copy lives in another folder)."""
    if "path" in ref:
        ref["path"] = str((base_dir / ref["path"]).resolve())


def benchmarked_voices(
    catalog: Catalog, voices_per_model: int, engines: tuple[str, ...] = BENCHMARKED_ENGINES
) -> dict[str, list[str]]:
    """Model name → its first `voices_per_model` voices, per model of the `engines`."""
    chosen: dict[str, list[str]] = {}
    for voice in catalog.voices.values():
        if catalog.models[voice.model].engine not in engines:
            continue
        voices = chosen.setdefault(voice.model, [])
        if len(voices) < voices_per_model:
            voices.append(voice.name)
    if not chosen:
        raise BenchError(f"{catalog.path}: no voices of {', '.join(engines)}")
    return chosen
