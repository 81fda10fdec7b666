"""The Protocols through which the pod-resources server reads the other subsystems.

This is the only place the subsystems meet (the kubelet's podresources/types.go): the
server depends on these Protocols and the daemon passes the real managers in. Values
are plain dataclasses; protobuf messages are built from them in podresources/convert.py.
`numa_nodes` empty means topology unknown: the server leaves `topology` unset then.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from nodeagent.objects.pod.model import Pod


@dataclass(frozen=True)
class DeviceInfo:
    """One device of one resource, as pod-resources reports it (one id, at most one NUMA node)."""

    resource_name: str
    device_id: str
    numa_nodes: tuple[int, ...] = ()


@dataclass(frozen=True)
class MemoryBlock:
    memory_type: str  # "memory" or "hugepages-<size>"
    size: int  # bytes
    numa_nodes: tuple[int, ...] = ()


@dataclass(frozen=True)
class ClaimDevice:
    driver_name: str
    pool_name: str
    device_name: str
    cdi_devices: tuple[str, ...] = ()
    share_id: str | None = None


@dataclass(frozen=True)
class DynamicResourceInfo:
    claim_name: str
    claim_namespace: str
    devices: tuple[ClaimDevice, ...] = ()


class PodsProvider(Protocol):
    def active_pods(self) -> Sequence[Pod]:
        """Admitted pods that are not terminated (v1 List)."""
        ...

    def all_pods(self) -> Sequence[Pod]:
        """Every pod the node knows, terminated ones included (v1alpha1 List)."""
        ...

    def get_pod(self, namespace: str, name: str) -> Pod | None: ...

    def is_active(self, uid: str) -> bool:
        """Whether the pod counts among active_pods (admitted, not terminal)."""
        ...


class DevicesProvider(Protocol):
    def container_devices(self, pod_uid: str, container: str) -> Sequence[DeviceInfo]: ...

    def allocatable_devices(self) -> Sequence[DeviceInfo]:
        """Healthy devices only."""
        ...


class DeviceLike(Protocol):
    """A device as a DevicesProvider keeps it (devices.model.Device fits)."""

    @property
    def id(self) -> str: ...

    @property
    def numa_nodes(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class DeviceSet:
    """The healthy devices of one resource, as the provider keeps them (no copy).

    `layout` is equal between two calls only if every device id of the resource kept its
    NUMA nodes, so an encoder may keep per-device bytes while it stays equal; `devices`
    is the same object between two calls only if the set itself is unchanged."""

    resource_name: str
    layout: Hashable
    devices: Sequence[DeviceLike]


@runtime_checkable
class DeviceSets(Protocol):
    """Optional for DevicesProvider: allocatable_devices grouped per resource, without building
    a DeviceInfo per device (100,000 of them took 0.5 s per GetAllocatableResources)."""

    def allocatable_device_sets(self) -> Sequence[DeviceSet]: ...


@runtime_checkable
class PodHoldings(Protocol):
    """Optional for the per-container providers (devices, CPUs, memory, dynamic resources): whether
    a pod may hold anything of theirs. False promises that every container of the pod gets an empty
    answer, so List asks nothing more for that pod: asking for each of its containers was most of the
    List of a pod of 7,400 containers (issue 25), none of which held anything."""

    def holds_any(self, pod_uid: str) -> bool: ...


@runtime_checkable
class VersionedListing(Protocol):
    """Optional for DevicesProvider: a token that moves whenever container_devices could change
    (allocations, device ids, NUMA nodes) but not on a health change, so List answers stay
    reusable while a plugin flaps health (see lister.PodResourcesLister.generation)."""

    def listing_generation(self) -> Hashable: ...


@runtime_checkable
class AllocatedDevicesUpdater(Protocol):
    """Optional for DevicesProvider: the kubelet's UpdateAllocatedDevices, which pod-resources List
    (v1 and v1alpha1) calls before answering (server_v1.go): the devices of pods gone since are
    forgotten, which changes what the device checkpoint file holds at its next write."""

    def update_allocated_devices(self) -> None: ...


class CPUsProvider(Protocol):
    def container_cpus(self, pod_uid: str, container: str) -> Sequence[int]: ...

    def allocatable_cpus(self) -> Sequence[int]: ...


class MemoryProvider(Protocol):
    def container_memory(self, pod_uid: str, container: str) -> Sequence[MemoryBlock]: ...

    def allocatable_memory(self) -> Sequence[MemoryBlock]: ...


class DynamicResourcesProvider(Protocol):
    def container_dynamic_resources(self, pod: Pod, container: str) -> Sequence[DynamicResourceInfo]: ...


class NoDevices:
    """DevicesProvider for a node without a device manager."""

    def container_devices(self, pod_uid: str, container: str) -> Sequence[DeviceInfo]:
        return ()

    def allocatable_devices(self) -> Sequence[DeviceInfo]:
        return ()


class NoDynamicResources:
    def container_dynamic_resources(self, pod: Pod, container: str) -> Sequence[DynamicResourceInfo]:
        return ()
