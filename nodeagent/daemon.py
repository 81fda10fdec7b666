"""One lifecycle for the whole daemon: build, start in dependency order, stop in reverse.

Start: lock what the daemon owns (root dir, state dir, admin socket: nodeagent.lock), check
every socket path, open the state database and the object store and refuse state one of them
lost (state/marker.py; `--reset-state` moves both aside first), start the container manager, restore pods
and let the resource managers drop what belongs to pods gone while we were down, bind
every socket (kubelet.sock, pod-resources, admin, HTTP), start the loops (pods, eviction,
static pods, plugins), apply the example manifests, and only then tell systemd READY=1
(examples that request extended resources follow in the background once their device
plugin reports devices, see wiring/examples.py).
Stop (SIGTERM/SIGINT set one event): health goes NOT_SERVING, servers stop, loops are
cancelled, plugins stopped, the database closed; a hard timeout bounds the whole shutdown.

How each area is built lives in nodeagent.wiring (one module per area); this module
only decides the order, so the start and stop sequence reads in one place.
`serve(cfg, ...)` takes optional ready/stop events and seams so tests can run the whole
daemon in-process; `main(cfg, environ)` is what `nodeagent run` calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from nodeagent import hardening
from nodeagent.clock import Clock, RealClock
from nodeagent.config import Config
from nodeagent.host.model import HostProbe
from nodeagent.lock import DaemonLocks, owned_places
from nodeagent.rpc.server import check_socket_path
from nodeagent.state import marker as state_marker
from nodeagent.state.db import StateDB
from nodeagent.systemd import Notifier, watchdog_interval
from nodeagent.wiring import control_plane, dra, examples, faults, node_resources, plugins, servers
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)


async def serve(
    cfg: Config,
    *,
    environ: Mapping[str, str],
    clock: Clock | None = None,
    host: HostProbe | None = None,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
    reset_state: bool = False,
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
    lock = DaemonLocks(owned_places(cfg.agent.root_dir, cfg.agent.state_dir, cfg.agent.admin_socket))
    lock.acquire()
    running = Running()
    db: StateDB | None = None
    try:
        notifier.status("starting")
        hardening.harden(cfg)  # under the lock: tighten and check only what is ours
        if reset_state:  # under the lock: never move a running daemon's files
            kept = state_marker.move_aside((cfg.state_db, cfg.objects_db), clock.now())
            logger.warning("state reset: starting empty, old files kept aside: %s",
                           ", ".join(map(str, kept)) or "none")
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
    running: Running,
    notifier: Notifier,
) -> None:
    # A node that joins a cluster (cluster.kubeconfig) has no object store of its own.
    store = None if cfg.agent.cluster.kubeconfig else control_plane.open_store(cfg, clock, running)
    if store is not None:
        # Before anything reads either database: refuse state one of them lost (StateDamaged, exit 2).
        state_marker.check_and_advance(db, store, cfg.state_db, cfg.objects_db)
    if not cfg.agent.node.enabled:  # a control plane alone: no node, no node-local sockets
        assert store is not None
        await control_plane.start_control_plane(cfg, clock, CollectorRegistry(), store, running)
        await control_plane.start_api_server(cfg, clock, store, running)
        return
    api = control_plane.node_api(cfg, store, running)
    claims = control_plane.claim_source(api)
    base = node_resources.build_base(cfg, clock, host, db)
    dra_parts = dra.build(cfg, clock, base.instruments, base.registry, api, claims, db, running,
                          channel_interceptors=base.faults.injector.client_interceptors)
    res = await node_resources.build_pods(cfg, clock, base, dra_parts.manager, db, running)
    # The Pods API serves from here on, FAILED_PRECONDITION until the node sync's first pass.
    pods_synced = asyncio.Event()
    pods_api = servers.pods_api_server(cfg, clock, base, res.pods, pods_synced.is_set)
    if pods_api is not None:
        await servers.start_sockets((pods_api[0],), running)
    await dra.start(dra_parts, res.pods, res.active, running)
    await node_resources.start_devices(res, running)

    pr_server = servers.pod_resources_server(cfg, clock, base, res, dra_parts.manager)
    backend = servers.admin_backend(cfg, clock, base, res, dra_parts)
    sync = await control_plane.start(cfg, clock, base.registry, store, api, res.pods, backend, base.recorder,
                                     running)
    claims.attach(sync)
    pods_synced.set()
    if store is not None:
        await control_plane.start_api_server(cfg, clock, store, running)
    faults.wire_restart(base.faults, res.devices, dra_parts)
    admin_server = servers.admin_server(cfg, backend, base.instruments, base.faults.services())
    await servers.start_sockets((pr_server, admin_server), running)

    eviction = node_resources.eviction_manager(base, res)
    await servers.start_http(cfg, clock, base, res, running)

    # DRA drivers register through plugins_registry once every socket of ours serves.
    base.faults.watcher = await dra.start_plugin_watcher(cfg, clock, base.registry, dra_parts, running,
                                                         base.faults.injector)
    running.spawn(res.pods.run(), "pods")
    running.spawn(sync.run(), "node-sync")
    if pods_api is not None:
        running.spawn(pods_api[1].run(), "pods-api")
    running.spawn(dra.retry_on_claim_changes(control_plane.claim_changes(api, store), res.pods), "dra-claims")
    running.spawn(eviction.run(), "eviction")
    await node_resources.start_static_pods(cfg, clock, base, res, running)
    await node_resources.release_unreturned(base, res, dra_parts.manager)
    interval = watchdog_interval(environ.get("WATCHDOG_USEC"), environ.get("WATCHDOG_PID"))
    if interval:
        watchdog_stop = asyncio.Event()
        running.spawn(notifier.watchdog_loop(interval, clock, watchdog_stop), "watchdog")

    plugins.start_supervisor(cfg, environ, clock, running)
    # Closers run in reverse: stop watching the plugins before they are stopped, so a clean
    # shutdown does not mark held devices Unknown in pod status (devices.stop repeats it harmlessly).
    running.closers.append(res.devices.manager.stop)

    await examples.start(cfg, clock, backend, res.devices.manager, running)
    faults.start_timeline(cfg, clock, base.faults, running)


async def _shutdown(running: Running) -> None:
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


def main(cfg: Config, environ: Mapping[str, str], *, reset_state: bool = False) -> int:
    """Run until SIGTERM/SIGINT; StartupError and ConfigError propagate to the CLI (exit 2).

    `reset_state` moves state.db and objects.db aside (timestamp suffix) before opening them.
    """

    async def _main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve(cfg, environ=environ, stop=stop, reset_state=reset_state)

    asyncio.run(_main())
    logger.info("stopped pid=%d", os.getpid())
    return 0
