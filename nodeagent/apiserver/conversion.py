"""Version conversion at the API edge: the store keeps one version of each kind, clients speak several.

Why here and nowhere else: like upstream's scheme, conversion goes through a hub, the storage
version (resource.k8s.io/v1 for the DRA kinds, core v1 for Event). A request body is brought to
the hub before the store sees it (`to_storage`) and a stored object is brought to the request's
version on the way out (`to_version`), so nothing below the edge knows v1beta1 or
events.k8s.io exist. Which versions a kind has, its storage version and each version's shape
change are its declaration's (nodeagent/kinds: `versions`, `conversions`; the DRA shapes are
kinds/resource_conversion.py, the Event renames kinds/core.py); this module only walks them.

Classic DRA (ResourceClaim and ResourceClaimTemplate served as 1.31's v1alpha3 with gate
DRAControlPlaneController) has fields no other version has (spec.controller, stored as
`spec.controllerName`; status.allocation.controller; status.deallocationRequested): a classic
claim read as v1, v1beta2 or v1beta1 shows none of them (`without_classic_fields`), and a write
through such a version keeps the stored ones (`keep_classic_fields`), so kubectl
label/edit/apply through the preferred version neither loses nor trips over what that version
cannot say.

Round trips keep every field both versions have. The input is never modified; the answer is a
new dict whose untouched subtrees are shared with the input. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.kinds import by_kind
from nodeagent.kinds import core as kinds_core
from nodeagent.kinds import resource as kinds_resource
from nodeagent.kinds.model import group_of
from nodeagent.kinds.resource_conversion import CONTROLLER, STORED_CONTROLLER, claim_spec_of

Obj = dict[str, Any]

RESOURCE_GROUP = kinds_resource.GROUP
RESOURCE_V1 = kinds_resource.V1
RESOURCE_V1BETA2 = kinds_resource.V1BETA2
RESOURCE_V1BETA1 = kinds_resource.V1BETA1
RESOURCE_V1ALPHA3 = kinds_resource.V1ALPHA3
CORE_V1 = kinds_core.CORE_V1
EVENTS_V1 = kinds_core.EVENTS_V1
CLASSIC_KINDS = kinds_resource.CLASSIC_KINDS  # served as v1alpha3 too, for classic DRA


def storage_version(kind: str, api_version: str) -> str:
    """The version the store keeps `kind` in, for an object that came as `api_version` (a
    version the kind's declaration does not list is kept as it is)."""
    decl = by_kind(kind)
    if decl is not None and api_version in decl.versions:
        return decl.storage_version
    return api_version


def to_storage(obj: Mapping[str, Any]) -> Obj:
    """An incoming object in the storage version of its kind (a copy even when nothing changes)."""
    api_version = str(obj.get("apiVersion") or "")
    if not api_version:
        return dict(obj)
    return to_version(obj, storage_version(str(obj.get("kind") or ""), api_version))


def to_version(obj: Mapping[str, Any], api_version: str) -> Obj:
    """`obj` converted to `api_version`; ValueError when its kind has no such version.

    Between two versions its declaration lists, through the storage version (the hub); a kind's
    other versions within its group differ only in apiVersion (rewritten); across groups only a
    declared version converts (Event)."""
    kind = str(obj.get("kind") or "")
    current = str(obj.get("apiVersion") or "")
    if current == api_version:
        return dict(obj)
    decl = by_kind(kind)
    if decl is not None and current in decl.versions and api_version in decl.versions:
        up, down = decl.conversions.get(current), decl.conversions.get(api_version)
        hub = up.to_hub(obj) if up is not None else dict(obj)
        out = down.from_hub(hub) if down is not None else hub  # every Conversion answers a new dict
        out["apiVersion"] = api_version
        return out
    if not current or group_of(current) == group_of(api_version):
        out = dict(obj)
        out["apiVersion"] = api_version
        return out
    raise ValueError(f'converting {kind or "object"} from "{current}" to "{api_version}" is not supported')


def without_classic_fields(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A stored claim or template as a version without classic DRA sees it: no controller, no
    allocation.controller, no deallocationRequested (`obj` itself when it has none of them)."""
    kind = str(obj.get("kind") or "")
    spec = obj.get("spec")
    if kind == "ResourceClaimTemplate":
        inner = spec.get("spec") if isinstance(spec, Mapping) else None
        if not isinstance(inner, Mapping) or STORED_CONTROLLER not in inner:
            return obj
        return claim_spec_of(obj, kind, lambda s: {k: v for k, v in s.items() if k != STORED_CONTROLLER})
    if kind != "ResourceClaim":
        return obj
    status = obj.get("status")
    alloc = status.get("allocation") if isinstance(status, Mapping) else None
    classic_status = isinstance(status, Mapping) and ("deallocationRequested" in status or (
        isinstance(alloc, Mapping) and CONTROLLER in alloc))
    if not (isinstance(spec, Mapping) and STORED_CONTROLLER in spec) and not classic_status:
        return obj
    out = dict(obj)
    if isinstance(spec, Mapping) and STORED_CONTROLLER in spec:
        out["spec"] = {k: v for k, v in spec.items() if k != STORED_CONTROLLER}
    if classic_status and isinstance(status, Mapping):
        new_status = {k: v for k, v in status.items() if k != "deallocationRequested"}
        if isinstance(alloc, Mapping) and CONTROLLER in alloc:
            new_status["allocation"] = {k: v for k, v in alloc.items() if k != CONTROLLER}
        out["status"] = new_status
    return out


def keep_classic_fields(new: Obj, stored: Mapping[str, Any]) -> Obj:
    """`new` (storage version, written through a version without classic DRA's fields) with the
    stored object's classic fields put back: the controller (spec is immutable anyway), and while
    `new` still holds an allocation, the allocation's controller and deallocationRequested."""
    kind = str(stored.get("kind") or "")
    old_spec = stored.get("spec")
    if kind == "ResourceClaimTemplate":
        inner = old_spec.get("spec") if isinstance(old_spec, Mapping) else None
        if isinstance(inner, Mapping) and STORED_CONTROLLER in inner:
            return claim_spec_of(new, kind, lambda s: {**s, STORED_CONTROLLER: inner[STORED_CONTROLLER]})
        return new
    if kind != "ResourceClaim":
        return new
    out = new
    if isinstance(old_spec, Mapping) and STORED_CONTROLLER in old_spec and isinstance(new.get("spec"), Mapping):
        out = {**out, "spec": {**new["spec"], STORED_CONTROLLER: old_spec[STORED_CONTROLLER]}}
    old_status, status = stored.get("status"), out.get("status")
    if not (isinstance(old_status, Mapping) and isinstance(status, Mapping)):
        return out
    old_alloc, alloc = old_status.get("allocation"), status.get("allocation")
    if not (isinstance(old_alloc, Mapping) and isinstance(alloc, Mapping)):
        return out
    status = dict(status)
    if CONTROLLER in old_alloc:
        status["allocation"] = {**alloc, CONTROLLER: old_alloc[CONTROLLER]}
    if old_status.get("deallocationRequested"):
        status["deallocationRequested"] = old_status["deallocationRequested"]
    return {**out, "status": status}
