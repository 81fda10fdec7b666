"""Pure topology hints, policy verdicts and device selection (kubelet devicesToAllocate order)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.devices import allocation
from nodeagent.devices.allocation import finish, plan_devices
from nodeagent.devices.model import Device
from nodeagent.pods.hints import TopologyHint, mask_of

GPU = "example.com/gpu"
DEVS = [Device("gpu-0", numa_nodes=(0,)), Device("gpu-1", numa_nodes=(0,)),
        Device("gpu-2", numa_nodes=(1,)), Device("gpu-3", numa_nodes=(1,))]


def _by_id(*ids: str) -> list[Device]:
    return [d for d in DEVS if d.id in ids]


N0, N1, N01 = mask_of([0]), mask_of([1]), mask_of([0, 1])


def _hints(request: int, all_devs: list[Device], free: list[Device], reuse: tuple[Device, ...] = ()) -> (
        list[TopologyHint] | None):
    counts = allocation.numa_counts(all_devs)
    if not allocation.has_topology(counts):
        return None
    return allocation.generate_hints(request, counts, allocation.numa_counts(free), reuse, (0, 1))


# devicemanager topology_hints_test.go (TestGetTopologyHints)
@pytest.mark.parametrize(
    ("name", "request_", "all_devs", "free", "expected"),
    [
        ("Single Request, no alignment", 1, [Device("d1"), Device("d2")], [Device("d1")], None),
        ("Single Request, only one with alignment", 1, [Device("d1", numa_nodes=(0,)), Device("d2")],
         [Device("d1", numa_nodes=(0,)), Device("d2")], [TopologyHint(N0, True), TopologyHint(N01, False)]),
        ("Single Request, one device per socket", 1, DEVS[1:3], DEVS[1:3],
         [TopologyHint(N0, True), TopologyHint(N1, True), TopologyHint(N01, False)]),
        ("Request for 2, one device per socket", 2, DEVS[1:3], DEVS[1:3], [TopologyHint(N01, True)]),
        ("Request for 2, 2 devices per socket", 2, DEVS, DEVS,
         [TopologyHint(N0, True), TopologyHint(N1, True), TopologyHint(N01, False)]),
        ("Request for 2, optimal on 1 NUMA node, forced cross-NUMA", 2, DEVS, _by_id("gpu-0", "gpu-2"),
         [TopologyHint(N01, False)]),
    ],
)
def test_device_topology_hints(name: str, request_: int, all_devs: list[Device], free: list[Device],
                               expected: list[TopologyHint] | None) -> None:
    assert _hints(request_, all_devs, free) == expected


def test_reusable_devices_pin_the_mask() -> None:
    # an init container's device on node 0 is reused: only masks holding node 0 qualify
    assert _hints(2, DEVS, _by_id("gpu-2", "gpu-3"), tuple(_by_id("gpu-0"))) == [TopologyHint(N01, False)]


def test_aligned_pool_lets_plugin_choose_within() -> None:
    sel = plan_devices(GPU, 1, _by_id("gpu-0", "gpu-2", "gpu-3"), [], frozenset({1}))
    assert sel is not None
    assert sel.preferred_request() == (("gpu-2", "gpu-3"), (), 1)
    assert finish(sel, ["gpu-0", "gpu-3"]) == ("gpu-3",)  # outside-of-pool preference ignored
    assert finish(sel) == ("gpu-2",)


def test_aligned_first_then_preference_then_unaligned() -> None:
    sel = plan_devices(GPU, 3, _by_id("gpu-0", "gpu-2", "gpu-3"), [], frozenset({0}))
    assert sel is not None and sel.chosen == ("gpu-0",)
    assert finish(sel, ["gpu-3"]) == ("gpu-0", "gpu-3", "gpu-2")


def test_reuse_first_and_shortage() -> None:
    sel = plan_devices(GPU, 2, _by_id("gpu-3"), _by_id("gpu-1"), None)
    assert sel is not None and sel.chosen == ("gpu-1",) and finish(sel) == ("gpu-1", "gpu-3")
    sel = plan_devices(GPU, 1, _by_id("gpu-3"), _by_id("gpu-1", "gpu-0"), None)
    assert sel is not None and sel.preferred_request() is None and finish(sel) == ("gpu-0",)
    assert plan_devices(GPU, 3, _by_id("gpu-2", "gpu-3"), [], None) is None


def test_natural_order_without_topology() -> None:
    devs = [Device("d10"), Device("d9"), Device("d2")]
    sel = plan_devices(GPU, 2, devs, [], None)
    assert sel is not None and finish(sel) == ("d2", "d9")


@settings(deadline=None)
@given(
    st.lists(st.builds(Device, st.sampled_from([f"d{i}" for i in range(12)]), st.just("Healthy"),
                       st.sampled_from([(), (0,), (1,), (2,)])), max_size=12, unique_by=lambda d: d.id),
    st.integers(min_value=1, max_value=4),
    st.sampled_from([frozenset({0}), frozenset({1}), frozenset({0, 2})]),
    st.integers(min_value=0, max_value=2),
)
def test_aligned_devices_listed_first_choose_as_the_walk(
    devs: list[Device], request_: int, affinity: frozenset[int], reused: int
) -> None:
    """plan_ordered given the free devices on the affinity's nodes (DeviceState.iter_free_healthy_on)
    picks exactly what its walk of every free device picks (plugin without GetPreferredAllocation)."""
    ordered = sorted(devs, key=allocation.device_order)
    reuse = ordered[:reused]
    free = ordered[reused:]
    aligned = [d for d in free if affinity.intersection(d.numa_nodes)]
    walk = allocation.plan_ordered(GPU, request_, iter(free), reuse, affinity, full_pool=False)
    fast = allocation.plan_ordered(GPU, request_, iter(free), reuse, affinity, full_pool=False,
                                   free_aligned=iter(aligned))
    assert fast == walk
