"""The endpoints and endpointslice controllers (kube-controller-manager's `endpoints-controller` and
`endpointslice-controller`; upstream pkg/controller/endpoint, pkg/controller/endpointslice with
k8s.io/endpointslice's reconciler).

Why: kube-controller-manager runs both by default, so on a real cluster every Service with a
selector has an Endpoints object of its name and EndpointSlices `<service>-<random>`; a twin run
against the real control plane showed none on the embedded one. As upstream: a Service without a
selector is left alone; a pod counts when it matches the selector and ShouldPodBeInEndpoints holds
(it has an IP, is not terminal, is not being deleted unless publishNotReadyAddresses; for the slices its
Node exists, else the slices are written without it and the Service retried); its ports
are the Service's target ports found in it (FindPort: a named port by the container's port name).
Endpoints: the Service's labels, `endpoints.kubernetes.io/managed-by: endpoint-controller`,
`service.kubernetes.io/headless: ""` for a headless Service, the pods as ready or not-ready
addresses grouped by their ports. EndpointSlices: generateName `<service>-`, owned by the Service
(controller, blockOwnerDeletion), the Service's labels plus `kubernetes.io/service-name` and
`endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io` (and the headless
label); one slice per address family and port set of at most 100 endpoints (maxEndpointsPerSlice),
conditions ready/serving/terminating, targetRef and nodeName; with no endpoint at all one
placeholder slice without ports or endpoints. Both carry `endpoints.kubernetes.io/last-change-
trigger-time`: the earliest change seen since the last sync (the Service's creation, a pod's Ready
transition), as the TriggerTimeTracker. Nodeagent's pods have no IP, so the usual result is the
empty Endpoints and the placeholder slice, exactly as kube-controller-manager writes them for the
same pods. Differences, on purpose: the slices are rebuilt by family and port set (upstream's
reconciler also packs into partly-filled slices to save writes; the sets of endpoints are the same),
no topology hints, no over-capacity truncation at 1000
addresses. A pod event costs a dict lookup when its namespace has no Service with a selector.
Keyed by Service, driven by loop.py.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.workqueue import Key, KeyedController
from nodeagent.controlplane.workloads import pods as P
from nodeagent.errors import AlreadyExists, NodeAgentError, NotFound
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS = "service.kubernetes.io/headless"
SERVICE_NAME = "kubernetes.io/service-name"
SLICE_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
EP_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
EP_CONTROLLER = "endpoint-controller"
MAX_PER_SLICE = 100
MANAGER = "kube-controller-manager"
ZONE = "topology.kubernetes.io/zone"

JSON = dict[str, Any]


def headless(svc: Mapping[str, Any]) -> bool:
    return (svc.get("spec") or {}).get("clusterIP") == "None"


def find_port(pod: Mapping[str, Any], port: Mapping[str, Any]) -> int | None:
    """podutil.FindPort: a named target port is the container port of that name and protocol; a number is
    itself; none is the Service's port."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("name") == target and (p.get("protocol") or "TCP") == (port.get("protocol") or "TCP"):
                return int(p.get("containerPort") or 0)
    return None


def pod_ips(pod: Mapping[str, Any]) -> list[str]:
    status = pod.get("status") or {}
    ips = [str(p.get("ip")) for p in status.get("podIPs") or () if isinstance(p, Mapping) and p.get("ip")]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    return ips


def should_be_in_endpoints(pod: Mapping[str, Any], include_terminating: bool) -> bool:
    """endpointslice's ShouldPodBeInEndpoints."""
    if not pod_ips(pod):
        return False
    ph = P.phase(pod)
    if ph in (P.FAILED, P.SUCCEEDED):
        return False
    if (pod.get("spec") or {}).get("restartPolicy") == "Never" and ph in (P.FAILED, P.SUCCEEDED):
        return False
    return include_terminating or not P.deleting(pod)


def _ready(pod: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or () if isinstance(c, Mapping))


def _ready_time(pod: Mapping[str, Any]) -> str:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            return str(c.get("lastTransitionTime") or "")
    return ""


def _hostname(pod: Mapping[str, Any], svc: Mapping[str, Any]) -> str | None:
    """ShouldSetHostname: a pod with a hostname and the Service as its subdomain."""
    spec = pod.get("spec") or {}
    name = (svc.get("metadata") or {}).get("name")
    if spec.get("hostname") and spec.get("subdomain") == name:
        return str(spec["hostname"])
    return None


class _Tracker:
    """TriggerTimeTracker: per Service the state last seen (its creation, each pod's Ready transition);
    the earliest of what changed since."""

    def __init__(self) -> None:
        self._seen: dict[Key, tuple[str, dict[str, str]]] = {}

    def compute(self, key: Key, svc: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> str:
        created = str((svc.get("metadata") or {}).get("creationTimestamp") or "")
        old = self._seen.get(key)
        now_pods = {str(P.name(p)): _ready_time(p) for p in pods}
        changed: list[str] = []
        if old is None or old[0] != created:
            changed.append(created)
        old_pods = old[1] if old is not None else {}
        changed += [t for n, t in now_pods.items() if t and old_pods.get(n) != t]
        self._seen[key] = (created, now_pods)
        known = [(when, t) for t in changed if t and (when := P.parse_time(t)) is not None]
        return rfc3339(min(known)[0]) if known else ""

    def forget(self, key: Key) -> None:
        self._seen.pop(key, None)


class _ServiceIndex:
    """Namespace -> Services with a selector: what a pod event looks up."""

    def __init__(self) -> None:
        self.by_ns: dict[str, dict[str, Mapping[str, str]]] = {}

    def keys(self, event_type: str, obj: Mapping[str, Any]) -> list[Key]:
        md = obj.get("metadata") or {}
        ns, name = str(md.get("namespace") or "default"), str(md.get("name") or "")
        kind = obj.get("kind")
        if kind == "Service":
            selector = (obj.get("spec") or {}).get("selector")
            services = self.by_ns.setdefault(ns, {})
            if event_type == "DELETED" or not selector:
                services.pop(name, None)
            else:
                services[name] = selector
            if not services:
                self.by_ns.pop(ns, None)
            return [(ns, name)]
        if kind == "Pod":
            selectors = self.by_ns.get(ns)
            if not selectors:
                return []
            labels = md.get("labels") or {}
            return [(ns, s) for s, sel in selectors.items() if all(labels.get(k) == v for k, v in sel.items())]
        owner = (md.get("labels") or {}).get(SERVICE_NAME) if kind == "EndpointSlice" else name
        return [(ns, str(owner))] if owner else []


class _Base(KeyedController):
    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.index = _ServiceIndex()
        self.tracker = _Tracker()

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        return self.index.keys(event_type, obj)

    def _pods(self, ns: str, selector: Mapping[str, str]) -> list[Mapping[str, Any]]:
        return list(self.store.scan("Pod", ns, dict(selector)))

    @staticmethod
    def _labels(svc: Mapping[str, Any], reserved: Iterable[str]) -> JSON:
        drop = set(reserved)
        labels = {k: v for k, v in ((svc.get("metadata") or {}).get("labels") or {}).items() if k not in drop}
        if headless(svc):
            labels[HEADLESS] = ""
        return labels


class EndpointsController(_Base):
    """The endpoints controller: one Endpoints per Service with a selector."""

    name = "endpoints-controller"

    def sync(self, key: Key) -> float | None:
        ns, name = key
        svc = self.store.peek("Service", ns, name)
        if svc is None:
            self.tracker.forget(key)
            current = self.store.peek("Endpoints", ns, name)
            if current is not None and ((current.get("metadata") or {}).get("labels") or {}).get(EP_MANAGED_BY) \
                    == EP_CONTROLLER:
                with contextlib.suppress(NotFound):
                    self.store.delete("Endpoints", ns, name)
            return None
        spec = svc.get("spec") or {}
        if not spec.get("selector"):
            return None
        pods = self._pods(ns, spec["selector"])
        trigger = self.tracker.compute(key, svc, pods)
        subsets = self._subsets(svc, pods)
        labels = {**self._labels(svc, (EP_MANAGED_BY, HEADLESS)), EP_MANAGED_BY: EP_CONTROLLER}
        current = self.store.try_get("Endpoints", ns, name)
        if current is not None:
            md = current.get("metadata") or {}
            if (current.get("subsets") or []) == subsets and (md.get("labels") or {}) == labels:
                return None
            annotations = {k: v for k, v in (md.get("annotations") or {}).items() if k != TRIGGER}
            if trigger:
                annotations[TRIGGER] = trigger
            new: JSON = {**current, "metadata": {**md, "labels": labels, "annotations": annotations}}
            new.pop("subsets", None)
            if subsets:
                new["subsets"] = subsets
            self.store.update(new, manager=MANAGER)
            return None
        obj: JSON = {"apiVersion": "v1", "kind": "Endpoints",
                     "metadata": {"name": name, "namespace": ns, "labels": labels,
                                  "annotations": {TRIGGER: trigger} if trigger else {}}}
        if subsets:
            obj["subsets"] = subsets
        try:
            self.store.create(obj, manager=MANAGER)
        except AlreadyExists:
            self.enqueue(key)
        return None

    def _subsets(self, svc: Mapping[str, Any], pods: list[Mapping[str, Any]]) -> list[JSON]:
        spec = svc.get("spec") or {}
        publish = bool(spec.get("publishNotReadyAddresses"))
        groups: dict[str, tuple[list[JSON], list[JSON], list[JSON]]] = {}
        for pod in pods:
            if not should_be_in_endpoints(pod, publish):
                continue
            ips = pod_ips(pod)
            family = 6 if ":" in ips[0] else 4
            ip = next((i for i in ips if (6 if ":" in i else 4) == family), ips[0])
            md = pod.get("metadata") or {}
            address: JSON = {"ip": ip}
            if host := _hostname(pod, svc):
                address["hostname"] = host
            if node := (pod.get("spec") or {}).get("nodeName"):
                address["nodeName"] = node
            address["targetRef"] = {"kind": "Pod", "namespace": md.get("namespace"), "name": md.get("name"),
                                    "uid": md.get("uid")}
            ports = [{k: v for k, v in port.items() if v != ""} for port in _pod_ports(pod, spec)]
            if not ports and (spec.get("ports") or not headless(svc)):
                continue  # addEndpointSubset: no port found, no address (a headless Service may have none)
            group = groups.setdefault(json.dumps(ports, sort_keys=True), ([], [], ports))
            (group[0] if publish or _ready(pod) else group[1]).append(address)
        out: list[JSON] = []
        for _, (ready, not_ready, ports) in sorted(groups.items()):
            subset: JSON = {}
            if ready:
                subset["addresses"] = sorted(ready, key=_address_key)
            if not_ready:
                subset["notReadyAddresses"] = sorted(not_ready, key=_address_key)
            if ports:
                subset["ports"] = ports
            out.append(subset)
        return out


def _pod_ports(pod: Mapping[str, Any], spec: Mapping[str, Any]) -> list[JSON]:
    """The Service's ports the pod serves (FindPort of each targetPort), as an endpoint port: name, number,
    protocol, appProtocol; a port the pod does not have is left out."""
    ports: list[JSON] = []
    for sp in spec.get("ports") or ():
        number = find_port(pod, sp)
        if number is None:
            continue
        port: JSON = {"name": sp.get("name") or "", "port": number, "protocol": sp.get("protocol") or "TCP"}
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        ports.append(port)
    return ports


def _address_key(address: Mapping[str, Any]) -> tuple[int, int, str]:
    ip = ipaddress.ip_address(str(address["ip"]))
    return (ip.version, int(ip), str((address.get("targetRef") or {}).get("uid") or ""))


class EndpointSliceController(_Base):
    """The endpointslice controller: the EndpointSlices of each Service with a selector."""

    name = "endpointslice-controller"

    def sync(self, key: Key) -> float | None:
        ns, name = key
        svc = self.store.peek("Service", ns, name)
        if svc is None:  # the garbage collector removes the slices it owned
            self.tracker.forget(key)
            return None
        spec = svc.get("spec") or {}
        if spec.get("type") == "ExternalName":
            for s in self._owned(ns, svc):
                self._delete(s)
            return None
        if not spec.get("selector"):
            return None
        pods = self._pods(ns, spec["selector"])
        trigger = self.tracker.compute(key, svc, pods)
        missing: list[str] = []
        desired = self._desired(svc, pods, missing)
        current = sorted(self._owned(ns, svc), key=lambda s: str((s.get("metadata") or {}).get("name")))
        labels = {**self._labels(svc, (SERVICE_NAME, SLICE_MANAGED_BY, HEADLESS)),
                  SERVICE_NAME: name, SLICE_MANAGED_BY: SLICE_CONTROLLER}
        unmatched = list(current)
        for want in desired:
            match = next((s for s in unmatched if _content(s) == want), None)
            if match is None:
                match = next((s for s in unmatched if s.get("addressType") == want["addressType"]
                              and (s.get("ports") or []) == (want.get("ports") or [])), None)
            if match is not None:
                unmatched.remove(match)
                self._update(match, want, labels, trigger)
            else:
                self._create(svc, want, labels, trigger)
        for s in unmatched:
            self._delete(s)
        if missing:  # written without them; retried with the backoff
            raise NodeAgentError("; ".join(missing))
        return None

    def _owned(self, ns: str, svc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        uid = P.uid(svc)
        name = (svc.get("metadata") or {}).get("name")
        return [s for s in self.store.scan("EndpointSlice", ns, {SERVICE_NAME: str(name),
                                                                 SLICE_MANAGED_BY: SLICE_CONTROLLER})
                if any(r.get("uid") == uid and r.get("kind") == "Service" and r.get("apiVersion") == "v1"
                       for r in (s.get("metadata") or {}).get("ownerReferences") or ())]

    def _desired(self, svc: Mapping[str, Any], pods: list[Mapping[str, Any]], missing: list[str]) -> list[JSON]:
        spec = svc.get("spec") or {}
        publish = bool(spec.get("publishNotReadyAddresses"))
        families = [("IPv6" if f == "IPv6" else "IPv4") for f in spec.get("ipFamilies") or ("IPv4",)]
        groups: dict[tuple[str, str], tuple[list[JSON], list[JSON]]] = {}
        for pod in pods:
            if not should_be_in_endpoints(pod, publish):
                continue
            ports = _pod_ports(pod, spec)
            node_name = str((pod.get("spec") or {}).get("nodeName") or "")
            node = self.store.peek("Node", "", node_name) if node_name else None
            if node is None and not publish:  # the reconciler skips a pod of a missing node and retries
                missing.append(f"skipping Pod {P.name(pod)} for Service {P.namespace(svc)}/{P.name(svc)}: "
                               f"Node {node_name} Not Found")
                continue
            zone = ((node or {}).get("metadata") or {}).get("labels", {}).get(ZONE)
            md = pod.get("metadata") or {}
            serving = _ready(pod)
            terminating = P.deleting(pod)
            for family in families:
                addresses = [str(ipaddress.ip_address(i)) for i in pod_ips(pod)
                             if ("IPv6" if ":" in i else "IPv4") == family]
                if not addresses:
                    continue
                ep: JSON = {"addresses": addresses,
                            "conditions": {"ready": publish or (serving and not terminating),
                                           "serving": serving, "terminating": terminating},
                            "targetRef": {"kind": "Pod", "namespace": md.get("namespace"),
                                          "name": md.get("name"), "uid": md.get("uid")}}
                if host := _hostname(pod, svc):
                    ep["hostname"] = host
                if node_name:
                    ep["nodeName"] = node_name
                if zone:
                    ep["zone"] = zone
                groups.setdefault((family, json.dumps(ports, sort_keys=True)), (ports, []))[1].append(ep)
        out: list[JSON] = []
        for (family, _), (ports, eps) in sorted(groups.items()):
            eps.sort(key=lambda e: (str(e["targetRef"]["name"]), e["addresses"][0]))
            for i in range(0, len(eps), MAX_PER_SLICE):
                out.append({"addressType": family, "ports": ports, "endpoints": eps[i:i + MAX_PER_SLICE]})
        if not out:  # the placeholder slice
            out.append({"addressType": families[0], "ports": [], "endpoints": []})
        return out

    def _create(self, svc: Mapping[str, Any], want: JSON, labels: JSON, trigger: str) -> None:
        md = svc.get("metadata") or {}
        obj: JSON = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                     "metadata": {"generateName": f"{md.get('name')}-", "namespace": md.get("namespace"),
                                  "labels": labels, "annotations": {TRIGGER: trigger} if trigger else {},
                                  "ownerReferences": [P.owner_reference(svc, "v1", "Service")]},
                     **_wire(want)}
        self.store.create(obj, manager=MANAGER)

    def _update(self, current: Mapping[str, Any], want: JSON, labels: JSON, trigger: str) -> None:
        md = current.get("metadata") or {}
        if _content(current) == want and (md.get("labels") or {}) == labels:
            return
        annotations = {k: v for k, v in (md.get("annotations") or {}).items() if k != TRIGGER}
        if trigger:
            annotations[TRIGGER] = trigger
        new: JSON = {k: v for k, v in current.items() if k not in ("endpoints", "ports")}
        new["metadata"] = {**md, "labels": labels, "annotations": annotations}
        self.store.update({**new, **_wire(want)}, manager=MANAGER)

    def _delete(self, s: Mapping[str, Any]) -> None:
        md = s.get("metadata") or {}
        with contextlib.suppress(NotFound):
            self.store.delete("EndpointSlice", str(md.get("namespace")), str(md.get("name")))


def _wire(want: Mapping[str, Any]) -> JSON:
    """The slice's body as written: no ports or endpoints fields when there are none (Go's nil slices)."""
    out: JSON = {"addressType": want["addressType"]}
    if want["ports"]:
        out["ports"] = want["ports"]
    if want["endpoints"]:
        out["endpoints"] = want["endpoints"]
    return out


def _content(s: Mapping[str, Any]) -> JSON:
    """A stored slice's address type, ports and endpoints in the form `_desired` builds them."""
    eps = []
    for e in s.get("endpoints") or ():
        conditions = e.get("conditions") or {}
        ep = {k: v for k, v in e.items() if k in ("addresses", "targetRef", "hostname", "nodeName", "zone")}
        ep["conditions"] = {k: conditions.get(k) for k in ("ready", "serving", "terminating")}
        if "targetRef" in ep:
            ep["targetRef"] = {k: ep["targetRef"].get(k) for k in ("kind", "namespace", "name", "uid")}
        eps.append(ep)
    return {"addressType": s.get("addressType"), "ports": list(s.get("ports") or []), "endpoints": eps}


KINDS_ENDPOINTS = ("Service", "Pod", "Endpoints")
KINDS_SLICES = ("Service", "Pod", "EndpointSlice")
