"""What pod-resources reports, as plain frozen values: the lister fills them, convert.py encodes them.

Pure data, hashable all the way down (tuples of frozen dataclasses), so the encoder can
memoise encoded messages by value: an entry is reused only when every input is equal,
which keeps responses fresh without a cache to invalidate. No grpc, no protobuf here.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeagent.podresources.providers import DeviceInfo, DynamicResourceInfo, MemoryBlock


@dataclass(frozen=True)
class ContainerAllocation:
    """Resources assigned to one container (one ContainerResources entry)."""

    name: str
    devices: tuple[DeviceInfo, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()
    dynamic_resources: tuple[DynamicResourceInfo, ...] = ()


@dataclass(frozen=True)
class PodAllocation:
    """Resources assigned to one pod (one PodResources entry)."""

    name: str
    namespace: str
    containers: tuple[ContainerAllocation, ...] = ()


@dataclass(frozen=True)
class Allocatable:
    """What the node can hand out (AllocatableResourcesResponse)."""

    devices: tuple[DeviceInfo, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()
