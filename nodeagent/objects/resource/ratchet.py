"""Gated fields already in use: which disabled feature gates an update must still honour.

Why a module of its own: upstream's strategies (k8s.io/kubernetes pkg/registry/resource/*/strategy.go
and pkg/api/resourceclaimspec at v1.37.2) drop a gated field on write only when its gate is off
AND the stored object does not use the feature yet (`dropDisabled...Fields(new, old)` with the
`...FeatureInUse(old)` tests): an update of an object that already carries the field keeps it, so
turning a gate off never strips data from unrelated writes (a kubelet plugin republishing its
slices, a label change on a claim whose spec is immutable). nodeagent's validators drop a field
by its gate, so the update path validates with those gates switched on for the fields the stored
object uses: the same outcome, one place. This module only answers "which gates does the stored
object use", per kind, exactly as upstream's in-use tests read the object. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from nodeagent.objects.resource.shared import Gates

PARTITIONABLE = "DRAPartitionableDevices"
CONSUMABLE = "DRAConsumableCapacity"
TAINTS = "DRADeviceTaints"
BINDING = "DRADeviceBindingConditions"
DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
NODE_ALLOCATABLE = "DRANodeAllocatableResources"
LIST_ATTRIBUTES = "DRAListTypeAttributes"
OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"
PRIORITIZED_LIST = "DRAPrioritizedList"
ADMIN_ACCESS = "DRAAdminAccess"

_LIST_VALUES = ("bools", "ints", "strings", "versions")


def _obj(raw: object) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {}


def _list(raw: object) -> list[Any]:
    return raw if isinstance(raw, list) else []


def slice_in_use(old: Mapping[str, Any]) -> set[str]:
    """resourceslice/strategy.go's draXFeatureInUse tests over a stored slice."""
    spec = _obj(old.get("spec"))
    devices = [_obj(d) for d in _list(spec.get("devices"))]
    used: set[str] = set()
    if spec.get("sharedCounters") or spec.get("perDeviceNodeSelection") is not None or any(
            d.get("consumesCounters") or any(d.get(k) is not None for k in ("nodeName", "nodeSelector", "allNodes"))
            for d in devices):
        used.add(PARTITIONABLE)
    if any(d.get("taints") for d in devices):
        used.add(TAINTS)
    if any(d.get("bindingConditions") or d.get("bindingFailureConditions") or d.get("bindsToNode") is not None
           for d in devices):
        # the drop needs both gates (DRADeviceBindingConditions && DRAResourceClaimDeviceStatus)
        used.update((BINDING, DEVICE_STATUS))
    if any(d.get("allowMultipleAllocations") is not None
           or any(_obj(c).get("requestPolicy") is not None for c in _obj(d.get("capacity")).values())
           for d in devices):
        used.add(CONSUMABLE)
    if any(d.get("nodeAllocatableResources") for d in devices):
        used.add(NODE_ALLOCATABLE)
    if any(any(k in _obj(a) for k in _LIST_VALUES) for d in devices for a in _obj(d.get("attributes")).values()):
        used.add(LIST_ATTRIBUTES)
    if spec.get("skipNodeOperations"):
        used.add(OPTIONAL_NODE_OPERATIONS)
    return used


def _requests(claim_spec: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]:
    """(the request as stored, its firstAvailable subrequests) of a claim spec; a v1 stored request
    keeps its single-device fields under `exactly`."""
    for raw in _list(_obj(claim_spec.get("devices")).get("requests")):
        req = _obj(raw)
        yield _obj(req.get("exactly")), [_obj(s) for s in _list(req.get("firstAvailable"))]


def claim_spec_in_use(claim_spec: Mapping[str, Any]) -> set[str]:
    """pkg/api/resourceclaimspec's in-use tests over a stored claim spec."""
    used: set[str] = set()
    for exactly, subs in _requests(claim_spec):
        if subs:
            used.add(PRIORITIZED_LIST)
        if exactly.get("tolerations") or any(s.get("tolerations") for s in subs):
            used.add(TAINTS)
        if exactly.get("adminAccess") is not None:
            used.add(ADMIN_ACCESS)
        if exactly.get("capacity") is not None or any(s.get("capacity") is not None for s in subs):
            used.add(CONSUMABLE)
    if any(_obj(c).get("distinctAttribute") is not None
           for c in _list(_obj(claim_spec.get("devices")).get("constraints"))):
        used.add(CONSUMABLE)
    return used


def claim_in_use(old: Mapping[str, Any]) -> set[str]:
    """A stored claim: its spec's features, and resourceclaim/strategy.go's status in-use tests
    (status.devices, results' adminAccess, shareID/consumedCapacity, binding conditions,
    skipNodeOperations; a device status's shareID)."""
    used = claim_spec_in_use(_obj(old.get("spec")))
    status = _obj(old.get("status"))
    devices = [_obj(d) for d in _list(status.get("devices"))]
    if devices:
        used.add(DEVICE_STATUS)
    if any(d.get("shareID") is not None for d in devices):
        used.add(CONSUMABLE)
    results = [_obj(r) for r in _list(_obj(_obj(status.get("allocation")).get("devices")).get("results"))]
    for r in results:
        if r.get("adminAccess") is not None:
            used.add(ADMIN_ACCESS)
        if r.get("shareID") is not None or r.get("consumedCapacity") is not None:
            used.add(CONSUMABLE)
        if r.get("bindingConditions") is not None or r.get("bindingFailureConditions") is not None:
            used.add(BINDING)
        if r.get("skipNodeOperations"):
            used.add(OPTIONAL_NODE_OPERATIONS)
    return used


def template_in_use(old: Mapping[str, Any]) -> set[str]:
    return claim_spec_in_use(_obj(_obj(old.get("spec")).get("spec")))


_IN_USE: dict[str, Callable[[Mapping[str, Any]], set[str]]] = {
    "ResourceSlice": slice_in_use,
    "ResourceClaim": claim_in_use,
    "ResourceClaimTemplate": template_in_use,
}


def update_gates(kind: str, gates: Gates, old: Mapping[str, Any] | None) -> Gates:
    """The gates an update of `old` is validated with: the configured ones, plus every gate whose
    fields the stored object already uses (the same mapping when none is added)."""
    find = _IN_USE.get(kind)
    if old is None or find is None:
        return gates
    added = {name for name in find(old) if not gates.get(name, False)}
    if not added:
        return gates
    return {**gates, **dict.fromkeys(added, True)}
