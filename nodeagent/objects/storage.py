"""Admission for the storage.k8s.io/v1 kinds: the checks of upstream's pkg/apis/storage/validation
(ValidateCSINode and its update), with its field paths and wording, as store hooks so every writer
is checked.

Why: the real kube-scheduler and CSI drivers read these objects (a CSINode's drivers give each
node's volume limits and topology keys); a malformed one the real kube-apiserver refuses would
reach them here. Differences from upstream, on purpose: the first error is reported, not the
whole list (as for every kind the store checks); Go's zero values that encoding/json writes
without omitempty (`topologyKeys: null`, `status: {}`) are not added to stored objects.
Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.store import validation as meta

JSON = dict[str, Any]

CSI_DRIVER_NAME_MAX = 63
CSI_NODE_ID_MAX = 192  # upstream's csiNodeIDMaxLength
NEGATIVE = "must be greater than or equal to 0"
IMMUTABLE = "field is immutable"


def too_long(path: str, limit: int) -> ValidationError:
    """field.TooLong: the value is omitted, the limit in bytes."""
    return ValidationError(path, f"Too long: may not be more than {limit} bytes")


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise meta.invalid(path, value, f"must be an object, not {meta.go_type(value)}")
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise meta.invalid(path, value, f"must be a list, not {meta.go_type(value)}")
    return value


def _string(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise meta.invalid(path, value, f"must be a string, not {meta.go_type(value)}")
    return value


def check_csi_driver_name(path: str, name: str) -> None:
    """ValidateCSIDriverName: required, at most 63 bytes, a DNS subdomain once lower-cased."""
    if not name:
        raise meta.required(path)
    if len(name) > CSI_DRIVER_NAME_MAX:
        raise too_long(path, CSI_DRIVER_NAME_MAX)
    try:
        meta.check_dns_subdomain(path, name.lower())
    except ValidationError as err:
        # the value in the message is the one written, not the lower-cased one
        raise ValidationError(path, err.detail.replace(meta.quote(name.lower()), meta.quote(name), 1)) from None


def _go_driver(driver: Mapping[str, Any]) -> str:
    """A CSINodeDriver as field.Invalid prints the internal Go struct: encoding/json of a type
    without json tags (Go field names, nil as null)."""
    allocatable = driver.get("allocatable")
    go = {
        "Name": driver.get("name") or "",
        "NodeID": driver.get("nodeID") or "",
        "TopologyKeys": driver.get("topologyKeys") or None,
        "Allocatable": None if allocatable is None else {"Count": allocatable.get("count")},
    }
    return json.dumps(go, separators=(",", ":"))


# --- CSINode -----------------------------------------------------------------------------------


def validate_csi_node(obj: JSON) -> JSON:
    """ValidateCSINode: every driver of spec.drivers (name, nodeID, allocatable, topology keys)."""
    spec = _object(obj.get("spec"), "spec")
    seen: set[str] = set()
    for i, raw in enumerate(_list(spec.get("drivers"), "spec.drivers")):
        path = f"spec.drivers[{i}]"
        driver = _object(raw, path)
        name = _string(driver.get("name"), f"{path}.name")
        check_csi_driver_name(f"{path}.name", name)
        node_id = _string(driver.get("nodeID"), f"{path}.nodeID")
        if not node_id:
            raise meta.required(f"{path}.nodeID")
        if len(node_id) > CSI_NODE_ID_MAX:
            raise meta.invalid(f"{path}.nodeID", node_id, f"must be {CSI_NODE_ID_MAX} characters or less")
        count = _object(driver.get("allocatable"), f"{path}.allocatable").get("count")
        if isinstance(count, int) and count < 0:
            raise meta.invalid(f"{path}.allocatable.count", count, NEGATIVE)
        if name in seen:
            raise meta.duplicate(f"{path}.name", name)
        seen.add(name)
        keys: set[str] = set()
        for key in _list(driver.get("topologyKeys"), f"{path}.topologyKeys"):
            key = _string(key, f"{path}.topologyKeys")
            if not key:
                raise meta.required(path)
            if key in keys:
                raise meta.duplicate(path, key)
            keys.add(key)
            meta.check_qualified_name(path, key)
    return obj


def validate_csi_node_update(new: JSON, old: JSON) -> None:
    """ValidateCSINodeUpdate: a driver already registered keeps all but its allocatable count
    (MutableCSINodeAllocatableCount is GA and locked on in v1.37)."""
    old_drivers = _list(_object(old.get("spec"), "spec").get("drivers"), "spec.drivers")
    new_drivers = _list(_object(new.get("spec"), "spec").get("drivers"), "spec.drivers")
    for before in old_drivers:
        for after in new_drivers:
            if before.get("name") != after.get("name"):
                continue
            a = {k: v for k, v in after.items() if k != "allocatable" and v not in (None, [])}
            b = {k: v for k, v in before.items() if k != "allocatable" and v not in (None, [])}
            if a != b:
                raise ValidationError("spec.drivers", f"Invalid value: {_go_driver({**after, 'allocatable': None})}: "
                                                      f"{IMMUTABLE}")


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {
        "CSINode": {"default": validate_csi_node, "validate_update": validate_csi_node_update},
    }
