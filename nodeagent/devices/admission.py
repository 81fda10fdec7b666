"""Admission-time device allocation: the device manager as a topology hint provider.

The kubelet's devicemanager GetTopologyHints / GetPodTopologyHints / Allocate: hints per
resource from the free healthy (and the pod's reusable init-container) devices; then, per
container and within the topology manager's merged affinity, devicesToAllocate (reused
devices first, the aligned ones, the plugin's GetPreferredAllocation, the rest), the
plugin's Allocate, and the pod checkpointed before answering (PreStartContainer comes later, as
each container starts: `pre_start_container`).
A shortage is the kubelet's "requested number of devices unavailable for R. Requested: n,
Available: m" (UnexpectedAdmissionError). Plugins are reached through the live endpoints only.

`admit` is the same without a topology manager (policy none: no affinity), for callers that
admit devices alone.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Sequence

from nodeagent.devices import allocation
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.endpoints import PluginEndpoints
from nodeagent.devices.model import ContainerRef, Device, ResourceAllocation
from nodeagent.devices.state import DeviceState
from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.admitting import admit_or_roll_back
from nodeagent.pods.hints import AdmissionFailure, HintMemo, Hints, TopologyHint, mask_bits
from nodeagent.pods.ports import ADMITTED, AdmitResult

logger = logging.getLogger(__name__)

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
_ANY = TopologyHint(None, False)


def _unexpected(err: object) -> AdmissionFailure:
    return AdmissionFailure(UNEXPECTED_ADMISSION_ERROR, f"Allocate failed due to {err}, which is unexpected")


class DeviceAdmission:
    """Allocates devices to a pod's containers at admission and releases them on removal."""

    def __init__(
        self,
        *,
        state: DeviceState,
        checkpoint: Checkpoint,
        endpoints: PluginEndpoints,
        numa_nodes: Sequence[int] = (),
        update_allocated_devices: Callable[[], None] = lambda: None,
    ) -> None:
        """`update_allocated_devices` is called where the kubelet's devicemanager calls its
        UpdateAllocatedDevices: before every topology hint and before allocating for a container
        that asks for a device-plugin resource (it forgets the devices of pods gone since)."""
        self._update_allocated_devices = update_allocated_devices
        self._state = state
        self._checkpoint = checkpoint
        self._endpoints = endpoints
        self._numa_nodes = tuple(sorted(numa_nodes))
        self._lock = asyncio.Lock()
        self._admitting: str | None = None
        self._reuse: dict[str, dict[str, tuple[str, ...]]] = {}  # devicesToReuse: pod -> resource -> ids
        self._hinted: HintMemo[tuple[TopologyHint, ...]] = HintMemo()

    @property
    def admitting(self) -> str | None:
        """The uid of the pod being admitted right now (its allocations may not all be checkpointed)."""
        return self._admitting

    # ------------------------------------------------------------------ requests

    def _requests(self, container: Container) -> dict[str, int]:
        return {
            r: n for r, n in container.limits.items() if n > 0 and self._state.is_device_resource(r)
        }

    def _pod_requests(self, pod: Pod) -> dict[str, int]:
        """getPodDeviceRequest: the pod's effective limits (app + sidecars vs. the largest init)."""
        out: dict[str, int] = {}
        sidecars: dict[str, int] = {}
        init_max: dict[str, int] = {}
        for c in pod.init_containers:
            for r, n in self._requests(c).items():
                if c.is_sidecar:
                    sidecars[r] = sidecars.get(r, 0) + n
                else:
                    init_max[r] = max(init_max.get(r, 0), sidecars.get(r, 0) + n)
        app: dict[str, int] = {}
        for c in pod.containers:
            for r, n in self._requests(c).items():
                app[r] = app.get(r, 0) + n
        for r in {*init_max, *sidecars, *app}:
            out[r] = max(init_max.get(r, 0), app.get(r, 0) + sidecars.get(r, 0))
        return out

    # ------------------------------------------------------------------ hints

    def _held(self, pod_uid: str, container: str | None, resource: str) -> list[str]:
        held = self._state.pods.get(pod_uid)
        if held is None:
            return []
        ids: list[str] = []
        for name, per_res in held.containers.items():
            if container is not None and name != container:
                continue
            alloc = per_res.get(resource)
            if alloc is not None:
                ids.extend(i for i in alloc.device_ids if i not in ids)
        return ids

    def _hints(self, resource: str, request: int, held: Sequence[str], reusable: Sequence[str]) -> (
            list[TopologyHint] | None):
        all_devices = self._state.numa_histogram(resource)
        if not allocation.has_topology(all_devices):
            return None
        if held:
            if len(held) != request:
                return []
            return self._generate(request, all_devices, allocation.numa_counts(self._devices(resource, held)), ())
        free = self._state.free_numa_histogram(resource)
        reuse = self._devices(resource, reusable)
        if sum(free.values()) + len(reuse) < request:
            return []
        return self._generate(request, all_devices, free, reuse)

    def _generate(self, request: int, all_devices: allocation.NumaCounts, available: allocation.NumaCounts,
                  reusable: Sequence[Device]) -> list[TopologyHint]:
        """allocation.generate_hints, memoised: counts matter only up to the request (a sum reaches
        it with a count capped at it exactly when without), so the key rarely changes."""
        key = (request, allocation.capped(all_devices, request), allocation.capped(available, request),
               tuple(d.numa_nodes for d in reusable))
        return list(self._hinted.get(key, lambda: tuple(
            allocation.generate_hints(request, all_devices, available, reusable, self._numa_nodes))))

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        self._update_allocated_devices()
        reuse = self._reuse.get(pod.uid, {})
        return {
            r: self._hints(r, n, self._held(pod.uid, container.name, r), reuse.get(r, ()))
            for r, n in self._requests(container).items()
        }

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        self._update_allocated_devices()
        return {r: self._hints(r, n, self._held(pod.uid, None, r), ()) for r, n in self._pod_requests(pod).items()}

    # ------------------------------------------------------------------ allocate

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        """Allocate the container's devices within `affinity` (checkpointed) or raise AdmissionFailure."""
        requests = self._requests(container)
        if not requests:
            return
        self._update_allocated_devices()
        async with self._lock:
            self._admitting = pod.uid
            try:
                changed = await self._allocate_container(pod, container, requests, affinity)
                held = self._state.pods.get(pod.uid)
                if held is not None and changed:
                    self._checkpoint.save_pod(held)
            except sqlite3.Error as err:
                logger.error("device checkpoint write failed pod=%s err=%s", pod.key, err)
                raise AdmissionFailure(UNEXPECTED_ADMISSION_ERROR, f"device checkpoint failed: {err}") from err
            finally:
                self._admitting = None

    async def _allocate_container(
        self, pod: Pod, container: Container, requests: dict[str, int], affinity: TopologyHint
    ) -> bool:
        """Allocate what the container does not hold yet; whether anything new was allocated."""
        if pod.uid not in self._reuse:
            self._reuse = {pod.uid: {}}
        reuse = self._reuse[pod.uid]
        ref = ContainerRef(pod.uid, container.name, pod.namespace, pod.name)
        nodes = frozenset(mask_bits(affinity.numa_affinity)) if affinity.numa_affinity is not None else None
        allocated: dict[str, tuple[str, ...]] = {}
        changed = False
        for r in sorted(requests):
            held = self._held(pod.uid, container.name, r)
            if held:
                if len(held) != requests[r]:
                    raise _unexpected(f'pod "{pod.uid}" container "{container.name}" changed request for '
                                      f'resource "{r}" from {len(held)} to {requests[r]}')
                allocated[r] = tuple(held)
                continue
            allocated[r] = await self._allocate_one(ref, r, requests[r], reuse.get(r, ()), nodes)
            changed = True
        is_init = any(c.name == container.name for c in pod.init_containers)
        for r, ids in allocated.items():
            if is_init and not container.is_sidecar:
                reuse[r] = tuple(sorted({*reuse.get(r, ()), *ids}))
            else:
                reuse[r] = tuple(i for i in reuse.get(r, ()) if i not in ids)
        return changed

    def _devices(self, resource: str, ids: Sequence[str]) -> list[Device]:
        """The devices behind `ids`, in device order (an id the plugin no longer reports has no topology)."""
        if not ids:
            return []  # the usual case (no init container devices to reuse): no sort to set up
        return sorted((self._state.device(resource, i) or Device(i) for i in ids), key=allocation.device_order)

    async def _allocate_one(
        self, ref: ContainerRef, resource: str, request: int, reusable: Sequence[str], affinity: frozenset[int] | None,
    ) -> tuple[str, ...]:
        reuse = self._devices(resource, reusable)
        available = self._state.free_count(resource)
        needed = request - min(len(reuse), request)
        ep = self._endpoints.get(resource)
        if needed > 0 and (available < needed or ep is None):
            raise _unexpected(f"requested number of devices unavailable for {resource}. "
                              f"Requested: {needed}, Available: {available if ep is not None else 0}")
        ask_plugin = ep is not None and ep.options.get_preferred_allocation_available
        aligned = None if ask_plugin or affinity is None else self._state.iter_free_healthy_on(resource, affinity)
        selection = allocation.plan_ordered(resource, request, self._state.iter_free_healthy(resource), reuse,
                                            affinity, full_pool=ask_plugin, free_aligned=aligned)
        if selection is None:
            raise _unexpected(f"requested number of devices unavailable for {resource}. "
                              f"Requested: {needed}, Available: {available}")
        preferred: tuple[str, ...] = ()
        ask = selection.preferred_request()
        try:
            if ep is not None and ask_plugin and ask is not None:
                preferred = await ep.conn.get_preferred_allocation(*ask)
            ids = allocation.finish(selection, preferred)
            if ep is None:
                raise NodeAgentError(f"cannot allocate unregistered device {resource}")
            response = await ep.conn.allocate(ids)
        except (NodeAgentError, ValueError) as err:
            raise _unexpected(err) from err
        numa = {i: self._state.numa_nodes(resource, i) for i in ids}
        self._state.add(ref, ResourceAllocation(resource, ids, response, numa))
        logger.info("devices allocated pod=%s container=%s resource=%s devices=%s",
                    ref.pod_uid, ref.container, resource, ",".join(ids))
        return ids

    # ------------------------------------------------------------------ without a topology manager

    async def admit(self, pod: Pod) -> AdmitResult:
        """Allocate every container's devices with no affinity, or refuse holding nothing."""
        if pod.uid in self._state.pods:
            return ADMITTED  # restored or admitted already: keep what it holds
        return await admit_or_roll_back(pod, lambda: self._allocate_all(pod), self.remove, "device admission")

    async def _allocate_all(self, pod: Pod) -> None:
        for container in pod.all_containers():
            await self.allocate(pod, container, _ANY)

    async def remove(self, pod: Pod) -> None:
        async with self._lock:
            self._reuse.pop(pod.uid, None)
            if self._state.remove_pod(pod.uid) is not None:
                self._checkpoint.delete_pods([pod.uid])
                logger.info("devices released pod=%s", pod.key)

    def needs_pre_start(self, pod_uid: str, container: str) -> bool:
        """Whether the container holds devices of a plugin that asked for PreStartContainer."""
        for resource in self._state.container_allocations(pod_uid, container):
            ep = self._endpoints.get(resource)
            if ep is not None and ep.options.pre_start_required:
                return True
        return False

    async def pre_start_container(self, pod_uid: str, container: str) -> None:
        """PreStartContainer for every resource whose plugin requires it: the kubelet's
        GetDeviceRunContainerOptions calls it as each container is about to start (not at
        admission), so a pod's init container gets it after every container was allocated."""
        for resource, alloc in sorted(self._state.container_allocations(pod_uid, container).items()):
            ep = self._endpoints.get(resource)
            if ep is not None and ep.options.pre_start_required:
                await ep.conn.pre_start_container(alloc.device_ids)
