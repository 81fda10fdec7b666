"""Wiring of one node: the kubelet's side, built and started as a unit that can exist N times.

Exists so the daemon's own node and the full virtual nodes of `nodes:` (wiring/full_nodes.py)
are built by the same code: each node gets its own settings (name, root dir and sockets,
state database, API client) and records what it starts in the `Running` it is given.
Every node serves its own kubelet endpoint (a full virtual node on a port of its own, picked
free). The daemon's own node (`local=True`) also carries what exists once per process: the
control plane and the API server, the admin socket and metrics port, eviction, static pods,
the systemd watchdog, the plugin supervisor, the examples and the fault timeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.config import Config
from nodeagent.host.model import HostProbe
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.claims import NodeClaims
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.rpc.server import BindDir
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.systemd import Notifier, watchdog_interval
from nodeagent.util.clock import Clock
from nodeagent.util.fswatch import InotifyHub
from nodeagent.util.ticker import Ticker
from nodeagent.wiring import (
    control_plane,
    dra,
    examples,
    faults,
    kubelet_files,
    kubelet_server,
    node_resources,
    plugins,
    servers,
    sysfs_view,
)
from nodeagent.wiring.running import Running

# A full virtual node's passes over its pod statuses and Node (node sync) and over its pods for the
# Pods API's watchers: a tenth of the local node's rate, so a thousand idle nodes cost the loop
# 4000 wake-ups a second, not 40000.
VIRTUAL_SYNC_INTERVAL = 0.5


@dataclass(frozen=True)
class NodeSettings:
    """What makes one node itself: its config (name, root dir and sockets), state, API client."""

    cfg: Config
    db: StateDB
    store: ObjectStore | None  # the store of this process (None: the node joined a cluster)
    api: NodeAPI
    claims: NodeClaims
    host: HostProbe | None = None
    local: bool = True  # the daemon's own node (with the process-wide parts), not a virtual one
    # ResourceClaim changes (one item per burst) when shared between nodes; None: the node's own watch
    claim_changes: Callable[[], AsyncIterator[None]] | None = None
    # One inotify instance for the directory watches of many nodes (None: each watch its own)
    inotify: InotifyHub | None = None
    # Counters and histograms shared by many nodes whose metrics nothing serves (None: the node's own)
    instruments: Instruments | None = None
    # One private directory to bind the sockets of many nodes in (None: a directory per socket)
    bind_dir: BindDir | None = None
    # One ticker for the periodic checks of many nodes (None: each loop its own timer)
    ticker: Ticker | None = None
    # The daemon's embedded API server, for a full virtual node's kubelet endpoint reviews (None: the node's API)
    api_server: Any = None
    # Where a full virtual node leaves its kubelet endpoint's TLS setup and serving, run once every node
    # started (None: served during the node's start, as the daemon's own node does)
    endpoints_later: list[Callable[[], Awaitable[None]]] | None = None


async def start_node(
    node: NodeSettings,
    environ: Mapping[str, str],
    clock: Clock,
    running: Running,
    notifier: Notifier | None = None,
) -> None:
    """Build and start one node, recording everything started in `running`.

    One sequence for every node: the steps marked process-wide run for the daemon's own node
    (`node.local`) only, at their place in it, so the two kinds of node cannot drift apart."""
    cfg, db, store, api, claims = node.cfg, node.db, node.store, node.api, node.claims
    base = node_resources.build_base(cfg, clock, node.host, db, node.instruments, node.bind_dir)
    dra_parts = dra.build(cfg, clock, base.instruments, base.registry, api, claims, db, running,
                          channel_interceptors=base.faults.injector.client_interceptors)
    res = await node_resources.build_pods(cfg, clock, base, dra_parts.manager, db, running)
    # The Pods API serves from here on, FAILED_PRECONDITION until the node sync's first pass.
    pods_synced = asyncio.Event()
    pods_api = servers.pods_api_server(cfg, clock, base, res.pods, pods_synced.is_set,
                                       interval=None if node.local else VIRTUAL_SYNC_INTERVAL,
                                       ticker=node.ticker)
    if pods_api is not None:
        await servers.start_sockets((pods_api[0],), running)
    await dra.start(dra_parts, res.pods, res.active, running)
    await node_resources.start_devices(res, running)
    sysfs_view.start(cfg, base.cm)
    kubelet_files.start(cfg, clock, kubelet_files.state_files(cfg, base.cm.cpu_manager, base.cm.memory_manager,
                                                            res.devices.manager, dra_parts.manager),
                        running, node.ticker)

    pr_server = servers.pod_resources_server(cfg, clock, base, res, dra_parts.manager)
    backend = servers.admin_backend(cfg, clock, base, res, dra_parts)
    # The kubelet endpoint, every node its own: bound before the node registers, so the Node names its port
    # from the start. The metrics port's handlers behind it; only the daemon's own node serves that port too.
    http, summary = servers.build_http(cfg, clock, base, res, running)
    endpoint = await kubelet_server.start(cfg, clock, http=http, summary=summary, pods=res.pods,
                                          recorder=base.recorder, devices=res.devices.manager,
                                          dra=dra_parts.manager, api=api, probe=base.probe,
                                          embedded=store is not None, running=running,
                                          later=node.endpoints_later)
    if endpoint is not None:
        backend.kubelet_port = lambda: endpoint.server.port
        if node.api_server is not None:  # a full virtual node: the daemon's API server answers its reviews
            endpoint.use_api_server(node.api_server)
    # Before the node registers: the API server gives the store its field manager (make_api_server).
    made_api_server = control_plane.make_api_server(cfg, clock, store) if node.local and store is not None else None
    sync = await control_plane.start(cfg, clock, base.registry, store, api, res.pods, backend, base.recorder,
                                     running, with_control_plane=node.local,
                                     sync_interval=None if node.local else VIRTUAL_SYNC_INTERVAL,
                                     ticker=node.ticker)
    claims.attach(sync)
    pods_synced.set()

    # Process-wide: the API server (embedded store), restarts on demand and the admin socket.
    sockets = [pr_server]
    if node.local:
        if store is not None:
            api_server = await control_plane.serve_api_server(made_api_server, running)
            if api_server is not None:
                running.identity_kubeconfig = api_server.write_identity_kubeconfig
                running.api_server = api_server
            if api_server is not None and endpoint is not None:
                endpoint.use_api_server(api_server)
        faults.wire_restart(base.faults, res.devices, dra_parts)
        sockets.append(servers.admin_server(cfg, backend, base.instruments, base.faults.services()))
    await servers.start_sockets(tuple(sockets), running)
    eviction = None
    if node.local:  # process-wide: eviction, and the metrics port serves
        eviction = node_resources.eviction_manager(base, res)
        await servers.start_http(http, running)

    # DRA drivers register through plugins_registry once every socket of ours serves.
    base.faults.watcher = await dra.start_plugin_watcher(cfg, clock, base.registry, dra_parts, running,
                                                         base.faults.injector, hub=node.inotify, ticker=node.ticker)
    # The daemon's own node names its tasks plainly; a virtual node's carry its name.
    suffix = "" if node.local else f" {cfg.agent.node_name}"
    running.spawn(res.pods.run(), f"pods{suffix}")
    running.spawn(sync.run(), f"node-sync{suffix}")
    if pods_api is not None:
        running.spawn(pods_api[1].run(), f"pods-api{suffix}")
    changes = node.claim_changes() if node.claim_changes else control_plane.claim_changes(api, store)
    running.spawn(dra.retry_on_claim_changes(changes, res.pods), f"dra-claims{suffix}")
    if eviction is not None:  # process-wide: eviction and static pods
        running.spawn(eviction.run(), "eviction")
        await node_resources.start_static_pods(cfg, clock, base, res, running)
    await node_resources.release_unreturned(base, res, dra_parts.manager)
    if node.local:  # process-wide: the systemd watchdog
        interval = watchdog_interval(environ.get("WATCHDOG_USEC"), environ.get("WATCHDOG_PID"))
        if interval and notifier is not None:
            watchdog_stop = asyncio.Event()
            running.spawn(notifier.watchdog_loop(interval, clock, watchdog_stop), "watchdog")

    plugins.start_supervisor(cfg, environ, clock, running)
    # Closers run in reverse: stop watching the plugins before they are stopped, so a clean
    # shutdown does not mark held devices Unknown in pod status (devices.stop repeats it harmlessly).
    running.closers.append(res.devices.manager.stop)

    if node.local:  # process-wide: the examples and the fault timeline
        await examples.start(cfg, clock, backend, res.devices.manager, running)
        faults.start_timeline(cfg, clock, base.faults, running)
