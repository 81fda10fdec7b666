"""AllocatableEncoderV1 (the hand-framed GetAllocatableResources answer) gives exactly the bytes of
the message-by-message encoding, whatever the devices, NUMA nodes, cpus and memory, and stays right
across health-only changes (per-device bytes reused) and NUMA moves (a new layout)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.devices.model import Device
from nodeagent.podresources import convert
from nodeagent.podresources.model import Allocatable
from nodeagent.podresources.providers import DeviceInfo, DeviceSet, MemoryBlock

RESOURCES = ["example.com/gpu", "vendor.example/nic-with-a-rather-long-name" * 4]

device_lists = st.lists(
    st.builds(Device, st.sampled_from(["a", "d10", "d2", "x" * 200, "é"]), st.just("Healthy"),
              st.sampled_from([(), (0,), (1,), (0, 1), (200,), (70000,), (-1,)])),
    max_size=5, unique_by=lambda d: d.id,
)
memory = st.lists(st.builds(MemoryBlock, st.sampled_from(["memory", "hugepages-2Mi"]),
                            st.integers(0, 1 << 40), st.sampled_from([(), (0,), (0, 1)])), max_size=2)


def _expected(sets: list[DeviceSet], cpus: tuple[int, ...], mem: tuple[MemoryBlock, ...]) -> bytes:
    infos = tuple(DeviceInfo(s.resource_name, d.id, d.numa_nodes) for s in sets for d in s.devices)
    return convert.allocatable_response_v1(Allocatable(infos, cpus, mem)).SerializeToString()


@settings(deadline=None)
@given(st.lists(device_lists, min_size=1, max_size=len(RESOURCES)),
       st.lists(st.integers(0, 5000), max_size=4), memory)
def test_bytes_equal_the_message_encoding(per_resource: list[list[Device]], cpus: list[int],
                                          mem: list[MemoryBlock]) -> None:
    sets = [DeviceSet(r, 1, tuple(devs)) for r, devs in zip(RESOURCES, per_resource, strict=False)]
    encoder = convert.AllocatableEncoderV1()
    assert encoder.encode(sets, cpus, mem) == _expected(sets, tuple(cpus), tuple(mem))
    assert encoder.encode(sets, cpus, mem) == _expected(sets, tuple(cpus), tuple(mem))  # from the memo


def test_health_changes_reuse_device_bytes_and_a_new_layout_reencodes() -> None:
    gpu = RESOURCES[0]
    devs = tuple(Device(f"gpu-{i}", "Healthy", (i % 2,)) for i in range(6))
    encoder = convert.AllocatableEncoderV1()
    full = [DeviceSet(gpu, 7, devs)]
    assert encoder.encode(full, [], []) == _expected(full, (), ())
    fewer = [DeviceSet(gpu, 7, devs[:2] + devs[3:])]  # gpu-2 went unhealthy: same layout
    assert encoder.encode(fewer, [], []) == _expected(fewer, (), ())
    assert encoder.encode(full, [], []) == _expected(full, (), ())  # and back
    moved = tuple(Device(d.id, d.health, (1,) if d.id == "gpu-0" else d.numa_nodes) for d in devs)
    new_layout = [DeviceSet(gpu, 8, moved)]
    assert encoder.encode(new_layout, [], []) == _expected(new_layout, (), ())
    assert encoder.encode([], [3], []) == _expected([], (3,), ())  # the resource left
