"""Wiring of the object store, the node's sync with it, and the optional embedded control plane.

Exists because the store is opened early (DRA reads claims from it) while node sync and
the control plane start only once pods are restored and the admin backend exists: the
sync publishes the backend's Node object and binds pods, and without the control
plane's scheduler the node takes every unscheduled pod itself.
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent.admin.backend import NodeBackend
from nodeagent.apiserver.server import APIServer, APIServerOptions
from nodeagent.clock import Clock
from nodeagent.config import Config
from nodeagent.controlplane import events as api_events
from nodeagent.controlplane.classic import ClassicRunner
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.errors import NodeAgentError
from nodeagent.nodesync import NodeSync
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import Event, EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.store import ObjectStore
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
    recorder.add_sink(lambda event: post_event(store, event))
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


def post_event(store: ObjectStore, event: Event) -> None:
    """A node event as a core v1 Event in the store (one per object and reason, counted), so
    `kubectl describe` and `kubectl get events` show the node's side as with a kubelet."""
    ref = event.involved
    stored = store.peek(ref.kind, ref.namespace, ref.name) if ref.kind in store.kinds else None
    if stored is not None and (not ref.uid or stored["metadata"].get("uid") == ref.uid):
        obj: dict[str, Any] = dict(stored)
    else:  # not (or no longer) in the store: no owner reference, or the collector would take it at once
        obj = {"apiVersion": "v1", "kind": ref.kind, "metadata": {"name": ref.name, "namespace": ref.namespace}}
    try:
        with store.transaction() as tx:
            api_events.record(tx, obj, event.reason, event.message, now=event.last_timestamp,
                              component=event.source, type_=event.type)
    except NodeAgentError as err:
        logger.debug("event not posted reason=%s object=%s/%s error=%s", event.reason, ref.namespace, ref.name, err)
