"""Wiring of the full virtual nodes (NodeAgentConfiguration.nodes): N kubelets in this process.

Exists so one process can be many nodes that are real towards their plugins: each node of
config/nodes.expand gets its own root dir and sockets, its own state (its own buckets of one
shared database, state/scoped.py) and its own Node and Lease, and is started by the same
wiring/node.start_node as the daemon's own node (local=False: no control plane, API server,
admin socket, metrics port, eviction or static pods of its own; its kubelet endpoint on a free
port, its reviews answered by this process's API server or, joined to a cluster, by that
cluster's with the node's credentials). Shared between the nodes, since it is read-only or
process-wide: the host probe with the machine's facts read once (wiring/machine.py), the object
store and its in-process API client with one Pod and one ResourceClaim watch for all nodes
(wiring/shared_watch.py; over the network a client per node, as each node authenticates as
itself), one inotify instance, one private directory the sockets are bound in before each is
renamed into place (rpc/server.BindDir), and the counters and histograms (a virtual node has no
metrics port; its kubelet endpoint's /metrics shows its own scrape-time gauges only). Nodes
start a few at a time so 1000 of them are ready in seconds without one node's slow start
holding the others. Costs per node: bench/nodes.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent import hardening
from nodeagent.config import Config
from nodeagent.config import nodes as nodes_config
from nodeagent.host.model import HostProbe
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.rpc.server import BindDir, check_socket_path
from nodeagent.state.db import StateDB
from nodeagent.state.scoped import ScopedStateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock
from nodeagent.util.fswatch import InotifyHub
from nodeagent.util.ticker import Ticker
from nodeagent.wiring import control_plane, kubelet_server
from nodeagent.wiring import node as node_wiring
from nodeagent.wiring.machine import MachineOnce
from nodeagent.wiring.running import Running, closer
from nodeagent.wiring.shared_watch import SharedClaimChanges, SharedPods, SharedWatchAPI

logger = logging.getLogger(__name__)

CONCURRENCY = 32  # nodes starting at once
STATE_FILE = "nodes.db"  # in the daemon's stateDir: every full virtual node's state, one prefix each


def node_configs(cfg: Config) -> list[Config]:
    """Each full virtual node's Config, its socket paths checked (ConfigError/StartupError naming them)."""
    out = nodes_config.expand(cfg)
    for node in out:
        check_socket_path(node.kubelet_socket, f"device plugin registration socket of node {node.agent.node_name}")
        check_socket_path(node.pod_resources_socket, f"pod-resources socket of node {node.agent.node_name}")
        if node.kubelet.gate("PodsAPI"):
            check_socket_path(node.pods_api_socket, f"pods API socket of node {node.agent.node_name}")
    return out


async def start(
    cfg: Config,
    environ: Mapping[str, str],
    clock: Clock,
    host: HostProbe | None,
    store: ObjectStore | None,
    running: Running,
) -> int:
    """Start every node of `cfg.agent.nodes`; the number started."""
    configs = node_configs(cfg)
    if not configs:
        return 0
    from nodeagent.host.probe import SystemProbe

    probe = MachineOnce(host or SystemProbe())  # one machine: its facts read once for every node
    shared: SharedWatchAPI | None = None
    claim_changes: SharedClaimChanges | None = None
    if cfg.agent.cluster.kubeconfig is None:
        assert store is not None, "no cluster kubeconfig: the store of this process"
        base_api = control_plane.node_api(cfg, store, running)  # stateless over the store: one for all
        assert isinstance(base_api, InProcessAPI)
        pods = SharedPods(store)
        claim_changes = SharedClaimChanges(store)
        running.closers.append(pods.close)
        running.closers.append(claim_changes.close)
        shared = SharedWatchAPI(base_api, pods)
    # One database for all of them, a bucket prefix per node (state/scoped.py).
    db = StateDB(cfg.agent.state_dir / STATE_FILE)
    running.closers.append(closer(db.close))
    # One inotify instance for every node's plugins_registry watch: the kernel allows 128 per user.
    hub = InotifyHub()
    running.closers.append(closer(hub.close))
    # A virtual node serves no metrics (no HTTP server): its counters are shared, not 15 KiB each.
    instruments = Instruments(CollectorRegistry())
    # Every node's sockets are bound in one private directory, then renamed into place.
    bind_dir = BindDir(cfg.agent.state_dir)
    running.closers.append(closer(bind_dir.close))
    # One ticker for every node's periodic checks (status pass, Pods API refresh); it begins once
    # all are up, so nodes that started first do no idle passes while the rest start.
    ticker = Ticker(clock, node_wiring.VIRTUAL_SYNC_INTERVAL)
    running.closers.append(ticker.close)
    gate = asyncio.Semaphore(CONCURRENCY)
    started = clock.monotonic()
    # Each node's kubelet endpoint is bound during its start; its certificate, TLS context and server are
    # made once all nodes are up (OpenSSL: milliseconds each), one after the other.
    endpoints_later: list[Callable[[], Awaitable[None]]] = []

    async def one(node_cfg: Config, node_running: Running) -> None:
        async with gate:
            await _start_one(node_cfg, environ, clock, probe, db, store, shared, claim_changes, hub,
                             instruments, bind_dir, ticker, node_running, running.api_server, endpoints_later)

    # Each node records what it starts in a Running of its own; at shutdown they stop side by side.
    nodes = [Running() for _ in configs]

    async def stop_nodes() -> None:
        await asyncio.gather(*(n.stop() for n in nodes))

    def abort_nodes() -> None:
        for n in nodes:
            n.abort()

    running.closers.append(stop_nodes)
    running.aborters.append(abort_nodes)
    await asyncio.gather(*(one(c, n) for c, n in zip(configs, nodes, strict=True)))
    ticker.start()
    running.spawn(kubelet_server.serve_later(endpoints_later), "kubelet-endpoints")
    logger.info("full virtual nodes started nodes=%d seconds=%.2f", len(configs), clock.monotonic() - started)
    return len(configs)


async def _start_one(
    cfg: Config,
    environ: Mapping[str, str],
    clock: Clock,
    host: HostProbe,
    shared_db: StateDB,
    store: ObjectStore | None,
    shared: NodeAPI | None,
    claim_changes: SharedClaimChanges | None,
    hub: InotifyHub,
    instruments: Instruments,
    bind_dir: BindDir,
    ticker: Ticker,
    running: Running,
    api_server: Any,
    endpoints_later: list[Callable[[], Awaitable[None]]],
) -> None:
    agent = cfg.agent
    agent.root_dir.mkdir(mode=hardening.ROOT_DIR_MODE, parents=True, exist_ok=True)
    agent.state_dir.mkdir(mode=hardening.STATE_DIR_MODE, parents=True, exist_ok=True)
    # Its state is a bucket of the shared database: under its stateDir it opens the cgroup tree only.
    hardening.refuse_symlinked_state(cfg, [cfg.cgroup_sim_root])
    db = ScopedStateDB(shared_db, f"node/{agent.node_name}/")
    api = shared if shared is not None else control_plane.node_api(cfg, store, running)
    claims = control_plane.claim_source(api)
    settings = node_wiring.NodeSettings(cfg=cfg, db=db, store=store if isinstance(api, InProcessAPI) else None,
                                        api=api, claims=claims, host=host, local=False,
                                        claim_changes=claim_changes.changes if claim_changes else None,
                                        inotify=hub, instruments=instruments,
                                        bind_dir=bind_dir, ticker=ticker,
                                        api_server=api_server if isinstance(api, InProcessAPI) else None,
                                        endpoints_later=endpoints_later)
    await node_wiring.start_node(settings, environ, clock, running)
