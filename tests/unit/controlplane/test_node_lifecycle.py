"""The node lifecycle controller with a fake clock: Lease renewals keep a node Ready; a Lease
not renewed within the grace period turns Ready (and the pressure conditions) Unknown with
upstream's reason and message and taints the node unreachable; a node back to Ready loses the
taints; nodes that never had a Lease are left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodeagent.controlplane.controllers.nodelifecycle import (
    NEVER_REASON,
    NOT_READY,
    UNKNOWN_MESSAGE,
    UNKNOWN_REASON,
    UNREACHABLE,
    NodeLifecycleController,
    wanted_taints,
)
from nodeagent.nodeapi.lease import new_lease
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore, clone
from nodeagent.util.clock import FakeClock
from nodeagent.util.timefmt import micro_time

GRACE = 40.0


def _node(name: str, ready: str = "True") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": ready, "reason": "KubeletReady"}]}}


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"}})
    yield s
    s.close()


def _feed(ctl: NodeLifecycleController, store: ObjectStore) -> None:
    ctl.load([*store.list("Node"), *store.list("Lease", "kube-node-lease")])


def _renew(store: ObjectStore, name: str, now: float) -> None:
    lease = clone(store.get("Lease", "kube-node-lease", name))
    lease["spec"]["renewTime"] = micro_time(now)
    store.update(lease)


def _conditions(store: ObjectStore, name: str) -> dict[str, dict[str, object]]:
    return {c["type"]: c for c in store.get("Node", "", name)["status"]["conditions"]}


def test_lease_not_renewed_turns_node_unknown_and_unreachable(store: ObjectStore, fake_clock: FakeClock) -> None:
    node = store.create(_node("n1"))
    store.create(new_lease("n1", node["metadata"]["uid"], 40, fake_clock.now()))
    store.create(_node("by-hand"))  # no Lease: never monitored
    ctl = NodeLifecycleController(store, fake_clock, GRACE)
    _feed(ctl, store)
    ctl.work(100)
    assert ctl.deadline() == pytest.approx(fake_clock.monotonic() + GRACE, abs=0.01)

    fake_clock.advance(30)
    _renew(store, "n1", fake_clock.now())
    ctl.handle("MODIFIED", store.get("Lease", "kube-node-lease", "n1"))
    fake_clock.advance(30)  # 60 s since the start, 30 s since the renewal
    assert ctl.work(100) == 0
    assert _conditions(store, "n1")["Ready"]["status"] == "True"

    fake_clock.advance(GRACE)
    assert ctl.work(100) >= 1
    ctl.handle("MODIFIED", store.get("Node", "", "n1"))
    ctl.work(100)
    conds = _conditions(store, "n1")
    assert conds["Ready"]["status"] == "Unknown"
    assert (conds["Ready"]["reason"], conds["Ready"]["message"]) == (UNKNOWN_REASON, UNKNOWN_MESSAGE)
    assert conds["MemoryPressure"]["status"] == "Unknown"
    assert conds["DiskPressure"]["reason"] == NEVER_REASON  # never posted by the node
    taints = {(t["key"], t["effect"]) for t in store.get("Node", "", "n1")["spec"]["taints"]}
    assert taints == {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    assert ctl.deadline() is None  # nothing more to watch for until the node comes back
    assert _conditions(store, "by-hand")["Ready"]["status"] == "True"
    assert "taints" not in (store.get("Node", "", "by-hand").get("spec") or {})

    # the node comes back: posts Ready and renews; the controller drops the taints
    back = clone(store.get("Node", "", "n1"))
    back["status"] = _node("n1")["status"]
    store.update_status(back)
    _renew(store, "n1", fake_clock.now())
    ctl.handle("MODIFIED", store.get("Node", "", "n1"))
    ctl.handle("MODIFIED", store.get("Lease", "kube-node-lease", "n1"))
    ctl.work(100)
    assert not (store.get("Node", "", "n1").get("spec") or {}).get("taints")
    assert ctl.idle()


def test_taints_follow_the_ready_condition() -> None:
    stamp = "2026-01-01T00:00:00Z"
    other = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    node = {"spec": {"taints": [other]}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    assert wanted_taints(node, stamp) == [other, {"key": NOT_READY, "effect": "NoSchedule"},
                                          {"key": NOT_READY, "effect": "NoExecute", "timeAdded": stamp}]
    unreachable = {"spec": {"taints": [{"key": NOT_READY, "effect": "NoSchedule"}]},
                   "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert [t["key"] for t in wanted_taints(unreachable, stamp)] == [UNREACHABLE, UNREACHABLE]
    ready = {"spec": {"taints": [{"key": UNREACHABLE, "effect": "NoExecute"}, other]},
             "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert wanted_taints(ready, stamp) == [other]


def test_node_registered_again_is_watched_before_its_new_lease(store: ObjectStore, fake_clock: FakeClock) -> None:
    node = store.create(_node("n1"))
    store.create(new_lease("n1", node["metadata"]["uid"], 40, fake_clock.now()))
    ctl = NodeLifecycleController(store, fake_clock, GRACE)
    _feed(ctl, store)
    ctl.handle("DELETED", store.get("Node", "", "n1"))
    store.delete("Node", "", "n1")
    store.collect_garbage()  # the Lease goes with its owner
    assert store.peek("Lease", "kube-node-lease", "n1") is None
    ctl.handle("ADDED", store.create(_node("n1")))  # registered again, then the node died
    fake_clock.advance(GRACE + 1)
    ctl.work(100)
    assert _conditions(store, "n1")["Ready"]["status"] == "Unknown"
