"""The endpoints and endpointslice controllers (controllers/endpoints.py) over an in-memory store with the
admitted kinds' hooks, driven by hand: handle every stored object, then work the queue."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.controllers import endpoints as E
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock


@pytest.fixture
def store() -> ObjectStore:
    s = ObjectStore.memory(admitted_kinds(), FakeClock())
    s.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1",
                                                               "labels": {"topology.kubernetes.io/zone": "z1"}}})
    return s


def _svc(name: str, selector: dict[str, str] | None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "targetPort": "http"}], **spec}
    if selector is not None:
        body["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default",
                                                                "labels": {"tier": "web"}}, "spec": body}


def _pod(store: ObjectStore, name: str, ip: str | None, ready: bool = True, node: str = "n1") -> None:
    store.create({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
                  "spec": {"nodeName": node, "containers": [
                      {"name": "c", "image": "pause", "ports": [{"name": "http", "containerPort": 8080}]}]}})
    pod = store.get("Pod", "default", name)
    status: dict[str, Any] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-11-30T10:00:00Z"}]}
    if ip:
        status |= {"podIP": ip, "podIPs": [{"ip": ip}]}
    store.update_status({**pod, "status": status})


def _run(store: ObjectStore, *controllers: E._Base) -> None:
    for c in controllers:
        for kind in ("Service", "Pod", "Endpoints", "EndpointSlice"):
            for obj in store.list(kind):
                c.handle("ADDED", obj)
        c.work(100)


def _controllers(store: ObjectStore) -> tuple[E.EndpointsController, E.EndpointSliceController]:
    clock = FakeClock()
    return E.EndpointsController(store, clock), E.EndpointSliceController(store, clock)


def test_pods_without_an_ip_give_an_empty_endpoints_and_the_placeholder_slice(store: ObjectStore) -> None:
    _pod(store, "a", None)
    store.create(_svc("web", {"app": "web"}))
    store.create(_svc("nosel", None))
    _run(store, *_controllers(store))
    ep = store.get("Endpoints", "default", "web")
    assert ep["metadata"]["labels"] == {"tier": "web", "endpoints.kubernetes.io/managed-by": "endpoint-controller"}
    assert "subsets" not in ep and E.TRIGGER in ep["metadata"]["annotations"]
    (slice_,) = store.list("EndpointSlice", "default")
    assert slice_["metadata"]["name"].startswith("web-") and slice_["metadata"]["generateName"] == "web-"
    assert slice_["metadata"]["labels"] == {"tier": "web", "kubernetes.io/service-name": "web",
                                            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    ref = slice_["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["controller"], ref["blockOwnerDeletion"]) == ("Service", "web", True, True)
    assert slice_["addressType"] == "IPv4" and not slice_.get("endpoints") and not slice_.get("ports")
    assert store.peek("Endpoints", "default", "nosel") is None


def test_pods_with_ips_are_listed_ready_or_not_with_the_named_target_port(store: ObjectStore) -> None:
    _pod(store, "a", "10.244.0.5")
    _pod(store, "b", "10.244.0.4", ready=False)
    store.create(_svc("web", {"app": "web"}))
    _run(store, *_controllers(store))
    subsets = store.get("Endpoints", "default", "web")["subsets"]
    assert [a["ip"] for a in subsets[0]["addresses"]] == ["10.244.0.5"]
    assert [a["ip"] for a in subsets[0]["notReadyAddresses"]] == ["10.244.0.4"]
    assert subsets[0]["addresses"][0]["nodeName"] == "n1"
    assert subsets[0]["addresses"][0]["targetRef"]["name"] == "a"
    assert subsets[0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    (slice_,) = store.list("EndpointSlice", "default")
    assert slice_["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    conds = {e["targetRef"]["name"]: e["conditions"] for e in slice_["endpoints"]}
    assert conds == {"a": {"ready": True, "serving": True, "terminating": False},
                     "b": {"ready": False, "serving": False, "terminating": False}}


def test_a_resync_with_nothing_changed_writes_nothing_and_a_new_pod_updates_the_same_slice(
        store: ObjectStore) -> None:
    _pod(store, "a", "10.244.0.5")
    store.create(_svc("web", {"app": "web"}))
    eps, slices = _controllers(store)
    _run(store, eps, slices)
    (before,) = store.list("EndpointSlice", "default")
    ep_rv = store.get("Endpoints", "default", "web")["metadata"]["resourceVersion"]
    _run(store, eps, slices)
    (same,) = store.list("EndpointSlice", "default")
    assert same["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert store.get("Endpoints", "default", "web")["metadata"]["resourceVersion"] == ep_rv
    _pod(store, "c", "10.244.0.9")
    _run(store, eps, slices)
    (after,) = store.list("EndpointSlice", "default")
    assert after["metadata"]["name"] == before["metadata"]["name"]
    assert sorted(e["addresses"][0] for e in after["endpoints"]) == ["10.244.0.5", "10.244.0.9"]


def test_more_than_a_hundred_endpoints_take_two_slices(store: ObjectStore) -> None:
    for i in range(101):
        _pod(store, f"p{i:03d}", f"10.244.1.{i}")
    store.create(_svc("web", {"app": "web"}))
    _run(store, _controllers(store)[1])
    sizes = sorted(len(s["endpoints"]) for s in store.list("EndpointSlice", "default"))
    assert sizes == [1, 100]


def test_a_headless_service_is_labelled_and_a_pod_event_in_a_service_less_namespace_queues_nothing(
        store: ObjectStore) -> None:
    store.create(_svc("hl", {"app": "web"}, clusterIP="None"))
    eps, slices = _controllers(store)
    _run(store, eps, slices)
    assert store.get("Endpoints", "default", "hl")["metadata"]["labels"][E.HEADLESS] == ""
    assert store.list("EndpointSlice", "default")[0]["metadata"]["labels"][E.HEADLESS] == ""
    def pod(ns: str) -> dict[str, Any]:
        return {"kind": "Pod", "metadata": {"name": "x", "namespace": ns, "labels": {"app": "web"}}}

    assert list(slices.keys_for("ADDED", pod("other"))) == []
    assert list(slices.keys_for("ADDED", pod("default"))) == [("default", "hl")]


def test_a_pod_on_a_missing_node_is_left_out_of_the_slices_and_the_service_retried(store: ObjectStore) -> None:
    _pod(store, "a", "10.244.0.5")
    _pod(store, "ghost", "10.244.0.6", node="gone")
    store.create(_svc("web", {"app": "web"}))
    eps, slices = _controllers(store)
    _run(store, eps, slices)
    (slice_,) = store.list("EndpointSlice", "default")
    assert [(e["targetRef"]["name"], e["zone"]) for e in slice_["endpoints"]] == [("a", "z1")]
    assert slices.deadline() is not None  # queued again with the backoff
    addresses = store.get("Endpoints", "default", "web")["subsets"][0]["addresses"]
    assert [a["ip"] for a in addresses] == ["10.244.0.5", "10.244.0.6"]  # the endpoints controller has no such check
