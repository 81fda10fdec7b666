"""Wiring of dynamic resource allocation: driver registry, DRA manager, plugins_registry watcher.

Exists because DRA is started in three steps the daemon must order: the registry and
manager are built before the pod manager (which prepares claims through the manager),
the manager reconciles and starts once pods are restored, and the plugin watcher only
starts after every socket of ours serves, since drivers register through it. Pods
waiting for their claims are retried when a driver registers or a claim changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from nodeagent.clock import Clock
from nodeagent.config import Config
from nodeagent.dra.manager import DRAManager
from nodeagent.dra.registry import PLUGIN_TYPE as DRA_PLUGIN_TYPE
from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.node import StoreClaims
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.pods.manager import PodManager
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.wiring.running import Running


@dataclass(frozen=True)
class DRAParts:
    """The driver registry (what drivers registered) and the manager (claims prepared for pods)."""

    registry: DRARegistry
    manager: DRAManager


def build(
    cfg: Config,
    clock: Clock,
    instruments: Instruments,
    metrics_registry: CollectorRegistry,
    store: ObjectStore,
    db: StateDB,
    running: Running,
) -> DRAParts:
    """Build the driver registry and the DRA manager (claims read from the object store)."""
    dra_registry = DRARegistry(clock, instruments, health_enabled=cfg.kubelet.gate("ResourceHealthStatus"))
    running.closers.append(dra_registry.close)
    dra = DRAManager(dra_registry, StoreClaims(store), db, clock, metrics_registry=metrics_registry,
                     health_gate=cfg.kubelet.gate("ResourceHealthStatus"))
    return DRAParts(registry=dra_registry, manager=dra)


async def start(parts: DRAParts, pods: PodManager, active: set[str], running: Running) -> None:
    """Drop claims of pods gone while we were down, start the manager, retry pending pods on registration."""
    dra = parts.manager
    await dra.reconcile(active, {p.uid for p in pods.all_pods()})
    await dra.start()
    running.closers.append(dra.stop)

    async def on_driver(driver: str, registered: bool) -> None:
        if registered:
            await pods.retry_pending()

    parts.registry.on_driver(on_driver)


async def start_plugin_watcher(
    cfg: Config, clock: Clock, metrics_registry: CollectorRegistry, parts: DRAParts, running: Running
) -> None:
    """Watch plugins_registry, where DRA drivers register."""
    watcher = PluginWatcher(
        cfg.plugins_registry_dir, {DRA_PLUGIN_TYPE: parts.registry}, clock, registry=metrics_registry
    )
    await watcher.start()
    running.closers.append(watcher.stop)


async def retry_on_claim_changes(store: ObjectStore, pods: PodManager) -> None:
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
