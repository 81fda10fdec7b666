"""Encode pod-resources model values (model.py, providers.py) as v1 and v1alpha1 protobuf messages.

The one place pod-resources touches protobuf. It encodes with the kubelet's granularity
(server_v1.go, containerDevicesFromResourceDeviceInstances): one ContainerDevices per
(resource, device id, NUMA node), with exactly one id and one node; a device without
NUMA information gets one entry with `topology` left unset (not sent empty). Memory
blocks carry all their NUMA nodes in one TopologyInfo, again unset when unknown.
Decisions about which pods or containers are listed belong to lister.py, not here.
"""

from __future__ import annotations

from collections.abc import Iterable

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.apis.podresources.v1alpha1 import api_pb2 as v1alpha1
from nodeagent.podresources.model import Allocatable, ContainerAllocation, PodAllocation
from nodeagent.podresources.providers import DeviceInfo, DynamicResourceInfo, MemoryBlock


def topology(nodes: Iterable[int]) -> v1.TopologyInfo:
    return v1.TopologyInfo(nodes=[v1.NUMANode(ID=n) for n in nodes])


def devices_v1(devices: Iterable[DeviceInfo]) -> list[v1.ContainerDevices]:
    out: list[v1.ContainerDevices] = []
    for dev in devices:
        if not dev.numa_nodes:
            out.append(v1.ContainerDevices(resource_name=dev.resource_name, device_ids=[dev.device_id]))
            continue
        for node in dev.numa_nodes:
            out.append(
                v1.ContainerDevices(
                    resource_name=dev.resource_name,
                    device_ids=[dev.device_id],
                    topology=v1.TopologyInfo(nodes=[v1.NUMANode(ID=node)]),
                )
            )
    return out


def memory_v1(blocks: Iterable[MemoryBlock]) -> list[v1.ContainerMemory]:
    return [
        v1.ContainerMemory(memory_type=b.memory_type, size=b.size, topology=topology(b.numa_nodes))
        if b.numa_nodes
        else v1.ContainerMemory(memory_type=b.memory_type, size=b.size)
        for b in blocks
    ]


def dynamic_v1(infos: Iterable[DynamicResourceInfo]) -> list[v1.DynamicResource]:
    return [
        v1.DynamicResource(
            claim_name=info.claim_name,
            claim_namespace=info.claim_namespace,
            claim_resources=[
                v1.ClaimResource(
                    cdi_devices=[v1.CDIDevice(name=n) for n in d.cdi_devices],
                    driver_name=d.driver_name,
                    pool_name=d.pool_name,
                    device_name=d.device_name,
                    share_id=d.share_id,  # None leaves the optional field absent
                )
                for d in info.devices
            ],
        )
        for info in infos
    ]


def container_v1(c: ContainerAllocation) -> v1.ContainerResources:
    msg = v1.ContainerResources(name=c.name)
    if c.devices:
        msg.devices.extend(devices_v1(c.devices))
    if c.cpu_ids:
        msg.cpu_ids.extend(c.cpu_ids)
    if c.memory:
        msg.memory.extend(memory_v1(c.memory))
    if c.dynamic_resources:
        msg.dynamic_resources.extend(dynamic_v1(c.dynamic_resources))
    return msg


def pod_v1(p: PodAllocation) -> v1.PodResources:
    return v1.PodResources(
        name=p.name, namespace=p.namespace, containers=[container_v1(c) for c in p.containers]
    )


def list_response_v1(pods: Iterable[PodAllocation]) -> v1.ListPodResourcesResponse:
    return v1.ListPodResourcesResponse(pod_resources=[pod_v1(p) for p in pods])


def get_response_v1(pod: PodAllocation) -> v1.GetPodResourcesResponse:
    return v1.GetPodResourcesResponse(pod_resources=pod_v1(pod))


def allocatable_response_v1(a: Allocatable) -> v1.AllocatableResourcesResponse:
    return v1.AllocatableResourcesResponse(
        devices=devices_v1(a.devices), cpu_ids=a.cpu_ids, memory=memory_v1(a.memory)
    )


def _devices_v1alpha1(devices: Iterable[DeviceInfo]) -> list[v1alpha1.ContainerDevices]:
    # v1alpha1 is derived from the v1 entries (same granularity, no topology).
    return [
        v1alpha1.ContainerDevices(resource_name=dev.resource_name, device_ids=[dev.device_id])
        for dev in devices
        for _ in dev.numa_nodes or (None,)
    ]


def list_response_v1alpha1(pods: Iterable[PodAllocation]) -> v1alpha1.ListPodResourcesResponse:
    return v1alpha1.ListPodResourcesResponse(
        pod_resources=[
            v1alpha1.PodResources(
                name=p.name,
                namespace=p.namespace,
                containers=[
                    v1alpha1.ContainerResources(name=c.name, devices=_devices_v1alpha1(c.devices))
                    for c in p.containers
                ],
            )
            for p in pods
        ]
    )


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_POD_RESOURCES_TAG = b"\x0a"  # ListPodResourcesResponse.pod_resources: field 1, length-delimited


class ListEncoderV1:
    """Encodes v1 List answers straight to wire bytes, reusing the bytes of unchanged pods.

    A repeated message field on the wire is the concatenation of (tag, length, bytes)
    records, so the answer is the encoded PodResources of each pod, framed. Pods are
    memoised by value (PodAllocation equality covers every field), and the memo keeps
    only the pods of the last answer, so it never grows and never serves stale bytes.
    """

    def __init__(self) -> None:
        self._pods: dict[PodAllocation, bytes] = {}

    def encode(self, pods: Iterable[PodAllocation]) -> bytes:
        old = self._pods
        new: dict[PodAllocation, bytes] = {}
        chunks: list[bytes] = []
        for pod in pods:
            data = old.get(pod)
            if data is None:
                data = pod_v1(pod).SerializeToString()
            new[pod] = data
            chunks.append(_POD_RESOURCES_TAG + _varint(len(data)) + data)
        self._pods = new
        return b"".join(chunks)
