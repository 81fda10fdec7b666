"""The CPU manager options prefer-align-cpus-by-uncorecache and distribute-cpus-across-cores.

Cases from pkg/kubelet/cm/cpumanager cpu_assignment_test.go (TestTakeByTopologyNUMAPacked's
PreferAlignByUncoreCache cases, TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption) and
policy_options_test.go (gates, incompatible pairs), on upstream's uncore test topologies
(policy_test.go: topoUncore*), built here cpu by cpu.
"""

from __future__ import annotations

import pytest

from nodeagent.cm.cpumanager import policy as P
from nodeagent.cm.cpumanager.cpu_assignment import take_packed
from nodeagent.cm.topology.model import CPUInfo, CPUTopology
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
