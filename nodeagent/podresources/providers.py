"""The Protocols through which the pod-resources server reads the other subsystems.

This is the only place the subsystems meet (the kubelet's podresources/types.go): the
server depends on these Protocols and the daemon passes the real managers in. Values
are plain dataclasses; protobuf messages are built from them in podresources/convert.py.
`numa_nodes` empty means topology unknown: the server leaves `topology` unset then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from nodeagent.objects.pod import Pod


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


class DevicesProvider(Protocol):
    def container_devices(self, pod_uid: str, container: str) -> Sequence[DeviceInfo]: ...

    def allocatable_devices(self) -> Sequence[DeviceInfo]:
        """Healthy devices only."""
        ...


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
