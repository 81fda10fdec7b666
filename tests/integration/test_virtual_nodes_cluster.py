"""Virtual nodes served by a node process over the Kubernetes API (nodeapi/virtual.py).

Two processes: the control plane alone (API server, scheduler, claim controller, node
lifecycle) and a node process with `node.enabled: false` holding three virtualNodes with two
devices each. Through the control plane's API: the three Nodes Ready with their allocatable
and labels, their ResourceSlices published, their Leases renewed; a pod with a claim from a
template is scheduled onto one of them and goes Running (written by the node process).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import free_port, wait_for, write_config
from tests.integration.dra_helpers import DRIVER, POD, SLICES, TRAINER, class_and_template
from tests.integration.test_two_processes import control_plane, show_logs  # noqa: F401 - autouse: logs on failure

pytestmark = [pytest.mark.integration]

HOST = "vhost"
NODES = ["vn-0", "vn-1", "vn-2"]
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"


def node_process_agent(kubeconfig: Path) -> dict[str, Any]:
    return {
        "nodeName": HOST,
        "cluster": {"kubeconfig": str(kubeconfig), "requestTimeout": "3s"},
        "node": {"enabled": False, "leaseDurationSeconds": 2},
        "controlPlane": {"apiServer": {"bindAddress": ""}},
        "virtualNodes": [{"name": "vn-{index}", "count": len(NODES), "labels": {"zone": "a"},
                          "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                          "devices": [{"driver": DRIVER, "count": 2, "name": "gpu-{index}",
                                       "capacity": {"memory": "40Gi"}}]}],
    }


def ready_nodes(cp: Any) -> dict[str, Any]:
    listed = cp.api_get(f"/api/v1/nodes?labelSelector=nodeagent.dev/virtual-host%3D{HOST}")["items"]
    return {n["metadata"]["name"]: n for n in listed
            if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))}


@pytest.mark.timeout(120)
def test_node_process_serves_virtual_nodes_over_the_api(short_dir: Path) -> None:
    with control_plane(short_dir / "cp", free_port()) as cp:
        base = short_dir / "vn"
        base.mkdir()
        cfg = write_config(base, {}, node_process_agent(cp.kubeconfig), free_port())
        with open(base / "daemon.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(cfg)],
                                    stdout=log, stderr=subprocess.STDOUT)
            try:
                def all_ready() -> dict[str, Any] | None:
                    if proc.poll() is not None:
                        raise AssertionError(f"node process exited: {(base / 'daemon.log').read_text()[-3000:]}")
                    got = ready_nodes(cp)
                    return got if len(got) == len(NODES) else None

                nodes = wait_for(all_ready, timeout=30, what="three virtual nodes Ready")
                assert sorted(nodes) == NODES
                node = nodes["vn-1"]
                assert node["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}
                assert node["metadata"]["labels"]["zone"] == "a"
                assert node["metadata"]["labels"]["nodeagent.dev/virtual"] == "true"
                def all_slices() -> list[dict[str, Any]] | None:
                    items: list[dict[str, Any]] = cp.api_get(SLICES)["items"]
                    return items if len(items) == len(NODES) else None

                slices = wait_for(all_slices, timeout=15, what="the virtual nodes' slices")
                assert sorted(s["spec"]["nodeName"] for s in slices) == NODES
                assert all(len(s["spec"]["devices"]) == 2 and s["spec"]["driver"] == DRIVER for s in slices)
                # created by the publishing binary, as a DRA kubelet plugin's client-go create is recorded
                assert all([(m["manager"], m["operation"]) for m in s["metadata"]["managedFields"]]
                           == [("nodeagent", "Update")] for s in slices)
                first = wait_for(lambda: cp.api_get(LEASES + "vn-2")["spec"]["renewTime"], timeout=15,
                                 what="a Lease")
                wait_for(lambda: cp.api_get(LEASES + "vn-2")["spec"]["renewTime"] != first, timeout=10,
                         what="the Lease renewed")

                cp.kubectl("apply", "-f", "-", input=class_and_template())
                cp.kubectl("apply", "-f", "-", input=POD)
                pod = wait_for(lambda: (p := cp.api_get(TRAINER))["status"].get("phase") == "Running" and p,
                               timeout=30, what="pod Running on a virtual node")
                assert pod["spec"]["nodeName"] in NODES
                conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
                assert conditions["Ready"] == "True" and conditions["PodScheduled"] == "True"
                assert pod["status"]["containerStatuses"][0]["state"]["running"]
                assert pod["status"]["resourceClaimStatuses"]
                assert proc.poll() is None
            finally:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
            assert proc.returncode == 0, (base / "daemon.log").read_text()[-5000:]
