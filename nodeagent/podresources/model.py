"""What pod-resources reports, as plain frozen values: the lister fills them, convert.py encodes them.

Pure data, hashable all the way down (tuples of frozen values), so the encoder can
memoise encoded messages by value: an entry is reused only when every input is equal,
which keeps responses fresh without a cache to invalidate. No grpc, no protobuf here.

ContainerAllocation and PodAllocation are NamedTuples rather than frozen dataclasses on
purpose: List builds one per container (440 on a full node) on every call, and a
NamedTuple is built about 3x faster and hashed in C.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from nodeagent.podresources.providers import DeviceInfo, DynamicResourceInfo, MemoryBlock


class ContainerAllocation(NamedTuple):
    """Resources assigned to one container (one ContainerResources entry)."""

    name: str
    devices: tuple[DeviceInfo, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[MemoryBlock, ...] = ()
    dynamic_resources: tuple[DynamicResourceInfo, ...] = ()


class PodAllocation(NamedTuple):
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
