"""CPU manager: static policy decisions (pure) and the persisted manager."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.cm.cpumanager import policy as P
from nodeagent.cm.cpumanager.manager import BUCKET, CPUManager
from nodeagent.config import NumaNode
from nodeagent.errors import ConfigError, Exhausted
from nodeagent.objects.pod import Container, Pod
from nodeagent.state.db import StateDB

Gi = 1 << 30
TWO_NODES = P.CPUTopology(
    cpus=tuple(range(8)), numa_nodes=(NumaNode(0, (0, 1, 2, 3), Gi), NumaNode(1, (4, 5, 6, 7), Gi))
)


def guaranteed(uid: str, *cpus: int, init: tuple[int, ...] = ()) -> Pod:
    def c(name: str, milli: int) -> Container:
        r = {"cpu": milli, "memory": Gi}
        return Container(name, requests=r, limits=r)

    return Pod(
        uid=uid,
        name=uid,
        containers=tuple(c(f"c{i}", m) for i, m in enumerate(cpus)),
        init_containers=tuple(c(f"init{i}", m) for i, m in enumerate(init)),
    )


def test_reserved_cpus_lowest_numbered_or_explicit() -> None:
    assert P.reserved_cpus(TWO_NODES, (), 1500) == (0, 1)
    assert P.reserved_cpus(TWO_NODES, (), 1000) == (0,)
    assert P.reserved_cpus(TWO_NODES, (7, 3), 1000) == (3, 7)


@pytest.mark.parametrize(
    ("name", "pod", "expected"),
    [
        ("integer request gets exclusive cpus", guaranteed("a", 2000), {"c0": (1, 2)}),
        ("fractional request stays shared", guaranteed("a", 1500), {}),
        ("too big for node 0, fits node 1", guaranteed("a", 4000), {"c0": (4, 5, 6, 7)}),
        ("needs both nodes, fullest first", guaranteed("a", 6000), {"c0": (1, 2, 4, 5, 6, 7)}),
        ("two containers", guaranteed("a", 1000, 2000), {"c0": (1,), "c1": (2, 3)}),
        ("init cpus reused", guaranteed("a", 3000, init=(3000,)), {"init0": (1, 2, 3), "c0": (1, 2, 3)}),
    ],
)
def test_static_allocation(name: str, pod: Pod, expected: dict[str, tuple[int, ...]]) -> None:
    assert P.allocate(P.STATIC, pod, TWO_NODES, (0,), {}) == expected, name


def test_burstable_pod_gets_nothing() -> None:
    pod = Pod(uid="b", name="b", containers=(Container("c", requests={"cpu": 2000}),))
    assert P.allocate(P.STATIC, pod, TWO_NODES, (0,), {}) == {}


def test_prefers_fullest_node_that_fits() -> None:
    taken = {"x": {"c": (4, 5)}}
    # node 0 has 1,2,3 free; node 1 has 6,7: a 2-cpu request packs into node 1.
    assert P.allocate(P.STATIC, guaranteed("a", 2000), TWO_NODES, (0,), taken) == {"c0": (6, 7)}


def test_shortage_raises_exhausted() -> None:
    with pytest.raises(Exhausted, match="requested=8, available=7"):
        P.allocate(P.STATIC, guaranteed("a", 8000), TWO_NODES, (0,), {})


def test_none_policy_assigns_nothing() -> None:
    assert P.allocate(P.NONE, guaranteed("a", 2000), TWO_NODES, (), {}) == {}


def test_no_numa_takes_lowest() -> None:
    topo = P.CPUTopology(cpus=(0, 1, 2, 3))
    assert P.allocate(P.STATIC, guaranteed("a", 2000), topo, (0,), {"x": {"c": (1,)}}) == {"c0": (2, 3)}


# ---------------------------------------------------------------- manager


def make(db: StateDB, policy: str = "static") -> CPUManager:
    return CPUManager(policy, TWO_NODES, db, reserved_milli=1000)


async def test_admit_persists_and_restores(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    mgr = make(db)
    pod = guaranteed("a", 2000)
    assert (await mgr.admit(pod, [])).admit
    assert mgr.container_cpus("a", "c0") == (1, 2)
    assert db.get(BUCKET, "pod:a") == {"containers": {"c0": [1, 2]}}
    db.close()

    db2 = StateDB(tmp_path / "state.db")
    again = make(db2)
    assert again.container_cpus("a", "c0") == (1, 2)
    assert (await again.admit(guaranteed("b", 1000), [pod])).admit
    assert again.container_cpus("b", "c0") == (3,)
    await again.remove(pod)
    await again.remove(pod)  # idempotent
    assert again.container_cpus("a", "c0") == ()
    assert db2.get(BUCKET, "pod:a") is None
    db2.close()


async def test_admit_refuses_when_pool_short() -> None:
    mgr = make(StateDB.memory())
    assert (await mgr.admit(guaranteed("a", 4000), [])).admit
    result = await mgr.admit(guaranteed("b", 4000), [])
    assert not result.admit
    assert result.reason == "UnexpectedAdmissionError"
    assert result.message == (
        "Allocate failed due to not enough cpus available to satisfy request: requested=4, available=3, "
        "which is unexpected"
    )
    assert mgr.container_cpus("b", "c0") == ()


async def test_providers() -> None:
    mgr = make(StateDB.memory())
    assert mgr.allocatable_cpus() == (1, 2, 3, 4, 5, 6, 7)
    none = make(StateDB.memory(), "none")
    assert none.allocatable_cpus() == ()
    assert (await none.admit(guaranteed("a", 2000), [])).admit
    assert none.container_cpus("a", "c0") == ()


def test_static_requires_a_reservation() -> None:
    with pytest.raises(ConfigError, match="greater than zero"):
        CPUManager("static", TWO_NODES, StateDB.memory())
    with pytest.raises(ConfigError, match="reservedSystemCPUs"):
        CPUManager("static", TWO_NODES, StateDB.memory(), reserved_system_cpus=(9,))


async def test_policy_change_drops_assignments() -> None:
    db = StateDB.memory()
    assert (await make(db).admit(guaranteed("a", 2000), [])).admit
    make(db, "none")
    assert make(db).container_cpus("a", "c0") == ()


async def test_restore_drops_invalid_assignments() -> None:
    db = StateDB.memory()
    db.put(BUCKET, "policy", {"name": "static"})
    db.put(BUCKET, "pod:bad", {"containers": {"c": [0]}})  # reserved cpu
    db.put(BUCKET, "pod:good", {"containers": {"c": [5]}})
    mgr = make(db)
    assert mgr.container_cpus("good", "c") == (5,)
    assert mgr.container_cpus("bad", "c") == ()
    assert db.get(BUCKET, "pod:bad") is None
