"""List-type device attributes (KEP-5491, DRAListTypeAttributes, alpha in 1.36, off by default).

Why a module of its own: the four list fields of a DeviceAttribute (`bools`, `ints`, `strings`,
`versions`) exist only with the gate; with it off the API server drops them on write (an
attribute left without a value is then "exactly one value must be specified"), as upstream's
strategy drops disabled fields. The rules are pkg/apis/resource/validation validateDeviceAttribute
and validateDevice: a list set must not be empty; strings and versions obey the scalar limits per
item (64 bytes, semver); a device carries at most 48 attribute values counting each list item
(ResourceSliceMaxAttributeValuesPerDevice); a slice with list attributes holds at most 64 devices
(ResourceSliceMaxDevicesWithAdvancedFeatures). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects import common as rc
from nodeagent.objects.common import join
from nodeagent.objects.resource.shared import Gates, gate
from nodeagent.store import validation as meta

GATE = "DRAListTypeAttributes"
LIST_KINDS = ("bools", "ints", "strings", "versions")
ATTRIBUTE_VALUES_MAX = 48  # ResourceSliceMaxAttributeValuesPerDevice
SLICE_DEVICES_MAX_ADVANCED = 64  # ResourceSliceMaxDevicesWithAdvancedFeatures


def enabled(gates: Gates) -> bool:
    return gate(gates, GATE)


def strip_disabled(attr: Mapping[str, Any], gates: Gates) -> Mapping[str, Any]:
    """The attribute without its list fields when the gate is off (dropped, not refused)."""
    if enabled(gates) or not any(k in attr for k in LIST_KINDS):
        return attr
    return {k: v for k, v in attr.items() if k not in LIST_KINDS}


def list_value(attr: Mapping[str, Any], kind: str, path: str) -> list[Any]:
    """One list field of an attribute, validated."""
    kpath = join(path, kind)
    raw = attr.get(kind)
    if not isinstance(raw, list):
        raise rc.type_error(kpath, raw, "array")
    if not raw:
        raise meta.invalid(kpath, "[]", "must not be empty if specified")
    out: list[Any] = []
    for i, item in enumerate(raw):
        ipath = f"{kpath}[{i}]"
        if kind == "bools":
            if not isinstance(item, bool):
                raise rc.type_error(ipath, item, "boolean")
        elif kind == "ints":
            if isinstance(item, bool) or not isinstance(item, int):
                raise rc.type_error(ipath, item, "integer")
        else:
            if not isinstance(item, str):
                raise rc.type_error(ipath, item, "string")
            if kind == "versions":
                rc.check_semver(ipath, item)
            if len(item) > rc.ATTRIBUTE_VALUE_MAX_LENGTH:
                raise rc.too_long_bytes(ipath, rc.ATTRIBUTE_VALUE_MAX_LENGTH)
        out.append(item)
    return out


def value_count(attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """numEntriesDeviceAttribute: a scalar counts 1, a list its items."""
    total = 0
    for attr in attributes.values():
        items = sum(len(attr[k]) for k in LIST_KINDS if isinstance(attr.get(k), list))
        total += items or 1
    return total


def check_value_count(attributes: Mapping[str, Mapping[str, Any]], path: str) -> None:
    count = value_count(attributes)
    if count > ATTRIBUTE_VALUES_MAX:
        raise meta.invalid(path, count, f"the total number of attribute values must not exceed {ATTRIBUTE_VALUES_MAX}")


def check_slice_devices(devices: list[dict[str, Any]]) -> None:
    """validateResourceSliceSpec: 64 devices at most when any has taints, consumes counters or
    has a list attribute (128 otherwise, checked where the list is read)."""
    if len(devices) > SLICE_DEVICES_MAX_ADVANCED and any(
            d.get("taints") or d.get("consumesCounters") or has_list(d) for d in devices):
        raise rc.too_many("spec.devices", len(devices), SLICE_DEVICES_MAX_ADVANCED)


def has_list(device: Mapping[str, Any]) -> bool:
    return any(k in attr for attr in (device.get("attributes") or {}).values() for k in LIST_KINDS)
