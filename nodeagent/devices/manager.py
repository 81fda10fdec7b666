"""The device manager: plugin registrations, device sets, admission-time allocation, health.

It owns DeviceState and the checkpoint, and reaches plugins only through the ports in
devices/ports.py (no grpc here). The registration server (registration_service.py)
calls `register`; the pod manager calls `admit`/`remove` (the ResourceAdmitter port);
pod-resources reads it as a DevicesProvider; the daemon merges `extended_resources()`
into the node's capacity/allocatable. Admission is serialised by one lock, as the
kubelet serialises admission: a device chosen for one pod is never offered to another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeagent.clock import Clock
from nodeagent.devices import allocation
from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.model import (
    HEALTHY,
    SUPPORTED_VERSIONS,
    UNHEALTHY,
    ContainerRef,
    Device,
    PluginOptions,
    ResourceAllocation,
    ResourceSummary,
    is_extended_resource_name,
)
from nodeagent.devices.ports import (
    CpuNumaLookup,
    EventRecorder,
    HealthCallback,
    PluginConnection,
    PluginControl,
    PluginDialer,
)
from nodeagent.devices.state import DeviceState
from nodeagent.errors import FailedPrecondition, KubeletError, NodeAgentError, NotFound, ValidationError
from nodeagent.objects.pod import Container, Pod, ResourceHealth, ResourceStatus
from nodeagent.podresources.providers import DeviceInfo
from nodeagent.pods.ports import ADMITTED, AdmitResult

logger = logging.getLogger(__name__)

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


@dataclass(eq=False)
class _Endpoint:
    """A live registration: one (resource, socket path) with its connection and stream task."""

    resource: str
    path: Path
    conn: PluginConnection
    options: PluginOptions
    task: asyncio.Task[None] | None = None


class _Reject(Exception):
    def __init__(self, result: AdmitResult) -> None:
        super().__init__(result.message)
        self.result = result


class DeviceManager:
    def __init__(
        self,
        *,
        dialer: PluginDialer,
        checkpoint: Checkpoint,
        clock: Clock,
        device_plugins_dir: Path,
        node_name: str = "",
        topology_policy: str = allocation.NONE,
        grace_period: float = 300.0,
        control: PluginControl | None = None,
        on_health_change: HealthCallback | None = None,
        record: EventRecorder | None = None,
        cpu_numa: CpuNumaLookup | None = None,
        pod_health_events: bool = True,
    ) -> None:
        """`pod_health_events=False` when on_health_change already records pod events (pod manager)."""
        if topology_policy not in allocation.POLICIES:
            raise ValidationError("topologyManagerPolicy", f"unsupported policy {topology_policy!r}")
        self._dialer = dialer
        self._checkpoint = checkpoint
        self._clock = clock
        self._dir = device_plugins_dir
        self._node_name = node_name
        self._policy = topology_policy
        self._grace = grace_period
        self._control = control
        self._on_health_change = on_health_change
        self._record = record
        self._cpu_numa = cpu_numa
        self._pod_health_events = pod_health_events
        self._state = DeviceState()
        self._endpoints: dict[str, _Endpoint] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()
        self._admitting: str | None = None
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
        if restored.pods or restored.registered:
            logger.info(
                "device checkpoint restored pods=%d resources=%s",
                len(restored.pods), ",".join(sorted(self._state.resources)),
            )

    async def start(self) -> None:
        """Start the grace timers of resources restored from the checkpoint (stopped until re-registered)."""
        self._started = True
        for rs in list(self._state.resources.values()):
            if not rs.connected:
                self._spawn(self._expire_later(rs.name, rs.epoch))

    async def stop(self) -> None:
        """Close every plugin connection and cancel the streams and timers (state stays checkpointed)."""
        self._started = False
        endpoints, self._endpoints = list(self._endpoints.values()), {}
        tasks, self._tasks = list(self._tasks), set()
        for task in tasks:
            task.cancel()
        for ep in endpoints:
            if ep.task is not None:
                ep.task.cancel()
        for task in [*tasks, *(ep.task for ep in endpoints if ep.task is not None)]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for ep in endpoints:
            await self._close(ep)

    def reconcile(self, existing_pod_uids: Collection[str]) -> list[str]:
        """Release allocations of pods that no longer exist (deleted while the daemon was down)."""
        gone = [
            uid for uid in self._state.pods if uid not in existing_pod_uids and uid != self._admitting
        ]
        for uid in gone:
            self._state.remove_pod(uid)
        if gone:
            self._checkpoint.delete_pods(gone)
            logger.info("released devices of pods gone while down pods=%s", ",".join(sorted(gone)))
        return gone

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ registration

    async def register(self, version: str, endpoint: str, resource: str) -> None:
        """v1beta1.Registration/Register after the counter: validate, dial, ask options, keep.

        Raises KubeletError with the kubelet's texts (UNKNOWN on the wire).
        """
        if version not in SUPPORTED_VERSIONS:
            supported = "[" + " ".join(f'"{v}"' for v in SUPPORTED_VERSIONS) + "]"
            raise KubeletError(
                f'requested API version "{version}" is not supported by kubelet. '
                f"Supported version is {supported}"
            )
        if not is_extended_resource_name(resource):
            raise KubeletError(f'the ResourceName "{resource}" is invalid')
        if not endpoint or "/" in endpoint or endpoint in (".", ".."):
            raise KubeletError(
                f'failed to dial device plugin: endpoint "{endpoint}" is not a socket file name '
                f"in {self._dir}"
            )
        path = self._dir / endpoint
        try:
            conn = await self._dialer.dial(resource, path)
        except NodeAgentError as err:
            raise KubeletError(f"failed to dial device plugin: {err}") from err
        try:
            options = await conn.get_options()
        except NodeAgentError as err:
            await conn.close()
            raise KubeletError(f"failed to get device plugin options: {err}") from err
        old = self._endpoints.get(resource)
        ep = _Endpoint(resource, path, conn, options)
        self._endpoints[resource] = ep
        self._state.register(resource, str(path), options)
        if old is not None:
            logger.info("device plugin replaced resource=%s old=%s new=%s", resource, old.path, path)
            await self._drop(old)
        logger.info(
            "device plugin registered resource=%s endpoint=%s pre_start=%s preferred=%s",
            resource, path, options.pre_start_required, options.get_preferred_allocation_available,
        )
        self._event("Node", "", self._node_name, "Normal", "DevicePluginRegistered",
                    f"device plugin for {resource} registered at {path}")
        ep.task = asyncio.ensure_future(self._watch(ep))

    async def _drop(self, ep: _Endpoint) -> None:
        if ep.task is not None and ep.task is not asyncio.current_task():
            ep.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await ep.task
        await self._close(ep)

    async def _close(self, ep: _Endpoint) -> None:
        try:
            await ep.conn.close()
        except NodeAgentError as err:
            logger.debug("closing plugin connection failed endpoint=%s err=%s", ep.path, err)

    async def _watch(self, ep: _Endpoint) -> None:
        try:
            async for devices in ep.conn.list_and_watch():
                if self._endpoints.get(ep.resource) is not ep:
                    return
                await self._apply_devices(ep.resource, devices)
            logger.warning("device plugin stream ended resource=%s endpoint=%s", ep.resource, ep.path)
        except NodeAgentError as err:
            logger.warning("device plugin stream failed resource=%s endpoint=%s err=%s",
                           ep.resource, ep.path, err)
        if self._endpoints.get(ep.resource) is ep:
            await self._plugin_gone(ep)

    async def _apply_devices(self, resource: str, devices: Sequence[Device]) -> None:
        before = self._held_health(resource)
        self._state.update_devices(resource, devices)
        self._save_registered()
        logger.info(
            "devices updated resource=%s total=%d healthy=%d",
            resource, len(devices), sum(1 for d in devices if d.healthy),
        )
        await self._notify(resource, before)

    async def _plugin_gone(self, ep: _Endpoint) -> None:
        before = self._held_health(ep.resource)
        del self._endpoints[ep.resource]
        self._state.disconnect(ep.resource, self._clock.monotonic())
        await self._close(ep)
        self._event("Node", "", self._node_name, "Warning", "DevicePluginGone",
                    f"device plugin for {ep.resource} at {ep.path} is gone; "
                    f"capacity kept for {self._grace:g}s")
        await self._notify(ep.resource, before)
        rs = self._state.resources.get(ep.resource)
        if rs is not None:
            self._spawn(self._expire_later(ep.resource, rs.epoch))

    async def _expire_later(self, resource: str, epoch: int) -> None:
        await self._clock.sleep(self._grace)
        if self._state.expire(resource, epoch):
            logger.info("device plugin resource removed after grace period resource=%s", resource)
            self._event("Node", "", self._node_name, "Normal", "DevicePluginRemoved",
                        f"resource {resource} removed from capacity: plugin did not come back")
            self._save_registered()

    def _save_registered(self) -> None:
        self._checkpoint.save_registered(
            {r: [d.id for d in self._state.healthy_devices(r)] for r in self._state.resources}
        )

    # ------------------------------------------------------------------ health

    def _held_health(self, resource: str) -> dict[str, str]:
        return {i: self._state.device_health(resource, i) for i in self._state.in_use(resource)}

    async def _notify(self, resource: str, before: Mapping[str, str]) -> None:
        after = self._held_health(resource)
        changed = {i for i in before.keys() | after.keys() if before.get(i) != after.get(i)}
        if not changed:
            return
        for ref in self._state.holders(resource, changed):
            held = self._state.container_allocations(ref.pod_uid, ref.container)[resource]
            moved = sorted(i for i in held.device_ids if i in changed)
            bad = [i for i in moved if after.get(i) != HEALTHY]
            text = ", ".join(f"{i}={after.get(i)}" for i in moved)
            if self._pod_health_events:
                self._event("Pod", ref.namespace, ref.pod_name, "Warning" if bad else "Normal",
                            "DeviceUnhealthy" if bad else "DeviceHealthy",
                            f"container {ref.container}: {resource} {text}")
            if self._on_health_change is not None:
                try:
                    statuses = self.container_resource_statuses(ref.pod_uid, ref.container)
                    await self._on_health_change(ref.pod_uid, ref.container, statuses)
                except Exception:
                    logger.exception("health callback failed pod=%s container=%s", ref.pod_uid, ref.container)

    def container_resource_statuses(self, pod_uid: str, container: str) -> tuple[ResourceStatus, ...]:
        """allocatedResourcesStatus of one container: every held device with its health."""
        allocs = self._state.container_allocations(pod_uid, container)
        return tuple(
            ResourceStatus(
                name=resource,
                resources=tuple(
                    ResourceHealth(i, self._state.device_health(resource, i))
                    for i in allocs[resource].device_ids
                ),
            )
            for resource in sorted(allocs)
        )

    def pod_resource_statuses(self, pod_uid: str) -> dict[str, tuple[ResourceStatus, ...]]:
        pod = self._state.pods.get(pod_uid)
        if pod is None:
            return {}
        return {c: self.container_resource_statuses(pod_uid, c) for c in pod.containers}

    async def set_device_health(self, resource: str, device_id: str, health: str) -> None:
        """Switch a device's health through nodeagent's fake plugin control socket."""
        if health not in (HEALTHY, UNHEALTHY):
            raise ValidationError("health", f'must be "{HEALTHY}" or "{UNHEALTHY}", got "{health}"')
        ep = self._endpoints.get(resource)
        if ep is None:
            if self._state.is_device_resource(resource):
                raise FailedPrecondition(f"device plugin for resource {resource} is not connected")
            raise NotFound(f"no device plugin registered for resource {resource}")
        if device_id not in {d.id for d in self._state.all_devices(resource)}:
            raise NotFound(f"resource {resource} has no device {device_id}")
        if self._control is None:
            raise FailedPrecondition(f"device plugin {ep.path} has no control socket")
        await self._control.set_health(Path(f"{ep.path}.ctl"), device_id, health)

    # ------------------------------------------------------------------ admission

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
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

    async def pre_start_container(self, pod_uid: str, container: str) -> None:
        """PreStartContainer for every resource whose plugin requires it (before each start)."""
        for resource, alloc in sorted(self._state.container_allocations(pod_uid, container).items()):
            ep = self._endpoints.get(resource)
            if ep is not None and ep.options.pre_start_required:
                await ep.conn.pre_start_container(alloc.device_ids)

    async def remove(self, pod: Pod) -> None:
        async with self._lock:
            if self._state.remove_pod(pod.uid) is not None:
                self._checkpoint.delete_pods([pod.uid])
                logger.info("devices released pod=%s", pod.key)

    # ------------------------------------------------------------------ read side

    def generation(self) -> int:
        """Changes whenever devices, health or allocations change (podresources Versioned)."""
        return self._state.generation

    def extended_resources(self) -> tuple[dict[str, int], dict[str, int]]:
        """(capacity, allocatable) of every device-plugin resource, for NodeResources."""
        return self._state.capacity(), self._state.allocatable()

    def snapshot(self) -> list[ResourceSummary]:
        return self._state.summaries()

    def container_allocations(self, pod_uid: str, container: str) -> Mapping[str, ResourceAllocation]:
        """Device ids and the plugin's Allocate answer per resource (for describe)."""
        return dict(self._state.container_allocations(pod_uid, container))

    def pod_allocations(self, pod_uid: str) -> dict[str, dict[str, ResourceAllocation]]:
        pod = self._state.pods.get(pod_uid)
        return {} if pod is None else {c: dict(a) for c, a in pod.containers.items()}

    def container_devices(self, pod_uid: str, container: str) -> Sequence[DeviceInfo]:
        out = []
        for resource, alloc in sorted(self._state.container_allocations(pod_uid, container).items()):
            for i in alloc.device_ids:
                numa = alloc.numa.get(i) or self._state.numa_nodes(resource, i)
                out.append(DeviceInfo(resource, i, numa))
        return out

    def allocatable_devices(self) -> Sequence[DeviceInfo]:
        out = []
        for resource in sorted(self._state.resources):
            for d in self._state.healthy_devices(resource):  # kept in device order
                out.append(DeviceInfo(resource, d.id, d.numa_nodes))
        return out

    def registered_endpoints(self) -> dict[str, Path]:
        return {r: ep.path for r, ep in self._endpoints.items()}

    def _event(self, kind: str, namespace: str, name: str, type_: str, reason: str, message: str) -> None:
        if self._record is None:
            return
        try:
            self._record(kind, namespace, name, type_, reason, message)
        except Exception:
            logger.exception("event recorder failed reason=%s", reason)
