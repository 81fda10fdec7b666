"""The garbage collector's pure decisions (upstream's attemptToDeleteItem, processDeletingDependentsItem,
orphanDependents), the deletion finalizers a propagation policy leaves (store/propagation.py), and the
component over an in-memory store: orphaning, foreground with a blocking dependent, a dangling owner."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodeagent.controlplane.controllers.garbagecollector import (
    DANGLING,
    SOLID,
    UNKNOWN,
    WAITING,
    Action,
    GarbageCollector,
    dependent_action,
    owner_actions,
)
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.store.propagation import deletion_finalizers
from nodeagent.util.clock import FakeClock


@pytest.mark.parametrize(("kind", "version", "finalizers", "policy", "want"), [
    ("ConfigMap", "v1", [], "", None),  # Background by default: nothing to add
    ("ConfigMap", "v1", [], "Background", None),
    ("ConfigMap", "v1", ["a"], "Foreground", ["a", "foregroundDeletion"]),
    ("ConfigMap", "v1", ["foregroundDeletion"], "Orphan", ["orphan"]),
    ("ConfigMap", "v1", ["orphan"], "", None),  # a finalizer already there stands for the policy
    ("ConfigMap", "v1", ["orphan", "b"], "Background", ["b"]),
    ("ReplicationController", "v1", [], "", ["orphan"]),  # v1's back-compatible default
    ("Job", "batch/v1", [], "", ["orphan"]),
    ("Job", "batch/v1", [], "Background", None),
    ("Deployment", "apps/v1", [], "", None),
    ("Event", "v1", [], "Orphan", None),  # rest.Unsupported
])
def test_deletion_finalizers(kind: str, version: str, finalizers: list[str], policy: str,
                             want: list[str] | None) -> None:
    assert deletion_finalizers(kind, version, finalizers, policy) == want


def _obj(name: str, uid: str, owners: tuple[tuple[str, bool], ...] = (), **md: Any) -> dict[str, Any]:
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"o-{u}", "uid": u, "blockOwnerDeletion": b}
            for u, b in owners]
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "d", "uid": uid,
                                              **({"ownerReferences": refs} if refs else {}), **md}}


KEY = ("ConfigMap", "d", "x")


@pytest.mark.parametrize(("states", "has_deps", "extra", "want"), [
    ({"a": SOLID}, False, {}, None),
    ({"a": SOLID, "b": DANGLING}, False, {}, Action("strip", KEY, uids=("b",))),
    ({"a": SOLID, "b": WAITING}, False, {}, Action("strip", KEY, uids=("b",))),
    ({"a": DANGLING}, False, {}, Action("delete", KEY, policy="Background")),
    ({"a": DANGLING}, False, {"finalizers": ["orphan"]}, Action("delete", KEY, policy="Orphan")),
    ({"a": WAITING}, True, {}, Action("delete", KEY, policy="Foreground")),
    ({"a": WAITING}, False, {}, Action("delete", KEY, policy="Background")),
    ({"a": DANGLING, "b": UNKNOWN}, False, {}, None),  # an owner of a kind nobody serves: kept
    ({"a": DANGLING}, False, {"deletionTimestamp": "2026-01-01T00:00:00Z"}, None),  # already going
])
def test_dependent_action(states: dict[str, str], has_deps: bool, extra: dict[str, Any], want: Action | None) -> None:
    obj = _obj("x", "x", tuple((u, True) for u in states), **extra)
    assert dependent_action(obj, states, has_deps) == want


def test_owner_actions() -> None:
    deleting: dict[str, Any] = {"deletionTimestamp": "2026-01-01T00:00:00Z"}
    orphaning = _obj("o", "o", finalizers=["orphan"], **deleting)
    deps = [_obj("a", "a", (("o", True),)), _obj("b", "b", (("o", False),))]
    actions, each = owner_actions(orphaning, deps)
    assert not each and actions == [Action("strip", ("ConfigMap", "d", "a"), uids=("o",)),
                                    Action("strip", ("ConfigMap", "d", "b"), uids=("o",)),
                                    Action("unfinalize", ("ConfigMap", "d", "o"), finalizer="orphan")]
    waiting = _obj("o", "o", finalizers=["foregroundDeletion"], **deleting)
    assert owner_actions(waiting, deps) == ([], True)  # a blocks
    assert owner_actions(waiting, deps[1:]) == ([Action("unfinalize", ("ConfigMap", "d", "o"),
                                                        finalizer="foregroundDeletion")], False)
    assert owner_actions(_obj("o", "o"), deps) == ([], False)  # not being deleted


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    yield s
    s.close()


def _run(gc: GarbageCollector, store: ObjectStore) -> None:
    """Feed every object to the collector and let it work until nothing is due."""
    for _ in range(10):
        gc.load([o for k in gc.kinds for o in store.list(k)])
        if not gc.work(100):
            return


def _cm(store: ObjectStore, name: str, owner: dict[str, Any] | None = None, block: bool = True,
        finalizers: list[str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                                  "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block}]
    if finalizers:
        md["finalizers"] = finalizers
    with store.transaction() as tx:
        return tx.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": md})


def _names(store: ObjectStore) -> set[str]:
    return {o["metadata"]["name"] for o in store.list("ConfigMap")}


def _delete(store: ObjectStore, name: str, finalizers: list[str]) -> None:
    with store.transaction() as tx:
        tx.set_finalizers("ConfigMap", "default", name, finalizers)
        tx.delete("ConfigMap", "default", name)


def test_the_collector_over_a_store(store: ObjectStore, fake_clock: FakeClock) -> None:
    gc = GarbageCollector(store, fake_clock)
    # orphan: the owner goes, the dependent stays without its reference
    top = _cm(store, "top")
    _cm(store, "child", top)
    _delete(store, "top", ["orphan"])
    assert "top" in _names(store)
    _run(gc, store)
    assert _names(store) == {"child"}
    assert "ownerReferences" not in store.get("ConfigMap", "default", "child")["metadata"]
    # foreground: a blocking dependent held by its own finalizer keeps the owner
    owner = _cm(store, "fg")
    _cm(store, "held", owner, finalizers=["example.com/hold"])
    _cm(store, "free", owner, block=False)
    _delete(store, "fg", ["foregroundDeletion"])
    _run(gc, store)
    assert {"fg", "held"} <= _names(store) and "free" not in _names(store)
    assert store.get("ConfigMap", "default", "held")["metadata"].get("deletionTimestamp")
    with store.transaction() as tx:
        tx.set_finalizers("ConfigMap", "default", "held", [])
    _run(gc, store)
    assert _names(store) == {"child"}
    # a dependent of an owner that never existed
    _cm(store, "dangling", {"metadata": {"name": "ghost", "uid": "nope"}})
    _run(gc, store)
    assert _names(store) == {"child"}
