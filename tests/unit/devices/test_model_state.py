"""Pure model and state rules: extended resource names, capacity/allocatable, grace bookkeeping."""

from __future__ import annotations

import pytest

from nodeagent.devices.model import (
    ContainerAllocation,
    ContainerRef,
    Device,
    DeviceSpec,
    Mount,
    PluginOptions,
    ResourceAllocation,
    is_extended_resource_name,
)
from nodeagent.devices.state import DeviceState

GPU = "example.com/gpu"


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu", True),
        ("vendor.example/a-b.c_d", True),
        ("gpu", False),  # no domain
        ("kubernetes.io/gpu", False),
        ("foo.kubernetes.io/gpu", False),
        ("requests.example.com/gpu", False),
        ("Example.com/gpu", False),  # prefix must be a lower-case DNS subdomain
        ("example.com/-gpu", False),
        ("example.com/" + "g" * 64, False),
        ("example.com/a/b", False),
        ("/gpu", False),
    ],
)
def test_extended_resource_names(name: str, valid: bool) -> None:
    assert is_extended_resource_name(name) is valid


def test_allocation_json_round_trip() -> None:
    alloc = ContainerAllocation(
        envs={"A": "1"}, mounts=(Mount("/c", "/h", True),),
        devices=(DeviceSpec("/dev/x", "/dev/null", "rw"),),
        annotations={"k": "v"}, cdi_devices=("example.com/gpu=gpu-0",),
    )
    assert ContainerAllocation.from_json(alloc.to_json()) == alloc


def _state() -> DeviceState:
    st = DeviceState()
    st.register(GPU, "/p/gpu.sock", PluginOptions())
    st.update_devices(GPU, [Device("a", "Healthy", (0,)), Device("b", "Unhealthy", (0,)), Device("c")])
    return st


def test_capacity_counts_all_allocatable_counts_healthy() -> None:
    st = _state()
    assert st.capacity() == {GPU: 3}
    assert st.allocatable() == {GPU: 2}
    st.add(ContainerRef("u1", "main"), ResourceAllocation(GPU, ("a",)))
    assert [d.id for d in st.free_healthy(GPU)] == ["c"]
    assert st.allocatable() == {GPU: 2}  # node allocatable is not reduced by allocations
    assert st.device_health(GPU, "a") == "Healthy"
    assert st.device_health(GPU, "zz") == "Unknown"


def test_disconnect_keeps_capacity_until_expired() -> None:
    st = _state()
    st.disconnect(GPU, now=10.0)
    assert st.capacity() == {GPU: 3} and st.allocatable() == {GPU: 0}
    assert st.device_health(GPU, "a") == "Unknown"
    assert st.free_healthy(GPU) == []
    epoch = st.resources[GPU].epoch
    st.register(GPU, "/p/gpu.sock", PluginOptions())  # came back before the timer fired
    assert not st.expire(GPU, epoch)
    st.disconnect(GPU, now=20.0)
    assert st.expire(GPU, st.resources[GPU].epoch)
    assert st.capacity() == {}


def test_snapshot_of_stopped_plugin_is_ignored() -> None:
    st = _state()
    st.disconnect(GPU, now=1.0)
    st.update_devices(GPU, [Device("a")])  # a late message from the old stream
    assert st.capacity() == {GPU: 3}


def test_holders_and_summaries() -> None:
    st = _state()
    st.add(ContainerRef("u2", "main", "ns", "p2"), ResourceAllocation(GPU, ("c",)))
    st.add(ContainerRef("u1", "main", "ns", "p1"), ResourceAllocation(GPU, ("a",)))
    assert [h.pod_uid for h in st.holders(GPU, ["a", "c"])] == ["u1", "u2"]
    (summary,) = st.summaries()
    assert (summary.capacity, summary.allocatable, summary.healthy, summary.unhealthy, summary.allocated) == (
        3, 2, 2, 1, 2)


def test_health_only_snapshots_change_health_in_place_and_leave_the_listing_generation() -> None:
    """A plugin of many devices flapping one: the order is kept without a re-sort, identical
    snapshots change nothing, and pod-resources List's token (listing_generation) does not move."""
    st = DeviceState()
    st.register(GPU, "/p.sock", PluginOptions())
    devs = [Device(f"d{i}", "Healthy", (i % 2,)) for i in range(10)]
    first = st.update_devices(GPU, devs)
    assert first.layout
    order = [d.id for d in st.all_devices(GPU)]
    generation, listing, layout = st.generation, st.listing_generation(), st.resources[GPU].layout
    assert not st.update_devices(GPU, list(reversed(devs))).changed  # same devices, any order
    assert st.generation == generation
    flipped = [Device(d.id, "Unhealthy" if d.id == "d3" else d.health, d.numa_nodes) for d in devs]
    change = st.update_devices(GPU, flipped)
    assert change.health == ("d3",) and not change.layout
    assert st.generation > generation and st.listing_generation() == listing
    assert st.resources[GPU].layout == layout
    assert [d.id for d in st.all_devices(GPU)] == order
    assert "d3" not in {d.id for d in st.healthy_devices(GPU)} and st.allocatable()[GPU] == 9
    assert st.free_count(GPU) == 9
    moved = [Device(d.id, d.health, (1,) if d.id == "d0" else d.numa_nodes) for d in flipped]
    assert st.update_devices(GPU, moved).layout  # a NUMA move is a new layout
    assert st.listing_generation() > listing and st.resources[GPU].layout != layout
