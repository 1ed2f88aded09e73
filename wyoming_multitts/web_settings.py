"""The web page's flags (`--web`, `--web-host`, `--web-allow`), apart from `web.py` so that
parsing the command line imports neither aiohttp nor numpy (`__main__` sizes the thread pools
before numpy loads)."""

from __future__ import annotations

import argparse
import ipaddress
from dataclasses import dataclass

DEFAULT_HOST = "127.0.0.1"
DEFAULT_ALLOWED = ("127.0.0.0/8", "::1/128")
"""Client addresses answered when `--web-allow` is not given: this machine only."""


@dataclass(frozen=True)
class WebSettings:
    """Where the page listens and whom it answers."""

    port: int
    host: str = DEFAULT_HOST
    allowed: tuple[str, ...] = DEFAULT_ALLOWED
    """Client addresses or networks (`192.168.1.0/24`) the page answers."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The page's flags."""
    group = parser.add_argument_group("web page", "voices, downloads and your own voices")
    group.add_argument("--web", type=int, metavar="PORT", help="serve the web page on PORT")
    group.add_argument(
        "--web-host",
        default=DEFAULT_HOST,
        help="address the page listens on (default: %(default)s)",
    )
    group.add_argument(
        "--web-allow",
        action="append",
        metavar="ADDRESS",
        help="client address or network the page answers (repeatable; default: this machine)",
    )


def settings_from(args: argparse.Namespace, parser: argparse.ArgumentParser) -> WebSettings | None:
    """The page's settings from parsed flags (None: no page); bad ones stop the start."""
    if args.web is None:
        return None
    allowed = tuple(args.web_allow or DEFAULT_ALLOWED)
    for network in allowed:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            parser.error(f"--web-allow {network!r} is not an address or network like 10.0.0.0/8")
    if not 0 < args.web < 65536:
        parser.error("--web must be a port number (1-65535)")
    return WebSettings(args.web, args.web_host, allowed)
