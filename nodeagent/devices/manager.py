"""The device manager: the one object the daemon wires, restoring its state and answering reads.

It owns DeviceState and the checkpoint and composes the parts that change them, each in
its own module: plugin endpoints, streams and grace periods (devices/endpoints.py),
admission-time allocation (devices/admission.py) and health reporting (devices/health.py).
What stays here is what spans them: building them around one shared state, restoring
the checkpoint and reconciling it with the pods that still exist, and the read side
(node resources, pod-resources, describe). Plugins are reached only through the ports in
devices/ports.py (no grpc here). The registration server (registration_service.py) calls
`register`; the pod manager calls `admit`/`remove` (the ResourceAdmitter port);
pod-resources reads it as a DevicesProvider; the daemon merges `extended_resources()`
into the node's capacity/allocatable.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from nodeagent.devices.admission import UNEXPECTED_ADMISSION_ERROR, DeviceAdmission
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.endpoints import PluginEndpoints
from nodeagent.devices.health import Events, HealthReporter
from nodeagent.devices.model import ResourceAllocation, ResourceSummary
from nodeagent.devices.ports import (
    EventRecorder,
    HealthCallback,
    PluginControl,
    PluginDialer,
)
from nodeagent.devices.state import DeviceState, PodAllocations
from nodeagent.objects.pod.model import Container, Pod, ResourceStatus
from nodeagent.podresources.providers import DeviceInfo, DeviceSet
from nodeagent.pods.hints import Hints, TopologyHint
from nodeagent.pods.ports import AdmitResult
from nodeagent.util.clock import Clock

__all__ = ["UNEXPECTED_ADMISSION_ERROR", "DeviceManager"]

logger = logging.getLogger(__name__)


class DeviceManager:
    def __init__(
        self,
        *,
        dialer: PluginDialer,
        checkpoint: Checkpoint,
        clock: Clock,
        device_plugins_dir: Path,
        node_name: str = "",
        grace_period: float = 300.0,
        control: PluginControl | None = None,
        on_health_change: HealthCallback | None = None,
        record: EventRecorder | None = None,
        numa_nodes: Sequence[int] = (),
        pod_health_events: bool = True,
    ) -> None:
        """`pod_health_events=False` when on_health_change already records pod events (pod manager);
        `numa_nodes`: the machine's NUMA node ids, over which topology hints are generated."""
        self._checkpoint = checkpoint
        self._clock = clock
        self._state = DeviceState()
        events = Events(record)
        self._health = HealthReporter(self._state, events, on_health_change, pod_health_events)
        self._endpoints = PluginEndpoints(
            dialer=dialer, checkpoint=checkpoint, clock=clock, state=self._state,
            health=self._health, events=events, device_plugins_dir=device_plugins_dir,
            node_name=node_name, grace_period=grace_period, control=control,
        )
        # Pods gone since the last UpdateAllocatedDevices point, with what they held (NUMA nodes
        # resolved when they went): the kubelet's podDevices keeps a pod's devices until its next
        # UpdateAllocatedDevices (called from Allocate, the topology hints and pod-resources List),
        # so kubelet_internal_checkpoint, rewritten on every ListAndWatch update, still lists them,
        # and a restarted kubelet reads them back from it. Durable too (the checkpoint's gone/
        # records, restored with the rest); nothing else shows them (pod-resources lists and gets
        # active pods only): devices nobody holds for admission, allocatable and metrics.
        self._retained: dict[str, PodAllocations] = {}
        self._admission = DeviceAdmission(
            state=self._state, checkpoint=checkpoint, endpoints=self._endpoints,
            numa_nodes=numa_nodes, update_allocated_devices=self.update_allocated_devices,
        )
        self._started = False
        self._restore()

    # ------------------------------------------------------------------ lifecycle

    def _restore(self) -> None:
        restored = self._checkpoint.load()
        now = self._clock.monotonic()
        for resource in restored.registered:
            self._state.restore_resource(resource, now)
        for pod in restored.pods:
            self._state.restore_pod(pod)
            for per_res in pod.containers.values():
                for resource in per_res:
                    self._state.restore_resource(resource, now)
        self._retained = {pod.uid: pod for pod in restored.gone}
        if restored.pods or restored.registered:
            logger.info(
                "device checkpoint restored pods=%d resources=%s",
                len(restored.pods), ",".join(sorted(self._state.resources)),
            )

    async def start(self) -> None:
        """Start the grace timers of resources restored from the checkpoint (stopped until re-registered)."""
        self._started = True
        self._endpoints.start_grace_timers()

    async def stop(self) -> None:
        """Close every plugin connection and cancel the streams and timers (state stays checkpointed)."""
        self._started = False
        await self._endpoints.stop()

    async def restart(self) -> None:
        """A simulated kubelet restart: drop every plugin connection, forget the in-memory state and
        restore it from the checkpoint as a new process would (allocations kept; resources wait for
        their plugins to register again, within the grace period)."""
        await self._endpoints.stop()
        self._state.reset()
        self._restore()
        if self._started:
            self._endpoints.start_grace_timers()

    def reconcile(self, existing_pod_uids: Collection[str]) -> list[str]:
        """Release allocations of pods that no longer exist (deleted while the daemon was down)."""
        admitting = self._admission.admitting
        gone = [uid for uid in self._state.pods if uid not in existing_pod_uids and uid != admitting]
        self._retain(*gone)
        for uid in gone:
            self._state.remove_pod(uid)
        if gone:
            self._checkpoint.delete_pods(gone)
            logger.info("released devices of pods gone while down pods=%s", ",".join(sorted(gone)))
        return gone

    # ------------------------------------------------------------------ registration and health

    async def register(self, version: str, endpoint: str, resource: str) -> None:
        """v1beta1.Registration/Register after the counter: validate, dial, ask options, keep.

        Raises KubeletError with the kubelet's texts (UNKNOWN on the wire).
        """
        await self._endpoints.register(version, endpoint, resource)

    def container_resource_statuses(self, pod_uid: str, container: str) -> tuple[ResourceStatus, ...]:
        """allocatedResourcesStatus of one container: every held device with its health."""
        return self._health.container_resource_statuses(pod_uid, container)

    def pod_resource_statuses(self, pod_uid: str) -> dict[str, tuple[ResourceStatus, ...]]:
        return self._health.pod_resource_statuses(pod_uid)

    async def set_device_health(self, resource: str, device_id: str, health: str) -> None:
        """Switch a device's health through nodeagent's fake plugin control socket."""
        await self._endpoints.set_device_health(resource, device_id, health)

    # ------------------------------------------------------------------ admission

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        """Allocate devices per container (checkpointed before ADMITTED) or refuse, holding nothing."""
        return await self._admission.admit(pod)

    def needs_pre_start(self, pod_uid: str, container: str) -> bool:
        """Whether the container holds devices of a plugin with preStartRequired."""
        return self._admission.needs_pre_start(pod_uid, container)

    async def pre_start_container(self, pod_uid: str, container: str) -> None:
        """PreStartContainer for every resource whose plugin requires it (before each start)."""
        await self._admission.pre_start_container(pod_uid, container)

    # ------------------------------------------------------------------ HintProvider (pods/hints.py)

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        return self._admission.get_topology_hints(pod, container)

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        return self._admission.get_pod_topology_hints(pod)

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        await self._admission.allocate(pod, container, affinity)

    async def remove(self, pod: Pod) -> None:
        self._retain(pod.uid)
        await self._admission.remove(pod)

    def _retain(self, *pod_uids: str) -> None:
        """Keep what the pods hold as the kubelet's podDevices keeps it after a pod is gone (durably,
        before the caller deletes their records)."""
        kept = []
        for uid in pod_uids:
            pod = self._state.pods.get(uid)
            if pod is None:
                continue
            kept.append(PodAllocations(uid, pod.namespace, pod.name, {
                container: {resource: self._resolved(alloc) for resource, alloc in per_resource.items()}
                for container, per_resource in pod.containers.items()}))
        if kept:
            self._checkpoint.save_gone(kept)
            self._retained.update((p.uid, p) for p in kept)

    def update_allocated_devices(self) -> None:
        """The kubelet's UpdateAllocatedDevices: forget the devices of pods gone since the last call.

        Moves no generation: the kubelet writes its checkpoint file only on the next device
        update or allocation, so what the file holds changes then, not now."""
        if self._retained:
            self._checkpoint.forget_gone(list(self._retained))
            self._retained.clear()

    def _resolved(self, alloc: ResourceAllocation) -> ResourceAllocation:
        numa = {i: alloc.numa.get(i) or tuple(self._state.numa_nodes(alloc.resource, i)) for i in alloc.device_ids}
        return dataclasses.replace(alloc, numa=numa)

    # ------------------------------------------------------------------ read side

    def generation(self) -> int:
        """Changes whenever devices, health or allocations change (podresources Versioned)."""
        return self._state.generation

    def extended_resources(self) -> tuple[dict[str, int], dict[str, int]]:
        """(capacity, allocatable) of every device-plugin resource, for NodeResources."""
        return self._state.capacity(), self._state.allocatable()

    def snapshot(self) -> list[ResourceSummary]:
        return self._state.summaries()

    def allocated_counts(self) -> dict[str, int]:
        """Devices held by pods per resource: `snapshot()`'s `allocated` without building summaries."""
        return self._state.held_counts()

    def container_allocations(self, pod_uid: str, container: str) -> Mapping[str, ResourceAllocation]:
        """Device ids and the plugin's Allocate answer per resource (for describe)."""
        return dict(self._state.container_allocations(pod_uid, container))

    def pod_allocations(self, pod_uid: str) -> dict[str, dict[str, ResourceAllocation]]:
        pod = self._state.pods.get(pod_uid)
        return {} if pod is None else {c: dict(a) for c, a in pod.containers.items()}

    def holds_any(self, pod_uid: str) -> bool:
        """podresources PodHoldings: False when no container of the pod has an allocation entry."""
        pod = self._state.pods.get(pod_uid)
        return pod is not None and bool(pod.containers)

    def container_devices(self, pod_uid: str, container: str) -> Sequence[DeviceInfo]:
        out = []
        for resource, alloc in sorted(self._state.container_allocations(pod_uid, container).items()):
            for i in alloc.device_ids:
                numa = alloc.numa.get(i) or self._state.numa_nodes(resource, i)
                out.append(DeviceInfo(resource, i, numa))
        return out

    def listing_generation(self) -> int:
        """Changes whenever container_devices could change; not on health (podresources VersionedListing)."""
        return self._state.listing_generation()

    def allocatable_device_sets(self) -> Sequence[DeviceSet]:
        """allocatable_devices per resource, the kept healthy tuples themselves (podresources DeviceSets)."""
        return [
            DeviceSet(resource, rs.layout, rs.healthy)
            for resource in sorted(self._state.resources)
            if (rs := self._state.resources[resource]).connected
        ]

    def allocatable_devices(self) -> Sequence[DeviceInfo]:
        out = []
        for resource in sorted(self._state.resources):
            for d in self._state.healthy_devices(resource):  # kept in device order
                out.append(DeviceInfo(resource, d.id, d.numa_nodes))
        return out

    def checkpoint_data(self) -> tuple[list[tuple[str, str, ResourceAllocation]], dict[str, tuple[str, ...]]]:
        """What the kubelet writes to kubelet_internal_checkpoint: every (pod uid, container,
        allocation) with each device's NUMA nodes resolved, and each known resource's healthy device
        ids (none while its plugin is gone: the kubelet's markResourceUnhealthy). Pods gone since
        the last UpdateAllocatedDevices are still in it, as in the kubelet's podDevices."""
        held = {uid: pod.containers for uid, pod in self._state.pods.items()}
        for uid, gone in self._retained.items():
            held.setdefault(uid, gone.containers)
        entries = []
        for uid, containers in sorted(held.items()):
            for container, per_resource in sorted(containers.items()):
                for _, alloc in sorted(per_resource.items()):
                    entries.append((uid, container, self._resolved(alloc)))
        registered = {r: tuple(d.id for d in self._state.healthy_devices(r)) for r in sorted(self._state.resources)}
        return entries, registered

    def registered_endpoints(self) -> dict[str, Path]:
        return self._endpoints.paths()
