"""Zeroconf (mDNS) advertisement of the server as `_wyoming._tcp.local.` for Home Assistant.

We do this ourselves rather than through `wyoming.zeroconf.HomeAssistantZeroconf` because that
class advertises 0.0.0.0 when given the bind address of `tcp://0.0.0.0:…` and cannot unregister.

Advertising is best effort: the server works without it (Home Assistant can still add it by host
and port), so a failure to register is logged as a warning instead of stopping startup.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket

import zeroconf
from zeroconf import InterfaceChoice
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

_LOGGER = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
"""What Home Assistant's Wyoming integration browses for."""
MDNS_GROUP = "224.0.0.251"
"""mDNS multicast group; "connecting" a UDP socket to it reveals the LAN address (sends nothing)."""
MDNS_GROUP_V6 = "ff05::fb"
"""Site-scoped IPv6 mDNS group, the same trick for IPv6 (link scope ff02:: needs an interface)."""
UNSPECIFIED_IPV4_HOSTS = ("", "0.0.0.0")
"""Bind hosts meaning "all IPv4 interfaces": advertise the LAN address instead."""
UNSPECIFIED_IPV6_HOST = "::"
"""Bind host meaning "all interfaces" (IPv6, usually dual stack): advertise both LAN addresses."""
RESOLVE_TIMEOUT = 10.0
"""Seconds a hostname in `--uri` may take to resolve before we give up advertising."""
ADVERTISE_ERRORS = (OSError, asyncio.TimeoutError, ValueError, zeroconf.Error)
"""What registering may raise for reasons of the network or host (not bugs): we keep serving.
OSError covers DNS failures (gaierror); TimeoutError a slow resolver; ValueError a bad interface."""


def lan_address() -> str:
    """The IPv4 address this machine uses on its LAN (127.0.0.1 when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((MDNS_GROUP, 1))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def lan_address_v6() -> str | None:
    """The routable IPv6 address this machine uses on its LAN, or None when it has none.

    Link-local addresses are left out: without their interface they are not reachable.
    """
    if not socket.has_ipv6:
        return None
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.connect((MDNS_GROUP_V6, 1))
            address = ipaddress.IPv6Address(str(probe.getsockname()[0]).split("%")[0])
    except (OSError, ValueError):
        return None
    if address.is_link_local or address.is_loopback or address.is_unspecified:
        return None
    return str(address)


async def advertised_addresses(host: str) -> list[str]:
    """The addresses to advertise for the `--uri` host, in order, without duplicates.

    An unspecified bind address becomes the LAN address(es); an IP literal (v4 or v6, an IPv6
    scope such as `%eth0` dropped) is taken as is; a hostname is resolved without blocking the
    event loop, as the server binds to every address it resolves to.
    """
    if host in UNSPECIFIED_IPV4_HOSTS:
        return [lan_address()]
    if host == UNSPECIFIED_IPV6_HOST:
        v6 = lan_address_v6()
        return [lan_address()] + ([v6] if v6 else [])
    try:
        return [str(ipaddress.ip_address(host.split("%")[0]))]
    except ValueError:
        pass  # a hostname
    loop = asyncio.get_running_loop()
    infos = await asyncio.wait_for(
        loop.getaddrinfo(host, None, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT
    )
    addresses: list[str] = []
    for family, _type, _proto, _canonname, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            address = str(ipaddress.ip_address(str(sockaddr[0]).split("%")[0]))
            if address not in addresses:
                addresses.append(address)
    if not addresses:
        raise OSError(f"{host!r} resolves to no IPv4 or IPv6 address")
    return addresses


class Advertisement:
    """One registered service; `close` unregisters it (Home Assistant then forgets it).

    `info.name` is the name actually registered: zeroconf renames on a conflict (`name-2`, …).
    """

    def __init__(self, name: str, port: int, host: str, interfaces: list[str] | None) -> None:
        self._host = host
        self._interfaces = interfaces
        # no addresses yet: `start` fills them in (resolving a hostname must not block the loop)
        self.info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{name}.{SERVICE_TYPE}",
            port=port,
            server=f"{name}.local.",
        )
        self._zeroconf: AsyncZeroconf | None = None
        self._registered = False

    @property
    def registered(self) -> bool:
        """Whether `start` registered the service (it is not when advertising failed)."""
        return self._registered

    async def start(self) -> None:
        """Register the service, renaming it if the name is taken; on failure, warn and go on."""
        requested = self.info.name
        try:
            self.info.addresses = [
                ipaddress.ip_address(a).packed for a in await advertised_addresses(self._host)
            ]
            self._zeroconf = AsyncZeroconf(interfaces=self._interfaces or InterfaceChoice.All)
            await self._zeroconf.async_register_service(self.info, allow_name_change=True)
            self._registered = True
        except ADVERTISE_ERRORS as err:
            _LOGGER.warning(
                "Zeroconf: cannot advertise %s for host %r (%s: %s); serving without it, "
                "add the server in Home Assistant by host and port",
                requested,
                self._host,
                type(err).__name__,
                err,
            )
            await self.close()
            return
        if self.info.name != requested:
            _LOGGER.warning(
                "Zeroconf: name %s is taken on the network; advertising as %s instead",
                requested,
                self.info.name,
            )
        _LOGGER.info(
            "Zeroconf: advertising %s at %s port %s",
            self.info.name,
            ", ".join(self.info.parsed_addresses()),
            self.info.port,
        )

    async def close(self) -> None:
        """Unregister the service and stop answering mDNS; safe if `start` failed or never ran."""
        zc, self._zeroconf = self._zeroconf, None
        self._registered = False
        if zc is None:
            return
        try:
            await zc.async_unregister_all_services()
        finally:
            await zc.async_close()
