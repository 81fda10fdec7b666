"""Wiring of the object store, the node's sync with it, and the optional embedded control plane.

Exists because the store is opened early (DRA reads claims from it) while node sync and
the control plane start only once pods are restored and the admin backend exists: the
sync publishes the backend's Node object and binds pods, and without the control
plane's scheduler the node takes every unscheduled pod itself.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry

from nodeagent.admin.backend import NodeBackend
from nodeagent.apiserver.server import APIServer, APIServerOptions
from nodeagent.clock import Clock
from nodeagent.config import Config
from nodeagent.controlplane.classic import ClassicRunner
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.nodesync import NodeSync
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.store import ObjectStore
from nodeagent.wiring.event_poster import EventPoster
from nodeagent.wiring.running import Running, closer

logger = logging.getLogger(__name__)


def open_store(cfg: Config, clock: Clock, running: Running) -> ObjectStore:
    """Open the object store with the built-in kinds and every admission hook (objects.kinds)."""
    store = ObjectStore(cfg.objects_db, admitted_kinds(cfg.kubelet.feature_gates), clock)
    running.closers.append(closer(store.close))
    return store


async def start(
    cfg: Config,
    clock: Clock,
    metrics_registry: CollectorRegistry,
    store: ObjectStore,
    pods: PodManager,
    backend: NodeBackend,
    recorder: EventRecorder,
    running: Running,
) -> NodeSync:
    """Start the node's sync with the store, then (if enabled) the classic runner and the control plane.

    The returned NodeSync's run() is for the daemon to start as a task.
    """
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
    poster = EventPoster(store)  # one store transaction per loop turn for the node's events
    recorder.add_sink(poster)
    running.closers.append(poster.close)
    await sync.start()
    running.closers.append(closer(sync.close))
    if cfg.agent.control_plane.enabled:
        classic = ClassicRunner(cfg, store, clock, metrics_registry)
        await classic.start()
        running.closers.append(classic.stop)
        control_plane = ControlPlane(cfg, store, clock, metrics_registry, classic=classic.scheduling)
        await control_plane.start()
        running.closers.append(control_plane.stop)
    return sync


async def start_api_server(cfg: Config, clock: Clock, store: ObjectStore, running: Running) -> APIServer | None:
    """Serve the Kubernetes API over the store (unless bindAddress is empty) and write the kubeconfig."""
    api = cfg.agent.control_plane.api_server
    if not api.bind_address:
        return None
    server = APIServer(store, clock, APIServerOptions(
        bind_address=api.bind_address,
        credentials_dir=cfg.apiserver_dir,
        kubeconfig=cfg.kubeconfig_path,
        anonymous=api.anonymous,
        max_request_bytes=api.max_request_bytes,
    ))
    await server.start()
    running.closers.append(server.stop)
    return server

