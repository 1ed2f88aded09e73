"""Command line: `python -m wyoming_multitts --uri tcp://0.0.0.0:10200 [--voices FILE] …`.

Flags follow wyoming-piper's where they mean the same thing. Thread pools are sized here, before
numpy, torch or llama.cpp are imported: left at their defaults they fight over the cores
(perf-anchors.md: OpenBLAS threads made a llama.cpp decode step 2.3x slower).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import shlex
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from . import __version__

_LOGGER = logging.getLogger("wyoming_multitts")

DEFAULT_URI = "tcp://0.0.0.0:10200"
"""Home Assistant's conventional Wyoming TTS port."""
ARGS_ENV = "WYOMING_MULTITTS_ARGS"
"""Extra command-line arguments from the environment (containers), appended to argv."""
ZEROCONF_DEFAULT_NAME = "multitts"
BYTE_SUFFIXES = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
PROGRAM_DESCRIPTION = "Wyoming text-to-speech server: Orpheus, OuteTTS, Qwen3-TTS and Bark"


@dataclass(frozen=True)
class Settings:
    """Everything the command line decides, typed; nothing below `__main__` sees argparse."""

    uri: str
    voices: Path
    default_voice: str | None
    download_dir: Path | None
    device: str | None
    threads: int
    samples_per_chunk: int
    streaming: bool
    zeroconf_name: str | None
    zeroconf_interfaces: list[str] | None
    max_loaded_bytes: int
    unload_after: float | None
    offline: bool
    max_text_chars: int
    debug: bool
    log_format: str


def parse_bytes(text: str) -> int:
    """`8G`, `512M`, `1500000000` → bytes (decimal units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*", text.upper())
    if not match:
        raise argparse.ArgumentTypeError(f"expected a size like 8G or 512M, got {text!r}")
    return int(float(match.group(1)) * BYTE_SUFFIXES[match.group(2)])


def build_parser() -> argparse.ArgumentParser:
    """The command line (`--help` lists it)."""
    parser = argparse.ArgumentParser(prog="wyoming-multitts", description=PROGRAM_DESCRIPTION)
    parser.add_argument("--uri", default=DEFAULT_URI, help="tcp://HOST:PORT, unix:// or stdio://")
    parser.add_argument(
        "--voices",
        type=Path,
        help="voice catalog (default: DATA_DIR/voices.yaml "
        "if present, else the catalog shipped in data/voices.yaml)",
    )
    parser.add_argument(
        "--voice",
        help="voice used when a request names none " "(default: the first voice of the catalog)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        action="append",
        default=[],
        help="data folder (repeatable): its voices.yaml is used if --voices is not "
        "given; the first one holds downloads unless --download-dir is set",
    )
    parser.add_argument(
        "--download-dir", type=Path, help="Hugging Face cache for downloaded models"
    )
    parser.add_argument(
        "--device",
        help="run every model on this device instead of the catalog's: "
        "auto, cpu, cuda[:N], vulkan[:N], metal, htp[:N]",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="CPU threads for llama.cpp and torch (default: all cores)",
    )
    parser.add_argument(
        "--samples-per-chunk", type=int, default=1024, help="audio samples per audio-chunk event"
    )
    parser.add_argument(
        "--no-streaming",
        action="store_true",
        help="do not advertise streaming; streamed text is spoken once, at the end",
    )
    parser.add_argument(
        "--zeroconf",
        nargs="?",
        const=ZEROCONF_DEFAULT_NAME,
        metavar="NAME",
        help=f"advertise over zeroconf/mDNS (name default: {ZEROCONF_DEFAULT_NAME})",
    )
    parser.add_argument(
        "--zeroconf-interface",
        action="append",
        metavar="IP",
        help="answer mDNS only on the interface with this address (repeatable)",
    )
    parser.add_argument(
        "--max-loaded-bytes",
        type=parse_bytes,
        default=0,
        help="memory budget for loaded models, e.g. 8G (default: 75%% of RAM)",
    )
    parser.add_argument(
        "--unload-after",
        type=float,
        metavar="SECONDS",
        help="unload a model after this many idle seconds (default: never)",
    )
    parser.add_argument(
        "--offline",
        "--local-files-only",
        dest="offline",
        action="store_true",
        help="never download: use only cached or local model files",
    )
    parser.add_argument(
        "--max-text-chars", type=int, default=20_000, help="longest text one request may carry"
    )
    parser.add_argument("--debug", action="store_true", help="log DEBUG messages")
    parser.add_argument("--log-format", default=logging.BASIC_FORMAT, help="logging format")
    parser.add_argument("--version", action="version", version=__version__)
    return parser


def parse_settings(argv: list[str]) -> Settings:
    """Parse argv plus `$WYOMING_MULTITTS_ARGS` into `Settings` (exits with a hint on errors)."""
    parser = build_parser()
    args = parser.parse_args(argv + shlex.split(os.environ.get(ARGS_ENV, "")))
    if args.threads < 1 or args.samples_per_chunk < 1 or args.max_text_chars < 1:
        parser.error("--threads, --samples-per-chunk and --max-text-chars must be at least 1")
    if args.zeroconf and not args.uri.startswith("tcp://"):
        parser.error("--zeroconf needs a tcp:// --uri (Home Assistant connects over TCP)")
    voices = args.voices or next(
        (d / "voices.yaml" for d in args.data_dir if (d / "voices.yaml").is_file()), None
    )
    from .catalog import DEFAULT_CATALOG

    download_dir = args.download_dir or (
        args.data_dir[0] / "huggingface" if args.data_dir else None
    )
    return Settings(
        uri=args.uri,
        voices=voices or DEFAULT_CATALOG,
        default_voice=args.voice,
        download_dir=download_dir,
        device=args.device,
        threads=args.threads,
        samples_per_chunk=args.samples_per_chunk,
        streaming=not args.no_streaming,
        zeroconf_name=args.zeroconf,
        zeroconf_interfaces=args.zeroconf_interface,
        max_loaded_bytes=args.max_loaded_bytes,
        unload_after=args.unload_after,
        offline=args.offline,
        max_text_chars=args.max_text_chars,
        debug=args.debug,
        log_format=args.log_format,
    )


def configure_thread_pools(threads: int) -> None:
    """BLAS and OpenMP pools before numpy/torch load: numpy's BLAS gets one thread (our numpy work
    is tiny), OpenMP (torch, llama.cpp) gets `--threads`."""
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = str(threads)


def run() -> None:
    """Console entry point."""
    settings = parse_settings(sys.argv[1:])
    logging.basicConfig(
        level=logging.DEBUG if settings.debug else logging.INFO, format=settings.log_format
    )
    if not settings.debug:
        logging.getLogger("llama.cpp").setLevel(logging.WARNING)
    configure_thread_pools(settings.threads)
    if settings.offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        pass


async def serve(settings: Settings) -> None:
    """Build catalog, registry and server; serve until stopped."""
    # Imported here, after configure_thread_pools: these pull in numpy.
    from urllib.parse import urlparse

    from wyoming.server import AsyncServer

    from .catalog import CatalogError, load_catalog
    from .handler import HandlerSettings, SynthesisHandler
    from .hub import Hub
    from .info import build_info
    from .registry import ModelRegistry, RegistrySettings

    try:
        catalog = load_catalog(settings.voices)
        if settings.default_voice:
            catalog = catalog.with_default_voice(settings.default_voice)
    except CatalogError as err:
        _LOGGER.error("%s", err)
        sys.exit(2)
    _LOGGER.info(
        "Serving %d voices of %d models from %s",
        len(catalog.voices),
        len(catalog.models),
        catalog.path,
    )

    registry = ModelRegistry(
        catalog,
        RegistrySettings(
            hub=Hub(cache_dir=settings.download_dir, offline=settings.offline),
            threads=settings.threads,
            device_override=settings.device,
            max_loaded_bytes=settings.max_loaded_bytes,
            unload_after=settings.unload_after,
        ),
    )
    handler_settings = HandlerSettings(
        samples_per_chunk=settings.samples_per_chunk,
        streaming=settings.streaming,
        max_text_chars=settings.max_text_chars,
    )
    info = build_info(catalog, streaming=settings.streaming, version=__version__)
    server = AsyncServer.from_uri(settings.uri)
    advertisement = None
    if settings.zeroconf_name:
        from .discovery import Advertisement

        uri = urlparse(settings.uri)
        advertisement = Advertisement(
            settings.zeroconf_name,
            uri.port or 0,
            uri.hostname or "",
            settings.zeroconf_interfaces,
        )
    registry.start()
    try:
        if advertisement is not None:
            await advertisement.start()
        _LOGGER.info("Ready on %s", settings.uri)
        await server.run(partial(SynthesisHandler, info, catalog, registry, handler_settings))
    finally:
        if advertisement is not None:
            await advertisement.close()
        await registry.close()


if __name__ == "__main__":
    run()
