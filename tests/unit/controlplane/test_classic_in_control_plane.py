"""Classic DRA through the real control plane loop (not a fake scheduler): the scheduler's
rounds must not batch their writes when the classic negotiation writes PodSchedulingContexts
and events through transactions of its own (a round's batch cannot hold a nested transaction:
`make run`'s demo pod once stayed Pending with "object store transactions do not nest")."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from nodeagent.controlplane.classic import ClassicRunner
from nodeagent.controlplane.classic.common import CLAIM, POD
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.util.clock import RealClock
from tests.unit.controlplane.test_classic_flow import (
    CTRL,
    add_claim,
    add_class,
    add_pod,
    make_config,
    make_store,
    pool,
)


async def test_classic_claim_pod_is_bound_by_the_control_plane_loop() -> None:
    store = make_store(clock=RealClock())  # type: ignore[arg-type]
    nodes = ["node-1", "node-2"]
    cfg = make_config([pool("rack", nodes, "a", 2)])
    for n in nodes:  # schedulable: Ready, with allocatable
        res = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
                      "status": {"capacity": res, "allocatable": res,
                                 "conditions": [{"type": "Ready", "status": "True"}]}})
    add_class(store)
    add_claim(store, "gpu")
    add_pod(store, "p1", ["gpu"])
    runner = ClassicRunner(cfg, store, store.clock, CollectorRegistry())
    await runner.start()
    cp = ControlPlane(cfg, store, store.clock, CollectorRegistry(), classic=runner.scheduling)
    await cp.start()
    try:
        for _ in range(400):
            if store.get(POD, "default", "p1")["spec"].get("nodeName"):
                break
            await asyncio.sleep(0.01)
        pod = store.get(POD, "default", "p1")
        assert pod["spec"].get("nodeName") in nodes, pod.get("status")
        alloc = store.get(CLAIM, "default", "gpu")["status"]["allocation"]
        assert alloc["controller"] == CTRL
    finally:
        await cp.stop()
        await runner.stop()
        store.close()
