"""Server-side printers of the core kinds the control-plane components read: Service, Secret.

Why apart from core.py: these kinds came with the real kube-scheduler and kube-controller-manager
(issue 23); each printer follows k8s.io/kubernetes pkg/printers/internalversion/printers.go
(printService, printSecret) cell by cell, and the column descriptions are the Go fields' docs
as upstream's SwaggerDoc gives them. Pure: no I/O; `now` is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.tables.common import (
    AGE_COLUMN,
    NAME_COLUMN,
    Cells,
    Printer,
    age,
    column,
    get,
    items,
    name_of,
    text,
)

LOAD_BALANCER_WIDTH = 16

_SERVICE_COLUMNS = (
    NAME_COLUMN,
    column("Type", 'type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, '
           'ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a cluster-internal IP address for '
           "load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by "
           "manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual "
           "IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. "
           '"NodePort" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as '
           'the clusterIP. "LoadBalancer" builds on NodePort and creates an external load-balancer (if supported in '
           'the current cloud) which routes to the same endpoints as the clusterIP. "ExternalName" aliases this '
           "service to the specified externalName. Several other fields do not apply to ExternalName services. More "
           "info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"),
    column("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly. If an address "
           "is specified manually, is in-range (as per system configuration), and is not in use, it will be "
           "allocated to the service; otherwise creation of the service will fail. This field may not be changed "
           "through updates unless the type field is also being changed to ExternalName (which requires this field "
           "to be blank) or the type field is being changed from ExternalName (in which case this field may "
           'optionally be specified, as describe above).  Valid values are "None", empty string (""), or a valid IP '
           'address. Setting this to "None" makes a "headless service" (no virtual IP), which is useful when direct '
           "endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, "
           "NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, "
           "creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: "
           "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
    column("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
           "traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for "
           "ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that "
           "are not part of the Kubernetes system."),
    column("Port(s)", "The list of ports that are exposed by this service. More info: "
           "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
    AGE_COLUMN,
    column("Selector", "Route service traffic to pods with label keys and values matching this selector. If empty or "
           "not present, the service is assumed to have an external process managing its endpoints, which "
           "Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type "
           "is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
           priority=1),
)


def _load_balancer(status: Any, wide: bool) -> str:
    """loadBalancerStatusStringer: the ingress IPs (or hostnames), sorted and unique."""
    found = sorted({text(i, "ip") or text(i, "hostname") for i in items(status, "ingress")} - {""})
    out = ",".join(found)
    if not wide and len(out) > LOAD_BALANCER_WIDTH:
        out = out[: LOAD_BALANCER_WIDTH - 3] + "..."
    return out


def _external_ip(svc: Mapping[str, Any]) -> str:
    """getServiceExternalIP (the table is built as a non-wide print: upstream's server side is)."""
    kind = text(svc, "spec", "type")
    external = [str(ip) for ip in items(svc, "spec", "externalIPs")]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        lb = _load_balancer(get(svc, "status", "loadBalancer"), False)
        if external:
            return ",".join([*(lb.split(",") if lb else []), *external])
        return lb or "<pending>"
    if kind == "ExternalName":
        return text(svc, "spec", "externalName")
    return "<unknown>"


def _ports(svc: Mapping[str, Any]) -> str:
    pieces = []
    for port in items(svc, "spec", "ports"):
        number, protocol, node_port = get(port, "port") or 0, text(port, "protocol"), get(port, "nodePort") or 0
        pieces.append(f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}")
    return ",".join(pieces) or "<none>"


def _selector(svc: Mapping[str, Any]) -> str:
    """labels.FormatLabels: sorted key=value pairs, `<none>` when empty."""
    selector = get(svc, "spec", "selector")
    if not isinstance(selector, Mapping) or not selector:
        return "<none>"
    return ",".join(f"{k}={selector[k]}" for k in sorted(selector))


def _service_cells(svc: Mapping[str, Any], now: float) -> Cells:
    ips = items(svc, "spec", "clusterIPs")
    return [name_of(svc), text(svc, "spec", "type"), str(ips[0]) if ips else "<none>", _external_ip(svc),
            _ports(svc), age(svc, now), _selector(svc)]


_SECRET_COLUMNS = (
    NAME_COLUMN,
    column("Type", "Used to facilitate programmatic handling of secret data. More info: "
           "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    column("Data", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. "
           "The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly "
           "non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
    AGE_COLUMN,
)


def _secret_cells(secret: Mapping[str, Any], now: float) -> Cells:
    data = get(secret, "data")
    return [name_of(secret), text(secret, "type"), len(data) if isinstance(data, Mapping) else 0, age(secret, now)]


PRINTERS: dict[str, Printer] = {
    "service": Printer(_SERVICE_COLUMNS, _service_cells),
    "secret": Printer(_SECRET_COLUMNS, _secret_cells),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
