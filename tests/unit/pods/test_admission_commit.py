"""One durable commit per admitted pod: the resource managers' writes and the pod's record together.

The pod manager stages the admission (state/batch.py): the topology manager's providers write
into it, the pod's record joins it, and one transaction commits all before apply answers. A
refusal (a provider's, or a predicate's after the providers admitted) drops what was staged
and the providers' rollbacks commit at once; a failed commit gives everything back and
refuses the pod with UnexpectedAdmissionError. Starters with nothing to prepare for the pod
(`prepare_now`) let it go Running in that same commit; one with work keeps the Pending path.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from prometheus_client import CollectorRegistry

from nodeagent.cm.cpumanager.manager import BUCKET as CPU_BUCKET
from nodeagent.cm.cpumanager.manager import CPUManager
from nodeagent.cm.topologymanager.manager import TopologyManager
from nodeagent.cm.topologymanager.policy import NUMAInfo
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import FAILED, PENDING, RUNNING, Container, Pod, ResourceHealth, ResourceStatus
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.hints import AdmissionFailure, Hints, TopologyHint
from nodeagent.pods.manager import BUCKET, PodManager
from nodeagent.pods.ports import StartResult
from nodeagent.state import batch
from nodeagent.state.db import StateDB, Txn
from nodeagent.util.clock import FakeClock
from tests.unit.cm.topologies import shorthand
from tests.unit.dra.fakes import settle
from tests.unit.pods.fakes import FakeCgroups, FakeResources, make_pod

TOPO = shorthand(2, 4, 2)  # 2 sockets x 4 cores x 2 threads, one NUMA node per socket
ALLOC = {"cpu": 16_000, "memory": 64 << 30, "pods": 110}
HEALTHY = ResourceStatus("example.com/gpu", (ResourceHealth("gpu-0", "Healthy"),))


class Provider:
    """A last hint provider (like the device manager): stages a record, may refuse."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        self.refuse = False
        self.removed: list[str] = []

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        return {}

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        return {}

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        batch.write(self.db, ("test", pod.uid), lambda txn: txn.put("test", pod.uid, {"held": True}))
        if self.refuse:
            raise AdmissionFailure("UnexpectedAdmissionError", "no devices")

    async def remove(self, pod: Pod) -> None:
        self.removed.append(pod.name)
        # as the managers write: staged when a batch is open in this context
        batch.write(self.db, ("test", pod.uid), lambda txn: txn.delete("test", pod.uid))


class Starter:
    """A starter answering at once (`instant`) or only through its prepare."""

    def __init__(self, instant: bool) -> None:
        self.instant = instant
        self.prepared: list[str] = []

    def prepare_now(self, pod: Pod) -> StartResult | None:
        if not self.instant:
            return None
        return StartResult(True, container_resource_status={"c0": (HEALTHY,)})

    async def prepare(self, pod: Pod) -> StartResult:
        self.prepared.append(pod.name)
        return StartResult(True, container_resource_status={"c0": (HEALTHY,)})

    async def unprepare(self, pod: Pod) -> None:
        return None

    def forget(self, pod: Pod) -> None:
        return None


class Rig:
    def __init__(self, tmp_path: Path, clock: FakeClock, *, instant: bool = True,
                 allocatable: dict[str, int] | None = None) -> None:
        self.db = StateDB(tmp_path / "state.db")
        self.cpu = CPUManager("static", TOPO, self.db, reserved_milli=1000)
        self.provider = Provider(self.db)
        self.tm = TopologyManager([self.cpu, self.provider], policy="single-numa-node", scope="container",
                                  numa=NUMAInfo(TOPO.numa_nodes, TOPO.distances()), db=self.db)
        self.cgroups = FakeCgroups()
        self.starter = Starter(instant)
        self.pods = PodManager(node_name="node-a", resources=FakeResources(dict(allocatable or ALLOC)),
                               admitters=[self.tm], cgroups=self.cgroups, db=self.db, clock=clock,
                               instruments=Instruments(CollectorRegistry()), recorder=EventRecorder(clock=clock),
                               starters=[self.starter])
        self.commits = 0
        self._real: Callable[[], AbstractContextManager[Txn]] = self.db.transaction
        self._fail_next = False

        def counting() -> AbstractContextManager[Txn]:
            self.commits += 1
            if self._fail_next:
                self._fail_next = False
                raise sqlite3.OperationalError("disk I/O error")
            return self._real()

        self.db.transaction = counting  # type: ignore[method-assign, assignment]

    def fail_next_commit(self) -> None:
        self._fail_next = True

    def cpu_records(self) -> list[str]:
        return [k for k, _ in self.db.items(CPU_BUCKET) if k.startswith("pod:")]


def guaranteed(name: str, clock: FakeClock) -> Pod:
    return make_pod(name, clock, cpu="2", memory="1Gi", limits=True)


async def test_admitted_pod_is_one_commit(tmp_path: Path, fake_clock: FakeClock) -> None:
    rig = Rig(tmp_path, fake_clock)
    pod = guaranteed("p", fake_clock)
    await rig.pods.apply(pod)
    assert rig.commits == 1  # the CPU manager's, the provider's and the pod's record together
    status = rig.pods.status(pod.uid)
    assert status.phase == RUNNING
    assert status.container_statuses[0].allocated_resources_status == (HEALTHY,)
    assert rig.starter.prepared == []  # answered by prepare_now, no worker pass
    record = rig.db.get(BUCKET, pod.uid)
    assert record["status"]["phase"] == RUNNING and record["holdsResources"] is True
    assert rig.cpu_records() == [f"pod:{pod.uid}"] and rig.db.get("test", pod.uid) == {"held": True}
    # what a new process reads back is what was acknowledged
    again = PodManager(node_name="node-a", resources=FakeResources(dict(ALLOC)), admitters=[],
                       cgroups=FakeCgroups(), db=rig.db, clock=fake_clock,
                       instruments=Instruments(CollectorRegistry()), recorder=EventRecorder(clock=fake_clock))
    assert await again.restore() == 1
    assert again.status(pod.uid).phase == RUNNING


async def test_starter_with_work_keeps_the_pending_path(tmp_path: Path, fake_clock: FakeClock) -> None:
    rig = Rig(tmp_path, fake_clock, instant=False)
    pod = guaranteed("p", fake_clock)
    await rig.pods.apply(pod, wait=False)
    assert rig.commits == 1  # admission and the Pending record together
    assert rig.pods.status(pod.uid).phase == PENDING
    assert rig.db.get(BUCKET, pod.uid)["status"]["phase"] == PENDING
    await settle()
    assert rig.starter.prepared == ["p"]
    assert rig.pods.status(pod.uid).phase == RUNNING
    assert rig.commits == 2


async def test_predicate_refusal_leaves_no_allocation(tmp_path: Path, fake_clock: FakeClock) -> None:
    rig = Rig(tmp_path, fake_clock, allocatable={**ALLOC, "memory": 1 << 20})
    pod = guaranteed("p", fake_clock)
    await rig.pods.apply(pod)
    status = rig.pods.status(pod.uid)
    assert (status.phase, status.reason) == (FAILED, "OutOfmemory")
    assert rig.cpu.assignments() == {} and rig.provider.removed == ["p"]
    assert rig.cpu_records() == [] and rig.db.get("test", pod.uid) is None
    assert rig.db.get(BUCKET, pod.uid)["status"]["reason"] == "OutOfmemory"


async def test_provider_refusal_rollback_commits_at_once(tmp_path: Path, fake_clock: FakeClock) -> None:
    rig = Rig(tmp_path, fake_clock)
    pod = guaranteed("p", fake_clock)
    # A durable record from an earlier admission (a restored holding) must be deleted by the
    # rollback even though the refused admission's own writes are dropped.
    with rig.db.transaction() as txn:
        txn.put("test", pod.uid, {"held": True})
    rig.provider.refuse = True
    await rig.pods.apply(pod)
    status = rig.pods.status(pod.uid)
    assert (status.phase, status.reason, status.message) == (FAILED, "UnexpectedAdmissionError",
                                                             "Pod was rejected: no devices")
    assert rig.db.get("test", pod.uid) is None
    assert rig.cpu.assignments() == {} and rig.cpu_records() == []


async def test_failed_commit_refuses_and_gives_back(tmp_path: Path, fake_clock: FakeClock) -> None:
    rig = Rig(tmp_path, fake_clock)
    pod = guaranteed("p", fake_clock)
    rig.fail_next_commit()
    await rig.pods.apply(pod)
    status = rig.pods.status(pod.uid)
    assert (status.phase, status.reason) == (FAILED, "UnexpectedAdmissionError")
    assert status.message == ("Pod was rejected: Allocate failed due to state commit failed: disk I/O error, "
                              "which is unexpected")
    assert rig.cpu.assignments() == {} and rig.provider.removed == ["p"]
    assert rig.cgroups.pods == {} and rig.cgroups.removed == ["p"]
    assert rig.cpu_records() == [] and rig.db.get("test", pod.uid) is None
    assert rig.db.get(BUCKET, pod.uid)["status"]["phase"] == FAILED
    assert rig.pods.active_pods() == []
    # the next admission commits normally
    other = guaranteed("q", fake_clock)
    await rig.pods.apply(other)
    assert rig.pods.status(other.uid).phase == RUNNING and rig.cpu_records() == [f"pod:{other.uid}"]
