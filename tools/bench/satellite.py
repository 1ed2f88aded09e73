"""`script/benchmark --satellite`: what a voice satellite hears while Home Assistant streams an
LLM's answer to the server (issue 31; docs/benchmarks.md, "Voice satellites").

For the default voice of every engine, the answer goes out as Home Assistant sends it:
`synthesize-start`, then chunks of 3 to 12 characters at an LLM's pace (`--words-per-second`,
15 and 40 by default), the whole text again as `synthesize`, then `synthesize-stop`. A
listener plays the audio at real time from its first chunk, as a satellite's media player does,
and counts where it runs dry: inside a piece (mid-word: what the hold prevents) and between
pieces. Each voice is first asked twice, untimed: its model loads and the server measures its
speed. Both servers run in turn, `--hold-audio` (the default) and `--no-hold-audio`, over the
same models. Markdown on stdout; medians over `--runs`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import yaml
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from .client import READ_TIMEOUT
from .machine import describe_machine, load_average
from .models import BENCHMARKED_ENGINES, benchmarked_voices, ensure_models, write_bench_catalog
from .server import HOST, BenchServer

_LOGGER = logging.getLogger("tools.bench.satellite")

ANSWER = (
    "I checked the weather for you, and it will be sunny and warm tomorrow afternoon. "
    "In the evening some clouds come in from the west. Take an umbrella if you go out late."
)
"""An assistant's answer: a first sentence of 16 words with a clause, then two shorter ones."""
DEFAULT_PACES = (15.0, 40.0)
"""Words a second an LLM writes, slow and fast (issue 31)."""
CHUNK_CHARS = (3, 12)
"""Home Assistant's chunks are not on word boundaries: 3 to 12 characters each."""
WARM_UPS = 2
"""Untimed requests per voice and server: the first loads the model, the second is the first
the server knows the model's speed for."""
DEFAULT_RUNS = 3
DEFAULT_MODELS_DIR = Path(__file__).resolve().parents[2] / "local" / "benchmark-models"


@dataclass
class Heard:
    """One request as a listener playing at real time from its first chunk hears it."""

    sent: float
    """When the first text chunk went out."""
    sentence_sent: float = 0.0
    """When the chunk that completes the first sentence went out."""
    first_audio: float | None = None
    playing_until: float = 0.0
    in_piece: list[float] = field(default_factory=list)
    """Seconds the listener ran dry inside an audio cycle (mid-piece)."""
    between: list[float] = field(default_factory=list)
    """Seconds it waited between cycles."""
    new_cycle: bool = True
    """No chunk of the current audio cycle heard yet: a wait now falls between pieces."""

    def event(self, event: Event, arrived: float) -> None:
        """Follow one event from the server."""
        if event.type == "audio-start":
            self.new_cycle = True
        elif AudioChunk.is_type(event.type):
            chunk = AudioChunk.from_event(event)
            seconds = len(chunk.audio) / (chunk.width * chunk.channels * chunk.rate)
            if self.first_audio is None:
                self.first_audio = self.playing_until = arrived
            elif arrived > self.playing_until:
                waited = arrived - self.playing_until
                (self.between if self.new_cycle else self.in_piece).append(waited)
                self.playing_until = arrived
            self.new_cycle = False
            self.playing_until += seconds


def chunks_of(text: str, rng: random.Random) -> list[str]:
    """The text cut as Home Assistant passes an LLM's output on: 3 to 12 characters a chunk."""
    chunks, start = [], 0
    while start < len(text):
        end = start + rng.randint(*CHUNK_CHARS)
        chunks.append(text[start:end])
        start = end
    return chunks


async def streamed_answer(port: int, voice: str, words_per_second: float, seed: int) -> Heard:
    """Stream `ANSWER` at `words_per_second` to `voice` and listen to what comes back."""
    rng = random.Random(seed)
    chunks = chunks_of(ANSWER, rng)
    chars_per_second = words_per_second * len(ANSWER) / len(ANSWER.split())
    first_sentence_end = ANSWER.index(". ") + 1
    async with AsyncTcpClient(HOST, port) as client:
        heard = Heard(sent=time.monotonic())
        request_voice = SynthesizeVoice(voice)
        await client.write_event(SynthesizeStart(voice=request_voice).event())

        async def write_text() -> None:
            written = 0
            for chunk in chunks:
                await client.write_event(SynthesizeChunk(text=chunk).event())
                written += len(chunk)
                if not heard.sentence_sent and written >= first_sentence_end:
                    heard.sentence_sent = time.monotonic()
                await asyncio.sleep(len(chunk) / chars_per_second)
            await client.write_event(Synthesize(text=ANSWER, voice=request_voice).event())
            await client.write_event(SynthesizeStop().event())

        writer = asyncio.create_task(write_text())
        while True:
            event = await asyncio.wait_for(client.read_event(), READ_TIMEOUT)
            if event is None or event.type == "error":
                writer.cancel()
                raise RuntimeError(f"{voice}: {event.data if event else 'closed'}")
            heard.event(event, time.monotonic())
            if event.type == "synthesize-stopped":
                break
        await writer
    return heard


@dataclass(frozen=True)
class Row:
    """One voice at one pace, on one server: medians over the runs."""

    voice: str
    engine: str
    hold: bool
    words_per_second: float
    first_audio_s: float
    after_sentence_s: float
    in_piece_stalls: float
    in_piece_longest_s: float
    in_piece_total_s: float
    between_total_s: float


def summarize(voice: str, engine: str, hold: bool, pace: float, heard: list[Heard]) -> Row:
    """The medians of what the listener heard over the runs."""
    first = [h.first_audio - h.sent for h in heard if h.first_audio is not None]
    after = [h.first_audio - h.sentence_sent for h in heard if h.first_audio is not None]
    return Row(
        voice=voice,
        engine=engine,
        hold=hold,
        words_per_second=pace,
        first_audio_s=statistics.median(first),
        after_sentence_s=statistics.median(after),
        in_piece_stalls=statistics.median(len(h.in_piece) for h in heard),
        in_piece_longest_s=statistics.median(max(h.in_piece, default=0.0) for h in heard),
        in_piece_total_s=statistics.median(sum(h.in_piece) for h in heard),
        between_total_s=statistics.median(sum(h.between) for h in heard),
    )


async def measure_server(
    port: int, voices: dict[str, tuple[str, str]], paces: Sequence[float], runs: int, hold: bool
) -> list[Row]:
    """Warm every voice up, then `runs` streamed answers at each pace: a row per voice and
    pace."""
    rows = []
    for model, (voice, engine) in voices.items():
        for warm_up in range(WARM_UPS):
            _LOGGER.info("%s (%s): warm-up %d of %d", voice, model, warm_up + 1, WARM_UPS)
            await streamed_answer(port, voice, max(paces), seed=-1 - warm_up)
        for pace in paces:
            heard = []
            for run in range(runs):
                heard.append(await streamed_answer(port, voice, pace, seed=run))
                _LOGGER.info(
                    "%s at %g words/s, hold %s: first audio %.2f s, %d stalls in pieces",
                    voice,
                    pace,
                    hold,
                    (heard[-1].first_audio or 0) - heard[-1].sent,
                    len(heard[-1].in_piece),
                )
            rows.append(summarize(voice, engine, hold, pace, heard))
    return rows


def render(rows: list[Row], runs: int, threads: int, options: dict[str, object]) -> str:
    """The Markdown table of `rows`, with the machine and settings they were measured with."""
    machine = describe_machine()
    lines = [
        f"Voice satellites: {machine.cpu}, {machine.cores} cores, --threads {threads}, "
        f"options {options or 'as in the catalog'}; medians of {runs} runs; load average at "
        f"the end {load_average()[0]:.2f}.",
        "",
        "| voice (engine) | hold | words/s | first audio after the first chunk s | after the "
        "first sentence s | stalls in a piece | longest s | in pieces s | between pieces s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row.voice} ({row.engine}) | {'on' if row.hold else 'off'} | "
            f"{row.words_per_second:g} | {row.first_audio_s:.2f} | {row.after_sentence_s:.2f} | "
            f"{row.in_piece_stalls:g} | {row.in_piece_longest_s:.2f} | "
            f"{row.in_piece_total_s:.2f} | {row.between_total_s:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> None:
    """Parse the command line, build or reuse the models, measure, print the table."""
    parser = argparse.ArgumentParser(prog="script/benchmark --satellite")
    parser.add_argument("--full-size", action="store_true", help="full-size random models")
    parser.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR)
    parser.add_argument("--engine", action="append", choices=BENCHMARKED_ENGINES)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--words-per-second", type=float, action="append", help="LLM pace (default: 15 and 40)"
    )
    parser.add_argument("--max-tokens", type=int, default=140, help="tokens a piece, at most")
    parser.add_argument("--max-frames", type=int, default=20, help="Qwen3-TTS frames a piece")
    parser.add_argument(
        "--no-hold-too", action="store_true", help="also run a server with --no-hold-audio"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a catalog option of every model, the value read as YAML (e.g. matrix_type=q4_k)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    engines = tuple(args.engine or BENCHMARKED_ENGINES)
    size = "full-size" if args.full_size else "tiny"
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="wyoming-multitts-satellite-") as tmp:
        work = Path(tmp)
        models_dir = args.models_dir if args.full_size else work / "models"
        source = ensure_models(size, models_dir, args.threads, engines)
        options = {
            name: yaml.safe_load(value)
            for name, _, value in (option.partition("=") for option in args.option)
        }
        catalog = write_bench_catalog(
            source, work / "voices.yaml", args.max_tokens, args.max_frames, options
        )
        chosen = benchmarked_voices(catalog, 1, engines)
        voices = {
            model: (names[0], catalog.models[model].engine) for model, names in chosen.items()
        }
        for hold in (True, False) if args.no_hold_too else (True,):
            flags = ["--threads", str(args.threads)] + ([] if hold else ["--no-hold-audio"])
            server = BenchServer(catalog.path, flags, work / f"server-hold-{hold}.log")
            try:
                rows += asyncio.run(
                    measure_server(
                        server.port,
                        voices,
                        args.words_per_second or DEFAULT_PACES,
                        args.runs,
                        hold,
                    )
                )
            finally:
                server.stop()
    print(render(rows, args.runs, args.threads, options), end="")
