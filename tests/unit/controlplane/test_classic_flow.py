"""Classic DRA (KEP-3063) end to end over an in-memory store: a fake scheduler drives
StoreClassicScheduling.step while the real driver-controller loop runs as a task."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from nodeagent.config import Config, parse_documents
from nodeagent.controlplane.classic import ClassicDecision, ClassicRunner
from nodeagent.controlplane.classic.common import CLAIM, POD, PSC, finalizer
from nodeagent.controlplane.classic.driver import AllocationError, DriverController
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

CTRL = "cxl.example.com"
GATES = {"DRAControlPlaneController": True}
KIND_A = 'device.attributes["cxl.example.com"].kind == "a"'
KIND_B = 'device.attributes["cxl.example.com"].kind == "b"'


def make_store(path: str = ":memory:", clock: FakeClock | None = None) -> ObjectStore:
    kinds = builtin_kinds().with_hooks(resource.hooks(GATES))
    return ObjectStore(path, kinds, clock or FakeClock())


def make_config(pools: Sequence[Mapping[str, Any]], gate: bool = True, controller: str = CTRL) -> Config:
    return parse_documents(
        [
            {"kind": "KubeletConfiguration"},
            {
                "kind": "NodeAgentConfiguration",
                "nodeName": "node-1",
                "classicDRA": gate,
                "classicControllers": [{"controllerName": controller, "pools": list(pools)}],
            },
        ]
    )


def pool(name: str, nodes: Any, kind: str, count: int = 1) -> dict[str, Any]:
    return {
        "name": name,
        "nodes": nodes,
        "devices": [
            {"name": f"{name}-{i}", "attributes": {"kind": kind}, "capacity": {"memory": "64Gi"}}
            for i in range(count)
        ],
    }


def add_node(store: ObjectStore, name: str, labels: Mapping[str, str] | None = None) -> None:
    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})}})


def add_class(store: ObjectStore, name: str = "accel", suitable: Mapping[str, Any] | None = None) -> None:
    spec: dict[str, Any] = {}
    if suitable is not None:
        spec["suitableNodes"] = suitable
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                  "spec": spec})


def add_claim(store: ObjectStore, name: str, selector: str = "", device_class: str = "accel",
              count: int = 1, controller: str = CTRL) -> None:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    store.create({
        "apiVersion": "resource.k8s.io/v1", "kind": CLAIM,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"controllerName": controller, "devices": {"requests": [{"name": "acc", "exactly": exactly}]}},
    })


def add_pod(store: ObjectStore, name: str, claims: Sequence[str], node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x"}],
        "resourceClaims": [{"name": f"pc-{c}", "resourceClaimName": c} for c in claims],
    }
    if node_name:
        spec["nodeName"] = node_name
    return store.create({"apiVersion": "v1", "kind": POD, "metadata": {"name": name, "namespace": "default"},
                         "spec": spec})


def claim(store: ObjectStore, name: str) -> dict[str, Any]:
    return store.get(CLAIM, "default", name)


async def settle(runner: ClassicRunner) -> None:
    quiet = 0
    for _ in range(500):
        await asyncio.sleep(0)
        quiet = quiet + 1 if runner.idle() else 0
        if quiet >= 3:
            return
    raise AssertionError("classic controllers did not settle")


class FakeScheduler:
    """Calls step the way the real scheduler does: on every change, with fresh objects."""

    def __init__(self, store: ObjectStore, runner: ClassicRunner) -> None:
        self.store = store
        self.runner = runner
        self.messages: list[str] = []

    def step(self, pod_name: str, feasible: Sequence[str]) -> ClassicDecision:
        pod = self.store.get(POD, "default", pod_name)
        names = [e["resourceClaimName"] for e in pod["spec"]["resourceClaims"]]
        claims = [c for c in (self.store.try_get(CLAIM, "default", n) for n in names) if c is not None]
        decision = self.runner.scheduling.step(pod, claims, feasible)
        if not self.messages or self.messages[-1] != decision.message:
            self.messages.append(decision.message)
        return decision

    async def schedule(self, pod_name: str, feasible: Sequence[str], rounds: int = 40) -> ClassicDecision:
        decision = self.step(pod_name, feasible)
        for _ in range(rounds):
            if decision.ready:
                return decision
            await settle(self.runner)
            decision = self.step(pod_name, feasible)
        return decision


@asynccontextmanager
async def running(store: ObjectStore, cfg: Config, registry: CollectorRegistry | None = None,
                  drivers: Sequence[DriverController] = ()) -> Any:
    runner = ClassicRunner(cfg, store, store.clock, registry, drivers=drivers)
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


NODES = ["node-1", "node-2", "node-3"]


@pytest.fixture
def store() -> Iterator[ObjectStore]:
    s = make_store()
    for n in NODES:
        add_node(s, n, {"rack": n})
    add_class(s)
    yield s
    s.close()


async def test_one_claim_is_selected_at_once_allocated_and_reserved(store: ObjectStore) -> None:
    cfg = make_config([pool("rack-all", NODES, "a", 2)])
    add_claim(store, "gpu")
    pod = add_pod(store, "p1", ["gpu"])
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        first = sched.step("p1", NODES)
        assert not first.ready
        psc = store.get(PSC, "default", "p1")
        assert psc["spec"] == {"potentialNodes": NODES, "selectedNode": "node-1"}  # one claim: at once
        owner = psc["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("Pod", pod["metadata"]["uid"], True)
        assert "to allocate resourceclaims gpu for node node-1" in first.message
        decision = await sched.schedule("p1", NODES)
        assert decision == ClassicDecision(True, "node-1", "")
        got = claim(store, "gpu")
        alloc = got["status"]["allocation"]
        assert alloc["controller"] == CTRL
        assert alloc["devices"]["results"] == [
            {"request": "acc", "driver": CTRL, "pool": "rack-all", "device": "rack-all-0"}]
        assert len(alloc["nodeSelector"]["nodeSelectorTerms"]) == 3
        assert got["status"]["reservedFor"] == [{"resource": "pods", "name": "p1", "uid": pod["metadata"]["uid"]}]
        assert got["metadata"]["finalizers"] == [finalizer(CTRL)]
        # idempotent: another step changes nothing
        rv = store.resource_version
        assert sched.step("p1", NODES).ready
        assert store.resource_version == rv
        runner.scheduling.forget(store.get(POD, "default", "p1"))
        assert store.try_get(PSC, "default", "p1") is None


async def test_two_claims_wait_for_information_before_selecting(store: ObjectStore) -> None:
    cfg = make_config([pool("rack-all", NODES, "a", 2)], gate=False)  # no controller runs
    add_claim(store, "a1")
    add_claim(store, "a2")
    add_pod(store, "p", ["a1", "a2"])
    async with running(store, cfg) as runner:
        assert runner.controllers == []
        decision = FakeScheduler(store, runner).step("p", NODES)
        assert not decision.ready
        assert "to report unsuitable nodes for resourceclaims a1, a2" in decision.message
        assert store.get(PSC, "default", "p")["spec"] == {"potentialNodes": NODES}


async def test_two_claims_need_deallocation_recovery(store: ObjectStore) -> None:
    cfg = make_config([
        pool("a-rack1", ["node-1"], "a"),
        pool("a-rack2", ["node-2"], "a"),
        pool("b-rack23", ["node-2", "node-3"], "b"),
    ])
    add_claim(store, "claim-a", KIND_A)
    add_claim(store, "claim-b", KIND_B)
    add_pod(store, "first", ["claim-a"])
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        assert (await sched.schedule("first", NODES)).node == "node-1"
        assert claim(store, "claim-a")["status"]["allocation"]["devices"]["results"][0]["pool"] == "a-rack1"
        # The first pod ends: the claim controller unreserves the claim; the allocation stays.
        cur = claim(store, "claim-a")
        cur["status"].pop("reservedFor")
        store.update_status(cur)
        runner.scheduling.forget(store.get(POD, "default", "first"))
        store.delete(POD, "default", "first")

        add_pod(store, "second", ["claim-a", "claim-b"])
        decision = await sched.schedule("second", NODES)
        assert decision.ready and decision.node == "node-2", sched.messages
        assert any("requested deallocation of resourceclaim \"claim-a\"" in m for m in sched.messages)
        a, b = claim(store, "claim-a"), claim(store, "claim-b")
        assert a["status"]["allocation"]["devices"]["results"][0]["pool"] == "a-rack2"
        assert b["status"]["allocation"]["devices"]["results"][0]["pool"] == "b-rack23"
        uid = store.get(POD, "default", "second")["metadata"]["uid"]
        assert [r["uid"] for r in a["status"]["reservedFor"]] == [uid]
        assert [r["uid"] for r in b["status"]["reservedFor"]] == [uid]
        assert "deallocationRequested" not in a["status"]
        reasons = {e["reason"] for e in store.list("Event", "default")}
        assert "DeallocationRequested" in reasons


async def test_reserved_claim_is_never_deallocated_for_another_pod(store: ObjectStore) -> None:
    cfg = make_config([pool("a-rack1", ["node-1"], "a"), pool("b-rack2", ["node-2"], "b")])
    add_claim(store, "shared", KIND_A)
    add_claim(store, "claim-b", KIND_B)
    add_pod(store, "owner", ["shared"])
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        assert (await sched.schedule("owner", NODES)).node == "node-1"
        add_pod(store, "other", ["shared", "claim-b"])
        decision = await sched.schedule("other", NODES, rounds=5)
        assert not decision.ready
        assert "in use by other pods" in decision.message
        assert "deallocationRequested" not in claim(store, "shared")["status"]


async def test_suitable_nodes_narrow_potential_nodes(store: ObjectStore) -> None:
    add_class(store, "rack-class", {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["node-2", "node-3"]}]}]})
    cfg = make_config([pool("all", NODES, "a", 3)])
    add_claim(store, "c", device_class="rack-class")
    add_pod(store, "p", ["c"])
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        sched.step("p", NODES)
        assert store.get(PSC, "default", "p")["spec"]["potentialNodes"] == ["node-2", "node-3"]
        decision = await sched.schedule("p", NODES)
        assert decision.node == "node-2"
        # no feasible node in the class's suitableNodes: a clear message, no context churn
        add_claim(store, "c2", device_class="rack-class")
        add_pod(store, "p2", ["c2"])
        d2 = sched.step("p2", ["node-1"])
        assert not d2.ready and "suitableNodes" in d2.message


async def test_deleted_claim_waits_for_deallocation(store: ObjectStore) -> None:
    cfg = make_config([pool("all", NODES, "a")])
    add_claim(store, "c")
    add_pod(store, "p", ["c"])
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        assert (await sched.schedule("p", NODES)).ready
        store.delete(CLAIM, "default", "c")
        await settle(runner)
        cur = claim(store, "c")  # still there: reserved, allocated, finalizer kept
        assert cur["metadata"]["deletionTimestamp"]
        assert cur["status"]["allocation"]
        assert cur["metadata"]["finalizers"] == [finalizer(CTRL)]
        decision = sched.step("p", NODES)
        assert not decision.ready and "being deleted" in decision.message
        cur["status"].pop("reservedFor")  # the pod ended
        store.update_status(cur)
        await settle(runner)
        assert store.try_get(CLAIM, "default", "c") is None


async def test_potential_nodes_are_capped_at_128() -> None:
    store = make_store()
    add_class(store)
    nodes = [f"node-{i:03d}" for i in range(200)]
    cfg = make_config([pool("far", ["node-150"], "a")])
    add_claim(store, "c")
    add_pod(store, "p", ["c"])
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        sched.step("p", nodes)
        assert store.get(PSC, "default", "p")["spec"]["potentialNodes"] == nodes[:128]
        decision = await sched.schedule("p", nodes, rounds=5)
        assert not decision.ready
        status = store.get(PSC, "default", "p")["status"]["resourceClaims"]
        assert status[0]["name"] == "pc-c" and len(status[0]["unsuitableNodes"]) == 128
        assert "no potential node is suitable" in decision.message
        # node-150 is feasible and within the first 128: now it is found
        decision = await sched.schedule("p", nodes[100:])
        assert decision.node == "node-150", sched.messages
    store.close()


async def test_pod_with_node_name_gets_only_selected_node(store: ObjectStore) -> None:
    cfg = make_config([pool("r3", ["node-3"], "a")])
    add_claim(store, "c")
    add_pod(store, "p", ["c"], node_name="node-3")
    async with running(store, cfg) as runner:
        sched = FakeScheduler(store, runner)
        sched.step("p", NODES)
        assert store.get(PSC, "default", "p")["spec"] == {"selectedNode": "node-3"}
        assert (await sched.schedule("p", NODES)).node == "node-3"
        add_claim(store, "c2")
        add_pod(store, "q", ["c2"], node_name="node-1")
        decision = await sched.schedule("q", NODES, rounds=3)
        assert not decision.ready and "cannot allocate resourceclaims c2 for node node-1" in decision.message


class FlakyDriver:
    """Says every node suits, then fails to allocate on node-1."""

    name = "flaky.example.com"

    def unsuitable_nodes(self, claim: Mapping[str, Any], nodes: Sequence[str]) -> set[str]:
        return set()

    def allocate(self, claim: Mapping[str, Any], node: str) -> dict[str, Any]:
        if node == "node-1":
            raise AllocationError("the fabric switch refused the binding", reason="FabricError")
        return {"devices": {"results": []}}

    def deallocate(self, claim: Mapping[str, Any]) -> None:
        pass


async def test_allocation_failure_makes_events_and_moves_on(store: ObjectStore) -> None:
    cfg = make_config([pool("all", NODES, "a")])
    add_claim(store, "c", controller=FlakyDriver.name)
    add_pod(store, "p", ["c"])
    async with running(store, cfg, drivers=[FlakyDriver()]) as runner:
        sched = FakeScheduler(store, runner)
        decision = await sched.schedule("p", NODES)
        assert decision.node == "node-2", sched.messages
        events = [e for e in store.list("Event", "default") if e["reason"] == "FabricError"]
        kinds = sorted(e["involvedObject"]["kind"] for e in events)
        assert kinds == ["Pod", "PodSchedulingContext", "ResourceClaim"]
        assert "refused the binding" in events[0]["message"]


async def test_controller_restart_keeps_allocations(tmp_path: Any) -> None:
    path = str(tmp_path / "objects.db")
    store = make_store(path)
    for n in NODES:
        add_node(store, n)
    add_class(store)
    cfg = make_config([pool("all", NODES, "a", 2)])
    add_claim(store, "c1")
    add_pod(store, "p1", ["c1"])
    async with running(store, cfg) as runner:
        assert (await FakeScheduler(store, runner).schedule("p1", NODES)).ready
    before = claim(store, "c1")
    store.close()

    store = make_store(path)  # a new process: nothing but the file
    add_claim(store, "c2")
    add_pod(store, "p2", ["c2"])
    async with running(store, cfg) as runner:
        await settle(runner)
        assert claim(store, "c1") == before
        assert (await FakeScheduler(store, runner).schedule("p2", NODES)).ready
        devices = {claim(store, n)["status"]["allocation"]["devices"]["results"][0]["device"] for n in ("c1", "c2")}
        assert devices == {"all-0", "all-1"}
        add_claim(store, "c3")
        add_pod(store, "p3", ["c3"])
        decision = await FakeScheduler(store, runner).schedule("p3", NODES, rounds=4)
        assert not decision.ready and "no potential node is suitable" in decision.message
    store.close()


async def test_gate_off_starts_nothing_and_metrics_count_contexts(store: ObjectStore) -> None:
    registry = CollectorRegistry()
    cfg = make_config([pool("all", NODES, "a")])
    add_claim(store, "c")
    add_pod(store, "p", ["c"])
    async with running(store, cfg, registry) as runner:
        assert len(runner.controllers) == 1
        FakeScheduler(store, runner).step("p", NODES)
        assert registry.get_sample_value("nodeagent_dra_pod_scheduling_contexts") == 1.0
        await FakeScheduler(store, runner).schedule("p", NODES)
        assert registry.get_sample_value(
            "nodeagent_dra_classic_operations_total",
            {"controller": CTRL, "operation": "allocate", "result": "success"}) == 1.0
    off = make_config([pool("all", NODES, "a")], gate=False)
    async with running(store, off, CollectorRegistry()) as runner:
        assert runner.controllers == [] and not runner.enabled


def test_config_yaml_round_trip() -> None:
    text = """
kind: KubeletConfiguration
---
kind: NodeAgentConfiguration
nodeName: node-1
classicDRA: true
classicControllers:
- controllerName: cxl.example.com
  pools:
  - name: rack-a
    nodes: {nodeSelectorTerms: [{matchExpressions: [{key: rack, operator: In, values: [a]}]}]}
    devices: [{name: acc-0, attributes: {model: x100, cxl.example.com/gen: {int: 2}}, capacity: {memory: 64Gi}}]
"""
    cfg = parse_documents(list(yaml.safe_load_all(text)))
    runner = ClassicRunner(cfg, make_store(), FakeClock(), None)
    assert runner.enabled and [d.name for d in runner.drivers] == [CTRL]
