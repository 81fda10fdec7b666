"""Per-pod workers with DRA over real sockets: a hanging NodePrepareResources stalls only its pod,
a deletion during a prepare unprepares after that prepare returned, a shared claim is prepared once.

The pod manager and the DRA manager run in process with the real DRARegistry client; the drivers
are in-test DRA drivers (tests/rpc/dra_fake.py) on unix sockets, one that hangs on request.
Backoff and timers run on a FakeClock; only the drivers' calls take real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.dra.manager import DRAManager
from nodeagent.dra.ports import ClaimRef, PrepareResult
from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import PENDING, RUNNING, Pod
from nodeagent.pluginwatcher.model import PluginInfo
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from tests.rpc.dra_fake import ALL_VERSIONS, FakeDRADriver
from tests.unit.dra.fakes import ALLOC, FakeClaims, claim_doc, claim_pod
from tests.unit.pods.fakes import FakeCgroups, FakeResources
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

SLOW, FAST = "slow.example.com", "fast.example.com"


class SpyRegistry(DRARegistry):
    """The real registry, with the start and end of every driver call recorded in order."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.events: list[tuple[str, str, tuple[str, ...]]] = []

    async def prepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        names = tuple(c.name for c in claims)
        self.events.append(("prepare-start", driver, names))
        try:
            return await super().prepare(driver, claims)
        finally:
            self.events.append(("prepare-end", driver, names))

    async def unprepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        names = tuple(c.name for c in claims)
        self.events.append(("unprepare-start", driver, names))
        try:
            return await super().unprepare(driver, claims)
        finally:
            self.events.append(("unprepare-end", driver, names))


class Node:
    def __init__(self, root: Path, clock: FakeClock) -> None:
        self.root = root
        self.clock = clock
        metrics = CollectorRegistry()
        instruments = Instruments(metrics)
        self.registry = SpyRegistry(clock, instruments)
        self.claims = FakeClaims()
        self.dra = DRAManager(self.registry, self.claims, StateDB.memory(), clock, metrics_registry=metrics)
        self.pods = PodManager(node_name="node-a", resources=FakeResources(dict(ALLOC)), admitters=[],
                               cgroups=FakeCgroups(), db=StateDB.memory(), clock=clock,
                               instruments=instruments, recorder=EventRecorder(clock=clock),
                               starters=[self.dra])
        self.dra.attach_pods(self.pods)
        self.drivers: dict[str, FakeDRADriver] = {}

    async def driver(self, name: str, **kw: object) -> FakeDRADriver:
        short = name.split(".")[0]
        d = FakeDRADriver(name, self.root / f"{short}-reg.sock", self.root / f"{short}.sock",
                          **kw)  # type: ignore[arg-type]
        await d.start_service()
        await self.registry.register(PluginInfo("DRAPlugin", name, str(d.dra_path), ALL_VERSIONS, str(d.reg_path)))
        self.drivers[name] = d
        return d

    def pod(self, name: str, claim: str, driver: str) -> Pod:
        pod = claim_pod(name, self.clock, {"gpu": claim})
        if (("default", claim)) not in self.claims.docs:
            self.claims.put(claim_doc(claim, results=[("gpu", driver, "pool-a", f"{claim}-dev")]))
        reserved = self.claims.docs[("default", claim)]["status"].get("reservedFor", [])
        reserved.append({"resource": "pods", "name": pod.name, "uid": pod.uid})
        self.claims.docs[("default", claim)]["status"]["reservedFor"] = reserved
        return pod

    def phase(self, name: str) -> str:
        return self.pods.get("default", name).status.phase

    def calls(self, driver: str) -> list[tuple[str, list[str]]]:
        return [(method, [uid for _, uid, _ in claims]) for _, method, claims in self.drivers[driver].calls]

    async def close(self) -> None:
        await self.pods.close()
        await self.dra.stop()
        await self.registry.close()
        for d in self.drivers.values():
            d.delay = 0.0
            await d.stop()


@pytest.fixture
async def node(short_dir: Path, fake_clock: FakeClock) -> AsyncIterator[Node]:
    n = Node(short_dir, fake_clock)
    yield n
    await n.close()


async def test_hanging_prepare_does_not_delay_another_pod(node: Node) -> None:
    slow = await node.driver(SLOW, delay=3600.0)  # NodePrepareResources hangs (well within its 45 s deadline)
    await node.driver(FAST)
    stuck = node.pod("stuck", "claim-slow", SLOW)
    await node.pods.apply(stuck, wait=False)
    await eventually(lambda: bool(slow.calls), what="the hanging NodePrepareResources")

    quick = node.pod("quick", "claim-fast", FAST)
    await asyncio.wait_for(node.pods.apply(quick), 5)  # answered after its own prepare, not the hanging one
    assert node.phase("quick") == RUNNING and node.phase("stuck") == PENDING
    assert node.calls(FAST) == [("NodePrepareResources", ["uid-claim-fast"])]
    # the rest of the node goes on too: health into status, another delete, the pod list
    await asyncio.wait_for(node.pods.delete("default", "quick"), 5)
    assert node.calls(FAST)[-1] == ("NodeUnprepareResources", ["uid-claim-fast"])
    assert [v.pod.name for v in node.pods.list()] == ["stuck"]


async def test_delete_during_prepare_unprepares_after_the_prepare_returned(node: Node) -> None:
    slow = await node.driver(SLOW, delay=3600.0)
    pod = node.pod("p", "claim-slow", SLOW)
    await node.pods.apply(pod, wait=False)
    await eventually(lambda: bool(slow.calls), what="the hanging NodePrepareResources")
    slow.delay = 0.0  # the driver answers the calls that come next at once
    # The deletion cancels the sync in flight (as the kubelet cancels the pod worker's context) and
    # unprepares after it returned: never an unprepare overtaking the prepare of the same pod.
    await asyncio.wait_for(node.pods.delete("default", "p"), 5)
    assert node.registry.events == [
        ("prepare-start", SLOW, ("claim-slow",)),
        ("prepare-end", SLOW, ("claim-slow",)),
        ("unprepare-start", SLOW, ("claim-slow",)),
        ("unprepare-end", SLOW, ("claim-slow",)),
    ]
    assert node.calls(SLOW) == [("NodePrepareResources", ["uid-claim-slow"]),
                                ("NodeUnprepareResources", ["uid-claim-slow"])]
    assert node.dra.claims() == {} and node.pods.list() == []


async def test_pods_sharing_a_claim_prepare_it_once(node: Node) -> None:
    d = await node.driver(SLOW, delay=0.2)
    first, second = node.pod("a", "shared", SLOW), node.pod("b", "shared", SLOW)
    await node.pods.apply(first, wait=False)
    await node.pods.apply(second, wait=False)
    await eventually(lambda: node.phase("a") == RUNNING and node.phase("b") == RUNNING, what="both Running")
    assert node.calls(SLOW) == [("NodePrepareResources", ["uid-shared"])]  # the second waited on the claim
    await node.pods.delete("default", "a")
    assert node.calls(SLOW)[-1][0] == "NodePrepareResources"  # b still uses it
    await node.pods.delete("default", "b")
    assert node.calls(SLOW)[-1] == ("NodeUnprepareResources", ["uid-shared"])
    assert d.calls and node.dra.claims() == {}
