"""Encode pod-resources model values (model.py, providers.py) as v1 and v1alpha1 protobuf messages.

The one place pod-resources touches protobuf. It encodes with the kubelet's granularity
(server_v1.go, containerDevicesFromResourceDeviceInstances): one ContainerDevices per
(resource, device id, NUMA node), with exactly one id and one node; a device without
NUMA information gets one entry with `topology` left unset (not sent empty). Memory
blocks carry all their NUMA nodes in one TopologyInfo, again unset when unknown.
Decisions about which pods or containers are listed belong to lister.py, not here.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.apis.podresources.v1alpha1 import api_pb2 as v1alpha1
from nodeagent.podresources.model import Allocatable, ContainerAllocation, PodAllocation
from nodeagent.podresources.providers import DeviceInfo, DeviceLike, DeviceSet, DynamicResourceInfo, MemoryBlock


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


_SMALL_VARINTS = tuple(bytes((n,)) for n in range(0x80))


def _varint(n: int) -> bytes:
    if 0 <= n < 0x80:  # a name's or a small message's length: one byte
        return _SMALL_VARINTS[n]
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
                data = pod_bytes_v1(pod)
            new[pod] = data
            chunks.append(_POD_RESOURCES_TAG + _varint(len(data)) + data)
        self._pods = new
        return b"".join(chunks)


def _string(tag: bytes, value: str) -> bytes:
    """A proto3 string field: absent when empty."""
    if not value:
        return b""
    data = value.encode()
    return tag + _varint(len(data)) + data


def pod_bytes_v1(p: PodAllocation) -> bytes:
    """pod_v1(p).SerializeToString(), a container that holds nothing (its name alone: most containers,
    and all of a pod of thousands) written out by hand: building a message a container held the event
    loop 35-70 ms at each List of a node running a pod of 7,400 containers (issue 25). Fields in number
    order, as protobuf writes them; a container with resources is its message's bytes."""
    parts = [_string(b"\x0a", p.name), _string(b"\x12", p.namespace)]
    heads = _NAME_ONLY_HEADS
    for c in p.containers:
        if c.devices or c.cpu_ids or c.memory or c.dynamic_resources:
            data = container_v1(c).SerializeToString()
        else:
            name = c.name.encode()
            if len(name) < len(heads):  # the usual name: both lengths one byte each
                parts.append(heads[len(name)] + name)
                continue
            data = _string(b"\x0a", c.name)
        parts.append(_CONTAINERS_TAG + _varint(len(data)) + data)
    return b"".join(parts)


_CONTAINERS_TAG = b"\x1a"  # PodResources.containers: field 3, length-delimited
_NAME_ONLY_HEADS = (_CONTAINERS_TAG + b"\x00", *(_CONTAINERS_TAG + bytes((n + 2, 0x0A, n)) for n in range(1, 0x7E)))
"""By the name's length in bytes: the framing of a ContainerResources holding only its name (tag,
length, then its field 1's tag and length); an empty name leaves the message empty."""


def _field(tag: bytes, data: bytes) -> bytes:
    """One length-delimited field: tag, length, bytes."""
    return tag + _varint(len(data)) + data


_DEVICES_TAG = b"\x0a"  # AllocatableResourcesResponse.devices: field 1, length-delimited


def _device_entries(resource: bytes, dev: DeviceLike) -> bytes:
    """The framed ContainerDevices entries of one device, as devices_v1 encodes them (one per NUMA
    node, topology unset without one), written by hand: building and serialising a message per
    device cost ~30 us, too much for 100,000 of them. Fields in number order, proto3 defaults
    (empty name, node ID 0) left out, as SerializeToString does; anything else goes through it."""
    if any(n < 0 for n in dev.numa_nodes):  # negative varints: leave them to protobuf
        entries = devices_v1([DeviceInfo(resource.decode(), dev.id, dev.numa_nodes)])
        return b"".join(_field(_DEVICES_TAG, m.SerializeToString()) for m in entries)
    head = (_field(b"\x0a", resource) if resource else b"") + _field(b"\x12", dev.id.encode())
    if not dev.numa_nodes:
        return _field(_DEVICES_TAG, head)
    out = []
    for node in dev.numa_nodes:
        numa = b"\x08" + _varint(node) if node else b""  # NUMANode.ID
        out.append(_field(_DEVICES_TAG, head + _field(b"\x1a", _field(b"\x0a", numa))))
    return b"".join(out)


class AllocatableEncoderV1:
    """Encodes v1 GetAllocatableResources answers straight to wire bytes, per device once.

    A plugin of 100,000 devices made each answer cost seconds (a DeviceInfo and a message per
    device); while it flaps the health of a few, every answer differs from the last. So the
    framed entries of each device are kept per resource while the resource's `layout` token is
    unchanged (ids on the same NUMA nodes), an answer joins the entries of the healthy ones, and
    a resource whose device set is the very same object as last time reuses its joined bytes.
    Only the resources of the last answer are kept, so the memo never outgrows the node.
    """

    def __init__(self) -> None:
        # resource -> (layout token, device id -> framed entries, devices object, joined bytes)
        self._resources: dict[str, tuple[Hashable, dict[str, bytes], object, bytes]] = {}

    def encode(self, sets: Sequence[DeviceSet], cpu_ids: Sequence[int], memory: Sequence[MemoryBlock]) -> bytes:
        old = self._resources
        new: dict[str, tuple[Hashable, dict[str, bytes], object, bytes]] = {}
        chunks: list[bytes] = []
        for ds in sets:
            kept = old.get(ds.resource_name)
            if kept is not None and kept[0] == ds.layout and kept[2] is ds.devices:
                new[ds.resource_name] = kept
                chunks.append(kept[3])
                continue
            per_id = kept[1] if kept is not None and kept[0] == ds.layout else {}
            data = self._join(ds.resource_name.encode(), ds.devices, per_id)
            new[ds.resource_name] = (ds.layout, per_id, ds.devices, data)
            chunks.append(data)
        self._resources = new
        rest = v1.AllocatableResourcesResponse(cpu_ids=cpu_ids, memory=memory_v1(memory))
        chunks.append(rest.SerializeToString())  # fields 2 and 3 after field 1, as protobuf orders them
        return b"".join(chunks)

    @staticmethod
    def _join(resource: bytes, devices: Sequence[DeviceLike], per_id: dict[str, bytes]) -> bytes:
        get = per_id.get
        name = _field(b"\x0a", resource) if resource else b""
        # a device's entry is tag, length, name, id field, topology: the topology part per NUMA
        # node set once, and short lengths from a table, since a new layout encodes every device
        tails: dict[tuple[int, ...], bytes | None] = {}
        out = []
        for dev in devices:  # hot: 100,000 iterations for a large plugin
            data = get(dev.id)
            if data is None:
                numa = dev.numa_nodes
                tail = tails.get(numa, b"-")
                if tail == b"-":
                    tail = tails[numa] = _single_topology(numa)
                idb = dev.id.encode()
                if tail is None or len(idb) > 100:
                    data = _device_entries(resource, dev)
                else:
                    body = name + b"\x12" + _SMALL[len(idb)] + idb + tail
                    data = _DEVICES_TAG + _varint(len(body)) + body
                per_id[dev.id] = data
            out.append(data)
        return b"".join(out)


_SMALL = [bytes([n]) for n in range(128)]  # one-byte varints


def _single_topology(numa: tuple[int, ...]) -> bytes | None:
    """The topology field of a device with at most one NUMA node (b"" for none); None for others."""
    if not numa:
        return b""
    if len(numa) > 1 or numa[0] < 0:
        return None
    node = b"\x08" + _varint(numa[0]) if numa[0] else b""
    return _field(b"\x1a", _field(b"\x0a", node))
