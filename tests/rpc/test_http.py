"""The node HTTP endpoints over a real loopback socket: /metrics, /healthz, /configz, /stats/summary."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from nodeagent.clock import FakeClock
from nodeagent.config import Config, KubeletConfig, NodeAgentConfig, effective
from nodeagent.errors import ConfigError, StartupError
from nodeagent.metrics import summary as sm
from nodeagent.metrics.collectors import NodeSnapshot, register_collectors
from nodeagent.metrics.http import NodeHTTPServer, parse_bind_address
from nodeagent.metrics.instruments import Instruments

pytestmark = pytest.mark.rpc


async def request(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    assert int(headers["content-length"]) == len(body)
    return int(status_line.split()[1]), headers, body


class Stats:
    def node_stats(self) -> sm.NodeStats:
        mem = sm.MemoryStats(usage_bytes=3 << 30, working_set_bytes=2 << 30, rss_bytes=1 << 30,
                             available_bytes=5 << 30)
        return sm.NodeStats(
            cpu=sm.CPUStats(120.0, 0.5),
            memory=mem,
            fs=sm.FsStats(capacity_bytes=100, available_bytes=40, inodes=10, inodes_free=4),
            system_containers=(
                sm.ContainerStats("pods", sm.CPUStats(10.0), sm.MemoryStats(1 << 20)),
                sm.ContainerStats("system-reserved", sm.CPUStats(1.0), sm.MemoryStats(1 << 10)),
                sm.ContainerStats("kube-reserved", sm.CPUStats(2.0), sm.MemoryStats(1 << 11)),
            ),
            pods=(
                sm.PodStats("web", "default", "uid-1", 1_000_000.0,
                            (sm.ContainerStats("app", sm.CPUStats(1.5), sm.MemoryStats(200)),),
                            sm.CPUStats(1.5), sm.MemoryStats(200)),
            ),
        )


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Any]]:
    servers: list[NodeHTTPServer] = []

    async def factory(**kwargs: Any) -> NodeHTTPServer:
        registry = kwargs.pop("registry", None) or CollectorRegistry()
        server = NodeHTTPServer("127.0.0.1:0", registry, **kwargs)
        await server.start()
        servers.append(server)
        return server

    yield factory
    for server in servers:
        await server.stop()


async def test_metrics_parse(serve: Callable[..., Any]) -> None:
    registry = CollectorRegistry()
    inst = Instruments(registry)
    inst.admissions.labels("admitted").inc()
    register_collectors(registry, lambda: NodeSnapshot(capacity={"cpu": 4000, "memory": 8 << 30},
                                                       allocatable={"cpu": 3500, "memory": 7 << 30},
                                                       pods_by_phase={"Running": 3}))
    server = await serve(registry=registry)
    assert server.port > 0
    status, headers, body = await request(server.port, "/metrics")
    assert status == 200
    assert headers["content-type"] == CONTENT_TYPE_LATEST
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(body.decode()) for s in fam.samples}
    assert samples[("nodeagent_node_allocatable", (("resource", "cpu"),))] == 3.5
    assert samples[("nodeagent_node_capacity", (("resource", "memory"),))] == float(8 << 30)
    assert samples[("nodeagent_pods", (("phase", "Running"),))] == 3
    assert samples[("nodeagent_pod_admissions_total", (("result", "admitted"),))] == 1
    assert ("process_resident_memory_bytes", ()) in samples


async def test_healthz(serve: Callable[..., Any]) -> None:
    ready = {"value": False}
    server = await serve(health=lambda: ready["value"])
    status, _, body = await request(server.port, "/healthz")
    assert (status, body) == (503, b"not ready")
    ready["value"] = True
    status, headers, body = await request(server.port, "/healthz?verbose")
    assert (status, body) == (200, b"ok")
    assert headers["content-type"].startswith("text/plain")


async def test_configz(serve: Callable[..., Any]) -> None:
    cfg = Config(kubelet=KubeletConfig(max_pods=42), agent=NodeAgentConfig(node_name="n1"))
    server = await serve(configz=effective(cfg))
    status, headers, body = await request(server.port, "/configz")
    assert status == 200 and headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["kubeletconfig"]["maxPods"] == 42
    assert doc["kubeletconfig"]["featureGates"]["KubeletPodResourcesGet"] is True
    bare = await serve(configz={"maxPods": 7})
    _, _, body = await request(bare.port, "/configz")
    assert json.loads(body) == {"kubeletconfig": {"maxPods": 7}}


async def test_stats_summary(serve: Callable[..., Any], fake_clock: FakeClock) -> None:
    usage = {"cpu": 2.0}
    builder = sm.SummaryBuilder("node-1", Stats(), lambda: (usage["cpu"], 50 << 20), fake_clock)
    server = await serve(summary=builder.summary)
    status, _, body = await request(server.port, "/stats/summary")
    assert status == 200
    doc = json.loads(body)
    node = doc["node"]
    assert node["nodeName"] == "node-1"
    assert set(node) >= {"systemContainers", "startTime", "cpu", "memory", "fs"}
    assert [c["name"] for c in node["systemContainers"]] == ["kubelet", "pods", "system-reserved",
                                                               "kube-reserved"]
    kubelet = node["systemContainers"][0]
    assert kubelet["memory"]["usageBytes"] == 50 << 20 and kubelet["memory"]["workingSetBytes"] == 50 << 20
    assert kubelet["cpu"]["usageCoreNanoSeconds"] == 2_000_000_000
    assert set(kubelet["cpu"]) == {"time", "usageNanoCores", "usageCoreNanoSeconds"}
    assert node["cpu"]["usageNanoCores"] == 500_000_000
    assert node["memory"] == {"time": node["memory"]["time"], "availableBytes": 5 << 30,
                              "usageBytes": 3 << 30,
                              "workingSetBytes": 2 << 30, "rssBytes": 1 << 30}
    assert node["fs"] == {"time": node["fs"]["time"], "availableBytes": 40, "capacityBytes": 100,
                          "usedBytes": 60, "inodesFree": 4, "inodes": 10, "inodesUsed": 6}
    (pod,) = doc["pods"]
    assert pod["podRef"] == {"name": "web", "namespace": "default", "uid": "uid-1"}
    assert set(pod) == {"podRef", "startTime", "containers", "cpu", "memory"}
    assert pod["containers"][0]["name"] == "app"
    # a second scrape turns cumulative cpu time into a rate
    fake_clock.advance(2.0)
    usage["cpu"] = 3.0
    _, _, body = await request(server.port, "/stats/summary")
    assert json.loads(body)["node"]["systemContainers"][0]["cpu"]["usageNanoCores"] == 500_000_000


async def test_not_found_and_method(serve: Callable[..., Any]) -> None:
    server = await serve()
    assert (await request(server.port, "/nope"))[0] == 404
    assert (await request(server.port, "/stats/summary"))[0] == 404  # no summary wired
    status, headers, _ = await request(server.port, "/metrics", method="POST")
    assert status == 405 and headers["allow"] == "GET"


async def test_garbage_and_silence(serve: Callable[..., Any]) -> None:
    server = await serve()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"NONSENSE\r\n\r\n")
    await writer.drain()
    assert (await reader.read()).startswith(b"HTTP/1.1 400")
    writer.close()
    await writer.wait_closed()
    # a client that connects and leaves does not break the server
    _, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.close()
    await writer.wait_closed()
    assert (await request(server.port, "/healthz"))[0] == 200


@pytest.mark.parametrize(
    ("address", "expected"),
    [("127.0.0.1:10255", ("127.0.0.1", 10255)), ("[::1]:0", ("::1", 0)), (":9100", (None, 9100))],
)
def test_parse_bind_address(address: str, expected: tuple[str | None, int]) -> None:
    assert parse_bind_address(address) == expected


@pytest.mark.parametrize("address", ["127.0.0.1", "host:port", "1.2.3.4:70000"])
def test_parse_bind_address_rejects(address: str) -> None:
    with pytest.raises(ConfigError, match="metricsBindAddress"):
        parse_bind_address(address)


async def test_port_in_use(serve: Callable[..., Any]) -> None:
    first = await serve()
    second = NodeHTTPServer(f"127.0.0.1:{first.port}", CollectorRegistry())
    with pytest.raises(StartupError, match=f"127.0.0.1:{first.port}"):
        await second.start()
