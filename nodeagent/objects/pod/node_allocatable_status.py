"""pod.status.nodeAllocatableResourceClaimStatuses (KEP-5517, DRANodeAllocatableResources): what
the API server does with it on a pod status write, and what a pod's requests gain from it.

Upstream (v1.37.2): the scheduler's DynamicResources plugin writes the field in PreBind; the
kubelet never changes it (status_manager keeps the stored value) and NodeRestriction refuses a
node that tries. The pod status strategy keeps the stored value when a write leaves it out (an old
client), drops it with the gate off unless the stored pod already has it (dropPodNodeAllocatable
ResourceStatus), and ValidatePodStatusUpdate checks each entry (validateNodeAllocatableResource
ClaimStatus). Every consumer of pod requests with the gate on (the scheduler's NodeInfo, the
kubelet's admission) adds the entries (component-helpers resource.addDRANodeAllocatableClaimResources).
Pure: plain dicts in, ValidationErrors or canonical amounts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.store import validation as meta
from nodeagent.util import quantity

FIELD = "nodeAllocatableResourceClaimStatuses"
GATE = "DRANodeAllocatableResources"


def is_node_allocatable_resource_name(name: str) -> bool:
    """corehelper.IsNodeAllocatableResourceName: cpu, memory and hugepages-*."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def prepare(obj: dict[str, Any], old: Mapping[str, Any], enabled: bool) -> None:
    """podStatusStrategy.PrepareForUpdate's part for the field: kept from the stored pod when the
    write leaves it out (an explicit empty list clears it), then dropped with the gate off unless
    the stored pod uses it."""
    status = obj.get("status")
    old_status = _mapping(old.get("status"))
    if not isinstance(status, dict):
        return
    if status.get(FIELD) is None and old_status.get(FIELD) is not None:
        status[FIELD] = old_status[FIELD]
    if not enabled and not old_status.get(FIELD):
        status.pop(FIELD, None)


def errors(obj: Mapping[str, Any]) -> list[ValidationError]:
    """validateNodeAllocatableResourceClaimStatus: each entry names a claim of the pod (spec or
    generated, from resourceClaimStatuses) and only node allocatable resources, with
    non-negative quantities and at least one of perPod and perContainer per overhead."""
    status = _mapping(obj.get("status"))
    entries = _list(status.get(FIELD))
    if not entries:
        return []
    spec = _mapping(obj.get("spec"))
    known = {str(r.get("resourceClaimName")) for r in _list(spec.get("resourceClaims"))
             if isinstance(r, Mapping) and r.get("resourceClaimName") is not None}
    known |= {str(r.get("resourceClaimName")) for r in _list(status.get("resourceClaimStatuses"))
              if isinstance(r, Mapping) and r.get("resourceClaimName") is not None}
    out: list[ValidationError] = []
    path = f"status.{FIELD}"
    for i, raw in enumerate(entries):
        entry = _mapping(raw)
        here = f"{path}[{i}]"
        name = str(entry.get("resourceClaimName") or "")
        if not name:
            continue
        if name not in known:
            out.append(meta.invalid(f"{here}.resourceClaimName", name, "no mapping found in pod reference"))
        for j, item in enumerate(_list(entry.get("mapping"))):
            item = _mapping(item)
            ipath = f"{here}.mapping[{j}]"
            out += _name(item, ipath)
            out += _non_negative(item, "quantity", ipath)
        for j, item in enumerate(_list(entry.get("overhead"))):
            item = _mapping(item)
            ipath = f"{here}.overhead[{j}]"
            out += _name(item, ipath)
            if item.get("perPod") is None and item.get("perContainer") is None:
                out.append(meta.invalid(ipath, "", "at least one of perPod or perContainer must be set"))
            else:
                out += _non_negative(item, "perPod", ipath) + _non_negative(item, "perContainer", ipath)
    return out


def _name(item: Mapping[str, Any], path: str) -> list[ValidationError]:
    name = str(item.get("name") or "")
    if is_node_allocatable_resource_name(name):
        return []
    return [meta.invalid(f"{path}.name", name, "must be a node allocatable resource name")]


def _non_negative(item: Mapping[str, Any], key: str, path: str) -> list[ValidationError]:
    raw = item.get(key)
    if raw is None:
        return []
    try:
        negative = quantity.parse(raw) < 0
    except quantity.QuantityError:
        return [meta.invalid(f"{path}.{key}", raw, "quantities must match the regular expression "
                             "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    return [meta.invalid(f"{path}.{key}", str(raw), "must be non-negative")] if negative else []


def claim_resources(status: Any) -> dict[str, int]:
    """addDRANodeAllocatableClaimResources: per resource (canonical units), the mapped quantities
    plus each overhead's perPod and perContainer times the containers referencing the claim."""
    total: dict[str, int] = {}
    for raw in _list(_mapping(status).get(FIELD)):
        entry = _mapping(raw)
        containers = len(_list(entry.get("containers")))
        for item in _list(entry.get("mapping")):
            item = _mapping(item)
            _add(total, item.get("name"), item.get("quantity"), 1)
        for item in _list(entry.get("overhead")):
            item = _mapping(item)
            _add(total, item.get("name"), item.get("perPod"), 1)
            if containers:
                _add(total, item.get("name"), item.get("perContainer"), containers)
    return total


def _add(total: dict[str, int], name: Any, raw: Any, times: int) -> None:
    if raw is None or not isinstance(name, str):
        return
    try:
        value = quantity.canonical(name, raw) * times
    except quantity.QuantityError:
        return
    total[name] = total.get(name, 0) + value


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if type(value) is dict or isinstance(value, Mapping) else {}  # dict: no ABC check


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else ()
