"""Speak through a running container: one plain and one streamed request for a voice of every
model in a catalog (every engine, quantized copies included), over the published port
(script/test-image runs it against each image).

    python -m tools.image_check PORT CATALOG
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from wyoming_multitts.catalog import load_catalog

from .bench.client import MODES, timed_request
from .bench.models import BenchError

TEXT = "Hello from the container."


async def check(port: int, catalog_path: Path) -> list[str]:
    """One line per request that failed; each model's first voice, both modes."""
    catalog = load_catalog(catalog_path)
    first_voice: dict[str, str] = {}
    for name, spec in catalog.voices.items():
        first_voice.setdefault(spec.model, name)
    failures = []
    for model, voice in sorted(first_voice.items()):
        engine = catalog.models[model].engine
        for mode in MODES:
            try:
                timing = await timed_request(port, mode, TEXT, voice)
            except BenchError as err:
                failures.append(f"{engine} ({voice}, {mode}): {err}")
                continue
            print(
                f"  {engine:9} {voice:24} {mode:9} {timing.audio_s:5.2f} s of audio, "
                f"first after {timing.ttfa_s:.2f} s"
            )
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.image_check")
    parser.add_argument("port", type=int, help="the container's published Wyoming port")
    parser.add_argument("catalog", type=Path, help="the voices.yaml the container serves")
    args = parser.parse_args()
    failures = asyncio.run(check(args.port, args.catalog))
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
