"""Wiring of dynamic resource allocation: driver registry, DRA manager, plugins_registry watcher.

Exists because DRA is started in three steps the daemon must order: the registry and
manager are built before the pod manager (which prepares claims through the manager),
the manager reconciles and starts once pods are restored, and the plugin watcher only
starts after every socket of ours serves, since drivers register through it. Pods
waiting for their claims are retried when a driver registers or a claim changes.
The node's ResourceSlices are wiped when the registry is built, before the API server
serves and before any driver can register (the kubelet's start-up wipe); later, a driver
without a connected plugin for 30 s loses its slices of the node (nodeagent.dra.slices).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent.config import Config
from nodeagent.dra.manager import DRAManager
from nodeagent.dra.ports import ClaimSource
from nodeagent.dra.registry import PLUGIN_TYPE as DRA_PLUGIN_TYPE
from nodeagent.dra.registry import DRARegistry
from nodeagent.dra.slices import SliceWiper
from nodeagent.faults.interceptors import FaultInjector
from nodeagent.faults.registration import RefusingHandler
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI, delete_node_slices
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.pluginwatcher.executor import RegistrationExecutor
from nodeagent.pluginwatcher.ports import PluginHandler
from nodeagent.pluginwatcher.watcher import RESYNC_PERIOD, PluginWatcher
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock
from nodeagent.util.fswatch import InotifyHub, InotifyWatch
from nodeagent.util.tasks import cancel_and_wait
from nodeagent.util.ticker import Ticker
from nodeagent.wiring.running import Running


@dataclass(frozen=True)
class DRAParts:
    """The driver registry (what drivers registered), the manager (claims prepared for pods) and
    the wiper of the node's ResourceSlices."""

    registry: DRARegistry
    manager: DRAManager
    slices: SliceWiper


def build(
    cfg: Config,
    clock: Clock,
    instruments: Instruments,
    metrics_registry: CollectorRegistry,
    api: NodeAPI,
    claims: ClaimSource,
    db: StateDB,
    running: Running,
    channel_interceptors: Callable[[str], Sequence[Any]] | None = None,
) -> DRAParts:
    """Wipe the node's slices; build the driver registry and the DRA manager (claims read through `claims`)."""
    node = cfg.agent.node_name
    if isinstance(api, InProcessAPI):  # at once, before the API server serves: the kubelet's start-up wipe
        slices = SliceWiper(clock, node, lambda driver: delete_node_slices(api.store, node, driver))
    else:  # over the network: in the background, retried until the API server answers
        slices = SliceWiper(clock, node, lambda driver: api.delete_node_slices(node, driver))
    slices.wipe_at_start()
    running.closers.append(slices.close)
    dra_registry = DRARegistry(clock, instruments, health_enabled=cfg.kubelet.gate("ResourceHealthStatus"),
                               slices=slices, channel_interceptors=channel_interceptors,
                               allowed_dirs=(cfg.plugins_dir, cfg.plugins_registry_dir),
                               own_sockets=(cfg.agent.admin_socket, cfg.pod_resources_socket, cfg.kubelet_socket,
                                            cfg.pods_api_socket))
    running.closers.append(dra_registry.close)
    dra = DRAManager(dra_registry, claims, db, clock, metrics_registry=metrics_registry,
                     health_gate=cfg.kubelet.gate("ResourceHealthStatus"),
                     optional_node_operations=cfg.kubelet.gate("DRAOptionalNodeOperations"))
    return DRAParts(registry=dra_registry, manager=dra, slices=slices)


async def start(parts: DRAParts, pods: PodManager, active: set[str], running: Running) -> None:
    """Drop claims of pods gone while we were down, start the manager, retry pending pods on registration."""
    dra = parts.manager
    await dra.reconcile(active, {p.uid for p in pods.all_pods()})
    await dra.start()
    running.closers.append(dra.stop)

    retries: set[asyncio.Task[None]] = set()

    async def on_driver(driver: str, registered: bool) -> None:
        # In the background: a registration (e.g. the new instance of a rolling update) must not
        # wait for pods whose prepare is in flight on another plugin.
        if registered:
            retry = asyncio.get_running_loop().create_task(pods.retry_pending(), name=f"pods retry {driver}")
            retries.add(retry)
            retry.add_done_callback(retries.discard)

    async def cancel_retries() -> None:
        await cancel_and_wait(list(retries))

    parts.registry.on_driver(on_driver)
    running.closers.append(cancel_retries)


async def start_plugin_watcher(
    cfg: Config, clock: Clock, metrics_registry: CollectorRegistry, parts: DRAParts, running: Running,
    faults: FaultInjector | None = None, *, hub: InotifyHub | None = None, ticker: Ticker | None = None,
) -> PluginWatcher:
    """Watch plugins_registry, where DRA drivers register (through the faults' refuse rules and
    registration-channel interceptors when `faults` is given)."""
    handlers: dict[str, PluginHandler] = {
        DRA_PLUGIN_TYPE: parts.registry if faults is None else RefusingHandler(parts.registry, faults.faults)
    }
    watcher = PluginWatcher(
        cfg.plugins_registry_dir, handlers, clock, registry=metrics_registry,
        watch=InotifyWatch(cfg.plugins_registry_dir, recursive=True, hub=hub), period=RESYNC_PERIOD, ticker=ticker,
        executor=RegistrationExecutor(
            handlers, interceptors=faults.registration_interceptors if faults is not None else None),
    )
    await watcher.start()
    running.closers.append(watcher.stop)
    return watcher


async def retry_on_claim_changes(changes: AsyncIterator[None], pods: PodManager) -> None:
    """Pods waiting for their claims (allocated, reserved) are retried as soon as a claim changes;
    `changes` yields once per burst of claim changes."""
    async for _ in changes:
        if pods.pending_uids():
            await pods.retry_pending(wait=False)  # the pods' workers try; this loop goes on


async def store_claim_changes(store: ObjectStore) -> AsyncIterator[None]:
    """Claim changes in the store of this process, one item per burst."""
    while True:
        watch = store.watch({"ResourceClaim"})
        try:
            async for _ in watch:
                while watch.get_nowait() is not None:
                    pass  # one retry covers a burst of changes
                yield None
        finally:
            watch.close()
