"""A custom resource's managedFields through every kind of write compared with the real kube-apiserver's:
a create, an update, a merge patch, the status subresource's update and patch, a server-side apply of the
object and of its status, and a /scale update. Each manager's entry (operation, subresource, fields;
not its time) must be the same. Runs against kube-apiserver only in its tier (NODEAGENT_KUBE_APISERVER=1,
the `kube_apiserver` marker); the daemon's half always runs.
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration import test_validating_admission_policy as vap
from tests.integration.crd_served import wait_served
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration]

Send = Callable[[str, str, Any, str], tuple[int, Any]]
GROUP = "mf.example.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": plural[:-1].title(),
                           "listKind": plural[:-1].title() + "List"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                                        "statusReplicasPath": ".status.replicas"}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {
                                       "replicas": {"type": "integer"},
                                       "mode": {"type": "string", "default": "a"},
                                       "items": {"type": "array", "x-kubernetes-list-type": "map",
                                                 "x-kubernetes-list-map-keys": ["name"],
                                                 "items": {"type": "object", "required": ["name"], "properties": {
                                                     "name": {"type": "string"}, "v": {"type": "integer"}}}},
                                       "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                                   "status": {"type": "object", "properties": {
                                       "replicas": {"type": "integer"},
                                       "phase": {"type": "string"},
                                       "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                                                      "x-kubernetes-list-map-keys": ["type"],
                                                      "items": {"type": "object", "required": ["type"],
                                                                "properties": {"type": {"type": "string"},
                                                                               "status": {"type": "string"}}}}}},
                               }}}}]}}


def _two(send: vap.Send) -> Send:
    """The admission policy test's sender without the Warning headers."""
    return lambda method, path, body, ctype: send(method, path, body, ctype)[:2]


def daemon_send(d: Daemon) -> Send:
    return _two(vap.daemon_send(d))


def kube_send(server: KubeAPIServer) -> Send:
    return _two(vap._sender(server.url, server._ssl(), {}))


JSON, MERGE, APPLY = "application/json", "application/merge-patch+json", "application/apply-patch+yaml"


def scenario(send: Send, plural: str) -> list[tuple[str, Any]]:
    """The writes, and after each the object's managedFields without their times."""
    code, body = send("POST", CRDS, _crd(plural), JSON)
    assert code == 201, body
    base = f"/apis/{GROUP}/v1/namespaces/default/{plural}"
    wait_served(lambda: send("GET", base, None, JSON)[0])
    out: list[tuple[str, Any]] = []
    kind = plural[:-1].title()
    obj = {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": "w", "labels": {"a": "1"}},
           "spec": {"replicas": 1, "items": [{"name": "x", "v": 1}], "free": {"k": {"deep": [1]}}}}

    def step(label: str, method: str, path: str, body: Any, ctype: str) -> None:
        code, got = send(method, path, body, ctype)
        assert code < 300, (label, code, got.get("message"))
        # each entry without its time but whether it has one; in upstream's order with "no time" for the second
        # (sortEncodedManagedFields): which second two steps fell in is the run's timing, not the server's
        entries = sorted(({**{k: v for k, v in e.items() if k != "time"}, "timed": "time" in e}
                          for e in got["metadata"].get("managedFields") or ()),
                         key=lambda e: (e["operation"], e["timed"], e.get("manager", ""), e["apiVersion"],
                                        e.get("subresource", "")))
        out.append((label, entries))

    try:
        step("create", "POST", f"{base}?fieldManager=creator", obj, JSON)
        code, cur = send("GET", f"{base}/w", None, JSON)
        cur["spec"]["replicas"] = 2
        cur["metadata"]["annotations"] = {"n": "1"}
        step("update", "PUT", f"{base}/w?fieldManager=updater", cur, JSON)
        step("merge patch", "PATCH", f"{base}/w?fieldManager=patcher",
             {"spec": {"items": [{"name": "y", "v": 2}]}}, MERGE)
        code, cur = send("GET", f"{base}/w", None, JSON)
        cur["status"] = {"phase": "Up", "conditions": [{"type": "Ready", "status": "True"}]}
        step("status update", "PUT", f"{base}/w/status?fieldManager=statuser", cur, JSON)
        step("status merge patch", "PATCH", f"{base}/w/status?fieldManager=statuspatcher",
             {"status": {"replicas": 2}}, MERGE)
        step("apply", "PATCH", f"{base}/w?fieldManager=applier",
             {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": "w"},
              "spec": {"items": [{"name": "z", "v": 3}], "free": {"other": 1}}}, APPLY)
        step("status apply", "PATCH", f"{base}/w/status?fieldManager=statusapplier",
             {"apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": "w"},
              "status": {"conditions": [{"type": "Synced", "status": "True"}]}}, APPLY)
        code, scale = send("GET", f"{base}/w/scale", None, JSON)
        assert code == 200, scale
        scale["spec"]["replicas"] = 4
        code, _ = send("PUT", f"{base}/w/scale?fieldManager=scaler", scale, JSON)
        assert code == 200
        step("after scale", "GET", f"{base}/w", None, JSON)
    finally:
        send("DELETE", f"{CRDS}/{plural}.{GROUP}", None, JSON)
    return out


def test_custom_resource_writes_record_each_manager(api_daemon: Daemon) -> None:
    answers = dict(scenario(daemon_send(api_daemon), f"mfa{int(time.time() * 1000) % 10**8}s"))
    last = {e["manager"]: e for e in answers["after scale"]}
    assert set(last) == {"creator", "updater", "patcher", "statuser", "statuspatcher", "applier",
                         "statusapplier", "scaler"}
    assert last["statuser"].get("subresource") == "status" and last["statusapplier"]["operation"] == "Apply"
    assert last["scaler"].get("subresource") == "scale"


@pytest.mark.kube_apiserver
@pytest.mark.timeout(240)
def test_custom_resource_managed_fields_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    plural = f"mfb{int(time.time() * 1000) % 10**8}s"
    ours = scenario(daemon_send(api_daemon), plural)
    theirs = scenario(kube_send(kube_apiserver), plural)
    for (step, a), (_, b) in zip(ours, theirs, strict=True):
        if a != b:
            diff = difflib.unified_diff(json.dumps(a, indent=1, sort_keys=True).splitlines(),
                                        json.dumps(b, indent=1, sort_keys=True).splitlines(),
                                        "nodeagent", "kube-apiserver", lineterm="", n=3)
            raise AssertionError(f"{step}:\n" + "\n".join(diff))
