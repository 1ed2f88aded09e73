"""Command line: `python -m wyoming_multitts --uri tcp://0.0.0.0:10200 [--voices FILE] …`.

Flags follow wyoming-piper's where they mean the same thing. Thread pools are sized here, before
numpy, torch or llama.cpp are imported: left at their defaults they fight over the cores
(OpenBLAS threads made a llama.cpp decode step 2.3x slower; docs/engines.md, "Thread pools").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import shlex
import signal
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from . import __version__
from .web_settings import WebSettings
from .web_settings import add_arguments as add_web_arguments
from .web_settings import settings_from as web_settings_from

_LOGGER = logging.getLogger("wyoming_multitts")

DEFAULT_URI = "tcp://0.0.0.0:10200"
"""Home Assistant's conventional Wyoming TTS port."""
ARGS_ENV = "WYOMING_MULTITTS_ARGS"
"""Extra command-line arguments from the environment (containers), appended to argv."""
GLIBC_TUNABLES_ENV = "GLIBC_TUNABLES"
HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1"
"""glibc >= 2.35: malloc madvises its mmap'd blocks MADV_HUGEPAGE
(https://sourceware.org/glibc/manual/2.36/html_node/Memory-Allocation-Tunables.html)."""
ZEROCONF_DEFAULT_NAME = "multitts"
BYTE_SUFFIXES = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
CREATE_SPEAKER_COMMAND = "create-speaker"
"""First argument that runs `create_speaker.py` instead of the server."""
PROGRAM_DESCRIPTION = "Wyoming text-to-speech server: Orpheus, OuteTTS, Qwen3-TTS and Bark"


@dataclass(frozen=True)
class Settings:
    """Everything the command line decides, typed; nothing below `__main__` sees argparse."""

    uri: str
    voices: Path
    default_voice: str | None
    download_dir: Path | None
    speaker_dir: Path
    """Cache of OuteTTS speaker profiles made from voices' recordings."""
    own_voices: Path
    """Folder of the user's own voices (`own_voices.py`), merged into the catalog."""
    device: str | None
    threads: int
    samples_per_chunk: int
    streaming: bool
    hold_audio: bool
    first_clause: bool
    zeroconf_name: str | None
    zeroconf_interfaces: list[str] | None
    max_loaded_bytes: int
    unload_after: float | None
    offline: bool
    min_free_disk: float
    max_model_disk: float
    max_text_chars: int
    max_speech_seconds: float
    max_pieces: int
    max_audio_ahead: float
    client_timeout: float
    min_client_rate: float
    client_rate_grace: float
    idle_timeout: float
    max_connections: int
    max_connections_per_address: int
    max_waiting: int
    max_loads: int
    keep_recent: float
    load_timeout: float
    shutdown_grace: float
    debug: bool
    log_format: str
    stats_file: Path | None
    web: WebSettings | None = None
    """The web page's (None: no page)."""


def parse_bytes(text: str) -> int:
    """`8G`, `512M`, `1500000000` → bytes (decimal units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*", text.upper())
    if not match:
        raise argparse.ArgumentTypeError(f"expected a size like 8G or 512M, got {text!r}")
    return int(float(match.group(1)) * BYTE_SUFFIXES[match.group(2)])


def build_parser() -> argparse.ArgumentParser:
    """The command line (`--help` lists it)."""
    parser = argparse.ArgumentParser(
        prog="wyoming-multitts",
        description=PROGRAM_DESCRIPTION,
        epilog=f"OuteTTS speaker profiles from a recording: {CREATE_SPEAKER_COMMAND} --help",
    )
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
        "given; the first one holds downloads unless --download-dir is set, and your own "
        "voices (own-voices/)",
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
        "--first-clause",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start on the first clause of an answer's first sentence when the voice's model is "
        "fast enough, before the sentence has arrived whole (default: on)",
    )
    parser.add_argument(
        "--hold-audio",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="hold the first audio of a sentence a model makes slower than real time until the "
        "rest can follow without a stall, so pauses fall between sentences (default: on)",
    )
    parser.add_argument(
        "--min-free-disk",
        type=float,
        default=2.0,
        metavar="GB",
        help="refuse a model download that would leave less free space on the model cache's "
        "disk (default: %(default)g)",
    )
    parser.add_argument(
        "--max-model-disk",
        type=float,
        default=0.0,
        metavar="GB",
        help="refuse a model download that would take the model cache, downloads and "
        "conversions together, over this size (default: 0, no limit)",
    )
    parser.add_argument(
        "--max-text-chars", type=int, default=20_000, help="longest text one request may carry"
    )
    limits = parser.add_argument_group(
        "limits", "what one client may cost (docs/process-model.md); each refusal is an error event"
    )
    limits.add_argument(
        "--max-speech-seconds",
        type=float,
        default=900.0,
        help="most audio one request may ask for, estimated from its text once numbers are "
        "spelled out (default: %(default)g)",
    )
    limits.add_argument(
        "--max-pieces",
        type=int,
        default=500,
        help="most text pieces one request may give an engine (default: %(default)d)",
    )
    limits.add_argument(
        "--max-audio-ahead",
        type=float,
        default=4.0,
        metavar="SECONDS",
        help="audio a model may make beyond what its client has taken (default: %(default)g)",
    )
    limits.add_argument(
        "--client-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="drop a client that takes none of its audio this long (default: %(default)g)",
    )
    limits.add_argument(
        "--min-client-rate",
        type=float,
        default=0.5,
        metavar="RATE",
        help="end a request whose client takes its audio slower than RATE times real time, "
        "after --client-rate-grace seconds of waiting on it; 0: never (default: %(default)g)",
    )
    limits.add_argument(
        "--client-rate-grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long a request may wait on a slow client before --min-client-rate applies "
        "(default: %(default)g)",
    )
    limits.add_argument(
        "--idle-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="close a connection with nothing sent or in progress this long "
        "(default: %(default)g)",
    )
    limits.add_argument(
        "--max-connections", type=int, default=64, help="open connections (default: %(default)d)"
    )
    limits.add_argument(
        "--max-connections-per-address",
        type=int,
        default=32,
        metavar="N",
        help="open connections from one client address (default: %(default)d)",
    )
    limits.add_argument(
        "--max-waiting",
        type=int,
        default=8,
        help="requests that may queue for one busy model (default: %(default)d)",
    )
    limits.add_argument(
        "--max-loads",
        type=int,
        default=1,
        metavar="N",
        help="models loading (downloading, converting) at once; others wait their turn "
        "(default: %(default)d)",
    )
    limits.add_argument(
        "--keep-recent",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="never unload a model used this recently to make room for another, so a client "
        "asking for model after model cannot push out Home Assistant's (default: %(default)g)",
    )
    limits.add_argument(
        "--load-timeout",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="stop a model load (after its download and first conversion) that takes longer "
        "(default: %(default)g)",
    )
    limits.add_argument(
        "--shutdown-grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM, time requests in flight get to finish (default: %(default)g)",
    )
    add_web_arguments(parser)
    parser.add_argument("--debug", action="store_true", help="log DEBUG messages")
    parser.add_argument("--log-format", default=logging.BASIC_FORMAT, help="logging format")
    parser.add_argument(
        "--stats-file",
        type=Path,
        help="append one JSON line per spoken text piece (voice, tokens, frames, seconds per "
        "stage) to this file; script/benchmark reads it",
    )
    parser.add_argument("--version", action="version", version=__version__)
    return parser


def parse_settings(argv: list[str]) -> Settings:
    """Parse argv plus `$WYOMING_MULTITTS_ARGS` into `Settings` (exits with a hint on errors)."""
    parser = build_parser()
    args = parser.parse_args(argv + shlex.split(os.environ.get(ARGS_ENV, "")))
    counts = (
        "threads",
        "samples_per_chunk",
        "max_text_chars",
        "max_pieces",
        "max_connections",
        "max_connections_per_address",
        "max_loads",
    )
    if any(getattr(args, name) < 1 for name in counts):
        parser.error(
            "--" + ", --".join(n.replace("_", "-") for n in counts) + " must be at least 1"
        )
    seconds = (
        "max_speech_seconds",
        "max_audio_ahead",
        "client_timeout",
        "idle_timeout",
        "load_timeout",
    )
    at_least_0 = (
        "max_waiting",
        "min_client_rate",
        "client_rate_grace",
        "keep_recent",
        "min_free_disk",
        "max_model_disk",
    )
    if any(not getattr(args, name) > 0 for name in seconds) or any(
        not getattr(args, name) >= 0 for name in at_least_0
    ):
        parser.error(
            "--" + ", --".join(n.replace("_", "-") for n in seconds) + " must be above 0 and "
            "--" + ", --".join(n.replace("_", "-") for n in at_least_0) + " at least 0"
        )
    if args.zeroconf and not args.uri.startswith("tcp://"):
        parser.error("--zeroconf needs a tcp:// --uri (Home Assistant connects over TCP)")
    voices = args.voices or next(
        (d / "voices.yaml" for d in args.data_dir if (d / "voices.yaml").is_file()), None
    )
    from .catalog import DEFAULT_CATALOG
    from .own_voices import OWN_VOICES_FOLDER

    download_dir = args.download_dir or (
        args.data_dir[0] / "huggingface" if args.data_dir else None
    )
    return Settings(
        uri=args.uri,
        voices=voices or DEFAULT_CATALOG,
        default_voice=args.voice,
        download_dir=download_dir,
        speaker_dir=(args.data_dir[0] if args.data_dir else user_cache_dir()) / "speakers",
        own_voices=(args.data_dir[0] if args.data_dir else user_data_dir()) / OWN_VOICES_FOLDER,
        device=args.device,
        threads=args.threads,
        samples_per_chunk=args.samples_per_chunk,
        streaming=not args.no_streaming,
        hold_audio=args.hold_audio,
        first_clause=args.first_clause,
        zeroconf_name=args.zeroconf,
        zeroconf_interfaces=args.zeroconf_interface,
        max_loaded_bytes=args.max_loaded_bytes,
        unload_after=args.unload_after,
        offline=args.offline,
        min_free_disk=args.min_free_disk,
        max_model_disk=args.max_model_disk,
        max_text_chars=args.max_text_chars,
        max_speech_seconds=args.max_speech_seconds,
        max_pieces=args.max_pieces,
        max_audio_ahead=args.max_audio_ahead,
        client_timeout=args.client_timeout,
        min_client_rate=args.min_client_rate,
        client_rate_grace=args.client_rate_grace,
        idle_timeout=args.idle_timeout,
        max_connections=args.max_connections,
        max_connections_per_address=args.max_connections_per_address,
        max_waiting=args.max_waiting,
        max_loads=args.max_loads,
        keep_recent=args.keep_recent,
        load_timeout=args.load_timeout,
        shutdown_grace=max(args.shutdown_grace, 0.0),
        debug=args.debug,
        log_format=args.log_format,
        stats_file=args.stats_file,
        web=web_settings_from(args, parser),
    )


def user_cache_dir() -> Path:
    """This program's cache without a --data-dir: `$XDG_CACHE_HOME/wyoming-multitts`."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "wyoming-multitts"


def user_data_dir() -> Path:
    """This program's data without a --data-dir: `$XDG_DATA_HOME/wyoming-multitts` (your own
    voices are kept there: a cache may be wiped)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "wyoming-multitts"


def configure_thread_pools(threads: int) -> None:
    """BLAS and OpenMP pools before numpy/torch load: numpy's BLAS gets one thread (our numpy work
    is tiny), OpenMP (torch, llama.cpp) gets `--threads`. OpenMP's wait policy is left to the
    environment (docs/benchmarks.md, "OpenMP's wait policy")."""
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = str(threads)


def request_huge_pages() -> None:
    """Workers started from now on ask glibc's malloc for transparent huge pages (madvise): the
    weights llama.cpp reads into its buffers, and torch's and numpy's large arrays, then sit in
    2 MB pages, and a memory-bound decode step streams them faster (a Qwen3-TTS talker step
    0.93x the time on 2 cores: docs/benchmarks.md, "Huge pages"). A `glibc.malloc.hugetlb`
    the user set stays; other C libraries and kernels with huge pages off ignore it."""
    tunables = os.environ.get(GLIBC_TUNABLES_ENV, "")
    if HUGE_PAGES_TUNABLE.split("=")[0] not in tunables:
        os.environ[GLIBC_TUNABLES_ENV] = ":".join(filter(None, (tunables, HUGE_PAGES_TUNABLE)))


def run() -> None:
    """Console entry point: the server, or `create-speaker` (`create_speaker.py`)."""
    if sys.argv[1:2] == [CREATE_SPEAKER_COMMAND]:
        sys.exit(create_speaker(sys.argv[2:]))
    settings = parse_settings(sys.argv[1:])
    logging.basicConfig(
        level=logging.DEBUG if settings.debug else logging.INFO, format=settings.log_format
    )
    if not settings.debug:
        logging.getLogger("llama.cpp").setLevel(logging.WARNING)
    configure_thread_pools(settings.threads)
    request_huge_pages()
    if settings.offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        pass


def create_speaker(argv: list[str]) -> int:
    """`create-speaker ...`: make an OuteTTS speaker profile; the exit status."""
    from .create_speaker import build_parser, main

    args, _ = build_parser().parse_known_args(argv)  # --threads, before torch loads
    configure_thread_pools(max(1, args.threads))
    logging.basicConfig(level=logging.INFO, format=logging.BASIC_FORMAT)
    return main(argv)


async def serve(settings: Settings) -> None:
    """Build catalog, registry and server; serve until SIGTERM or SIGINT, then stop gracefully:
    stop accepting, let requests in flight finish, stop the model workers, leave zeroconf."""
    # Imported here, after configure_thread_pools: these pull in numpy.
    from urllib.parse import urlparse

    from .catalog import Catalog, CatalogError
    from .devices import gpu_expected
    from .handler import HandlerSettings, SynthesisHandler
    from .hub import Hub
    from .live_catalog import LiveCatalog
    from .registry import ModelRegistry, RegistrySettings
    from .server import Listener

    has_gpu = gpu_expected(settings.device)

    def arrange(catalog: Catalog) -> Catalog:
        """The default voice first, at start and after every change of the catalog."""
        if settings.default_voice:
            return catalog.with_default_voice(settings.default_voice)
        return catalog.for_machine(has_gpu)

    live = LiveCatalog(settings.voices, settings.own_voices, arrange)
    try:
        catalog = live.load()
    except CatalogError as err:
        _LOGGER.error("%s", err)
        sys.exit(2)
    if not settings.default_voice:
        _LOGGER.info(
            "Default voice: %s (%s; --voice picks another)",
            catalog.default_voice.name,
            "a GPU is expected" if has_gpu else "no GPU expected",
        )
    _LOGGER.info(
        "Serving %d voices of %d models from %s and %d of your own from %s",
        len(catalog.voices) - len(catalog.own_voices),
        len(catalog.models),
        catalog.path,
        len(catalog.own_voices),
        live.own_file,
    )

    hub = Hub(
        cache_dir=settings.download_dir,
        offline=settings.offline,
        min_free_bytes=int(settings.min_free_disk * 1e9),
        max_disk_bytes=int(settings.max_model_disk * 1e9),
    )
    freed = await asyncio.to_thread(hub.remove_stale_downloads)
    if freed:
        _LOGGER.info("Freed %.1f MB of partial downloads left by an earlier run", freed / 1e6)
    registry = ModelRegistry(
        catalog,
        RegistrySettings(
            hub=hub,
            threads=settings.threads,
            device_override=settings.device,
            max_loaded_bytes=settings.max_loaded_bytes,
            unload_after=settings.unload_after,
            load_timeout=settings.load_timeout,
            max_waiting=settings.max_waiting,
            max_loads=settings.max_loads,
            keep_recent=settings.keep_recent,
            log_level="DEBUG" if settings.debug else "INFO",
            log_format=settings.log_format,
            stats_file=settings.stats_file,
            speaker_dir=settings.speaker_dir,
        ),
    )
    handler_settings = HandlerSettings(
        samples_per_chunk=settings.samples_per_chunk,
        streaming=settings.streaming,
        hold_audio=settings.hold_audio,
        first_clause=settings.first_clause,
        max_text_chars=settings.max_text_chars,
        max_speech_seconds=settings.max_speech_seconds,
        max_pieces=settings.max_pieces,
        max_audio_ahead=settings.max_audio_ahead,
        client_timeout=settings.client_timeout,
        min_client_rate=settings.min_client_rate,
        client_rate_grace=settings.client_rate_grace,
        idle_timeout=settings.idle_timeout,
    )
    live.subscribe(registry.update)
    listener = Listener(
        settings.uri,
        partial(SynthesisHandler, live, registry, handler_settings),
        settings.max_connections,
        settings.max_connections_per_address,
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals on Windows
            loop.add_signal_handler(signum, stopping.set)
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
    page = None
    live.start()
    try:
        if advertisement is not None:
            await advertisement.start()
        if settings.web is not None:
            from .web import WebPage

            page = WebPage(settings.web, live, registry, handler_settings, hub)
            try:
                await page.start()
            except OSError as err:
                _LOGGER.error(
                    "--web %d: cannot listen (%s); pick another port", settings.web.port, err
                )
                sys.exit(2)
        _LOGGER.info("Ready on %s", settings.uri)
        await listener.serve(stopping, settings.shutdown_grace)
    finally:
        if page is not None:
            await page.close()
        if advertisement is not None:
            await advertisement.close()
        await live.close()
        await registry.close()
        _LOGGER.info("Stopped")


if __name__ == "__main__":
    run()
