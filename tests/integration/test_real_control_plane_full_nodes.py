"""controlPlane.kubernetes with full virtual nodes (NodeAgentConfiguration.nodes): each joins the real
control plane with its own kubelet identity (system:node:NAME in system:nodes, its certificate issued by
the daemon at start), so the Node authorizer and NodeRestriction hold it to its own objects as they hold
a kubelet. Two full virtual nodes run the fake device plugin and the fake DRA driver on their own
sockets beside the daemon's node; a pod asking for a device-plugin resource and one with a claim from a
template, both pinned to one virtual node by its hostname label, are scheduled there by the real
kube-scheduler (the claim made by the real resourceclaim controller, allocated from that node's own
ResourceSlice), go Running, and show in that node's pod-resources socket with their devices; one
virtual node's credential may not even read the other's Node.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary), skipped
with its reason otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from nodeagent.apis.podresources.v1 import api_pb2, api_pb2_grpc
from tests.integration.daemon_helpers import BIN, free_port, wait_for, write_config
from tests.integration.kubeapiserver import fixture_binary
from tests.integration.test_real_control_plane import EXAMPLES, NODE, REPO, RealCP, node_ready

pytestmark = [pytest.mark.integration]

FULL = ("rfv-0", "rfv-1")
TARGET = "rfv-1"


def _agent(cp: RealCP, binary: Path) -> dict[str, object]:
    plugins = [
        {"name": "gpu", "command": [str(BIN / "nodeagent-device-plugin"), "--config",
                                    str(REPO / "configs" / "plugins" / "fake-gpu.yaml")]},
        {"name": "dra", "command": [str(BIN / "nodeagent-dra-driver"), "--config",
                                    str(REPO / "configs" / "plugins" / "fake-dra.yaml")]},
    ]
    return {
        "nodeName": NODE,
        "node": {"leaseDurationSeconds": 10, "statusUpdateFrequency": "2s"},
        "controlPlane": {"apiServer": {"bindAddress": f"127.0.0.1:{cp.api_port}"},
                         "kubernetes": {"binary": str(binary), "etcdClientPort": free_port(),
                                        "etcdPeerPort": free_port(), "schedulerPort": free_port(),
                                        "controllerManagerPort": free_port()}},
        "shutdownTimeout": "40s",
        "nodes": [{"name": "rfv-{index}", "count": 2, "plugins": plugins}],
    }


@pytest.fixture
def realcp(short_dir: Path) -> Iterator[RealCP]:
    binary = fixture_binary()
    for tool in ("nodeagent-device-plugin", "nodeagent-dra-driver"):
        if not (BIN / tool).exists():
            pytest.skip(f"{tool} is not installed in this environment")
    cp = RealCP(short_dir, binary)
    cp.config = write_config(short_dir, {}, _agent(cp, binary), free_port())
    try:
        yield cp
    finally:
        if cp.proc is not None:
            cp.stop()
        print(cp.log()[-8000:])  # shown for a failed test


def _pinned(path: Path) -> str:
    """The example manifest with the pod pinned to TARGET by its hostname label."""
    import yaml

    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for doc in docs:
        if doc.get("kind") == "Pod":
            doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": TARGET}
    return "\n---\n".join(yaml.safe_dump(d) for d in docs)


@pytest.mark.kube_apiserver
@pytest.mark.timeout(600)
def test_full_virtual_nodes_join_the_real_control_plane_with_their_own_identities(realcp: RealCP) -> None:
    cp = realcp
    cp.start()
    for name in (NODE, *FULL):
        wait_for(lambda n=name: node_ready(cp, n), timeout=90, what=f"node {name} Ready on the real kube-apiserver")
    kubernetes = cp.base / "state" / "kubernetes"
    for name in FULL:  # a kubelet identity each, issued by the daemon
        assert (kubernetes / f"kubelet-{name}.conf").is_file()
    wait_for(lambda: sorted(s["spec"].get("nodeName", "") for s in cp.get("resourceslices")["items"]
                            if s["spec"]["driver"] == "gpu.example.com") == sorted(FULL),
             timeout=90, what="each virtual node's fake DRA driver published its slice")
    wait_for(lambda: cp.get("node", TARGET)["status"].get("allocatable", {}).get("example.com/gpu") == "4",
             timeout=60, what=f"{TARGET}'s fake gpus")
    wait_for(lambda: cp.get("serviceaccount", "default"), timeout=60,
             what="the default ServiceAccount (the real controller manager's)")
    for name in ("dra-1-deviceclass.yaml", "dra-2-claim-template.yaml"):
        cp.kubectl("apply", "-f", str(EXAMPLES / name))
    for name in ("dra-3-pod.yaml", "gpu-pod.yaml"):
        cp.kubectl("apply", "-f", "-", input=_pinned(EXAMPLES / name))

    def running() -> bool:
        phases = cp.kubectl("get", "pods", "gpu-pod", "dra-pod", "-o", "jsonpath={.items[*].status.phase}").split()
        return phases == ["Running", "Running"]

    wait_for(running, timeout=180, what=f"gpu-pod and dra-pod Running on {TARGET}")
    assert cp.get("pod", "gpu-pod")["spec"]["nodeName"] == TARGET
    dra = cp.get("pod", "dra-pod")
    assert dra["spec"]["nodeName"] == TARGET
    (status,) = dra["status"]["resourceClaimStatuses"]
    claim = cp.get("resourceclaim", status["resourceClaimName"])
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["driver"] == "gpu.example.com" and result["pool"] == "pool-a"
    # the slice the device came from is TARGET's own (its driver's, published for its node)
    assert [s["spec"]["nodeName"] for s in cp.get("resourceslices")["items"]
            if s["spec"]["driver"] == "gpu.example.com" and s["spec"]["pool"]["name"] == result["pool"]
            and s["spec"].get("nodeName") == TARGET]

    socket = cp.base / "root" / "nodes" / TARGET / "pod-resources" / "kubelet.sock"
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        listed = api_pb2_grpc.PodResourcesListerStub(channel).List(api_pb2.ListPodResourcesRequest(), timeout=10)
    by_pod = {p.name: p for p in listed.pod_resources}
    assert {"gpu-pod", "dra-pod"} <= set(by_pod)
    gpu_devices = [d for c in by_pod["gpu-pod"].containers for d in c.devices]
    # the kubelet lists a container's devices per NUMA node: two gpus in one or two entries
    assert {d.resource_name for d in gpu_devices} == {"example.com/gpu"}
    assert sum(len(d.device_ids) for d in gpu_devices) == 2
    dra_claims = [r for c in by_pod["dra-pod"].containers for r in c.dynamic_resources]
    assert [(r.claim_name, [(d.driver_name, d.device_name) for d in r.claim_resources])
            for r in dra_claims] == [(status["resourceClaimName"], [("gpu.example.com", result["device"])])]

    # NodeRestriction holds each virtual node to its own Node, as it holds a kubelet
    tool = shutil.which("kubectl")
    assert tool is not None
    # (its discovery cache beside the kubeconfig: without HOME kubectl would write .kube/cache into the working
    # directory, the checkout)
    out = subprocess.run([tool, "--kubeconfig", str(kubernetes / f"kubelet-{FULL[0]}.conf"),
                          f"--cache-dir={kubernetes / 'kubectl-cache'}", "label", "node",
                          TARGET, "intruder=yes"], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "KUBECTL_KUBERC": "false"})
    assert out.returncode != 0
    # (1.37's Node authorizer already refuses the read kubectl label starts with)
    assert f"node '{FULL[0]}' cannot read '{TARGET}', only its own Node object" in out.stderr, out.stderr
    assert cp.stop() == 0
    assert "Traceback" not in cp.log(), cp.log()[-6000:]
