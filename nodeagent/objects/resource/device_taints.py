"""Device taints (KEP-5055), binding conditions (KEP-5007) and ResourceClaim status.devices
(KEP-4817): the fields of slices, DeviceTaintRules and claim status these features add.

Why a module of its own: each field exists only with its feature gate (DRADeviceTaints,
DRADeviceBindingConditions, DRAResourceClaimDeviceStatus); with a gate off the API server drops
the field on write, as upstream does for disabled fields. The rules follow k8s.io/kubernetes
pkg/apis/resource/validation (1.35+): a taint has a qualified-name key, a label value and one of
the effects NoSchedule, NoExecute or None; a device lists at most 4 binding (failure) conditions,
both lists only together, neither with duplicates, never overlapping; status.devices holds one
entry per allocated device (and share), only for devices of the allocation, with conditions as
metav1.Condition (at most 8), a JSON object as data (10 KiB) and network data. Request and
result tolerations are validated here too (validateDeviceToleration). Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource.shared import Gates, gate
from nodeagent.store import validation as meta

GATE_DEVICE_TAINTS = "DRADeviceTaints"
GATE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
GATE_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
EFFECT_NONE = "None"
TAINT_EFFECTS = (NO_SCHEDULE, NO_EXECUTE, EFFECT_NONE)

# pkg/apis/resource types.go limits.
DEVICE_TAINTS_MAX = 16
TOLERATIONS_MAX = 16  # DeviceTolerationsMaxLength
TOLERATION_OPERATORS = ("Equal", "Exists")
BINDING_CONDITIONS_MAX = 4
BINDING_FAILURE_CONDITIONS_MAX = 4
CONDITIONS_MAX = 8
DATA_MAX_BYTES = 10 * 1024
INTERFACE_NAME_MAX = 256
HARDWARE_ADDRESS_MAX = 128
IPS_MAX = 16

DEVICE_FIELDS = ("taints", "bindsToNode", "bindingConditions", "bindingFailureConditions")

_REASON_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASON_MAX = 1024
_MESSAGE_MAX = 32768
_CONDITION_STATUSES = ("True", "False", "Unknown")


def taints_enabled(gates: Gates) -> bool:
    return gate(gates, GATE_DEVICE_TAINTS)


def binding_conditions_enabled(gates: Gates) -> bool:
    return gate(gates, GATE_BINDING_CONDITIONS)


def device_status_enabled(gates: Gates) -> bool:
    return gate(gates, GATE_DEVICE_STATUS)


# --- taints ----------------------------------------------------------------------------------------


def taint(raw: object, path: str) -> JSON:
    """One DeviceTaint (validateDeviceTaint): key a label name (ValidateLabelName, so an empty key
    is `name part must be non-empty`), value a label value, effect required and one of
    NoExecute, NoSchedule, None; timeAdded kept as given."""
    obj = rc.as_obj(raw, path)
    rc.fields(obj, path, ("key", "value", "effect", "timeAdded"))
    key = rc.get_str(obj, "key", path)
    meta.check_qualified_name(join(path, "key"), key)
    out: JSON = {"key": key}
    value = rc.get_str(obj, "value", path)
    if value:
        meta.check_label_value(join(path, "value"), value)
        out["value"] = value
    effect = rc.get_str(obj, "effect", path)
    if not effect:
        raise meta.required(join(path, "effect"))
    if effect not in TAINT_EFFECTS:
        raise meta.not_supported(join(path, "effect"), effect, TAINT_EFFECTS)
    out["effect"] = effect
    added = rc.get_str(obj, "timeAdded", path)
    if added:
        out["timeAdded"] = added
    return out


def toleration(raw: object, path: str) -> JSON:
    """One DeviceToleration (validateDeviceToleration): operator defaults to Equal; Exists takes
    no value, Equal a label value; effect empty (every effect) or a taint effect. Unlike a pod
    toleration, an empty key with Equal and tolerationSeconds with any effect are allowed
    (tolerationSeconds only counts for NoExecute)."""
    tol = rc.as_obj(raw, path)
    rc.fields(tol, path, ("key", "operator", "value", "effect", "tolerationSeconds"))
    key = rc.get_str(tol, "key", path)
    operator = rc.get_str(tol, "operator", path) or "Equal"
    value = rc.get_str(tol, "value", path)
    effect = rc.get_str(tol, "effect", path)
    seconds = rc.get_int(tol, "tolerationSeconds", path)
    if key:
        meta.check_qualified_name(join(path, "key"), key)
    if operator == "Exists":
        if value:
            raise meta.invalid(join(path, "value"), value, "must be empty for operator `Exists`")
    elif operator == "Equal":
        meta.check_label_value(join(path, "value"), value)
    else:
        raise meta.not_supported(join(path, "operator"), operator, TOLERATION_OPERATORS)
    if effect and effect not in TAINT_EFFECTS:
        raise meta.not_supported(join(path, "effect"), effect, TAINT_EFFECTS)
    out: JSON = {"operator": operator}
    for k, v in (("key", key), ("value", value), ("effect", effect)):
        if v:
            out[k] = v
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


def tolerations(obj: Mapping[str, Any], path: str, gates: Gates) -> list[JSON] | None:
    """A request's tolerations as stored; None when DRADeviceTaints is off (upstream's strategy
    drops the disabled field on write instead of refusing it)."""
    if not taints_enabled(gates):
        return None
    tpath = join(path, "tolerations")
    return [toleration(t, f"{tpath}[{i}]")
            for i, t in enumerate(rc.get_list(obj, "tolerations", path, TOLERATIONS_MAX))]


def stamp_taints(taints: Sequence[JSON], now: str) -> None:
    """The API server sets timeAdded of a new taint that has none (upstream's PrepareForCreate)."""
    for t in taints:
        t.setdefault("timeAdded", now)


# --- slice devices ---------------------------------------------------------------------------------


def device_fields(body: Mapping[str, Any], path: str, gates: Gates) -> JSON:
    """The taint and binding fields of one slice device, as stored (disabled ones dropped)."""
    out: JSON = {}
    if taints_enabled(gates):
        tpath = join(path, "taints")
        taints = [taint(t, f"{tpath}[{i}]")
                  for i, t in enumerate(rc.get_list(body, "taints", path, DEVICE_TAINTS_MAX))]
        if taints:
            out["taints"] = taints
    if binding_conditions_enabled(gates):
        binds = rc.get_bool(body, "bindsToNode", path)
        if binds is not None:  # false is valid upstream (no validation) and kept as written
            out["bindsToNode"] = binds
        conditions = _condition_names(body, "bindingConditions", path, BINDING_CONDITIONS_MAX)
        failures = _condition_names(body, "bindingFailureConditions", path, BINDING_FAILURE_CONDITIONS_MAX)
        binding_parameters(conditions, failures, path)
        if conditions:
            out["bindingConditions"] = conditions
            out["bindingFailureConditions"] = failures
    return out


def binding_parameters(conditions: Sequence[str], failures: Sequence[str], path: str) -> None:
    """validateDeviceBindingParameters after the per-item checks: no duplicates, no overlap, and
    each list only together with the other (a device's or an allocation result's)."""
    rc.check_set(conditions, join(path, "bindingConditions"))
    rc.check_set(failures, join(path, "bindingFailureConditions"))
    wanted = set(conditions)
    for i, name in enumerate(failures):
        if name in wanted:
            raise meta.invalid(f"{join(path, 'bindingFailureConditions')}[{i}]", name,
                               "bindingFailureConditions must not overlap with bindingConditions")
    if failures and not conditions:
        raise meta.invalid(join(path, "bindingConditions"), None,
                           "bindingConditions are required to use bindingFailureConditions")
    if conditions and not failures:
        raise meta.invalid(join(path, "bindingFailureConditions"), None,
                           "bindingFailureConditions are required to use bindingConditions")


def _condition_names(body: Mapping[str, Any], key: str, path: str, limit: int) -> list[str]:
    kpath = join(path, key)
    names: list[str] = []
    for i, raw in enumerate(rc.get_list(body, key, path, limit)):
        if not isinstance(raw, str):
            raise rc.type_error(f"{kpath}[{i}]", raw, "string")
        meta.check_qualified_name(f"{kpath}[{i}]", raw)
        names.append(raw)
    return names


# --- ResourceClaim status.devices ------------------------------------------------------------------


def claim_device_status(status: Mapping[str, Any], path: str, allocation: Mapping[str, Any] | None,
                        gates: Gates) -> list[JSON] | None:
    """status.devices: None when unset or the gate is off; else the validated entries."""
    if status.get("devices") is None or not device_status_enabled(gates):
        return None
    dpath = join(path, "devices")
    allocated = {
        (r.get("driver"), r.get("pool"), r.get("device"), r.get("shareID") or "")
        for r in ((allocation or {}).get("devices") or {}).get("results") or ()
    }
    out: list[JSON] = []
    seen: set[tuple[str, str, str, str]] = set()
    for i, raw in enumerate(rc.get_list(status, "devices", path)):  # no size limit upstream
        ipath = f"{dpath}[{i}]"
        entry = _device_status(raw, ipath)
        ident = (entry["driver"], entry["pool"], entry["device"], entry.get("shareID", ""))
        if ident not in allocated:  # a SharedDeviceID is printed as its String(), unquoted
            raise ValidationError(ipath, f"Invalid value: {_ident_text(ident)}: "
                                         "must be an allocated device in the claim")
        if ident in seen:
            raise ValidationError(ipath, f"Duplicate value: {_ident_text(ident)}")
        seen.add(ident)
        out.append(entry)
    return out


def _ident_text(ident: tuple[str, str, str, str]) -> str:
    return "/".join(p for p in ident if p)


def _device_status(raw: object, path: str) -> JSON:
    obj = rc.as_obj(raw, path)
    rc.fields(obj, path, ("driver", "pool", "device", "shareID", "conditions", "data", "networkData"))
    driver = rc.get_str(obj, "driver", path)
    pool = rc.get_str(obj, "pool", path)
    device = rc.get_str(obj, "device", path)
    rc.check_driver_name(join(path, "driver"), driver)
    rc.check_pool_name(join(path, "pool"), pool)
    rc.check_device_name(join(path, "device"), device)
    out: JSON = {"driver": driver, "pool": pool, "device": device}
    share = rc.get_str(obj, "shareID", path)
    if share:
        out["shareID"] = share
    conditions = conditions_list(obj, "conditions", path, CONDITIONS_MAX)
    if conditions:
        out["conditions"] = conditions
    if obj.get("data") is not None:  # validateRawExtension
        data = obj["data"]
        if len(json.dumps(data, separators=(",", ":"))) > DATA_MAX_BYTES:
            raise rc.too_long_bytes(join(path, "data"), DATA_MAX_BYTES)
        if not isinstance(data, Mapping):
            raise meta.invalid(join(path, "data"), "<value omitted>", "must be a valid JSON object")
        out["data"] = data
    network = rc.get_obj(obj, "networkData", path)
    if network is not None:
        out["networkData"] = _network_data(network, join(path, "networkData"))
    return out


def conditions_list(obj: Mapping[str, Any], key: str, path: str, limit: int) -> list[JSON]:
    """metav1.Condition list (listType=map keyed by type), as ValidateConditions checks it."""
    cpath = join(path, key)
    out: list[JSON] = []
    for i, raw in enumerate(rc.get_list(obj, key, path, limit)):
        ipath = f"{cpath}[{i}]"
        cond = rc.as_obj(raw, ipath)
        rc.fields(cond, ipath, ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message"))
        ctype = rc.get_str(cond, "type", ipath)
        if not ctype:
            raise meta.required(join(ipath, "type"))
        meta.check_qualified_name(join(ipath, "type"), ctype)
        status = rc.get_str(cond, "status", ipath)
        if status not in _CONDITION_STATUSES:
            raise meta.not_supported(join(ipath, "status"), status, _CONDITION_STATUSES)
        generation = rc.get_int(cond, "observedGeneration", ipath)
        if generation is not None and generation < 0:
            raise meta.invalid(join(ipath, "observedGeneration"), generation, "must be greater than or equal to zero")
        stamp = rc.get_str(cond, "lastTransitionTime", ipath)
        if not stamp:
            raise meta.required(join(ipath, "lastTransitionTime"), "must be set")
        reason = rc.get_str(cond, "reason", ipath)
        if not reason:
            raise meta.required(join(ipath, "reason"))
        if len(reason) > _REASON_MAX:
            raise rc.too_long_bytes(join(ipath, "reason"), _REASON_MAX)
        if not _REASON_RE.match(reason):
            raise meta.invalid(
                join(ipath, "reason"), reason,
                "a condition reason must start with alphabetic character, optionally followed by a string of "
                "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
                "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex "
                "used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')")
        message = rc.get_str(cond, "message", ipath)
        if len(message) > _MESSAGE_MAX:
            raise rc.too_long_bytes(join(ipath, "message"), _MESSAGE_MAX)
        item: JSON = {"type": ctype, "status": status, "lastTransitionTime": stamp, "reason": reason,
                      "message": message}
        if generation is not None:
            item["observedGeneration"] = generation
        out.append(item)
    rc.check_set(out, cpath, key="type")
    return out


def _network_data(net: Mapping[str, Any], path: str) -> JSON:
    rc.fields(net, path, ("interfaceName", "ips", "hardwareAddress"))
    out: JSON = {}
    name = rc.get_str(net, "interfaceName", path)
    if len(name) > INTERFACE_NAME_MAX:
        raise rc.too_long_bytes(join(path, "interfaceName"), INTERFACE_NAME_MAX)
    if name:
        out["interfaceName"] = name
    address = rc.get_str(net, "hardwareAddress", path)
    if len(address) > HARDWARE_ADDRESS_MAX:
        raise rc.too_long_bytes(join(path, "hardwareAddress"), HARDWARE_ADDRESS_MAX)
    if address:
        out["hardwareAddress"] = address
    ipath = join(path, "ips")
    ips: list[str] = []
    for i, raw in enumerate(rc.get_list(net, "ips", path, IPS_MAX)):
        if not isinstance(raw, str):
            raise rc.type_error(f"{ipath}[{i}]", raw, "string")
        try:
            ipaddress.ip_interface(raw)
        except ValueError:
            raise meta.invalid(f"{ipath}[{i}]", raw,
                               'must be a valid address in CIDR form, (e.g. "10.9.8.7/24" or "2001:db8::1/64")'
                               ) from None
        if "/" not in raw:
            raise meta.invalid(f"{ipath}[{i}]", raw,
                               'must be a valid address in CIDR form, (e.g. "10.9.8.7/24" or "2001:db8::1/64")')
        ips.append(raw)
    rc.check_set(ips, ipath)
    if ips:
        out["ips"] = ips
    return out


# --- allocation results ----------------------------------------------------------------------------


def result_fields(res: Mapping[str, Any], path: str, item: JSON, gates: Gates) -> None:
    """An allocation result's tolerations and binding (failure) conditions, validated as upstream's
    validateDeviceRequestAllocationResult does; disabled fields are dropped from `item`."""
    if res.get("tolerations") is None and res.get("bindingConditions") is None and (
            res.get("bindingFailureConditions") is None):
        # the common result: none of the three (what the checks below conclude, without them)
        for key in ("tolerations", "bindingConditions", "bindingFailureConditions"):
            item.pop(key, None)
        return
    tols = tolerations(res, path, gates)
    item.pop("tolerations", None)
    if tols:
        item["tolerations"] = tols
    conditions = _condition_names(res, "bindingConditions", path, BINDING_CONDITIONS_MAX)
    failures = _condition_names(res, "bindingFailureConditions", path, BINDING_FAILURE_CONDITIONS_MAX)
    binding_parameters(conditions, failures, path)
    item.pop("bindingConditions", None)
    item.pop("bindingFailureConditions", None)
    if conditions and binding_conditions_enabled(gates):
        item["bindingConditions"] = conditions
        item["bindingFailureConditions"] = failures
