"""Every full virtual node (`nodes:`) serves its own kubelet endpoint, reached through the embedded API server's
node proxy as kube-apiserver reaches each kubelet; scheduling-only `virtualNodes` have no kubelet.

Real clients only: kubectl (get --raw through nodes/NAME/proxy, logs), curl straight to each node's port, and
Python's ssl module for the certificate each endpoint presents. /runningpods/ is checked here for the daemon's
own node and a full virtual node: the pods whose sandbox is ready, with their running containers only.
"""

from __future__ import annotations

import json
import shutil
import ssl
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for
from tests.integration.test_kubelet_endpoint import curl, skip_unless_proxyable, token

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("curl") is None or shutil.which("kubectl") is None,
                                 reason="curl and kubectl are needed")]

REPO = Path(__file__).resolve().parents[2]
LOCAL = "test-node"
FULL = ("fn-0", "fn-1")
VIRTUAL = "vn-0"


def pod(name: str, node: str, *, init_sidecar: bool = False, gpu: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": {"kubernetes.io/hostname": node},
        "containers": [{"name": "app", "image": "example/app:1", "env": [{"name": "WHERE", "value": node}],
                        "resources": {"limits": {"example.com/gpu": "1"}} if gpu else {}},
                       {"name": "side", "image": "example/side:2"}],
    }
    if init_sidecar:  # a restartable init container runs beside the others (created first)
        spec["initContainers"] = [{"name": "proxy", "image": "example/proxy:3", "restartPolicy": "Always"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def node_port(d: Daemon, name: str) -> int:
    node = d.kubectl_json("get", "node", name)
    return int(((node["status"].get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or 0)


def running(d: Daemon, name: str) -> bool:
    return bool(d.kubectl_json("get", "pod", name).get("status", {}).get("phase") == "Running")


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    base = Path(tempfile.mkdtemp(prefix="na-fe-", dir="/tmp"))
    gpu = {"name": "fake-gpu", "command": [sys.executable, "-m", "plugins.fake_device_plugin", "--config",
                                           str(REPO / "configs/plugins/fake-gpu.yaml")],
           "env": {"PYTHONPATH": str(REPO)}}
    agent = {"nodes": [{"name": "fn-{index}", "count": 2, "plugins": [gpu]}],
             "virtualNodes": [{"name": VIRTUAL, "capacity": {"cpu": "4", "memory": "8Gi", "pods": "10"}}]}
    try:
        with running_daemon(base, agent=agent) as d:
            wait_for(lambda: all(d.kubectl("get", "node", n, check=False).returncode == 0 for n in FULL),
                     timeout=30, what="the full virtual nodes registered")
            wait_for(lambda: d.kubectl_json("get", "node", "fn-1")["status"].get("allocatable", {})
                     .get("example.com/gpu") == "4", timeout=30, what="fn-1's fake gpus")
            d.kubectl("apply", "-f", "-", input=json.dumps(pod("on-fn-1", "fn-1", init_sidecar=True, gpu=True)))
            d.kubectl("apply", "-f", "-", input=json.dumps(pod("on-local", LOCAL)))
            for name in ("on-fn-1", "on-local"):
                wait_for(lambda name=name: running(d, name), timeout=30, what=f"pod {name} running")
            yield d
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_each_full_node_registers_its_own_port(daemon: Daemon) -> None:
    ports = {name: node_port(daemon, name) for name in (LOCAL, *FULL)}
    assert all(ports.values()) and len(set(ports.values())) == 3, ports
    # the scheduling-only virtual node has no kubelet, so no endpoint in its Node
    assert node_port(daemon, VIRTUAL) == 0


def test_each_endpoint_presents_its_own_certificate(daemon: Daemon) -> None:
    """The kubelet's self-signed pair per node (ROOT/pki of the node): CN NODE@UNIX, the node name as DNS name."""
    for name in (LOCAL, *FULL):
        pem = ssl.get_server_certificate(("127.0.0.1", node_port(daemon, name)))
        cert = x509.load_pem_x509_certificate(pem.encode())
        cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        assert isinstance(cn, str) and cn.startswith(f"{name}@"), cn
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert names.get_values_for_type(x509.DNSName) == [name]
    assert (daemon.root / "nodes" / "fn-1" / "pki" / "kubelet.crt").is_file()


def test_the_node_proxy_reaches_each_full_node(daemon: Daemon) -> None:
    skip_unless_proxyable(daemon.kubectl_json("get", "node", "fn-1"))
    for name in FULL:
        raw = f"/api/v1/nodes/{name}/proxy"
        configz = json.loads(daemon.kubectl("get", "--raw", f"{raw}/configz").stdout)
        assert configz["kubeletconfig"]["maxPods"] == 110
        assert configz["nodeagentconfig"]["nodeName"] == name
        summary = json.loads(daemon.kubectl("get", "--raw", f"{raw}/stats/summary").stdout)
        assert summary["node"]["nodeName"] == name
        assert daemon.kubectl("get", "--raw", f"{raw}/healthz").stdout == "ok"
        pods = json.loads(daemon.kubectl("get", "--raw", f"{raw}/pods").stdout)
        assert [p["metadata"]["name"] for p in pods["items"] or []] == (["on-fn-1"] if name == "fn-1" else [])
        resource = daemon.kubectl("get", "--raw", f"{raw}/metrics/resource").stdout
        assert ('container_memory_working_set_bytes{container="app",namespace="default",pod="on-fn-1"}'
                in resource) == (name == "fn-1")


def test_kubectl_logs_of_a_pod_on_a_full_node(daemon: Daemon) -> None:
    skip_unless_proxyable(daemon.kubectl_json("get", "node", "fn-1"))
    lines = daemon.kubectl("logs", "on-fn-1", "-c", "app").stdout.splitlines()
    assert lines[0].startswith("nodeagent runs no containers: this is not the output of container app")
    assert "  WHERE=fn-1\t# spec" in lines
    # fn-1's own fake device plugin answered Allocate for the gpu
    assert any(line.startswith("  FAKE_GPU_DEVICES=") and "# device plugin example.com/gpu" in line
               for line in lines), lines


def test_each_endpoint_authenticates_and_authorizes(daemon: Daemon) -> None:
    url = f"https://127.0.0.1:{node_port(daemon, 'fn-0')}"
    assert curl(f"{url}/configz") == (401, "Unauthorized")
    assert curl(f"{url}/configz", "-H", "Authorization: Bearer not-a-token") == (401, "Unauthorized")
    code, body = curl(f"{url}/configz", "-H", f"Authorization: Bearer {token(daemon)}")
    assert code == 200 and json.loads(body)["nodeagentconfig"]["nodeName"] == "fn-0"


def test_runningpods_lists_what_the_runtime_runs(daemon: Daemon) -> None:
    """GetRunningPods: ToAPIPod of each pod with a ready sandbox, running containers only, newest first."""
    admin = ("-H", f"Authorization: Bearer {token(daemon)}")
    url = f"https://127.0.0.1:{node_port(daemon, 'fn-1')}"
    code, body = curl(f"{url}/runningpods/", *admin)
    assert code == 200
    uid = daemon.kubectl_json("get", "pod", "on-fn-1")["metadata"]["uid"]
    assert json.loads(body) == {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [{
        "metadata": {"name": "on-fn-1", "namespace": "default", "uid": uid},
        # newest first: the regular containers in reverse, then the sidecar init container created before them
        "spec": {"containers": [{"name": "side", "image": "example/side:2", "resources": {}},
                                {"name": "app", "image": "example/app:1", "resources": {}},
                                {"name": "proxy", "image": "example/proxy:3", "resources": {}}]},
        "status": {}}]}
    assert curl(f"{url}/runningpods", *admin)[0] == 307  # Go's ServeMux: the slash-terminated path
    empty = f"https://127.0.0.1:{node_port(daemon, 'fn-0')}/runningpods/"
    assert curl(empty, *admin) == (200, '{"kind":"PodList","apiVersion":"v1","metadata":{},"items":null}\n')
    assert curl(f"{url}/runningpods/")[0] == 401
    local = json.loads(curl(f"https://127.0.0.1:{node_port(daemon, LOCAL)}/runningpods/", *admin)[1])
    assert [p["metadata"]["name"] for p in local["items"]] == ["on-local"]


def test_a_scheduling_only_virtual_node_has_no_kubelet(daemon: Daemon) -> None:
    """virtualNodes exist only as API objects: the proxy answers as for a node whose kubelet does not run (503)."""
    out = daemon.kubectl("get", "--raw", f"/api/v1/nodes/{VIRTUAL}/proxy/configz", check=False)
    assert out.returncode != 0
    assert "ServiceUnavailable" in out.stderr or "error trying to reach service" in out.stderr, out.stderr
