"""Convert an official Qwen3-TTS 12 Hz snapshot, once, into what the qwen3tts engine runs.

The release (`Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice` and siblings) is a Hugging Face folder:
`config.json`, `generation_config.json`, `model.safetensors` (bf16), a Qwen2 BPE tokenizer
(`vocab.json`, `merges.txt`, `tokenizer_config.json`) and `speech_tokenizer/`. The engine runs
the two transformer stacks (talker and code predictor) through llama.cpp as stock `qwen3`
models fed with embedding rows, and does the small table work in numpy, so `convert` writes
into `out_dir`:

* `talker.gguf`, `code_predictor.gguf`, `text_tokenizer.gguf` (`gguf_files.py`);
* `tables.npz`, uncompressed (`tables.py`);
* `qwen3tts.json`: the manifest: converter version, source fingerprint, and the config values
  the engine needs (`config.Qwen3TTSRuntimeConfig`).

The talker's M-RoPE gets the same position in all three sections during TTS, which is plain 1-D
NEOX RoPE, what llama.cpp's `qwen3` applies. Conversion is cached: a second call with an
unchanged source, converter version and matrix type returns at once; anything else rebuilds.
Files are written under temporary names and renamed, the manifest last, so an interrupted
conversion is never mistaken for a finished one. The cache lives beside the download
(`converted_dir`), and a file lock makes two servers wait for one conversion (`convert_once`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConvertError
from ...formats import PARTIAL_SUFFIX, content_key
from ...formats import convert_once as convert_cached
from ...formats import partial_path, publish, remove_orphan_conversions
from ...formats.safetensors import WEIGHTS, SafetensorsFiles
from .checkpoint import check_tensors, read_stacks
from .config import (
    ADVICE,
    MATRIX_TYPES,
    Qwen3TTSRuntimeConfig,
    read_generation,
    read_json,
    runtime_config,
)
from .gguf_files import write_predictor, write_talker, write_tokenizer
from .tables import write_tables

_LOGGER = logging.getLogger(__name__)

CONVERTER_VERSION = 3
"""Bump when the output changes: every cached conversion is then rebuilt on next load."""

MANIFEST = "qwen3tts.json"
TALKER_GGUF = "talker.gguf"
PREDICTOR_GGUF = "code_predictor.gguf"
TOKENIZER_GGUF = "text_tokenizer.gguf"
TABLES_NPZ = "tables.npz"
CONVERTED_FILES = (TALKER_GGUF, PREDICTOR_GGUF, TOKENIZER_GGUF, TABLES_NPZ)
"""Files being written are `.NAME.PID.partial` (PARTIAL_SUFFIX) until renamed; one conversion
per folder at a time (an interrupted one's leftovers are deleted when the next starts)."""

SOURCE_FILES = (
    "config.json",
    "generation_config.json",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
)
"""Files of the snapshot the conversion reads besides the weights (fingerprinted for the cache)."""

HUB_CONVERTED_DIR = "qwen3tts-converted"
"""In the Hugging Face cache the conversion goes to
`models--Qwen--…/qwen3tts-converted/<hash>-<matrix type>`, inside the repo's cache folder
(deleting the repo from the cache deletes it too), keyed by the weights' content
(`formats.content_key`): a new upstream commit with the same weights converts nothing, each
matrix type has its own, and the conversions of weights no longer cached are deleted at the
next conversion."""
LOCAL_CONVERTED_SUFFIX = ".converted"
"""A local `path:` folder `DIR` is converted into `DIR.<matrix type>.converted` next to it."""


@dataclass(frozen=True)
class ConvertedQwen3TTS:
    """Where a conversion put its files, and the config the engine runs with."""

    directory: Path
    talker: Path
    code_predictor: Path
    text_tokenizer: Path
    tables: Path
    config: Qwen3TTSRuntimeConfig
    reused: bool
    """True when an earlier conversion was still valid and nothing was written."""


def _result(out_dir: Path, config: Qwen3TTSRuntimeConfig, reused: bool) -> ConvertedQwen3TTS:
    return ConvertedQwen3TTS(
        directory=out_dir,
        talker=out_dir / TALKER_GGUF,
        code_predictor=out_dir / PREDICTOR_GGUF,
        text_tokenizer=out_dir / TOKENIZER_GGUF,
        tables=out_dir / TABLES_NPZ,
        config=config,
        reused=reused,
    )


def converted_dir(model_dir: Path, matrix_type: str) -> Path:
    """Where the conversion of the release folder `model_dir` to `matrix_type` is cached (see
    HUB_CONVERTED_DIR, LOCAL_CONVERTED_SUFFIX)."""
    key = content_key(model_dir / WEIGHTS)
    if key and model_dir.parent.name == "snapshots":  # models--Org--Name/snapshots/<commit>
        return model_dir.parent.parent / HUB_CONVERTED_DIR / f"{key}-{matrix_type}"
    return model_dir.with_name(f"{model_dir.name}.{matrix_type}{LOCAL_CONVERTED_SUFFIX}")


def convert_once(model_dir: Path, matrix_type: str) -> ConvertedQwen3TTS:
    """The conversion in `converted_dir(model_dir)`: an earlier, complete one is read without
    writing anything (a read-only cache serves); else `convert`, one process at a time (a file
    lock beside it: two servers loading the same model wait for one conversion)."""
    out_dir = converted_dir(model_dir, matrix_type)
    cannot_write = (
        f"cannot write beside {model_dir}; the converted model is cached in {out_dir}: make "
        "that folder writable"
    )

    def reused() -> ConvertedQwen3TTS | None:
        _, config, _, stamp = _source(model_dir, matrix_type)
        return _reused(out_dir, config, stamp)

    return convert_cached(
        out_dir, reused, lambda: convert(model_dir, out_dir, matrix_type=matrix_type), cannot_write
    )


def convert(model_dir: Path, out_dir: Path, *, matrix_type: str = "f16") -> ConvertedQwen3TTS:
    """Convert the snapshot in `model_dir` into `out_dir`, or reuse an earlier conversion.

    Errors name the file and what to do (the caller adds which model). `matrix_type` is "f16"
    (llama.cpp's usual choice; bf16 weights lose nothing that matters), "f32" (exact, twice
    the size; tests compare against qwen-tts with it), or "q8_0", "q6_k" or "q4_k" (8, 6 and
    4 bits, faster on CPUs; see MATRIX_TYPES). Takes about a minute for 0.6B on 2 cores, most
    of it folding the 151936-row text table.
    """
    model_dir = Path(model_dir)
    out_dir = Path(out_dir)
    raw, config, weights, stamp = _source(model_dir, matrix_type)
    done = _reused(out_dir, config, stamp)
    if done is not None:
        return done

    start = time.monotonic()
    _LOGGER.info(
        "Converting Qwen3-TTS %s %s from %s into %s (once; about a minute for 0.6B)",
        config.tts_model_type,
        config.tts_model_size,
        model_dir,
        out_dir,
    )
    _clear(out_dir)
    if out_dir.parent.name == HUB_CONVERTED_DIR:
        remove_orphan_conversions(out_dir.parent)
    talker, predictor = stacks = read_stacks(raw, config, model_dir)
    check_tensors(weights, config, raw, stacks, model_dir)
    matrix = MATRIX_TYPES[matrix_type]
    steps: dict[str, Callable[[Path], object]] = {
        TALKER_GGUF: lambda p: write_talker(p, weights, talker, matrix),
        PREDICTOR_GGUF: lambda p: write_predictor(p, weights, predictor, matrix),
        TOKENIZER_GGUF: lambda p: write_tokenizer(p, model_dir, config, talker),
        TABLES_NPZ: lambda p: write_tables(p, weights, config, matrix.dtype),
    }
    for name, write in steps.items():
        _write_step(out_dir, name, write)
    sizes = {name: (out_dir / name).stat().st_size for name in steps}
    manifest = {"stamp": stamp, "sizes": sizes, "config": dataclasses.asdict(config)}
    _write_step(out_dir, MANIFEST, lambda p: _write_json(p, manifest))  # last: it says "done"
    _LOGGER.info("Conversion done in %.1f s (%s)", time.monotonic() - start, out_dir)
    return _result(out_dir, config, reused=False)


def _source(
    model_dir: Path, matrix_type: str
) -> tuple[dict[str, Any], Qwen3TTSRuntimeConfig, SafetensorsFiles, dict[str, Any]]:
    """The release's raw config, runtime config and weights, and the stamp a conversion of it
    to `matrix_type` carries."""
    if matrix_type not in MATRIX_TYPES:
        raise ValueError(
            f"matrix_type must be one of {', '.join(MATRIX_TYPES)}, not {matrix_type!r}"
        )
    raw = read_json(model_dir / "config.json")
    config = runtime_config(raw, read_generation(model_dir), model_dir)
    weights = SafetensorsFiles.open(model_dir, ADVICE)
    stamp = {
        "converter_version": CONVERTER_VERSION,
        "matrix_type": matrix_type,
        "source": _fingerprint(model_dir, weights.paths),
    }
    return raw, config, weights, stamp


def _reused(
    out_dir: Path, config: Qwen3TTSRuntimeConfig, stamp: dict[str, Any]
) -> ConvertedQwen3TTS | None:
    """The conversion in `out_dir` when it is complete (every file of the size its manifest
    recorded) and carries `stamp`; reads only. ConvertError when `out_dir` holds files that this
    server did not write (no manifest): they are never overwritten."""
    manifest = _read_manifest(out_dir / MANIFEST)
    if manifest is None:
        if out_dir.is_dir() and any(out_dir.iterdir()):
            raise ConvertError(
                f"{out_dir} is in the way of the conversion and was not written by this "
                "server: move it away"
            )
        return None
    sizes = manifest.get("sizes")
    if manifest.get("stamp") != stamp or not isinstance(sizes, dict):
        return None
    if not all(_size(out_dir / name) == sizes.get(name) for name in CONVERTED_FILES):
        return None
    _LOGGER.debug("reusing the conversion in %s", out_dir)
    return _result(out_dir, config, reused=True)


def _clear(out_dir: Path) -> None:
    """Create `out_dir`; delete its stale manifest and an interrupted conversion's leftovers."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConvertError(f"cannot create {out_dir} ({err}); check its permissions") from err
    # the old stamp no longer describes the files; an empty one still says whose they are
    _write_step(out_dir, MANIFEST, lambda p: _write_json(p, {"stamp": None}))
    for stale in out_dir.glob(f".*{PARTIAL_SUFFIX}"):  # left by an interrupted conversion
        stale.unlink(missing_ok=True)


def _write_step(out_dir: Path, name: str, write: Callable[[Path], object]) -> None:
    """Write `out_dir/name` under a temporary name, then rename it; log the time it took."""
    final = out_dir / name
    partial = partial_path(final)
    start = time.monotonic()
    try:
        write(partial)
        publish(partial, final)
    except OSError as err:
        partial.unlink(missing_ok=True)
        raise ConvertError(
            f"cannot write {final} ({err}); check the free space and permissions of " f"{out_dir}"
        ) from err
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _LOGGER.info(
        "Wrote %s (%.1f MB) in %.1f s",
        final,
        final.stat().st_size / 1e6,
        time.monotonic() - start,
    )


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _size(path: Path) -> int | None:
    """The size of `path`, or None when it is missing."""
    try:
        return path.stat().st_size
    except OSError:
        return None


def _fingerprint(model_dir: Path, weight_paths: list[Path]) -> dict[str, list[int]]:
    """Size and modification time of every file the conversion reads."""
    paths = [model_dir / name for name in SOURCE_FILES] + weight_paths
    paths.append(model_dir / "speech_tokenizer" / "config.json")
    return {
        str(path.relative_to(model_dir)): [path.stat().st_size, path.stat().st_mtime_ns]
        for path in paths
        if path.exists()
    }


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def read_converted(out_dir: Path) -> ConvertedQwen3TTS:
    """An earlier conversion's files and config, without checking the source (for inspection)."""
    manifest = _read_manifest(out_dir / MANIFEST)
    if manifest is None or "config" not in manifest:
        raise ConvertError(f"{out_dir} holds no finished conversion ({MANIFEST} missing)")
    return _result(out_dir, Qwen3TTSRuntimeConfig(**manifest["config"]), reused=True)
