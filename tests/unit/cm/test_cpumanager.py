"""The CPU manager's static policy against the kubelet's own tables.

Cases from pkg/kubelet/cm/cpumanager policy_static_test.go (TestStaticPolicyAdd,
TestStaticPolicyStart's reserved sets), cpu_assignment_test.go and topology_hints_test.go,
on the upstream test topologies (tests/unit/cm/topologies.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent.cm.cpumanager import policy as P
from nodeagent.cm.cpumanager.cpu_assignment import CPUAllocationError, take_distributed, take_packed
from nodeagent.cm.cpumanager.manager import CPUManager
from nodeagent.cm.topology.model import CPUTopology
from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.hints import AdmissionFailure, TopologyHint, mask_of
from nodeagent.state.db import StateDB
from tests.unit.cm.topologies import (
    TOPO_DUAL_SOCKET_HT,
    TOPO_DUAL_SOCKET_MULTI_NUMA_HT,
    TOPO_DUAL_SOCKET_NO_HT,
    TOPO_SINGLE_SOCKET_HT,
    shorthand,
)

ALL12 = frozenset(range(12))
ANY = TopologyHint(None, False)


def test_upstream_topologies() -> None:
    d = TOPO_DUAL_SOCKET_HT.details
    assert [(d[c].core, d[c].socket) for c in (0, 1, 6, 7, 11)] == [(0, 0), (1, 1), (0, 0), (1, 1), (5, 1)]
    assert TOPO_SINGLE_SOCKET_HT.cpus_in_core(1) == {1, 5}
    assert TOPO_DUAL_SOCKET_NO_HT.cpus_in_socket(0) == {0, 1, 2, 3}
    assert TOPO_DUAL_SOCKET_MULTI_NUMA_HT.num_numa_nodes == 4 and TOPO_DUAL_SOCKET_MULTI_NUMA_HT.cpus_per_core() == 2


@pytest.mark.parametrize(
    ("topo", "reserved", "expected"),
    [
        (TOPO_SINGLE_SOCKET_HT, 1, {0}),
        (TOPO_SINGLE_SOCKET_HT, 2, {0, 4}),  # "if numReservedCPUs=2, then reserved={0,4}"
        (TOPO_DUAL_SOCKET_HT, 2, {0, 6}),  # "reserved cores 0 & 6"
        (TOPO_DUAL_SOCKET_NO_HT, 1, {0}),
    ],
)
def test_reserved_taken_by_topology(topo: CPUTopology, reserved: int, expected: set[int]) -> None:
    assert P.StaticPolicy(topo, reserved).reserved == expected


# TestStaticPolicyAdd (options insensitive and defaults): free = stDefaultCPUSet minus the reserved cpu 0.
ADD_CASES = [
    ("GuPodSingleCore, SingleSocketHT, ExpectAllocOneCPU (sibling of the reserved core)",
     TOPO_SINGLE_SOCKET_HT, set(range(8)), 1, {4}),
    ("GuPodMultipleCores, SingleSocketHT, ExpectAllocOneCore", TOPO_SINGLE_SOCKET_HT, {0, 1, 4, 5}, 2, {1, 5}),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocket", TOPO_DUAL_SOCKET_HT, ALL12 - {2}, 6,
     {1, 3, 5, 7, 9, 11}),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocThreeCores", TOPO_DUAL_SOCKET_HT, ALL12 - {1, 5}, 6,
     {2, 3, 4, 8, 9, 10}),
    ("GuPodMultipleCores, DualSocketNoHT, ExpectAllocOneSocket", TOPO_DUAL_SOCKET_NO_HT, {0, 1, 3, 4, 5, 6, 7}, 4,
     {4, 5, 6, 7}),
    ("GuPodMultipleCores, DualSocketNoHT, ExpectAllocFourCores", TOPO_DUAL_SOCKET_NO_HT, {0, 1, 3, 6, 7}, 4,
     {1, 3, 6, 7}),
    ("GuPodMultipleCores, DualSocketHT, ExpectAllocOneSocketOneCore", TOPO_DUAL_SOCKET_HT, ALL12 - {2}, 8,
     {1, 3, 4, 5, 7, 9, 10, 11}),
]


@pytest.mark.parametrize(("name", "topo", "default", "n", "expected"), ADD_CASES, ids=[c[0] for c in ADD_CASES])
def test_static_policy_add(name: str, topo: CPUTopology, default: set[int], n: int, expected: set[int]) -> None:
    policy = P.StaticPolicy(topo, 1)
    assert policy.reserved == {0}
    assert policy.allocate_cpus(frozenset(default) - policy.reserved, n, None, frozenset()) == expected


@pytest.mark.parametrize(
    ("topo", "default", "n", "message"),
    [
        (TOPO_SINGLE_SOCKET_HT, set(range(8)), 8, "requested=8, available=7"),
        (TOPO_DUAL_SOCKET_HT, {0, 4, 5, 6, 7, 8, 9, 10, 11}, 10, "requested=10, available=8"),
        (TOPO_SINGLE_SOCKET_HT, {0, 7}, 2, "requested=2, available=1"),
    ],
)
def test_static_policy_add_errors(topo: CPUTopology, default: set[int], n: int, message: str) -> None:
    policy = P.StaticPolicy(topo, 1)
    with pytest.raises(CPUAllocationError) as err:
        policy.allocate_cpus(frozenset(default) - policy.reserved, n, None, frozenset())
    assert str(err.value) == f"not enough cpus available to satisfy request: {message}"


def test_affinity_first_then_anywhere() -> None:
    # Dual socket no HT, NUMA node 1 = socket 1: 2 cpus asked on node 1 come from it.
    policy = P.StaticPolicy(TOPO_DUAL_SOCKET_NO_HT, 1)
    free = frozenset(range(1, 8))
    assert policy.allocate_cpus(free, 2, mask_of([1]), frozenset()) == {4, 5}
    # more than node 0 holds: its 3 free cpus, then the rest by topology
    assert policy.allocate_cpus(free, 5, mask_of([0]), frozenset()) == {1, 2, 3, 4, 5}


# topology_hints_test.go: two NUMA nodes of 6 cpus (cores {0,6},{1,7},{2,8} | {3,9},{4,10},{5,11}).
TWO_NUMA = shorthand(2, 3, 2)
N0, N1, N01 = mask_of([0]), mask_of([1]), mask_of([0, 1])


@pytest.mark.parametrize(
    ("name", "free", "wanted", "expected"),
    [
        ("Request 2 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", ALL12 - {0, 1}, 2,
         [TopologyHint(N0, True), TopologyHint(N1, True), TopologyHint(N01, False)]),
        ("Request 5 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", ALL12 - {0, 1}, 5,
         [TopologyHint(N1, True), TopologyHint(N01, False)]),
        ("Request 7 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", ALL12 - {0, 1}, 7,
         [TopologyHint(N01, True)]),
        ("Request 11 CPUs, 4 available on NUMA 0, 6 available on NUMA 1", ALL12 - {0, 1}, 11, []),
        ("Request 2 CPUs, 1 available on NUMA 0, 1 available on NUMA 1", frozenset({0, 3}), 2,
         [TopologyHint(N01, False)]),
    ],
)
def test_generate_cpu_topology_hints(name: str, free: frozenset[int], wanted: int,
                                     expected: list[TopologyHint]) -> None:
    policy = P.StaticPolicy(TWO_NUMA, 0, reserved_cpus=())
    assert policy.generate_hints(free, frozenset(), wanted) == expected


def test_align_by_socket_prefers_socket_aligned_hints() -> None:
    # 2 sockets x 2 NUMA nodes: a 2-node hint within one socket is preferred as well.
    policy = P.StaticPolicy(TOPO_DUAL_SOCKET_MULTI_NUMA_HT, 1, options=P.StaticOptions(align_by_socket=True))
    hints = {h.numa_affinity: h.preferred for h in policy.generate_hints(policy.allocatable(), frozenset(), 4)}
    assert hints[mask_of([0])] and hints[mask_of([0, 1])] and not hints[mask_of([1, 2])]


def test_full_pcpus_only_smt_alignment_error() -> None:
    policy = P.StaticPolicy(TOPO_SINGLE_SOCKET_HT, 1, options=P.StaticOptions(full_pcpus_only=True))
    assert policy.smt_error(3, {}) == "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    # reserved {0} makes core {0,4} unusable: 6 physical cpus left
    assert policy.smt_error(8, {}) == ("SMT Alignment Error: not enough free physical CPUs: available physical "
                                       "CPUs = 6, requested CPUs = 8, CPUs per core = 2")
    assert policy.smt_error(2, {}) is None


def test_distribute_across_numa_spreads_evenly() -> None:
    topo = TOPO_DUAL_SOCKET_MULTI_NUMA_HT
    cpus = take_distributed(topo, frozenset(topo.cpus), 24, 2)
    per_node = {n: len(cpus & topo.cpus_in_numa(n)) for n in topo.numa_nodes}
    assert sorted(per_node.values()) == [0, 0, 12, 12]
    assert take_packed(topo, frozenset(topo.cpus), 24) & topo.cpus_in_numa(0) == topo.cpus_in_numa(0)


@pytest.mark.parametrize(
    ("raw", "alpha", "message"),
    [
        ({"bogus": "true"}, True, 'unknown CPU Manager Policy option: "bogus"'),
        ({"align-by-socket": "true"}, False,
         'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided'),
        ({"full-pcpus-only": "yes"}, False,
         'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": invalid syntax'),
    ],
)
def test_option_errors(raw: dict[str, str], alpha: bool, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        P.parse_static_options(raw, alpha=alpha, beta=True)
    assert str(err.value) == message


def test_align_by_socket_incompatible_with_single_numa_node() -> None:
    with pytest.raises(ConfigError, match="single-numa-node policy is incompatible with CPUManager align-by-socket"):
        P.validate_static_options(P.StaticOptions(align_by_socket=True), TOPO_DUAL_SOCKET_HT, "single-numa-node")


# ---------------------------------------------------------------- the manager


def _pod(name: str, *containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(uid=f"uid-{name}", namespace="default", name=name, containers=containers, init_containers=init)


def _c(name: str, cpu: int, restart_policy: str = "") -> Container:
    res = {"cpu": cpu, "memory": 1 << 30}
    return Container(name=name, requests=res, limits=res, restart_policy=restart_policy)


def _manager(db: StateDB, topo: CPUTopology = TOPO_SINGLE_SOCKET_HT, **kw: object) -> CPUManager:
    return CPUManager("static", topo, db, reserved_milli=1000, **kw)  # type: ignore[arg-type]


async def test_allocate_persists_restores_and_regenerates_hints(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    mgr = _manager(db)
    pod = _pod("a", _c("app", 2000))
    await mgr.allocate(pod, pod.containers[0], ANY)
    assert mgr.container_cpus(pod.uid, "app") == (1, 5)
    again = _manager(db)
    assert again.container_cpus(pod.uid, "app") == (1, 5)
    assert again.get_topology_hints(pod, pod.containers[0]) == {"cpu": [TopologyHint(mask_of([0]), True)]}
    await again.remove(pod)
    assert again.container_cpus(pod.uid, "app") == () and _manager(db).assignments() == {}


async def test_init_cpus_reused_sidecar_cpus_kept(tmp_path: Path) -> None:
    mgr = _manager(StateDB(tmp_path / "s.db"), TOPO_DUAL_SOCKET_NO_HT)
    init, sidecar, app = _c("init", 2000), _c("side", 1000, "Always"), _c("app", 2000)
    pod = _pod("a", app, init=(init, sidecar))
    for c in pod.all_containers():
        await mgr.allocate(pod, c, ANY)
    got = {n: set(mgr.container_cpus(pod.uid, n)) for n in ("init", "side", "app")}
    # the finished init container's cpus are reused by the containers after it (sidecar first)...
    assert got["init"] <= got["side"] | got["app"]
    assert got == {"init": {1, 2}, "side": {1}, "app": {2, 3}}
    # ...but the sidecar runs alongside the app container: its cpu is never handed on
    assert not got["side"] & got["app"]


async def test_smt_refusal_is_admission_failure(tmp_path: Path) -> None:
    mgr = _manager(StateDB(tmp_path / "s.db"), options=P.StaticOptions(full_pcpus_only=True))
    pod = _pod("a", _c("app", 3000))
    with pytest.raises(AdmissionFailure) as err:
        await mgr.allocate(pod, pod.containers[0], ANY)
    assert err.value.reason == "SMTAlignmentError"


async def test_shortage_is_unexpected_admission_error(tmp_path: Path) -> None:
    mgr = _manager(StateDB(tmp_path / "s.db"))
    pod = _pod("a", _c("app", 8000))
    with pytest.raises(AdmissionFailure) as err:
        await mgr.allocate(pod, pod.containers[0], ANY)
    assert (err.value.reason, err.value.message) == (
        "UnexpectedAdmissionError",
        "Allocate failed due to not enough cpus available to satisfy request: requested=8, available=7, "
        "which is unexpected",
    )


def test_static_requires_a_reservation(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="greater than zero"):
        CPUManager("static", TOPO_SINGLE_SOCKET_HT, StateDB(tmp_path / "s.db"))


async def test_policy_change_drops_assignments(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "s.db")
    pod = _pod("a", _c("app", 2000))
    await _manager(db).allocate(pod, pod.containers[0], ANY)
    assert CPUManager("none", TOPO_SINGLE_SOCKET_HT, db).assignments() == {}
    assert _manager(db).assignments() == {}


async def test_none_policy_has_no_hints_and_no_cpus(tmp_path: Path) -> None:
    mgr = CPUManager("none", TOPO_SINGLE_SOCKET_HT, StateDB(tmp_path / "s.db"))
    pod = _pod("a", _c("app", 2000))
    assert mgr.get_topology_hints(pod, pod.containers[0]) == {}
    await mgr.allocate(pod, pod.containers[0], ANY)
    assert mgr.container_cpus(pod.uid, "app") == () and mgr.allocatable_cpus() == ()
