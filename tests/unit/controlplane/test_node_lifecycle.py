"""The node lifecycle controller with a fake clock, over every Node as upstream's: the not-ready
taint of a new Node goes once it posts Ready; a node whose Lease and heartbeat stop turns Unknown
after the grace period (one that never posted status: after the startup grace period, counted from
its creation) and is tainted unreachable, NoSchedule at once and NoExecute at its zone's rate;
every node down stops the NoExecute tainting; the control plane's own virtual nodes stay Ready."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodeagent.controlplane.controllers import nodetaints as rules
from nodeagent.controlplane.controllers.nodelifecycle import (
    NEVER_REASON,
    NOT_READY,
    UNKNOWN_MESSAGE,
    UNKNOWN_REASON,
    UNREACHABLE,
    NodeLifecycleController,
)
from nodeagent.nodeapi.lease import new_lease
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.objects.node_admission import admit_new_node
from nodeagent.store import ObjectStore, clone
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import FakeClock
from nodeagent.util.timefmt import micro_time

GRACE, STARTUP, PERIOD = 40.0, 60.0, 5.0


def _node(name: str, ready: str | None = "True", stamp: str = "", zone: str = "") -> dict[str, Any]:
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if zone:
        node["metadata"]["labels"] = {"topology.kubernetes.io/zone": zone}
    if ready is not None:
        node["status"] = {"conditions": [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            {"type": "Ready", "status": ready, "reason": "KubeletReady", "lastHeartbeatTime": stamp}]}
    admit_new_node(node)  # as every create through the API server
    return node


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"}})
    yield s
    s.close()


class Run:
    """The controller fed every Node as an event (what the watch would bring, and more: the NoSchedule
    pass is idempotent), worked until idle, as loop.py drives it."""

    def __init__(self, store: ObjectStore, clock: FakeClock, alive: tuple[str, ...] = ("anchor",)) -> None:
        self.store, self.clock = store, clock
        self.ctl = NodeLifecycleController(store, clock, GRACE, startup_grace=STARTUP, period=PERIOD, alive=alive)
        self.ctl.load(store.list("Node"))

    def settle(self) -> None:
        for _ in range(20):
            for node in self.store.list("Node"):
                self.ctl.handle("MODIFIED", node)
            if self.ctl.work(100) == 0 and self.ctl.idle():
                return

    def advance(self, seconds: float, step: float = 1.0) -> None:
        end = self.clock.monotonic() + seconds
        while self.clock.monotonic() < end:
            self.clock.advance(min(step, end - self.clock.monotonic()))
            self.settle()


def _taints(store: ObjectStore, name: str) -> list[tuple[str, str]]:
    return [(t["key"], t["effect"]) for t in (store.get("Node", "", name).get("spec") or {}).get("taints") or []]


def _conditions(store: ObjectStore, name: str) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in store.get("Node", "", name)["status"]["conditions"]}


def _renew(store: ObjectStore, name: str, now: float) -> None:
    lease = clone(store.get("Lease", "kube-node-lease", name))
    lease["spec"]["renewTime"] = micro_time(now)
    store.update(lease)


def test_new_node_loses_the_not_ready_taint_once_ready(store: ObjectStore, fake_clock: FakeClock) -> None:
    run = Run(store, fake_clock)
    store.create(_node("n1", ready="False"))
    run.settle()
    assert _taints(store, "n1") == [(NOT_READY, "NoSchedule")]
    node = store.get("Node", "", "n1")
    node["status"]["conditions"][1]["status"] = "True"
    store.update_status(node)
    run.settle()
    assert _taints(store, "n1") == []


def test_lease_not_renewed_turns_node_unknown_and_unreachable(store: ObjectStore, fake_clock: FakeClock) -> None:
    store.create(_node("anchor"))
    node = store.create(_node("n1", stamp=rfc3339(fake_clock.now())))
    store.create(new_lease("n1", node["metadata"]["uid"], 40, fake_clock.now()))
    run = Run(store, fake_clock)
    run.settle()
    assert _taints(store, "n1") == [] and _taints(store, "anchor") == []
    run.advance(30)
    _renew(store, "n1", fake_clock.now())
    run.advance(30)  # 60 s since the start, 30 s since the renewal
    assert _conditions(store, "n1")["Ready"]["status"] == "True"
    run.advance(GRACE)
    conds = _conditions(store, "n1")
    assert conds["Ready"]["status"] == "Unknown"
    assert (conds["Ready"]["reason"], conds["Ready"]["message"]) == (UNKNOWN_REASON, UNKNOWN_MESSAGE)
    assert conds["MemoryPressure"]["status"] == "Unknown"
    assert conds["DiskPressure"]["reason"] == NEVER_REASON  # never posted by the node
    assert _taints(store, "n1") == [(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")]
    assert all("timeAdded" in t for t in store.get("Node", "", "n1")["spec"]["taints"])
    # a virtual node of the control plane's (alive) stays Ready with no heartbeat
    assert _conditions(store, "anchor")["Ready"]["status"] == "True" and _taints(store, "anchor") == []

    # the node comes back: posts Ready and renews; NoSchedule goes at once, NoExecute at the next pass
    back = clone(store.get("Node", "", "n1"))
    back["status"] = _node("n1", stamp=rfc3339(fake_clock.now()))["status"]
    store.update_status(back)
    _renew(store, "n1", fake_clock.now())
    run.settle()
    assert (UNREACHABLE, "NoSchedule") not in _taints(store, "n1")
    run.advance(PERIOD)
    assert _taints(store, "n1") == []


def test_node_that_never_posted_status(store: ObjectStore, fake_clock: FakeClock) -> None:
    store.create(_node("anchor"))
    created = store.create(_node("by-hand", ready=None))["metadata"]["creationTimestamp"]
    run = Run(store, fake_clock)
    run.settle()
    # no condition calls for a taint: the not-ready taint of the admission goes at once, as upstream's
    assert _taints(store, "by-hand") == []
    run.advance(STARTUP - PERIOD)
    assert "status" not in store.get("Node", "", "by-hand") or not store.get("Node", "", "by-hand")["status"]
    run.advance(2 * PERIOD)
    conds = _conditions(store, "by-hand")
    assert {c["status"] for c in conds.values()} == {"Unknown"}
    assert set(conds) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    assert conds["Ready"]["reason"] == NEVER_REASON and conds["Ready"]["lastHeartbeatTime"] == created
    assert _taints(store, "by-hand") == [(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")]


def test_every_node_down_adds_no_noexecute_taint(store: ObjectStore, fake_clock: FakeClock) -> None:
    store.create(_node("alone", ready=None))
    run = Run(store, fake_clock, alive=())
    run.advance(STARTUP + 2 * PERIOD)
    assert _conditions(store, "alone")["Ready"]["status"] == "Unknown"
    assert _taints(store, "alone") == [(UNREACHABLE, "NoSchedule")]


def test_noexecute_taints_at_the_zone_rate(store: ObjectStore, fake_clock: FakeClock) -> None:
    store.create(_node("anchor", zone="a"))
    for name in ("x1", "x2"):
        store.create(_node(name, stamp=rfc3339(fake_clock.now()), zone="a"))
    run = Run(store, fake_clock)
    run.advance(GRACE + 2 * PERIOD)
    down = [n for n in ("x1", "x2") if (UNREACHABLE, "NoExecute") in _taints(store, n)]
    assert len(down) == 1  # one token; the next one 1 / 0.1 s later
    run.advance(1 / rules.EVICTION_QPS, step=0.5)
    assert all((UNREACHABLE, "NoExecute") in _taints(store, n) for n in ("x1", "x2"))


@pytest.mark.parametrize(("conditions", "unschedulable", "want"), [
    ({"Ready": "True"}, False, []),
    ({"Ready": "False"}, False, [rules.NOT_READY]),
    ({"Ready": "Unknown", "MemoryPressure": "True"}, False, [rules.UNREACHABLE, rules.MEMORY_PRESSURE]),
    ({"Ready": "True", "DiskPressure": "True", "PIDPressure": "True", "NetworkUnavailable": "True"}, False,
     [rules.DISK_PRESSURE, rules.PID_PRESSURE, rules.NETWORK_UNAVAILABLE]),
    ({"Ready": "True", "MemoryPressure": "False"}, True, [rules.UNSCHEDULABLE]),
])
def test_noschedule_taints_follow_conditions(conditions: dict[str, str], unschedulable: bool,
                                             want: list[str]) -> None:
    other = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    stale = {"key": rules.NOT_READY, "effect": "NoSchedule"}
    node: dict[str, Any] = {"spec": {"taints": [other, stale], "unschedulable": unschedulable},
            "status": {"conditions": [{"type": k, "status": v} for k, v in conditions.items()]}}
    got = rules.noschedule_taints(node, "2026-01-01T00:00:00Z")
    if want == [rules.NOT_READY]:  # already there: nothing to write
        assert got is None
        return
    assert got is not None
    assert got[0] == other
    assert sorted(t["key"] for t in got[1:]) == sorted(want)
    assert all(t["effect"] == "NoSchedule" for t in got)
    assert all(t.get("timeAdded") == "2026-01-01T00:00:00Z" for t in got[1:] if t != stale)
    assert rules.noschedule_taints({**node, "spec": {**node["spec"], "taints": got}}, "later") is None


def test_swap_replaces_in_place_and_removes() -> None:
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": "t0"}]
    out = rules.swapped(taints, [(NOT_READY, "NoExecute")], [(UNREACHABLE, "NoExecute")], "t1")
    assert out == [{"key": "a", "effect": "NoSchedule"}, {"key": NOT_READY, "effect": "NoExecute", "timeAdded": "t1"}]
