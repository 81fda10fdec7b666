"""The pod manager's kept-ready active set and its summed requests (used by the fit check)
always equal a full scan of every pod, over seeded random sequences of creates (admitted or
refused), updates, health changes, finishes, evictions, deletions and restarts."""

from __future__ import annotations

import asyncio
import dataclasses
import random

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import ResourceHealth, ResourceStatus
from nodeagent.pods.admission import requested_by
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

from .fakes import FakeAdmitter, FakeCgroups, FakeResources, make_pod

ALLOC = {"cpu": 4000, "memory": 8 * 2**30, "ephemeral-storage": 10 * 2**30, "pods": 6}


def _manager(db: StateDB, clock: FakeClock, refuse: set[str]) -> PodManager:
    return PodManager(
        node_name="node-a", resources=FakeResources(dict(ALLOC)), admitters=[FakeAdmitter("x", refuse)],
        cgroups=FakeCgroups(), db=db, clock=clock, instruments=Instruments(CollectorRegistry()),
        recorder=EventRecorder(clock=clock, host="node-a"),
    )


def _check(manager: PodManager) -> None:
    scanned = [e.pod for e in manager._by_uid.values() if e.holds_resources and not e.status.terminal]
    assert manager.active_pods() == scanned
    assert dict(manager._requested.totals) == {k: v for k, v in requested_by(scanned).items() if v}


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


@pytest.mark.parametrize("seed", range(8))
async def test_active_set_matches_a_full_scan(seed: int, fake_clock: FakeClock) -> None:
    rnd = random.Random(seed)
    db = StateDB.memory()
    refuse = {f"p{i}" for i in range(40) if rnd.random() < 0.15}
    manager = _manager(db, fake_clock, refuse)
    names: list[str] = []
    try:
        for step in range(60):
            op = rnd.choice(["create", "create", "create", "update", "health", "tick", "evict", "delete",
                             "restart"])
            views = manager.list()
            if op == "create" or not views:
                name = f"p{step}"
                annotations = {"nodeagent.dev/finish-after-seconds": str(rnd.randint(1, 20))} \
                    if rnd.random() < 0.4 else {}
                await manager.apply(make_pod(name, fake_clock, cpu=rnd.choice(["100m", "1", "2"]),
                                             memory=rnd.choice([None, "1Gi"]), annotations=annotations))
                names.append(name)
            elif op == "update":
                pod = rnd.choice(views).pod
                await manager.apply(dataclasses.replace(pod, labels={"step": str(step)}))
            elif op == "health":
                pod = rnd.choice(views).pod
                await manager.set_resource_health(
                    pod.uid, "c0", [ResourceStatus("example.com/gpu", (ResourceHealth("d", "Unhealthy"),))])
            elif op == "tick":
                fake_clock.advance(rnd.randint(1, 10))
                await _settle()
            elif op == "evict":
                await manager.evict(rnd.choice(views).pod, "Evicted", "low on memory")
            elif op == "delete":
                pod = rnd.choice(views).pod
                await manager.delete(pod.namespace, pod.name)
            else:
                await manager.close()
                manager = _manager(db, fake_clock, refuse)
                await manager.restore()
            _check(manager)
    finally:
        await manager.close()
