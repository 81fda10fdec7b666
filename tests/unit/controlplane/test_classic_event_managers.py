"""Classic DRA's Events carry managedFields as kube-apiserver records its posters' creates: the
driver controller's (Allocated) as its binary's, `nodeagent` (classic/common.CONTROLLER_MANAGER:
upstream each driver controller is a binary of its own posting through client-go, without a
fieldManager), the scheduling side's (DeallocationRequested) as kube-scheduler's; the store's field
manager is the API server's (Registry.in_process_fields), as the daemon wires it."""

from __future__ import annotations

from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from tests.unit.controlplane.test_classic_flow import (
    KIND_A,
    KIND_B,
    NODES,
    FakeScheduler,
    add_claim,
    add_class,
    add_node,
    add_pod,
    claim,
    make_config,
    make_store,
    pool,
    running,
)


async def test_classic_events_record_their_posters() -> None:
    store = make_store()
    for n in NODES:
        add_node(store, n, {"rack": n})
    add_class(store)
    registry = Registry(store, Catalog(builtin_resources(classic_dra=True)), builtin_definitions(),
                        builtin_strategies(), store.clock)
    store.field_manager = registry.in_process_fields
    cfg = make_config([pool("a-rack1", ["node-1"], "a"), pool("a-rack2", ["node-2"], "a"),
                       pool("b-rack23", ["node-2", "node-3"], "b")])
    add_claim(store, "claim-a", KIND_A)
    add_claim(store, "claim-b", KIND_B)
    add_pod(store, "first", ["claim-a"])
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        assert (await sched.schedule("first", NODES)).node == "node-1"
        cur = claim(store, "claim-a")
        cur["status"].pop("reservedFor")
        store.update_status(cur)
        runner.scheduling.forget(store.get("Pod", "default", "first"))
        store.delete("Pod", "default", "first")
        add_pod(store, "second", ["claim-a", "claim-b"])
        assert (await sched.schedule("second", NODES)).ready
    managers = {(e["reason"], m["manager"], m["operation"], m["apiVersion"])
                for e in store.list("Event", "default") for m in e["metadata"].get("managedFields") or ()}
    assert {("Allocated", "nodeagent", "Update", "v1"),
            ("DeallocationRequested", "kube-scheduler", "Update", "v1")} <= managers
    assert {reason for reason, *_ in managers} == {e["reason"] for e in store.list("Event", "default")}
