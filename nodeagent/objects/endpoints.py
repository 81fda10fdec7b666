"""Endpoints (core v1): upstream's defaulting (SetDefaults_Endpoints: ports' protocol TCP) and
ValidateEndpoints (pkg/apis/core/validation), as store hooks so every writer is checked.

Why: kube-controller-manager's endpoints controller and mirroring controllers write these, and
clients still read them (the kind is deprecated for EndpointSlices but served, as upstream).
Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from nodeagent.objects.common import Errors
from nodeagent.objects.service import PROTOCOLS
from nodeagent.store import validation as meta

JSON = dict[str, Any]
_IP_TEXT = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def default_endpoints(obj: JSON) -> JSON:
    for subset in obj.get("subsets") or ():
        for port in (subset.get("ports") or ()) if isinstance(subset, dict) else ():
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"
    return obj


def _address(errs: Errors, address: Mapping[str, Any], path: str) -> None:
    """validateEndpointAddress: the IP (IsValidIPForLegacyField, then ValidateEndpointIP), hostname, nodeName."""
    raw = str(address.get("ip") or "")
    try:
        ip = ipaddress.ip_address(raw)
    except ValueError:
        ip = None
    if ip is None:
        errs.append(meta.invalid(f"{path}.ip", raw, _IP_TEXT))
    elif isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        errs.append(meta.invalid(f"{path}.ip", raw, "must not be an IPv4-mapped IPv6 address"))
    if address.get("hostname"):
        errs.check(meta.check_dns_label, f"{path}.hostname", str(address["hostname"]))
    if address.get("nodeName") is not None:
        errs.check(meta.check_dns_subdomain, f"{path}.nodeName", str(address["nodeName"]))
    if ip is None:
        errs.append(meta.invalid(f"{path}.ip", raw, "must be a valid IP address"))
        return
    if ip.is_unspecified:
        errs.append(meta.invalid(f"{path}.ip", raw, f"may not be unspecified ({raw})"))
    if ip.is_loopback:
        errs.append(meta.invalid(f"{path}.ip", raw, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local:
        errs.append(meta.invalid(f"{path}.ip", raw, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if ip in ipaddress.ip_network("224.0.0.0/24") or ip in ipaddress.ip_network("ff02::/16"):
        errs.append(meta.invalid(f"{path}.ip", raw, "may not be in the link-local multicast range (224.0.0.0/24, "
                                 "ff02::/10)"))


def _port(errs: Errors, port: Mapping[str, Any], require_name: bool, path: str) -> None:
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(meta.required(f"{path}.name"))
    elif name:
        errs.check(meta.check_dns_label, f"{path}.name", str(name))
    number = port.get("port")
    if not isinstance(number, int) or not 1 <= number <= 65535:
        errs.append(meta.invalid(f"{path}.port", number or 0, "must be between 1 and 65535, inclusive"))
    protocol = port.get("protocol") or ""
    if not protocol:
        errs.append(meta.required(f"{path}.protocol"))
    elif protocol not in PROTOCOLS:
        errs.append(meta.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    if port.get("appProtocol") is not None:
        errs.check(meta.check_qualified_name, f"{path}.appProtocol", str(port["appProtocol"]))


def subset_errors(obj: Mapping[str, Any]) -> Errors:
    """validateEndpointSubsets."""
    errs = Errors()
    for i, subset in enumerate(obj.get("subsets") or ()):
        subset = subset if isinstance(subset, Mapping) else {}
        path = f"subsets[{i}]"
        if not subset.get("addresses") and not subset.get("notReadyAddresses"):
            errs.append(meta.required(path, "must specify `addresses` or `notReadyAddresses`"))
        for key in ("addresses", "notReadyAddresses"):
            for j, address in enumerate(subset.get(key) or ()):
                _address(errs, address if isinstance(address, Mapping) else {}, f"{path}.{key}[{j}]")
        ports = subset.get("ports") or ()
        for j, port in enumerate(ports):
            _port(errs, port if isinstance(port, Mapping) else {}, len(ports) > 1, f"{path}.ports[{j}]")
    return errs


def validate_endpoints(obj: JSON) -> None:
    subset_errors(obj).raise_all()


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {"Endpoints": {"default": default_endpoints, "validate": validate_endpoints}}
