"""The node HTTP endpoints over a real loopback socket: /metrics, /healthz, /configz, /stats/summary.

Also the shared start-up helper nodeagent.util.httpserve.start_site they are served with.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from nodeagent.config import Config, KubeletConfig, NodeAgentConfig, effective
from nodeagent.errors import ConfigError, StartupError
from nodeagent.metrics import summary as sm
from nodeagent.metrics.collectors import NodeSnapshot, register_collectors
from nodeagent.metrics.http import NodeHTTPServer, parse_bind_address
from nodeagent.metrics.instruments import Instruments
from nodeagent.util.clock import FakeClock
from nodeagent.util.httpserve import SentResponse, format_address, start_site

pytestmark = pytest.mark.rpc


async def request(port: int, path: str, method: str = "GET",
                  **extra: str) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 exchange; `Connection: close` so the server ends the stream after the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    fields = {"Host": "localhost", "Accept": "*/*", "Connection": "close", **extra}
    lines = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in fields.items())
    writer.write(f"{method} {path} HTTP/1.1\r\n{lines}\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    if method != "HEAD":
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
    # Accept */* gets the classic text format, as prometheus_client's choose_encoder answers it
    assert headers["content-type"] == CONTENT_TYPE_PLAIN_0_0_4
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
    status, headers, body = await request(server.port, "/nope", method="POST")
    assert (status, body) == (404, b"404 page not found\n")
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        status, headers, _ = await request(server.port, "/metrics", method=method)
        assert status == 405 and headers["allow"] == "GET, HEAD", method


async def test_garbage_and_silence(serve: Callable[..., Any]) -> None:
    server = await serve()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"NONSENSE\r\n\r\n")
    await writer.drain()
    answer = await reader.read()
    assert answer.split(b" ", 2)[1] == b"400", answer
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


def counting_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    inst = Instruments(registry)
    inst.admissions.labels("admitted").inc()
    inst.evictions.labels("memory.available").inc()
    return registry


# Accept headers as Prometheus, curl and a text/plain 1.0.0 client send them, and what comes back.
NEGOTIATION = [
    ("*/*", CONTENT_TYPE_PLAIN_0_0_4, False),
    ("application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1",
     "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores", True),
    ("application/openmetrics-text", "application/openmetrics-text; version=1.0.0; charset=utf-8", True),
    ("text/plain;version=1.0.0", "text/plain; version=1.0.0; charset=utf-8; escaping=underscores", False),
    ("text/html", CONTENT_TYPE_PLAIN_0_0_4, False),
]


@pytest.mark.parametrize(("accept", "content_type", "openmetrics"), NEGOTIATION)
async def test_metrics_negotiates_format(serve: Callable[..., Any], accept: str, content_type: str,
                                         openmetrics: bool) -> None:
    server = await serve(registry=counting_registry())
    status, headers, body = await request(server.port, "/metrics", Accept=accept)
    assert status == 200
    assert headers["content-type"] == content_type
    text = body.decode()
    assert text.endswith("# EOF\n") is openmetrics
    if openmetrics:
        families = {f.name: f for f in openmetrics_families(text)}
        # OpenMetrics names a counter family without its _total suffix
        assert families["nodeagent_pod_admissions"].type == "counter"
    else:
        assert 'nodeagent_pod_admissions_total{result="admitted"} 1.0' in text


async def test_metrics_gzip(serve: Callable[..., Any]) -> None:
    server = await serve(registry=counting_registry())
    _, plain_headers, plain = await request(server.port, "/metrics")
    assert "content-encoding" not in plain_headers
    status, headers, body = await request(server.port, "/metrics", Accept_Encoding="deflate, gzip;q=0.8")
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert "Accept-Encoding" in headers["vary"]
    assert gzip.decompress(body) == plain
    _, headers, body = await request(server.port, "/metrics", Accept_Encoding="gzip;q=0, identity")
    assert "content-encoding" not in headers and body.startswith(b"# HELP")


async def test_metrics_name_filter(serve: Callable[..., Any]) -> None:
    server = await serve(registry=counting_registry())
    _, _, body = await request(server.port, "/metrics?name[]=kubelet_evictions")
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert names == {"kubelet_evictions"}


async def test_head(serve: Callable[..., Any]) -> None:
    server = await serve(registry=counting_registry(), health=lambda: True)
    _, get_headers, get_body = await request(server.port, "/metrics")
    status, headers, body = await request(server.port, "/metrics", method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["content-type"] == CONTENT_TYPE_PLAIN_0_0_4
    assert int(headers["content-length"]) == len(get_body) == int(get_headers["content-length"])
    status, _, body = await request(server.port, "/healthz", method="HEAD")
    assert (status, body) == (200, b"")
    assert (await request(server.port, "/nope", method="HEAD"))[0] == 404


async def test_handler_failure_is_500(serve: Callable[..., Any], caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("boom")

    server = await serve(summary=broken)
    status, _, body = await request(server.port, "/stats/summary")
    assert (status, body) == (500, b"internal error\n")
    assert "http handler failed path=/stats/summary" in caplog.text
    assert (await request(server.port, "/healthz"))[0] == 200


async def test_keep_alive_client(serve: Callable[..., Any]) -> None:
    """A pooled client (as Prometheus uses) gets several answers over one connection."""
    server = await serve(health=lambda: True)
    async with aiohttp.ClientSession() as session:
        for _ in range(3):
            async with session.get(f"http://127.0.0.1:{server.port}/healthz") as resp:
                assert resp.status == 200 and await resp.read() == b"ok"
    await server.stop()
    assert not server.serving


async def test_stop_is_idempotent(serve: Callable[..., Any]) -> None:
    server = await serve()
    assert server.serving
    await server.stop()
    await server.stop()
    with pytest.raises(OSError):
        await request(server.port, "/healthz")


async def test_start_site_free_port_and_bind_error() -> None:
    app = web.Application()

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hi")

    app.router.add_get("/", hello)
    runner, port = await start_site(app, "127.0.0.1", 0)
    try:
        assert port > 0
        status, _, body = await request(port, "/")
        assert (status, body) == (200, b"hi")
        in_use = rf"^http address 127\.0\.0\.1:{port}: cannot listen: Address already in use$"
        with pytest.raises(StartupError, match=in_use):
            await start_site(web.Application(), "127.0.0.1", port)
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("cls", [web.Response, SentResponse])
async def test_a_sent_response_lets_go_of_its_body(cls: type[web.Response]) -> None:
    """aiohttp's keep-alive loop holds a connection's last response until the next request: a SentResponse
    keeps no body by then, a plain web.Response still does (what the bench's 16 MB LIST answer did)."""
    sent: list[web.Response] = []

    async def big(request: web.Request) -> web.Response:
        sent.append(cls(body=b"x" * 200_000, content_type="application/json"))
        return sent[-1]

    app = web.Application()
    app.router.add_get("/", big)
    runner, port = await start_site(app, "127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/") as resp:
                assert (resp.status, resp.headers["Content-Length"], len(await resp.read())) == (200, "200000", 200_000)
            assert len(session.connector._conns) == 1  # the connection is kept alive
            body = sent[0].body
            if cls is SentResponse:
                assert body is None
            else:
                assert isinstance(body, bytes) and len(body) == 200_000
    finally:
        await runner.cleanup()


async def test_start_site_ipv6_bind_error() -> None:
    with socket.socket(socket.AF_INET6) as taken:
        try:
            taken.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback")
        taken.listen()
        port = taken.getsockname()[1]
        in_use = rf"^api address \[::1\]:{port}: cannot listen: Address already in use$"
        with pytest.raises(StartupError, match=in_use):
            await start_site(web.Application(), "::1", port, name="api")


@pytest.mark.parametrize(("host", "port", "text"),
                         [("127.0.0.1", 80, "127.0.0.1:80"), ("::1", 6443, "[::1]:6443"), (None, 9, ":9")])
def test_format_address(host: str | None, port: int, text: str) -> None:
    assert format_address(host, port) == text
