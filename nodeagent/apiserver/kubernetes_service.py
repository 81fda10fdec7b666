"""The `default/kubernetes` Service and its Endpoints and EndpointSlice, as kube-apiserver's
bootstrap keeps them (pkg/controlplane/controller/kubernetesservice, reconcilers/lease.go and
reconcilers/endpointsadapter.go), and the default ServiceCIDR `kubernetes` of the service range
(controller/defaultservicecidr).

Why: every real cluster has it (`kubectl get svc` shows it before anything else); in-cluster
clients find the API server through it. As upstream: the Service (labels provider=kubernetes,
component=apiserver; no selector; SingleStack; ClusterIP the first address of the service range;
port `https` 443 -> the server's secure port) is created when missing and never updated (its
reconcile path is dead code upstream since 1.17); the Endpoints `kubernetes` (label
endpointslice.kubernetes.io/skip-mirror "true", one subset: the advertised address, port https
TCP) and the EndpointSlice `kubernetes` written from it (label kubernetes.io/service-name, IPv4,
the address ready) are reconciled at start and every 10 s (EndpointInterval). The advertised
address is the bind address, a host address for a wildcard bind. Difference on purpose: a
loopback bind advertises nothing and writes no Endpoints or EndpointSlice — kube-apiserver would
advertise the host's address, where nothing listens, and nodeagent's real control plane runs it
with --advertise-address=127.0.0.1 --endpoint-reconciler-type=none, which writes none either
(a loopback address is not a valid endpoint). Not done: IPAddress objects for the allocated
ClusterIPs (objects/service.py allocates from the Services themselves), and the finalizer and Ready
condition kube-controller-manager's service-cidr controller puts on the ServiceCIDR (not embedded;
a real one run against this server adds them). Synchronous writes; `run` loops on an injected sleep, on the
event loop: its reads are the store's lock-free `peek`, and a round waits while another thread writes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from nodeagent.errors import AlreadyExists, NodeAgentError
from nodeagent.objects.service import SERVICE_CIDR
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339

logger = logging.getLogger(__name__)

NAME, NAMESPACE = "kubernetes", "default"
MANAGER = "kube-apiserver"
SERVICE_PORT = 443
PORT_NAME = "https"
INTERVAL = 10.0
"""kube-apiserver's --endpoint-reconciler interval (EndpointInterval, DefaultEndpointReconcilerInterval)."""
BUSY_RETRY = 0.05
"""Seconds before a sync put off because a worker thread's transaction holds the store (a huge pod's status
write): its reads take no lock (`peek`), but a write from the event loop would wait for that transaction,
every socket with it (issue 25: 30-200 ms measured)."""
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"

JSON = dict[str, Any]


def service_ip(cidr: ipaddress.IPv4Network = SERVICE_CIDR) -> str:
    """The first address of the service range (ServiceIPRange's GetIndexedIP(1))."""
    return str(cidr.network_address + 1)


def advertise_address(bind_host: str, host_addresses: Sequence[str]) -> str | None:
    """The address the Endpoints name: the bind address; for a wildcard bind the host's first address of its
    family (upstream's ChooseHostInterface takes the default route's); None for a loopback bind."""
    try:
        ip = ipaddress.ip_address(bind_host)
    except ValueError:
        return None
    if ip.is_loopback:
        return None
    if not ip.is_unspecified:
        return str(ip)
    for text in host_addresses:
        try:
            cand = ipaddress.ip_address(text)
        except ValueError:
            continue
        if cand.version == ip.version and not cand.is_loopback and not cand.is_link_local:
            return str(cand)
    return None


def service(port: int, cluster_ip: str) -> JSON:
    """CreateOrUpdateMasterServiceIfNeeded's Service (createPortAndServiceSpec: ClusterIP, no node port)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"ports": [{"name": PORT_NAME, "port": SERVICE_PORT, "protocol": "TCP", "targetPort": port}],
                     "clusterIP": cluster_ip, "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                     "type": "ClusterIP"}}


def _subsets(address: str, port: int) -> list[JSON]:
    return [{"addresses": [{"ip": address}], "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}]}]


def endpoint_slice(address: str, port: int) -> JSON:
    """endpointSliceFromEndpoints of the Endpoints this reconciler writes."""
    family = "IPv6" if ":" in address else "IPv4"
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SERVICE_NAME_LABEL: NAME}},
            "addressType": family,
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}]}


DEFAULT_CIDR_MESSAGE = "Kubernetes default Service CIDR is ready"


def ensure_service_cidr(store: ObjectStore, now: float, cidr: ipaddress.IPv4Network = SERVICE_CIDR) -> None:
    """kube-apiserver's default-servicecidr controller (pkg/controlplane/controller/defaultservicecidr): the
    ServiceCIDR `kubernetes` of the service range, created when missing; its Ready condition set True when it
    has none or an Unknown one (a False one, set by another component, is left alone)."""
    current = store.peek("ServiceCIDR", "", NAME)
    if current is None:
        with contextlib.suppress(AlreadyExists):
            store.create({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": NAME},
                          "spec": {"cidrs": [str(cidr)]}}, manager=MANAGER)
        current = store.peek("ServiceCIDR", "", NAME)
        if current is None:
            return
    conditions = [c for c in (current.get("status") or {}).get("conditions") or () if isinstance(c, Mapping)]
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") in ("True", "False"):
        return
    wanted = {"type": "Ready", "status": "True", "reason": "", "message": DEFAULT_CIDR_MESSAGE,
              "lastTransitionTime": rfc3339(now)}
    others = [c for c in conditions if c.get("type") != "Ready"]
    store.update_status({**current, "status": {**(current.get("status") or {}), "conditions": [*others, wanted]}},
                        manager="kubernetes-default-servicecidr-controller")


class KubernetesService:
    """Keeps the `kubernetes` Service, Endpoints and EndpointSlice of one server."""

    def __init__(self, store: ObjectStore, port: Callable[[], int], address: str | None,
                 cluster_ip: str | None = None, now: Callable[[], float] | None = None) -> None:
        self.store = store
        self.now = now
        self.port = port
        self.address = address
        self.cluster_ip = cluster_ip or service_ip()

    def sync(self) -> None:
        """The default ServiceCIDR (when `now` is given), then UpdateKubernetesService: the Service when missing,
        then the Endpoints and the EndpointSlice."""
        if self.now is not None:
            ensure_service_cidr(self.store, self.now())
        if self.store.peek("Service", NAMESPACE, NAME) is None:
            with contextlib.suppress(AlreadyExists):
                self.store.create(service(self.port(), self.cluster_ip), manager=MANAGER)
        if self.address is not None:
            self._endpoints(self.address, self.port())

    def _endpoints(self, address: str, port: int) -> None:
        """The lease reconciler with this server as the only lease: the Endpoints' one subset reset when it is
        not this address and port, the skip-mirror label set; then EnsureEndpointSliceFromEndpoints."""
        subsets = _subsets(address, port)
        current = self.store.peek("Endpoints", NAMESPACE, NAME)
        if current is None:
            with contextlib.suppress(AlreadyExists):
                self.store.create({"apiVersion": "v1", "kind": "Endpoints",
                                   "metadata": {"name": NAME, "namespace": NAMESPACE,
                                                "labels": {SKIP_MIRROR: "true"}},
                                   "subsets": subsets}, manager=MANAGER)
        else:
            md = current.get("metadata") or {}
            labels = md.get("labels") or {}
            if labels.get(SKIP_MIRROR) != "true" or current.get("subsets") != subsets:
                self.store.update({**current, "metadata": {**md, "labels": {**labels, SKIP_MIRROR: "true"}},
                                   "subsets": subsets}, manager=MANAGER)
        wanted = endpoint_slice(address, port)
        slice_ = self.store.peek("EndpointSlice", NAMESPACE, NAME)
        if slice_ is None:
            with contextlib.suppress(AlreadyExists):
                self.store.create(wanted, manager=MANAGER)
        elif slice_.get("addressType") != wanted["addressType"]:
            self.store.delete("EndpointSlice", NAMESPACE, NAME)
            self.store.create(wanted, manager=MANAGER)
        elif not _same_slice(slice_, wanted):
            md = slice_.get("metadata") or {}
            self.store.update({**slice_, "metadata": {**md, "labels": wanted["metadata"]["labels"]},
                               "endpoints": wanted["endpoints"], "ports": wanted["ports"]}, manager=MANAGER)

    def try_sync(self) -> bool:
        """`sync`, a failure logged (the range's first address taken by another Service, a conflict): the
        server starts anyway and the next round tries again, as upstream's controller loop."""
        try:
            self.sync()
        except NodeAgentError as err:
            logger.warning("unable to sync kubernetes service err=%s", err)
            return False
        return True

    async def run(self, sleep: Callable[[float], Awaitable[object]]) -> None:
        """The controller's loop: a sync every INTERVAL seconds."""
        while True:
            await sleep(INTERVAL)
            await self.store.until_free(sleep, BUSY_RETRY)
            self.try_sync()


def _same_slice(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """The adapter's comparison: endpoints, ports and labels (as stored: defaulted fields are compared too)."""
    endpoints = [{k: v for k, v in e.items() if k in ("addresses", "conditions", "targetRef", "nodeName")}
                 for e in current.get("endpoints") or () if isinstance(e, Mapping)]
    ready = [{**e, "conditions": {"ready": (e.get("conditions") or {}).get("ready")}} for e in endpoints]
    return bool(ready == wanted["endpoints"]) and (current.get("ports") or []) == wanted["ports"] \
        and ((current.get("metadata") or {}).get("labels") or {}) == wanted["metadata"]["labels"]
