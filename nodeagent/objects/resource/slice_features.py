"""ResourceSlice fields of partitionable devices (KEP-4815) and consumable capacity (KEP-5075).

Why a module of its own: these fields come and go with their feature gates
(DRAPartitionableDevices, DRAConsumableCapacity) and have their own limits and messages
(k8s.io/kubernetes pkg/apis/resource/validation at 1.35+): shared counter sets in slices of
their own, devices consuming counters from a set of their pool, per-device node selection,
devices that allow multiple allocations and the request policy of their capacities. With a gate
off the API server drops the field on write, as upstream does for disabled fields. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource.shared import Gates, gate
from nodeagent.store import validation as meta
from nodeagent.util import quantity

GATE_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"  # beta in 1.36, on by default
GATE_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"  # beta in 1.36, on by default
GATE_FRACTIONAL_CAPACITY_RANGE = "DRAFractionalCapacityRange"  # beta in 1.37, off by default (min compat 1.37)

# pkg/apis/resource types.go limits.
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_DEVICES_WITH_COUNTERS = 64
MAX_VALID_VALUES = 10  # CapacityRequestPolicyDiscreteMaxOptions

_PER_DEVICE_MSG = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
_NOT_PER_DEVICE_MSG = (
    "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` "
    "is set to true in the ResourceSlice spec"
)


def partitionable(gates: Gates) -> bool:
    return gate(gates, GATE_PARTITIONABLE_DEVICES)


def consumable(gates: Gates) -> bool:
    return gate(gates, GATE_CONSUMABLE_CAPACITY)


# --- slice spec ----------------------------------------------------------------------------------


def per_device_node_selection(spec: Mapping[str, Any], gates: Gates) -> bool:
    """spec.perDeviceNodeSelection: unset or true (false is invalid); dropped with the gate off."""
    value = rc.get_bool(spec, "perDeviceNodeSelection", "spec")
    if value is None or not partitionable(gates):
        return False
    if not value:
        raise meta.invalid("spec.perDeviceNodeSelection", False, "must be either unset or set to true")
    return True


def shared_counters(spec: Mapping[str, Any], gates: Gates) -> list[JSON] | None:
    """spec.sharedCounters: at most 8 uniquely named counter sets of at most 32 counters each."""
    if spec.get("sharedCounters") is None or not partitionable(gates):
        return None
    path = "spec.sharedCounters"
    sets: list[JSON] = []
    for i, raw in enumerate(rc.get_list(spec, "sharedCounters", "spec", MAX_COUNTER_SETS)):
        ipath = f"{path}[{i}]"
        obj = rc.as_obj(raw, ipath)
        rc.fields(obj, ipath, ("name", "counters"))
        name = rc.required_str(obj, "name", ipath)
        meta.check_dns_label(join(ipath, "name"), name)
        counters = _counters(obj, ipath, MAX_COUNTERS_PER_SET)
        sets.append({"name": name, "counters": counters})
    rc.check_set(sets, path, key="name")
    return sets


def _counters(obj: Mapping[str, Any], path: str, limit: int) -> JSON:
    raw = rc.get_obj(obj, "counters", path)
    cpath = join(path, "counters")
    if not raw:
        raise meta.required(cpath)
    if len(raw) > limit:
        raise rc.too_many(cpath, len(raw), limit)
    out: JSON = {}
    for key, value in raw.items():
        kpath = f"{cpath}[{key}]"
        meta.check_dns_label(kpath, str(key))
        counter = rc.as_obj(value, kpath)
        rc.fields(counter, kpath, ("value",))
        if counter.get("value") is None:
            raise meta.required(join(kpath, "value"))
        out[str(key)] = {"value": rc.check_quantity(join(kpath, "value"), counter["value"])}
    return out


def check_slice_shape(spec: Mapping[str, Any], counters: list[JSON] | None, devices: list[JSON]) -> None:
    """1.35+: counter sets live in slices of their own; devices that consume counters (or carry
    taints) are limited to 64 per slice."""
    if counters is not None and spec.get("devices") is not None:
        raise meta.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed")
    if len(devices) > MAX_DEVICES_WITH_COUNTERS and any(d.get("consumesCounters") for d in devices):
        raise rc.too_many("spec.devices", len(devices), MAX_DEVICES_WITH_COUNTERS)


# --- devices -------------------------------------------------------------------------------------

DEVICE_FIELDS = ("consumesCounters", "nodeName", "nodeSelector", "allNodes", "allowMultipleAllocations")


def device_features(body: Mapping[str, Any], path: str, per_device: bool, gates: Gates) -> JSON:
    """The feature fields of one device (already stripped of disabled ones), as stored."""
    out: JSON = {}
    if partitionable(gates):
        consumes = _consumes_counters(body, path)
        if consumes:
            out["consumesCounters"] = consumes
        out.update(_device_node_selection(body, path, per_device))
    if consumable(gates):
        multi = rc.get_bool(body, "allowMultipleAllocations", path)
        if multi is not None:  # false is a value a driver sends (and compares after the write)
            out["allowMultipleAllocations"] = multi
    return out


def _consumes_counters(body: Mapping[str, Any], path: str) -> list[JSON]:
    cpath = join(path, "consumesCounters")
    out: list[JSON] = []
    for i, raw in enumerate(rc.get_list(body, "consumesCounters", path, MAX_CONSUMPTIONS_PER_DEVICE)):
        ipath = f"{cpath}[{i}]"
        obj = rc.as_obj(raw, ipath)
        rc.fields(obj, ipath, ("counterSet", "counters"))
        name = rc.required_str(obj, "counterSet", ipath)
        meta.check_dns_label(join(ipath, "counterSet"), name)
        out.append({"counterSet": name, "counters": _counters(obj, ipath, MAX_COUNTERS_PER_CONSUMPTION)})
    rc.check_set(out, cpath, key="counterSet")
    return out


def _device_node_selection(body: Mapping[str, Any], path: str, per_device: bool) -> JSON:
    node_name = body.get("nodeName")
    selector = body.get("nodeSelector")
    all_nodes = rc.get_bool(body, "allNodes", path)
    if not per_device:
        if node_name is not None or selector is not None or all_nodes is not None:
            raise meta.invalid(path, "null", _NOT_PER_DEVICE_MSG)
        return {}
    out: JSON = {}
    chosen: list[str] = []
    if node_name is not None:
        name = rc.get_str(body, "nodeName", path)
        if not name:
            raise meta.invalid(join(path, "nodeName"), "", "must not be empty")
        rc.check_node_name(join(path, "nodeName"), name)
        chosen.append("`nodeName`")
        out["nodeName"] = name
    if selector is not None:
        rc.check_node_selector(join(path, "nodeSelector"), selector)
        chosen.append("`nodeSelector`")
        out["nodeSelector"] = selector
    if all_nodes is not None:
        if not all_nodes:
            raise meta.invalid(join(path, "allNodes"), False, "must be either unset or set to true")
        chosen.append("`allNodes`")
        out["allNodes"] = True
    if not chosen:
        raise meta.required(path, _PER_DEVICE_MSG)
    if len(chosen) > 1:
        raise meta.invalid(path, "{" + ", ".join(chosen) + "}", _PER_DEVICE_MSG)
    return out


# --- capacity request policy ---------------------------------------------------------------------


def request_policy(raw: Mapping[str, Any], path: str, value: str, multi: bool, gates: Gates) -> JSON | None:
    """capacity[name].requestPolicy: only on a device with allowMultipleAllocations; at most one of
    validValues (ascending, unique, at most 10, default among them) and validRange (min, max,
    step; default within and on a step)."""
    if raw.get("requestPolicy") is None or not consumable(gates):
        return None
    ppath = join(path, "requestPolicy")
    if not multi:
        raise meta.forbidden(ppath, "allowMultipleAllocations must be true")
    policy = rc.as_obj(raw["requestPolicy"], ppath)
    rc.fields(policy, ppath, ("default", "validValues", "validRange"))
    cap = quantity.parse(value)
    out: JSON = {}
    default = _q(policy, "default", ppath, out)
    values = rc.get_list(policy, "validValues", ppath)
    if values and policy.get("validRange") is not None:
        raise meta.forbidden(ppath, 'exactly one policy can be specified, '
                                    'cannot specify "validValues" and "validRange" at the same time')
    if values:
        if default is None:
            raise meta.required(join(ppath, "default"), "required when validValues is defined")
        _valid_values(values, join(ppath, "validValues"), cap, value, default, out, gates)
    elif policy.get("validRange") is not None:
        if default is None:
            raise meta.required(join(ppath, "default"), "required when validRange is defined")
        out["validRange"] = _valid_range(policy["validRange"], join(ppath, "validRange"), cap, value, default,
                                         out["default"], gates)
    return out


def _q(obj: Mapping[str, Any], key: str, path: str, out: JSON) -> Fraction | None:
    if obj.get(key) is None:
        return None
    text = rc.check_quantity(join(path, key), obj[key])
    out[key] = text
    return quantity.parse(text)


def _valid_values(values: Any, path: str, cap: Fraction, cap_text: str, default: Fraction, out: JSON,
                  gates: Gates) -> None:
    """validateRequestPolicyValidValues: ascending, none above the capacity, the default among
    them, no duplicates by upstream's key (Quantity.Value() with DRAFractionalCapacityRange off, so
    500m and 1 collide; the decimal as written, AsDec().String(), when on); every error at once."""
    if len(values) > MAX_VALID_VALUES:
        raise rc.too_many(path, len(values), MAX_VALID_VALUES)
    texts = [rc.check_quantity(f"{path}[{i}]", v) for i, v in enumerate(values)]
    parsed = [quantity.parse(t) for t in texts]
    errors = rc.Errors()
    for i in range(len(parsed) - 1):
        if parsed[i] > parsed[i + 1]:
            errors.append(meta.invalid(f"{path}[{i + 1}]", _string(texts[i + 1]),
                                       "values must be sorted in ascending order"))
    for i, v in enumerate(parsed):
        if v > cap:
            errors.append(meta.invalid(f"{path}[{i}]", _string(texts[i]),
                                       f"option is larger than capacity value: {_string(cap_text)}"))
    fractional = gate(gates, GATE_FRACTIONAL_CAPACITY_RANGE)
    seen: set[str] = set()
    for i, text in enumerate(texts):
        key = _dec_key(text) if fractional else str(quantity.ceil_value(parsed[i]))
        if key in seen:
            errors.append(meta.duplicate(f"{path}[{i}]", key))
        seen.add(key)
    if default not in parsed:
        errors.append(meta.invalid(path, _string(out["default"]), "default value is not valid according to the "
                                   "requestPolicy"))
    errors.raise_all()
    out["validValues"] = texts


def _valid_range(raw: object, path: str, cap: Fraction, cap_text: str, default: Fraction, default_text: str,
                 gates: Gates) -> JSON:
    """validateRequestPolicyRange at v1.37.2, every error at once: the bounds against the capacity
    and each other, then the step grid. With DRAFractionalCapacityRange on and any of min, max,
    step or the default fractional, the grid is checked in milli-units (each value must be a whole
    number of thousandths); otherwise in whole units read as Quantity.Value() (rounded up, each in
    [0, MaxInt64]): with the gate off a 500m step reads as 1."""
    rng = rc.as_obj(raw, path)
    rc.fields(rng, path, ("min", "max", "step"))
    out: JSON = {}
    low = _q(rng, "min", path, out)
    if low is None:
        raise meta.required(join(path, "min"), "required when validRange is defined")
    high = _q(rng, "max", path, out)
    step = _q(rng, "step", path, out)
    errors = rc.Errors()
    cap_s, low_s, default_s = _string(cap_text), _string(out["min"]), _string(default_text)
    if low > cap:
        errors.append(meta.invalid(join(path, "min"), low_s, f"min is larger than capacity value: {cap_s}"))
    if default < low:
        errors.append(meta.invalid(join(path, "default"), default_s, f"default is less than min: {low_s}"))
    if high is not None:
        high_s = _string(out["max"])
        if low > high:
            errors.append(meta.invalid(join(path, "max"), low_s, f"min is larger than max: {high_s}"))
        if high > cap:
            errors.append(meta.invalid(join(path, "max"), high_s, f"max is larger than capacity value: {cap_s}"))
        if default > high:
            errors.append(meta.invalid(join(path, "default"), default_s, f"default is more than max: {high_s}"))
    named: tuple[tuple[str, Fraction | None, str], ...] = (
        ("default", default, default_text), ("min", low, str(out["min"])), ("max", high, str(out.get("max"))),
        ("step", step, str(out.get("step"))))
    use_milli = gate(gates, GATE_FRACTIONAL_CAPACITY_RANGE) and any(
        v is not None and v.denominator != 1 for _, v, _ in named)
    if use_milli:
        unsafe = [meta.invalid(join(path, name), _string(text), "value cannot be represented as a milli value")
                  for name, v, text in named if v is not None and not quantity.is_milli(v)]
        if unsafe:
            errors.extend(unsafe)
            errors.raise_all()
    if step is not None:
        step_s = _string(out["step"])
        if step <= 0:
            errors.append(meta.invalid(join(path, "step"), step_s, "must be greater than zero"))
        else:
            if low + step > cap:
                added = quantity.exact_string(low + step, quantity.format_of(out["min"] if low else out["step"]))
                errors.append(meta.invalid(join(path, "step"), step_s,
                                           f"one step {added} is larger than capacity value: {cap_s}"))
            unsafe = [] if use_milli else [err for name, v, text in named if v is not None
                                           for err in _int64_range(join(path, name), v, text)]
            errors.extend(unsafe)
            if not unsafe:
                read = quantity.milli_value if use_milli else quantity.ceil_value
                for v, text in ((default, default_text), (high, str(out.get("max")))):
                    if v is not None and (read(v) - read(low)) % read(step) != 0:
                        errors.append(meta.invalid(
                            join(path, "step"), _string(text),
                            f"value is not a multiple of a given step ({step_s}) from ({low_s})"))
    errors.raise_all()
    return out


_MAX_INT64 = 2**63 - 1


def _int64_range(path: str, value: Fraction, text: str) -> list[ValidationError]:
    """validateInt64Range: Quantity.Value() is only meaningful in [0, MaxInt64]."""
    if value < 0:
        return [meta.invalid(path, _string(text), "must be greater than or equal to 0")]
    if value > _MAX_INT64:
        return [meta.invalid(path, _string(text), "must not be larger than 9223372036854775807")]
    return []


def _string(text: str) -> str:
    """Quantity.String() of a quantity text: its canonical form in the format it was written in."""
    return quantity.exact_string(quantity.parse(text), quantity.format_of(text))


def _dec_key(text: str) -> str:
    """quantityKeyAsDec: Quantity.AsDec().String() of a decimal text, which keeps the scale it was
    written with ("500m" is "0.500", "1.5" is "1.5", "1000m" is "1.000", so not a duplicate of "1");
    a binary-suffixed value, always whole here, is its integer."""
    value = quantity.parse(text)
    match = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([numkMGTPE]?)", text.strip())
    if match is None:
        return str(value.numerator) if value.denominator == 1 else str(float(value))
    sign, whole, frac, suffix = match.groups()
    exponent = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}[suffix]
    decimals = len(frac or "") - exponent
    if decimals <= 0:
        return str(value.numerator)
    digits = f"{abs(int((whole or '0') + (frac or ''))):0{decimals + 1}d}"
    return f"{sign if value else ''}{digits[:-decimals]}.{digits[-decimals:]}"


# --- claims --------------------------------------------------------------------------------------


def capacity_requirements(obj: Mapping[str, Any], path: str, gates: Gates) -> JSON | None:
    """A request's `capacity: {requests: {name: quantity}}` (DRAConsumableCapacity)."""
    if obj.get("capacity") is None or not consumable(gates):
        return None
    cpath = join(path, "capacity")
    cap = rc.as_obj(obj["capacity"], cpath)
    rc.fields(cap, cpath, ("requests",))
    rpath = join(cpath, "requests")
    out: JSON = {}
    for key, value in (rc.get_obj(cap, "requests", cpath) or {}).items():
        kpath = f"{rpath}[{key}]"
        rc.check_qualified_name(kpath, str(key))
        out[str(key)] = rc.check_quantity(kpath, value)
    return {"requests": out} if out else {}


def result_sharing(res: Mapping[str, Any], path: str, item: JSON, gates: Gates) -> None:
    """shareID (a UID) and consumedCapacity of an allocation result; dropped with the gate off."""
    share = rc.get_str(res, "shareID", path)
    consumed = rc.get_obj(res, "consumedCapacity", path)
    item.pop("shareID", None)
    item.pop("consumedCapacity", None)
    if not consumable(gates):
        return
    if share:
        meta_uid(join(path, "shareID"), share)
        item["shareID"] = share
    if consumed:
        cpath = join(path, "consumedCapacity")
        out: JSON = {}
        for key, value in consumed.items():
            kpath = f"{cpath}[{key}]"
            rc.check_qualified_name(kpath, str(key))
            out[str(key)] = rc.check_quantity(kpath, value)
        item["consumedCapacity"] = out


_UID_MSG = ('must be a lowercase UUID in 8-4-4-4-12 format '
            '(e.g. "a8c7de3a-4a1e-4a3b-9c2d-1f6e8b7d0c5e")')


_UID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def meta_uid(path: str, value: str) -> None:
    """validateUID: a UUID in its canonical (lowercase, hyphenated) text form, which is
    exactly what str(uuid.UUID(...)) prints; matched as text (one regex, no UUID object)."""
    if not isinstance(value, str) or _UID_RE.fullmatch(value) is None:
        raise meta.invalid(path, value, _UID_MSG)
