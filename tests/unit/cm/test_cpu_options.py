"""The CPU manager options prefer-align-cpus-by-uncorecache and distribute-cpus-across-cores.

Cases from pkg/kubelet/cm/cpumanager cpu_assignment_test.go (TestTakeByTopologyNUMAPacked's
PreferAlignByUncoreCache cases, TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption) and
policy_options_test.go (gates, incompatible pairs), policy_static_test.go
(TestStaticPolicyAddWithUncoreAlignment), on upstream's uncore test topologies (policy_test.go:
topoUncore* built here cpu by cpu, the larger split-L3 machines through the profile shorthand).
"""

from __future__ import annotations

import pytest

from nodeagent.cm.cpumanager import policy as P
from nodeagent.cm.cpumanager.cpu_assignment import take_packed
from nodeagent.cm.topology.discover import from_spec
from nodeagent.cm.topology.model import CPUInfo, CPUTopology
from nodeagent.config.cputopology import LINEAR, expand
from nodeagent.config.model import CpuTopologySpec
from nodeagent.errors import ConfigError
from tests.unit.cm.topologies import (
    TOPO_DUAL_SOCKET_HT,
    TOPO_DUAL_SOCKET_MULTI_NUMA_HT,
    TOPO_DUAL_SOCKET_NO_HT,
    TOPO_SINGLE_SOCKET_HT,
)


def _topo(rows: list[tuple[int, int, int, int, int]]) -> CPUTopology:
    """(cpu, core, socket, numa, uncore) rows; core ids as upstream's fixtures number them."""
    return CPUTopology(CPUInfo(cpu=c, core=k, socket=s, numa_node=n, uncore_cache=u) for c, k, s, n, u in rows)


# 16 cpus, 1 socket, 1 NUMA node, no SMT, four L3 groups of 4 cpus
UNCORE_SINGLE_SOCKET_NO_SMT = _topo([(c, c, 0, 0, c // 4) for c in range(16)])
# 16 cpus, 2 sockets (one NUMA node each), no SMT, L3 groups 0-3, 4-7 on socket 0; 8-11, 12-15 on 1
UNCORE_DUAL_SOCKET_NO_SMT = _topo([(c, c, c // 8, c // 8, c // 4) for c in range(16)])
# 16 cpus, 1 socket, 8 cores x 2 threads (siblings i, i+8), L3 groups: cores 0-3 and 4-7
UNCORE_SINGLE_SOCKET_SMT = _topo([(c, c % 8, 0, 0, (c % 8) // 4) for c in range(16)])
# 16 cpus, 1 socket, 2 NUMA nodes (0-7, 8-15), four L3 groups of 4 cpus
UNCORE_SINGLE_SOCKET_MULTI_NUMA = _topo([(c, c, 0, c // 8, c // 4) for c in range(16)])
# topoDualSocketHT as upstream declares it: one L3 id for the whole machine
DUAL_SOCKET_HT_ONE_L3 = _topo([
    (c, TOPO_DUAL_SOCKET_HT.details[c].core, TOPO_DUAL_SOCKET_HT.details[c].socket,
     TOPO_DUAL_SOCKET_HT.details[c].numa_node, 0) for c in TOPO_DUAL_SOCKET_HT.cpus
])


def _cpus(spec: str) -> frozenset[int]:
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


UNCORE_CASES = [
    ("take cpus from two full UncoreCaches and partial from a single UncoreCache",
     UNCORE_SINGLE_SOCKET_NO_SMT, "1-15", 10, {1, 2, 4, 5, 6, 7, 8, 9, 10, 11}),
    ("take one cpu from dual socket with HT - core from Socket 0", DUAL_SOCKET_HT_ONE_L3,
     "1-5,7-11", 1, {1}),
    ("take first available UncoreCache from first socket", UNCORE_DUAL_SOCKET_NO_SMT, "0-15", 4, {0, 1, 2, 3}),
    ("take all available UncoreCache from first socket", UNCORE_DUAL_SOCKET_NO_SMT, "2-15", 6, {2, 3, 4, 5, 6, 7}),
    ("take first available UncoreCache from second socket", UNCORE_DUAL_SOCKET_NO_SMT, "8-15", 4,
     {8, 9, 10, 11}),
    ("take first available UncoreCache from available NUMA", UNCORE_SINGLE_SOCKET_MULTI_NUMA, "3-8,12", 2, {4, 5}),
    ("take cpus from best available UncoreCache group of multi uncore cache single socket - SMT enabled",
     UNCORE_SINGLE_SOCKET_SMT, "2-3,10-11,4-7,12-15", 6, {4, 5, 6, 12, 13, 14}),
    ("take cpus from multiple UncoreCache of single socket - SMT enabled", UNCORE_SINGLE_SOCKET_SMT,
     "1-7,9-15", 10, _cpus("4-7,12-15,1,9")),
]


@pytest.mark.parametrize(("name", "topo", "available", "n", "expected"), UNCORE_CASES,
                         ids=[c[0] for c in UNCORE_CASES])
def test_prefer_align_by_uncore_cache(name: str, topo: CPUTopology, available: str, n: int,
                                      expected: set[int]) -> None:
    assert take_packed(topo, _cpus(available), n, prefer_uncore=True) == expected


def test_without_the_option_the_l3_groups_do_not_matter() -> None:
    # the same request as upstream's "dual socket HT - core from Socket 0", packed: the
    # partly used core of the fuller NUMA node, not the lowest free core
    assert take_packed(DUAL_SOCKET_HT_ONE_L3, _cpus("1-5,7-11"), 1) == {2}
    assert take_packed(UNCORE_SINGLE_SOCKET_SMT, _cpus("1-7,9-15"), 10) != _cpus("4-7,12-15,1,9")


SPREAD_CASES = [
    ("take a socket of cpus from single socket with HT, 3 cpus", TOPO_SINGLE_SOCKET_HT, "0-7", 3, {0, 1, 2}),
    ("take a socket of cpus from dual socket with HT, 2 cpus", TOPO_DUAL_SOCKET_HT, "0-11", 2, {0, 2}),
    ("take a socket of cpus from dual socket with HT, 3 cpus", TOPO_DUAL_SOCKET_HT, "0-11", 3, {0, 2, 4}),
    ("take a socket of cpus from dual socket with HT, 6 cpus", TOPO_DUAL_SOCKET_HT, "0-11", 6,
     {0, 2, 4, 6, 8, 10}),
    ("take cpus from dual socket with HT, 8 cpus", TOPO_DUAL_SOCKET_HT, "0-11", 8, {0, 2, 4, 6, 8, 10, 1, 3}),
    ("take a socket of cpus from dual socket without HT, 2 cpus", TOPO_DUAL_SOCKET_NO_HT, "0-7", 2, {0, 1}),
    ("take a socket of cpus from dual socket with multi numa per socket and HT, 8 cpus",
     TOPO_DUAL_SOCKET_MULTI_NUMA_HT, "0-79", 8, _cpus("0-7")),
]


@pytest.mark.parametrize(("name", "topo", "available", "n", "expected"), SPREAD_CASES,
                         ids=[c[0] for c in SPREAD_CASES])
def test_distribute_cpus_across_cores(name: str, topo: CPUTopology, available: str, n: int,
                                      expected: set[int]) -> None:
    assert take_packed(topo, _cpus(available), n, spread=True) == expected


def test_spread_versus_packed_on_one_core() -> None:
    # packed takes the whole core {0,4}; spread takes one thread of two cores
    assert take_packed(TOPO_SINGLE_SOCKET_HT, _cpus("0-7"), 2) == {0, 4}
    assert take_packed(TOPO_SINGLE_SOCKET_HT, _cpus("0-7"), 2, spread=True) == {0, 1}


def test_static_policy_uses_the_options() -> None:
    spread = P.StaticPolicy(TOPO_SINGLE_SOCKET_HT, 1, options=P.StaticOptions(distribute_cpus_across_cores=True))
    assert spread.reserved == {0}
    assert spread.allocate_cpus(spread.available({}), 2, None, frozenset()) == {1, 2}
    uncore = P.StaticPolicy(UNCORE_SINGLE_SOCKET_SMT, 1,
                            options=P.StaticOptions(prefer_align_by_uncore_cache=True))
    assert uncore.reserved == {0}
    # 4 cpus: group 0's two lowest cores with free cpus are core 0 (only 8 free, 0 is reserved)
    # and core 1: 3 cpus, not exactly 4, so the first fitting group is group 1
    assert uncore.allocate_cpus(uncore.available({}), 4, None, frozenset()) == {4, 5, 12, 13}


@pytest.mark.parametrize(
    ("raw", "alpha", "beta", "message"),
    [
        ({"distribute-cpus-across-cores": "true"}, False, True,
         'CPU Manager Policy Alpha-level Options not enabled, but option "distribute-cpus-across-cores" provided'),
        ({"prefer-align-cpus-by-uncorecache": "true"}, True, False,
         'CPU Manager Policy Beta-level Options not enabled, but option "prefer-align-cpus-by-uncorecache" '
         "provided"),
        ({"prefer-align-cpus-by-uncorecache": "maybe"}, True, True,
         'bad value for option "prefer-align-cpus-by-uncorecache": strconv.ParseBool: parsing "maybe": '
         "invalid syntax"),
        ({"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}, True, True,
         "static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time"),
        ({"distribute-cpus-across-numa": "true", "distribute-cpus-across-cores": "true"}, True, True,
         "static policy options distribute-cpus-across-numa and distribute-cpus-across-cores can not be used at "
         "the same time"),
        ({"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-cores": "true"}, True, True,
         "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-cores can not be "
         "used at the same time"),
        ({"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "true"}, True, True,
         "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa can not be "
         "used at the same time"),
    ],
)
def test_option_errors(raw: dict[str, str], alpha: bool, beta: bool, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        P.parse_static_options(raw, alpha=alpha, beta=beta)
    assert str(err.value) == message


def test_options_parse() -> None:
    opts = P.parse_static_options({"distribute-cpus-across-cores": "true"}, alpha=True, beta=False)
    assert opts.distribute_cpus_across_cores and not opts.prefer_align_by_uncore_cache
    opts = P.parse_static_options({"prefer-align-cpus-by-uncorecache": "1", "full-pcpus-only": "true"},
                                  alpha=False, beta=True)
    assert opts.prefer_align_by_uncore_cache and opts.full_pcpus_only
    # false values of exclusive options are fine
    opts = P.parse_static_options({"full-pcpus-only": "true", "distribute-cpus-across-cores": "false"},
                                  alpha=True, beta=True)
    assert opts.full_pcpus_only and not opts.distribute_cpus_across_cores


# TestStaticPolicyAddWithUncoreAlignment (policy_static_test.go): full-pcpus-only +
# prefer-align-cpus-by-uncorecache, containers allocated one after the other; the L3 groups
# the pod's cpus land in. Upstream's topologies are linear machines with L3 groups of a few
# cores, so the profile shorthand builds them (sockets, cores, threads, NUMA per socket, cores per L3).
def _uncore_topo(sockets: int, cores: int, threads: int, numa: int, per_l3: int) -> CPUTopology:
    return from_spec(CpuTopologySpec(cores=expand(sockets, cores, threads, numa, LINEAR, per_l3)))


DUAL_SMT_UNCORE = _uncore_topo(2, 96, 2, 1, 8)  # topoDualSocketSingleNumaPerSocketSMTUncore
SINGLE_SMT_SMALL_UNCORE = _uncore_topo(1, 64, 2, 1, 4)  # topoSingleSocketSingleNumaPerSocketSMTSmallUncore
SINGLE_NO_SMT_SMALL_UNCORE = _uncore_topo(1, 64, 1, 1, 4)  # ...NoSMTSmallUncore (4 cpus per L3)
SMALL_DUAL_NO_SMT_UNCORE = _uncore_topo(2, 32, 1, 1, 8)  # topoSmallDualSocketSingleNumaPerSocketNoSMTUncore
LARGE_SINGLE_SMT_UNCORE = _uncore_topo(1, 128, 2, 1, 8)  # topoLargeSingleSocketSingleNumaPerSocketSMTUncore
DUAL_MULTI_NUMA_UNCORE = _uncore_topo(2, 96, 1, 2, 8)  # topoDualSocketMultiNumaPerSocketUncore (NPS=2)


def _l3(topo: CPUTopology, *groups: int) -> frozenset[int]:
    return frozenset().union(*(topo.cpus_in_uncore(g) for g in groups))


UNCORE_ADD_CASES = [
    ("GuPodSingleContainerSaturating, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail",
     DUAL_SMT_UNCORE, "0-1,96-97,192-193,288-289", _l3(DUAL_SMT_UNCORE, 0, 12), (16,), {1}),
    ("GuPodMainAndSidecarContainer, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail",
     DUAL_SMT_UNCORE, "0-1,96-97,192-193,288-289", _l3(DUAL_SMT_UNCORE, 0, 12), (12, 2), {1}),
    ("GuPodSidecarAndMainContainer, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail",
     DUAL_SMT_UNCORE, "0-1,96-97,192-193,288-289", _l3(DUAL_SMT_UNCORE, 0, 12), (2, 12), {1}),
    ("GuPodMainAndManySidecarContainer, DualSocketHTUncore, ExpectAllocOneUncore, FullUncoreAvail",
     DUAL_SMT_UNCORE, "0-1,96-97,192-193,288-289", _l3(DUAL_SMT_UNCORE, 0, 12), (10, 2, 2, 2), {1}),
    ("GuPodMainAndSidecarContainer, DualSocketHTUncore, ExpectAllocTwoUncore",
     DUAL_SMT_UNCORE, "0-1,96-97,192-193,288-289", frozenset(), (12, 2), {0, 1}),
    ("GuPodSingleContainer, SingleSocketSMTSmallUncore, ExpectAllocOneUncore",
     SINGLE_SMT_SMALL_UNCORE, "0-1,64-65", frozenset(), (8,), {1}),
    ("GuPodSingleContainer, SingleSocketSMTSmallUncore, ExpectAllocTwoUncore",
     SINGLE_SMT_SMALL_UNCORE, "0-1,64-65", _l3(SINGLE_SMT_SMALL_UNCORE, 1), (12,), {0, 2}),
    ("GuPodSingleContainer, SingleSocketNoSMTSmallUncore, FragmentedUncore, ExpectAllocThreeUncore",
     SINGLE_NO_SMT_SMALL_UNCORE, "0-3", _l3(SINGLE_NO_SMT_SMALL_UNCORE, 2, 3, 5), (12,), {1, 4, 6}),
    ("GuPodMultiContainer, DualSocketSMTUncore, FragmentedUncore, ExpectAllocOneUncore",
     SMALL_DUAL_NO_SMT_UNCORE, "0-1,32-33", _l3(SMALL_DUAL_NO_SMT_UNCORE, 1), (4, 2), {0}),
    ("GuPodMultiContainer, DualSocketSMTUncore, FragmentedUncore, ExpectAllocTwoUncore",
     SMALL_DUAL_NO_SMT_UNCORE, "0-1,32-33", _l3(SMALL_DUAL_NO_SMT_UNCORE, 1), (4, 4), {0, 2}),
    ("GuPodMultiContainer, LargeSingleSocketSMTUncore, PartialUncoreFit, ExpectAllocTwoUncore",
     LARGE_SINGLE_SMT_UNCORE, "0-1,128-129", frozenset({8, 9, 136, 137}), (12, 12), {0, 1}),
    ("GuPodMultiContainer, LargeSingleSocketSMTUncore, PartialUncoreNoFit, ExpectAllocTwoUncore",
     LARGE_SINGLE_SMT_UNCORE, "0-1,128-129", frozenset({8, 9, 136, 137}), (14, 14), {2, 3}),
    ("GuPodLargeSingleContainer, DualSocketNoSMTUncore, FullNUMAsAvail, ExpectAllocFullNUMA",
     DUAL_MULTI_NUMA_UNCORE, "0-3", frozenset(), (48,), {6, 7, 8, 9, 10, 11}),
]


@pytest.mark.parametrize(("name", "topo", "reserved", "taken", "requests", "expected"), UNCORE_ADD_CASES,
                         ids=[c[0] for c in UNCORE_ADD_CASES])
def test_static_policy_add_with_uncore_alignment(name: str, topo: CPUTopology, reserved: str,
                                                 taken: frozenset[int], requests: tuple[int, ...],
                                                 expected: set[int]) -> None:
    opts = P.StaticOptions(full_pcpus_only=True, prefer_align_by_uncore_cache=True)
    policy = P.StaticPolicy(topo, len(_cpus(reserved)), _cpus(reserved), opts)
    assignments: dict[str, dict[str, frozenset[int]]] = {"pod": {}}
    for i, n in enumerate(requests):
        assert policy.smt_error(n, assignments) is None
        available = policy.available(assignments) - taken
        assignments["pod"][f"c{i}"] = policy.allocate_cpus(available, n, None, frozenset())
    got = frozenset().union(*assignments["pod"].values())
    assert len(got) == sum(requests)
    assert {topo.details[c].uncore_cache for c in got} == expected


def test_uncore_option_on_a_monolithic_l3_machine() -> None:
    # "PreferAlignByUnCoreCacheOption will not impact monolithic x86 architectures":
    # topoDualSocketSubNumaPerSocketHTMonolithicUncore, 2 sockets x 60 cores x 2 threads, 2 NUMA
    # nodes per socket, one L3 per socket; reserved 0,1,120,121; 6 cpus -> 2-4,122-124
    topo = _topo([(c, c % 120, (c % 120) // 60, (c % 120) // 30, (c % 120) // 60) for c in range(240)])
    opts = P.StaticOptions(full_pcpus_only=True, prefer_align_by_uncore_cache=True)
    policy = P.StaticPolicy(topo, 4, {0, 1, 120, 121}, opts)
    assert policy.allocate_cpus(policy.available({}), 6, None, frozenset()) == {2, 3, 4, 122, 123, 124}
