"""Restart from the same StateDB: prepared claims known, claims of pods deleted while down are
unprepared, a prepare in flight at the crash is repeated once with no duplicate entry."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nodeagent.dra.state import CLAIMS_BUCKET, PODS_BUCKET
from nodeagent.objects.pod.model import PENDING, RUNNING
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

from .fakes import FakeClaims, FakeRegistry, Rig, build, claim_doc, claim_pod, settle

GPU = "gpu.example.com"


async def restart(old: Rig, db: StateDB, drivers: FakeRegistry) -> Rig:
    """A new daemon on the same database: pods restored, DRA reconciled against them."""
    rig = build(old.clock, db, drivers, old.claims)
    await rig.pods.restore()
    await rig.dra.reconcile({p.uid for p in rig.pods.active_pods()}, {p.uid for p in rig.pods.all_pods()})
    await rig.dra.start()
    return rig


async def test_prepared_claims_known_and_deleted_pods_unprepared(tmp_path: Path) -> None:
    clock = FakeClock()
    db = StateDB(tmp_path / "state.db")
    claims = FakeClaims()
    first = build(clock, db, FakeRegistry(GPU), claims)
    keep = claim_pod("keep", clock, {"gpu": "c-keep"})
    gone = claim_pod("gone", clock, {"gpu": "c-gone"})
    claims.put(claim_doc("c-keep", reserved=[keep]))
    claims.put(claim_doc("c-gone", reserved=[gone]))
    await first.pods.apply(keep)
    await first.pods.apply(gone)
    await first.close()
    # While the daemon is down, `gone` is deleted (its pod record vanishes from the pods bucket).
    db.delete("pods", gone.uid)
    db.close()

    db2 = StateDB(tmp_path / "state.db")
    drivers = FakeRegistry(GPU)
    second = await restart(first, db2, drivers)
    try:
        assert drivers.prepare_calls == []  # nothing prepared again
        assert drivers.unprepared_names() == [(GPU, ["c-gone"])]
        assert set(dict(db2.items(CLAIMS_BUCKET))) == {"uid-c-keep"}
        assert set(dict(db2.items(PODS_BUCKET))) == {keep.uid}
        assert second.dra.container_dynamic_resources(keep, "c0")[0].claim_name == "c-keep"
        assert second.pods.status(keep.uid).phase == RUNNING
        # A shared claim picked up by a new pod after the restart is not prepared again.
        other = claim_pod("other", clock, {"gpu": "c-keep"})
        claims.reserve("c-keep", keep, other)
        await second.pods.apply(other)
        assert second.pods.status(other.uid).phase == RUNNING
        assert drivers.prepare_calls == []
    finally:
        await second.close()
        db2.close()


async def test_prepare_in_flight_at_crash_is_repeated(tmp_path: Path) -> None:
    clock = FakeClock()
    db = StateDB(tmp_path / "state.db")
    claims = FakeClaims()
    hanging = FakeRegistry(GPU)
    hanging.block = asyncio.Event()
    first = build(clock, db, hanging, claims)
    pod = claim_pod("p", clock, {"gpu": "gpu-claim"})
    claims.put(claim_doc("gpu-claim", reserved=[pod]))
    apply = asyncio.get_running_loop().create_task(first.pods.apply(pod))
    await settle()
    assert hanging.prepared_names() == [(GPU, ["gpu-claim"])]
    # SIGKILL stand-in: the call never returns; nothing after it is written.
    apply.cancel()
    await asyncio.gather(apply, return_exceptions=True)
    db.close()

    db2 = StateDB(tmp_path / "state.db")
    stored = dict(db2.items(CLAIMS_BUCKET))
    assert stored["uid-gpu-claim"]["pods"] == [pod.uid] and stored["uid-gpu-claim"]["prepared"] == {}
    drivers = FakeRegistry(GPU)
    second = build(clock, db2, drivers, claims)
    await second.pods.restore()
    assert second.pods.status(pod.uid).phase == PENDING
    await second.dra.reconcile({p.uid for p in second.pods.active_pods()})
    await settle()  # the restored pending pod is retried at once
    try:
        assert second.pods.status(pod.uid).phase == RUNNING
        assert drivers.prepared_names() == [(GPU, ["gpu-claim"])]
        assert drivers.unprepare_calls == []
        stored = dict(db2.items(CLAIMS_BUCKET))
        assert list(stored) == ["uid-gpu-claim"] and stored["uid-gpu-claim"]["pods"] == [pod.uid]
    finally:
        await second.close()
        db2.close()


async def test_in_flight_prepare_of_pod_deleted_while_down_is_unprepared(tmp_path: Path) -> None:
    clock = FakeClock()
    db = StateDB(tmp_path / "state.db")
    claims = FakeClaims()
    hanging = FakeRegistry(GPU)
    hanging.block = asyncio.Event()
    first = build(clock, db, hanging, claims)
    pod = claim_pod("p", clock, {"gpu": "gpu-claim"})
    claims.put(claim_doc("gpu-claim", reserved=[pod]))
    apply = asyncio.get_running_loop().create_task(first.pods.apply(pod))
    await settle()
    apply.cancel()
    await asyncio.gather(apply, return_exceptions=True)
    db.delete("pods", pod.uid)
    drivers = FakeRegistry(GPU)
    second = await restart(first, db, drivers)
    try:
        assert drivers.unprepared_names() == [(GPU, ["gpu-claim"])]
        assert db.items(CLAIMS_BUCKET) == []
    finally:
        await second.close()
        db.close()
