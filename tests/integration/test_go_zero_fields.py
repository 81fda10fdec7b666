"""Objects answered with the fields kube-apiserver's Go types always write (apply/gozero.py), whoever
wrote them and however little they sent: a pod's condition without lastProbeTime, a container status
without lastState or state, a Node created without daemonEndpoints or nodeInfo, a Deployment without
strategy. Each answer's keys are compared with the real kube-apiserver's in the kube-apiserver tier; the
daemon's half always runs against the expected fills.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_object_size import MERGE, Send, _daemon_send, _sender

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PODS = "/api/v1/namespaces/default/pods"


def _shape(value: Any) -> Any:
    """The keys of every mapping, nested; lists as their items' shapes; scalars as their JSON type
    (null kept apart: Go writes a zero Time as null)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return None if value is None else type(value).__name__


def scenarios(send: Send, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pod = f"{prefix}-pod"
    send("DELETE", f"{PODS}/{pod}?gracePeriodSeconds=0")
    code, doc = send("POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
                                    "spec": {"schedulingGates": [{"name": "example.com/hold"}],
                                             "containers": [{"name": "c", "image": "pause"}]}})
    assert code == 201, doc
    code, doc = send("PATCH", f"{PODS}/{pod}/status", {"status": {
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [{"name": "c", "image": "pause", "imageID": "", "ready": False, "restartCount": 0}]}},
        MERGE)
    assert code == 200, doc
    out["pod status"] = _shape({k: doc["status"].get(k) for k in ("conditions", "containerStatuses")})
    out["pod container"] = _shape(doc["spec"]["containers"][0].get("resources"))
    send("DELETE", f"{PODS}/{pod}?gracePeriodSeconds=0")
    node = f"{prefix}-node"
    send("DELETE", f"/api/v1/nodes/{node}")
    code, doc = send("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    assert code == 201, doc
    # the taints: kube-apiserver's TaintNodesByCondition admission (the not-ready taint), the same on both
    out["node"] = _shape({"spec": doc.get("spec"), "status": doc.get("status")})
    send("DELETE", f"/api/v1/nodes/{node}")
    return out


EXPECTED = {
    "pod status": {"conditions": [{"lastProbeTime": None, "lastTransitionTime": None, "status": "str",
                                   "type": "str"}],
                   "containerStatuses": [{"image": "str", "imageID": "str", "lastState": {}, "name": "str",
                                          "ready": "bool", "restartCount": "int", "state": {}}]},
    "pod container": {},
    "node": {"spec": {"taints": [{"effect": "str", "key": "str"}]},
             "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": "int"}}, "nodeInfo": {
        k: "str" for k in ("architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
                           "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID")}}},
}


def test_go_always_written_fields(api_daemon: Daemon) -> None:
    assert scenarios(_daemon_send(api_daemon), "gz") == EXPECTED


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = scenarios(_daemon_send(api_daemon), "gzo")
    theirs = scenarios(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}), "gzo")
    assert ours == theirs
