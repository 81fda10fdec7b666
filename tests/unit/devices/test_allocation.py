"""Pure topology hints, policy verdicts and device selection (kubelet devicesToAllocate order)."""

from __future__ import annotations

import pytest

from nodeagent.devices import allocation
from nodeagent.devices.allocation import Hint, decide_topology, finish, plan_devices
from nodeagent.devices.model import Device

GPU = "example.com/gpu"
DEVS = [Device("gpu-0", numa_nodes=(0,)), Device("gpu-1", numa_nodes=(0,)),
        Device("gpu-2", numa_nodes=(1,)), Device("gpu-3", numa_nodes=(1,))]


def _by_id(*ids: str) -> list[Device]:
    return [d for d in DEVS if d.id in ids]


def test_device_hints_mark_narrowest_preferred() -> None:
    hints = allocation.device_hints(2, DEVS, _by_id("gpu-0", "gpu-2", "gpu-3"), [], frozenset({0, 1}))
    assert hints == [Hint(frozenset({1}), True), Hint(frozenset({0, 1}), False)]
    assert allocation.device_hints(1, [Device("x")], [Device("x")], [], frozenset({0})) is None


@pytest.mark.parametrize(
    ("policy", "count", "free", "cpu", "admit", "affinity"),
    [
        ("none", 2, ("gpu-0", "gpu-2", "gpu-3"), None, True, None),
        ("best-effort", 2, ("gpu-0", "gpu-2", "gpu-3"), None, True, {1}),
        ("restricted", 2, ("gpu-0", "gpu-2", "gpu-3"), None, True, {1}),
        ("single-numa-node", 2, ("gpu-0", "gpu-2", "gpu-3"), None, True, {1}),
        # Three devices need both nodes: that is the narrowest possible, so still preferred...
        ("restricted", 3, ("gpu-0", "gpu-2", "gpu-3"), None, True, {0, 1}),
        # ...but never a single node.
        ("single-numa-node", 3, ("gpu-0", "gpu-2", "gpu-3"), None, False, None),
        # CPUs pinned on node 0, devices only fit node 1 as a pair: no preferred merge.
        ("best-effort", 2, ("gpu-0", "gpu-2", "gpu-3"), {0}, True, {0}),
        ("restricted", 2, ("gpu-0", "gpu-2", "gpu-3"), {0}, False, None),
        ("single-numa-node", 2, ("gpu-0", "gpu-2", "gpu-3"), {0}, False, None),
        # CPUs and devices agree.
        ("single-numa-node", 2, ("gpu-0", "gpu-1", "gpu-2"), {0}, True, {0}),
        ("single-numa-node", 1, ("gpu-1", "gpu-3"), {1}, True, {1}),
    ],
)
def test_policies(policy: str, count: int, free: tuple[str, ...], cpu: set[int] | None, admit: bool,
                  affinity: set[int] | None) -> None:
    decision = decide_topology(
        policy, {GPU: count}, {GPU: DEVS}, {GPU: _by_id(*free)}, {GPU: []},
        frozenset(cpu) if cpu is not None else None,
    )
    assert decision.admit is admit
    assert decision.affinity == (frozenset(affinity) if affinity is not None else None)


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
