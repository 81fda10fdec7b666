"""Create, get, list, update, update_status, apply: metadata, messages and optimistic concurrency."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nodeagent.errors import AlreadyExists, Conflict, NotFound, ValidationError
from nodeagent.store import CONFIGURED, CREATED, UNCHANGED, InvalidObject, KindRegistry, Obj, ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.unit.store.builders import claim, node, pod


def test_create_sets_system_metadata(store: ObjectStore, fake_clock: FakeClock) -> None:
    fake_clock.advance(0)
    got = store.create(pod("web"))
    md = got["metadata"]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", md["uid"])
    assert md["resourceVersion"] == "1"
    assert md["generation"] == 1
    assert md["creationTimestamp"] == "1970-01-12T13:46:40Z"  # FakeClock starts at 1_000_000 s
    assert store.get("Pod", "default", "web") == got
    assert store.resource_version == 1


def test_resource_versions_increase_globally(store: ObjectStore) -> None:
    a = store.create(pod("a"))
    b = store.create(node("n1"))
    c = store.create(pod("c", namespace="other"))
    assert [int(x["metadata"]["resourceVersion"]) for x in (a, b, c)] == [1, 2, 3]


def test_namespace_defaults_and_cluster_scope(store: ObjectStore) -> None:
    p = pod("p")
    del p["metadata"]["namespace"]
    assert store.create(p)["metadata"]["namespace"] == "default"
    n = store.create(node("n1", namespace="ignored"))
    assert "namespace" not in n["metadata"]
    assert store.get("Node", "", "n1")["metadata"]["name"] == "n1"
    assert store.get("Node", "whatever", "n1")["metadata"]["name"] == "n1"


@pytest.mark.parametrize(
    ("kind", "ns", "name", "message"),
    [
        ("ResourceClaim", "default", "x", 'resourceclaims.resource.k8s.io "x" not found'),
        ("Pod", "default", "x", 'pods "x" not found'),
        ("Node", "", "x", 'nodes "x" not found'),
        ("DeviceClass", "", "x", 'deviceclasses.resource.k8s.io "x" not found'),
        ("ResourceSlice", "", "x", 'resourceslices.resource.k8s.io "x" not found'),
        ("ResourceClaimTemplate", "default", "x", 'resourceclaimtemplates.resource.k8s.io "x" not found'),
        ("PodSchedulingContext", "default", "x", 'podschedulingcontexts.resource.k8s.io "x" not found'),
        ("ResourceQuota", "default", "x", 'resourcequotas "x" not found'),
        ("Event", "default", "x", 'events "x" not found'),
    ],
)
def test_not_found_messages(store: ObjectStore, kind: str, ns: str, name: str, message: str) -> None:
    with pytest.raises(NotFound) as err:
        store.get(kind, ns, name)
    assert str(err.value) == message
    assert store.try_get(kind, ns, name) is None


def test_already_exists(store: ObjectStore) -> None:
    store.create(claim("x"))
    with pytest.raises(AlreadyExists) as err:
        store.create(claim("x"))
    assert str(err.value) == 'resourceclaims.resource.k8s.io "x" already exists'
    store.create(claim("x", namespace="other"))  # same name, other namespace


def test_unknown_kind_and_version(store: ObjectStore) -> None:
    with pytest.raises(ValidationError) as err:
        store.create({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "s"}})
    assert err.value.path == "kind"
    bad = claim("c")
    bad["apiVersion"] = "resource.k8s.io/v9"
    with pytest.raises(ValidationError) as err:
        store.create(bad)
    assert err.value.path == "apiVersion"
    assert "v1beta1" in err.value.detail
    beta = claim("c")
    beta["apiVersion"] = "resource.k8s.io/v1beta1"
    assert store.create(beta)["apiVersion"] == "resource.k8s.io/v1beta1"


def test_validate_hook_error_names_object_and_field(store: ObjectStore) -> None:
    bad = claim("c")
    bad["spec"]["devices"]["requests"][0]["name"] = ""
    with pytest.raises(InvalidObject) as err:
        store.create(bad)
    assert err.value.path == "spec.devices.requests[0].name"
    assert err.value.detail == "Required value"
    assert str(err.value) == (
        'ResourceClaim.resource.k8s.io "c" is invalid: spec.devices.requests[0].name: Required value'
    )
    assert isinstance(err.value, ValidationError)
    assert store.try_get("ResourceClaim", "default", "c") is None
    assert store.resource_version == 0


@pytest.mark.parametrize(
    ("meta", "path"),
    [
        ({"name": "Bad_Name"}, "metadata.name"),
        ({"name": "ok", "labels": {"a": "b c"}}, "metadata.labels"),
        ({"name": "ok", "namespace": "Bad.NS"}, "metadata.namespace"),
        ({"name": "ok", "finalizers": ["bad finalizer"]}, "metadata.finalizers[0]"),
        (
            {"name": "ok", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]},
            "metadata.ownerReferences[0].uid",
        ),
        ({}, "metadata.name"),
    ],
)
def test_metadata_validation(store: ObjectStore, meta: dict[str, object], path: str) -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {}}
    with pytest.raises(ValidationError) as err:
        store.create(obj)
    assert err.value.path == path


@pytest.mark.parametrize(
    ("meta", "path"),
    [
        ({"labels": {"a": "b c"}}, "metadata.labels"),
        ({"annotations": {"bad key!": "v"}}, "metadata.annotations"),
        ({"finalizers": ["bad finalizer"]}, "metadata.finalizers[0]"),
        ({"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]},
         "metadata.ownerReferences[0].uid"),
    ],
)
def test_metadata_validation_on_update(store: ObjectStore, meta: dict[str, object], path: str) -> None:
    """An update is checked when it changes checked metadata; one that leaves it (a binding, a
    status write) is not checked again."""
    pod = store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ok", "labels": {"a": "b"}},
                        "spec": {}})
    pod["spec"]["nodeName"] = "n1"
    pod = store.update(pod)
    assert pod["spec"]["nodeName"] == "n1"
    pod["metadata"].update(meta)
    with pytest.raises(ValidationError) as err:
        store.update(pod)
    assert err.value.path == path


def test_validate_update_hook(store: ObjectStore) -> None:
    c = store.create(claim("c"))
    c["spec"]["devices"]["requests"][0]["name"] = "other"
    with pytest.raises(InvalidObject) as err:
        store.update(c)
    assert err.value.path == "spec"
    assert "field is immutable" in str(err.value)


def test_generate_name(store: ObjectStore) -> None:
    obj = pod("")
    obj["metadata"]["generateName"] = "web-"
    a = store.create(obj)
    b = store.create(obj)
    for got in (a, b):
        assert re.fullmatch(r"web-[a-z0-9]{5}", got["metadata"]["name"])
        assert got["metadata"]["generateName"] == "web-"
    assert a["metadata"]["name"] != b["metadata"]["name"]
    assert len(store.list("Pod")) == 2


class _ScriptedRandom(random.Random):
    """Picks characters from a script so two creates can be made to draw the same name."""

    def __init__(self, script: str) -> None:
        super().__init__(0)
        self._script = list(script)

    def choice(self, seq: Sequence[str]) -> str:  # type: ignore[override]
        return self._script.pop(0) if self._script else seq[0]


def test_generate_name_collision_retries(kinds: KindRegistry, fake_clock: FakeClock) -> None:
    store = ObjectStore.memory(kinds, fake_clock, rng=_ScriptedRandom("bbbbbbbbbbccccc"))
    obj = pod("")
    obj["metadata"]["generateName"] = "x-"
    assert store.create(obj)["metadata"]["name"] == "x-bbbbb"
    assert store.create(obj)["metadata"]["name"] == "x-ccccc"
    store.close()


def names(objs: list[Obj]) -> list[tuple[str, str]]:
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs]


def test_list_sorted_filtered_by_namespace_and_labels(store: ObjectStore) -> None:
    store.create(pod("b", labels={"app": "web", "tier": "front"}))
    store.create(pod("a", labels={"app": "db"}))
    store.create(pod("c", namespace="kube-system", labels={"app": "web"}))
    assert names(store.list("Pod")) == [("default", "a"), ("default", "b"), ("kube-system", "c")]
    assert names(store.list("Pod", "default")) == [("default", "a"), ("default", "b")]
    assert names(store.list("Pod", selector="app=web")) == [("default", "b"), ("kube-system", "c")]
    assert names(store.list("Pod", selector={"app": "web", "tier": "front"})) == [("default", "b")]
    assert names(store.list("Pod", selector="app in (db,cache)")) == [("default", "a")]
    assert names(store.list("Pod", selector="!tier")) == [("default", "a"), ("kube-system", "c")]
    assert store.count("Pod") == 3
    assert store.count("Pod", "default") == 2
    assert store.list("Node") == []


def test_reads_are_copies(store: ObjectStore) -> None:
    store.create(pod("p"))
    got = store.get("Pod", "default", "p")
    got["spec"]["containers"].clear()
    listed = store.list("Pod")
    listed[0]["metadata"]["name"] = "changed"
    assert store.get("Pod", "default", "p")["spec"]["containers"]
    assert store.get("Pod", "default", "p")["metadata"]["name"] == "p"
    shared = store.peek("Pod", "default", "p")
    assert shared is not None and shared is store.scan("Pod")[0]


def test_update_with_stale_resource_version_conflicts(store: ObjectStore) -> None:
    c = store.create(claim("x"))
    fresh = store.get("ResourceClaim", "default", "x")
    fresh["metadata"]["labels"] = {"a": "1"}
    updated = store.update(fresh)
    assert updated["metadata"]["resourceVersion"] == "2"
    c["metadata"]["labels"] = {"a": "2"}
    with pytest.raises(Conflict) as err:
        store.update(c)
    assert str(err.value) == (
        'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "x": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert store.get("ResourceClaim", "default", "x")["metadata"]["labels"] == {"a": "1"}
    # Without a resourceVersion the update is unconditional.
    del c["metadata"]["resourceVersion"]
    assert store.update(c)["metadata"]["labels"] == {"a": "2"}


def test_update_uid_precondition(store: ObjectStore) -> None:
    p = store.create(pod("p"))
    p["metadata"]["uid"] = "0000"
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: 0000"):
        store.update(p)


def test_update_missing_is_not_found(store: ObjectStore) -> None:
    with pytest.raises(NotFound, match='pods "nope" not found'):
        store.update(pod("nope"))


def test_update_keeps_status_and_system_fields_and_bumps_generation(store: ObjectStore) -> None:
    p = pod("p")
    p["status"] = {"phase": "Pending"}
    created = store.create(p)
    assert created["status"] == {"phase": "Pending"}
    change = store.get("Pod", "default", "p")
    change["spec"]["nodeName"] = "n1"
    change["status"] = {"phase": "Running"}
    change["metadata"]["uid"] = created["metadata"]["uid"]
    change["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    change["metadata"]["generation"] = 99
    got = store.update(change)
    assert got["spec"]["nodeName"] == "n1"
    assert got["status"] == {"phase": "Pending"}
    assert got["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert got["metadata"]["generation"] == 2
    labels_only = store.get("Pod", "default", "p")
    labels_only["metadata"]["labels"] = {"x": "y"}
    assert store.update(labels_only)["metadata"]["generation"] == 2


def test_update_without_change_is_a_no_op(store: ObjectStore) -> None:
    store.create(pod("p"))
    same = store.get("Pod", "default", "p")
    assert store.update(same)["metadata"]["resourceVersion"] == "1"
    assert store.resource_version == 1


def test_update_status_changes_only_status(store: ObjectStore) -> None:
    store.create(pod("p"))
    obj = store.get("Pod", "default", "p")
    obj["status"] = {"phase": "Running"}
    obj["spec"]["nodeName"] = "ignored"
    obj["metadata"]["labels"] = {"ignored": "yes"}
    got = store.update_status(obj)
    assert got["status"] == {"phase": "Running"}
    assert "nodeName" not in got["spec"]
    assert "labels" not in got["metadata"]
    assert got["metadata"]["generation"] == 1
    assert got["metadata"]["resourceVersion"] == "2"
    obj["metadata"]["resourceVersion"] = "1"
    with pytest.raises(Conflict):
        store.update_status(obj)


def test_update_with_status_writes_spec_and_status_in_one_event(store: ObjectStore) -> None:
    """The binding write: spec.nodeName and a status condition land in one resourceVersion."""
    store.create(pod("p"))
    obj = store.get("Pod", "default", "p")
    with store.transaction() as tx:
        obj["spec"]["nodeName"] = "node-1"
        obj["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
        got = tx.update(obj, with_status=True)
    assert got["spec"]["nodeName"] == "node-1"
    assert got["status"]["conditions"][0]["type"] == "PodScheduled"
    assert got["metadata"]["resourceVersion"] == "2"
    assert got["metadata"]["generation"] == 2
    assert store.resource_version == 2  # one write
    plain = store.get("Pod", "default", "p")
    plain["status"] = {"phase": "Running"}
    plain["metadata"]["labels"] = {"a": "1"}
    assert store.update(plain)["status"]["phase"] == "Pending"  # without it the stored status stays


def test_apply_creates_configures_and_reports_unchanged(store: ObjectStore) -> None:
    manifest = claim("c", labels={"a": "1"})
    first = store.apply(manifest)
    assert first.action == CREATED
    status = store.get("ResourceClaim", "default", "c")
    status["status"] = {"allocation": {"devices": {"results": []}}}
    store.update_status(status)
    again = store.apply(manifest)
    assert again.action == UNCHANGED
    assert again.object["metadata"]["resourceVersion"] == "2"
    manifest["metadata"]["labels"] = {"a": "2"}
    manifest["metadata"]["annotations"] = {"note": "x"}
    third = store.apply(manifest)
    assert third.action == CONFIGURED
    assert third.object["metadata"]["labels"] == {"a": "2"}
    assert third.object["metadata"]["annotations"] == {"note": "x"}
    assert third.object["status"] == {"allocation": {"devices": {"results": []}}}
    assert third.object["metadata"]["uid"] == first.object["metadata"]["uid"]
    del manifest["metadata"]["labels"]
    assert "labels" not in store.apply(manifest).object["metadata"]


def test_apply_replaces_spec(store: ObjectStore) -> None:
    store.apply(node("n1"))
    manifest = node("n1")
    manifest["spec"] = {"unschedulable": True}
    got = store.apply(manifest)
    assert got.action == CONFIGURED
    assert got.object["spec"] == {"unschedulable": True}
    assert "generation" not in got.object["metadata"]  # the node strategy keeps none (kube-apiserver v1.37.2)


def _gens(store: ObjectStore, obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> list[Any]:
    """metadata.generation after a create, a label change, a change of the content, a label change."""
    cur = store.create(obj)
    seen = [cur["metadata"].get("generation")]
    for step in ("label", "content", "label"):
        if step == "label":
            cur["metadata"]["labels"] = {"step": str(len(seen))}
        else:
            change(cur)
        cur = store.update(cur)
        seen.append(cur["metadata"].get("generation"))
    return seen


@pytest.mark.parametrize(("obj", "expected"), [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {}},
     [None, None, None, None]),
    ({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 1},
     [1, 1, 1, 1]),
    ({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d"}, "spec": {}},
     [None, None, 1, 1]),
    ({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "e", "namespace": "default"},
      "addressType": "IPv4", "endpoints": []}, [1, 2, 3, 4]),
    ({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p", "namespace": "default"},
      "spec": {}}, [1, 1, 2, 2]),
])
def test_generation_as_each_kind_strategy_keeps_it(store: ObjectStore, obj: dict[str, Any],
                                                   expected: list[Any]) -> None:
    """Kind.generation (kube-apiserver v1.37.2's strategies, compared with the real server: none for
    most kinds, 1 and never more for PriorityClass, first set by a spec change for CSIDriver, also
    raised by a label change for EndpointSlice, the spec rule for the rest)."""
    def change(o: dict[str, Any]) -> None:
        o["spec" if "spec" in o else "value" if "value" in o else "data" if "data" in o else "endpoints"] = (
            {"x": "1"} if "spec" in o or "data" in o else 2 if "value" in o else [{"addresses": ["10.0.0.1"]}])

    assert _gens(store, obj, change) == expected


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("pods", "Pod"),
        ("po", "Pod"),
        ("resourceclaims", "ResourceClaim"),
        ("resourceclaim", "ResourceClaim"),
        ("resourceclaims.resource.k8s.io", "ResourceClaim"),
        ("DeviceClass", "DeviceClass"),
        ("deviceclasses", "DeviceClass"),
        ("podschedulingcontexts", "PodSchedulingContext"),
        ("nodes", "Node"),
        ("quota", "ResourceQuota"),
        ("events", "Event"),
    ],
)
def test_registry_resolves_cli_names(kinds: KindRegistry, name: str, kind: str) -> None:
    info = kinds.lookup(name)
    assert info is not None and info.kind == kind
    assert kinds.lookup("podtemplates") is None


def test_default_hook_runs_before_validation(fake_clock: FakeClock) -> None:
    def convert(obj: Obj) -> Obj:
        obj["apiVersion"] = "resource.k8s.io/v1"
        obj["spec"].setdefault("devices", {"requests": []})
        return obj

    seen: list[str] = []
    kinds = builtin_kinds().with_hooks(
        {"DeviceClass": {"default": convert, "validate": lambda o: seen.append(o["apiVersion"])}}
    )
    store = ObjectStore.memory(kinds, fake_clock)
    got = store.create(
        {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {}}
    )
    assert got["apiVersion"] == "resource.k8s.io/v1"
    assert seen == ["resource.k8s.io/v1"]
    store.close()


def test_status_update_is_validated(store: ObjectStore) -> None:
    store.create(claim("c"))
    obj = store.get("ResourceClaim", "default", "c")
    obj["spec"]["devices"]["requests"][0]["name"] = ""  # ignored by update_status: spec comes from the store
    obj["status"] = {"reservedFor": [{"resource": "pods", "name": "p"}]}
    assert store.update_status(obj)["spec"]["devices"]["requests"][0]["name"] == "gpu"
    obj["metadata"]["resourceVersion"] = "2"
    obj["status"] = {"reservedFor": [{"resource": "pods", "name": f"p{i}"} for i in range(3)]}
    with pytest.raises(InvalidObject) as err:
        store.update_status(obj)
    assert err.value.path == "status.reservedFor"
    assert len(store.get("ResourceClaim", "default", "c")["status"]["reservedFor"]) == 1
