"""One lifecycle for the whole daemon: build, start in dependency order, stop in reverse.

Start: lock what the daemon owns (root dir, state dir, admin socket: nodeagent.util.lock), check
every socket path, open the state database and the object store and refuse state one of them
lost (state/marker.py; `--reset-state` moves both aside first), start the container manager, restore pods
and let the resource managers drop what belongs to pods gone while we were down, bind
every socket (kubelet.sock, pod-resources, admin, HTTP), start the loops (pods, eviction,
static pods, plugins), apply the example manifests, and only then tell systemd READY=1
(examples that request extended resources follow in the background once their device
plugin reports devices, see wiring/examples.py); then start what no client relies on at
READY=1 (Running.after_ready: the embedded scheduler and controllers, wiring/control_plane.py)
and set `ready`.
Stop (SIGTERM/SIGINT set one event): health goes NOT_SERVING, servers stop, loops are
cancelled, plugins stopped, the database closed; a hard timeout bounds the whole shutdown.

How each area is built lives in nodeagent.wiring (one module per area); this module
only decides the order, so the start and stop sequence reads in one place.
`serve(cfg, ...)` takes optional ready/stop events and seams so tests can run the whole
daemon in-process; `main(cfg, environ)` is what `nodeagent run` calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry

from nodeagent import hardening
from nodeagent.config import Config
from nodeagent.host.address import resolve_node_ips
from nodeagent.host.model import HostProbe
from nodeagent.rpc.server import check_socket_path
from nodeagent.state import marker as state_marker
from nodeagent.state.db import StateDB
from nodeagent.state.walcheck import check_wal
from nodeagent.systemd import Notifier
from nodeagent.util.clock import Clock, RealClock
from nodeagent.util.lock import DaemonLocks, owned_places
from nodeagent.wiring import control_plane, full_nodes
from nodeagent.wiring import node as node_wiring
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
        for path in (cfg.state_db, cfg.objects_db):  # before SQLite opens and "recovers" a WAL cut short
            check_wal(path)
        db = StateDB(cfg.state_db)
        await _start(cfg, environ, clock, host, db, running, notifier)
        # the process's CPU seconds so far: the restart-to-ready figure (issue 25) as systemctl status shows
        # it; wall time varies with the machine's load, this hardly does (bench/restart.py reads it here)
        cpu = time.process_time()
        notifier.ready(status=f"serving {len(running.servers)} sockets; started in {cpu:.2f} CPU-s")
        logger.info("ready node=%s root=%s cpu=%.2fs", cfg.agent.node_name, cfg.agent.root_dir, cpu)
        for step in running.after_ready:  # the embedded control plane's loops (wiring/control_plane.py)
            await step()
        if ready is not None:
            ready.set()
        await stop.wait()
        notifier.stopping(status="stopping")
    finally:
        try:
            await asyncio.wait_for(running.stop(), cfg.agent.shutdown_timeout)
        except TimeoutError:
            logger.error("shutdown timed out after %ss while %s", cfg.agent.shutdown_timeout, running.waiting_for())
            running.abort()
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
    if not cfg.agent.node_ips:  # found once (host/address.py); every node of this process shares it
        from nodeagent.host.probe import SystemProbe

        ips = resolve_node_ips((), host or SystemProbe())
        cfg = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, node_ips=ips))
    if cfg.agent.control_plane.kubernetes is not None:
        # controlPlane.kubernetes: etcd, kube-apiserver, kube-scheduler and kube-controller-manager first;
        # from here on the nodes join it as any cluster (cluster.kubeconfig, no store of this process)
        notifier.status("starting the kubernetes control plane")
        # imported here: the supervisor, PKI and bootstrap of the real components are of no use to the
        # embedded default, whose restart to ready would pay for them (issue 25)
        from nodeagent.wiring import real_control_plane

        cfg = await real_control_plane.start(cfg, environ, clock, running)
    # A node that joins a cluster (cluster.kubeconfig) has no object store of its own.
    store = None if cfg.agent.cluster.kubeconfig else control_plane.open_store(cfg, clock, running)
    if store is not None:
        # Before anything reads either database: refuse state one of them lost (StateDamaged, exit 2).
        state_marker.check_and_advance(db, store, cfg.state_db, cfg.objects_db)
    if not cfg.agent.node.enabled and store is None:  # virtual nodes alone, joining a cluster
        await _start_virtual_nodes(cfg, clock, running)
        return
    if not cfg.agent.node.enabled:  # a control plane alone: no node, no node-local sockets
        assert store is not None
        await control_plane.start_api_server(cfg, clock, store, running)
        running.after_ready.append(lambda: control_plane.start_control_plane(cfg, clock, CollectorRegistry(), store,
                                                                            running))
        return
    api = control_plane.node_api(cfg, store, running)
    claims = control_plane.claim_source(api)
    local = node_wiring.NodeSettings(cfg=cfg, db=db, store=store, api=api, claims=claims, host=host)
    await node_wiring.start_node(local, environ, clock, running, notifier)
    await full_nodes.start(cfg, environ, clock, host, store, running)  # NodeAgentConfiguration.nodes
    await _start_virtual_nodes(cfg, clock, running)  # virtualNodes served over the API (cluster mode)


async def _start_virtual_nodes(cfg: Config, clock: Clock, running: Running) -> None:
    """virtualNodes served over a cluster's API (wiring.virtual_nodes), imported only when some are
    configured: their controller brings the allocator and the claim conversions, which no other part of
    a joining node loads, into every start (issue 25: restart to ready)."""
    if cfg.agent.cluster.kubeconfig is None or not cfg.agent.virtual_nodes:
        return
    from nodeagent.wiring import virtual_nodes

    await virtual_nodes.start(cfg, clock, running)


def main(cfg: Config, environ: Mapping[str, str], *, reset_state: bool = False,
         on_ready: Callable[[], None] | None = None) -> int:
    """Run until SIGTERM/SIGINT; StartupError and ConfigError propagate to the CLI (exit 2).

    `reset_state` moves state.db and objects.db aside (timestamp suffix) before opening them.
    `on_ready` runs once the daemon said READY=1: the entry point's process-wide settings that wait
    for the start (the garbage collector's, util/gcsettings.py).
    """

    async def _main() -> None:
        stop, ready = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if on_ready is None:
            await serve(cfg, environ=environ, stop=stop, reset_state=reset_state)
            return
        task = asyncio.ensure_future(serve(cfg, environ=environ, ready=ready, stop=stop, reset_state=reset_state))
        waiter = asyncio.ensure_future(ready.wait())
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
        if ready.is_set():
            on_ready()
        waiter.cancel()
        await task

    asyncio.run(_main())
    logger.info("stopped pid=%d", os.getpid())
    return 0
