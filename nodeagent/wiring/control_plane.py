"""Wiring of the object store, the node's API client and sync, and the optional embedded control plane.

Exists because the store is opened early (DRA reads claims from it) while node sync and
the control plane start only once pods are restored and the admin backend exists: the
sync publishes the backend's Node object, and binds unscheduled pods to itself only when
`node.selfBinding` says no scheduler runs (the explicit no-scheduler setup).

Deployments: by default the node reaches the store of this process through the in-process
port (nodeapi.inprocess); with `cluster.kubeconfig` it joins that API over the network
(nodeapi.remote) and this process opens no store and runs no control plane; with
`node.enabled: false` the daemon is a control plane alone (daemon.py starts only
`start_control_plane` and the API server).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from nodeagent.admin.backend import NodeBackend
from nodeagent.config import Config, gatelist, versions
from nodeagent.errors import NodeAgentError
from nodeagent.nodeapi.claims import NodeClaims
from nodeagent.nodeapi.inprocess import MANAGER as INPROCESS_MANAGER
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.lease import LeaseRenewer
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock
from nodeagent.util.ticker import Ticker
from nodeagent.wiring.dra import store_claim_changes
from nodeagent.wiring.event_poster import EventPoster
from nodeagent.wiring.running import Running, closer

if TYPE_CHECKING:
    # Imported where used: the API server (aiohttp, OpenAPI schemas) and the remote client
    # (kubernetes_asyncio) are half the daemon's imports, and many configurations need neither.
    from nodeagent.apiserver.server import APIServer

logger = logging.getLogger(__name__)


EXPIRY_INTERVAL = 1.0
"""How often the store's expired objects (Events past the event TTL) are looked for: a look at one heap's
top when none is due. etcd's lessor checks its leases every 500 ms; an Event outliving its hour by a second
more is of no consequence."""


def open_store(cfg: Config, clock: Clock, running: Running) -> ObjectStore:
    """Open the object store with the built-in kinds and every admission hook (objects.kinds), and start
    the expiry of the kinds with a TTL (Events, kube-apiserver's --event-ttl)."""
    store = ObjectStore(cfg.objects_db, admitted_kinds(cfg.kubelet.feature_gates), clock)
    running.closers.append(closer(store.close))
    running.spawn(expire_objects(store, clock), "object-expiry")
    return store


async def expire_objects(store: ObjectStore, clock: Clock, interval: float = EXPIRY_INTERVAL) -> None:
    """Delete the store's objects whose TTL ran out, every `interval` seconds, until cancelled. A sweep
    waits while another thread writes (`busy`), so the event loop never blocks on the store's lock."""
    while True:
        await clock.sleep(interval)
        if store.busy:
            continue
        try:
            count = store.expire()
        except NodeAgentError as err:  # closed or refused: the next sweep tries again
            logger.warning("object expiry failed err=%s", err)
            continue
        if count:
            logger.debug("expired objects count=%d", count)


def node_api(cfg: Config, store: ObjectStore | None, running: Running) -> NodeAPI:
    """The node's API client: over the network with `cluster.kubeconfig`, else the store of this process
    (events batched one store transaction per loop turn)."""
    if cfg.agent.cluster.kubeconfig is not None:
        from nodeagent.nodeapi.remote import RemoteAPI

        remote = RemoteAPI(cfg.agent.cluster.kubeconfig, timeout=cfg.agent.cluster.request_timeout,
                           node_name=cfg.agent.node_name)
        remote.start_events()
        running.closers.append(remote.close)
        logger.info("node joins the cluster api=%s kubeconfig=%s", remote.description, cfg.agent.cluster.kubeconfig)
        return remote
    assert store is not None, "no cluster kubeconfig: the store of this process"
    poster = EventPoster(store, INPROCESS_MANAGER)
    running.closers.append(poster.close)
    return InProcessAPI(store, poster)


def claim_source(api: NodeAPI) -> NodeClaims:
    """The DRA manager's claims: the store's objects in process, else the remote claim cache.

    The remote cache holds only what the node's own GETs returned (the kubelet's GET of each claim of
    its pods at every prepare): no list or watch of ResourceClaims, which kube-apiserver's Node
    authorizer refuses a node identity (403 at cluster scope) and the kubelet never makes."""
    if isinstance(api, InProcessAPI):
        store = api.store
        return NodeClaims(lambda ns, name: store.peek("ResourceClaim", ns, name),
                          lambda ns, name: store.peek("Pod", ns, name))
    from nodeagent.nodeapi.remote import RemoteAPI

    assert isinstance(api, RemoteAPI)
    return NodeClaims(api.claims.get, fetch=api.claims.fetch)


def claim_changes(api: NodeAPI, store: ObjectStore | None) -> AsyncIterator[None]:
    """One item per burst of ResourceClaim changes, for pods waiting on their claims."""
    if not isinstance(api, InProcessAPI):
        from nodeagent.nodeapi.remote import RemoteAPI

        if isinstance(api, RemoteAPI):
            return api.claims.changes()
    assert store is not None
    return store_claim_changes(store)


async def start(
    cfg: Config,
    clock: Clock,
    metrics_registry: CollectorRegistry,
    store: ObjectStore | None,
    api: NodeAPI,
    pods: PodManager,
    backend: NodeBackend,
    recorder: EventRecorder,
    running: Running,
    with_control_plane: bool = True,
    sync_interval: float | None = None,
    ticker: Ticker | None = None,
) -> NodeSync:
    """Start the node's sync with the API and its Lease, then (if enabled and `with_control_plane`:
    not for a full virtual node) the control plane: right after READY=1 (Running.after_ready) unless
    virtualNodes are configured, whose Node objects its start publishes. Its scheduler, allocator and
    controllers are background loops that list the store when they start, so nothing they do is part
    of the state READY=1 promises; their imports and first lists were ~0.18 CPU-s of a restart to
    ready (issue 25), as kube-controller-manager and kube-scheduler start after kube-apiserver serves.

    The returned NodeSync's run() is for the daemon to start as a task.
    """
    sync = NodeSync(
        node_name=cfg.agent.node_name,
        api=api,
        pods=pods,
        node_object=backend.node,
        recorder=recorder,
        clock=clock,
        # Only when told no scheduler runs (node.selfBinding, refused while the embedded one is on):
        # the node cannot see whether another scheduler serves a pod's schedulerName.
        bind_unscheduled=cfg.agent.node.self_binding and store is not None,
        status_interval=cfg.agent.node.status_update_frequency,
        report_interval=cfg.agent.node.status_report_frequency,
        **({} if sync_interval is None else {"interval": sync_interval}),
        ticker=ticker,
        node_inputs=backend.node_inputs if ticker is not None else None,
        node_ips=backend.node_ips,
        gate=cfg.kubelet.gate,
    )
    backend.attach(store, sync)
    recorder.add_sink(api.post_event)
    await sync.start()
    running.closers.append(closer(sync.close))
    lease = LeaseRenewer(api, clock, cfg.agent.node_name, cfg.agent.node.lease_duration_seconds)
    running.spawn(lease.run(), "node-lease")
    if store is not None and with_control_plane:
        if cfg.agent.virtual_nodes:  # published by the control plane's start: Nodes a client sees at READY=1
            await start_control_plane(cfg, clock, metrics_registry, store, running)
        else:
            running.after_ready.append(lambda: start_control_plane(cfg, clock, metrics_registry, store, running))
    return sync


async def start_control_plane(
    cfg: Config, clock: Clock, metrics_registry: CollectorRegistry, store: ObjectStore, running: Running
) -> None:
    """The classic runner and the control plane's controllers, when controlPlane.enabled."""
    if not cfg.agent.control_plane.enabled:
        return
    # imported here: the scheduler, the allocator and the controllers are of no use to a node that joins
    # a cluster or to a control plane turned off, whose restart to ready would pay for them (issue 25)
    from nodeagent.controlplane.classic import ClassicRunner
    from nodeagent.controlplane.loop import ControlPlane

    classic = ClassicRunner(cfg, store, clock, metrics_registry)
    await classic.start()
    running.closers.append(classic.stop)
    # The scheduler commits each round's bindings in one transaction (loop.py, _SchedulerComponent.work) only
    # without a classic port: a negotiation writes through transactions of its own. With classic DRA off no
    # claim may name a controller (claim validation), so the port would only cost every pod its own commit and
    # watch fan-out; a claim kept from a run with it on is then refused with the scheduler's "not enabled".
    control_plane = ControlPlane(cfg, store, clock, metrics_registry,
                                 classic=classic.scheduling if classic.enabled else None)
    await control_plane.start()
    running.closers.append(control_plane.stop)


def _host_addresses() -> list[str]:
    """The host's addresses a wildcard bind is reached by (link-local ones left out: no client names them)."""
    import ipaddress

    from nodeagent.host.probe import interface_addresses

    out = []
    for _iface, text in interface_addresses():
        try:
            ip = ipaddress.ip_address(text)
        except ValueError:
            continue
        if not ip.is_link_local:
            out.append(str(ip))
    return out


def make_api_server(cfg: Config, clock: Clock, store: ObjectStore) -> APIServer | None:
    """The Kubernetes API server over the store (None when bindAddress is empty), not serving yet.
    Made before anything of this process writes to the store: it gives the store its field
    manager, so the embedded components' first writes (the node registering, the virtual nodes'
    Nodes and ResourceSlices the control plane's start publishes) get their managedFields, as
    kube-apiserver records them; an object created without them stays untracked."""
    api = cfg.agent.control_plane.api_server
    if not api.bind_address:
        return None
    from nodeagent.apiserver.registry import BindingGates
    from nodeagent.apiserver.server import APIServer, APIServerOptions

    minor = versions.minor(cfg.agent.kubernetes_version)

    def gate(name: str) -> bool:  # a kube-apiserver gate: set in featureGates, else the release's default
        return cfg.kubelet.feature_gates.get(name, gatelist.enabled(name, minor, cfg.kubelet.feature_gates))

    server = APIServer(store, clock, APIServerOptions(
        bind_address=api.bind_address,
        credentials_dir=cfg.apiserver_dir,
        kubeconfig=cfg.kubeconfig_path,
        anonymous=api.anonymous,
        max_request_bytes=api.max_request_bytes,
        kubernetes_version=cfg.agent.kubernetes_version,
        classic_dra=cfg.agent.classic_dra,
        binding=BindingGates(clear_nominated_node_name=gate("ClearingNominatedNodeNameAfterBinding"),
                             copy_labels=gate("PodTopologyLabelsAdmission")),
        host_addresses=_host_addresses,
        service_accounts=cfg.agent.control_plane.controller_enabled("serviceaccount-controller"),
        root_ca_publisher=cfg.agent.control_plane.controller_enabled("root-ca-certificate-publisher-controller"),
        service_account_tokens=cfg.agent.control_plane.controller_enabled("serviceaccount-token-controller"),
        policy_status=cfg.agent.control_plane.controller_enabled("validatingadmissionpolicy-status-controller"),
    ))
    return server


async def serve_api_server(server: APIServer | None, running: Running) -> APIServer | None:
    """Start serving the API (make_api_server's) and write the kubeconfig."""
    if server is None:
        return None
    await server.start()
    running.closers.append(server.stop)
    running.after_ready.append(_load_printers)
    return server


async def _load_printers() -> None:
    """The Table printers (apiserver/tables: every kind's, jsonpath; 12 modules), imported right after
    READY=1 rather than when the first Table is asked for (http.APIHandler._object): no part of a
    restart to ready (issue 25), but imported by the first `kubectl get` they held the event loop
    0.25-0.31 s beside a worker thread writing a pod of 7,400 containers (its file reads each waited
    for the GIL), the worst stall of tests/integration/test_huge_pod_stall.py."""
    from nodeagent.apiserver import tables  # noqa: F401


async def start_api_server(cfg: Config, clock: Clock, store: ObjectStore, running: Running) -> APIServer | None:
    """make_api_server and serve_api_server at once (a control plane without a node)."""
    return await serve_api_server(make_api_server(cfg, clock, store), running)

