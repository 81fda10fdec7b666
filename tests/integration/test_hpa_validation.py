"""autoscaling/v2 HorizontalPodAutoscaler's defaults and validation through a running daemon's API:
invalid specs refused with kube-apiserver's 422 (texts, field paths, order), a valid one stored
with upstream's defaults, a status write with a negative count refused. When the kube-apiserver
tier runs (NODEAGENT_KUBE_APISERVER=1) the same requests give the real kube-apiserver's answers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_validating_admission_policy import Send, _answer, _sender, daemon_send

pytestmark = [pytest.mark.integration]

BASE = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"


def hpa(name: str, **spec: Any) -> dict[str, Any]:
    body = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 4,
            **spec}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "default"}, "spec": {k: v for k, v in body.items()
                                                                           if v is not None}}


CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
INVALID = [
    hpa("hv-bounds", minReplicas=0, maxReplicas=0),
    hpa("hv-order", minReplicas=5, maxReplicas=3),
    hpa("hv-negative", minReplicas=-1, maxReplicas=-2),
    hpa("hv-ref", scaleTargetRef={"apiVersion": "v1", "kind": "", "name": "a/b"}),
    hpa("hv-metrics", metrics=[
        {"type": "Pods"},
        {"type": "Resource", "resource": {"name": "", "target": {"type": "Bad", "averageUtilization": 0}}},
        {"type": "External", "external": {"metric": {"name": ""}, "target": {"type": "Value", "value": "1",
                                                                              "averageValue": "-1"}}},
        {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s", "apiVersion": "v1"},
                                      "metric": {"name": "qps"}, "target": {"type": "Value"}},
         "pods": {"metric": {"name": "x"}, "target": {"type": "AverageValue", "averageValue": "1"}}},
        {"type": "Nope"},
    ]),
    hpa("hv-behavior", behavior={"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Most",
                                             "policies": [{"type": "Jump", "value": 0, "periodSeconds": 2000}]},
                                 "scaleDown": {"policies": []}}),
]


def answers(send: Send) -> list[Any]:
    out: list[Any] = []
    for obj in INVALID:
        out.append(_answer(send("POST", BASE, obj)))
    name = "hv-valid"
    send("DELETE", f"{BASE}/{name}", None)
    code, body, _ = send("POST", BASE, hpa(name, behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}))
    assert code == 201, body
    out.append(body["spec"])
    # no resourceVersion: the real kube-controller-manager's autoscaler may have written the status since
    unconditional = {**body, "metadata": {k: v for k, v in body["metadata"].items() if k != "resourceVersion"}}
    code, body, _ = send("PUT", f"{BASE}/{name}/status", {**unconditional, "status": {"currentReplicas": -1,
                                                                                      "desiredReplicas": 1}})
    out.append(_answer((code, body, [])))
    send("DELETE", f"{BASE}/{name}", None)
    return out


def test_hpa_defaults_and_validation(api_daemon: Daemon) -> None:
    got = answers(daemon_send(api_daemon))
    bounds = got[0]
    assert bounds[:2] == (422, "Invalid")
    assert bounds[2] == ('HorizontalPodAutoscaler.autoscaling "hv-bounds" is invalid: [spec.metrics: Forbidden: '
                         "must specify at least one Object or External metric to support scaling to zero replicas, "
                         "spec.maxReplicas: Required value]")
    assert got[1][2].endswith("spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`")
    assert "spec.minReplicas: Invalid value: -1: must be greater than or equal to 0" in got[2][2]
    assert got[4][2].count("spec.metrics[4].type: Unsupported value") == 1
    spec = got[len(INVALID)]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]
    assert spec["behavior"]["scaleDown"] == {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                                             "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
    assert spec["behavior"]["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4, "periodSeconds": 15}
    assert got[-1][:2] == (422, "Invalid") and "status.currentReplicas: Invalid value: -1" in got[-1][2]


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = answers(daemon_send(api_daemon))
    theirs = answers(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
    assert ours == theirs
