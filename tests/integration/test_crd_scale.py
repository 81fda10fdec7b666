"""The scale subresource of custom resources (a CRD's subresources.scale) through a running
daemon's API, as k8s.io/apiextensions-apiserver serves it: GET/PUT/PATCH .../scale as an
autoscaling/v1 Scale read from and written to the CRD's specReplicasPath, statusReplicasPath and
labelSelectorPath, its errors (no replicas: 500 on GET, 400 on a PATCH that leaves them unset;
a bad value refused by the custom resource's own validation), discovery's `/scale` entry, and
`kubectl scale` of a custom resource. When the kube-apiserver tier runs
(NODEAGENT_KUBE_APISERVER=1) the same requests give the real kube-apiserver's answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_validating_admission_policy import Send, _answer, _sender, daemon_send

pytestmark = [pytest.mark.integration]

GROUP = "scale.example.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BASE = f"/apis/{GROUP}/v1/namespaces/default/gizmos"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gizmos.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}, "scale": {
                               "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                               "labelSelectorPath": ".status.selector"}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}
NAMES = ("g1", "g2", "g3", "g4", "g5")
MERGE = "application/merge-patch+json"


def gizmo(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def ensure_crd(send: Send) -> None:
    """The CRD, and its resource served (kube-apiserver serves a new CRD's resource a moment later)."""
    code, body, _ = send("POST", CRDS, CRD)
    assert code in (201, 409), body
    deadline = time.monotonic() + 30
    while not _served(send):
        assert time.monotonic() < deadline, "the CRD's resource is not served"
        time.sleep(0.2)


def _served(send: Send) -> bool:
    try:
        return send("GET", BASE, None)[0] == 200
    except json.JSONDecodeError:  # kube-apiserver's plain-text 404 before the resource is served
        return False


def _scale(answer: tuple[int, Any, Any]) -> Any:
    code, body, _ = answer
    if code >= 300:
        return _answer(answer)
    md = {k: v for k, v in body["metadata"].items() if k not in ("uid", "resourceVersion", "creationTimestamp")}
    return code, {**body, "metadata": md}


def answers(send: Send) -> list[Any]:
    ensure_crd(send)
    for name in NAMES:
        send("DELETE", f"{BASE}/{name}", None)
    out: list[Any] = []
    code, made, _ = send("POST", BASE, gizmo("g1", {"replicas": 2}))
    assert code == 201, made
    code, made, _ = send("PUT", f"{BASE}/g1/status", {**made, "status": {"replicas": 1, "selector": "app=g"}})
    assert code == 200, made
    out.append(_scale(send("GET", f"{BASE}/g1/scale", None)))
    out.append(_scale(send("PATCH", f"{BASE}/g1/scale", {"spec": {"replicas": 4}}, MERGE)))
    code, got, _ = send("GET", f"{BASE}/g1", None)
    out.append((code, got.get("spec"), got.get("status")))
    out.append(_scale(send("PATCH", f"{BASE}/g1/scale", [{"op": "replace", "path": "/spec/replicas", "value": 7}],
                           "application/json-patch+json")))
    scale_body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "g1"}}
    out.append(_scale(send("PUT", f"{BASE}/g1/scale", {**scale_body, "spec": {"replicas": -1}})))
    out.append(_scale(send("PUT", f"{BASE}/g1/scale", {**scale_body, "spec": {"replicas": 3}})))
    out.append(_scale(send("PUT", f"{BASE}/g1/scale", {**scale_body, "metadata": {"name": "other"}})))
    out.append(_scale(send("PUT", f"{BASE}/g1/scale", {**scale_body, "metadata": {"name": "g1",
                                                                                 "resourceVersion": "1"}})))
    # no replicas at the spec path: GET is a 500, a PATCH must set them
    code, made, _ = send("POST", BASE, gizmo("g2", {"size": "small"}))
    assert code == 201, made
    out.append(_scale(send("GET", f"{BASE}/g2/scale", None)))
    out.append(_scale(send("PATCH", f"{BASE}/g2/scale", {"metadata": {"labels": {"a": "b"}}}, MERGE)))
    out.append(_scale(send("PATCH", f"{BASE}/g2/scale", {"spec": {"replicas": 5}}, MERGE)))
    code, got, _ = send("GET", f"{BASE}/g2", None)
    out.append((code, got.get("spec")))
    # the custom resource's own writes: the scale paths' checks
    out.append(_answer(send("POST", BASE, gizmo("g3", {"replicas": "x"}))))
    out.append(_answer(send("POST", BASE, gizmo("g4", {"replicas": -2}))))
    out.append(_answer(send("POST", BASE, gizmo("g5", "flat"))))
    out.append(_answer(send("POST", BASE, gizmo("g5", {"replicas": 2**31}))))
    code, made, _ = send("POST", BASE, gizmo("g5", {"replicas": 1.5}))
    out.append(code)
    # a custom resource is never updated unconditionally; the status paths' checks on a status write
    bad_status = {"replicas": -1, "selector": {"a": "b"}}
    out.append(_answer(send("PUT", f"{BASE}/g1/status", {**gizmo("g1", {}), "status": bad_status})))
    code, current, _ = send("GET", f"{BASE}/g1", None)
    out.append(_answer(send("PUT", f"{BASE}/g1/status", {**current, "status": bad_status})))
    code, listing, _ = send("GET", f"/apis/{GROUP}/v1", None)
    out.append(sorted((r["name"], r.get("group"), r.get("version"), r["kind"], tuple(r["verbs"]))
                      for r in listing["resources"]))
    for name in NAMES:
        send("DELETE", f"{BASE}/{name}", None)
    return out


def test_custom_resource_scale(api_daemon: Daemon) -> None:
    got = answers(daemon_send(api_daemon))
    assert got[0] == (200, {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {
        "name": "g1", "namespace": "default"}, "spec": {"replicas": 2}, "status": {"replicas": 1, "selector": "app=g"}})
    assert got[1][1]["spec"] == {"replicas": 4}
    assert got[2][1] == {"replicas": 4}
    assert got[3][1]["spec"] == {"replicas": 7}
    assert got[4][:3] == (422, "Invalid", 'Gizmo.scale.example.com "g1" is invalid: .spec.replicas: Invalid value: '
                                          "-1: should be a non-negative integer")
    assert got[5][1]["spec"] == {"replicas": 3}
    assert got[6][:2] == (400, "BadRequest")
    assert got[7][:2] == (409, "Conflict")
    assert got[8][:3] == (500, "InternalError", 'Internal error occurred: the spec replicas field ".spec.replicas" '
                                                "does not exist")
    assert got[9][:3] == (400, "BadRequest", 'the spec replicas field ".spec.replicas" cannot be empty')
    assert got[10][1]["spec"] == {"replicas": 5}
    assert got[11] == (200, {"size": "small", "replicas": 5})
    assert got[12][2].endswith(".spec.replicas: Invalid value: 0: .spec.replicas accessor error: x is of the type "
                               "string, expected int64")
    assert got[13][2].endswith("should be a non-negative integer")
    assert "expected map[string]interface{}" in got[14][2]
    assert got[15][2].endswith("should be less than or equal to 2147483647")
    assert got[16] == 422
    assert got[17][:3] == (422, "Invalid", 'gizmos.scale.example.com "g1" is invalid: metadata.resourceVersion: '
                                           "Invalid value: 0: must be specified for an update")
    assert got[18][2] == ('Gizmo.scale.example.com "g1" is invalid: [.status.replicas: Invalid value: -1: should be '
                          'a non-negative integer, .status.selector: Invalid value: "": .status.selector accessor '
                          "error: map[a:b] is of the type map[string]interface {}, expected string]")
    assert ("gizmos/scale", "autoscaling", "v1", "Scale", ("get", "patch", "update")) in got[-1]


def _kubectl_scale(kubeconfig: str, kubectl: str) -> list[str]:
    """`kubectl scale` and `kubectl get --subresource=scale` of a custom resource."""
    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([kubectl, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True,
                              timeout=60, input=stdin, env={**os.environ, "KUBECTL_KUBERC": "false"})
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}{done.stdout}"
        return done.stdout

    run("delete", "gizmo", "g-kubectl", "--ignore-not-found")
    run("create", "-f", "-", stdin=json.dumps(gizmo("g-kubectl", {"replicas": 1})))
    out = [run("scale", "gizmo", "g-kubectl", "--replicas=3")]
    out.append(run("scale", "gizmo", "g-kubectl", "--current-replicas=3", "--replicas=4"))
    out.append(run("get", "gizmo", "g-kubectl", "-o", "jsonpath={.spec.replicas}"))
    out.append(run("get", "gizmo", "g-kubectl", "--subresource=scale", "-o", "jsonpath={.spec.replicas}"))
    run("delete", "gizmo", "g-kubectl")
    return out


def test_kubectl_scale_of_a_custom_resource(api_daemon: Daemon) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    ensure_crd(daemon_send(api_daemon))
    got = _kubectl_scale(str(api_daemon.kubeconfig), kubectl)
    assert got == ["gizmo.scale.example.com/g-kubectl scaled\n"] * 2 + ["4", "4"]


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = answers(daemon_send(api_daemon))
    theirs = answers(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    assert not differ, "\n".join(f"answer {i}:\n ours   {a}\n theirs {b}" for i, a, b in differ)
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        assert _kubectl_scale(str(api_daemon.kubeconfig), kubectl) == _kubectl_scale(
            str(kube_apiserver.kubeconfig), kubectl)
