"""Parsing and validation of NodeAgentConfiguration.classicControllers into frozen dataclasses.

Parsed when the file is loaded (so `check-config` and `run` give the same verdict); this module
turns each entry into the configuration of a built-in driver controller (the dataclasses in
model.py), and names the exact field path in every error
(`NodeAgentConfiguration.classicControllers[0].pools[1].devices[2].name: ...`).
Names follow the DRA API's rules (driver, pool, device, attribute names; quantities;
core NodeSelector). Shape:

    classicControllers:
    - controllerName: cxl.example.com      # spec.controllerName of the claims it serves
      type: cxl                            # the built-in driver (only "cxl" for now)
      pools:
      - name: rack-a
        nodes: [node-1, node-2]            # node names, or a NodeSelector object
        devices:
        - name: acc-0
          attributes: {model: a100, cxl.example.com/gen: {int: 2}}
          capacity: {memory: 64Gi}

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.config.model import ClassicControllerConfig, DeviceConfig, PoolConfig
from nodeagent.errors import ConfigError, ValidationError
from nodeagent.objects import common as rc
from nodeagent.objects.resource.shared import ATTRIBUTES_AND_CAPACITIES_MAX, SLICE_DEVICES_MAX

ROOT = "NodeAgentConfiguration.classicControllers"
DRIVER_TYPES = ("cxl",)
_ATTRIBUTE_KINDS = ("int", "bool", "string", "version")


def _fail(err: ValidationError) -> ConfigError:
    return ConfigError(str(err))


def parse_classic_controllers(
    raw: Sequence[Mapping[str, Any]], path: str = ROOT
) -> tuple[ClassicControllerConfig, ...]:
    """Validate every entry; ConfigError names the first wrong field's path."""
    out: list[ClassicControllerConfig] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(raw):
        cfg = parse_controller(entry, f"{path}[{i}]")
        if cfg.controller_name in seen:
            raise ConfigError(
                f'{path}[{i}].controllerName: Duplicate value: "{cfg.controller_name}" '
                f"(also {path}[{seen[cfg.controller_name]}])"
            )
        seen[cfg.controller_name] = i
        out.append(cfg)
    return tuple(out)


def parse_controller(entry: object, path: str) -> ClassicControllerConfig:
    try:
        doc = rc.as_obj(entry, path)
        rc.fields(doc, path, ("controllerName", "type", "pools"))
        name = rc.get_str(doc, "controllerName", path)
        if not name:
            raise ValidationError(rc.join(path, "controllerName"), "Required value")
        rc.check_driver_name(rc.join(path, "controllerName"), name)
        kind = rc.get_str(doc, "type", path) or "cxl"
        if kind not in DRIVER_TYPES:
            supported = ", ".join(f'"{t}"' for t in DRIVER_TYPES)
            raise ValidationError(rc.join(path, "type"), f'Unsupported value: "{kind}": supported values: {supported}')
        pools_raw = rc.get_list(doc, "pools", path)
        if not pools_raw:
            raise ValidationError(rc.join(path, "pools"), "Required value: at least one pool")
        pools = tuple(_pool(p, f"{path}.pools[{j}]") for j, p in enumerate(pools_raw))
        rc.check_set([p.name for p in pools], rc.join(path, "pools"))
    except ValidationError as err:
        raise _fail(err) from None
    return ClassicControllerConfig(controller_name=name, type=kind, pools=pools)


def _pool(raw: object, path: str) -> PoolConfig:
    doc = rc.as_obj(raw, path)
    rc.fields(doc, path, ("name", "nodes", "devices"))
    name = rc.get_str(doc, "name", path)
    rc.check_pool_name(rc.join(path, "name"), name)
    nodes = doc.get("nodes")
    npath = rc.join(path, "nodes")
    names: tuple[str, ...] = ()
    selector: Mapping[str, Any] | None = None
    if nodes is None:
        raise ValidationError(npath, "Required value: node names or a node selector")
    if isinstance(nodes, list | tuple):
        if not nodes:
            raise ValidationError(npath, "Required value: at least one node name")
        for k, node in enumerate(nodes):
            if not isinstance(node, str):
                raise rc.type_error(f"{npath}[{k}]", node, "string")
            rc.check_node_name(f"{npath}[{k}]", node)
        rc.check_set(list(nodes), npath)
        names = tuple(nodes)
    else:
        rc.check_node_selector(npath, nodes)
        selector = dict(rc.as_obj(nodes, npath))
    devices_raw = rc.get_list(doc, "devices", path, SLICE_DEVICES_MAX)
    devices = tuple(_device(d, f"{path}.devices[{k}]") for k, d in enumerate(devices_raw))
    rc.check_set([d.name for d in devices], rc.join(path, "devices"))
    return PoolConfig(name=name, node_names=names, node_selector=selector, devices=devices)


def _device(raw: object, path: str) -> DeviceConfig:
    doc = rc.as_obj(raw, path)
    rc.fields(doc, path, ("name", "attributes", "capacity"))
    name = rc.get_str(doc, "name", path)
    rc.check_device_name(rc.join(path, "name"), name)
    attributes: dict[str, Mapping[str, Any]] = {}
    apath = rc.join(path, "attributes")
    for key, value in (rc.get_obj(doc, "attributes", path) or {}).items():
        kpath = f"{apath}[{key}]"
        rc.check_qualified_name(kpath, str(key))
        attributes[str(key)] = _attribute(value, kpath)
    capacity: dict[str, str] = {}
    cpath = rc.join(path, "capacity")
    for key, value in (rc.get_obj(doc, "capacity", path) or {}).items():
        kpath = f"{cpath}[{key}]"
        rc.check_qualified_name(kpath, str(key))
        if isinstance(value, Mapping):  # the ResourceSlice shape {value: quantity}
            rc.fields(value, kpath, ("value",))
            value = value.get("value")
            kpath = rc.join(kpath, "value")
        capacity[str(key)] = rc.check_quantity(kpath, value)
    if len(attributes) + len(capacity) > ATTRIBUTES_AND_CAPACITIES_MAX:
        raise ValidationError(
            path, f"the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}"
        )
    return DeviceConfig(name=name, attributes=attributes, capacity=capacity)


def _attribute(raw: object, path: str) -> Mapping[str, Any]:
    """A bare value (string, integer, boolean) or the ResourceSlice shape with exactly one kind."""
    if isinstance(raw, bool):
        return {"bool": raw}
    if isinstance(raw, int):
        return {"int": raw}
    if isinstance(raw, str):
        if len(raw) > rc.ATTRIBUTE_VALUE_MAX_LENGTH:
            raise rc.too_long_bytes(path, rc.ATTRIBUTE_VALUE_MAX_LENGTH)
        return {"string": raw}
    doc = rc.as_obj(raw, path)
    rc.fields(doc, path, _ATTRIBUTE_KINDS)
    present = [k for k in _ATTRIBUTE_KINDS if doc.get(k) is not None]
    if len(present) != 1:
        raise ValidationError(path, "Required value: exactly one value must be specified")
    kind = present[0]
    if kind == "int":
        return {"int": rc.get_int(doc, "int", path)}
    if kind == "bool":
        return {"bool": rc.get_bool(doc, "bool", path)}
    text = rc.get_str(doc, kind, path)
    if len(text) > rc.ATTRIBUTE_VALUE_MAX_LENGTH:
        raise rc.too_long_bytes(rc.join(path, kind), rc.ATTRIBUTE_VALUE_MAX_LENGTH)
    if kind == "version":
        rc.check_semver(rc.join(path, kind), text)
    return {kind: text}
