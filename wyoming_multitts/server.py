"""Accepting connections: `tcp://` (IPv4, IPv6 or a host name), `unix://` and `stdio://`, at most
`max_connections` at once and `max_per_address` from one address, and a graceful stop.

When either limit is reached, the connection idle longest (of the server, or of that address)
is closed to let the new one in, so that Home Assistant and the health check always get in even
when other clients hold every slot open doing nothing. Only when no connection has been idle
for `MIN_IDLE_TO_CLOSE` (all busy speaking, or just opened) is the newcomer refused.

We do this rather than use `wyoming.server.AsyncServer` because a server for unknown clients
needs a connection limit, and a stop that lets requests in flight finish (SIGTERM from Docker or
the Home Assistant Supervisor) before the model workers are stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from typing import Callable
from urllib.parse import urlparse

from wyoming.error import Error
from wyoming.event import async_get_stdin, async_write_event

from .handler import CLIENT_WARNINGS, SynthesisHandler

_LOGGER = logging.getLogger(__name__)

REFUSAL_SECONDS = 1.0
"""How long telling a refused client why may take."""
CLOSE_SECONDS = 5.0
"""How long handlers may take to close after they were told to stop."""
SEND_BUFFER_BYTES = 64 * 1024
"""Kernel send buffer per connection (Linux doubles it: ~2.7 s of 24 kHz audio). Left alone it
grows to megabytes on a fast link, so a client that reads nothing would swallow half a minute
of audio before backpressure (and `--client-timeout`) could notice."""

MIN_IDLE_TO_CLOSE = 0.5
"""Seconds a connection must have been idle before it is closed for a newcomer: one opened a
moment ago is about to speak (a burst of describes, Home Assistant's next request)."""

HandlerFactory = Callable[[asyncio.StreamReader, asyncio.StreamWriter], SynthesisHandler]


class Listener:
    """Serves `uri` with one handler per connection until `stopping` is set."""

    def __init__(
        self,
        uri: str,
        make_handler: HandlerFactory,
        max_connections: int,
        max_per_address: int,
    ) -> None:
        self._uri = urlparse(uri)
        if self._uri.scheme not in ("tcp", "unix", "stdio"):
            raise ValueError(f"--uri {uri}: use tcp://HOST:PORT, unix://PATH or stdio://")
        if self._uri.scheme == "tcp" and (self._uri.hostname is None or self._uri.port is None):
            raise ValueError(f"--uri {uri}: a tcp:// URI needs a host and a port")
        self._make_handler = make_handler
        self._max_connections = max_connections
        self._max_per_address = max_per_address
        self._handlers: dict[asyncio.Task[None], SynthesisHandler] = {}
        self._addresses: dict[asyncio.Task[None], str] = {}
        """The client address of each TCP connection (unix and stdio ones have none)."""

    async def serve(self, stopping: asyncio.Event, grace: float) -> None:
        """Accept connections until `stopping` is set; then stop accepting, give requests in
        flight `grace` seconds to finish, and close every connection."""
        if self._uri.scheme == "stdio":
            await self._serve_stdio(stopping)
        else:
            server = await self._listen()
            async with server:
                await stopping.wait()
                server.close()  # stop accepting; open connections stay
        await self._stop_handlers(grace)

    async def _listen(self) -> asyncio.AbstractServer:
        if self._uri.scheme == "unix":
            return await asyncio.start_unix_server(self._accept, path=self._uri.path)
        return await asyncio.start_server(
            self._accept, host=self._uri.hostname, port=self._uri.port
        )

    async def _serve_stdio(self, stopping: asyncio.Event) -> None:
        """One connection over stdin/stdout (e.g. a parent process speaking Wyoming)."""
        reader = await async_get_stdin()
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        task = self._run_handler(reader, writer)
        stop_wait = asyncio.create_task(stopping.wait())
        await asyncio.wait({task, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else None
        same_address = [task for task, other in self._addresses.items() if other == address]
        if address is not None and len(same_address) >= self._max_per_address:
            limit = f"{self._max_per_address} connections from {address}"
            if not await self._make_room(same_address, limit, "--max-connections-per-address"):
                await _refuse(writer, limit, "--max-connections-per-address")
                return
        elif len(self._handlers) >= self._max_connections:
            limit = f"{self._max_connections} connections"
            if not await self._make_room(list(self._handlers), limit, "--max-connections"):
                await _refuse(writer, limit, "--max-connections")
                return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        task = self._run_handler(reader, writer)
        if address is not None:
            self._addresses[task] = address

    async def _make_room(self, among: list[asyncio.Task[None]], limit: str, option: str) -> bool:
        """Close the connection idle longest of `among`; False when every one is busy."""
        idle = {
            task: self._handlers[task].idle_seconds() for task in among if task in self._handlers
        }
        victim = max(idle, key=idle.__getitem__, default=None)
        if victim is None or idle[victim] < MIN_IDLE_TO_CLOSE:
            return False
        _LOGGER.info(
            "Closing a connection idle for %.0f s to let a new one in (%s, %s)",
            idle[victim],
            limit,
            option,
        )
        await self._handlers[victim].stop()
        self._forget(victim)
        return True

    def _run_handler(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> asyncio.Task[None]:
        handler = self._make_handler(reader, writer)
        task = asyncio.create_task(handler.run(), name="wyoming connection")
        self._handlers[task] = handler
        task.add_done_callback(self._forget)
        return task

    def _forget(self, task: asyncio.Task[None]) -> None:
        self._handlers.pop(task, None)
        self._addresses.pop(task, None)

    async def _stop_handlers(self, grace: float) -> None:
        if not self._handlers:
            return
        _LOGGER.info(
            "Stopping: letting %d connection(s) finish their requests (up to %g s)",
            len(self._handlers),
            grace,
        )
        handlers = dict(self._handlers)
        await asyncio.gather(*(handler.finish(grace) for handler in handlers.values()))
        await asyncio.wait(handlers, timeout=CLOSE_SECONDS)


async def _refuse(writer: asyncio.StreamWriter, limit: str, option: str) -> None:
    """Tell a client there is no room (every connection busy speaking), then close."""
    CLIENT_WARNINGS.warn(writer, "Refusing a connection: %s are open and busy (%s)", limit, option)
    refusal = Error(
        text=f"the server has {limit} open and busy, its limit ({option}); try again shortly",
        code="server-busy",
    )
    with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
        await asyncio.wait_for(async_write_event(refusal.event(), writer), REFUSAL_SECONDS)
    writer.close()
