"""One commit per admission (state/batch.py through the topology manager), and pod-level resources.

The topology manager stages the CPU, memory and device managers' writes and commits them
together before it answers; a refusal part way leaves nothing in the database. Pods with
pod-level resources (spec.resources) are skipped by the CPU and memory managers as upstream
(policy_static.go: "pod is using pod-level resources which are not supported").
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nodeagent.cm.cpumanager.manager import BUCKET as CPU_BUCKET
from nodeagent.cm.cpumanager.manager import CPUManager
from nodeagent.cm.memorymanager.manager import MemoryManager
from nodeagent.cm.topologymanager.manager import TopologyManager
from nodeagent.cm.topologymanager.policy import NUMAInfo
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.hints import AdmissionFailure, Hints, TopologyHint
from nodeagent.state import batch
from nodeagent.state.db import StateDB, Txn
from tests.unit.cm.topologies import shorthand

GI = 1 << 30
TOPO = shorthand(2, 4, 2)  # 2 sockets x 4 cores x 2 threads, one NUMA node per socket


class _Refuser:
    """A last provider (like the device manager) that counts the commits it can see, then refuses."""

    def __init__(self, db: StateDB, refuse: bool) -> None:
        self.db = db
        self.refuse = refuse
        self.seen: list[str] = []

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        return {}

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        return {}

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        # nothing of this admission is committed yet: the earlier providers' writes are staged
        self.seen = [k for k, _ in self.db.items(CPU_BUCKET) if k.startswith("pod:")]
        batch.write(self.db, ("test", pod.uid), lambda txn: txn.put("test", pod.uid, {"ok": True}))
        if self.refuse:
            raise AdmissionFailure("UnexpectedAdmissionError", "no devices")

    async def remove(self, pod: Pod) -> None:
        pass


def _setup(tmp_path: Path, refuse: bool = False) -> tuple[StateDB, CPUManager, MemoryManager, TopologyManager,
                                                          _Refuser]:
    db = StateDB(tmp_path / "state.db")
    cpu = CPUManager("static", TOPO, db, reserved_milli=1000)
    mem = MemoryManager("Static", {0: {"memory": 8 * GI}, 1: {"memory": 8 * GI}}, db,
                        reserved_memory={0: {"memory": GI}}, node_reservation={"memory": GI})
    last = _Refuser(db, refuse)
    tm = TopologyManager([cpu, mem, last], policy="single-numa-node", scope="container",
                         numa=NUMAInfo(TOPO.numa_nodes, TOPO.distances()), db=db)
    return db, cpu, mem, tm, last


def _guaranteed(name: str, **pod_level: dict[str, int]) -> Pod:
    res = {"cpu": 2000, "memory": GI}
    return Pod(uid=f"uid-{name}", name=name, containers=(Container("a", requests=res, limits=res),
                                                         Container("b", requests=res, limits=res)),
               pod_requests=pod_level.get("requests", {}), pod_limits=pod_level.get("limits", {}))


async def test_one_commit_holds_every_provider(tmp_path: Path) -> None:
    db, cpu, mem, tm, last = _setup(tmp_path)
    commits = 0
    real = db.transaction

    def counting():  # type: ignore[no-untyped-def]
        nonlocal commits
        commits += 1
        return real()

    db.transaction = counting  # type: ignore[method-assign]
    result = await tm.admit(_guaranteed("p"), ())
    assert result.admit
    assert commits == 1  # CPU (2 containers), memory (2 containers) and the last provider together
    assert last.seen == []  # while the last provider ran, nothing was committed yet
    db.transaction = real  # type: ignore[method-assign]
    stored = dict(db.items(CPU_BUCKET))
    assert sorted(stored["pod:uid-p"]["containers"]) == ["a", "b"]
    assert db.get("test", "uid-p") == {"ok": True}
    # a new process sees what was acknowledged
    again = CPUManager("static", TOPO, db, reserved_milli=1000)
    assert again.container_cpus("uid-p", "a") == cpu.container_cpus("uid-p", "a") != ()
    assert mem.container_memory("uid-p", "b")


async def test_refusal_commits_nothing(tmp_path: Path) -> None:
    db, cpu, mem, tm, _ = _setup(tmp_path, refuse=True)
    result = await tm.admit(_guaranteed("p"), ())
    assert (result.admit, result.reason) == (False, "UnexpectedAdmissionError")
    assert cpu.assignments() == {} and mem.assignments() == {}
    assert [k for k, _ in db.items(CPU_BUCKET) if k.startswith("pod:")] == []
    assert db.get("test", "uid-p") is None


async def test_failed_commit_refuses_and_releases(tmp_path: Path) -> None:
    db, cpu, mem, tm, _ = _setup(tmp_path)
    real = db.transaction

    def broken():  # type: ignore[no-untyped-def]
        db.transaction = real  # type: ignore[method-assign]  # only the commit fails; the rollback's deletes work
        raise sqlite3.OperationalError("disk I/O error")

    db.transaction = broken  # type: ignore[method-assign]
    result = await tm.admit(_guaranteed("p"), ())
    assert (result.admit, result.reason) == (False, "UnexpectedAdmissionError")
    assert result.message == "Allocate failed due to state commit failed: disk I/O error, which is unexpected"
    assert cpu.assignments() == {} and mem.assignments() == {}


async def test_write_outside_a_batch_commits_at_once(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    other = StateDB(tmp_path / "other.db")

    def put(txn: Txn) -> None:
        txn.put("b", "k", 1)

    batch.write(db, ("b", "k"), put)
    assert db.get("b", "k") == 1
    with batch.batch(other) as staged:  # a batch for another database does not capture db's writes
        batch.write(db, ("b", "k2"), lambda txn: txn.put("b", "k2", 2))
        batch.write(other, ("b", "k"), put)
        batch.write(other, ("b", "k"), lambda txn: txn.put("b", "k", 3))  # the same record: last wins
    assert db.get("b", "k2") == 2 and other.get("b", "k") is None and len(staged) == 1
    staged.commit()
    assert other.get("b", "k") == 3


async def test_pod_level_resources_skip_cpu_and_memory_managers(tmp_path: Path) -> None:
    _, cpu, mem, tm, _ = _setup(tmp_path)
    pod = _guaranteed("pl", requests={"cpu": 4000, "memory": 2 * GI}, limits={"cpu": 4000, "memory": 2 * GI})
    assert cpu.get_topology_hints(pod, pod.containers[0]) == {}
    assert mem.get_topology_hints(pod, pod.containers[0]) == {}
    assert (await tm.admit(pod, ())).admit
    assert cpu.container_cpus(pod.uid, "a") == () and mem.container_memory(pod.uid, "a") == ()
    # the same pod without spec.resources gets exclusive cpus and blocks
    plain = _guaranteed("plain")
    assert (await tm.admit(plain, ())).admit
    assert len(cpu.container_cpus(plain.uid, "a")) == 2 and mem.container_memory(plain.uid, "a")
