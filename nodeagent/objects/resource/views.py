"""Typed read-only views of validated resource.k8s.io objects, for the scheduler and allocator.

The store keeps JSON dicts that went through objects/resource.validate (v1 shape, defaults
filled in); these helpers turn the parts the allocator walks into frozen dataclasses:
a claim's requests with their ordered alternatives, constraints and config, a class's
selectors and config, and a slice's pool, node selection and devices with fully qualified
attribute and capacity names. Thin on purpose: no decisions here. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeagent.objects.common import node_selector_matches
from nodeagent.objects.resource.validation import ALL, EXACT_COUNT, FROM_CLAIM, FROM_CLASS

__all__ = [
    "ALL",
    "EXACT_COUNT",
    "Attribute",
    "ClaimConfig",
    "Constraint",
    "DeviceRequest",
    "ExactRequest",
    "SliceDevice",
    "SliceInfo",
    "claim_config",
    "claim_constraints",
    "claim_requests",
    "class_config",
    "class_selectors",
    "node_selector_matches",
    "qualify",
    "slice_info",
]


@dataclass(frozen=True)
class ExactRequest:
    """One way to satisfy a request: the `exactly` body, or one firstAvailable subrequest."""

    request: str  # the main request's name
    subrequest: str  # "" for `exactly`
    device_class_name: str
    selectors: tuple[str, ...] = ()  # CEL expressions
    allocation_mode: str = EXACT_COUNT
    count: int = 1  # meaningless for allocation_mode All
    admin_access: bool = False
    tolerations: tuple[Mapping[str, Any], ...] = ()

    @property
    def ref(self) -> str:
        """The name results, config and constraints use: `request` or `request/subrequest`."""
        return f"{self.request}/{self.subrequest}" if self.subrequest else self.request


@dataclass(frozen=True)
class DeviceRequest:
    name: str
    alternatives: tuple[ExactRequest, ...]  # one for `exactly`; firstAvailable in order of preference
    first_available: bool = False


@dataclass(frozen=True)
class Constraint:
    requests: tuple[str, ...]  # empty: all requests; entries may be `request/subrequest`
    match_attribute: str = ""
    distinct_attribute: str = ""


@dataclass(frozen=True)
class ClaimConfig:
    requests: tuple[str, ...]  # empty: every request
    driver: str
    parameters: Mapping[str, Any]
    source: str = FROM_CLAIM  # FromClaim | FromClass


@dataclass(frozen=True)
class Attribute:
    kind: str  # "int" | "bool" | "string" | "version", or a list kind: "ints" | "bools" | "strings" | "versions"
    value: int | bool | str | tuple[int | bool | str, ...]


@dataclass(frozen=True)
class SliceDevice:
    name: str
    attributes: Mapping[str, Attribute] = field(default_factory=dict)  # fully qualified names
    capacity: Mapping[str, str] = field(default_factory=dict)  # fully qualified names -> quantity text


@dataclass(frozen=True)
class SliceInfo:
    name: str
    driver: str
    pool: str
    generation: int
    resource_slice_count: int
    node_name: str = ""
    node_selector: Mapping[str, Any] | None = None
    all_nodes: bool = False
    devices: tuple[SliceDevice, ...] = ()


def _claim_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """Accept a ResourceClaim, a ResourceClaimTemplate, or a bare claim spec."""
    if obj.get("kind") == "ResourceClaimTemplate":
        return (obj.get("spec") or {}).get("spec") or {}
    if "spec" in obj:
        return obj.get("spec") or {}
    return obj


def _exact(request: str, subrequest: str, body: Mapping[str, Any]) -> ExactRequest:
    return ExactRequest(
        request=request,
        subrequest=subrequest,
        device_class_name=body.get("deviceClassName", ""),
        selectors=tuple(s["cel"]["expression"] for s in body.get("selectors") or ()),
        allocation_mode=body.get("allocationMode") or EXACT_COUNT,
        count=int(body.get("count") or 1),
        admin_access=bool(body.get("adminAccess")),
        tolerations=tuple(body.get("tolerations") or ()),
    )


def claim_requests(claim: Mapping[str, Any]) -> tuple[DeviceRequest, ...]:
    out: list[DeviceRequest] = []
    for req in (_claim_spec(claim).get("devices") or {}).get("requests") or ():
        name = req["name"]
        if req.get("firstAvailable"):
            alts = tuple(_exact(name, sub["name"], sub) for sub in req["firstAvailable"])
            out.append(DeviceRequest(name, alts, first_available=True))
        else:
            out.append(DeviceRequest(name, (_exact(name, "", req.get("exactly") or {}),)))
    return tuple(out)


def claim_constraints(claim: Mapping[str, Any]) -> tuple[Constraint, ...]:
    return tuple(
        Constraint(tuple(c.get("requests") or ()), c.get("matchAttribute", ""), c.get("distinctAttribute", ""))
        for c in (_claim_spec(claim).get("devices") or {}).get("constraints") or ()
    )


def _configs(entries: Any, source: str) -> tuple[ClaimConfig, ...]:
    return tuple(
        ClaimConfig(
            tuple(c.get("requests") or ()),
            c["opaque"]["driver"],
            c["opaque"].get("parameters") or {},
            c.get("source", source),
        )
        for c in entries or ()
    )


def claim_config(claim: Mapping[str, Any]) -> tuple[ClaimConfig, ...]:
    return _configs((_claim_spec(claim).get("devices") or {}).get("config"), FROM_CLAIM)


def class_selectors(device_class: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(s["cel"]["expression"] for s in (device_class.get("spec") or {}).get("selectors") or ())


def class_config(device_class: Mapping[str, Any]) -> tuple[ClaimConfig, ...]:
    return _configs((device_class.get("spec") or {}).get("config"), FROM_CLASS)


def qualify(name: str, driver: str) -> str:
    """An attribute or capacity name without a domain belongs to the driver's domain."""
    return name if "/" in name else f"{driver}/{name}"


def slice_info(resource_slice: Mapping[str, Any]) -> SliceInfo:
    spec = resource_slice.get("spec") or {}
    driver = spec.get("driver", "")
    pool = spec.get("pool") or {}
    devices = tuple(
        SliceDevice(
            name=d["name"],
            attributes={
                qualify(k, driver): Attribute(kind, tuple(val) if isinstance(val, list) else val)
                for k, v in (d.get("attributes") or {}).items()
                for kind, val in v.items()
            },
            capacity={qualify(k, driver): str(v["value"]) for k, v in (d.get("capacity") or {}).items()},
        )
        for d in spec.get("devices") or ()
    )
    return SliceInfo(
        name=(resource_slice.get("metadata") or {}).get("name", ""),
        driver=driver,
        pool=pool.get("name", ""),
        generation=int(pool.get("generation") or 0),
        resource_slice_count=int(pool.get("resourceSliceCount") or 1),
        node_name=spec.get("nodeName", ""),
        node_selector=spec.get("nodeSelector"),
        all_nodes=bool(spec.get("allNodes")),
        devices=devices,
    )
