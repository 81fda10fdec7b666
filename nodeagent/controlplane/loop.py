"""The control plane as asyncio tasks: claim controller, scheduler and virtual node agent.

One responsibility: drive the synchronous controllers from the object store's watch. Each
component gets its own list and watch over the kinds it reads (`shared_list_and_watch`: the
store's own objects, read-only, as its events carry them), drains the events into its
cache and queue, does its work in small batches (yielding to the event loop between
batches), and otherwise sleeps until the next event or its next timer (a backoff ending, a
virtual pod finishing) — no polling. A watch that fell behind (RESYNC) is replaced by a relist.

The daemon builds one `ControlPlane(cfg, store, clock, registry, classic=None)`, awaits
`start()` after the store is open (it publishes the virtual nodes, then starts the tasks) and
`stop()` before closing the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from nodeagent.config import Config, versions
from nodeagent.controlplane import allocator
from nodeagent.controlplane.controllers import (
    cronjob,
    daemonset,
    deployment,
    disruption,
    endpoints,
    job,
    replicaset,
    statefulset,
    ttlafterfinished,
    virtual_nodes,
)
from nodeagent.controlplane.controllers.claims import KINDS as CLAIM_KINDS
from nodeagent.controlplane.controllers.claims import ClaimController
from nodeagent.controlplane.controllers.devicetainteviction import KINDS as EVICTION_KINDS
from nodeagent.controlplane.controllers.devicetainteviction import EvictionController
from nodeagent.controlplane.controllers.garbagecollector import GarbageCollector
from nodeagent.controlplane.controllers.namespace import KINDS as NAMESPACE_KINDS
from nodeagent.controlplane.controllers.namespace import NamespaceController
from nodeagent.controlplane.controllers.nodelifecycle import KINDS as NODE_LIFECYCLE_KINDS
from nodeagent.controlplane.controllers.nodelifecycle import NodeLifecycleController
from nodeagent.controlplane.controllers.resourcequota import KINDS as QUOTA_KINDS
from nodeagent.controlplane.controllers.resourcequota import ResourceQuotaController
from nodeagent.controlplane.controllers.ttl import KINDS as TTL_KINDS
from nodeagent.controlplane.controllers.ttl import TTLController
from nodeagent.controlplane.controllers.workqueue import KeyedController
from nodeagent.controlplane.metrics import ControlPlaneMetrics, Snapshot
from nodeagent.controlplane.scheduler import ClassicPort, Scheduler, SchedulerOptions
from nodeagent.controlplane.scheduler.cache import KINDS as SCHEDULER_KINDS
from nodeagent.store import RESYNC, ObjectStore, Watch, WatchEvent
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait
from nodeagent.util.yielding import CHUNK, pure_call

logger = logging.getLogger(__name__)

BATCH = 32
"""Units of work a component does before it yields to the event loop."""
DRAIN = 512
"""Watch events a component takes from its buffer at once (all are handled before its next work round)."""



def allocator_features(cfg: Config) -> allocator.Features:
    """The allocator's gates and formats: the configured gates over the emulated release's."""
    gate = cfg.kubelet.gate
    return allocator.Features(
        admin_access=gate("DRAAdminAccess"),
        prioritized_list=gate("DRAPrioritizedList"),
        config_covering_all_is_empty=versions.config_covering_all_is_empty(cfg.agent.kubernetes_version),
        claim_config_once=versions.config_covering_all_is_empty(cfg.agent.kubernetes_version),  # both in 1.37
        partitionable_devices=gate("DRAPartitionableDevices"),
        consumable_capacity=gate("DRAConsumableCapacity"),
        device_taints=gate("DRADeviceTaints"),
        device_binding=gate("DRADeviceBindingConditions"),
        step_format=versions.step_rounding_keeps_step_format(cfg.agent.kubernetes_version),
        fractional_capacity_range=gate("DRAFractionalCapacityRange"),
    )

WORKLOAD_CONTROLLERS: tuple[tuple[str, tuple[str, ...], Callable[[ObjectStore, Clock], KeyedController]], ...] = (
    ("deployment-controller", deployment.KINDS, deployment.DeploymentController),
    ("replicaset-controller", replicaset.KINDS, replicaset.ReplicaSetController),
    ("replicationcontroller-controller", replicaset.RC_KINDS, replicaset.ReplicationManager),
    ("daemonset-controller", daemonset.KINDS, daemonset.DaemonSetController),
    ("job-controller", job.KINDS, job.JobController),
    ("cronjob-controller", cronjob.KINDS, cronjob.CronJobController),
    ("statefulset-controller", statefulset.KINDS, statefulset.StatefulSetController),
    ("ttl-after-finished-controller", ttlafterfinished.KINDS, ttlafterfinished.TTLAfterFinishedController),
    ("disruption-controller", disruption.KINDS, disruption.DisruptionController),
    ("endpoints-controller", endpoints.KINDS_ENDPOINTS, endpoints.EndpointsController),
    ("endpointslice-controller", endpoints.KINDS_SLICES, endpoints.EndpointSliceController),
)
"""The workload controllers: kube-controller-manager's name, the kinds each watches, its class."""


class Component(Protocol):
    def load(self, objs: Sequence[Mapping[str, Any]]) -> None: ...

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None: ...

    def work(self, limit: int) -> int: ...

    def deadline(self) -> float | None: ...

    def idle(self) -> bool: ...


class _SchedulerComponent:
    def __init__(self, scheduler: Scheduler) -> None:
        self.s = scheduler

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self.s.load(objs)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.s.handle(event_type, obj)

    async def prepare(self, obj: Mapping[str, Any]) -> None:
        """A pod of more than util.yielding.CHUNK containers not parsed yet is parsed in a worker
        thread before its event is handled: its 10,000 containers held the loop (issue 25)."""
        cache = self.s.cache
        spec = obj.get("spec") or {}
        count = sum(len(v) for k in ("containers", "initContainers") if isinstance(v := spec.get(k), list))
        if count > CHUNK and cache.needs_parse(obj):
            cache.pod_requests(obj, await pure_call(cache.parse_requests, obj))

    def work(self, limit: int) -> int:
        """A round of up to `limit` attempts, their writes committed together (Binder.batch).
        With classic DRA the attempts go one by one: its negotiation writes PodSchedulingContexts
        and events through transactions of its own, which cannot nest in a round's batch."""
        done = 0
        with self.s.binder.batch() if self.s.classic is None else contextlib.nullcontext():
            while done < limit and self.s.schedule_next() is not None:
                done += 1
        self.s.binder.events.tick(self.s.store)  # the event series' refresh and finish timers
        return done

    def deadline(self) -> float | None:
        queued = self.s.queue.next_deadline(self.s.clock.monotonic())
        series = self.s.binder.events.deadline()
        return series if queued is None else queued if series is None else min(queued, series)

    def idle(self) -> bool:
        d = self.deadline()
        return d is None or d > self.s.clock.monotonic()


class _ClaimsComponent:
    def __init__(self, claims: ClaimController) -> None:
        self.c = claims

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self.c.load(objs)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.c.handle(event_type, obj)

    def work(self, limit: int) -> int:
        return self.c.sync_pending(limit)

    def deadline(self) -> float | None:
        return self.c.next_retry()

    def idle(self) -> bool:
        due = self.c.next_retry()
        return self.c.pending() == 0 and (due is None or due > self.c.clock.monotonic())


class _AgentComponent:
    def __init__(self, agent: virtual_nodes.VirtualNodeAgent) -> None:
        self.a = agent

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.a.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.a.handle(event_type, obj)

    def work(self, limit: int) -> int:
        return self.a.sync()

    def deadline(self) -> float | None:
        return self.a.next_deadline()

    def idle(self) -> bool:
        return self.a.pending() == 0


class ControlPlane:
    """Claim controller + scheduler + virtual node agent over one ObjectStore."""

    def __init__(
        self,
        cfg: Config,
        store: ObjectStore,
        clock: Clock,
        registry: CollectorRegistry,
        classic: ClassicPort | None = None,
        *,
        options: SchedulerOptions | None = None,
    ) -> None:
        self.cfg = cfg
        self.store = store
        self.clock = clock
        cp = cfg.agent.control_plane
        self.virtual_nodes = cfg.agent.virtual_nodes  # parsed (and checked against nodeName) at load
        self.metrics = ControlPlaneMetrics(registry)
        self.claims = ClaimController(store, clock, self.metrics)
        self.options = options or SchedulerOptions(
            nodes_to_score=cp.nodes_to_score,
            percentage_of_nodes_to_score=cp.percentage_of_nodes_to_score,
            allocation_timeout=cp.allocation_timeout,
            prioritized_list=cfg.kubelet.gate("DRAPrioritizedList"),
            extended_resource=cfg.kubelet.gate("DRAExtendedResource"),
            optional_node_operations=cfg.kubelet.gate("DRAOptionalNodeOperations"),
            allocator=allocator_features(cfg),
            allocation_timestamp=(cfg.kubelet.gate("DRADeviceBindingConditions")
                                  and cfg.kubelet.gate("DRAResourceClaimDeviceStatus")),
            binding_conditions=(cfg.kubelet.gate("DRADeviceBindingConditions")
                                and cfg.kubelet.gate("DRAResourceClaimDeviceStatus")),
            binding_timeout=cp.binding_timeout,
            node_allocatable_resources=cfg.kubelet.gate("DRANodeAllocatableResources"),
            host=socket.gethostname(),
        )
        self.scheduler = Scheduler(
            store, clock, self.metrics, self.options, classic=classic, claim_errors=self.claims.creation_error
        )
        self.claims.on_error = self.scheduler.retry
        self.agent = virtual_nodes.VirtualNodeAgent(store, clock, [v.name for v in self.virtual_nodes],
                                                    cfg.kubelet.gate)
        scheduler_kinds = SCHEDULER_KINDS + (("PodSchedulingContext",) if classic is not None else ())
        on = cp.controller_enabled  # controlPlane.controllers: kube-controller-manager's names
        self._components: list[tuple[str, tuple[str, ...], Component]] = [
            *([("claim-controller", CLAIM_KINDS, _ClaimsComponent(self.claims))]
              if on("resourceclaim-controller") else []),
            # controlPlane.scheduler.enabled false: another scheduler (the real kube-scheduler) binds
            *([("scheduler", scheduler_kinds, _SchedulerComponent(self.scheduler))] if cp.scheduler.enabled else []),
            ("virtual-nodes", virtual_nodes.KINDS, _AgentComponent(self.agent)),
        ]
        self.node_lifecycle = NodeLifecycleController(
            store, clock, cp.node_monitor_grace_period, startup_grace=cp.node_startup_grace_period,
            period=cp.node_monitor_period, alive=[v.name for v in self.virtual_nodes])
        if on("node-lifecycle-controller"):
            self._components.append(("node-lifecycle", NODE_LIFECYCLE_KINDS, self.node_lifecycle))
        if on("ttl-controller"):
            self._components.append(("ttl", TTL_KINDS, TTLController(store)))
        if on("resourcequota-controller"):
            self._components.append(("resourcequota", QUOTA_KINDS, ResourceQuotaController(store, clock)))
        self.namespaces = NamespaceController(store, clock)
        if on("namespace-controller"):
            self._components.append(("namespace", NAMESPACE_KINDS, self.namespaces))
        self.garbage_collector = GarbageCollector(store, clock)
        if on("garbage-collector-controller"):
            self._components.append(("garbage-collector", self.garbage_collector.kinds, self.garbage_collector))
        # NoExecute device taints evict (KEP-5055)
        if cfg.kubelet.gate("DRADeviceTaints") and on("device-taint-eviction-controller"):
            self.evictions = EvictionController(store, clock, rules=cfg.kubelet.gate("DRADeviceTaintRules"))
            self._components.append(("device-taint-eviction", EVICTION_KINDS, self.evictions))
        self.workloads: dict[str, KeyedController] = {}
        for name, kinds, make in WORKLOAD_CONTROLLERS:
            if on(name):
                self.workloads[name] = make(store, clock)
                self._components.append((name.removesuffix("-controller"), kinds, self.workloads[name]))
        self._tasks: list[asyncio.Task[None]] = []
        self._watches: dict[str, Watch] = {}
        self._stopping = False

    async def start(self) -> None:
        if self._tasks:
            return
        if self.virtual_nodes:
            virtual_nodes.publish(self.store, self.virtual_nodes, self.clock.now(), self.cfg.agent.node_ips,
                                  versions.release_version(self.cfg.agent.kubernetes_version))
        self.metrics.register_gauges(self.snapshot)
        self._stopping = False
        for name, kinds, component in self._components:
            listed, watch = self.store.shared_list_and_watch(kinds)
            component.load(listed)
            self._watches[name] = watch
            self._tasks.append(asyncio.create_task(self._run(name, kinds, component), name=f"controlplane-{name}"))
        logger.info("control plane started virtual_nodes=%d", len(self.virtual_nodes))

    async def stop(self) -> None:
        self._stopping = True
        for watch in self._watches.values():
            watch.close()
        await cancel_and_wait(self._tasks)
        self._tasks = []
        self._watches = {}
        self.metrics.unregister_gauges()
        logger.info("control plane stopped")

    def snapshot(self) -> Snapshot:
        return Snapshot(self.scheduler.queue.counts(), self.scheduler.cache.claim_counts())

    def idle(self) -> bool:
        """No event waiting and no work due now in any component (for tests and benchmarks)."""
        return all(w.pending() == 0 for w in self._watches.values()) and all(
            c.idle() for _, _, c in self._components)

    async def wait_idle(self, timeout: float = 10.0, poll: float = 0.005) -> None:
        """Until idle() holds twice in a row (real time); TimeoutError otherwise."""
        async with asyncio.timeout(timeout):
            streak = 0
            while streak < 2:
                await asyncio.sleep(poll)
                streak = streak + 1 if self.idle() else 0

    # --- driver ---

    async def _run(self, name: str, kinds: tuple[str, ...], component: Component) -> None:
        watch = self._watches[name]
        while not self._stopping:
            relist = False
            while not relist and (buffered := watch.drain(DRAIN)):  # one lock per run of events, not per event
                for event in buffered:
                    if event.type == RESYNC:  # the stream's last event
                        relist = True
                        break
                    await self._dispatch(name, component, event)
            if relist or (watch.overflowed and watch.pending() == 0):
                logger.warning("control plane watch fell behind, relisting component=%s", name)
                watch.close()
                listed, watch = self.store.shared_list_and_watch(kinds)
                self._watches[name] = watch
                component.load(listed)
                continue
            await self.store.until_free()  # its writes would hold the loop behind a worker's transaction
            try:
                done = component.work(BATCH)
            except Exception:
                # a round whose writes did not commit may have left them in the component's
                # cache (the scheduler's batched round): start again from the store's state
                logger.exception("control plane component failed component=%s", name)
                await self.clock.sleep(1.0)
                watch.close()
                listed, watch = self.store.shared_list_and_watch(kinds)
                self._watches[name] = watch
                component.load(listed)
                continue
            if done:
                await asyncio.sleep(0)
                continue
            ev, ended = await self._next(watch, component.deadline)
            if ended:
                return
            if ev is None:
                continue
            if ev.type == RESYNC:
                watch.close()
                listed, watch = self.store.shared_list_and_watch(kinds)
                self._watches[name] = watch
                component.load(listed)
                continue
            await self._dispatch(name, component, ev)

    async def _dispatch(self, name: str, component: Component, ev: WatchEvent) -> None:
        """Handle one event; the scheduler first parses a big pod off the loop (its prepare)."""
        if isinstance(component, _SchedulerComponent) and ev.kind == "Pod":
            try:
                await component.prepare(ev.object)
            except Exception:  # handle parses it again on the loop, and logs what fails there
                logger.exception("control plane event failed component=%s kind=%s name=%s", name, ev.kind, ev.name)
        self._handle(name, component, ev)

    def _handle(self, name: str, component: Component, ev: WatchEvent) -> None:
        try:
            component.handle(ev.type, ev.object)
        except Exception:
            logger.exception("control plane event failed component=%s kind=%s name=%s", name, ev.kind, ev.name)

    async def _next(
        self, watch: Watch, deadline: Callable[[], float | None]
    ) -> tuple[WatchEvent | None, bool]:
        """(the next event, False), (None, False) when the component's deadline came first, or
        (None, True) when the watch ended (the store closed)."""
        due = deadline()
        if due is None:
            ev = await _anext(watch)
            return ev, ev is None
        delay = due - self.clock.monotonic()
        if delay <= 0:
            return None, False
        nxt = asyncio.ensure_future(_anext(watch))
        timer = asyncio.ensure_future(self.clock.sleep(delay))
        try:
            await asyncio.wait({nxt, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not nxt.done():
                nxt.cancel()  # awaited below, where a cancellation is told from an event
            await cancel_and_wait([timer])
        if nxt.cancelled():
            return None, False
        with contextlib.suppress(asyncio.CancelledError):
            await nxt
        if not nxt.done() or nxt.cancelled():
            return None, False
        ev = nxt.result()
        return ev, ev is None


async def _anext(watch: Watch) -> WatchEvent | None:
    try:
        return await watch.__anext__()
    except StopAsyncIteration:
        return None
