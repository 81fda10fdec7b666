"""UnixServer through a shared BindDir, and what a served socket costs the event loop.

BindDir (rpc/server.py): many sockets bound in one private directory and renamed into place, so
a thousand nodes' sockets cost no directory each; the socket still never exists at its path with
a wider mode. Served services are dispatched by their generic handlers only: the aio server keeps
a task (and a requested call) per registered method, which made a socket cost 42 KiB, not 16.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import grpc
import pytest
from asyncinotify import Inotify, Mask
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from nodeagent.apis.podresources.v1 import api_pb2, api_pb2_grpc
from nodeagent.rpc.server import BindDir, Service, UnixServer, channel

pytestmark = pytest.mark.rpc


class _Lister(api_pb2_grpc.PodResourcesListerServicer):
    async def List(self, request: api_pb2.ListPodResourcesRequest, context: object) -> api_pb2.ListPodResourcesResponse:
        return api_pb2.ListPodResourcesResponse(pod_resources=[api_pb2.PodResources(name="p", namespace="ns")])


def _lister_service() -> Service:
    servicer = _Lister()
    return Service("v1.PodResourcesLister",
                   lambda s: api_pb2_grpc.add_PodResourcesListerServicer_to_server(servicer, s))


async def _health(path: Path) -> int:
    async with channel(path) as ch:
        reply = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
        return int(reply.status)


async def test_sockets_of_many_servers_bound_in_one_private_directory(short_dir: Path) -> None:
    private = short_dir / "state"
    private.mkdir(mode=0o700)
    bind_dir = BindDir(private)
    servers = [UnixServer(short_dir / f"n{i}" / "kubelet.sock", [], mode=0o660, bind_dir=bind_dir) for i in range(3)]
    os.umask(old := os.umask(0))  # umask 000: a socket bound at its path would start as 0777
    try:
        with Inotify() as inotify:
            for i in range(3):
                (short_dir / f"n{i}").mkdir()
                inotify.add_watch(short_dir / f"n{i}", Mask.CREATE | Mask.MOVED_TO | Mask.ATTRIB)
            for server in servers:
                await server.start()
            events = []
            with contextlib.suppress(TimeoutError):
                while True:
                    events.append(await asyncio.wait_for(inotify.get(), 0.3))
    finally:
        os.umask(old)
    try:
        for server in servers:
            assert (server.path.stat().st_mode & 0o777) == 0o660
            assert await _health(server.path) == health_pb2.HealthCheckResponse.SERVING
        at_paths = [ev.mask for ev in events if ev.name is not None and str(ev.name) == "kubelet.sock"]
        assert len(at_paths) == 3 and all(Mask.MOVED_TO in m and Mask.CREATE not in m for m in at_paths), at_paths
        (made,) = list(private.iterdir())  # one directory for the three sockets, private, emptied by the renames
        assert (made.stat().st_mode & 0o777) == 0o700 and list(made.iterdir()) == []
    finally:
        for server in servers:
            await server.stop(0)
    bind_dir.close()
    assert list(private.iterdir()) == []


async def test_socket_on_another_filesystem_gets_a_directory_of_its_own(short_dir: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == short_dir.stat().st_dev:
        pytest.skip("no second filesystem to bind on")
    bind_dir = BindDir(short_dir)
    path = Path(os.path.join(shm, f"na-bind-{os.getpid()}", "kubelet.sock"))
    server = UnixServer(path, [], mode=0o600, bind_dir=bind_dir)
    try:
        await server.start()  # a rename from short_dir would fail (EXDEV): bound next to the socket instead
        assert (path.stat().st_mode & 0o777) == 0o600
        assert os.listdir(path.parent) == ["kubelet.sock"]
        assert await _health(path) == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(0)
        bind_dir.close()
        with contextlib.suppress(OSError):
            path.parent.rmdir()


async def test_a_name_over_the_unix_limit_falls_back(short_dir: Path) -> None:
    deep = short_dir / ("d" * 80)
    deep.mkdir()
    bind_dir = BindDir(deep)  # its names (deep/.bind-xxxxxxxx/1) would not fit in sockaddr_un
    path = short_dir / "s" / "kubelet.sock"
    server = UnixServer(path, [], mode=0o600, bind_dir=bind_dir)
    try:
        await server.start()
        assert (path.stat().st_mode & 0o777) == 0o600
        assert await _health(path) == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(0)
        bind_dir.close()


async def test_services_served_without_a_task_per_method(short_dir: Path) -> None:
    before = {id(t) for t in asyncio.all_tasks()}
    server = UnixServer(short_dir / "pr.sock", [_lister_service()], mode=0o600)
    await server.start()
    try:
        # The server's own tasks: its main loop and one for any call, none per method (five here).
        tasks = [t for t in asyncio.all_tasks() if id(t) not in before]
        assert len(tasks) <= 2, [t.get_coro() for t in tasks]
        async with channel(server.path) as ch:
            reply = await api_pb2_grpc.PodResourcesListerStub(ch).List(api_pb2.ListPodResourcesRequest(), timeout=5)
            assert [p.name for p in reply.pod_resources] == ["p"]
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await ch.unary_unary("/v1.PodResourcesLister/Nope", None, None)(b"", timeout=5)
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
            stream = reflection_pb2_grpc.ServerReflectionStub(ch).ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
            names = sorted(s.name for r in [await stream.read()] for s in r.list_services_response.service)
            assert names == ["grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
                             "v1.PodResourcesLister"]
    finally:
        await server.stop(0)
