"""ResourceSlice validation: driver, pool, node selection (exactly one of nodeName,
nodeSelector, allNodes) and devices with their attributes and capacities, flattening the
v1beta1 `devices[].basic` shape and bare v1alpha3 capacity quantities into the v1 shape.

Why a module of its own: slices are what drivers publish, with their own limits and name
rules and no overlap with the claim rules; device taints and binding conditions are checked in
device_taints, partitionable devices and consumable capacity in
slice_features, each behind its feature gate. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource import device_taints as taints
from nodeagent.objects.resource import list_attributes, node_allocatable
from nodeagent.objects.resource import slice_features as features
from nodeagent.objects.resource.shared import (
    ATTRIBUTES_AND_CAPACITIES_MAX,
    SLICE_DEVICES_MAX,
    Ctx,
    skip_node_operations,
)
from nodeagent.store import validation as meta

# --- ResourceSlice -----------------------------------------------------------------------------

_SLICE_FEATURES = ("perDeviceNodeSelection", "sharedCounters")
_DEVICE_FIELDS = ("name", "attributes", "capacity", "basic", *features.DEVICE_FIELDS, node_allocatable.FIELD)
_DEVICE_UNSUPPORTED = taints.DEVICE_FIELDS  # checked in device_taints behind their gates


def validate_resource_slice(doc: JSON, ctx: Ctx) -> None:
    """upstream's ValidateResourceSlice: every error in spec order (driver, pool, node selection,
    devices, shared counters), all reported at once; a malformed shape (unknown field, wrong
    type) still stops at once, as decoding does upstream."""
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices",
                             "skipNodeOperations", *_SLICE_FEATURES))
    errors = rc.Errors()
    driver = rc.get_str(spec, "driver", "spec")
    errors.check(rc.check_driver_name, "spec.driver", driver)
    out: JSON = {"driver": driver, "pool": errors.check(_pool, spec.get("pool"), "spec.pool")}
    node_name = rc.get_str(spec, "nodeName", "spec")
    selector = spec.get("nodeSelector")
    all_nodes = bool(rc.get_bool(spec, "allNodes", "spec"))
    if node_name:
        errors.check(rc.check_node_name, "spec.nodeName", node_name)
        out["nodeName"] = node_name
    if selector is not None:
        errors.check(_node_selector, selector)
        out["nodeSelector"] = selector
    if all_nodes:
        out["allNodes"] = True
    per_device = bool(errors.check(features.per_device_node_selection, spec, ctx.gates))
    if per_device:
        out["perDeviceNodeSelection"] = True
    errors.check(_check_node_selection, bool(node_name), selector is not None, all_nodes, per_device, ctx)
    raw_devices = rc.get_list(spec, "devices", "spec", SLICE_DEVICES_MAX)
    checked = [errors.check(_slice_device, d, f"spec.devices[{i}]", per_device, ctx) for i, d in enumerate(raw_devices)]
    devices = [d for d in checked if d is not None]
    failed = len(errors)
    counters = errors.check(features.shared_counters, spec, ctx.gates)
    if len(errors) == failed and len(devices) == len(raw_devices):  # cross checks need every part
        errors.check(features.check_slice_shape, spec, counters, devices)
        if len(errors) == failed:  # the same 64-device limit, for taints and list attributes
            errors.check(list_attributes.check_slice_devices, devices)
    errors.check(lambda: rc.check_set(devices, "spec.devices", key="name"))
    skip = errors.check(skip_node_operations, spec, "spec", ctx.gates)
    errors.raise_all()
    if counters is not None:
        out["sharedCounters"] = counters
    if counters is None or devices:
        out["devices"] = devices
    if skip is not None:
        out["skipNodeOperations"] = skip
    doc["spec"] = out


def _node_selector(selector: object) -> None:
    rc.check_node_selector("spec.nodeSelector", selector)
    assert isinstance(selector, Mapping)
    if len(selector.get("nodeSelectorTerms") or ()) != 1:
        raise meta.invalid(
            "spec.nodeSelector.nodeSelectorTerms", "<value omitted>", "must have exactly one node selector term"
        )


def _check_node_selection(node_name: bool, selector: bool, all_nodes: bool, per_device: bool, ctx: Ctx) -> None:
    """Exactly one way to say which nodes see the pool (perDeviceNodeSelection with its gate)."""
    names = ["`nodeName`", "`nodeSelector`", "`allNodes`"]
    chosen = [n for n, on in zip(names, (node_name, selector, all_nodes), strict=True) if on]
    if features.partitionable(ctx.gates):
        names.append("`perDeviceNodeSelection`")
        if per_device:
            chosen.append("`perDeviceNodeSelection`")
        wanted = f"exactly one of {', '.join(names)} is required"
    else:
        wanted = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required"
    if not chosen:
        raise meta.required("spec", wanted)
    if len(chosen) > 1:
        more = ", but multiple fields are set" if features.partitionable(ctx.gates) else ""
        raise meta.invalid("spec", "{" + ", ".join(chosen) + "}", wanted + more)


def _pool(raw: object, path: str) -> JSON:
    if raw is None:
        raise meta.required(join(path, "name"))
    pool = rc.as_obj(raw, path)
    rc.fields(pool, path, ("name", "generation", "resourceSliceCount"))
    name = rc.get_str(pool, "name", path)
    rc.check_pool_name(join(path, "name"), name)
    generation = rc.get_int(pool, "generation", path) or 0
    if generation < 0:
        raise meta.invalid(join(path, "generation"), generation, "must be greater than or equal to zero")
    count = rc.get_int(pool, "resourceSliceCount", path) or 0
    if count <= 0:
        raise meta.invalid(join(path, "resourceSliceCount"), count, "must be greater than zero")
    return {"name": name, "generation": generation, "resourceSliceCount": count}


def _slice_device(raw: object, path: str, per_device: bool, ctx: Ctx) -> JSON:
    dev = rc.as_obj(raw, path)
    rc.fields(dev, path, (*_DEVICE_FIELDS, *_DEVICE_UNSUPPORTED))
    errors = rc.Errors()
    name = rc.get_str(dev, "name", path)
    errors.check(rc.check_device_name, join(path, "name"), name)
    body, bpath = dev, path
    if dev.get("basic") is not None:  # v1beta1: devices[].basic.{attributes,capacity}
        for key in ("attributes", "capacity"):
            if dev.get(key) is not None:
                raise meta.forbidden(join(path, key), "must not be set beside `basic` (v1beta1 shape)")
        bpath = join(path, "basic")
        body = rc.as_obj(dev["basic"], bpath)
        rc.fields(body, bpath, ("attributes", "capacity", *features.DEVICE_FIELDS, *_DEVICE_UNSUPPORTED,
                                node_allocatable.FIELD))
    extra = errors.check(features.device_features, body, bpath, per_device, ctx.gates) or {}
    extra.update(errors.check(taints.device_fields, body, bpath, ctx.gates) or {})
    multi = bool(extra.get("allowMultipleAllocations") or body.get("allowMultipleAllocations"))
    attributes: JSON = {}
    apath = join(bpath, "attributes")
    for key, value in (rc.get_obj(body, "attributes", bpath) or {}).items():
        kpath = f"{apath}[{key}]"
        errors.check(rc.check_qualified_name, kpath, str(key))
        attributes[str(key)] = errors.check(_attribute, value, kpath, ctx)
    capacity: JSON = {}
    cpath = join(bpath, "capacity")
    for key, value in (rc.get_obj(body, "capacity", bpath) or {}).items():
        kpath = f"{cpath}[{key}]"
        errors.check(rc.check_qualified_name, kpath, str(key))
        capacity[str(key)] = errors.check(_capacity, value, kpath, multi, ctx)
    combined = len(attributes) + len(capacity)
    if combined > ATTRIBUTES_AND_CAPACITIES_MAX:
        errors.append(meta.invalid(
            bpath,
            combined,
            f"the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}",
        ))
    if not errors:
        errors.check(list_attributes.check_value_count, attributes, bpath)
    mapped = errors.check(node_allocatable.device_node_allocatable, body, bpath, capacity, ctx.gates)
    errors.raise_all()
    out: JSON = {"name": name}
    if attributes:
        out["attributes"] = attributes
    if capacity:
        out["capacity"] = capacity
    out.update(extra)
    if mapped:
        out[node_allocatable.FIELD] = mapped
    return out


def _attribute(raw: object, path: str, ctx: Ctx) -> JSON:
    attr = list_attributes.strip_disabled(rc.as_obj(raw, path), ctx.gates)
    kinds = ("int", "bool", "string", "version", *list_attributes.LIST_KINDS)
    rc.fields(attr, path, kinds)
    present = [k for k in kinds if attr.get(k) is not None]
    if not present:
        raise meta.required(path, "exactly one value must be specified")
    if len(present) > 1:
        raise meta.invalid(path, "<value omitted>", "exactly one value must be specified")
    kind = present[0]
    value: object
    if kind in list_attributes.LIST_KINDS:
        value = list_attributes.list_value(attr, kind, path)
    elif kind == "int":
        value = rc.get_int(attr, "int", path)
    elif kind == "bool":
        value = rc.get_bool(attr, "bool", path)
    else:
        text = rc.get_str(attr, kind, path)
        if len(text) > rc.ATTRIBUTE_VALUE_MAX_LENGTH:
            raise rc.too_long_bytes(join(path, kind), rc.ATTRIBUTE_VALUE_MAX_LENGTH)
        if kind == "version":
            rc.check_semver(join(path, kind), text)
        value = text
    return {kind: value}


def _capacity(raw: object, path: str, multi: bool, ctx: Ctx) -> JSON:
    if not isinstance(raw, Mapping):  # v1alpha3: a bare quantity
        return {"value": rc.check_quantity(path, raw)}
    rc.fields(raw, path, ("value", "requestPolicy"))
    if raw.get("value") is None:
        raise meta.required(join(path, "value"))
    out: JSON = {"value": rc.check_quantity(join(path, "value"), raw["value"])}
    policy = features.request_policy(raw, path, out["value"], multi, ctx.gates)
    if policy is not None:
        out["requestPolicy"] = policy
    return out
