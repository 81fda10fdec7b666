"""The memory manager's Static policy, from upstream's policy_static_test.go and memory_manager_test.go.

Machine: two NUMA nodes of 10Gi, 1Gi reserved on NUMA 0 (reservedMemory), so NUMA 0 has
9Gi allocatable and NUMA 1 10Gi. Cases: hints for a single-node request (both nodes,
preferred) and for a request only both nodes can hold (the group, preferred as the
minimum); allocation on the narrowest preferred mask; groups not mixed with single-node
blocks; BestEffort/Burstable pods get nothing; the kubelet's error when no NUMA node can
hold the request; init container memory reused by app containers; removal; restart;
start-up validation of reservedMemory.
"""

from __future__ import annotations

import pytest

from nodeagent.cm import allocatable as alloc
from nodeagent.cm.memorymanager.manager import MemoryManager
from nodeagent.cm.memorymanager.model import Block
from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.hints import TopologyHint
from nodeagent.state.db import StateDB

GI = 2**30
NUMA = {0: {"memory": 10 * GI}, 1: {"memory": 10 * GI}}
RESERVED = {0: {"memory": GI}}


def manager(db: StateDB | None = None) -> MemoryManager:
    return MemoryManager("Static", NUMA, db or StateDB.memory(), reserved_memory=RESERVED,
                         node_reservation={"memory": GI, "cpu": 1000})


def c(name: str, gi: int, *, guaranteed: bool = True, restart: str = "") -> Container:
    reqs = {"cpu": 1000, "memory": gi * GI}
    return Container(name, requests=reqs, limits=reqs if guaranteed else {"memory": 2 * gi * GI},
                     restart_policy=restart)


def pod(uid: str, *containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(uid=uid, name=uid, containers=containers, init_containers=init)


def free(m: MemoryManager) -> dict[int, int]:
    return {n: s.memory_map["memory"].free for n, s in m.machine_state().items()}


async def test_single_node_hints_and_allocation() -> None:
    m = manager()
    p = pod("a", c("app", 1))
    assert m.get_topology_hints(p, p.containers[0]) == {"memory": [
        TopologyHint(0b01, True), TopologyHint(0b10, True), TopologyHint(0b11, False)]}
    assert (await m.admit(p, [])).admit
    assert m.assignments() == {"a": {"app": (Block((0,), "memory", GI),)}}
    assert free(m) == {0: 8 * GI, 1: 10 * GI}
    assert [(b.memory_type, b.size, b.numa_nodes) for b in m.container_memory("a", "app")] == [("memory", GI, (0,))]
    assert [(b.memory_type, b.size, b.numa_nodes) for b in m.allocatable_memory()] == [
        ("memory", 9 * GI, (0,)), ("memory", 10 * GI, (1,))]


async def test_cross_numa_group_and_no_mixing() -> None:
    m = manager()
    big = pod("big", c("app", 12))
    assert m.get_topology_hints(big, big.containers[0]) == {"memory": [TopologyHint(0b11, True)]}
    assert (await m.admit(big, [])).admit
    assert m.assignments()["big"]["app"] == (Block((0, 1), "memory", 12 * GI),)
    assert free(m) == {0: 0, 1: 7 * GI}
    # Both nodes now belong to the group {0,1}: a small container may only join the group.
    small = pod("small", c("app", 1))
    assert m.get_topology_hints(small, small.containers[0]) == {"memory": [TopologyHint(0b11, True)]}
    assert (await m.admit(small, [])).admit
    assert m.assignments()["small"]["app"] == (Block((0, 1), "memory", GI),)
    await m.remove(big)
    await m.remove(small)
    assert free(m) == {0: 9 * GI, 1: 10 * GI}
    assert all(s.cells == (n,) and s.number_of_assignments == 0 for n, s in m.machine_state().items())


async def test_not_guaranteed_gets_no_blocks() -> None:
    m = manager()
    p = pod("b", c("app", 1, guaranteed=False))
    assert m.get_topology_hints(p, p.containers[0]) == {}
    assert (await m.admit(p, [])).admit and m.assignments() == {}


async def test_no_numa_node_can_hold_it() -> None:
    m = manager()
    result = await m.admit(pod("huge", c("app", 30)), [])
    assert (result.admit, result.reason) == (False, "UnexpectedAdmissionError")
    assert result.message == ("Allocate failed due to [memorymanager] failed to get the default NUMA affinity, "
                              "no NUMA nodes with enough memory is available, which is unexpected")
    assert free(m) == {0: 9 * GI, 1: 10 * GI} and m.assignments() == {}


async def test_init_container_memory_is_reused() -> None:
    m = manager()
    p = pod("i", c("app", 1), init=(c("init", 2),))
    assert (await m.admit(p, [])).admit
    blocks = m.assignments()["i"]
    # 2Gi reserved in all; the init block shrinks by what the app container reused.
    assert blocks == {"init": (Block((0,), "memory", GI),), "app": (Block((0,), "memory", GI),)}
    assert free(m)[0] == 7 * GI
    await m.remove(p)
    assert free(m)[0] == 9 * GI


async def test_allocate_within_affinity() -> None:
    m = manager()
    p = pod("t", c("app", 1))
    await m.allocate(p, p.containers[0], TopologyHint(0b10, True))
    assert m.assignments()["t"]["app"] == (Block((1,), "memory", GI),)


async def test_blocks_survive_a_restart() -> None:
    db = StateDB.memory()
    m = manager(db)
    assert (await m.admit(pod("a", c("app", 3)), [])).admit
    again = manager(db)
    assert again.assignments() == m.assignments()
    assert free(again) == {0: 6 * GI, 1: 10 * GI}
    none = MemoryManager("None", NUMA, db)
    assert none.assignments() == {} and none.allocatable_memory() == ()


@pytest.mark.parametrize(("reserved", "reservation", "message"), [
    ({}, {"memory": 100 * 2**20},
     'the total amount "0" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature'),
    ({0: {"memory": GI}}, {"memory": 2 * GI},
     'the total amount "1Gi" of type "memory" is not equal to the value "2Gi" determined by Node Allocatable feature'),
    ({3: {"memory": GI}}, {"memory": GI},
     "the reserved memory configuration references a NUMA node 3 that does not exist on this machine"),
    ({}, {}, "[memorymanager] you should specify the system reserved memory"),
])
def test_static_start_validation(reserved: dict[int, dict[str, int]], reservation: dict[str, int],
                                 message: str) -> None:
    with pytest.raises(ConfigError) as err:
        MemoryManager("Static", NUMA, StateDB.memory(), reserved_memory=reserved, node_reservation=reservation)
    assert str(err.value) == message


def test_unknown_policy() -> None:
    with pytest.raises(ConfigError, match='memoryManagerPolicy: unsupported value "static"'):
        MemoryManager("static", NUMA, StateDB.memory())


def test_reservation_above_capacity_refused() -> None:
    reservation = alloc.node_reservation({"cpu": 4000, "memory": 8 * GI}, {"cpu": 3000}, {"cpu": 2000, "memory": GI},
                                         {})
    with pytest.raises(ConfigError) as err:
        alloc.validate_reservation({"cpu": 4000, "memory": 8 * GI}, reservation)
    assert str(err.value) == ('invalid Node Allocatable configuration. Resource "cpu" has a reservation of 5 '
                              "but capacity of 4. Expected capacity >= reservation.")


@pytest.mark.parametrize(("max_pods", "per_core", "cpus", "want"), [
    (110, 0, 4, 110), (110, 10, 4, 40), (30, 10, 4, 30),
])
def test_pods_per_core(max_pods: int, per_core: int, cpus: int, want: int) -> None:
    assert alloc.pods_capacity(max_pods, per_core, cpus) == want


async def test_hugepages_blocks_per_numa_node() -> None:
    numa = {0: {"memory": 10 * GI, "hugepages-2Mi": 64 * 2**20}, 1: {"memory": 10 * GI}}
    m = MemoryManager("Static", numa, StateDB.memory(), reserved_memory=RESERVED, node_reservation={"memory": GI})
    reqs = {"cpu": 1000, "memory": GI, "hugepages-2Mi": 32 * 2**20}
    p = pod("h", Container("app", requests=reqs, limits=reqs))
    hints = m.get_topology_hints(p, p.containers[0])
    assert hints["hugepages-2Mi"] == hints["memory"] == [TopologyHint(0b01, True), TopologyHint(0b11, False)]
    assert (await m.admit(p, [])).admit
    assert m.assignments()["h"]["app"] == (Block((0,), "hugepages-2Mi", 32 * 2**20), Block((0,), "memory", GI))
    allocatable = [(b.memory_type, b.size, b.numa_nodes) for b in m.allocatable_memory()]
    assert ("hugepages-2Mi", 64 * 2**20, (0,)) in allocatable


def test_profile_hugepages_parsed_and_checked() -> None:
    from nodeagent.config.agent import _profile

    prof = _profile({"numaNodes": [{"id": 0, "cpus": "0-1", "memory": "4Gi",
                                    "hugepages": {"hugepages-2Mi": "64Mi"}}]}, "nodeProfile")
    assert prof.numa_nodes[0].hugepages == (("hugepages-2Mi", 64 * 2**20),)
    with pytest.raises(ConfigError, match=r'numaNodes\[0\]\.hugepages\["hugepages-2Mi"\]: 3Mi is not a whole'):
        _profile({"numaNodes": [{"id": 0, "cpus": "0", "memory": "1Gi", "hugepages": {"hugepages-2Mi": "3Mi"}}]},
                 "nodeProfile")
    with pytest.raises(ConfigError, match="the key must be hugepages-<page size>"):
        _profile({"numaNodes": [{"id": 0, "cpus": "0", "memory": "1Gi", "hugepages": {"2Mi": "4Mi"}}]},
                 "nodeProfile")


async def test_through_the_topology_manager() -> None:
    """single-numa-node: a request one node can hold lands on one node; one that needs both is
    refused with TopologyAffinityError (its only hint spans two nodes), and nothing stays held."""
    from nodeagent.cm.topologymanager.manager import TopologyManager
    from nodeagent.cm.topologymanager.policy import NUMAInfo

    m = manager()
    tm = TopologyManager([m], policy="single-numa-node", scope="container", numa=NUMAInfo([0, 1]))
    small = pod("s", c("app", 9))
    assert (await tm.admit(small, [])).admit
    assert m.assignments()["s"]["app"] == (Block((0,), "memory", 9 * GI),)
    big = pod("b", c("app", 12))
    result = await tm.admit(big, [small])
    assert (result.admit, result.reason) == (False, "TopologyAffinityError")
    assert "b" not in m.assignments() and free(m) == {0: 0, 1: 10 * GI}


async def test_pod_resources_show_the_blocks() -> None:
    """List/Get carry each container's blocks with their NUMA nodes, GetAllocatableResources the
    allocatable memory per NUMA node, as the kubelet's pod-resources server does."""
    from nodeagent.podresources.convert import memory_v1
    from nodeagent.podresources.fakes import InMemoryResources
    from nodeagent.podresources.lister import PodResourcesLister

    m, res = manager(), InMemoryResources()
    p = Pod(uid="u", name="p", namespace="ns", containers=(c("app", 2), c("side", 1, guaranteed=True)))
    res.add_pod(p)
    assert (await m.admit(p, [])).admit
    lister = PodResourcesLister(res, res, res, m, res)
    (listed,) = lister.list_active()
    by_name = {x.name: x.memory for x in listed.containers}
    assert [(b.memory_type, b.size, b.numa_nodes) for b in by_name["app"]] == [("memory", 2 * GI, (0,))]
    assert [(b.memory_type, b.size, b.numa_nodes) for b in lister.get("ns", "p").containers[1].memory] == [
        ("memory", GI, (0,))]
    (wire,) = memory_v1(by_name["app"])
    assert (wire.memory_type, wire.size, [n.ID for n in wire.topology.nodes]) == ("memory", 2 * GI, [0])
    assert [(b.size, b.numa_nodes) for b in lister.allocatable().memory] == [(9 * GI, (0,)), (10 * GI, (1,))]


async def test_pod_scope_keeps_the_pod_on_one_node() -> None:
    """Pod scope: the pod's hint is for the sum of its app containers (or its largest init
    container); every container is then allocated within that one affinity."""
    from nodeagent.cm.topologymanager.manager import TopologyManager
    from nodeagent.cm.topologymanager.policy import NUMAInfo

    m = manager()
    p = pod("ps", c("a", 4), c("b", 5), init=(c("init", 6),))
    assert m.get_pod_topology_hints(p) == {"memory": [
        TopologyHint(0b01, True), TopologyHint(0b10, True), TopologyHint(0b11, False)]}
    tm = TopologyManager([m], policy="single-numa-node", scope="pod", numa=NUMAInfo([0, 1]))
    assert (await tm.admit(p, [])).admit
    blocks = m.assignments()["ps"]
    assert {b.numa_affinity for bs in blocks.values() for b in bs} == {(0,)}
    assert sum(b.size for bs in blocks.values() for b in bs) == 9 * GI  # the init memory was reused
    assert free(m)[0] == 0
