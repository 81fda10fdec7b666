"""ResourceClaim status validation: the allocation result, reservedFor consumers and
deallocationRequested, and the transition rules of a status update (allocation is immutable
once set; no new consumers while the claim is being deallocated or deleted).

Why a module of its own: the status is written by the scheduler and controllers, not the
user, several times per pod, and is validated on its own against the stored spec's request
names (objects/resource.validate_claim_status); keeping it apart from the spec rules makes
that status-only path obvious. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource import device_taints
from nodeagent.objects.resource.device_class import config_list
from nodeagent.objects.resource.device_taints import claim_device_status
from nodeagent.objects.resource.shared import (
    ALLOCATION_RESULTS_MAX,
    CONFIG_MAX,
    GATE_CONTROL_PLANE_CONTROLLER,
    RESERVED_FOR_MAX,
    Ctx,
    gate,
    immutable,
    skip_node_operations,
)
from nodeagent.objects.resource.slice_features import result_sharing
from nodeagent.store import validation as meta


def claim_status(raw: object, path: str, refs: set[str], ctx: Ctx) -> JSON:
    status = rc.as_obj(raw, path)
    rc.fields(status, path, ("allocation", "reservedFor", "deallocationRequested", "devices"))
    out: JSON = {}
    allocation = rc.get_obj(status, "allocation", path)
    if allocation is not None:
        out["allocation"] = _allocation(allocation, join(path, "allocation"), refs, ctx)
    reserved = rc.get_list(status, "reservedFor", path, RESERVED_FOR_MAX)
    out_reserved: list[JSON] = []
    for i, raw_ref in enumerate(reserved):
        rpath = f"{path}.reservedFor[{i}]"
        ref = rc.as_obj(raw_ref, rpath)
        rc.fields(ref, rpath, ("apiGroup", "resource", "name", "uid"))
        item: JSON = {}
        for key in ("apiGroup", "resource", "name", "uid"):
            value = rc.get_str(ref, key, rpath)
            if not value and key != "apiGroup":
                raise meta.required(join(rpath, key))
            if value:
                item[key] = value
        out_reserved.append(item)
    rc.check_set(out_reserved, join(path, "reservedFor"), key="uid")
    if out_reserved:
        if allocation is None:
            raise meta.forbidden(join(path, "reservedFor"), "may not be specified when `allocated` is not set")
        out["reservedFor"] = out_reserved
    dealloc = rc.get_bool(status, "deallocationRequested", path)
    if dealloc:
        dpath = join(path, "deallocationRequested")
        if not gate(ctx.gates, GATE_CONTROL_PLANE_CONTROLLER):
            raise meta.forbidden(dpath, f"requires the {GATE_CONTROL_PLANE_CONTROLLER} feature gate")
        if allocation is None:
            raise meta.forbidden(dpath, "deallocation cannot be requested for claims which are not allocated")
        if out_reserved:
            raise meta.forbidden(dpath, "deallocation cannot be requested while `reservedFor` is set")
        out["deallocationRequested"] = True
    devices = claim_device_status(status, path, out.get("allocation"), ctx.gates)
    if devices is not None:
        out["devices"] = devices
    return out


_RESULT_FIELDS = (
    "request",
    "driver",
    "pool",
    "device",
    "adminAccess",
    "tolerations",
    "bindingConditions",
    "bindingFailureConditions",
    "shareID",
    "consumedCapacity",
    "skipNodeOperations",
)


def _allocation(alloc: Mapping[str, Any], path: str, refs: set[str], ctx: Ctx) -> JSON:
    rc.fields(alloc, path, ("devices", "nodeSelector", "controller", "allocationTimestamp"))
    out: JSON = {}
    dpath = join(path, "devices")
    devices = rc.get_obj(alloc, "devices", path) or {}
    rc.fields(devices, dpath, ("results", "config"))
    results: list[JSON] = []
    for i, raw in enumerate(rc.get_list(devices, "results", dpath, ALLOCATION_RESULTS_MAX)):
        rpath = f"{dpath}.results[{i}]"
        res = rc.as_obj(raw, rpath)
        rc.fields(res, rpath, _RESULT_FIELDS)
        rc.check_request_ref(join(rpath, "request"), rc.get_str(res, "request", rpath), refs)
        rc.check_driver_name(join(rpath, "driver"), rc.get_str(res, "driver", rpath))
        rc.check_pool_name(join(rpath, "pool"), rc.get_str(res, "pool", rpath))
        rc.check_device_name(join(rpath, "device"), rc.get_str(res, "device", rpath))
        rc.get_bool(res, "adminAccess", rpath)
        item = dict(res)
        item.pop("skipNodeOperations", None)
        result_sharing(res, rpath, item, ctx.gates)
        device_taints.result_fields(res, rpath, item, ctx.gates)
        skip = skip_node_operations(res, rpath, ctx.gates)
        if skip is not None:
            item["skipNodeOperations"] = skip
        results.append(item)
    out["devices"] = {"results": results}
    config = config_list(devices, dpath, 2 * CONFIG_MAX, refs, source=True)
    if config:
        out["devices"]["config"] = config
    if alloc.get("nodeSelector") is not None:
        rc.check_node_selector(join(path, "nodeSelector"), alloc["nodeSelector"])
        out["nodeSelector"] = alloc["nodeSelector"]
    controller = rc.get_str(alloc, "controller", path)
    if controller:
        if not gate(ctx.gates, GATE_CONTROL_PLANE_CONTROLLER):
            raise meta.forbidden(join(path, "controller"), f"requires the {GATE_CONTROL_PLANE_CONTROLLER} feature gate")
        rc.check_driver_name(join(path, "controller"), controller)
        out["controller"] = controller
    if alloc.get("allocationTimestamp") is not None:
        out["allocationTimestamp"] = rc.get_str(alloc, "allocationTimestamp", path)
    return out


def claim_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    ns, os_ = new.get("status") or {}, old.get("status") or {}
    if ns.get("allocation") is not None and os_.get("allocation") is not None and ns["allocation"] != os_["allocation"]:
        raise immutable("status.allocation")
    deleting = bool((new.get("metadata") or {}).get("deletionTimestamp")) or bool(ns.get("deallocationRequested"))
    if deleting:
        before = {r.get("uid") for r in os_.get("reservedFor") or ()}
        if any(r.get("uid") not in before for r in ns.get("reservedFor") or ()):
            raise meta.forbidden(
                "status.reservedFor",
                "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
            )


def _results(doc: Mapping[str, Any]) -> object:
    status = doc.get("status")
    alloc = status.get("allocation") if isinstance(status, Mapping) else None
    devices = alloc.get("devices") if isinstance(alloc, Mapping) else None
    return devices.get("results") if isinstance(devices, Mapping) else None


def _shared_ids(results: object) -> set[tuple[str, str, str, str]]:
    out: set[tuple[str, str, str, str]] = set()
    for r in results if isinstance(results, list) else ():
        if isinstance(r, Mapping):
            out.add((str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")),
                     str(r.get("shareID") or "")))
    return out


def drop_deallocated_devices(new: Mapping[str, Any], old: Mapping[str, Any]) -> Mapping[str, Any]:
    """The status strategy's dropDeallocatedStatusDevices (pkg/registry/resource/resourceclaim):
    a status write that removes allocation results also removes the status.devices entries of
    those devices (driver, pool, device, shareID), so a client unaware of status.devices (the claim
    controller clearing the allocation) can deallocate a claim whose driver wrote them. The input
    is left alone; a new document is returned when something was dropped."""
    status = new.get("status")
    if not isinstance(status, Mapping):
        return new
    devices = status.get("devices")
    if not isinstance(devices, list) or not devices:
        return new
    gone = _shared_ids(_results(old)) - _shared_ids(_results(new))
    if not gone:
        return new
    kept = [d for d in devices if not (isinstance(d, Mapping) and (
        str(d.get("driver", "")), str(d.get("pool", "")), str(d.get("device", "")), str(d.get("shareID") or ""))
        in gone)]
    out_status = {k: v for k, v in status.items() if k != "devices"}
    if kept:
        out_status["devices"] = kept
    return {**new, "status": out_status}
