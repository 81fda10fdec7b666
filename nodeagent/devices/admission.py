"""Admission-time device allocation: per container, the topology verdict and the plugin calls.

Split out of the device manager because this is the pods' path, with its own rules:
per container with device limits, check there are enough free healthy (or reusable init)
devices, ask devices/allocation.py for the topology verdict and candidates, call the
plugin's GetPreferredAllocation/Allocate and PreStartContainer, and checkpoint the pod
before answering ADMITTED; any refusal leaves the pod holding nothing. Admission is
serialised by one lock, as the kubelet serialises admission, so a device chosen for one
pod is never offered to another. Plugins are reached through the live endpoints only.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence

from nodeagent.devices import allocation
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.endpoints import PluginEndpoints
from nodeagent.devices.model import ContainerRef, Device, ResourceAllocation
from nodeagent.devices.ports import CpuNumaLookup
from nodeagent.devices.state import DeviceState
from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod import Container, Pod
from nodeagent.pods.ports import ADMITTED, AdmitResult

logger = logging.getLogger(__name__)

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


class _Reject(Exception):
    def __init__(self, result: AdmitResult) -> None:
        super().__init__(result.message)
        self.result = result


class DeviceAdmission:
    """Allocates devices to a pod's containers at admission and releases them on removal."""

    def __init__(
        self,
        *,
        state: DeviceState,
        checkpoint: Checkpoint,
        endpoints: PluginEndpoints,
        topology_policy: str,
        cpu_numa: CpuNumaLookup | None,
    ) -> None:
        self._state = state
        self._checkpoint = checkpoint
        self._endpoints = endpoints
        self._policy = topology_policy
        self._cpu_numa = cpu_numa
        self._lock = asyncio.Lock()
        self._admitting: str | None = None

    @property
    def admitting(self) -> str | None:
        """The uid of the pod being admitted right now (its allocations are not yet checkpointed)."""
        return self._admitting

    async def admit(self, pod: Pod) -> AdmitResult:
        """Allocate devices per container (checkpointed before ADMITTED) or refuse, holding nothing."""
        async with self._lock:
            if pod.uid in self._state.pods:
                return ADMITTED  # restored or admitted already: keep what it holds
            self._admitting = pod.uid
            try:
                await self._allocate_pod(pod)
                held = self._state.pods.get(pod.uid)
                if held is not None:
                    self._checkpoint.save_pod(held)
            except _Reject as rej:
                self._state.remove_pod(pod.uid)
                logger.info("device admission refused pod=%s reason=%s message=%s",
                            pod.key, rej.result.reason, rej.result.message)
                return rej.result
            except sqlite3.Error as err:
                self._state.remove_pod(pod.uid)
                logger.error("device checkpoint write failed pod=%s err=%s", pod.key, err)
                return AdmitResult(False, UNEXPECTED_ADMISSION_ERROR, f"device checkpoint failed: {err}")
            except BaseException:
                self._state.remove_pod(pod.uid)
                raise
            finally:
                self._admitting = None
        return ADMITTED

    async def remove(self, pod: Pod) -> None:
        async with self._lock:
            if self._state.remove_pod(pod.uid) is not None:
                self._checkpoint.delete_pods([pod.uid])
                logger.info("devices released pod=%s", pod.key)

    async def pre_start_container(self, pod_uid: str, container: str) -> None:
        """PreStartContainer for every resource whose plugin requires it (before each start)."""
        for resource, alloc in sorted(self._state.container_allocations(pod_uid, container).items()):
            ep = self._endpoints.get(resource)
            if ep is not None and ep.options.pre_start_required:
                await ep.conn.pre_start_container(alloc.device_ids)

    # ------------------------------------------------------------------ per container

    def _requests(self, container: Container) -> dict[str, int]:
        return {
            r: n for r, n in container.limits.items() if n > 0 and self._state.is_device_resource(r)
        }

    def _out_of(self, resource: str, request: int) -> _Reject:
        cap = self._state.capacity().get(resource, 0)
        used = len(self._state.in_use(resource))
        return _Reject(AdmitResult(
            False, f"OutOf{resource}",
            f"Node didn't have enough resource: {resource}, requested: {request}, "
            f"used: {used}, capacity: {cap}",
        ))

    async def _allocate_pod(self, pod: Pod) -> None:
        reusable: dict[str, list[str]] = {}
        init_names = {c.name for c in pod.init_containers}
        for container in pod.all_containers():
            requests = self._requests(container)
            if not requests:
                continue
            ref = ContainerRef(pod.uid, container.name, pod.namespace, pod.name)
            free = {r: self._state.free_healthy(r) for r in requests}  # in device order
            reuse = {r: self._devices(r, reusable.get(r, ())) for r in requests}
            for r, n in requests.items():
                if len(free[r]) + min(len(reuse[r]), n) < n:
                    raise self._out_of(r, n)
            cpu_numa = self._cpu_numa(pod.uid, container.name) if self._cpu_numa else None
            decision = allocation.decide_topology_counts(
                self._policy, requests,
                {r: self._state.numa_histogram(r) for r in requests},
                {r: self._available_numa(r, reuse[r]) for r in requests}, reuse, cpu_numa,
            )
            if not decision.admit:
                raise _Reject(AdmitResult(False, allocation.TOPOLOGY_AFFINITY_ERROR,
                                          "Resources cannot be allocated with Topology locality"))
            for r in sorted(requests):
                ids = await self._allocate_one(ref, r, requests[r], free[r], reuse[r], decision.affinity)
                if container.name in init_names and not container.is_sidecar:
                    reusable[r] = sorted(set(reusable.get(r, ())) | set(ids))
                else:
                    reusable[r] = [i for i in reusable.get(r, ()) if i not in ids]
            await self._pre_start(ref)

    def _available_numa(self, resource: str, reuse: Sequence[Device]) -> dict[tuple[int, ...], int]:
        """NUMA histogram of the free healthy devices plus the reusable ones."""
        counts = dict(self._state.free_numa_histogram(resource))
        for d in reuse:
            counts[d.numa_nodes] = counts.get(d.numa_nodes, 0) + 1
        return counts

    def _devices(self, resource: str, ids: Sequence[str]) -> list[Device]:
        """The devices behind `ids`, in device order (an id the plugin no longer reports has no topology)."""
        return sorted((self._state.device(resource, i) or Device(i) for i in ids), key=allocation.device_order)

    async def _allocate_one(
        self, ref: ContainerRef, resource: str, request: int,
        free: Sequence[Device], reuse: Sequence[Device], affinity: frozenset[int] | None,
    ) -> tuple[str, ...]:
        selection = allocation.plan_ordered(resource, request, free, reuse, affinity)
        ep = self._endpoints.get(resource)
        if selection is None or ep is None:
            raise self._out_of(resource, request)
        preferred: tuple[str, ...] = ()
        ask = selection.preferred_request()
        try:
            if ep.options.get_preferred_allocation_available and ask is not None:
                preferred = await ep.conn.get_preferred_allocation(*ask)
            ids = allocation.finish(selection, preferred)
            response = await ep.conn.allocate(ids)
        except (NodeAgentError, ValueError) as err:
            raise _Reject(AdmitResult(False, UNEXPECTED_ADMISSION_ERROR,
                                      f"Allocate failed due to {err}, which is unexpected")) from err
        numa = {i: self._state.numa_nodes(resource, i) for i in ids}
        self._state.add(ref, ResourceAllocation(resource, ids, response, numa))
        logger.info("devices allocated pod=%s container=%s resource=%s devices=%s",
                    ref.pod_uid, ref.container, resource, ",".join(ids))
        return ids

    async def _pre_start(self, ref: ContainerRef) -> None:
        try:
            await self.pre_start_container(ref.pod_uid, ref.container)
        except NodeAgentError as err:
            raise _Reject(AdmitResult(False, UNEXPECTED_ADMISSION_ERROR,
                                      f"PreStartContainer failed due to {err}, which is unexpected")) from err
