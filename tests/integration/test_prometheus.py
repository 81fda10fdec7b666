"""A real Prometheus scrapes our /metrics; promtool lints the exposition.

Needs the Debian package `prometheus` (prometheus + promtool). If they are missing the
test tries `apt-get install -y prometheus` (root only, bounded to ~120 s, RUNLEVEL=1 so
no init script is started) and skips with the reason when that fails. The system
service is never used: the test runs the binary itself on loopback with a temporary
config and data directory, and stops it afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from nodeagent.metrics.collectors import NodeSnapshot, ReservedGroupUsage, register_collectors
from nodeagent.metrics.http import NodeHTTPServer
from nodeagent.metrics.instruments import Instruments

pytestmark = pytest.mark.integration

ALLOCATABLE_MEMORY = 31033655296  # 32Gi - 2Gi - 1Gi - 100Mi


def ensure_prometheus() -> tuple[str, str]:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus and promtool:
        return prometheus, promtool
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("prometheus/promtool not installed and apt-get is not usable (needs root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "RUNLEVEL": "1"}
    try:
        done = subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", "prometheus"],
            capture_output=True, text=True, timeout=120, env=env, check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("apt-get install prometheus took over 120 s")
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if done.returncode != 0 or not (prometheus and promtool):
        pytest.skip(f"apt-get install prometheus failed: {done.stderr.strip()[-300:]}")
    return prometheus, promtool


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def snapshot() -> NodeSnapshot:
    return NodeSnapshot(
        capacity={"cpu": 4000, "memory": 32 << 30, "pods": 110},
        allocatable={"cpu": 3500, "memory": ALLOCATABLE_MEMORY, "pods": 110},
        reserved={"kube-reserved": {"memory": 2 << 30}, "system-reserved": {"memory": 1 << 30}},
        reserved_usage=(ReservedGroupUsage("kube-reserved", 1.5, 1 << 20, 2, 0.25),),
        signals={"memory.available": 20 << 30, "nodefs.available": 1 << 35, "nodefs.inodesFree": 100000},
        pods_by_phase={"Running": 2, "Failed": 1},
    )


@pytest.fixture
async def exporter() -> AsyncIterator[tuple[NodeHTTPServer, CollectorRegistry]]:
    registry = CollectorRegistry()
    inst = Instruments(registry)
    inst.admissions.labels("admitted").inc()
    inst.evictions.labels("memory.available").inc()
    inst.grpc_requests.labels("v1.PodResourcesLister", "List", "OK").inc()
    inst.grpc_duration.labels("v1.PodResourcesLister", "List").observe(0.001)
    inst.pr_requests_total.labels("v1").inc()
    register_collectors(registry, snapshot)
    server = NodeHTTPServer("127.0.0.1:0", registry)
    await server.start()
    try:
        yield server, registry
    finally:
        await server.stop()


async def test_promtool_check_metrics(exporter: tuple[NodeHTTPServer, CollectorRegistry]) -> None:
    _, promtool = ensure_prometheus()
    _, registry = exporter
    done = await asyncio.to_thread(
        subprocess.run, [promtool, "check", "metrics"], input=generate_latest(registry),
        capture_output=True, timeout=30, check=False,
    )
    report = (done.stdout + done.stderr).decode().strip()
    assert done.returncode == 0 and report == "", report


def query(port: int, expr: str) -> list[dict[str, object]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=2) as resp:
        doc = json.load(resp)
    return list(doc["data"]["result"])


async def test_prometheus_scrapes_allocatable(exporter: tuple[NodeHTTPServer, CollectorRegistry]) -> None:
    prometheus, _ = ensure_prometheus()
    server, _ = exporter
    tmp = Path(tempfile.mkdtemp(prefix="na-prom-"))
    web_port = free_port()
    (tmp / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: nodeagent\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{server.port}']\n"
    )
    proc = subprocess.Popen(
        [prometheus, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{web_port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp,
    )
    try:
        deadline = time.monotonic() + 30
        value = None
        expr = 'nodeagent_node_allocatable{resource="memory",job="nodeagent"}'
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"prometheus exited with {proc.returncode}: {proc.stderr.read().decode()[-500:]}"
                            if proc.stderr else "prometheus exited")
            try:
                result = await asyncio.to_thread(query, web_port, expr)
            except OSError:
                result = []
            if result:
                value = result[0]["value"][1]  # type: ignore[index]
                break
            await asyncio.sleep(0.3)
        assert value is not None, "Prometheus never returned the allocatable memory series"
        assert float(value) == ALLOCATABLE_MEMORY
        cpu = await asyncio.to_thread(query, web_port, 'nodeagent_node_allocatable{resource="cpu"}')
        assert float(cpu[0]["value"][1]) == 3.5  # type: ignore[index]
    finally:
        proc.terminate()
        try:
            await asyncio.to_thread(proc.wait, 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            await asyncio.to_thread(proc.wait, 5)
        if proc.stderr:
            proc.stderr.close()
        shutil.rmtree(tmp, ignore_errors=True)
