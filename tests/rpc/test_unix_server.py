"""UnixServer binding: the socket never exists at its path with a mode wider than asked."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from asyncinotify import Inotify, Mask
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nodeagent.rpc.server import UnixServer, channel

pytestmark = pytest.mark.rpc


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 000, the case where a socket bound at its path starts as 0777."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


async def test_socket_appears_with_its_final_mode(short_dir: Path, open_umask: None) -> None:
    path = short_dir / "admin.sock"
    server = UnixServer(path, [], mode=0o600)
    with Inotify() as inotify:
        inotify.add_watch(short_dir, Mask.CREATE | Mask.MOVED_TO | Mask.ATTRIB)
        await server.start()
        try:
            assert (path.stat().st_mode & 0o777) == 0o600
            assert os.listdir(short_dir) == ["admin.sock"]  # the private bind folder is gone
            ch = channel(path)
            reply = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
            await ch.close(None)
        finally:
            await server.stop(0)
        events = []
        with contextlib.suppress(TimeoutError):  # the events are queued already: no real wait
            while True:
                events.append(await asyncio.wait_for(inotify.get(), 0.5))
    at_path = [ev.mask for ev in events if ev.name is not None and str(ev.name) == "admin.sock"]
    # Created elsewhere and renamed in: never created (then chmodded) at its path.
    assert at_path and all(Mask.CREATE not in m and Mask.ATTRIB not in m for m in at_path), at_path
    assert any(Mask.MOVED_TO in m for m in at_path)
