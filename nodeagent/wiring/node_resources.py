"""Wiring of the node's own resources: container manager, device manager, pod manager.

Exists because these three are built around each other: the pod manager admits through
the cpu manager and the device manager, the device manager reports health back into the
pod manager and asks the container manager for a container's NUMA nodes, and on restart
the managers must drop what belongs to pods gone while the daemon was down. Building
them here keeps those cross-references in one place, out of the daemon's lifecycle.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from nodeagent.cm.cgroups import driver_for
from nodeagent.cm.eviction.manager import EvictionManager
from nodeagent.cm.manager import ContainerManager
from nodeagent.config import Config
from nodeagent.devices.health import HealthCoalescer
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.ports import HealthCallback
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.dra.manager import DRAManager
from nodeagent.errors import NodeAgentError
from nodeagent.host.model import HostProbe
from nodeagent.metrics.instruments import Instruments
from nodeagent.node import NodeView
from nodeagent.objects.pod.model import Container, Pod, ResourceStatus
from nodeagent.pods import status as st
from nodeagent.pods import table
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.hints import Hints, TopologyHint
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import AdmitResult, NodeResourcesSource, StartResult
from nodeagent.pods.ports import NodeResources as PodNodeResources
from nodeagent.pods.static import StaticPodSource, UnknownFields
from nodeagent.rpc.server import BindDir
from nodeagent.state.db import StateDB
from nodeagent.util.clock import Clock
from nodeagent.util.fswatch import InotifyWatch
from nodeagent.util.tasks import cancel_and_wait
from nodeagent.wiring import faults as faults_wiring
from nodeagent.wiring.faults import FaultParts
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)


HEALTH_COALESCE = 0.25


@dataclass(frozen=True)
class NodeBase:
    """What every other piece is built on: metrics, the host, the started container manager, events."""

    registry: CollectorRegistry
    instruments: Instruments
    probe: HostProbe
    cm: ContainerManager
    recorder: EventRecorder
    faults: FaultParts  # faults on demand: interceptors for every plugin channel and served socket
    bind_dir: BindDir | None = None  # where the node's sockets are bound, shared with other nodes (rpc/server.py)


@dataclass(frozen=True)
class NodeResources:
    """The pod manager and the device manager, wired to each other, after restore."""

    devices: DeviceSubsystem
    node: NodeView
    device_admitter: DeviceAdmitter
    pods: PodManager
    active: set[str]  # uids of the pods active after restore, plus those kept for `unreadable`
    unreadable: frozenset[str] = frozenset()  # pods whose record was unreadable: holdings kept


def build_base(
    cfg: Config, clock: Clock, host: HostProbe | None, db: StateDB, instruments: Instruments | None = None,
    bind_dir: BindDir | None = None,
) -> NodeBase:
    """Create the metrics registry and instruments (unless `instruments`, shared, are given: the
    full virtual nodes', which no HTTP server exposes), and start the container manager."""
    from nodeagent.host.probe import SystemProbe

    registry = CollectorRegistry()
    instruments = instruments or Instruments(registry)
    probe = host or SystemProbe()
    cm = ContainerManager(cfg, probe, driver_for(cfg), db, clock, instruments)
    cm.start()
    recorder = EventRecorder(clock=clock, host=cfg.agent.node_name)
    return NodeBase(registry=registry, instruments=instruments, probe=probe, cm=cm, recorder=recorder,
                    faults=FaultParts(faults_wiring.injector(clock)), bind_dir=bind_dir)


async def build_pods(
    cfg: Config, clock: Clock, base: NodeBase, dra: DRAManager, db: StateDB, running: Running
) -> NodeResources:
    """Build the device and pod managers, restore the pods, release what belongs to pods gone."""
    cm = base.cm
    pods_ref: list[PodManager] = []

    # allocatedResourcesStatus from device plugins only where the release's kubelet writes it
    # (kubelet_pods.go: UpdateAllocatedResourcesStatus under ResourceHealthStatus, on from 1.36)
    health_status = cfg.kubelet.gate("ResourceHealthStatus")

    async def on_health(pod_uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
        if pods_ref and health_status:
            await pods_ref[0].on_resource_health(pod_uid, container, statuses)

    # A flapping device reaches a pod's status at most once per HEALTH_COALESCE seconds (latest state).
    coalesced = HealthCoalescer(on_health, clock, HEALTH_COALESCE)
    running.closers.append(coalesced.close)
    devices = DeviceSubsystem(
        cfg, db, base.instruments, clock,
        on_health_change=coalesced, record=base.recorder.emit, numa_nodes=cm.topology.numa_nodes,
        pod_health_events=False,
        channel_interceptors=base.faults.injector.client_interceptors,
        server_interceptors=[base.faults.injector.server_interceptor()],
        bind_dir=base.bind_dir,
    )
    node = NodeView(cm, devices.manager)
    device_admitter = DeviceAdmitter(devices.manager, on_health, health_status=health_status)
    # The kubelet's resource managers' admit handler: the topology manager over the hint
    # providers in the kubelet's order (CPU, memory, devices).
    resource_admitter = cm.topology_manager([cm.cpu_manager, cm.memory_manager, device_admitter])
    pods = PodManager(
        node_name=cfg.agent.node_name,
        resources=AdmissionResources(node, devices.manager),
        admitters=[resource_admitter],
        cgroups=cm,
        db=db,
        clock=clock,
        instruments=base.instruments,
        recorder=base.recorder,
        starters=[dra, device_admitter],
        node_allocatable=cfg.kubelet.gate("DRANodeAllocatableResources"),
        ensure_secret_pulled=cfg.kubelet.gate("KubeletEnsureSecretPulledImages"),
    )
    pods_ref.append(pods)
    dra.attach_pods(pods)
    restored = await pods.restore()
    # A pod whose record is unreadable may still be bound here: keep its devices, CPUs and claims
    # so that its re-admission reuses them, as the kubelet's checkpoints do, even before its
    # plugin re-registers (release_unreturned drops them if it does not come back).
    unreadable = frozenset(table.unreadable_uids(db, {p.uid for p in pods.all_pods()}))
    active = {p.uid for p in pods.active_pods()} | unreadable
    released = devices.manager.reconcile(active)
    for uid in list(cm.cpu_manager.assignments()):
        if uid not in active:
            cm.cpu_manager.release(uid)
    for uid in list(cm.memory_manager.assignments()):
        if uid not in active:
            cm.memory_manager.release(uid)
    if unreadable:
        logger.warning("pod records unreadable, holdings kept until the first sync pass pods=%s",
                       ",".join(sorted(unreadable)))
    logger.info("restored pods=%d released_device_pods=%d", restored, len(released))
    running.closers.append(pods.close)
    return NodeResources(devices=devices, node=node, device_admitter=device_admitter, pods=pods, active=active,
                         unreadable=unreadable)


async def release_unreturned(base: NodeBase, res: NodeResources, dra: DRAManager) -> list[str]:
    """After the node's first sync pass (API and static pods): release what build_pods kept for
    pods with unreadable records that did not come back. Returns their uids."""
    known = {p.uid for p in res.pods.all_pods()}
    gone = sorted(res.unreadable - known)
    if not gone:
        return []
    res.devices.manager.reconcile(known)
    for uid in gone:
        base.cm.cpu_manager.release(uid)
        base.cm.memory_manager.release(uid)
    await dra.reconcile({p.uid for p in res.pods.active_pods()}, known)
    logger.info("released holdings of unreadable pod records that did not come back pods=%s", ",".join(gone))
    return gone


async def start_devices(res: NodeResources, running: Running) -> None:
    """Start the device manager (kubelet.sock, the plugin clients)."""
    await res.devices.start()
    running.closers.append(lambda: res.devices.stop(grace=1.0))
    running.closers.append(res.device_admitter.close)


def eviction_manager(base: NodeBase, res: NodeResources) -> EvictionManager:
    """The container manager's eviction manager, evicting through the pod manager."""
    return base.cm.eviction_manager(active_pods=res.pods.active_pods, evict=res.pods.evict)


async def start_static_pods(cfg: Config, clock: Clock, base: NodeBase, res: NodeResources, running: Running) -> None:
    """With staticPodPath set, sync the static pods once, then keep watching the folder."""
    if cfg.kubelet.static_pod_path:
        static = StaticPodSource(
            path=Path(cfg.kubelet.static_pod_path),
            manager=res.pods,
            node_name=cfg.agent.node_name,
            clock=clock,
            recorder=base.recorder,
            interval=cfg.kubelet.file_check_frequency,
            watch=InotifyWatch(Path(cfg.kubelet.static_pod_path)),
            unknown_fields=pod_unknown_fields(),
        )
        await static.sync_once()
        running.spawn(static.run(), "static-pods")


def pod_unknown_fields() -> UnknownFields:
    """The paths of a Pod manifest's fields that the API server's Pod schema does not declare."""
    from nodeagent.apiserver.schema.builtin import builtin_definitions
    from nodeagent.apiserver.schema.fields import unknown_fields
    from nodeagent.apiserver.schema.model import Schema

    defs = builtin_definitions()
    pod = Schema(ref="io.k8s.api.core.v1.Pod")
    return lambda doc: unknown_fields(doc, pod, defs)


class AdmissionResources:
    """The node's resources as the admission predicates see them (the kubelet's UpdatePluginResources).

    The devicemanager's sanitizeNodeAllocatable raises a resource's allocatable to the devices
    already allocated, so a pod re-admitted with checkpointed devices fits even before its plugin
    re-registered (allocatable 0 until then). Node status keeps the plain figures (NodeView).
    """

    def __init__(self, node: NodeResourcesSource, devices: DeviceManager) -> None:
        self._node = node
        self._devices = devices

    def node_resources(self) -> PodNodeResources:
        res = self._node.node_resources()
        allocated = {name: n for name, n in self._devices.allocated_counts().items()
                     if n > res.allocatable.get(name, 0)}
        if not allocated:
            return res
        return dataclasses.replace(res, allocatable={**res.allocatable, **allocated})


class DeviceAdmitter:
    """The device manager as the topology manager's hint provider, and each container's first
    allocatedResourcesStatus.

    The device manager reports health *changes* (on_health_change); a pod it has just
    admitted also needs its held devices listed (Healthy) from the start. As a PodStarter it
    hands them to the Running status the pod manager writes after admission (`admit`, for
    callers that admit devices alone, pushes them from a task instead).
    """

    def __init__(self, manager: DeviceManager, on_health: HealthCallback, *, health_status: bool = True) -> None:
        """`health_status`: the ResourceHealthStatus gate (off: no allocatedResourcesStatus at all)."""
        self._health_status = health_status
        self._manager = manager
        self._on_health = on_health
        self._tasks: set[asyncio.Task[None]] = set()
        # pod uid -> the containers whose PreStartContainer succeeded (started: not called again)
        self._pre_started: dict[str, set[str]] = {}

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        result = await self._manager.admit(pod, active)
        if result.admit:
            self._push_initial(pod.uid)
        return result

    # The device manager as the topology manager's hint provider (pods/hints.HintProvider).

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        return self._manager.get_topology_hints(pod, container)

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        return self._manager.get_pod_topology_hints(pod)

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        await self._manager.allocate(pod, container, affinity)

    # A PodStarter too: the held devices go into the Running status the starters' results make
    # (the topology manager admits through `allocate`, so there is no admit to push them from).

    # PreStartContainer belongs here, not to admission: the kubelet's GetDeviceRunContainerOptions calls
    # it as each container is about to start, init containers first, after admission allocated every
    # container. A failure is the container's start failing (kuberuntime's startContainer): it waits
    # with CreateContainerConfigError and the error as its message, the Warning "Failed" "Error: ..."
    # is recorded about it, and the start is tried again later (the kubelet at its next sync of the
    # pod). As SyncPod does, a failed init container stops the start there (a sidecar's is skipped),
    # a failed regular container does not stop the others; a container that started is not called
    # again at the next attempt.

    async def prepare(self, pod: Pod) -> StartResult:
        started = self._pre_started.setdefault(pod.uid, set())
        failed: dict[str, tuple[str, str]] = {}
        inits = len(pod.init_containers)
        for i, container in enumerate(pod.all_containers()):
            if container.name in started:
                continue
            try:
                await self._manager.pre_start_container(pod.uid, container.name)
            except NodeAgentError as err:
                failed[container.name] = (st.CREATE_CONTAINER_CONFIG_ERROR,
                                          f"device plugin PreStartContainer rpc failed with err: {err}")
                if i < inits and not container.is_sidecar:
                    break  # an init container failed: nothing after it starts
                continue
            started.add(container.name)
        ready = self._ready(pod)
        if failed:
            # the held devices' health is on the container statuses whether their containers run or
            # wait (the kubelet's UpdateAllocatedResourcesStatus at every status it generates)
            first = next(iter(failed.values()))[1]
            return StartResult(False, reason=st.FAILED_TO_CREATE_CONTAINER, message=first, failed_containers=failed,
                               container_resource_status=ready.container_resource_status)
        return ready

    def prepare_now(self, pod: Pod) -> StartResult | None:
        if any(self._manager.needs_pre_start(pod.uid, c.name) for c in pod.all_containers()):
            return None
        return self._ready(pod)

    def _ready(self, pod: Pod) -> StartResult:
        if not self._health_status:
            return StartResult(True)
        return StartResult(True, container_resource_status=self._manager.pod_resource_statuses(pod.uid))

    async def unprepare(self, pod: Pod) -> None:
        self._pre_started.pop(pod.uid, None)

    def forget(self, pod: Pod) -> None:
        self._pre_started.pop(pod.uid, None)

    def _push_initial(self, uid: str) -> None:
        if not self._health_status:
            return
        statuses = self._manager.pod_resource_statuses(uid)
        if statuses:
            t = asyncio.ensure_future(self._initial_status(uid, statuses))
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

    async def remove(self, pod: Pod) -> None:
        await self._manager.remove(pod)

    async def _initial_status(self, uid: str, statuses: Mapping[str, tuple[ResourceStatus, ...]]) -> None:
        for container, per_container in sorted(statuses.items()):
            await self._on_health(uid, container, per_container)

    async def close(self) -> None:
        await cancel_and_wait(list(self._tasks))
