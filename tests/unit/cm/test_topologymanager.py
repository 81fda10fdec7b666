"""The topology manager: the merge as the kubelet's policy tests expect it, scopes, admission and rollback.

Merge cases from pkg/kubelet/cm/topologymanager policy_test.go (commonPolicyMergeTestCases and the
per-policy ones), numa_info_test.go (prefer-closest-numa-nodes) and policy_options_test.go.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from nodeagent.cm.cpumanager.manager import CPUManager
from nodeagent.cm.topologymanager import policy as T
from nodeagent.cm.topologymanager.manager import TopologyManager
from nodeagent.cm.topologymanager.policy import NUMAInfo, PolicyOptions
from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.hints import AdmissionFailure, Hints, TopologyHint, mask_of
from nodeagent.state.db import StateDB
from tests.unit.cm.topologies import shorthand

N0, N1, N01 = mask_of([0]), mask_of([1]), mask_of([0, 1])
TWO = NUMAInfo([0, 1])


def h(mask: int | None, preferred: bool) -> TopologyHint:
    return TopologyHint(mask, preferred)


MERGE_CASES: list[tuple[str, list[Hints], dict[str, tuple[TopologyHint, bool]]]] = [
    ("TopologyHint not set", [], {
        "best-effort": (h(N01, True), True), "restricted": (h(N01, True), True),
        "single-numa-node": (h(None, True), True)}),
    ("HintProvider returns empty non-nil map", [{}], {
        "best-effort": (h(N01, True), True), "restricted": (h(N01, True), True)}),
    ("HintProvider returns nil for a resource", [{"resource": None}], {
        "best-effort": (h(N01, True), True), "restricted": (h(N01, True), True),
        "single-numa-node": (h(None, True), True)}),
    ("HintProvider returns an empty list for a resource", [{"resource": []}], {
        "best-effort": (h(N01, False), True), "restricted": (h(N01, False), False),
        "single-numa-node": (h(None, False), False)}),
    ("Two providers, 1 hint each, same mask, both preferred 1/2",
     [{"r1": [h(N0, True)]}, {"r2": [h(N0, True)]}], {
         "best-effort": (h(N0, True), True), "restricted": (h(N0, True), True),
         "single-numa-node": (h(N0, True), True)}),
    ("Two providers, 1 hint each, no common mask",
     [{"r1": [h(N0, True)]}, {"r2": [h(N1, True)]}], {
         "best-effort": (h(N01, False), True), "restricted": (h(N01, False), False),
         "single-numa-node": (h(None, False), False)}),
    ("Two providers, 1 no hints, 1 single hint preferred 2/2",
     [{}, {"r": [h(N1, True)]}], {
         "best-effort": (h(N1, True), True), "restricted": (h(N1, True), True)}),
    ("Two providers, both with 2 hints, matching narrower preferred hint from both",
     [{"r1": [h(N0, True), h(N01, False)]}, {"r2": [h(N0, True), h(N01, False)]}], {
         "best-effort": (h(N0, True), True), "restricted": (h(N0, True), True),
         "single-numa-node": (h(N0, True), True)}),
    # The case: narrow {0} and wide {0,1}, both preferred, merge to {0} NOT preferred.
    ("Two providers, preferred masks differ: merged narrow, not preferred",
     [{"r1": [h(N0, True)]}, {"r2": [h(N01, True)]}], {
         "best-effort": (h(N0, False), True), "restricted": (h(N0, False), False)}),
    ("Single-numa-node drops wide preferred hints",
     [{"r1": [h(N01, True)]}], {
         "best-effort": (h(N01, True), True), "single-numa-node": (h(N01, False), False)}),
]


@pytest.mark.parametrize(("name", "providers", "expected"), MERGE_CASES, ids=[c[0] for c in MERGE_CASES])
def test_merge(name: str, providers: list[Hints], expected: dict[str, tuple[TopologyHint, bool]]) -> None:
    for policy, (hint, admit) in expected.items():
        got = T.merge(policy, TWO, PolicyOptions(), providers)
        if policy == "single-numa-node" and hint.numa_affinity == N01 and not admit:
            hint = h(None, False)  # the all-nodes affinity is reported as "any"
        assert got == (hint, admit), policy


def test_none_policy_admits_without_hints() -> None:
    assert T.merge("none", TWO, PolicyOptions(), [{"r": []}]) == (h(None, False), True)


def test_non_preferred_picks_widest_of_narrowest() -> None:
    # bestNonPreferredAffinityCount = 2: a provider needs both nodes; prefer a 2-node result.
    four = NUMAInfo([0, 1, 2, 3])
    hints = [{"r1": [h(mask_of([0, 1]), False), h(mask_of([0, 1, 2, 3]), False)]},
             {"r2": [h(mask_of([0]), False), h(mask_of([0, 1, 2]), False)]}]
    assert T.merge("best-effort", four, PolicyOptions(), hints) == (h(mask_of([0, 1]), False), True)


def test_prefer_closest_numa_nodes() -> None:
    # numa_info_test / KEP-3545 distance table: {2,3} (10.5) beats {0,2} (11) at equal width.
    dist = {0: {0: 10, 1: 11, 2: 12, 3: 12}, 1: {0: 11, 1: 10, 2: 12, 3: 12},
            2: {0: 12, 1: 12, 2: 10, 3: 11}, 3: {0: 12, 1: 12, 2: 11, 3: 10}}
    info = NUMAInfo([0, 1, 2, 3], dist)
    hints = [{"r": [h(mask_of([0, 2]), True), h(mask_of([2, 3]), True)]}]
    assert T.merge("restricted", info, PolicyOptions(), hints)[0] == h(mask_of([0, 2]), True)
    closest = PolicyOptions(prefer_closest_numa=True)
    assert T.merge("restricted", info, closest, hints)[0] == h(mask_of([2, 3]), True)
    assert info.average_distance(mask_of([0, 1])) == 10.5


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"bogus": "1"}, 'unknown Topology Manager Policy option: "bogus"'),
        ({"max-allowable-numa-nodes": "4"},
         'the minimum value of "max-allowable-numa-nodes" should not be less than 8'),
        ({"prefer-closest-numa-nodes": "maybe"},
         'bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "maybe": invalid syntax'),
    ],
)
def test_option_errors(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        T.parse_policy_options(raw)
    assert str(err.value) == message


def test_max_allowable_numa_nodes() -> None:
    with pytest.raises(ConfigError, match="unsupported on machines with more than 8 NUMA Nodes"):
        TopologyManager([], policy="restricted", scope="container", numa=NUMAInfo(range(9)))
    TopologyManager([], policy="none", scope="container", numa=NUMAInfo(range(9)))
    TopologyManager([], policy="restricted", scope="container", numa=NUMAInfo(range(9)),
                    options=T.parse_policy_options({"max-allowable-numa-nodes": "16"}))


# ---------------------------------------------------------------- the manager


class FakeProvider:
    def __init__(self, name: str, calls: list[str], hints: Hints, *, fail: AdmissionFailure | None = None) -> None:
        self.name, self.calls, self.hints, self.fail = name, calls, hints, fail
        self.affinities: list[TopologyHint] = []

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        self.calls.append(f"{self.name}.hints({container.name})")
        return self.hints

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        self.calls.append(f"{self.name}.pod_hints")
        return self.hints

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        self.calls.append(f"{self.name}.allocate({container.name})")
        self.affinities.append(affinity)
        if self.fail is not None:
            raise self.fail

    async def remove(self, pod: Pod) -> None:
        self.calls.append(f"{self.name}.remove")


def _pod(*names: str, init: Sequence[str] = ()) -> Pod:
    return Pod(uid="u1", name="p", containers=tuple(Container(n) for n in names),
               init_containers=tuple(Container(n) for n in init))


async def test_container_scope_allocates_in_order_with_the_merged_hint() -> None:
    calls: list[str] = []
    cpu = FakeProvider("cpu", calls, {"cpu": [h(N1, True), h(N01, False)]})
    dev = FakeProvider("dev", calls, {"gpu": [h(N1, True)]})
    tm = TopologyManager([cpu, dev], policy="single-numa-node", scope="container", numa=TWO)
    assert (await tm.admit(_pod("a", init=["i"]), [])).admit
    assert calls == ["cpu.hints(i)", "dev.hints(i)", "cpu.allocate(i)", "dev.allocate(i)",
                     "cpu.hints(a)", "dev.hints(a)", "cpu.allocate(a)", "dev.allocate(a)"]
    assert dev.affinities == [h(N1, True)] * 2 and tm.affinity("u1", "a") == h(N1, True)


async def test_pod_scope_merges_once() -> None:
    calls: list[str] = []
    cpu = FakeProvider("cpu", calls, {"cpu": [h(N0, True)]})
    tm = TopologyManager([cpu], policy="restricted", scope="pod", numa=TWO)
    assert (await tm.admit(_pod("a", "b"), [])).admit
    assert calls == ["cpu.pod_hints", "cpu.allocate(a)", "cpu.allocate(b)"]


async def test_topology_affinity_error() -> None:
    calls: list[str] = []
    cpu = FakeProvider("cpu", calls, {"cpu": [h(N0, True)]})
    dev = FakeProvider("dev", calls, {"gpu": [h(N1, True)]})
    tm = TopologyManager([cpu, dev], policy="restricted", scope="container", numa=TWO)
    result = await tm.admit(_pod("a"), [])
    assert (result.admit, result.reason, result.message) == (
        False, "TopologyAffinityError", "Resources cannot be allocated with Topology locality")
    assert "cpu.allocate(a)" not in calls and calls[-2:] == ["dev.remove", "cpu.remove"]


async def test_provider_refusal_rolls_back_every_provider() -> None:
    calls: list[str] = []
    cpu = FakeProvider("cpu", calls, {})
    dev = FakeProvider("dev", calls, {}, fail=AdmissionFailure(
        "UnexpectedAdmissionError", "Allocate failed due to requested number of devices unavailable for "
        "example.com/gpu. Requested: 1, Available: 0, which is unexpected"))
    tm = TopologyManager([cpu, dev], policy="best-effort", scope="container", numa=TWO)
    result = await tm.admit(_pod("a"), [])
    assert result.reason == "UnexpectedAdmissionError"
    assert "requested number of devices unavailable for example.com/gpu. Requested: 1, Available: 0" in result.message
    assert calls[-2:] == ["dev.remove", "cpu.remove"]


def _gu(name: str, cpus: int) -> Pod:
    r = {"cpu": cpus * 1000, "memory": 1 << 30}
    return Pod(uid=f"uid-{name}", name=name, containers=(Container("app", requests=r, limits=r),))


async def test_cpus_follow_the_device_numa_node(tmp_path: Path) -> None:
    """The issue's case: 2 exclusive CPUs and a device on NUMA 1 under single-numa-node: admitted, aligned."""
    topo = shorthand(2, 3, 2)  # NUMA 0 = cpus 0-2,6-8; NUMA 1 = 3-5,9-11
    cpu = CPUManager("static", topo, StateDB(tmp_path / "s.db"), reserved_milli=1000)
    dev = FakeProvider("dev", [], {"example.com/gpu": [h(N1, True)]})
    tm = TopologyManager([cpu, dev], policy="single-numa-node", scope="container", numa=NUMAInfo(topo.numa_nodes))
    pod = _gu("a", 2)
    assert (await tm.admit(pod, [])).admit
    assert cpu.container_cpus(pod.uid, "app") == (3, 9)


@pytest.mark.parametrize(("policy", "admit"), [("best-effort", True), ("restricted", False),
                                              ("single-numa-node", False), ("none", True)])
async def test_cpu_only_pod_spanning_nodes(tmp_path: Path, policy: str, admit: bool) -> None:
    """4 cpus when each NUMA node has 3 free: only both nodes hold them (not preferred)."""
    topo = shorthand(2, 3, 2)
    cpu = CPUManager("static", topo, StateDB(tmp_path / "s.db"), reserved_system_cpus=(0, 6, 1, 3, 9, 4))
    tm = TopologyManager([cpu], policy=policy, scope="container", numa=NUMAInfo(topo.numa_nodes))
    result = await tm.admit(_gu("a", 4), [])
    assert result.admit is admit
    if not admit:
        assert result.reason == "TopologyAffinityError"
        assert cpu.assignments() == {}
