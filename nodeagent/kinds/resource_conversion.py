"""The resource.k8s.io kinds' shape changes between versions, as Conversion pairs for their declarations.

The shapes follow k8s.io/kubernetes pkg/apis/resource/v1beta1/conversion.go:

- v1 <-> v1beta2: the same shapes (no Conversion: only apiVersion changes).
- v1 <-> v1beta1: a claim request's exact-count fields (deviceClassName, selectors,
  allocationMode, count, adminAccess, tolerations, capacity) sit on the request in v1beta1 and
  under `exactly` in v1; a slice device's fields sit under `basic` in v1beta1 and on the device
  in v1; a v1beta1 slice spec has a plain nodeName/allNodes where "" and false mean unset.
  DeviceClass, claim status (allocation results, reservedFor, devices) and subrequests have the
  same shape in every version.
- v1 <-> v1alpha3 (ResourceClaim and ResourceClaimTemplate, served only with classic DRA's gate
  DRAControlPlaneController): the requests as in v1beta1 (upstream's v1alpha3 had that shape),
  and 1.31's spec.controller, which the store keeps as `spec.controllerName` (nodeagent's
  storage name for it since before v1alpha3 was served). Hiding classic fields from the other
  versions is the API edge's (apiserver/conversion.py).

The input is never modified; the answer is a new dict whose untouched subtrees are shared with
the input. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.kinds.model import Conversion, Convert, Obj

CONTROLLER = "controller"  # spec.controller of 1.31's v1alpha3 ResourceClaimSpec
STORED_CONTROLLER = "controllerName"  # the store's name for it

# The fields of a v1 ExactDeviceRequest, which v1beta1 keeps directly on the DeviceRequest (the
# object model's validation reads the same list: objects/resource/claim.py).
EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


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
    out: Obj = {k: v for k, v in request.items() if k not in EXACT_FIELDS}
    if any(_is_set(k, request.get(k)) for k in EXACT_FIELDS):
        out["exactly"] = {k: request[k] for k in EXACT_FIELDS if request.get(k) is not None}
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


def claim_spec_of(obj: Mapping[str, Any], kind: str, convert: Convert) -> Obj:
    """`obj` with its claim spec (a template's spec.spec) converted."""
    if kind == "ResourceClaimTemplate":
        return _with_spec(obj, lambda spec: _with_spec(spec, convert))
    return _with_spec(obj, convert)


def _from_v1alpha3(obj: Mapping[str, Any], kind: str) -> Obj:
    out = claim_spec_of(obj, kind, lambda spec: _claim_spec(_renamed(spec, CONTROLLER, STORED_CONTROLLER),
                                                             _request_to_v1))
    return out


def _to_v1alpha3(obj: Mapping[str, Any], kind: str) -> Obj:
    return claim_spec_of(obj, kind, lambda spec: _claim_spec(_renamed(spec, STORED_CONTROLLER, CONTROLLER),
                                                              _request_to_v1beta1))


def v1beta1(kind: str) -> Conversion:
    """The v1beta1 <-> v1 shape change of a DRA kind (DeviceClass: none but apiVersion)."""
    return Conversion(
        lambda obj: _convert_resource(obj, kind, _request_to_v1, _device_to_v1),
        lambda obj: _convert_resource(obj, kind, _request_to_v1beta1, _device_to_v1beta1),
    )


def v1alpha3(kind: str) -> Conversion:
    """Classic DRA's v1alpha3 <-> v1 shape change of ResourceClaim and ResourceClaimTemplate."""
    return Conversion(lambda obj: _from_v1alpha3(obj, kind), lambda obj: _to_v1alpha3(obj, kind))
