"""Server-side printers of the core kinds the control-plane components read: Service, Secret,
PersistentVolume, PersistentVolumeClaim, ReplicationController, Endpoints.

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


_ACCESS_DOC = ("accessModes contains all ways the volume can be mounted. More info: "
               "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes")
_PV_COLUMNS = (
    NAME_COLUMN,
    column("Capacity", "capacity is the description of the persistent volume's resources and capacity. More info: "
           "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
    column("Access Modes", _ACCESS_DOC),
    column("Reclaim Policy", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released "
           "from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete "
           "(default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be "
           "supported by the volume plugin underlying this PersistentVolume. More info: "
           "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
    column("Status", "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: "
           "https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"),
    column("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. "
           "Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More "
           "info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
    column("StorageClass", "StorageClass of the pv"),
    column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
    column("Reason", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing "
           "and tidy display in the CLI."),
    AGE_COLUMN,
    column("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to "
           "remain in raw block state. Value of Filesystem is implied when not included in spec.", priority=1),
)
_PVC_COLUMNS = (
    NAME_COLUMN,
    column("Status", "phase represents the current phase of PersistentVolumeClaim."),
    column("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
    column("Capacity", "capacity represents the actual resources of the underlying volume."),
    column("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has. More info: "
           "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"),
    column("StorageClass", "StorageClass of the pvc"),
    column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
    AGE_COLUMN,
    column("VolumeMode", "volumeMode defines what type of volume is required by the claim. Value of Filesystem is "
           "implied when not included in claim spec.", priority=1),
)
_MODE_ABBREVIATIONS = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                       ("ReadWriteOncePod", "RWOP"))
_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def access_modes(modes: Any) -> str:
    """helper.GetAccessModesAsString: the abbreviations in a fixed order, each once."""
    present = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _MODE_ABBREVIATIONS if mode in present)


def _storage_class(obj: Mapping[str, Any]) -> str:
    """GetPersistentVolume(Claim)Class: the beta annotation first, else spec.storageClassName."""
    annotations = get(obj, "metadata", "annotations")
    if isinstance(annotations, Mapping) and _CLASS_ANNOTATION in annotations:
        return str(annotations[_CLASS_ANNOTATION])
    return text(obj, "spec", "storageClassName")


def _phase(obj: Mapping[str, Any]) -> str:
    return "Terminating" if get(obj, "metadata", "deletionTimestamp") else text(obj, "status", "phase")


def _or_unset(value: Any) -> str:
    return value if isinstance(value, str) else "<unset>"


def _pv_cells(pv: Mapping[str, Any], now: float) -> Cells:
    ref = get(pv, "spec", "claimRef")
    claim = f"{text(ref, 'namespace')}/{text(ref, 'name')}" if isinstance(ref, Mapping) else ""
    size = get(pv, "spec", "capacity", "storage")
    return [name_of(pv), str(size) if size is not None else "0", access_modes(get(pv, "spec", "accessModes")),
            text(pv, "spec", "persistentVolumeReclaimPolicy"), _phase(pv), claim, _storage_class(pv),
            _or_unset(get(pv, "spec", "volumeAttributesClassName")), text(pv, "status", "reason"), age(pv, now),
            _or_unset(get(pv, "spec", "volumeMode"))]


def _pvc_cells(pvc: Mapping[str, Any], now: float) -> Cells:
    capacity = modes = ""
    if text(pvc, "spec", "volumeName"):
        modes = access_modes(get(pvc, "status", "accessModes"))
        size = get(pvc, "status", "capacity", "storage")
        capacity = str(size) if size is not None else "0"
    return [name_of(pvc), _phase(pvc), text(pvc, "spec", "volumeName"), capacity, modes, _storage_class(pvc),
            _or_unset(get(pvc, "spec", "volumeAttributesClassName")), age(pvc, now),
            _or_unset(get(pvc, "spec", "volumeMode"))]


_RC_COLUMNS = (
    NAME_COLUMN,
    column("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit "
           "zero and unspecified. Defaults to 1. More info: "
           "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
           type_="integer"),
    column("Current", "Replicas is the most recently observed number of replicas. More info: "
           "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
           type_="integer"),
    column("Ready", "The number of ready replicas for this replication controller.", type_="integer"),
    AGE_COLUMN,
    column("Containers", "Names of each container in the template.", priority=1),
    column("Images", "Images referenced by each container in the template.", priority=1),
    column("Selector", "Selector is a label query over pods that should match the Replicas count. If Selector is "
           "empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match "
           "in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. "
           "More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
           priority=1),
)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rc_cells(rc: Mapping[str, Any], now: float) -> Cells:
    containers = [c for c in items(rc, "spec", "template", "spec", "containers") if isinstance(c, Mapping)]
    selector = get(rc, "spec", "selector")
    labels = ",".join(f"{k}={selector[k]}" for k in sorted(selector)) if isinstance(selector, Mapping) else ""
    return [name_of(rc), _int(get(rc, "spec", "replicas")), _int(get(rc, "status", "replicas")),
            _int(get(rc, "status", "readyReplicas")), age(rc, now),
            ",".join(text(c, "name") for c in containers), ",".join(text(c, "image") for c in containers),
            labels or "<none>"]


_ENDPOINTS_COLUMNS = (
    NAME_COLUMN,
    column("Endpoints", "The set of all endpoints is the union of all subsets. Addresses are placed into subsets "
           "according to the IPs they share. A single address with multiple ports, some of which are ready and some "
           "of which are not (because they come from different containers) will result in the address being "
           "displayed in different subsets for the different ports. No address will appear in both Addresses and "
           "NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service."),
    AGE_COLUMN,
)
MAX_ENDPOINTS = 3


def _host_port(ip: str, port: int) -> str:
    """net.JoinHostPort: an IPv6 address in brackets."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def format_endpoints(ep: Mapping[str, Any]) -> str:
    """formatEndpoints: up to three ready `ip:port` (or bare IPs where no port), then `+ N more...`."""
    subsets = items(ep, "subsets")
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    more = False
    for subset in subsets:
        addresses = [text(a, "ip") for a in items(subset, "addresses")]
        ports = items(subset, "ports")
        for port in ports or [None]:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == MAX_ENDPOINTS:
                    more = True
                    break
                shown.append(ip if port is None else _host_port(ip, _int(get(port, "port"))))
    out = ",".join(shown)
    return f"{out} + {count - MAX_ENDPOINTS} more..." if more else out


PRINTERS: dict[str, Printer] = {
    "endpoints": Printer(_ENDPOINTS_COLUMNS, lambda o, now: [name_of(o), format_endpoints(o), age(o, now)]),
    "replicationcontroller": Printer(_RC_COLUMNS, _rc_cells),
    "service": Printer(_SERVICE_COLUMNS, _service_cells),
    "secret": Printer(_SECRET_COLUMNS, _secret_cells),
    "persistentvolume": Printer(_PV_COLUMNS, _pv_cells),
    "persistentvolumeclaim": Printer(_PVC_COLUMNS, _pvc_cells),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
