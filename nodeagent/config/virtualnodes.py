"""NodeAgentConfiguration.virtualNodes: parsed into frozen VirtualNodeSpecs when the file is loaded.

Parsing at load (not when the control plane starts) is what makes `nodeagent check-config` refuse
exactly what `nodeagent run` refuses; every error names its field path, e.g.
`NodeAgentConfiguration.virtualNodes[0].capacity["memory"]: invalid quantity "3x"`. Names follow
the Kubernetes API's rules (node names, labels, taints, DRA driver, device and attribute names),
checked with the API objects' own validators. Pure: no I/O. The control plane
(controlplane/controllers/virtual_nodes.py) turns the specs into Nodes and ResourceSlices.

Config shape (one entry; `count` > 1 expands `{index}` in the name):

    - name: vnode-{index}
      count: 3
      labels: {zone: a}
      taints: [{key: gpu, value: "true", effect: NoSchedule}]   # spec.taints of the Node
      capacity: {cpu: "4", memory: 32Gi, pods: "110", example.com/foo: "2"}
      reservations: {cpu: 100m, memory: 1Gi}      # kubeReserved + systemReserved
      devices:                                     # the device profile
      - driver: gpu.example.com
        pool: ""                                   # default: the node's name
        count: 8
        name: gpu-{index}                          # default <first driver label>-{index}
        attributes: {model: a100, index: {int: 0}} # scalars or typed {string|int|bool|version}
        capacity: {memory: 40Gi}

`{index}` (device index within its group) and `{node}` are substituted in device names and
string attribute values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.config.model import DeviceGroup, VirtualNodeSpec
from nodeagent.errors import ConfigError, ValidationError
from nodeagent.objects import common as rc
from nodeagent.objects.pod.scheduling import check_taint
from nodeagent.store import validation as meta
from nodeagent.util import quantity

PATH = "NodeAgentConfiguration.virtualNodes"
DEFAULT_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110"}
MAX_DEVICES_PER_SLICE = 128
_NODE_FIELDS = {"name", "count", "labels", "taints", "capacity", "reservations", "devices"}
_DEVICE_FIELDS = {"driver", "pool", "count", "name", "attributes", "capacity"}
_ATTR_TYPES = ("string", "int", "bool", "version")


def _err(path: str, msg: str) -> ConfigError:
    return ConfigError(f"{path}: {msg}")


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _err(path, f"expected object, got {type(value).__name__}")
    return value


def _keys(doc: Mapping[str, Any], allowed: set[str], path: str) -> None:
    for key in doc:
        if key not in allowed:
            raise _err(f"{path}.{key}", "unknown field")


def _int(value: object, path: str, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _err(path, f"expected integer, got {type(value).__name__}")
    if value < minimum:
        raise _err(path, f"must be at least {minimum}")
    return value


def _quantities(value: object, path: str) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for name, raw in _mapping(value, path).items():
        qpath = f'{path}["{name}"]'
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise _err(qpath, f"invalid quantity {raw!r}")
        try:
            n = quantity.canonical(str(name), raw)
        except quantity.QuantityError as e:
            raise _err(qpath, str(e)) from None
        if n < 0:
            raise _err(qpath, "must be greater than or equal to 0")
        out[str(name)] = (str(raw), n)
    return out


def _format(resource: str, value: int) -> str:
    return f"{value}m" if resource == "cpu" and value % 1000 else (
        str(value // 1000) if resource == "cpu" else str(value))


def _attribute(raw: object, path: str) -> dict[str, Any]:
    if isinstance(raw, bool):
        return {"bool": raw}
    if isinstance(raw, int):
        return {"int": raw}
    if isinstance(raw, str):
        return {"string": raw}
    typed = _mapping(raw, path)
    if len(typed) != 1 or next(iter(typed)) not in _ATTR_TYPES:
        raise _err(path, "expected a scalar or one of {string|int|bool|version: value}")
    kind, value = next(iter(typed.items()))
    ok = {"string": isinstance(value, str), "version": isinstance(value, str), "bool": isinstance(value, bool),
          "int": isinstance(value, int) and not isinstance(value, bool)}[kind]
    if not ok:
        raise _err(f"{path}.{kind}", f"invalid value {value!r}")
    return {kind: value}


def _device_group(raw: object, path: str, node_name: str) -> DeviceGroup:
    doc = _mapping(raw, path)
    _keys(doc, _DEVICE_FIELDS, path)
    driver = doc.get("driver")
    if not isinstance(driver, str) or not driver:
        raise _err(f"{path}.driver", "required")
    try:
        rc.check_driver_name(f"{path}.driver", driver)
    except ValidationError as e:
        raise ConfigError(str(e)) from None
    pool = doc.get("pool") or ""
    if not isinstance(pool, str):
        raise _err(f"{path}.pool", "expected string")
    count = _int(doc.get("count", 1), f"{path}.count")
    pattern = doc.get("name") or driver.split(".")[0] + "-{index}"
    if not isinstance(pattern, str):
        raise _err(f"{path}.name", "expected string")
    if count > 1 and "{index}" not in pattern:
        raise _err(f"{path}.name", "must contain {index} when count > 1")
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in _mapping(doc.get("attributes") or {}, f"{path}.attributes").items():
        apath = f'{path}.attributes["{name}"]'
        try:
            rc.check_qualified_name(apath, str(name))
        except ValidationError as e:
            raise ConfigError(str(e)) from None
        attributes[str(name)] = _attribute(value, apath)
    capacity = {k: v[0] for k, v in _quantities(doc.get("capacity") or {}, f"{path}.capacity").items()}
    group = DeviceGroup(driver, pool, count, pattern, attributes, capacity)
    for i in range(count):
        try:
            rc.check_device_name(f"{path}.name", subst(pattern, i, node_name))
        except ValidationError as e:
            raise ConfigError(str(e)) from None
    return group


def subst(text: str, index: int, node: str) -> str:
    return text.replace("{index}", str(index)).replace("{node}", node)


def parse(raw: Sequence[Mapping[str, Any]], local_node: str = "") -> tuple[VirtualNodeSpec, ...]:
    """Validate cfg.agent.virtual_nodes; ConfigError names the field path."""
    specs: list[VirtualNodeSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        path = f"{PATH}[{i}]"
        doc = _mapping(item, path)
        _keys(doc, _NODE_FIELDS, path)
        pattern = doc.get("name")
        if not isinstance(pattern, str) or not pattern:
            raise _err(f"{path}.name", "required")
        count = _int(doc.get("count", 1), f"{path}.count")
        if count > 1 and "{index}" not in pattern:
            raise _err(f"{path}.name", "must contain {index} when count > 1")
        labels = {str(k): str(v) for k, v in _mapping(doc.get("labels") or {}, f"{path}.labels").items()}
        try:
            meta.check_labels(f"{path}.labels", labels)
        except ValidationError as e:
            raise ConfigError(str(e)) from None
        raw_taints = doc.get("taints") or []
        if not isinstance(raw_taints, list):
            raise _err(f"{path}.taints", "expected array")
        try:
            taints = tuple(check_taint(f"{path}.taints[{j}]", t) for j, t in enumerate(raw_taints))
        except ValidationError as e:
            raise ConfigError(str(e)) from None
        capacity = _quantities({**DEFAULT_CAPACITY, **_mapping(doc.get("capacity") or {}, f"{path}.capacity")},
                               f"{path}.capacity")
        reservations = _quantities(doc.get("reservations") or {}, f"{path}.reservations")
        allocatable: dict[str, str] = {}
        for name, (text, value) in capacity.items():
            reserved = reservations.get(name, ("0", 0))[1]
            allocatable[name] = text if not reserved else _format(name, max(0, value - reserved))
        for name in reservations:
            if name not in capacity:
                raise _err(f'{path}.reservations["{name}"]', "not in capacity")
            if reservations[name][1] > capacity[name][1]:
                raise _err(f'{path}.reservations["{name}"]', "exceeds the capacity")
        raw_devices = doc.get("devices") or []
        if not isinstance(raw_devices, list):
            raise _err(f"{path}.devices", "expected array")
        for index in range(count):
            name = subst(pattern, index, "")
            try:
                meta.check_dns_subdomain(f"{path}.name", name)
            except ValidationError as e:
                raise ConfigError(str(e)) from None
            if name in seen or name == local_node:
                raise _err(f"{path}.name", f'duplicate node name "{name}"')
            seen.add(name)
            groups = tuple(_device_group(d, f"{path}.devices[{j}]", name) for j, d in enumerate(raw_devices))
            per_pool: dict[tuple[str, str], set[str]] = {}
            for j, g in enumerate(groups):
                names = per_pool.setdefault((g.driver, g.pool), set())
                for k in range(g.count):
                    dev = subst(g.name, k, name)
                    if dev in names:
                        raise _err(f"{path}.devices[{j}].name", f'duplicate device name "{dev}" in pool')
                    names.add(dev)
                if len(names) > MAX_DEVICES_PER_SLICE:
                    raise _err(f"{path}.devices[{j}].count",
                               f"more than {MAX_DEVICES_PER_SLICE} devices for driver {g.driver}")
            specs.append(VirtualNodeSpec(name, labels, {k: v[0] for k, v in capacity.items()}, allocatable, groups,
                                         taints))
    return tuple(specs)
