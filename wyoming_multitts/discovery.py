"""Zeroconf (mDNS) advertisement of the server as `_wyoming._tcp.local.` for Home Assistant.

We do this ourselves rather than through `wyoming.zeroconf.HomeAssistantZeroconf` because that
class advertises 0.0.0.0 when given the bind address of `tcp://0.0.0.0:…` and cannot unregister.
"""

from __future__ import annotations

import logging
import socket

from zeroconf import InterfaceChoice
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

_LOGGER = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
"""What Home Assistant's Wyoming integration browses for."""
MDNS_GROUP = "224.0.0.251"
"""mDNS multicast group; "connecting" a UDP socket to it reveals the LAN address (sends nothing)."""
UNSPECIFIED_HOSTS = ("", "0.0.0.0", "::")


def lan_address() -> str:
    """The IPv4 address this machine uses on its LAN (127.0.0.1 when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((MDNS_GROUP, 1))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


class Advertisement:
    """One registered service; `close` unregisters it (Home Assistant then forgets it)."""

    def __init__(self, name: str, port: int, host: str, interfaces: list[str] | None) -> None:
        address = lan_address() if host in UNSPECIFIED_HOSTS else host
        self.info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{name}.{SERVICE_TYPE}",
            addresses=[socket.inet_aton(address)],
            port=port,
            server=f"{name}.local.",
        )
        self._zeroconf = AsyncZeroconf(interfaces=interfaces or InterfaceChoice.All)

    async def start(self) -> None:
        """Register the service."""
        await self._zeroconf.async_register_service(self.info)
        _LOGGER.info(
            "Zeroconf: advertising %s at %s:%s",
            self.info.name,
            socket.inet_ntoa(self.info.addresses[0]),
            self.info.port,
        )

    async def close(self) -> None:
        """Unregister the service and stop answering mDNS."""
        await self._zeroconf.async_unregister_all_services()
        await self._zeroconf.async_close()
