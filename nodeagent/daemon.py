"""One lifecycle for the whole daemon: build, start in dependency order, stop in reverse.

Start: lock the root dir, check every socket path, open the state database, start the
container manager, restore pods and let the resource managers drop what belongs to pods
gone while we were down, bind every socket (kubelet.sock, pod-resources, admin, HTTP),
start the loops (pods, eviction, static pods, plugins), apply the example manifests,
and only then tell systemd READY=1 (examples that request extended resources follow
in the background once their device plugin reports devices, see _apply_examples).
Stop (SIGTERM/SIGINT set one event): health goes NOT_SERVING, servers stop, loops are
cancelled, plugins stopped, the database closed; a hard timeout bounds the whole shutdown.

`serve(cfg, ...)` takes optional ready/stop events and seams so tests can run the whole
daemon in-process; `main(cfg, environ)` is what `nodeagent run` calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent import config as config_mod
from nodeagent.admin import service as admin_service
from nodeagent.admin.backend import NodeBackend, parse_manifest
from nodeagent.clock import Clock, RealClock
from nodeagent.cm.cgroups import driver_for
from nodeagent.cm.manager import ContainerManager
from nodeagent.config import Config
from nodeagent.controlplane.classic import ClassicRunner
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.devices.manager import DeviceManager
from nodeagent.devices.ports import HealthCallback
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.dra.manager import DRAManager
from nodeagent.dra.registry import PLUGIN_TYPE as DRA_PLUGIN_TYPE
from nodeagent.dra.registry import DRARegistry
from nodeagent.errors import NodeAgentError
from nodeagent.host.model import HostProbe
from nodeagent.lock import RootLock
from nodeagent.metrics import collectors
from nodeagent.metrics.http import NodeHTTPServer
from nodeagent.metrics.instruments import Instruments
from nodeagent.metrics.summary import SummaryBuilder
from nodeagent.node import DeviceHealthRouter, NodeView, StoreClaims
from nodeagent.nodesync import NodeSync
from nodeagent.objects.pod import Pod, ResourceStatus
from nodeagent.objects.pod_manifest import is_extended, pod_from_manifest
from nodeagent.objects.resource import hooks as resource_hooks
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.podresources import service as podresources_service
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import AdmitResult
from nodeagent.pods.static import StaticPodSource
from nodeagent.rpc.interceptors import MetricsInterceptor, rate_limit
from nodeagent.rpc.server import UnixServer, check_socket_path
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.supervisor import PluginSupervisor
from nodeagent.systemd import NOTIFY_ENV, Notifier, watchdog_interval

logger = logging.getLogger(__name__)


@dataclass
class _Running:
    """What has been started so far, so a failed start stops exactly that."""

    servers: list[UnixServer] = field(default_factory=list)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


def _closer(fn: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        fn()

    return close


def _self_usage() -> tuple[float, int]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


async def serve(
    cfg: Config,
    *,
    environ: Mapping[str, str],
    clock: Clock | None = None,
    host: HostProbe | None = None,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    clock = clock or RealClock()
    stop = stop or asyncio.Event()
    notifier = Notifier(environ.get("NOTIFY_SOCKET"))
    for path, what in (
        (cfg.kubelet_socket, "device plugin registration socket"),
        (cfg.pod_resources_socket, "pod-resources socket"),
        (cfg.agent.admin_socket, "admin socket"),
    ):
        check_socket_path(path, what)
    lock = RootLock(cfg.agent.root_dir)
    lock.acquire()
    running = _Running()
    db: StateDB | None = None
    try:
        notifier.status("starting")
        db = StateDB(cfg.state_db)
        await _start(cfg, environ, clock, host, db, running, notifier)
        notifier.ready(status=f"serving {len(running.servers)} sockets")
        logger.info("ready node=%s root=%s", cfg.agent.node_name, cfg.agent.root_dir)
        if ready is not None:
            ready.set()
        await stop.wait()
        notifier.stopping(status="stopping")
    finally:
        try:
            await asyncio.wait_for(_shutdown(running), cfg.agent.shutdown_timeout)
        except TimeoutError:
            logger.error("shutdown timed out after %ss", cfg.agent.shutdown_timeout)
        if db is not None:
            db.close()
        lock.release()


async def _start(
    cfg: Config,
    environ: Mapping[str, str],
    clock: Clock,
    host: HostProbe | None,
    db: StateDB,
    running: _Running,
    notifier: Notifier,
) -> None:
    from nodeagent.host.probe import SystemProbe

    registry = CollectorRegistry()
    instruments = Instruments(registry)
    probe = host or SystemProbe()
    cm = ContainerManager(cfg, probe, driver_for(cfg), db, clock, instruments)
    cm.start()
    recorder = EventRecorder(clock=clock, host=cfg.agent.node_name)
    store = ObjectStore(cfg.objects_db, builtin_kinds().with_hooks(resource_hooks(cfg.kubelet.feature_gates)), clock)
    running.closers.append(_closer(store.close))
    dra_registry = DRARegistry(clock, instruments, health_enabled=cfg.kubelet.gate("ResourceHealthStatus"))
    running.closers.append(dra_registry.close)
    dra = DRAManager(dra_registry, StoreClaims(store), db, clock, metrics_registry=registry,
                     health_gate=cfg.kubelet.gate("ResourceHealthStatus"))

    pods_ref: list[PodManager] = []

    async def on_health(pod_uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
        if pods_ref:
            await pods_ref[0].on_resource_health(pod_uid, container, statuses)

    def cpu_numa(pod_uid: str, container: str) -> frozenset[int] | None:
        cpus = set(cm.cpu_manager.container_cpus(pod_uid, container))
        if not cpus:
            return None
        return frozenset(n.id for n in cm.numa_nodes() if cpus & set(n.cpus))

    devices = DeviceSubsystem(
        cfg, db, instruments, clock,
        on_health_change=on_health, record=recorder.emit, cpu_numa=cpu_numa, pod_health_events=False,
    )
    node = NodeView(cm, devices.manager)
    device_admitter = _DeviceAdmitter(devices.manager, on_health)
    pods = PodManager(
        node_name=cfg.agent.node_name,
        resources=node,
        admitters=[cm.cpu_manager, device_admitter],
        cgroups=cm,
        db=db,
        clock=clock,
        instruments=instruments,
        recorder=recorder,
        starters=[dra],
    )
    pods_ref.append(pods)
    dra.attach_pods(pods)
    restored = await pods.restore()
    active = {p.uid for p in pods.active_pods()}
    released = devices.manager.reconcile(active)
    for uid in list(cm.cpu_manager.assignments()):
        if uid not in active:
            cm.cpu_manager.release(uid)
    logger.info("restored pods=%d released_device_pods=%d", restored, len(released))
    running.closers.append(pods.close)
    await dra.reconcile(active, {p.uid for p in pods.all_pods()})
    await dra.start()
    running.closers.append(dra.stop)

    async def on_driver(driver: str, registered: bool) -> None:
        if registered:
            await pods.retry_pending()

    dra_registry.on_driver(on_driver)

    await devices.start()
    running.closers.append(lambda: devices.stop(grace=1.0))
    running.closers.append(device_admitter.close)

    mode = cfg.agent.socket_mode
    pr_server = UnixServer(
        cfg.pod_resources_socket,
        podresources_service.services(
            pods, devices.manager, cm.cpu_manager, cm.memory_manager, dra,
            instruments=instruments, gates=cfg.kubelet.gate,
        ),
        mode=mode,
        interceptors=[
            MetricsInterceptor(instruments),
            rate_limit(cfg.agent.pod_resources.qps, cfg.agent.pod_resources.burst, clock.monotonic),
        ],
        what="pod-resources socket",
    )
    backend = NodeBackend(
        node_name=cfg.agent.node_name,
        labels=cfg.agent.node_profile.labels,
        pods=pods,
        recorder=recorder,
        resources=node.node_resources,
        conditions=cm.conditions,
        devices=DeviceHealthRouter(devices.manager, dra_registry),
        clock=clock,
        claims_describe=dra.describe_lines,
        gates=cfg.kubelet.feature_gates,
    )
    sync = NodeSync(
        node_name=cfg.agent.node_name,
        store=store,
        pods=pods,
        node_object=backend.node,
        recorder=recorder,
        clock=clock,
        # Without the control plane's scheduler, the node takes every unscheduled pod itself.
        bind_unscheduled=not cfg.agent.control_plane.enabled,
    )
    backend.attach(store, sync)
    await sync.start()
    running.closers.append(_closer(sync.close))
    if cfg.agent.control_plane.enabled:
        classic = ClassicRunner(cfg, store, clock, registry)
        await classic.start()
        running.closers.append(classic.stop)
        control_plane = ControlPlane(cfg, store, clock, registry, classic=classic.scheduling)
        await control_plane.start()
        running.closers.append(control_plane.stop)
    admin_server = UnixServer(
        cfg.agent.admin_socket,
        admin_service.services(backend),
        mode=mode,
        interceptors=[MetricsInterceptor(instruments)],
        what="admin socket",
    )
    for server in (pr_server, admin_server):
        await server.start()
        running.servers.append(server)

    eviction = cm.eviction_manager(active_pods=pods.active_pods, evict=pods.evict)
    collectors.register_collectors(registry, lambda: node.metrics_snapshot(pods))
    collectors.register_device_collector(registry, lambda: _device_figures(devices.manager))
    summary = SummaryBuilder(cfg.agent.node_name, node.stats_provider(pods, probe), _self_usage, clock)
    http = NodeHTTPServer(
        cfg.agent.metrics_bind_address,
        registry,
        health=lambda: all(s.serving for s in running.servers),
        configz=config_mod.effective(cfg),
        summary=summary.summary,
    )
    await http.start()
    running.closers.append(http.stop)

    def task(coro: Awaitable[Any], name: str) -> None:
        running.tasks.append(asyncio.ensure_future(coro))
        running.tasks[-1].set_name(name)

    # DRA drivers register through plugins_registry once every socket of ours serves.
    watcher = PluginWatcher(cfg.plugins_registry_dir, {DRA_PLUGIN_TYPE: dra_registry}, clock, registry=registry)
    await watcher.start()
    running.closers.append(watcher.stop)
    task(pods.run(), "pods")
    task(sync.run(), "node-sync")
    task(_retry_on_claim_changes(store, pods), "dra-claims")
    task(eviction.run(), "eviction")
    if cfg.kubelet.static_pod_path:
        static = StaticPodSource(
            path=Path(cfg.kubelet.static_pod_path),
            manager=pods,
            node_name=cfg.agent.node_name,
            clock=clock,
            recorder=recorder,
            interval=cfg.kubelet.file_check_frequency,
        )
        await static.sync_once()
        task(static.run(), "static-pods")
    interval = watchdog_interval(environ.get("WATCHDOG_USEC"), environ.get("WATCHDOG_PID"))
    if interval:
        watchdog_stop = asyncio.Event()
        task(notifier.watchdog_loop(interval, clock, watchdog_stop), "watchdog")

    plugin_env = {k: v for k, v in environ.items() if k not in NOTIFY_ENV}
    plugin_env.update(
        NODEAGENT_ROOT_DIR=str(cfg.agent.root_dir),
        NODEAGENT_DEVICE_PLUGINS_DIR=str(cfg.device_plugins_dir),
        NODEAGENT_KUBELET_SOCKET=str(cfg.kubelet_socket),
        NODEAGENT_ADMIN_SOCKET=str(cfg.agent.admin_socket),
    )
    supervisor = PluginSupervisor(
        cfg.agent.plugins, env=plugin_env, clock=clock, bin_dir=Path(sys.executable).parent
    )
    supervisor.start()
    running.closers.append(supervisor.stop)
    # Closers run in reverse: stop watching the plugins before they are stopped, so a clean
    # shutdown does not mark held devices Unknown in pod status (devices.stop repeats it harmlessly).
    running.closers.append(devices.manager.stop)

    if cfg.agent.examples_dir:
        later = await _apply_examples(Path(cfg.agent.examples_dir), backend, clock)
        if later:
            task(_apply_when_devices(later, backend, devices.manager, clock), "examples-with-devices")


async def _retry_on_claim_changes(store: ObjectStore, pods: PodManager) -> None:
    """Pods waiting for their claims (allocated, reserved) are retried as soon as a claim changes."""
    while True:
        watch = store.watch({"ResourceClaim"})
        try:
            async for _ in watch:
                while watch.get_nowait() is not None:
                    pass  # one retry covers a burst of changes
                if pods.pending_uids():
                    await pods.retry_pending()
        finally:
            watch.close()


class _DeviceAdmitter:
    """The device manager as the pod manager's admitter, plus each container's first allocatedResourcesStatus.

    The device manager reports health *changes* (on_health_change); a pod it has just
    admitted also needs its held devices listed (Healthy) from the start. That is pushed
    from a task, since the pod manager holds its lock while admitting and records the
    pod only after every admitter said yes.
    """

    def __init__(self, manager: DeviceManager, on_health: HealthCallback) -> None:
        self._manager = manager
        self._on_health = on_health
        self._tasks: set[asyncio.Task[None]] = set()

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        result = await self._manager.admit(pod, active)
        statuses = self._manager.pod_resource_statuses(pod.uid) if result.admit else {}
        if statuses:
            t = asyncio.ensure_future(self._initial_status(pod.uid, statuses))
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)
        return result

    async def remove(self, pod: Pod) -> None:
        await self._manager.remove(pod)

    async def _initial_status(self, uid: str, statuses: Mapping[str, tuple[ResourceStatus, ...]]) -> None:
        for container, per_container in sorted(statuses.items()):
            await self._on_health(uid, container, per_container)

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await t


def _device_figures(manager: DeviceManager) -> list[collectors.DeviceFigures]:
    return [
        collectors.DeviceFigures(s.resource, healthy=s.healthy, unhealthy=s.unhealthy,
                                 allocated=s.allocated, registered=s.registered)
        for s in manager.snapshot()
    ]


# How long the examples that request extended resources wait for their device plugin.
EXAMPLE_DEVICE_WAIT = 10.0


def _extended_requests(text: str, clock: Clock) -> set[str]:
    """Extended resources (example.com/gpu) requested by the pods of one manifest; {} if unparsable."""
    try:
        pods = [pod_from_manifest(doc, default_namespace="default", clock=clock) for doc in parse_manifest(text)]
    except NodeAgentError:
        return set()  # backend.apply reports the error
    return {r for pod in pods for c in pod.all_containers() for r in c.limits if is_extended(r)}


async def _apply_examples(folder: Path, backend: NodeBackend, clock: Clock) -> list[tuple[Path, set[str]]]:
    """Apply the demo's example manifests; a bad one is logged, never fatal.

    Returns the manifests that request extended resources, not applied yet: a plugin the
    daemon has just spawned registers a moment after start, and until then the pod would
    be refused (OutOf<resource>) or, with the resource not yet known to the node, admitted
    without devices (the kubelet ignores extended resources the node does not advertise).
    """
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    except OSError as err:
        logger.warning("examples unreadable dir=%s err=%s", folder, err.strerror)
        return []
    later = []
    for path in files:
        try:
            text = path.read_text()
        except OSError as err:
            logger.warning("example unreadable file=%s err=%s", path.name, err.strerror)
            continue
        extended = _extended_requests(text, clock)
        if extended:
            later.append((path, extended))
            continue
        await _apply_example(path, text, backend)
    return later


async def _apply_example(path: Path, text: str, backend: NodeBackend) -> None:
    try:
        for applied in await backend.apply(text, "default"):
            logger.info("example applied file=%s object=%s/%s/%s action=%s",
                        path.name, applied.kind, applied.namespace, applied.name, applied.action)
    except NodeAgentError as err:
        logger.warning("example rejected file=%s err=%s", path.name, err)


async def _apply_when_devices(
    later: list[tuple[Path, set[str]]], backend: NodeBackend, devices: DeviceManager, clock: Clock
) -> None:
    """Apply each deferred example once every extended resource it requests has allocatable devices.

    The simplest correct ordering for the demo: rather than retrying refused pods (the
    kubelet never re-admits a refused pod), wait for the plugin's first ListAndWatch
    snapshot, polled every 0.1 s for at most EXAMPLE_DEVICE_WAIT seconds from start. A
    plugin that never comes leaves the manifest applied at the deadline, so the refusal
    is visible. Runs after READY; never fatal.
    """
    deadline = clock.monotonic() + EXAMPLE_DEVICE_WAIT
    for path, needed in later:
        while not all(devices.extended_resources()[1].get(r, 0) > 0 for r in needed):
            if clock.monotonic() >= deadline:
                logger.warning("example applied before its devices appeared file=%s resources=%s waited=%gs",
                               path.name, ",".join(sorted(needed)), EXAMPLE_DEVICE_WAIT)
                break
            await clock.sleep(0.1)
        try:
            text = path.read_text()
        except OSError as err:
            logger.warning("example unreadable file=%s err=%s", path.name, err.strerror)
            continue
        await _apply_example(path, text, backend)


async def _shutdown(running: _Running) -> None:
    for server in reversed(running.servers):
        with contextlib.suppress(Exception):
            await server.stop(grace=1.0)
    for t in running.tasks:
        t.cancel()
    for t in running.tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t
    for close in reversed(running.closers):
        try:
            await close()
        except Exception:
            logger.exception("error while stopping")


def main(cfg: Config, environ: Mapping[str, str]) -> int:
    """Run until SIGTERM/SIGINT; StartupError and ConfigError propagate to the CLI (exit 2)."""

    async def _main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve(cfg, environ=environ, stop=stop)

    asyncio.run(_main())
    logger.info("stopped pid=%d", os.getpid())
    return 0
