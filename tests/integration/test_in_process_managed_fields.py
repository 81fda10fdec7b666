"""managedFields of what the daemon writes in process before any client: the node registering, a
virtual node's Node and its ResourceSlice (written at the control plane's start, before the API
serves: the store has its field manager from the start, wiring/control_plane.make_api_server). The
slice is recorded as kube-apiserver records a DRA kubelet plugin's create through client-go: an
Update by the publishing binary, here `nodeagent` (virtual_nodes.SLICE_MANAGER); compared, fields
and all, with the real kube-apiserver's entry for the same slice created by that manager in its tier
(NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, daemon_in_temp_dir
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_protobuf_answers import daemon_raw, kube_raw

pytestmark = [pytest.mark.integration]

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
AGENT = {"virtualNodes": [{"name": "mf-vn", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "20"},
                           "devices": [{"driver": "gpu.mf.example.com", "count": 2, "name": "gpu-{index}",
                                        "attributes": {"model": {"string": "a"}},
                                        "capacity": {"memory": "16Gi"}}]}],
         "controlPlane": {"apiServer": {"bindAddress": "127.0.0.1:0"}}}


@pytest.fixture(scope="module")
def vn_daemon() -> Iterator[Daemon]:
    with daemon_in_temp_dir("na-mfvn-", agent=AGENT) as d:
        yield d


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "time"} for e in obj["metadata"].get("managedFields") or ()]


def _slice(d: Daemon) -> dict[str, Any]:
    code, _, body = daemon_raw(d)("GET", f"{SLICES}?labelSelector=nodeagent.dev/virtual-node", None,
                                  "application/json")
    assert code == 200, body
    [out] = json.loads(body)["items"]
    return dict(out)


def test_in_process_writes_have_their_managers(vn_daemon: Daemon) -> None:
    [entry] = _entries(_slice(vn_daemon))
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("nodeagent", "Update", "resource.k8s.io/v1")
    assert {"f:driver", "f:nodeName", "f:pool", "f:devices"} <= set(entry["fieldsV1"]["f:spec"])
    code, _, body = daemon_raw(vn_daemon)("GET", "/api/v1/nodes", None, "application/json")
    assert code == 200, body
    for node in json.loads(body)["items"]:  # the daemon's own node and the virtual one
        assert "kubelet" in {e["manager"] for e in node["metadata"].get("managedFields") or ()}, node["metadata"]


@pytest.mark.kube_apiserver
def test_virtual_slice_entry_as_kube_apiserver(vn_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = _slice(vn_daemon)
    send = kube_raw(kube_apiserver)
    name = ours["metadata"]["name"]
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "labels": ours["metadata"]["labels"]}, "spec": ours["spec"]}
    send("DELETE", f"{SLICES}/{name}", None, "application/json")
    code, _, out = send("POST", f"{SLICES}?fieldManager=nodeagent", body, "application/json")
    assert code == 201, out
    send("DELETE", f"{SLICES}/{name}", None, "application/json")
    assert _entries(ours) == _entries(json.loads(out))
