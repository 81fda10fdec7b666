"""ResourceSlice devices' `nodeAllocatableResources` (KEP-5517, DRANodeAllocatableResources).

Why a module of its own: the field comes and goes with its alpha gate (off by default in 1.37)
and has its own rules and texts (k8s.io/kubernetes pkg/apis/resource/validation
validateNodeAllocatableResources at v1.37.2, plus the declarative union and dependentRequired
rules of the generated validations), shared by every served version (v1 and v1beta2 on the
device, v1beta1 under `basic`). With the gate off the API server drops the field on write, as
upstream's ResourceSlice strategy does (dropDisabledDRANodeAllocatableResourcesFields), except
on an update of a slice that already uses it, which keeps it (ratchet.py, as upstream).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource.shared import Gates, gate
from nodeagent.store import validation as meta
from nodeagent.util import quantity

GATE = "DRANodeAllocatableResources"  # alpha in 1.36 and 1.37, off by default
FIELD = "nodeAllocatableResources"

HUGEPAGES_PREFIX = "hugepages-"


def enabled(gates: Gates) -> bool:
    return gate(gates, GATE)


def is_node_allocatable_resource_name(name: str) -> bool:
    """corehelper.IsNodeAllocatableResourceName: cpu, memory and hugepages (no ephemeral-storage in alpha)."""
    return name in ("cpu", "memory") or name.startswith(HUGEPAGES_PREFIX)


def device_node_allocatable(body: Mapping[str, Any], path: str, capacity: Mapping[str, Any],
                            gates: Gates) -> JSON | None:
    """The device's `nodeAllocatableResources` as stored, None when unset or the gate is off;
    every error at once, in upstream's order per resource (name, mapping or overhead, mapping
    rules, overhead rules)."""
    raw = body.get(FIELD)
    if raw is None or not enabled(gates):
        return None
    fpath = join(path, FIELD)
    mappings = rc.as_obj(raw, fpath)
    errors = rc.Errors()
    out: JSON = {}
    for name in sorted(mappings):
        kpath = f"{fpath}[{name}]"
        if not is_node_allocatable_resource_name(str(name)):
            errors.append(meta.invalid(kpath, name, "must be a node allocatable resource name"))
        entry = rc.as_obj(mappings[name], kpath)
        rc.fields(entry, kpath, ("mapping", "overhead"))
        item: JSON = {}
        if entry.get("mapping") is None and entry.get("overhead") is None:
            errors.append(meta.required(kpath, "at least one of mapping or overhead must be set"))
        if entry.get("mapping") is not None:
            item["mapping"] = errors.check(_mapping, entry["mapping"], join(kpath, "mapping"), capacity)
        if entry.get("overhead") is not None:
            item["overhead"] = errors.check(_overhead, entry["overhead"], join(kpath, "overhead"))
        out[str(name)] = item
    errors.raise_all()
    return out or None


def _mapping(raw: object, path: str, capacity: Mapping[str, Any]) -> JSON:
    obj = rc.as_obj(raw, path)
    rc.fields(obj, path, ("capacityKey", "capacityMultiplier", "deviceMultiplier"))
    errors = rc.Errors()
    out: JSON = {}
    key = obj.get("capacityKey")
    if key is not None:
        key = rc.get_str(obj, "capacityKey", path)
        out["capacityKey"] = key
        if key == "":
            errors.append(meta.invalid(join(path, "capacityKey"), "", "capacityKey must not be an empty string"))
        elif key not in capacity:
            errors.append(meta.not_found(join(path, "capacityKey"), key))
    multiplier = _quantity(obj, "capacityMultiplier", path, out, errors)
    if key is not None:
        if multiplier is None and "capacityMultiplier" not in out:
            errors.append(meta.required(join(path, "capacityMultiplier"),
                                        "capacityMultiplier is required when capacityKey is set"))
        elif multiplier is not None and multiplier <= 0:
            errors.append(meta.invalid(join(path, "capacityMultiplier"), out["capacityMultiplier"],
                                       "must be positive"))
    devices = _quantity(obj, "deviceMultiplier", path, out, errors)
    if devices is not None and devices <= 0:
        errors.append(meta.invalid(join(path, "deviceMultiplier"), out["deviceMultiplier"], "must be positive"))
    if "capacityMultiplier" in out and key is None:
        errors.append(meta.required(join(path, "capacityKey"),
                                    "capacityKey is required when capacityMultiplier is set"))
    # the generated (declarative) union: exactly one of capacityKey and deviceMultiplier
    chosen = [n for n in ("capacityKey", "deviceMultiplier") if n in out]
    members = "`capacityKey`, `deviceMultiplier`"
    if not chosen:
        errors.append(meta.invalid(path, "", f"must specify one of: {members}"))
    elif len(chosen) > 1:
        errors.append(meta.invalid(path, "{" + ", ".join(chosen) + "}", f"must specify exactly one of: {members}"))
    errors.raise_all()
    return out


def _overhead(raw: object, path: str) -> JSON:
    obj = rc.as_obj(raw, path)
    rc.fields(obj, path, ("perPod", "perContainer"))
    errors = rc.Errors()
    out: JSON = {}
    if obj.get("perPod") is None and obj.get("perContainer") is None:
        raise meta.invalid(path, "", "at least one of perPod or perContainer must be set")
    for key in ("perPod", "perContainer"):
        value = _quantity(obj, key, path, out, errors)
        if value is not None and value < 0:
            errors.append(meta.invalid(join(path, key), out[key], "must be non-negative"))
    errors.raise_all()
    return out


def _quantity(obj: Mapping[str, Any], key: str, path: str, out: JSON, errors: rc.Errors) -> Any:
    """The quantity at `key` (kept as written in `out`) as a Fraction, None when unset or malformed."""
    if obj.get(key) is None:
        return None
    text = errors.check(rc.check_quantity, join(path, key), obj[key])
    if text is None:
        return None
    out[key] = text
    return quantity.parse(text)
