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
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.daemon_helpers import Daemon, free_port, running_daemon, wait_for

pytestmark = pytest.mark.integration

ALLOCATABLE_MEMORY = 31033655296  # 32Gi - 2Gi - 1Gi - 100Mi

# As the demo (configs/demo.yaml): the control plane on, classic DRA on and one
# classic controller, so every registered family (the classic ones included) is exposed.
KUBELET = {
    "kubeReserved": {"cpu": "500m", "memory": "2Gi"},
    "systemReserved": {"memory": "1Gi"},
}
AGENT = {
    "classicDRA": True,
    "classicControllers": [{
        "controllerName": "cxl.example.com",
        "pools": [{"name": "switch-0", "nodes": ["test-node"], "devices": [{"name": "acc-0"}]}],
    }],
}


def ensure_prometheus() -> tuple[str, str]:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus and promtool:
        return prometheus, promtool
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("prometheus/promtool not installed and apt-get is not usable (needs root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "RUNLEVEL": "1"}
    try:
        done = subprocess.run(
            # two xdist workers may get here at once: the second waits for dpkg's lock, then finds it installed
            ["apt-get", "-o", "DPkg::Lock::Timeout=100", "install", "-y", "--no-install-recommends", "prometheus"],
            capture_output=True, text=True, timeout=120, env=env, check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("apt-get install prometheus took over 120 s")
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if done.returncode != 0 or not (prometheus and promtool):
        pytest.skip(f"apt-get install prometheus failed: {done.stderr.strip()[-300:]}")
    return prometheus, promtool


def scrape(port: int, accept: str = "") -> bytes:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return bytes(resp.read())


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    """The real daemon, configured as the demo is for metrics; its classic controller has started."""
    base = Path(tempfile.mkdtemp(prefix="na-prom-", dir="/tmp"))
    try:
        with running_daemon(base, KUBELET, AGENT) as d:
            wait_for(lambda: b"nodeagent_dra_classic_operations" in scrape(d.metrics_port), timeout=30,
                     what="the classic DRA metrics")
            yield d
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_promtool_check_metrics(daemon: Daemon) -> None:
    _, promtool = ensure_prometheus()
    exposition = await asyncio.to_thread(scrape, daemon.metrics_port)
    # the families the demo exposes, from every part that registers some
    for family in (b"scheduler_pending_pods", b"nodeagent_dra_pod_scheduling_contexts",
                   b"kubelet_evictions", b"nodeagent_node_allocatable"):
        assert b"\n# HELP " + family + b" " in exposition, family
    done = await asyncio.to_thread(
        subprocess.run, [promtool, "check", "metrics"], input=exposition,
        capture_output=True, timeout=30, check=False,
    )
    report = (done.stdout + done.stderr).decode().strip()
    # The kubelet's own exposition gets one finding per counter upstream names without `_total`
    # (kubelet_evictions, kubelet_pod_resources_endpoint_requests_list, ...): the same here, as
    # the names are the kubelet's; anything else is ours to fix.
    findings = [line for line in report.splitlines() if line]
    upstream_names = kubelet_counters_without_total()
    ours = [line for line in findings if not (line.endswith(' counter metrics should have "_total" suffix')
                                              and line.split(" ", 1)[0] in upstream_names)]
    assert ours == [], report
    assert any(line.startswith("kubelet_pod_resources_endpoint_requests_list ") for line in findings), report
    assert done.returncode in (0, 3), report  # 3: lint findings only (promtool's exit code for them)


def kubelet_counters_without_total() -> set[str]:
    """The counters exported under the kubelet's names without `_total` (metrics/exposition.py)."""
    from prometheus_client import CollectorRegistry

    from nodeagent.metrics.exposition import NamedMetric
    from nodeagent.metrics.instruments import Instruments

    registry = CollectorRegistry()
    Instruments(registry)
    return {f.name for f in registry.collect()
            if isinstance(f, NamedMetric) and f.type == "counter" and not f.name.endswith("_total")}


async def test_no_created_series(daemon: Daemon) -> None:
    """Counters and histograms come without `_created` (as the kubelet: client_golang leaves them out)."""
    for accept in ("", "application/openmetrics-text; version=1.0.0"):
        exposition = (await asyncio.to_thread(scrape, daemon.metrics_port, accept)).decode()
        assert "kubelet_evictions" in exposition or "scheduler_schedule_attempts" in exposition
        created = [line for line in exposition.splitlines() if "_created" in line.split(" ")[0]]
        assert created == [], created[:5]


def query(port: int, expr: str) -> list[dict[str, object]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=2) as resp:
        doc = json.load(resp)
    return list(doc["data"]["result"])


async def test_prometheus_scrapes_allocatable(daemon: Daemon) -> None:
    prometheus, _ = ensure_prometheus()
    tmp = Path(tempfile.mkdtemp(prefix="na-prom-"))
    web_port = free_port()
    (tmp / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: nodeagent\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{daemon.metrics_port}']\n"
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
                value = result[0]["value"][1]
                break
            await asyncio.sleep(0.3)
        assert value is not None, "Prometheus never returned the allocatable memory series"
        assert float(value) == ALLOCATABLE_MEMORY
        cpu = await asyncio.to_thread(query, web_port, 'nodeagent_node_allocatable{resource="cpu"}')
        assert float(cpu[0]["value"][1]) == 7.5
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
