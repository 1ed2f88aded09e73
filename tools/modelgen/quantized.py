"""Quantized copies of the tiny llama.cpp models, added to a tiny catalog: the kinds of voice the
shipped catalog has (Orpheus and OuteTTS at Q4_K_M and Q8_0, Qwen3-TTS at `matrix_type: q8_0`),
so that the tests and `script/test-image` speak them on whatever CPU they run on (docs/cpus.md).

    python -m tools.modelgen.quantized DIR   # DIR from `python -m tools.modelgen tiny DIR`

The tiny models' rows are 64 wide: llama.cpp's quantizer keeps Q8_0 and falls back from Q4_K to
the types such rows allow, as it does for a real model's odd tensors.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import yaml

from .files import atomic_path
from .gguf_lm import QUANT_TYPES, quantize_gguf

QUANTIZED_MODELS = ("orpheus-tiny", "outetts-0.3-tiny", "outetts-1.0-tiny")
"""The tiny llama.cpp models whose real counterparts ship as Q4_K_M or Q8_0."""
QWEN3_MODEL = "qwen3tts-tiny"
QWEN3_MATRIX_TYPE = "q8_0"


def add_quantized_models(directory: Path, threads: int) -> list[str]:
    """Write the quantized copies into `directory` and add a model and a voice for each to its
    catalog (paths relative, as the tiny catalog's); returns the voices added."""
    catalog_path = directory / "voices.yaml"
    catalog = yaml.safe_load(catalog_path.read_text(encoding="utf-8"))
    models, voices = catalog["models"], catalog["voices"]
    added = []
    for name in QUANTIZED_MODELS:
        entry = models[name]
        speaker = next(
            v["speaker"] for v in voices.values() if v["model"] == name and "speaker" in v
        )
        for quant in sorted(QUANT_TYPES):
            model = f"{name}-{quant}"
            path = directory / f"{model}.gguf"
            if not path.exists():
                with atomic_path(path) as partial:
                    quantize_gguf(
                        directory / entry["files"]["model"]["path"], partial, quant, threads
                    )
            files = {**entry["files"], "model": {"path": path.name}}
            models[model] = {
                **entry,
                "description": f"{entry['description']}, {quant}",
                "files": files,
            }
            voices[model] = {"model": model, "speaker": speaker, "languages": ["en"]}
            added.append(model)
    # a checkpoint of its own: the conversion is cached beside it, one per folder
    qwen3 = models[QWEN3_MODEL]
    source = directory / qwen3["files"]["model"]["path"]
    checkpoint = source.with_name(f"{source.name}-{QWEN3_MATRIX_TYPE}")
    if not checkpoint.exists():
        shutil.copytree(source, checkpoint)
    model = f"{QWEN3_MODEL}-{QWEN3_MATRIX_TYPE}"
    models[model] = {
        **qwen3,
        "description": f"{qwen3['description']}, {QWEN3_MATRIX_TYPE}",
        "files": {"model": {"path": checkpoint.name}},
        "options": {**qwen3.get("options", {}), "matrix_type": QWEN3_MATRIX_TYPE},
    }
    voices[model] = {"model": model, "speaker": "ryan", "languages": ["en"]}
    added.append(model)
    catalog_path.write_text(yaml.safe_dump(catalog, sort_keys=False), encoding="utf-8")
    return added


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.modelgen.quantized")
    parser.add_argument("directory", type=Path, help="a folder of tiny models with voices.yaml")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    for voice in add_quantized_models(args.directory, args.threads):
        print(voice)


if __name__ == "__main__":
    main()
