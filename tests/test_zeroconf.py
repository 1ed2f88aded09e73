"""`--zeroconf`: the server advertises `_wyoming._tcp.local.` with the machine's LAN address
(not the 0.0.0.0 it binds to) and withdraws it on shutdown; a taken name is renamed, hostname and
IPv6 hosts are advertised by address, and a failure to advertise does not stop the server.
Real zeroconf throughout; mDNS stays on the loopback interface."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import AsyncIterator

import pytest
from zeroconf import ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from wyoming_multitts.discovery import (
    SERVICE_TYPE,
    Advertisement,
    lan_address,
    lan_address_v6,
)

from .conftest import free_port, start_server

LOOPBACK = "127.0.0.1"
SERVICE_NAME = f"multitts-test-{free_port()}"  # unique per run
RESOLVE_TIMEOUT_MS = 3000
"""How long a browser-side resolve may take (answers on loopback come in milliseconds)."""
BROWSE_TIMEOUT = 10.0
"""Seconds to wait for a browser to see a service appear."""
UNUSABLE_INTERFACE = "203.0.113.77"
"""TEST-NET-3 address that no interface has: zeroconf cannot open its mDNS sockets on it."""


async def test_zeroconf_advertises_the_lan_address_and_withdraws_it(
    tiny_models: Path, tmp_path: Path
) -> None:
    changes: asyncio.Queue[tuple[str, ServiceStateChange]] = asyncio.Queue()

    def on_change(
        zeroconf: object, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        changes.put_nowait((name, state_change))

    browser_zc = AsyncZeroconf(interfaces=[LOOPBACK])
    browser = AsyncServiceBrowser(browser_zc.zeroconf, SERVICE_TYPE, handlers=[on_change])
    server = start_server(
        tiny_models / "voices.yaml",
        tmp_path,
        "--zeroconf",
        SERVICE_NAME,
        "--zeroconf-interface",
        LOOPBACK,
        bind="0.0.0.0",
    )
    full_name = f"{SERVICE_NAME}.{SERVICE_TYPE}"
    try:
        while True:
            name, change = await asyncio.wait_for(changes.get(), timeout=30)
            if name == full_name and change is ServiceStateChange.Added:
                break
        info = AsyncServiceInfo(SERVICE_TYPE, full_name)
        assert await info.async_request(browser_zc.zeroconf, 5000)
        assert info.port == server.port
        addresses = [socket.inet_ntoa(a) for a in info.addresses]
        assert addresses == [lan_address()] and "0.0.0.0" not in addresses, server.log()

        assert server.stop() == 0  # SIGTERM: a clean shutdown unregisters
        while True:
            name, change = await asyncio.wait_for(changes.get(), timeout=30)
            if name == full_name and change is ServiceStateChange.Removed:
                break
    finally:
        server.stop()
        await browser.async_cancel()
        await browser_zc.async_close()


@pytest.fixture
async def browser_zc() -> AsyncIterator[AsyncZeroconf]:
    """A Home-Assistant-like mDNS client on the loopback interface."""
    zc = AsyncZeroconf(interfaces=[LOOPBACK])
    try:
        yield zc
    finally:
        await zc.async_close()


async def resolve(zc: AsyncZeroconf, name: str) -> AsyncServiceInfo:
    """Resolve a service instance over the network, as Home Assistant does after browsing it."""
    info = AsyncServiceInfo(SERVICE_TYPE, name)
    assert await info.async_request(zc.zeroconf, RESOLVE_TIMEOUT_MS), f"{name} did not resolve"
    return info


async def test_a_taken_name_is_changed_and_both_services_are_found(
    browser_zc: AsyncZeroconf, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"multitts-dup-{free_port()}"
    first = Advertisement(name, free_port(), LOOPBACK, [LOOPBACK])
    second = Advertisement(name, free_port(), LOOPBACK, [LOOPBACK])
    seen: set[str] = set()
    both_seen = asyncio.Event()

    def on_change(
        zeroconf: object, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        if state_change is ServiceStateChange.Added:
            seen.add(name)
            if {first.info.name, second.info.name} <= seen:
                both_seen.set()

    browser = AsyncServiceBrowser(browser_zc.zeroconf, SERVICE_TYPE, handlers=[on_change])
    try:
        await first.start()
        with caplog.at_level(logging.WARNING, logger="wyoming_multitts.discovery"):
            await second.start()  # used to raise NonUniqueNameException
        assert first.registered and second.registered
        assert first.info.name == f"{name}.{SERVICE_TYPE}"
        assert second.info.name != first.info.name
        assert second.info.name.startswith(name) and second.info.name.endswith(SERVICE_TYPE)
        assert second.info.name in caplog.text  # the name actually registered is logged

        await asyncio.wait_for(both_seen.wait(), BROWSE_TIMEOUT)
        for advertisement in (first, second):
            info = await resolve(browser_zc, advertisement.info.name)
            assert info.port == advertisement.info.port
            assert info.parsed_addresses() == [LOOPBACK]
    finally:
        await browser.async_cancel()
        await second.close()
        await first.close()


async def advertise_and_resolve(zc: AsyncZeroconf, host: str, expected: list[str]) -> None:
    """Advertise for the `--uri` host, check the addresses registered and those a client sees."""
    advertisement = Advertisement(f"multitts-host-{free_port()}", free_port(), host, [LOOPBACK])
    try:
        await advertisement.start()  # used to raise: inet_aton on a hostname or IPv6 address
        assert advertisement.registered, host
        assert sorted(advertisement.info.parsed_addresses()) == sorted(expected), host
        info = await resolve(zc, advertisement.info.name)  # AAAA records too, over IPv4 mDNS
        assert sorted(info.parsed_addresses()) == sorted(expected), host
    finally:
        await advertisement.close()


async def test_hostname_and_ipv6_hosts_are_advertised_by_address(browser_zc: AsyncZeroconf) -> None:
    localhost = {str(sockaddr[0]) for *_, sockaddr in socket.getaddrinfo("localhost", None)}
    assert LOOPBACK in localhost  # and ::1 where /etc/hosts says so
    cases = {
        "localhost": sorted(localhost),
        "::1": ["::1"],
        "fe80::1%lo": ["fe80::1"],  # urlparse keeps the scope of tcp://[fe80::1%lo]:10200
        "::": [lan_address(), *filter(None, [lan_address_v6()])],  # all interfaces: the LAN's
    }
    # concurrently: each registration spends about a second probing for name conflicts
    await asyncio.gather(
        *(advertise_and_resolve(browser_zc, host, expected) for host, expected in cases.items())
    )


async def test_a_failure_to_advertise_is_a_warning_not_a_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    advertisement = Advertisement(
        f"multitts-fail-{free_port()}", free_port(), LOOPBACK, [UNUSABLE_INTERFACE]
    )
    with caplog.at_level(logging.WARNING, logger="wyoming_multitts.discovery"):
        await advertisement.start()  # used to raise OSError (in the constructor, even)
    assert not advertisement.registered
    assert "cannot advertise" in caplog.text and "OSError" in caplog.text, caplog.text
    await advertisement.close()
    await advertisement.close()  # safe, twice
