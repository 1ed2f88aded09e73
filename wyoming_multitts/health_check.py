"""Container health check: `python -m wyoming_multitts.health_check [--uri URI] [--timeout S]`.

Sends `describe` over the Wyoming protocol and waits for `info`, as Home Assistant does when it
sets the server up. A connect-only check would pass while the event loop is wedged; a round trip
does not. Exit status 0 when the info lists a TTS program, 1 otherwise, with one line on stdout
for `docker inspect` either way. Imports only the `wyoming` library: it runs every minute and must
not load numpy, torch or llama.cpp.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import NoReturn
from urllib.parse import urlparse

from wyoming.client import AsyncClient
from wyoming.info import Describe, Info

DEFAULT_URI = "tcp://127.0.0.1:10200"
"""The server's port inside the container (`__main__.DEFAULT_URI` listens on it)."""
DEFAULT_TIMEOUT = 15.0
"""Seconds for connecting, sending `describe` and reading `info` together."""
SCHEMES = ("tcp", "unix")


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and exit status 1: Docker reserves status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"unhealthy: {message}")
        sys.exit(1)


class UnhealthyError(Exception):
    """The server did not answer `describe` with a usable `info`; the message says why."""


async def describe(uri: str) -> Info:
    """Connect to `uri`, send `describe` and return the `info` it answers with."""
    async with AsyncClient.from_uri(uri) as client:
        await client.write_event(Describe().event())
        while True:
            event = await client.read_event()
            if event is None:
                raise UnhealthyError("closed the connection without answering describe")
            if Info.is_type(event.type):
                try:
                    return Info.from_event(event)
                except (KeyError, TypeError, ValueError) as err:
                    raise UnhealthyError(f"sent an info that cannot be read: {err!r}") from err


def check(uri: str, timeout: float) -> str:
    """What the healthy server offers, in a few words; raises `UnhealthyError`."""
    try:
        info = asyncio.run(asyncio.wait_for(describe(uri), timeout))
    except (asyncio.TimeoutError, TimeoutError) as err:
        raise UnhealthyError(f"no info within {timeout:g} s") from err
    except OSError as err:
        raise UnhealthyError(f"cannot connect: {err.strerror or err}") from err
    if not info.tts:
        raise UnhealthyError("its info has no tts program")
    program = info.tts[0]
    voices = sum(len(p.voices) for p in info.tts)
    return f"{program.name} {program.version or ''}".rstrip() + f", {voices} voices"


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, check once, print one line; the exit status for Docker."""
    parser = _OneLineParser(
        prog="python -m wyoming_multitts.health_check",
        description="Exit 0 if a Wyoming TTS server answers describe, else 1.",
    )
    parser.add_argument(
        "--uri", default=DEFAULT_URI, help=f"tcp:// or unix:// (default {DEFAULT_URI})"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds for the whole round trip (default {DEFAULT_TIMEOUT:g})",
    )
    args = parser.parse_args(argv)
    if urlparse(args.uri).scheme not in SCHEMES or args.timeout <= 0:
        parser.error("--uri must be tcp://HOST:PORT or unix://PATH, --timeout above 0")
    try:
        print(f"healthy: {args.uri}: {check(args.uri, args.timeout)}")
    except (UnhealthyError, ValueError) as err:
        print(f"unhealthy: {args.uri}: {err}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
