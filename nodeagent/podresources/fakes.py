"""In-memory pod-resources providers for tests, the benchmark and virtual nodes.

One object plays all five providers of providers.py from dicts filled by hand. Every
mutation bumps a counter; `VersionedResources` exposes it as `generation()` (the
optional lister.Versioned protocol), `InMemoryResources` does not, so both the cached
and the uncached List path can be exercised. No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodeagent.objects.pod.model import Pod
from nodeagent.podresources.providers import DeviceInfo, DynamicResourceInfo, MemoryBlock


class InMemoryResources:
    def __init__(self) -> None:
        self._gen = 0
        self._pods: dict[str, Pod] = {}  # by uid, in insertion order
        self._inactive: set[str] = set()
        self._devices: dict[tuple[str, str], tuple[DeviceInfo, ...]] = {}
        self._cpus: dict[tuple[str, str], tuple[int, ...]] = {}
        self._memory: dict[tuple[str, str], tuple[MemoryBlock, ...]] = {}
        self._dynamic: dict[tuple[str, str], tuple[DynamicResourceInfo, ...]] = {}
        self.allocatable_device_list: tuple[DeviceInfo, ...] = ()
        self.unhealthy: set[tuple[str, str]] = set()  # (resource, device id)
        self.allocatable_cpu_list: tuple[int, ...] = ()
        self.allocatable_memory_list: tuple[MemoryBlock, ...] = ()

    # --- mutations (each bumps the generation) ---
    def add_pod(self, pod: Pod, *, active: bool = True) -> None:
        self._pods[pod.uid] = pod
        if active:
            self._inactive.discard(pod.uid)
        else:
            self._inactive.add(pod.uid)
        self._gen += 1

    def set_active(self, uid: str, active: bool) -> None:
        (self._inactive.discard if active else self._inactive.add)(uid)
        self._gen += 1

    def remove_pod(self, uid: str) -> None:
        self._pods.pop(uid, None)
        self._inactive.discard(uid)
        self._gen += 1

    def assign(
        self,
        uid: str,
        container: str,
        *,
        devices: Iterable[DeviceInfo] = (),
        cpus: Iterable[int] = (),
        memory: Iterable[MemoryBlock] = (),
        dynamic: Iterable[DynamicResourceInfo] = (),
    ) -> None:
        key = (uid, container)
        self._devices[key] = tuple(devices)
        self._cpus[key] = tuple(cpus)
        self._memory[key] = tuple(memory)
        self._dynamic[key] = tuple(dynamic)
        self._gen += 1

    def set_allocatable(
        self,
        *,
        devices: Iterable[DeviceInfo] = (),
        cpus: Iterable[int] = (),
        memory: Iterable[MemoryBlock] = (),
    ) -> None:
        self.allocatable_device_list = tuple(devices)
        self.allocatable_cpu_list = tuple(cpus)
        self.allocatable_memory_list = tuple(memory)
        self._gen += 1

    def set_health(self, resource: str, device_id: str, healthy: bool) -> None:
        (self.unhealthy.discard if healthy else self.unhealthy.add)((resource, device_id))
        self._gen += 1

    # --- PodsProvider ---
    def active_pods(self) -> Sequence[Pod]:
        return [p for uid, p in self._pods.items() if uid not in self._inactive]

    def all_pods(self) -> Sequence[Pod]:
        return list(self._pods.values())

    def is_active(self, uid: str) -> bool:
        return uid in self._pods and uid not in self._inactive

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        for pod in self._pods.values():
            if pod.namespace == namespace and pod.name == name:
                return pod
        return None

    # --- DevicesProvider ---
    def container_devices(self, pod_uid: str, container: str) -> Sequence[DeviceInfo]:
        return self._devices.get((pod_uid, container), ())

    def allocatable_devices(self) -> Sequence[DeviceInfo]:
        bad = self.unhealthy
        return [d for d in self.allocatable_device_list if (d.resource_name, d.device_id) not in bad]

    # --- CPUsProvider ---
    def container_cpus(self, pod_uid: str, container: str) -> Sequence[int]:
        return self._cpus.get((pod_uid, container), ())

    def allocatable_cpus(self) -> Sequence[int]:
        return self.allocatable_cpu_list

    # --- MemoryProvider ---
    def container_memory(self, pod_uid: str, container: str) -> Sequence[MemoryBlock]:
        return self._memory.get((pod_uid, container), ())

    def allocatable_memory(self) -> Sequence[MemoryBlock]:
        return self.allocatable_memory_list

    # --- DynamicResourcesProvider ---
    def container_dynamic_resources(self, pod: Pod, container: str) -> Sequence[DynamicResourceInfo]:
        return self._dynamic.get((pod.uid, container), ())


class VersionedResources(InMemoryResources):
    """The same, announcing its mutation counter so the server may reuse List answers."""

    def generation(self) -> int:
        return self._gen
