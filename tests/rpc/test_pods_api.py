"""The Pods API over a real unix socket: List/Get/Watch, errors, rate limit, reflection, health."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from nodeagent.apis.pods.v1alpha1 import api_pb2, api_pb2_grpc
from nodeagent.podsapi import model
from nodeagent.podsapi import service as podsapi_service
from nodeagent.podsapi.source import PodsSource
from nodeagent.rpc.interceptors import rate_limit
from nodeagent.rpc.server import UnixServer, channel
from nodeagent.util.clock import FakeClock
from tests.unit.podsapi.fakes import FakePods, pod, read_pod

pytestmark = pytest.mark.rpc


class Node:
    def __init__(self) -> None:
        self.pods = FakePods()
        self.synced = True
        self.clock = FakeClock()
        self.source = PodsSource(self.pods, synced=lambda: self.synced, clock=self.clock)


@pytest.fixture
async def served() -> AsyncIterator[tuple[Node, api_pb2_grpc.PodsAsyncStub, grpc.aio.Channel]]:
    base = Path(tempfile.mkdtemp(prefix="na-", dir="/tmp"))
    node = Node()
    server = UnixServer(
        base / "pods-api" / "pods-api.sock",
        podsapi_service.services(node.source),
        interceptors=[rate_limit(model.DEFAULT_QPS, model.DEFAULT_BURST, node.clock.monotonic)],
    )
    await server.start()
    ch = channel(server.path)
    try:
        yield node, api_pb2_grpc.PodsStub(ch), ch
    finally:
        await ch.close(None)
        await server.stop(0)
        shutil.rmtree(base, ignore_errors=True)


def test_method_paths() -> None:
    svc = api_pb2.DESCRIPTOR.services_by_name["Pods"]
    assert svc.full_name == "v1alpha1.Pods"
    assert [m.name for m in svc.methods] == ["WatchPods", "ListPods", "GetPod"]
    assert dict(api_pb2.EventType.items()) == {
        "UNSPECIFIED": 0, "ADDED": 1, "MODIFIED": 2, "DELETED": 3, "INITIAL_SYNC_COMPLETE": 4}


async def test_list_and_get(served: tuple[Node, api_pb2_grpc.PodsAsyncStub, grpc.aio.Channel]) -> None:
    node, stub, _ = served
    node.pods.put(pod("u2", "second", "Running"))
    node.pods.put(pod("u1", "first"))
    listed = await stub.ListPods(api_pb2.ListPodsRequest())
    assert [read_pod(p) for p in listed.pods] == [
        ("default", "first", "u1", "Pending"), ("default", "second", "u2", "Running")]
    got = await stub.GetPod(api_pb2.GetPodRequest(podUID="u2"))
    assert read_pod(got.pod) == ("default", "second", "u2", "Running")


async def test_get_unknown_pod(served: tuple[Node, api_pb2_grpc.PodsAsyncStub, grpc.aio.Channel]) -> None:
    _, stub, _ = served
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetPod(api_pb2.GetPodRequest(podUID="nope"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert err.value.details() == "pod with UID nope not found"


async def test_failed_precondition_until_synced(
    served: tuple[Node, api_pb2_grpc.PodsAsyncStub, grpc.aio.Channel],
) -> None:
    node, stub, _ = served
    node.synced = False
    node.pods.put(pod("u1", "first"))
    calls: list[Awaitable[object]] = [
        stub.ListPods(api_pb2.ListPodsRequest()),
        stub.GetPod(api_pb2.GetPodRequest(podUID="u1")),
    ]
    for call in calls:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        assert (err.value.code(), err.value.details()) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                           "Kubelet is initializing")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for _ in stub.WatchPods(api_pb2.WatchPodsRequest()):
            pass
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    node.synced = True
    assert len((await stub.ListPods(api_pb2.ListPodsRequest())).pods) == 1


async def _read(stream: grpc.aio.UnaryStreamCall[api_pb2.WatchPodsRequest, api_pb2.WatchPodsEvent]
                ) -> api_pb2.WatchPodsEvent:
    """The stream's next event (grpc types read() as the event or EOF)."""
    event = await stream.read()
    assert isinstance(event, api_pb2.WatchPodsEvent), event
    return event


async def test_watch_sees_a_pod_appear_change_and_go(
    served: tuple[Node, api_pb2_grpc.PodsAsyncStub, grpc.aio.Channel],
) -> None:
    node, stub, _ = served
    node.pods.put(pod("u0", "before"))
    stream = stub.WatchPods(api_pb2.WatchPodsRequest())
    first = await _read(stream)
    assert first.type == api_pb2.ADDED and read_pod(first.pod)[1] == "before"
    sync = await _read(stream)
    assert sync.type == api_pb2.INITIAL_SYNC_COMPLETE and sync.pod == b""

    async def next_event() -> api_pb2.WatchPodsEvent:
        node.source.refresh()  # what the source's loop does every 50 ms
        return await asyncio.wait_for(_read(stream), 5)

    node.pods.put(pod("u1", "web"))
    ev = await next_event()
    assert (ev.type, read_pod(ev.pod)) == (api_pb2.ADDED, ("default", "web", "u1", "Pending"))
    node.pods.put(pod("u1", "web", "Running"))
    ev = await next_event()
    assert (ev.type, read_pod(ev.pod)) == (api_pb2.MODIFIED, ("default", "web", "u1", "Running"))
    node.pods.remove("u1")
    ev = await next_event()
    assert (ev.type, read_pod(ev.pod)) == (api_pb2.DELETED, ("default", "web", "u1", ""))
    stream.cancel()
    await asyncio.sleep(0.05)
    assert node.source.broadcaster.watchers == 0


async def test_rate_limit(served: tuple[Node, api_pb2_grpc.PodsAsyncStub, grpc.aio.Channel]) -> None:
    node, stub, _ = served
    for _ in range(model.DEFAULT_BURST):
        await stub.ListPods(api_pb2.ListPodsRequest())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetPod(api_pb2.GetPodRequest(podUID="x"))
    assert (err.value.code(), err.value.details()) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit")
    node.clock.advance(1 / model.DEFAULT_QPS)  # one token back
    await stub.ListPods(api_pb2.ListPodsRequest())
    # the stream is not rate limited, as with the kubelet's unary-only limiter
    stream = stub.WatchPods(api_pb2.WatchPodsRequest())
    assert (await _read(stream)).type == api_pb2.INITIAL_SYNC_COMPLETE
    stream.cancel()


async def test_reflection_and_health(served: tuple[Node, api_pb2_grpc.PodsAsyncStub, grpc.aio.Channel]) -> None:
    _, _, ch = served
    health = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service="v1alpha1.Pods"))
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    refl = reflection_pb2_grpc.ServerReflectionStub(ch)
    async for answer in refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])):
        names = {s.name for s in answer.list_services_response.service}
        break
    assert "v1alpha1.Pods" in names
