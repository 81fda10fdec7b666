"""Admission for networking.k8s.io/v1 ServiceCIDR: pkg/apis/networking/validation's ValidateServiceCIDR
and ValidateServiceCIDRUpdate, with their field paths and wording, as store hooks so every writer is
checked.

Why: kube-controller-manager's service-cidr controller and kube-apiserver's ClusterIP allocators read
ServiceCIDRs; a malformed one the real kube-apiserver refuses would reach them here. As for every
kind the store checks, the first error is reported, not the whole list. IPAddress: ValidateIPAddress
and its update (the name, an IP address in canonical form, is checked by the store: Kind.ip_names).
Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects import ingress
from nodeagent.store import validation as meta

JSON = dict[str, Any]
CIDRS = "spec.cidrs"
IMMUTABLE = "field is immutable"
CIDR_MSG = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _json(value: Any) -> str:
    """A non-scalar Invalid value as field.Error prints it since 1.36: compact JSON."""
    return json.dumps(value, separators=(",", ":"))


def _cidrs(obj: JSON) -> list[str]:
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise meta.invalid("spec", spec, "must be an object")
    raw = (spec or {}).get("cidrs") or []
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        raise meta.invalid(CIDRS, raw, "must be a list of strings")
    return list(raw)


def check_cidr(path: str, value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """IsValidCIDR (strict): parseable, no leading zeros, no IPv4-mapped IPv6 address, no host bits,
    canonical form."""
    addr, slash, prefix = value.partition("/")
    try:
        if not slash:
            raise ValueError(value)
        ip = ipaddress.ip_address(addr)
        net = ipaddress.ip_network(f"{ip}/{int(prefix)}", strict=False)
    except ValueError:
        if _sloppy(addr, prefix):
            raise meta.invalid(path, value, "must not have leading 0s in IP or prefix length") from None
        raise meta.invalid(path, value, CIDR_MSG) from None
    if (prefix != str(int(prefix))) or not prefix.isdigit():
        raise meta.invalid(path, value, "must not have leading 0s in IP or prefix length")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        raise meta.invalid(path, value, "must not have an IPv4-mapped IPv6 address")
    if net.network_address != ip:
        raise meta.invalid(path, value, "must not have bits set beyond the prefix length")
    if str(net) != value:
        raise meta.invalid(path, value, f'must be in canonical form ("{net}")')
    return net


def _sloppy(addr: str, prefix: str) -> bool:
    """Whether Go's sloppy parser (netutils.ParseCIDRSloppy) takes what the strict one refused:
    an IPv4 address or a prefix length with leading zeros."""
    parts = addr.split(".")
    if len(parts) != 4 or not prefix.isdigit():
        return False
    if not all(p.isdigit() and int(p) < 256 for p in parts):
        return False
    return int(prefix) <= 32


def _check_spec(cidrs: list[str]) -> None:
    """validateServiceCIDRSpec."""
    if not cidrs:
        raise meta.required(CIDRS, "at least one CIDR required")
    if len(cidrs) > 2:
        # the value is the internal ServiceCIDRSpec, whose Go field is CIDRs
        raise ValidationError(CIDRS, f"Invalid value: {_json({'CIDRs': cidrs})}: may only hold up to 2 values")
    nets = [check_cidr(f"{CIDRS}[{i}]", c) for i, c in enumerate(cidrs)]
    if len(nets) == 2 and nets[0].version == nets[1].version:
        raise ValidationError(CIDRS, f"Invalid value: {_json(cidrs)}: may specify no more than one IP for "
                                     "each IP family, i.e 192.168.0.0/24 and 2001:db8::/64")


def validate_service_cidr(obj: JSON) -> JSON:
    """ValidateServiceCIDR: one or two CIDRs, each valid and canonical, one per IP family."""
    _check_spec(_cidrs(obj))
    return obj


def validate_service_cidr_update(new: JSON, old: JSON) -> None:
    """ValidateServiceCIDRUpdate: the CIDRs are immutable, but a single-stack one may gain a second family."""
    now, was = _cidrs(new), _cidrs(old)
    if len(now) == len(was):
        for i, cidr in enumerate(was):
            if cidr != now[i]:
                raise meta.invalid(f"{CIDRS}[{i}]", now[i], IMMUTABLE)
    elif len(was) == 1 and len(now) == 2:
        if now[0] != was[0]:
            raise meta.invalid(f"{CIDRS}[0]", now[0], IMMUTABLE)
        _check_spec(now)
    else:
        raise ValidationError(CIDRS, f"Invalid value: {_json(now)}: {IMMUTABLE}")


PARENT = "spec.parentRef"


def validate_ip_address(obj: JSON) -> JSON:
    """validateIPAddressParentReference: a parentRef with a resource and a name (path segments), its
    group a DNS subdomain when set (the core group is ""), its namespace a path segment when set."""
    spec: Any = obj.get("spec")
    ref = spec.get("parentRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict):
        raise meta.required(PARENT)
    group = str(ref.get("group") or "")
    if group:
        meta.check_dns_subdomain(f"{PARENT}.group", group)
    for key in ("resource", "name"):
        value = str(ref.get(key) or "")
        if not value:
            raise meta.required(f"{PARENT}.{key}")
        meta.check_path_segment(f"{PARENT}.{key}", value)
    namespace = str(ref.get("namespace") or "")
    if namespace:
        meta.check_path_segment(f"{PARENT}.namespace", namespace)
    return obj


def validate_ip_address_update(new: JSON, old: JSON) -> None:
    """ValidateIPAddressUpdate: the parentRef is immutable (kube-apiserver v1.37.2's declarative
    immutability check reports the value as null, as checked against it)."""
    now, was = ((o.get("spec") or {}).get("parentRef") or {} for o in (new, old))
    if {k: now.get(k) or "" for k in _REF} != {k: was.get(k) or "" for k in _REF}:
        raise ValidationError(PARENT, f"Invalid value: null: {IMMUTABLE}")


_REF = ("group", "resource", "namespace", "name")


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {"ServiceCIDR": {"default": validate_service_cidr, "validate_update": validate_service_cidr_update},
            "IPAddress": {"default": validate_ip_address, "validate_update": validate_ip_address_update},
            **ingress.hooks()}
