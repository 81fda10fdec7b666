"""Model -> protobuf: kubelet granularity, topology left unset without NUMA, List bytes encoder."""

from __future__ import annotations

import pytest

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.podresources import convert
from nodeagent.podresources.model import Allocatable, ContainerAllocation, PodAllocation
from nodeagent.podresources.providers import ClaimDevice, DeviceInfo, DynamicResourceInfo, MemoryBlock


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        (DeviceInfo("r", "a"), [("a", None)]),
        (DeviceInfo("r", "a", (1,)), [("a", [1])]),
        (DeviceInfo("r", "a", (0, 1)), [("a", [0]), ("a", [1])]),
    ],
)
def test_device_granularity(device: DeviceInfo, expected: list[tuple[str, list[int] | None]]) -> None:
    got = [
        (d.device_ids[0] if len(d.device_ids) == 1 else list(d.device_ids),
         [n.ID for n in d.topology.nodes] if d.HasField("topology") else None)
        for d in convert.devices_v1([device])
    ]
    assert got == expected
    assert all(d.resource_name == "r" for d in convert.devices_v1([device]))


def test_memory_topology() -> None:
    blocks = [MemoryBlock("memory", 5, (0, 1)), MemoryBlock("hugepages-1Gi", 7)]
    with_numa, without = convert.memory_v1(blocks)
    assert [n.ID for n in with_numa.topology.nodes] == [0, 1]
    assert not without.HasField("topology")
    assert (without.memory_type, without.size) == ("hugepages-1Gi", 7)


def test_dynamic_share_id_presence() -> None:
    devices = (ClaimDevice("d", "p", "x", ("cdi/a=x",), "s"), ClaimDevice("d", "p", "y"))
    (res,) = convert.dynamic_v1([DynamicResourceInfo("c", "ns", devices)])
    a, b = res.claim_resources
    assert a.HasField("share_id") and a.share_id == "s"
    assert not b.HasField("share_id")
    assert [c.name for c in a.cdi_devices] == ["cdi/a=x"]


def pods() -> list[PodAllocation]:
    c1 = ContainerAllocation("a", (DeviceInfo("r", "d0", (0,)),), (1, 2), (MemoryBlock("memory", 9),))
    return [
        PodAllocation("p1", "ns", (c1, ContainerAllocation("b"))),
        PodAllocation("p2", "ns", ()),
        PodAllocation("p\u00e9" * 100, "ns", (c1,) * 50),  # long: multi-byte length varints
        # containers that hold nothing are written by hand (pod_bytes_v1): short, long, empty names
        PodAllocation("big", "", (*(ContainerAllocation(f"c{i}") for i in range(300)), ContainerAllocation(""),
                                  ContainerAllocation("\u00e9" * 70), c1,
                                  ContainerAllocation("d", dynamic_resources=(DynamicResourceInfo("c", "ns", ()),)))),
    ]


def test_pod_bytes_are_the_message_bytes() -> None:
    for pod in pods():
        assert convert.pod_bytes_v1(pod) == convert.pod_v1(pod).SerializeToString()


def test_list_encoder_matches_message_encoding() -> None:
    encoder = convert.ListEncoderV1()
    data = encoder.encode(pods())
    assert v1.ListPodResourcesResponse.FromString(data) == convert.list_response_v1(pods())
    assert data == convert.list_response_v1(pods()).SerializeToString()
    # the memo answers equal values with equal bytes, and follows changes
    assert encoder.encode(pods()) == data
    changed = [*pods()[:1], PodAllocation("p2", "ns", (ContainerAllocation("z", cpu_ids=(5,)),))]
    again = v1.ListPodResourcesResponse.FromString(encoder.encode(changed))
    assert list(again.pod_resources[1].containers[0].cpu_ids) == [5]
    assert encoder.encode([]) == b""


def test_allocatable_and_v1alpha1() -> None:
    resp = convert.allocatable_response_v1(Allocatable((DeviceInfo("r", "d", (0, 1)),), (0, 1), ()))
    assert len(resp.devices) == 2 and list(resp.cpu_ids) == [0, 1]
    alpha = convert.list_response_v1alpha1(pods()[:1])
    assert [list(d.device_ids) for d in alpha.pod_resources[0].containers[0].devices] == [["d0"]]
