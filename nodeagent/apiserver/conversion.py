"""Version conversion at the API edge: the store keeps one version of each kind, clients speak several.

Why here and nowhere else: like upstream's scheme, conversion goes through a hub, the storage
version (resource.k8s.io/v1 for the DRA kinds, core v1 for Event). A request body is brought to
the hub before the store sees it (`to_storage`) and a stored object is brought to the request's
version on the way out (`to_version`), so nothing below the edge knows v1beta1 or
events.k8s.io exist. The shapes follow k8s.io/kubernetes pkg/apis/resource/v1beta1/conversion.go
and pkg/apis/events/v1/conversion.go:

- resource.k8s.io v1 <-> v1beta2: the same shapes; only apiVersion changes.
- resource.k8s.io v1 <-> v1beta1: a claim request's exact-count fields (deviceClassName,
  selectors, allocationMode, count, adminAccess, tolerations, capacity) sit on the request in
  v1beta1 and under `exactly` in v1; a slice device's fields sit under `basic` in v1beta1 and on
  the device in v1; a v1beta1 slice spec has a plain nodeName/allNodes where "" and false mean
  unset. DeviceClass, claim status (allocation results, reservedFor, devices) and subrequests
  have the same shape in every version.
- resource.k8s.io v1 <-> v1alpha3 (ResourceClaim and ResourceClaimTemplate, served only with
  classic DRA's gate DRAControlPlaneController): the requests as in v1beta1 (upstream's v1alpha3
  had that shape), and the classic fields of 1.31's v1alpha3 (spec.controller,
  status.allocation.controller, status.deallocationRequested). The store keeps spec.controller
  as `spec.controllerName`, nodeagent's storage name for it since before v1alpha3 was served.
  No other version has those fields: a classic claim read as v1, v1beta2 or v1beta1 shows
  none of them (`without_classic_fields`), and a write through such a version keeps the stored
  ones (`keep_classic_fields`), so kubectl label/edit/apply through the preferred version
  neither loses nor trips over what that version cannot say.
- core v1 Event <-> events.k8s.io/v1 Event: field renames (involvedObject/regarding,
  message/note, source/deprecatedSource, firstTimestamp/deprecatedFirstTimestamp,
  lastTimestamp/deprecatedLastTimestamp, count/deprecatedCount,
  reportingComponent/reportingController); the other fields keep their names.

Round trips keep every field both versions have. The input is never modified; the answer is a
new dict whose untouched subtrees are shared with the input. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Obj = dict[str, Any]
Convert = Callable[[Mapping[str, Any]], Obj]

RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_V1 = f"{RESOURCE_GROUP}/v1"
RESOURCE_V1BETA2 = f"{RESOURCE_GROUP}/v1beta2"
RESOURCE_V1BETA1 = f"{RESOURCE_GROUP}/v1beta1"
RESOURCE_V1ALPHA3 = f"{RESOURCE_GROUP}/v1alpha3"
CORE_V1 = "v1"
EVENTS_V1 = "events.k8s.io/v1"

DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
CLASSIC_KINDS = ("ResourceClaim", "ResourceClaimTemplate")  # served as v1alpha3 too, for classic DRA
CONTROLLER = "controller"  # spec.controller of 1.31's v1alpha3 ResourceClaimSpec
STORED_CONTROLLER = "controllerName"  # the store's name for it
_RESOURCE_VERSIONS = (RESOURCE_V1, RESOURCE_V1BETA2, RESOURCE_V1BETA1)
_EVENT_VERSIONS = (CORE_V1, EVENTS_V1)
_TAINT_RULE_VERSIONS = (RESOURCE_V1, RESOURCE_V1BETA2, f"{RESOURCE_GROUP}/v1alpha3")

# core v1 name -> events.k8s.io/v1 name; fields not listed keep their name.
_EVENT_RENAMES = {
    "involvedObject": "regarding",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
}
_EVENT_RENAMES_BACK = {v: k for k, v in _EVENT_RENAMES.items()}

# The fields of a v1 ExactDeviceRequest, which v1beta1 keeps directly on the DeviceRequest.
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


def storage_version(kind: str, api_version: str) -> str:
    """The version the store keeps `kind` in, for an object that came as `api_version`."""
    if kind in DRA_KINDS and api_version in _RESOURCE_VERSIONS:
        return RESOURCE_V1
    if kind in CLASSIC_KINDS and api_version == RESOURCE_V1ALPHA3:
        return RESOURCE_V1
    if kind == "Event" and api_version in _EVENT_VERSIONS:
        return CORE_V1
    if kind == "DeviceTaintRule" and api_version in _TAINT_RULE_VERSIONS:  # one shape in every version
        return RESOURCE_V1
    return api_version


def to_storage(obj: Mapping[str, Any]) -> Obj:
    """An incoming object in the storage version of its kind (a copy even when nothing changes)."""
    api_version = str(obj.get("apiVersion") or "")
    if not api_version:
        return dict(obj)
    return to_version(obj, storage_version(str(obj.get("kind") or ""), api_version))


def to_version(obj: Mapping[str, Any], api_version: str) -> Obj:
    """`obj` converted to `api_version`; ValueError when its kind has no such version.

    Kinds served in one shape only (everything but the DRA kinds and Event) may change version
    within their group (apiVersion is rewritten); across groups only Event converts."""
    kind = str(obj.get("kind") or "")
    current = str(obj.get("apiVersion") or "")
    if current == api_version:
        return dict(obj)
    if kind in CLASSIC_KINDS and RESOURCE_V1ALPHA3 in (current, api_version) \
            and {current, api_version} <= {*_RESOURCE_VERSIONS, RESOURCE_V1ALPHA3}:
        hub = obj if current != RESOURCE_V1ALPHA3 else _from_v1alpha3(obj, kind)
        if current not in (RESOURCE_V1, RESOURCE_V1ALPHA3):
            hub = to_version(hub, RESOURCE_V1)
        out = _to_v1alpha3(hub, kind) if api_version == RESOURCE_V1ALPHA3 else to_version(
            {**hub, "apiVersion": RESOURCE_V1}, api_version)
        out["apiVersion"] = api_version
        return out
    if kind in DRA_KINDS and current in _RESOURCE_VERSIONS and api_version in _RESOURCE_VERSIONS:
        hub = _convert_resource(obj, kind, _request_to_v1, _device_to_v1) if current == RESOURCE_V1BETA1 else dict(obj)
        out = hub
        if api_version == RESOURCE_V1BETA1:
            out = _convert_resource(hub, kind, _request_to_v1beta1, _device_to_v1beta1)
        out["apiVersion"] = api_version
        return out
    if kind == "Event" and current in _EVENT_VERSIONS and api_version in _EVENT_VERSIONS:
        renames = _EVENT_RENAMES if api_version == EVENTS_V1 else _EVENT_RENAMES_BACK
        out = {renames.get(key, key): value for key, value in obj.items()}
        out["apiVersion"] = api_version
        return out
    if not current or _group(current) == _group(api_version):
        out = dict(obj)
        out["apiVersion"] = api_version
        return out
    raise ValueError(f'converting {kind or "object"} from "{current}" to "{api_version}" is not supported')


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


# --- resource.k8s.io v1beta1 <-> v1 --------------------------------------------------------------


def _convert_resource(obj: Mapping[str, Any], kind: str, request: Convert, device: Convert) -> Obj:
    """One DRA object with its requests and devices converted; the two directions differ only in
    `request` and `device`, the places those sit in each kind are the same."""
    if kind == "ResourceClaim":
        return _with_spec(obj, lambda spec: _claim_spec(spec, request))
    if kind == "ResourceClaimTemplate":
        return _with_spec(obj, lambda spec: _with_spec(spec, lambda inner: _claim_spec(inner, request)))
    if kind == "ResourceSlice":
        return _with_spec(obj, lambda spec: _slice_spec(spec, device))
    return dict(obj)


def _with_spec(obj: Mapping[str, Any], convert: Convert) -> Obj:
    out = dict(obj)
    spec = obj.get("spec")
    if isinstance(spec, Mapping):
        out["spec"] = convert(spec)
    return out


def _claim_spec(spec: Mapping[str, Any], convert: Convert) -> Obj:
    out = dict(spec)
    devices = spec.get("devices")
    if isinstance(devices, Mapping) and isinstance(devices.get("requests"), list):
        out["devices"] = dict(devices)
        out["devices"]["requests"] = [
            convert(r) if isinstance(r, Mapping) else r for r in devices["requests"]
        ]
    return out


def _is_set(key: str, value: Any) -> bool:
    """Whether a v1beta1 request field counts as given (upstream's hasAnyMainRequestFieldsSet:
    the Go zero value, and a missing field, do not)."""
    if value is None:
        return False
    if key in ("deviceClassName", "allocationMode"):
        return bool(value != "")
    if key == "count":
        return bool(value != 0)
    return True


def _request_to_v1(request: Mapping[str, Any]) -> Obj:
    if "exactly" in request:
        return dict(request)  # already v1-shaped: left for validation to judge
    out: Obj = {k: v for k, v in request.items() if k not in _EXACT_FIELDS}
    if any(_is_set(k, request.get(k)) for k in _EXACT_FIELDS):
        out["exactly"] = {k: request[k] for k in _EXACT_FIELDS if request.get(k) is not None}
    return out


def _request_to_v1beta1(request: Mapping[str, Any]) -> Obj:
    out: Obj = {k: v for k, v in request.items() if k not in ("exactly", "firstAvailable")}
    exactly = request.get("exactly")
    if isinstance(exactly, Mapping):
        out.update(exactly)
    if "firstAvailable" in request:
        out["firstAvailable"] = request["firstAvailable"]
    return out


def _slice_spec(spec: Mapping[str, Any], convert: Convert) -> Obj:
    # v1beta1 has plain nodeName/allNodes and v1 pointers; "" and false are unset in both.
    out = {k: v for k, v in spec.items() if not (k == "nodeName" and not v) and not (k == "allNodes" and not v)}
    if isinstance(spec.get("devices"), list):
        out["devices"] = [convert(d) if isinstance(d, Mapping) else d for d in spec["devices"]]
    return out


def _device_to_v1(device: Mapping[str, Any]) -> Obj:
    out = {k: v for k, v in device.items() if k != "basic"}
    basic = device.get("basic")
    if isinstance(basic, Mapping):
        out.update(basic)
    elif "basic" in device and basic is not None:
        out["basic"] = basic  # not an object: left for validation to name
    return out


def _device_to_v1beta1(device: Mapping[str, Any]) -> Obj:
    # Upstream always answers a v1beta1 device with `basic`, even an empty one.
    out: Obj = {"name": device["name"]} if "name" in device else {}
    out["basic"] = {k: v for k, v in device.items() if k != "name"}
    return out


# --- resource.k8s.io v1alpha3 (classic DRA) <-> v1 ------------------------------------------------


def _renamed(spec: Mapping[str, Any], old: str, new: str) -> Obj:
    out = {k: v for k, v in spec.items() if k != old}
    if old in spec:
        out[new] = spec[old]
    return out


def _claim_spec_of(obj: Mapping[str, Any], kind: str, convert: Convert) -> Obj:
    """`obj` with its claim spec (a template's spec.spec) converted."""
    if kind == "ResourceClaimTemplate":
        return _with_spec(obj, lambda spec: _with_spec(spec, convert))
    return _with_spec(obj, convert)


def _from_v1alpha3(obj: Mapping[str, Any], kind: str) -> Obj:
    out = _claim_spec_of(obj, kind, lambda spec: _claim_spec(_renamed(spec, CONTROLLER, STORED_CONTROLLER),
                                                             _request_to_v1))
    out["apiVersion"] = RESOURCE_V1
    return out


def _to_v1alpha3(obj: Mapping[str, Any], kind: str) -> Obj:
    return _claim_spec_of(obj, kind, lambda spec: _claim_spec(_renamed(spec, STORED_CONTROLLER, CONTROLLER),
                                                              _request_to_v1beta1))


def without_classic_fields(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A stored claim or template as a version without classic DRA sees it: no controller, no
    allocation.controller, no deallocationRequested (`obj` itself when it has none of them)."""
    kind = str(obj.get("kind") or "")
    spec = obj.get("spec")
    if kind == "ResourceClaimTemplate":
        inner = spec.get("spec") if isinstance(spec, Mapping) else None
        if not isinstance(inner, Mapping) or STORED_CONTROLLER not in inner:
            return obj
        return _claim_spec_of(obj, kind, lambda s: {k: v for k, v in s.items() if k != STORED_CONTROLLER})
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
            return _claim_spec_of(new, kind, lambda s: {**s, STORED_CONTROLLER: inner[STORED_CONTROLLER]})
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
