"""Gather what pod-resources reports from the providers, with the kubelet's rules (server_v1.go).

The lister decides which pods and containers are listed (active pods; sidecars then
regular containers for v1; all pods and regular containers for v1alpha1), applies the
feature gates, and raises KubeletError with the kubelet's messages. It returns plain
model values (model.py); it knows nothing of gRPC or protobuf.

Freshness: `generation()` returns a token that changes whenever any answer could
change, when every provider offers one (see `Versioned`); otherwise None, meaning
"cannot tell, rebuild every time". Callers may reuse an encoded answer only while the
token is equal, so nothing stale is ever served.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol, runtime_checkable

from nodeagent.errors import KubeletError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.podresources.model import Allocatable, ContainerAllocation, PodAllocation
from nodeagent.podresources.providers import (
    AllocatedDevicesUpdater,
    CPUsProvider,
    DeviceSet,
    DeviceSets,
    DevicesProvider,
    DynamicResourcesProvider,
    MemoryProvider,
    NoDynamicResources,
    PodHoldings,
    PodsProvider,
    VersionedListing,
)
from nodeagent.util.yielding import CHUNK, sliced

GATE_GET = "KubeletPodResourcesGet"
GATE_DYNAMIC_RESOURCES = "KubeletPodResourcesDynamicResources"

Gates = Callable[[str], bool]


def all_gates_on(name: str) -> bool:
    """The default: every pod-resources gate is on, as in current kubelets."""
    return True


@runtime_checkable
class Versioned(Protocol):
    """Optional for providers: a value that changes whenever anything the provider returns changes.

    A counter bumped on every mutation is enough. Providers that offer it let the
    server reuse an encoded List answer until something changes.
    """

    def generation(self) -> Hashable: ...


def _nothing(*_: object) -> tuple[()]:
    """The answer of a provider that holds nothing of the pod (PodHoldings)."""
    return ()


def listed_containers(pod: Pod) -> tuple[Container, ...]:
    """v1 containers: restartable init containers (sidecars) first, then regular containers."""
    if not pod.init_containers:
        return pod.containers
    return tuple(c for c in pod.init_containers if c.is_sidecar) + pod.containers


class PodResourcesLister:
    """Reads the providers and answers List / Get / GetAllocatableResources as model values."""

    def __init__(
        self,
        pods: PodsProvider,
        devices: DevicesProvider,
        cpus: CPUsProvider,
        memory: MemoryProvider,
        dynamic: DynamicResourcesProvider | None = None,
        gates: Gates = all_gates_on,
    ) -> None:
        self._pods = pods
        self._devices = devices
        self._cpus = cpus
        self._memory = memory
        self._dynamic: DynamicResourcesProvider = dynamic if dynamic is not None else NoDynamicResources()
        self._gates = gates
        self._versioned: tuple[Versioned, ...] | None = None
        providers = (pods, devices, cpus, memory, self._dynamic)
        if all(isinstance(p, (Versioned, NoDynamicResources)) for p in providers):
            self._versioned = tuple(p for p in providers if isinstance(p, Versioned))

    def gate(self, name: str) -> bool:
        return bool(self._gates(name))

    def generation(self) -> Hashable | None:
        """A token equal between two calls only if List's answer is equal; None if unknown.

        A devices provider that tells its listing generation apart (VersionedListing) gives
        that one here: a device's health is not part of List, and a plugin flapping health
        must not make every List rebuild its answer."""
        if self._versioned is None:
            return None
        devices: object = self._devices
        return (
            tuple(p.listing_generation() if p is devices and isinstance(p, VersionedListing) else p.generation()
                  for p in self._versioned),
            self.gate(GATE_DYNAMIC_RESOURCES),
        )

    def allocatable_generation(self) -> Hashable | None:
        """A token equal between two calls only if GetAllocatableResources' answer (or its
        refusal) is equal; None if unknown."""
        if self._versioned is None:
            return None
        return tuple(p.generation() for p in self._versioned)

    def allocatable_device_sets(self) -> Sequence[DeviceSet] | None:
        """The healthy devices per resource when the provider keeps them so (DeviceSets), else None."""
        devices = self._devices
        return devices.allocatable_device_sets() if isinstance(devices, DeviceSets) else None

    def update_allocated_devices(self) -> None:
        """What List does first on the kubelet (server_v1.go, server_v1alpha1.go)."""
        if isinstance(self._devices, AllocatedDevicesUpdater):
            self._devices.update_allocated_devices()

    def list_active(self) -> list[PodAllocation]:
        """v1 List: active pods, sidecars then regular containers, every resource kind."""
        dynamic = self.gate(GATE_DYNAMIC_RESOURCES)
        return [self._pod(pod, dynamic) for pod in self._pods.active_pods()]

    async def list_active_yielding(self) -> list[PodAllocation]:
        """list_active with a turn of the event loop every util.yielding.CHUNK containers of small
        pods, and every util.yielding.SLICE seconds in a pod of more: the List of a node with a pod of
        10,000 containers held the loop for its whole build (issue 25).
        Each provider answers for one container at a time, as the kubelet's List reads them (no
        lock across the whole answer there either)."""
        dynamic = self.gate(GATE_DYNAMIC_RESOURCES)
        out: list[PodAllocation] = []
        done = 0
        for pod in self._pods.active_pods():
            containers = listed_containers(pod)
            if len(containers) > CHUNK:
                out.append(await self._pod_yielding(pod, containers, dynamic))
                continue
            out.append(self._pod(pod, dynamic))
            done += len(containers)
            if done >= CHUNK:
                done = 0
                await asyncio.sleep(0)
        return out

    async def _pod_yielding(self, pod: Pod, containers: Sequence[Container], dynamic: bool) -> PodAllocation:
        """_pod for a pod of many containers: yielding (util.yielding.sliced), and a provider that
        says the pod holds nothing of its own (PodHoldings) is not asked for each container."""
        uid = pod.uid

        def asked(provider: object) -> bool:
            return not isinstance(provider, PodHoldings) or provider.holds_any(uid)

        devices = self._devices.container_devices if asked(self._devices) else _nothing
        cpus = self._cpus.container_cpus if asked(self._cpus) else _nothing
        memory = self._memory.container_memory if asked(self._memory) else _nothing
        claims = self._dynamic.container_dynamic_resources if dynamic and asked(self._dynamic) else _nothing
        if devices is cpus is memory is claims is _nothing:
            return PodAllocation(pod.name, pod.namespace, tuple([
                ContainerAllocation(c.name) async for c in sliced(containers)]))
        listed = [
            ContainerAllocation(c.name, tuple(devices(uid, c.name)), tuple(cpus(uid, c.name)),
                                tuple(memory(uid, c.name)), tuple(claims(pod, c.name)))
            async for c in sliced(containers)
        ]
        return PodAllocation(pod.name, pod.namespace, tuple(listed))

    def get(self, namespace: str, name: str) -> PodAllocation:
        """v1 Get; KubeletError with the kubelet's text when disabled, unknown or not active (a pod
        rejected at admission or terminated: kubeletPodsProvider.GetPodByName filters as
        GetActivePods does)."""
        if not self.gate(GATE_GET):
            raise KubeletError("PodResources API Get method disabled")
        pod = self._pods.get_pod(namespace, name)
        if pod is None or not self._pods.is_active(pod.uid):
            raise KubeletError(f"pod {name} in namespace {namespace} not found")
        return self._pod(pod, self.gate(GATE_DYNAMIC_RESOURCES))

    def list_all_devices(self) -> list[PodAllocation]:
        """v1alpha1 List: every pod known, regular containers only, devices only."""
        devices = self._devices.container_devices
        return [
            PodAllocation(
                pod.name,
                pod.namespace,
                tuple(ContainerAllocation(c.name, tuple(devices(pod.uid, c.name))) for c in pod.containers),
            )
            for pod in self._pods.all_pods()
        ]

    def allocatable(self, *, devices: bool = True) -> Allocatable:
        """v1 GetAllocatableResources: healthy devices, allocatable cpus and memory (devices left
        out with devices=False, for a caller reading them through allocatable_device_sets)."""
        # Not gated: KubeletPodResourcesGetAllocatable went GA in 1.28 and was removed (no supported release has it).
        return Allocatable(
            devices=tuple(self._devices.allocatable_devices()) if devices else (),
            cpu_ids=tuple(self._cpus.allocatable_cpus()),
            memory=tuple(self._memory.allocatable_memory()),
        )

    def _pod(self, pod: Pod, dynamic: bool) -> PodAllocation:
        # Hot path (List runs it for every container of every active pod): locals, no helpers.
        uid = pod.uid
        devices = self._devices.container_devices
        cpus = self._cpus.container_cpus
        memory = self._memory.container_memory
        claims = self._dynamic.container_dynamic_resources
        return PodAllocation(
            pod.name,
            pod.namespace,
            tuple(
                ContainerAllocation(
                    c.name,
                    tuple(devices(uid, c.name)),
                    tuple(cpus(uid, c.name)),
                    tuple(memory(uid, c.name)),
                    tuple(claims(pod, c.name)) if dynamic else (),
                )
                for c in listed_containers(pod)
            ),
        )
