"""SnapshotDecoder (decoding only the records that changed since the stream's last snapshot) gives
exactly the devices a full decode gives, over random snapshot sequences (ids added, removed,
reordered, health and NUMA changes, identical resends), and names the devices whose health moved
only when nothing else did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2
from nodeagent.devices.convert import devices_from_pb, devices_to_pb
from nodeagent.devices.model import Device
from nodeagent.devices.snapshot_decode import SnapshotDecoder

device = st.builds(Device, st.sampled_from(["a", "b", "d10", "x" * 130, "e"]),
                   st.sampled_from(["Healthy", "Unhealthy", "", "Unknown"]),
                   st.sampled_from([(), (0,), (1,), (0, 1), (300,)]))
snapshots = st.lists(st.lists(device, max_size=5), min_size=1, max_size=8)


@settings(deadline=None)
@given(snapshots)
def test_delta_decoding_equals_a_full_decode(sequence: list[list[Device]]) -> None:
    decoder = SnapshotDecoder(delta_min=0)  # deltas even for these few devices
    last: list[Device] | None = None
    for devices in sequence:
        msg = api_pb2.ListAndWatchResponse.FromString(devices_to_pb(devices).SerializeToString())
        got = decoder.decode(msg)
        full = devices_from_pb(msg)
        if last is not None and full == last:
            assert got is None  # an identical resend
            continue
        assert got is not None and list(got) == full
        if got.moved is not None:
            assert last is not None and got.base is not None
            assert [(d.id, d.numa_nodes) for d in full] == [(d.id, d.numa_nodes) for d in last]
            assert list(got.moved) == [n for n, o in zip(full, last, strict=True) if n.health != o.health]
        last = full


def test_one_flip_among_many_is_found_without_a_full_decode() -> None:
    devices = [Device(f"dev-{i}", "Healthy", (i % 2,)) for i in range(5000)]
    decoder = SnapshotDecoder()
    first = decoder.decode(devices_to_pb(devices))
    assert first is not None and first.moved is None
    flipped = [Device(d.id, "Unhealthy" if d.id == "dev-2500" else d.health, d.numa_nodes) for d in devices]
    second = decoder.decode(devices_to_pb(flipped))
    assert second is not None and second.base is first
    assert second.moved == (Device("dev-2500", "Unhealthy", (0,)),)
    assert second[:2500] == first[:2500] and all(a is b for a, b in zip(second[2501:], first[2501:], strict=True))
    assert decoder.decode(devices_to_pb(flipped)) is None


def test_small_snapshots_are_decoded_in_full_and_identical_ones_skipped() -> None:
    decoder = SnapshotDecoder(delta_min=8)
    devices = [Device(f"gpu-{i}", "Healthy", (0,)) for i in range(4)]
    first = decoder.decode(devices_to_pb(devices))
    assert first == devices and first.moved is None
    assert decoder.decode(devices_to_pb(devices)) is None
    flipped = [Device("gpu-0", "Unhealthy", (0,)), *devices[1:]]
    second = decoder.decode(devices_to_pb(flipped))
    assert second == flipped and second.moved is None  # DeviceState compares small ones itself
