"""v1 and v1alpha1 PodResourcesLister over a real unix socket: shapes, errors, gates, rate limit, counters."""

from __future__ import annotations

import asyncio
import math
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.apis.podresources.v1 import api_pb2_grpc as v1_grpc
from nodeagent.apis.podresources.v1alpha1 import api_pb2 as v1alpha1
from nodeagent.apis.podresources.v1alpha1 import api_pb2_grpc as v1alpha1_grpc
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.podresources import service
from nodeagent.podresources.fakes import InMemoryResources, VersionedResources
from nodeagent.podresources.providers import ClaimDevice, DeviceInfo, DynamicResourceInfo, MemoryBlock
from nodeagent.rpc import interceptors
from nodeagent.rpc.server import UnixServer, channel
from nodeagent.util.clock import FakeClock

pytestmark = pytest.mark.rpc

GPU = "example.com/gpu"


def web_pod() -> Pod:
    return Pod(
        uid="uid-web",
        name="web",
        namespace="prod",
        init_containers=(Container(name="setup"), Container(name="proxy", restart_policy="Always")),
        containers=(Container(name="app"), Container(name="log")),
    )


def populate(res: InMemoryResources) -> None:
    res.add_pod(web_pod())
    res.add_pod(Pod(uid="uid-done", name="done", namespace="prod", containers=(Container(name="main"),)),
                active=False)
    res.assign("uid-web", "proxy", cpus=[7])
    res.assign(
        "uid-web",
        "app",
        devices=[DeviceInfo(GPU, "gpu-0", (0,)), DeviceInfo(GPU, "gpu-1", (0, 1)), DeviceInfo(GPU, "gpu-x")],
        cpus=[2, 3],
        memory=[MemoryBlock("memory", 1 << 30, (0,)), MemoryBlock("hugepages-2Mi", 4 << 20)],
        dynamic=[
            DynamicResourceInfo(
                "claim-a",
                "prod",
                (ClaimDevice("gpu.example.com", "pool-0", "dev-0", ("example.com/gpu=dev-0",), "share-1"),
                 ClaimDevice("gpu.example.com", "pool-0", "dev-1")),
            )
        ],
    )
    res.assign("uid-done", "main", devices=[DeviceInfo(GPU, "gpu-2", (1,))])
    res.set_allocatable(
        devices=[DeviceInfo(GPU, "gpu-0", (0,)), DeviceInfo(GPU, "gpu-1", (0, 1)), DeviceInfo(GPU, "gpu-x")],
        cpus=[0, 1, 2, 3],
        memory=[MemoryBlock("memory", 8 << 30, (0,))],
    )


@dataclass
class Harness:
    res: InMemoryResources
    registry: CollectorRegistry
    v1: v1_grpc.PodResourcesListerAsyncStub
    v1alpha1: v1alpha1_grpc.PodResourcesListerAsyncStub
    path: Path


Factory = Callable[..., "asyncio.Future[Harness]"]


@pytest.fixture
async def make(short_dir: Path) -> AsyncIterator[Callable[..., object]]:
    servers: list[UnixServer] = []
    channels: list[grpc.aio.Channel] = []

    async def factory(
        *,
        gates: dict[str, bool] | None = None,
        versioned: bool = True,
        qps: float = math.inf,
        burst: int = 10,
        clock: FakeClock | None = None,
    ) -> Harness:
        res = VersionedResources() if versioned else InMemoryResources()
        populate(res)
        registry = CollectorRegistry()
        inst = Instruments(registry)
        gate_map = gates or {}
        path = short_dir / f"pr{len(servers)}.sock"
        now = clock.monotonic if clock else (lambda: 0.0)
        server = UnixServer(
            path,
            service.services(res, res, res, res, res, instruments=inst,
                             gates=lambda name: gate_map.get(name, True)),
            interceptors=[interceptors.MetricsInterceptor(inst), interceptors.rate_limit(qps, burst, now)],
        )
        await server.start()
        servers.append(server)
        ch = channel(path)
        channels.append(ch)
        return Harness(res, registry, v1_grpc.PodResourcesListerStub(ch),
                       v1alpha1_grpc.PodResourcesListerStub(ch), path)

    yield factory
    for ch in channels:
        await ch.close(None)
    for server in servers:
        await server.stop(0)


def containers(pod: v1.PodResources) -> dict[str, v1.ContainerResources]:
    return {c.name: c for c in pod.containers}


@pytest.mark.parametrize("versioned", [True, False])
async def test_list_shape(make: Callable[..., object], versioned: bool) -> None:
    h: Harness = await make(versioned=versioned)  # type: ignore[misc]
    resp = await h.v1.List(v1.ListPodResourcesRequest())
    assert [p.name for p in resp.pod_resources] == ["web"]  # the terminated pod is not active
    pod = resp.pod_resources[0]
    assert pod.namespace == "prod"
    # sidecar first, ordinary init container left out
    assert [c.name for c in pod.containers] == ["proxy", "app", "log"]
    app = containers(pod)["app"]
    devices = [(d.resource_name, list(d.device_ids), d.HasField("topology"),
                [n.ID for n in d.topology.nodes]) for d in app.devices]
    assert devices == [
        (GPU, ["gpu-0"], True, [0]),
        (GPU, ["gpu-1"], True, [0]),
        (GPU, ["gpu-1"], True, [1]),
        (GPU, ["gpu-x"], False, []),
    ]
    assert list(app.cpu_ids) == [2, 3]
    assert [(m.memory_type, m.size, m.HasField("topology")) for m in app.memory] == [
        ("memory", 1 << 30, True), ("hugepages-2Mi", 4 << 20, False)
    ]
    assert [n.ID for n in app.memory[0].topology.nodes] == [0]
    assert list(containers(pod)["proxy"].cpu_ids) == [7]
    assert not containers(pod)["log"].devices and not containers(pod)["log"].cpu_ids
    dyn = app.dynamic_resources
    assert [(d.claim_name, d.claim_namespace) for d in dyn] == [("claim-a", "prod")]
    first, second = dyn[0].claim_resources
    assert (first.driver_name, first.pool_name, first.device_name) == ("gpu.example.com", "pool-0", "dev-0")
    assert [c.name for c in first.cdi_devices] == ["example.com/gpu=dev-0"]
    assert first.HasField("share_id") and first.share_id == "share-1"
    assert not second.HasField("share_id")


@pytest.mark.parametrize("versioned", [True, False])
async def test_list_reflects_changes_on_next_call(make: Callable[..., object], versioned: bool) -> None:
    h: Harness = await make(versioned=versioned)  # type: ignore[misc]
    await h.v1.List(v1.ListPodResourcesRequest())
    h.res.assign("uid-web", "log", cpus=[9])
    resp = await h.v1.List(v1.ListPodResourcesRequest())
    assert list(containers(resp.pod_resources[0])["log"].cpu_ids) == [9]
    h.res.set_active("uid-done", True)
    resp = await h.v1.List(v1.ListPodResourcesRequest())
    assert sorted(p.name for p in resp.pod_resources) == ["done", "web"]


async def test_get(make: Callable[..., object]) -> None:
    h: Harness = await make()  # type: ignore[misc]
    resp = await h.v1.Get(v1.GetPodResourcesRequest(pod_name="web", pod_namespace="prod"))
    listed = await h.v1.List(v1.ListPodResourcesRequest())
    assert resp.pod_resources == listed.pod_resources[0]


async def test_get_unknown_pod(make: Callable[..., object]) -> None:
    h: Harness = await make()  # type: ignore[misc]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await h.v1.Get(v1.GetPodResourcesRequest(pod_name="nope", pod_namespace="prod"))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert err.value.details() == "pod nope in namespace prod not found"
    sample = h.registry.get_sample_value
    assert sample("kubelet_pod_resources_endpoint_errors_get", {"server_api_version": "v1"}) == 1
    assert sample("kubelet_pod_resources_endpoint_requests_get", {"server_api_version": "v1"}) == 1
    assert sample("nodeagent_grpc_server_handled_total", {
        "grpc_service": "v1.PodResourcesLister", "grpc_method": "Get", "grpc_code": "UNKNOWN"}) == 1


async def test_get_allocatable_healthy_only(make: Callable[..., object]) -> None:
    h: Harness = await make()  # type: ignore[misc]
    resp = await h.v1.GetAllocatableResources(v1.AllocatableResourcesRequest())
    assert [(d.device_ids[0], d.HasField("topology")) for d in resp.devices] == [
        ("gpu-0", True), ("gpu-1", True), ("gpu-1", True), ("gpu-x", False)
    ]
    assert list(resp.cpu_ids) == [0, 1, 2, 3]
    assert [(m.memory_type, m.size) for m in resp.memory] == [("memory", 8 << 30)]
    h.res.set_health(GPU, "gpu-1", False)
    resp = await h.v1.GetAllocatableResources(v1.AllocatableResourcesRequest())
    assert [d.device_ids[0] for d in resp.devices] == ["gpu-0", "gpu-x"]


@pytest.mark.parametrize(
    ("gate", "call", "message", "error_counter"),
    [
        ("KubeletPodResourcesGet", "Get", "PodResources API Get method disabled",
         "kubelet_pod_resources_endpoint_errors_get"),
    ],
)
async def test_gate_off(make: Callable[..., object], gate: str, call: str, message: str,
                        error_counter: str) -> None:
    h: Harness = await make(gates={gate: False})  # type: ignore[misc]
    request = (v1.GetPodResourcesRequest(pod_name="web", pod_namespace="prod") if call == "Get"
               else v1.AllocatableResourcesRequest())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await getattr(h.v1, call)(request)
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert err.value.details() == message
    assert h.registry.get_sample_value(error_counter, {"server_api_version": "v1"}) == 1


async def test_dynamic_resources_gate_off(make: Callable[..., object]) -> None:
    h: Harness = await make(gates={"KubeletPodResourcesDynamicResources": False})  # type: ignore[misc]
    resp = await h.v1.List(v1.ListPodResourcesRequest())
    app = containers(resp.pod_resources[0])["app"]
    assert not app.dynamic_resources
    assert list(app.cpu_ids) == [2, 3]
    got = await h.v1.Get(v1.GetPodResourcesRequest(pod_name="web", pod_namespace="prod"))
    assert not containers(got.pod_resources)["app"].dynamic_resources


async def test_v1alpha1_list(make: Callable[..., object]) -> None:
    h: Harness = await make()  # type: ignore[misc]
    resp = await h.v1alpha1.List(v1alpha1.ListPodResourcesRequest())
    pods = {p.name: p for p in resp.pod_resources}
    assert set(pods) == {"web", "done"}  # all pods, terminated included
    assert [c.name for c in pods["web"].containers] == ["app", "log"]  # regular containers only
    app = pods["web"].containers[0]
    assert [(d.resource_name, list(d.device_ids)) for d in app.devices] == [
        (GPU, ["gpu-0"]), (GPU, ["gpu-1"]), (GPU, ["gpu-1"]), (GPU, ["gpu-x"])
    ]
    assert [list(d.device_ids) for d in pods["done"].containers[0].devices] == [["gpu-2"]]
    sample = h.registry.get_sample_value
    assert sample("kubelet_pod_resources_endpoint_requests_total", {"server_api_version": "v1alpha1"}) == 1
    assert sample("kubelet_pod_resources_endpoint_requests_total", {"server_api_version": "v1"}) == 0


async def test_counters(make: Callable[..., object]) -> None:
    h: Harness = await make()  # type: ignore[misc]
    await h.v1.List(v1.ListPodResourcesRequest())
    await h.v1.List(v1.ListPodResourcesRequest())
    await h.v1.GetAllocatableResources(v1.AllocatableResourcesRequest())
    await h.v1.Get(v1.GetPodResourcesRequest(pod_name="web", pod_namespace="prod"))
    labels = {"server_api_version": "v1"}
    sample = h.registry.get_sample_value
    assert sample("kubelet_pod_resources_endpoint_requests_total", labels) == 4
    assert sample("kubelet_pod_resources_endpoint_requests_list", labels) == 2
    assert sample("kubelet_pod_resources_endpoint_requests_get_allocatable", labels) == 1
    assert sample("kubelet_pod_resources_endpoint_requests_get", labels) == 1
    assert sample("kubelet_pod_resources_endpoint_errors_get", labels) == 0
    ok = {"grpc_service": "v1.PodResourcesLister", "grpc_method": "List", "grpc_code": "OK"}
    assert sample("nodeagent_grpc_server_handled_total", ok) == 2
    assert sample("nodeagent_grpc_server_handling_seconds_count",
                  {"grpc_service": "v1.PodResourcesLister", "grpc_method": "List"}) == 2


async def test_rate_limit(make: Callable[..., object], fake_clock: FakeClock) -> None:
    h: Harness = await make(qps=2, burst=3, clock=fake_clock)  # type: ignore[misc]
    for _ in range(3):
        await h.v1.List(v1.ListPodResourcesRequest())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await h.v1.List(v1.ListPodResourcesRequest())
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert err.value.details() == "rejected by rate limit"
    with pytest.raises(grpc.aio.AioRpcError):
        await h.v1alpha1.List(v1alpha1.ListPodResourcesRequest())
    fake_clock.advance(0.5)  # one token back at 2 qps
    await h.v1.List(v1.ListPodResourcesRequest())
    with pytest.raises(grpc.aio.AioRpcError):
        await h.v1.List(v1.ListPodResourcesRequest())
    sample = h.registry.get_sample_value
    # rejected calls never reach the servicer
    assert sample("kubelet_pod_resources_endpoint_requests_list", {"server_api_version": "v1"}) == 4
    rejected = {"grpc_service": "v1.PodResourcesLister", "grpc_method": "List",
                "grpc_code": "RESOURCE_EXHAUSTED"}
    assert sample("nodeagent_grpc_server_handled_total", rejected) == 2


def find_grpcurl() -> str | None:
    found = shutil.which("grpcurl")
    if found:
        return found
    beside = Path(sys.executable).parent / "grpcurl"
    return str(beside) if beside.exists() else None


async def test_grpcurl_list(make: Callable[..., object]) -> None:
    grpcurl = find_grpcurl()
    if grpcurl is None:
        pytest.skip("grpcurl not found on PATH nor next to the Python interpreter")
    h: Harness = await make()  # type: ignore[misc]

    def run(*args: str) -> str:
        done = subprocess.run([grpcurl, "-plaintext", "-unix", str(h.path), *args],
                              capture_output=True, text=True, timeout=20, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    services = (await asyncio.to_thread(run, "list")).split()
    assert {"v1.PodResourcesLister", "v1alpha1.PodResourcesLister"} <= set(services)
    out = await asyncio.to_thread(run, "v1.PodResourcesLister/List")
    assert '"name": "web"' in out and '"gpu-x"' in out and '"ID": "1"' in out


async def test_metrics_interceptor_streaming_and_unary(make: Callable[..., object]) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    h: Harness = await make()  # type: ignore[misc]
    async with channel(h.path) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        resp = await health.Check(health_pb2.HealthCheckRequest(service="v1.PodResourcesLister"))
        assert resp.status == health_pb2.HealthCheckResponse.SERVING
        call = health.Watch(health_pb2.HealthCheckRequest(service=""))
        first = await call.read()
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        call.cancel()
        for _ in range(100):  # the server notices the cancellation asynchronously
            counted = h.registry.get_sample_value("nodeagent_grpc_server_handling_seconds_count", {
                "grpc_service": "grpc.health.v1.Health", "grpc_method": "Watch"})
            if counted:
                break
            await asyncio.sleep(0.01)
    assert counted == 1
    assert h.registry.get_sample_value("nodeagent_grpc_server_handled_total", {
        "grpc_service": "grpc.health.v1.Health", "grpc_method": "Check", "grpc_code": "OK"}) == 1


async def test_rate_limit_never_starves_health(make: Callable[..., object], fake_clock: FakeClock) -> None:
    """A hammer on the API methods exhausts the bucket, yet every health check answers SERVING
    and reflection still lists the services (issue 15: the health check got 92% RESOURCE_EXHAUSTED)."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    h: Harness = await make(qps=100, burst=10, clock=fake_clock)  # type: ignore[misc]
    ch = channel(h.path)
    try:
        health_stub = health_pb2_grpc.HealthStub(ch)
        hammer: list[Awaitable[object]] = [h.v1.List(v1.ListPodResourcesRequest()) for _ in range(50)]
        hammer += [h.v1alpha1.List(v1alpha1.ListPodResourcesRequest()) for _ in range(50)]
        checks = [health_stub.Check(health_pb2.HealthCheckRequest()) for _ in range(50)]
        results = await asyncio.gather(*hammer, *checks, return_exceptions=True)
        api, health_answers = results[:100], results[100:]
        rejected = [r for r in api if isinstance(r, grpc.aio.AioRpcError)]
        assert len(rejected) == 90  # the clock stands still: burst 10, the rest rejected
        assert all(r.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for r in rejected)
        assert all(
            not isinstance(r, BaseException) and r.status == health_pb2.HealthCheckResponse.SERVING
            for r in health_answers
        ), health_answers
        reflect = reflection_pb2_grpc.ServerReflectionStub(ch)
        answers = [a async for a in reflect.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]))]
        names = {s.name for s in answers[0].list_services_response.service}
        assert "v1.PodResourcesLister" in names
    finally:
        await ch.close(None)
