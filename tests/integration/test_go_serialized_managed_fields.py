"""managedFields where the Go types decide: kube-apiserver compares Go objects, which always hold a
plain struct and every field without omitempty (at its zero value when unset) and hold a pointer
struct only when set. So a pointer struct a write adds is recorded whole (its "." entry: a
Deployment's strategy.rollingUpdate, a container's probes), a plain struct is not, and a create
leaves unowned a non-omitempty field set to its zero value (a StatefulSet's `serviceName: ""`), as
its comparison with the empty Go object finds nothing changed there. Compared with the real
kube-apiserver in its tier (NODEAGENT_KUBE_APISERVER=1); the daemon's half always runs, against the
entries upstream was seen to write (nodeagent/apiserver/apply/goserialized.py has the why).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_protobuf_answers import Raw, daemon_raw, kube_raw

pytestmark = [pytest.mark.integration]

APPS = "/apis/apps/v1/namespaces/default"
LABELS = {"app": "gs"}
CONTAINER = {
    "name": "c", "image": "pause",
    "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5},
    "securityContext": {"runAsUser": 1000, "capabilities": {"drop": ["ALL"]}},
    "resources": {"limits": {"cpu": "1"}},
}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {"containers": [CONTAINER]}}


def _statefulset(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"serviceName": "", "replicas": 0, "selector": {"matchLabels": LABELS}, "template": TEMPLATE,
                     "ordinals": {"start": 2}}}


def _deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": LABELS}, "template": TEMPLATE,
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}}}


def _put(send: Raw, path: str, manager: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The object at `path` read, changed and written back by `manager`; again on a 409 (the
    workload controllers write their status meanwhile)."""
    for _ in range(10):
        code, _, body = send("GET", path, None, "application/json")
        assert code == 200, body
        obj = json.loads(body)
        change(obj)
        code, _, body = send("PUT", f"{path}?fieldManager={manager}", obj, "application/json")
        if code != 409:
            assert code == 200, body
            out: dict[str, Any] = json.loads(body)
            return out
    raise AssertionError(f"{path}: 409 ten times")


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The clients' entries without their times, by manager: not the controllers' status writes (the
    embedded ones', and the real kube-controller-manager's when the tier's kube-apiserver runs one,
    recorded under the fixture binary's name), which follow their own timing; entries of one second
    are ordered by manager, of two seconds by time, and a step may straddle a second on either side."""
    return sorted(({k: v for k, v in e.items() if k != "time"} for e in obj["metadata"]["managedFields"]
                   if e["manager"] != "kube-controller-manager" and e.get("subresource") != "status"),
                  key=lambda e: (e["manager"], e["operation"]))


def _writes(send: Raw, name: str) -> dict[str, list[dict[str, Any]]]:
    """Each step's managedFields: a StatefulSet and a Deployment created ("create"); the
    StatefulSet's ordinals.start left out by another writer's update (decoded as 0: that writer
    owns it), the Deployment's rollingUpdate taken out ("update"); then pointer structs added in
    place of others ("readd")."""
    out: dict[str, list[dict[str, Any]]] = {}
    for plural in ("statefulsets", "deployments"):
        send("DELETE", f"{APPS}/{plural}/{name}", None, "application/json")
    code, _, body = send("POST", f"{APPS}/statefulsets?fieldManager=maker", _statefulset(name), "application/json")
    assert code == 201, body
    out["sts-create"] = _entries(json.loads(body))
    code, _, body = send("POST", f"{APPS}/deployments?fieldManager=maker", _deployment(name), "application/json")
    assert code == 201, body
    out["deploy-create"] = _entries(json.loads(body))

    out["sts-update"] = _entries(_put(send, f"{APPS}/statefulsets/{name}", "editor2",
                                      lambda o: o["spec"].update(ordinals={})))
    out["deploy-update"] = _entries(_put(send, f"{APPS}/deployments/{name}", "editor",
                                         lambda o: o["spec"].update(strategy={"type": "Recreate"})))

    def readd(deploy: dict[str, Any]) -> None:
        pod = deploy["spec"]["template"]["spec"]
        pod["containers"][0]["readinessProbe"] = {"exec": {"command": ["true"]}}
        del pod["containers"][0]["livenessProbe"]
        pod["securityContext"] = {"sysctls": [{"name": "net.core.somaxconn", "value": "1"}]}

    out["deploy-readd"] = _entries(_put(send, f"{APPS}/deployments/{name}", "editor3", readd))
    for plural in ("statefulsets", "deployments"):
        send("DELETE", f"{APPS}/{plural}/{name}", None, "application/json")
    return out


def _spec(entries: list[dict[str, Any]], manager: str) -> dict[str, Any]:
    [entry] = [e for e in entries if e["manager"] == manager]
    spec: dict[str, Any] = entry["fieldsV1"]["f:spec"]
    return spec


def test_pointer_structs_and_zero_values(api_daemon: Daemon) -> None:
    got = _writes(daemon_raw(api_daemon), "gs-ours")
    sts = _spec(got["sts-create"], "maker")
    assert "f:serviceName" not in sts and "f:replicas" in sts
    container = sts["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert container["f:livenessProbe"]["."] == {} and container["f:livenessProbe"]["f:httpGet"]["."] == {}
    assert container["f:securityContext"]["f:capabilities"]["."] == {}
    assert container["f:resources"]["."] == {}  # a plain struct, but of a new list item
    assert "." not in sts["f:template"] and "." not in sts["f:template"]["f:spec"]
    deploy = _spec(got["deploy-create"], "maker")
    assert deploy["f:strategy"]["f:rollingUpdate"] == {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}
    assert "." not in deploy["f:strategy"]
    assert sts["f:ordinals"] == {".": {}, "f:start": {}}
    assert _spec(got["sts-update"], "editor2") == {"f:ordinals": {"f:start": {}}}
    readd = _spec(got["deploy-readd"], "editor3")["f:template"]["f:spec"]
    assert readd["f:containers"]['k:{"name":"c"}']["f:readinessProbe"]["."] == {}
    assert "." not in readd["f:securityContext"]  # defaulted to {} at the create: there before


@pytest.mark.kube_apiserver
def test_go_serialized_managed_fields_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = _writes(daemon_raw(api_daemon), "gs-compare")
    theirs = _writes(kube_raw(kube_apiserver), "gs-compare")
    assert ours == theirs, "\n".join(f"{step}:\n ours   {json.dumps(ours[step])}\n theirs {json.dumps(theirs[step])}"
                                      for step in theirs if ours[step] != theirs[step])
