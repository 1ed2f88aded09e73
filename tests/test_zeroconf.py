"""`--zeroconf`: the server advertises `_wyoming._tcp.local.` with the machine's LAN address
(not the 0.0.0.0 it binds to) and withdraws it on shutdown. mDNS stays on the loopback interface."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from zeroconf import ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from wyoming_multitts.discovery import SERVICE_TYPE, lan_address

from .conftest import free_port, start_server

LOOPBACK = "127.0.0.1"
SERVICE_NAME = f"multitts-test-{free_port()}"  # unique per run


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
