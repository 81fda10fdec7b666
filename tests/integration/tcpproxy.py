"""A TCP proxy for tests, on asyncio in a thread of its own, that can stop forwarding without closing.

Why: a network that breaks does not always say so. A NAT or firewall that loses a connection's
state, or a host that freezes, leaves both ends with an open socket and no bytes: no RST, no FIN.
`blackhole()` does that to every connection open now and to every new one until `restore()`: the
proxy keeps accepting and reading, and forwards nothing, never closing. After `restore()` new
connections are forwarded again while the black-holed ones stay silent for ever (half-open), as
after a NAT table flush.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

CHUNK = 65536


class BlackholeProxy:
    """127.0.0.1:port -> target_host:target_port."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._generation = 0  # connections of an older generation than `_dead_before` are black-holed
        self._dead_before = -1
        self._holed = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._stopping = asyncio.Event()  # ends the black holes at stop()
        self.port = 0
        self.connections = 0

    def start(self) -> None:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(10)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def blackhole(self) -> None:
        """From now on nothing is forwarded, on open connections or new ones; nothing is closed."""
        self._loop.call_soon_threadsafe(self._set_holed, True)

    def restore(self) -> None:
        """New connections are forwarded again; those open during the black hole stay silent."""
        self._loop.call_soon_threadsafe(self._set_holed, False)

    def _set_holed(self, holed: bool) -> None:
        if holed:
            self._dead_before = self._generation + 1
        self._holed = holed
        self._generation += 1

    def _alive(self, generation: int) -> bool:
        return not self._holed and generation >= self._dead_before

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        generation = self._generation
        self._writers.add(writer)
        try:
            if not self._alive(generation):
                await self._swallow(reader)  # accepted, read, never answered, never closed
                return
            up_reader, up_writer = await asyncio.open_connection(*self._target)
            self._writers.add(up_writer)
            await asyncio.gather(self._pump(reader, up_writer, generation), self._pump(up_reader, writer, generation))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _swallow(self, reader: asyncio.StreamReader) -> None:
        while await reader.read(CHUNK):
            pass
        await self._stopping.wait()  # the peer closed its side: still no answer, no close from here

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, generation: int) -> None:
        while True:
            data = await reader.read(CHUNK)
            if not self._alive(generation):
                await self._swallow(reader)
                return
            if not data:
                with contextlib.suppress(OSError):
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            self._stopping.set()
            for w in list(self._writers):
                w.transport.abort()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            await asyncio.wait(tasks, timeout=5) if tasks else None

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@contextlib.contextmanager
def blackhole_proxy(target_host: str, target_port: int) -> Iterator[BlackholeProxy]:
    proxy = BlackholeProxy(target_host, target_port)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
