"""Deletion propagation and garbage collection through the API: `kubectl delete --cascade=foreground|orphan|
background` on an owner chain, DELETE's propagationPolicy and the deprecated orphanDependents, a kind's
orphaning default (v1 ReplicationController), an owner kept by a blocking dependent in the foreground,
and a dependent whose owner never existed. The chains are ConfigMaps (and a ReplicationController of
no replicas) with ownerReferences written by hand, so no workload controller takes part. With the
kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1) the same requests against the real kube-apiserver and
its kube-controller-manager's garbage collector give the same observations.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

Send = Callable[..., tuple[int, Any]]
CM = "/api/v1/namespaces/default/configmaps"


def _cm(name: str, owner: dict[str, Any] | None = None, *, block: bool = True, kind: str = "ConfigMap",
        finalizers: list[str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": kind, "name": owner["metadata"]["name"],
                                  "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block}]
    if finalizers:
        md["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": {"k": "v"}}


def _create(send: Send, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    code, out = send("POST", path, obj)
    assert code == 201, out
    return dict(out)


def _until(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _gone(send: Send, path: str) -> bool:
    return send("GET", path, None)[0] == 404


def _owners(send: Send, name: str) -> list[str]:
    code, out = send("GET", f"{CM}/{name}", None)
    assert code == 200, out
    return [r["name"] for r in out["metadata"].get("ownerReferences") or ()]


def scenario(send: Send, prefix: str) -> list[Any]:
    """The requests and what each shows; the same list from nodeagent and from kube-apiserver."""
    seen: list[Any] = []
    # Foreground: the owner stays, deleting, with foregroundDeletion, while a blocking dependent is kept by
    # a finalizer of its own; it goes once that dependent goes
    top = _create(send, CM, _cm(f"{prefix}-fg"))
    _create(send, CM, _cm(f"{prefix}-fg-dep", top, finalizers=["example.com/hold"]))
    _create(send, CM, _cm(f"{prefix}-fg-free", top, block=False))
    code, out = send("DELETE", f"{CM}/{prefix}-fg", {"propagationPolicy": "Foreground"})
    seen.append(("fg delete", code, bool(out["metadata"].get("deletionTimestamp")), out["metadata"].get("finalizers"),
                 out["metadata"].get("deletionGracePeriodSeconds")))
    held = _until("the dependent marked", lambda: (lambda o: o if o["metadata"].get("deletionTimestamp") else None)(
        send("GET", f"{CM}/{prefix}-fg-dep", None)[1]))
    seen.append(("fg dependent", held["metadata"].get("finalizers")))
    code, owner = send("GET", f"{CM}/{prefix}-fg", None)
    seen.append(("fg owner kept", code, owner["metadata"].get("finalizers")))
    held["metadata"]["finalizers"] = []
    code, out = send("PUT", f"{CM}/{prefix}-fg-dep", held)
    assert code == 200, out
    _until("the foreground owner gone", lambda: _gone(send, f"{CM}/{prefix}-fg"))
    seen.append(("fg done", _gone(send, f"{CM}/{prefix}-fg-dep")))
    # the dependent that did not block goes too (kube-controller-manager's collector may take it only
    # once the owner is gone: a dependent its graph learns of after the owner started waiting is not
    # looked at before)
    _until("the non-blocking dependent gone", lambda: _gone(send, f"{CM}/{prefix}-fg-free"))
    # Orphan (propagationPolicy, then the deprecated orphanDependents): the owner goes, the dependent
    # stays without its reference
    for how, body in (("policy", {"propagationPolicy": "Orphan"}), ("field", {"orphanDependents": True})):
        top = _create(send, CM, _cm(f"{prefix}-or-{how}"))
        _create(send, CM, _cm(f"{prefix}-or-{how}-dep", top))
        code, out = send("DELETE", f"{CM}/{prefix}-or-{how}", body)
        seen.append(("orphan delete", how, code, out["metadata"].get("finalizers")))
        gone_path = f"{CM}/{prefix}-or-{how}"
        _until("the orphaning owner gone", lambda p=gone_path: _gone(send, p))  # type: ignore[misc]
        seen.append(("orphaned", how, _owners(send, f"{prefix}-or-{how}-dep")))
    # Background (the default): the owner goes at once, its dependents after
    top = _create(send, CM, _cm(f"{prefix}-bg"))
    _create(send, CM, _cm(f"{prefix}-bg-dep", top))
    code, out = send("DELETE", f"{CM}/{prefix}-bg", None)
    # a ConfigMap's store (no ReturnDeletedObject) answers an immediate delete with a Status naming it
    seen.append(("bg delete", code, out["kind"], out["status"], sorted(out["details"])))
    _until("the background dependent gone", lambda: _gone(send, f"{CM}/{prefix}-bg-dep"))
    # both deletion options at once: refused
    code, out = send("DELETE", f"{CM}/{prefix}-x", {"orphanDependents": True, "propagationPolicy": "Orphan"})
    seen.append(("both", code, out.get("reason"), out.get("message")))
    # a v1 ReplicationController orphans by default (its strategy's DefaultGarbageCollectionPolicy)
    rc = _create(send, "/api/v1/namespaces/default/replicationcontrollers", {
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": f"{prefix}-rc"},
        "spec": {"replicas": 0, "selector": {"app": f"{prefix}-rc"},
                 "template": {"metadata": {"labels": {"app": f"{prefix}-rc"}},
                              "spec": {"containers": [{"name": "c", "image": "pause"}]}}}})
    _create(send, CM, _cm(f"{prefix}-rc-dep", rc, kind="ReplicationController"))
    code, out = send("DELETE", f"/api/v1/namespaces/default/replicationcontrollers/{prefix}-rc", None)
    seen.append(("rc delete", code, out["metadata"].get("finalizers")))
    _until("the controller gone", lambda: _gone(send, f"/api/v1/namespaces/default/replicationcontrollers/{prefix}-rc"))
    seen.append(("rc orphaned", _owners(send, f"{prefix}-rc-dep")))
    # a dependent whose owner never existed is collected
    ghost = {"metadata": {"name": f"{prefix}-ghost", "uid": "0bd3bb4a-2a4e-4c4b-9a0e-5c1d7d0f0001"}}
    _create(send, CM, _cm(f"{prefix}-dangling", ghost))
    _until("the dangling dependent collected", lambda: _gone(send, f"{CM}/{prefix}-dangling"))
    for name in (f"{prefix}-or-policy-dep", f"{prefix}-or-field-dep", f"{prefix}-rc-dep"):
        send("DELETE", f"{CM}/{name}", None)
    return seen


EXPECTED = [
    ("fg delete", 200, True, ["foregroundDeletion"], 0),
    ("fg dependent", ["example.com/hold"]),
    ("fg owner kept", 200, ["foregroundDeletion"]),
    ("fg done", True),
    ("orphan delete", "policy", 200, ["orphan"]),
    ("orphaned", "policy", []),
    ("orphan delete", "field", 200, ["orphan"]),
    ("orphaned", "field", []),
    ("bg delete", 200, "Status", "Success", ["kind", "name", "uid"]),
    ("both", 422, "Invalid", 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": '
     "orphanDependents and deletionPropagation cannot be both set"),
    ("rc delete", 200, ["orphan"]),
    ("rc orphaned", []),
]


def test_propagation_policies_and_the_garbage_collector(api_daemon: Daemon) -> None:
    assert scenario(daemon_sender(api_daemon), "gc") == EXPECTED


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver_and_its_garbage_collector(api_daemon: Daemon,
                                                              kube_apiserver: KubeAPIServer) -> None:
    assert scenario(daemon_sender(api_daemon), "gcc") == scenario(kube_sender(kube_apiserver), "gcc")


@pytest.mark.parametrize("mode", ["foreground", "orphan", "background"])
def test_kubectl_delete_cascade(api_daemon: Daemon, mode: str) -> None:
    """kubectl delete --cascade on owner -> child -> grandchild: foreground and background take all
    three; orphan takes the owner only, the child loses its reference, the grandchild keeps its own."""
    def create(obj: dict[str, Any]) -> dict[str, Any]:
        return dict(yaml.safe_load(api_daemon.kubectl("create", "-o", "yaml", "-f", "-",
                                                      input=yaml.safe_dump(obj)).stdout))

    top = create(_cm(f"kc-{mode}"))
    child = create(_cm(f"kc-{mode}-child", top))
    create(_cm(f"kc-{mode}-grandchild", child))
    out = api_daemon.kubectl("delete", "configmap", f"kc-{mode}", f"--cascade={mode}")
    assert out.stdout.strip() == f'configmap "kc-{mode}" deleted'
    send = daemon_sender(api_daemon)

    def left() -> dict[str, list[str]]:
        items = send("GET", CM, None, "application/json")[1]["items"]
        return {c["metadata"]["name"]: [r["name"] for r in c["metadata"].get("ownerReferences") or ()]
                for c in items if c["metadata"]["name"].startswith(f"kc-{mode}")}

    want = {f"kc-{mode}-child": [], f"kc-{mode}-grandchild": [f"kc-{mode}-child"]} if mode == "orphan" else {}
    _until(f"the {mode} cascade", lambda: left() == want)


@pytest.mark.parametrize("mode", ["foreground", "orphan", "background"])
def test_kubectl_delete_deployment_cascade(api_daemon: Daemon, mode: str) -> None:
    """A Deployment made by the embedded deployment and replicaset controllers (Deployment -> ReplicaSet ->
    Pods, blockOwnerDeletion on each reference): foreground and background take the ReplicaSet and the
    pods; orphan leaves the ReplicaSet (without its owner) and its pods."""
    name = f"gcd-{mode}"
    send = daemon_sender(api_daemon)
    api_daemon.kubectl("create", "deployment", name, "--image=pause", "--replicas=2")

    def mine(path: str) -> list[dict[str, Any]]:
        return [o for o in send("GET", path, None, "application/json")[1]["items"]
                if o["metadata"]["name"].startswith(name + "-")]

    rs_path, pod_path = "/apis/apps/v1/namespaces/default/replicasets", "/api/v1/namespaces/default/pods"
    _until("the deployment's pods", lambda: len(mine(pod_path)) == 2)
    out = api_daemon.kubectl("delete", "deployment", name, f"--cascade={mode}")
    assert out.stdout.strip() == f'deployment.apps "{name}" deleted'
    assert _gone(send, f"/apis/apps/v1/namespaces/default/deployments/{name}")  # kubectl waited for it
    if mode == "orphan":
        [rs] = _until("the orphaned ReplicaSet", lambda: [r for r in mine(rs_path)
                                                           if not r["metadata"].get("ownerReferences")])
        assert len(mine(pod_path)) == 2
        api_daemon.kubectl("delete", "replicaset", rs["metadata"]["name"])
    else:
        _until("the ReplicaSet and pods gone", lambda: not mine(rs_path) and not mine(pod_path))
    _until("no pods left", lambda: not mine(pod_path))
