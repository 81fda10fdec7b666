"""controlPlane.kubernetes: `nodeagent run` starts a real control plane (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager, all from the fixture's multi-role binary, upstream's commands unchanged) and its node
joins it with a kubelet's identity, its virtual nodes with their shared RBAC identity. The node and the virtual
nodes go Ready on the real kube-apiserver (a pod bound to a virtual node goes Running); a pod asking for a
device-plugin resource and one with a claim from a template (the real resourceclaim controller makes the
claim, the real scheduler allocates it from the fake DRA driver's ResourceSlice and binds both) go Running,
seen with kubectl and the admin kubeconfig the daemon wrote; a restart reuses the PKI and etcd's data; and
after the daemon stops no process it started is left.

Opt-in with the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1: the same cached fixture binary), skipped
with its reason otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.daemon_helpers import BIN, free_port, wait_for, write_config
from tests.integration.kubeapiserver import fixture_binary

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "configs" / "examples"
NODE = "realcp-node"


def descendants(pid: int) -> set[int]:
    """Every live process under `pid` (by /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class RealCP:
    """A daemon with controlPlane.kubernetes, and kubectl with the admin kubeconfig it writes."""

    def __init__(self, base: Path, binary: Path | None, virtual_nodes: list[dict[str, Any]] | None = None) -> None:
        """With `binary` None, the same daemon on the embedded control plane (its twin in comparisons);
        `virtual_nodes` instead of the two default ones."""
        self.base = base
        self.api_port = free_port()
        control_plane: dict[str, Any] = {"apiServer": {"bindAddress": f"127.0.0.1:{self.api_port}"}}
        if binary is not None:
            control_plane["kubernetes"] = {"binary": str(binary), "etcdClientPort": free_port(),
                                           "etcdPeerPort": free_port(), "schedulerPort": free_port(),
                                           "controllerManagerPort": free_port()}
        agent: dict[str, Any] = {
            "nodeName": NODE,
            "node": {"leaseDurationSeconds": 10, "statusUpdateFrequency": "2s"},
            "controlPlane": control_plane,
            "shutdownTimeout": "40s",
            # virtual nodes beside the node: one shared RBAC identity (nodeagent:virtual-nodes), not a kubelet's
            "virtualNodes": virtual_nodes if virtual_nodes is not None else [
                {"name": "rcv-{index}", "count": 2, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "10"},
                 "devices": [{"driver": "virtual.example.com", "count": 2, "name": "dev-{index}"}]}],
            "plugins": [
                {"name": "gpu", "command": [str(BIN / "nodeagent-device-plugin"), "--config",
                                            str(REPO / "configs" / "plugins" / "fake-gpu.yaml")]},
                {"name": "dra", "command": [str(BIN / "nodeagent-dra-driver"), "--config",
                                            str(REPO / "configs" / "plugins" / "fake-dra.yaml")]},
            ],
        }
        self.config = write_config(base, {}, agent, free_port())
        self.log_path = base / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.base / "state" / "kubeconfig"

    def start(self) -> None:
        before = self.log().count("daemon: ready")
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(self.config)],
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.log().count("daemon: ready") > before or self.proc is None
                 or self.proc.poll() is not None,
                 timeout=240, what="the daemon ready (the control plane up and the node started)")
        assert self.proc.poll() is None, f"the daemon exited:\n{self.log()[-6000:]}"

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        tool = shutil.which("kubectl")
        if tool is None:
            pytest.skip("kubectl is not installed")
        out = subprocess.run([tool, "--kubeconfig", str(self.kubeconfig), *args], capture_output=True, text=True,
                             timeout=60, input=input, env={**os.environ, "KUBECTL_KUBERC": "false"})
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {out.stderr}{out.stdout}")
        return out.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))


@pytest.fixture
def realcp(short_dir: Path) -> Iterator[RealCP]:
    binary = fixture_binary()
    for tool in ("nodeagent-device-plugin", "nodeagent-dra-driver"):
        if not (BIN / tool).exists():
            pytest.skip(f"{tool} is not installed in this environment")
    cp = RealCP(short_dir, binary)
    try:
        yield cp
    finally:
        if cp.proc is not None:
            cp.stop()
        print(cp.log()[-8000:])  # shown for a failed test


def node_ready(cp: RealCP, name: str = NODE) -> bool:
    node = cp.get("node", name)
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))


@pytest.mark.kube_apiserver
@pytest.mark.timeout(600)
def test_one_setting_starts_a_real_control_plane_the_node_joins(realcp: RealCP) -> None:
    cp = realcp
    cp.start()
    assert cp.proc is not None
    components = {p for p in descendants(cp.proc.pid) if "kube-apiserver-fixture" in os.readlink(f"/proc/{p}/exe")}
    assert len(components) == 4, components  # etcd, kube-apiserver, kube-scheduler, kube-controller-manager
    # each runs under its role's name (argv[0]: its user agent, so the field manager kube-apiserver records)
    assert sorted(Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0].decode() for p in components) == \
        ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]
    kubernetes = cp.base / "state" / "kubernetes"
    for name in ("etcd.log", "kube-apiserver.log", "kube-scheduler.log", "kube-controller-manager.log"):
        assert (kubernetes / "logs" / name).exists(), name
    assert (kubernetes / "etcd").is_dir()
    version = json.loads(cp.kubectl("version", "-o", "json"))["serverVersion"]
    assert version["gitVersion"] == "v1.37.2"  # the real kube-apiserver, not the embedded one's -nodeagent
    wait_for(lambda: node_ready(cp), timeout=60, what="the node Ready on the real kube-apiserver")
    for virtual in ("rcv-0", "rcv-1"):
        wait_for(lambda v=virtual: node_ready(cp, v), timeout=60, what=f"virtual node {virtual} Ready")
    slices = cp.get("resourceslices")["items"]
    assert sorted(s["spec"]["nodeName"] for s in slices if s["spec"]["driver"] == "virtual.example.com") == \
        ["rcv-0", "rcv-1"]
    # the virtual nodes' identity is no kubelet's and holds no more than its rules
    assert cp.kubectl("auth", "can-i", "--as=nodeagent:virtual-nodes", "create", "secrets",
                      check=False).strip() == "no"
    cp.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-virtual", "namespace": "default"},
        "spec": {"nodeName": "rcv-1", "containers": [{"name": "c", "image": "pause"}]}}))
    # the node's identity is a kubelet's and holds no more: no list of ResourceClaims (it GETs those of its
    # pods, which the Node authorizer allows, as the kubelet does)
    assert cp.kubectl("auth", "can-i", "--as=system:node:" + NODE, "--as-group=system:nodes", "list",
                      "resourceclaims.resource.k8s.io", check=False).strip() == \
        "no - node: can only get individual resources of this type"  # the Node authorizer's reason
    wait_for(lambda: cp.get("serviceaccount", "default"), timeout=60,
             what="the default ServiceAccount (the real controller manager's)")
    for name in ("dra-1-deviceclass.yaml", "dra-2-claim-template.yaml", "dra-3-pod.yaml", "gpu-pod.yaml"):
        cp.kubectl("apply", "-f", str(EXAMPLES / name))

    def running() -> bool:
        phases = cp.kubectl("get", "pods", "gpu-pod", "dra-pod", "-o", "jsonpath={.items[*].status.phase}").split()
        return phases == ["Running", "Running"]

    wait_for(running, timeout=120, what="gpu-pod and dra-pod Running on the node")
    wait_for(lambda: cp.kubectl("get", "pod", "on-virtual", "-o", "jsonpath={.status.phase}") == "Running",
             timeout=60, what="the pod bound to a virtual node Running")
    gpu = cp.get("pod", "gpu-pod")
    assert gpu["spec"]["nodeName"] == NODE  # the only node with example.com/gpu
    dra = cp.get("pod", "dra-pod")
    (status,) = dra["status"]["resourceClaimStatuses"]
    claim = cp.get("resourceclaim", status["resourceClaimName"])
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["driver"] == "gpu.example.com" and result["request"].startswith("gpu/")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["dra-pod"]
    # nodeagent's own pod records show the device plugin's devices went to gpu-pod
    node = cp.get("node", NODE)
    assert node["status"]["allocatable"]["example.com/gpu"] == "4"

    # a restart reuses the PKI and etcd's data: the same CA, the objects still there
    ca = (kubernetes / "pki" / "ca.crt").read_bytes()
    issued = cp.log().count("issuing kubernetes certificate")
    assert issued == 7  # serving, kubelet client, admin, scheduler, controller manager, the node, virtual nodes
    pids = descendants(cp.proc.pid)
    assert cp.stop() == 0
    left = [p for p in pids if alive(p)]
    assert not left, f"processes left after the daemon stopped: {left}"
    assert "kubernetes component stopped role=etcd" in cp.log()
    cp.start()
    assert (kubernetes / "pki" / "ca.crt").read_bytes() == ca
    assert cp.log().count("issuing kubernetes certificate") == issued  # none issued again
    wait_for(lambda: cp.kubectl("get", "pod", "gpu-pod", "-o", "jsonpath={.status.phase}") == "Running", timeout=60,
             what="gpu-pod still there and Running after the restart")
    pids = descendants(cp.proc.pid)
    assert cp.stop() == 0
    left = [p for p in pids if alive(p)]
    assert not left, f"processes left after the daemon stopped: {left}"
    assert "Traceback" not in cp.log(), cp.log()[-6000:]


def test_a_missing_binary_fails_the_start_with_the_reason(short_dir: Path) -> None:
    """No binary at the named path: the daemon exits 2 at once, naming the field and the make target."""
    agent = {"controlPlane": {"kubernetes": {"binary": str(short_dir / "nowhere" / "kube")}}}
    config = write_config(short_dir, {}, agent, free_port())
    done = subprocess.run([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"controlPlane.kubernetes.binary: {short_dir}/nowhere/kube: not an executable file" in done.stderr
    assert "make kube-binaries" in done.stderr
