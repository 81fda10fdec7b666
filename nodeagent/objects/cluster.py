"""Admission for policy/v1 PodDisruptionBudget, scheduling.k8s.io/v1 PriorityClass and
discovery.k8s.io/v1 EndpointSlice: upstream's defaults and the checks of pkg/apis/policy,
scheduling and discovery validation, with their field paths and wording, as store hooks; and the
two system PriorityClasses kube-apiserver creates at start.

Why: the real kube-scheduler and kube-controller-manager read and write these; a budget or a
class the real kube-apiserver refuses must not reach them here. Differences from upstream, on
purpose: the first error is reported, not the whole list (as for every kind the store checks);
the Priority admission plugin's checks are not made (a second globalDefault class is accepted,
and pods' spec.priority is not resolved from their class); an EndpointSlice's FQDN addresses are
checked as DNS subdomains of two labels or more. Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import PERCENT_MSG, Errors
from nodeagent.objects.storage import IMMUTABLE, NEGATIVE, _list, _object, _string, check_label_selector
from nodeagent.store import validation as meta

JSON = dict[str, Any]

# --- PodDisruptionBudget -----------------------------------------------------------------------

EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
_PERCENT = re.compile(r"^[0-9]+%$")
_STATUS_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def _int_or_percent(path: str, value: Any) -> None:
    """apps ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            raise meta.invalid(path, value, PERCENT_MSG)
        if int(value[:-1]) > 100:
            raise meta.invalid(path, value, "must not be greater than 100%")
    elif isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise meta.invalid(path, value, NEGATIVE)
    else:
        raise meta.invalid(path, value, "must be an integer or percentage (e.g '5%%')")


def validate_pdb(obj: JSON) -> JSON:
    """ValidatePodDisruptionBudget: not both minAvailable and maxUnavailable, each a non-negative
    number or a percentage up to 100%, the selector, the eviction policy; the status' counts are
    Go ints written without omitempty, so they are 0 when not set."""
    spec = _object(obj.get("spec"), "spec")
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        raise ValidationError("spec", "Invalid value: " + _go_pdb_spec(spec)
                              + ": minAvailable and maxUnavailable cannot be both set")
    for key in ("minAvailable", "maxUnavailable"):
        if spec.get(key) is not None:
            _int_or_percent(f"spec.{key}", spec[key])
    check_label_selector("spec.selector", spec.get("selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in EVICTION_POLICIES:
        raise meta.not_supported("spec.unhealthyPodEvictionPolicy", policy, EVICTION_POLICIES)
    status = obj.get("status")
    status = dict(status) if isinstance(status, Mapping) else {}
    for key in _STATUS_COUNTS:
        if status.get(key) is None:
            status[key] = 0
        elif isinstance(status[key], int) and status[key] < 0:
            raise meta.invalid(f"status.{key}", status[key], NEGATIVE)
    obj["status"] = status
    return obj


def _go_pdb_spec(spec: Mapping[str, Any]) -> str:
    """The internal PodDisruptionBudgetSpec as encoding/json prints it (Go names, no json tags;
    the selector is the versioned LabelSelector with its tags)."""
    return json.dumps({"MinAvailable": spec.get("minAvailable"), "Selector": spec.get("selector"),
                       "MaxUnavailable": spec.get("maxUnavailable"),
                       "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy")},
                      separators=(",", ":"))


# --- PriorityClass -----------------------------------------------------------------------------

HIGHEST_USER_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_PRIORITY
SYSTEM_PREFIX = "system-"
SYSTEM_PRIORITY_CLASSES: tuple[tuple[str, int, str], ...] = (
    ("system-node-critical", SYSTEM_CRITICAL_PRIORITY + 1000,
     "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", SYSTEM_CRITICAL_PRIORITY,
     "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
)
"""upstream's systemPriorityClasses (pkg/apis/scheduling/v1/helpers.go): name, value, description."""
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")


def system_priority_classes() -> list[JSON]:
    """The PriorityClasses kube-apiserver's scheduling post-start hook creates when missing."""
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": value, "description": description, "preemptionPolicy": "PreemptLowerPriority"}
            for name, value, description in SYSTEM_PRIORITY_CLASSES]


def validate_priority_class(obj: JSON) -> JSON:
    """SetDefaults_PriorityClass (preemptionPolicy PreemptLowerPriority), then
    ValidatePriorityClass: `system-` names are the system classes' exactly, other values at most
    one billion, a known preemption policy."""
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"
    errs = Errors()
    name = _string(_object(obj.get("metadata"), "metadata").get("name"), "metadata.name")
    value = obj.get("value")
    value = value if isinstance(value, int) else 0
    if name.startswith(SYSTEM_PREFIX):
        known = {n: v for n, v, _ in SYSTEM_PRIORITY_CLASSES}
        reason = ""
        if name not in known:
            reason = f"{name} is not a known system priority class"
        elif known[name] != value:
            reason = f"value of {name} PriorityClass must be {known[name]}"
        elif bool(obj.get("globalDefault")):
            reason = f"globalDefault of {name} PriorityClass must be false"
        if reason:
            errs.append(meta.forbidden("metadata.name", "priority class names with 'system-' prefix are reserved "
                                                        f"for system use only. error: {reason}"))
    elif value > HIGHEST_USER_PRIORITY:
        errs.append(meta.forbidden("value", f"maximum allowed value of a user defined priority is "
                                            f"{HIGHEST_USER_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy == "":
        errs.append(meta.required("preemptionPolicy"))
    elif policy not in PREEMPTION_POLICIES:
        errs.append(meta.not_supported("preemptionPolicy", policy, ("PreemptLowerPriority", "Never"), ordered=True))
    errs.raise_all()  # every error listed, as ValidatePriorityClass appends them
    return obj


def validate_priority_class_update(new: JSON, old: JSON) -> None:
    """ValidatePriorityClassUpdate: value and preemptionPolicy are immutable."""
    if new.get("value") != old.get("value"):
        raise meta.forbidden("value", "may not be changed in an update.")
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        raise meta.invalid("preemptionPolicy", new.get("preemptionPolicy"), IMMUTABLE)


# --- EndpointSlice -----------------------------------------------------------------------------

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000
MAX_TOPOLOGY_LABELS = 16
MAX_HINTS = 8
IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _too_many(path: str, count: int, limit: int) -> ValidationError:
    return ValidationError(path, f"Too many: {count}: must have at most {limit} items")


def _endpoint_ip(path: str, index_path: str, address: str, family: int) -> None:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise meta.invalid(index_path, address, IP_MSG) from None
    if family == 6 and str(ip) != address:
        raise meta.invalid(index_path, address, f'must be in canonical form ("{ip}")')
    if ip.version != family:
        raise meta.invalid(path, address, f"must be an IPv{family} address")
    if ip.is_unspecified:
        raise meta.invalid(index_path, address, f"may not be unspecified ({address})")
    if ip.is_loopback:
        raise meta.invalid(index_path, address, "may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if ip.is_link_local and not ip.is_multicast:
        raise meta.invalid(index_path, address, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    link_local_multicast = ipaddress.ip_network("224.0.0.0/24" if family == 4 else "ff02::/16")
    if ip in link_local_multicast:
        raise meta.invalid(index_path, address,
                           "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")


def default_endpoint_slice(obj: JSON) -> JSON:
    """SetDefaults_EndpointPort: a port's name defaults to "" and its protocol to TCP."""
    for port in obj.get("ports") or ():
        if isinstance(port, dict):
            if port.get("name") is None:
                port["name"] = ""
            if port.get("protocol") is None:
                port["protocol"] = "TCP"
    return obj


def validate_endpoint_slice(obj: JSON) -> JSON:
    """Defaults, then ValidateEndpointSlice: address type, ports, endpoints (addresses of the
    slice's type, node name, topology labels, hostname, hints)."""
    obj = default_endpoint_slice(obj)
    address_type = _string(obj.get("addressType"), "addressType")
    if not address_type:
        raise meta.required("addressType")
    if address_type not in ADDRESS_TYPES:
        raise meta.not_supported("addressType", address_type, ADDRESS_TYPES)
    ports = _list(obj.get("ports"), "ports")
    if len(ports) > MAX_PORTS:
        raise _too_many("ports", len(ports), MAX_PORTS)
    names: list[str] = []
    for i, raw in enumerate(ports):
        path = f"ports[{i}]"
        port = _object(raw, path)
        name = _string(port.get("name"), f"{path}.name")
        if name:
            meta.check_dns_label(f"{path}.name", name)
        if name in names:
            raise meta.duplicate(f"{path}.name", name)
        names.append(name)
        protocol = port.get("protocol")
        if protocol not in PORT_PROTOCOLS:
            raise meta.not_supported(f"{path}.protocol", protocol, PORT_PROTOCOLS)
        if port.get("appProtocol") is not None:
            meta.check_qualified_name(f"{path}.appProtocol", _string(port["appProtocol"], f"{path}.appProtocol"))
    endpoints = _list(obj.get("endpoints"), "endpoints")
    if len(endpoints) > MAX_ENDPOINTS:
        raise _too_many("endpoints", len(endpoints), MAX_ENDPOINTS)
    for i, raw in enumerate(endpoints):
        _endpoint(f"endpoints[{i}]", _object(raw, f"endpoints[{i}]"), address_type)
    return obj


def _endpoint(path: str, endpoint: Mapping[str, Any], address_type: str) -> None:
    addresses = _list(endpoint.get("addresses"), f"{path}.addresses")
    if not addresses:
        raise meta.required(f"{path}.addresses", "must contain at least 1 address")
    if len(addresses) > MAX_ADDRESSES:
        raise _too_many(f"{path}.addresses", len(addresses), MAX_ADDRESSES)
    for j, raw in enumerate(addresses):
        address = _string(raw, f"{path}.addresses[{j}]")
        if address_type in ("IPv4", "IPv6"):
            _endpoint_ip(f"{path}.addresses", f"{path}.addresses[{j}]", address, 4 if address_type == "IPv4" else 6)
        else:
            fqdn = address.removesuffix(".")
            if not fqdn:
                raise meta.required(f"{path}.addresses[{j}]")
            meta.check_dns_subdomain(f"{path}.addresses[{j}]", fqdn)
            if len(fqdn.split(".")) < 2:
                raise meta.invalid(f"{path}.addresses[{j}]", fqdn, "should be a domain with at least two segments "
                                                                    "separated by dots")
    if endpoint.get("nodeName") is not None:
        meta.check_dns_subdomain(f"{path}.nodeName", _string(endpoint["nodeName"], f"{path}.nodeName"))
    topology = _object(endpoint.get("deprecatedTopology"), f"{path}.deprecatedTopology")
    if len(topology) > MAX_TOPOLOGY_LABELS:
        raise _too_many(f"{path}.deprecatedTopology", len(topology), MAX_TOPOLOGY_LABELS)
    meta.check_labels(f"{path}.deprecatedTopology", {str(k): str(v) for k, v in topology.items()})
    if endpoint.get("hostname") is not None:
        meta.check_dns_label(f"{path}.hostname", _string(endpoint["hostname"], f"{path}.hostname"))
    hints = _object(endpoint.get("hints"), f"{path}.hints")
    for key in ("forZones", "forNodes"):
        entries = _list(hints.get(key), f"{path}.hints.{key}")
        if len(entries) > MAX_HINTS:
            raise _too_many(f"{path}.hints.{key}", len(entries), MAX_HINTS)
        seen: set[str] = set()
        for k, entry in enumerate(entries):
            epath = f"{path}.hints.{key}[{k}].name"
            name = _string(_object(entry, epath).get("name"), epath)
            if name in seen:
                raise meta.duplicate(epath, name)
            seen.add(name)
            if key == "forZones":
                meta.check_label_value(epath, name)
            else:
                meta.check_dns_subdomain(epath, name)


def validate_endpoint_slice_update(new: JSON, old: JSON) -> None:
    """ValidateEndpointSliceUpdate: addressType is immutable."""
    if new.get("addressType") != old.get("addressType"):
        raise meta.invalid("addressType", new.get("addressType"), IMMUTABLE)


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {
        "PodDisruptionBudget": {"default": validate_pdb},
        "PriorityClass": {"default": validate_priority_class, "validate_update": validate_priority_class_update},
        "EndpointSlice": {"default": validate_endpoint_slice, "validate_update": validate_endpoint_slice_update},
    }
