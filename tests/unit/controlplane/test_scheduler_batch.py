"""A scheduling round in one store transaction (Binder.batch): the round's pods commit together,
nothing is visible to watchers before the commit, a failed decision is undone alone, and the
events still arrive one per write in resourceVersion order."""

from __future__ import annotations

import pytest

from nodeagent.errors import Conflict
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim_spec,
    device,
    device_class,
    exact,
    node,
    pod,
    resource_slice,
    template,
)


def _cluster() -> Cluster:
    c = Cluster()
    c.add(node("n1"), resource_slice("n1", GPU, [device(f"gpu-{i}") for i in range(3)]),
          device_class("gpu", f'device.driver == "{GPU}"'), template("t", claim_spec(exact("gpu", "gpu"))))
    c.add(*(pod(f"p{i}", templates={"gpu": "t"}) for i in range(3)))
    c._feed()
    c.claims.sync_pending()
    c._feed()
    return c


async def test_a_round_commits_once_and_watchers_see_every_write_after_it() -> None:
    c = _cluster()
    rv = c.store.resource_version
    async with c.store.watch({"Pod", "ResourceClaim", "Event"}) as watch:
        with c.scheduler.binder.batch():
            for _ in range(3):
                assert c.scheduler.schedule_next() is not None
            assert c.store.resource_version == rv  # not committed yet
            assert watch.pending() == 0
            assert not c.get("Pod", "p0")["spec"].get("nodeName")
            assert all(c.scheduler.cache.pods[("default", f"p{i}")].node == "n1" for i in range(3))
        events = []
        while (ev := watch.get_nowait()) is not None:
            events.append(ev)
    # per pod: its claim's finalizer and its allocation (two writes, as bindClaim), the binding, the Scheduled event
    assert [ev.resource_version for ev in events] == list(range(rv + 1, rv + 13))
    assert c.store.resource_version == rv + 12
    scheduled = [e for e in c.store.list("Event") if e["reason"] == "Scheduled"]
    assert sorted(e["message"] for e in scheduled) == [f"Successfully assigned default/p{i} to n1" for i in range(3)]
    devices = {c.pod_claim(f"p{i}")["status"]["allocation"]["devices"]["results"][0]["device"] for i in range(3)}
    assert devices == {"gpu-0", "gpu-1", "gpu-2"}
    assert all(c.get("Pod", f"p{i}")["spec"]["nodeName"] == "n1" for i in range(3))


async def test_a_failed_decision_is_undone_alone() -> None:
    c = _cluster()
    binder = c.scheduler.binder
    with binder.batch():
        assert c.scheduler.schedule_next() is not None  # p0 bound in the round
        with pytest.raises(Conflict), binder.transaction() as tx:
            cur = dict(tx.peek("Pod", "default", "p1") or {})
            cur["status"] = {"phase": "Pending", "message": "undone"}
            tx.update_status(cur)
            raise Conflict("pod p1 changed meanwhile")
        assert (c.store.peek("Pod", "default", "p1") or {}).get("status", {}).get("message") is None
    assert c.get("Pod", "p0")["spec"]["nodeName"] == "n1"
    assert c.get("Pod", "p1").get("status", {}).get("message") is None
    c.run()
    assert all(c.get("Pod", f"p{i}")["spec"]["nodeName"] == "n1" for i in range(3))


async def test_nested_batches_join_the_open_one() -> None:
    c = _cluster()
    rv = c.store.resource_version
    with c.scheduler.binder.batch():
        assert c.scheduler.schedule_next() is not None
        with c.scheduler.binder.batch():
            assert c.scheduler.schedule_next() is not None
        assert c.store.resource_version == rv
    assert c.store.resource_version == rv + 8  # two pods: claim finalizer, claim status, binding, Scheduled event each
