"""The fake device plugin's profile: YAML parsed once into a frozen dataclass.

A profile names the extended resource, its devices (ids, NUMA node), which optional
features the plugin offers (GetPreferredAllocation, PreStartContainer) and what Allocate
returns. Errors name the field path. No sockets, no gRPC here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeagent.plugin_kit import ConfigError
from nodeagent.plugin_kit.deviceplugin import ContainerAllocation, DeviceSpec, Mount, is_extended_resource_name
from plugins.common import profile as common_profile

DEFAULT_DIR = Path("/var/lib/kubelet/device-plugins")


@dataclass(frozen=True)
class DeviceNode:
    container_path: str  # "{id}" and "{index}" are replaced per device
    host_path: str
    permissions: str = "rw"


@dataclass(frozen=True)
class AllocateTemplate:
    envs: Mapping[str, str] = field(default_factory=dict)  # "{ids}" -> comma-joined device ids
    annotations: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    device_nodes: tuple[DeviceNode, ...] = ()
    cdi_kind: str = ""  # CDI device names "<kind>=<id>"; empty: none

    def render(self, ids: list[str], index: Mapping[str, int]) -> ContainerAllocation:
        joined = ",".join(ids)
        return ContainerAllocation(
            envs={k: v.replace("{ids}", joined) for k, v in self.envs.items()},
            annotations={k: v.replace("{ids}", joined) for k, v in self.annotations.items()},
            mounts=self.mounts,
            devices=tuple(
                DeviceSpec(
                    n.container_path.replace("{id}", i).replace("{index}", str(index.get(i, 0))),
                    n.host_path.replace("{id}", i).replace("{index}", str(index.get(i, 0))),
                    n.permissions,
                )
                for i in ids
                for n in self.device_nodes
            ),
            cdi_devices=tuple(f"{self.cdi_kind}={i}" for i in ids) if self.cdi_kind else (),
        )


@dataclass(frozen=True)
class DeviceDef:
    id: str
    numa_node: int | None = None
    health: str = "Healthy"


@dataclass(frozen=True)
class Profile:
    resource_name: str
    socket_name: str
    devices: tuple[DeviceDef, ...]
    device_plugins_dir: Path | None = None  # None: not in the profile (main.py decides)
    get_preferred_allocation: bool = False
    pre_start_required: bool = False
    allocate: AllocateTemplate = field(default_factory=AllocateTemplate)
    allocate_delay: float = 0.0  # seconds Allocate waits before answering (timeout tests)
    allocate_error: str = ""  # non-empty: Allocate fails with this text
    watch_interval: float = 1.0  # seconds between checks of kubelet.sock / own socket


def _get(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str, default: Any) -> Any:
    value = doc.get(key, default)
    if value is default:
        return value
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float, (int, float))):
        raise ConfigError(f"{path}.{key}: expected {getattr(kind, '__name__', kind)}")
    return value


def _str_map(doc: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    value = _get(doc, key, dict, path, {})
    return {str(k): str(v) for k, v in value.items()}


def _optional_path(doc: Mapping[str, Any], key: str, path: str) -> Path | None:
    value = _get(doc, key, str, path, None)
    if value is None:
        return None
    if not value:
        raise ConfigError(f"{path}.{key}: must not be empty")
    return Path(value)


def parse_profile(doc: Any, origin: str = "profile") -> Profile:
    if not isinstance(doc, dict):
        raise ConfigError(f"{origin}: expected a mapping")
    allowed = {"resourceName", "socketName", "devices", "devicePluginsDir", "getPreferredAllocation",
               "preStartRequired", "allocate", "allocateDelaySeconds", "allocateError",
               "watchIntervalSeconds"}
    common_profile.reject_unknown(doc, origin, allowed)
    resource = _get(doc, "resourceName", str, origin, None)
    if resource is None or not is_extended_resource_name(resource):
        raise ConfigError(f'{origin}.resourceName: "{resource}" is not a valid extended resource name')
    socket_name = _get(doc, "socketName", str, origin, resource.replace("/", "-") + ".sock")
    if "/" in socket_name or socket_name == "kubelet.sock":
        raise ConfigError(f'{origin}.socketName: "{socket_name}" must be a plain file name, not kubelet.sock')
    devices = []
    seen: set[str] = set()
    for n, raw in enumerate(_get(doc, "devices", list, origin, [])):
        p = f"{origin}.devices[{n}]"
        if not isinstance(raw, dict):
            raise ConfigError(f"{p}: expected a mapping")
        dev_id = _get(raw, "id", str, p, None)
        if not dev_id:
            raise ConfigError(f"{p}.id: required")
        if dev_id in seen:
            raise ConfigError(f'{p}.id: duplicate device id "{dev_id}"')
        seen.add(dev_id)
        numa = _get(raw, "numaNode", int, p, None)
        health = _get(raw, "health", str, p, "Healthy")
        devices.append(DeviceDef(dev_id, numa, health))
    alloc = _get(doc, "allocate", dict, origin, {})
    ap = f"{origin}.allocate"
    mounts = tuple(
        Mount(str(m["containerPath"]), str(m["hostPath"]), bool(m.get("readOnly", False)))
        for m in _get(alloc, "mounts", list, ap, [])
    )
    nodes = tuple(
        DeviceNode(str(d["containerPath"]), str(d["hostPath"]), str(d.get("permissions", "rw")))
        for d in _get(alloc, "deviceNodes", list, ap, [])
    )
    template = AllocateTemplate(
        envs=_str_map(alloc, "envs", ap),
        annotations=_str_map(alloc, "annotations", ap),
        mounts=mounts,
        device_nodes=nodes,
        cdi_kind=_get(alloc, "cdiKind", str, ap, ""),
    )
    return Profile(
        resource_name=resource,
        socket_name=socket_name,
        devices=tuple(devices),
        device_plugins_dir=_optional_path(doc, "devicePluginsDir", origin),
        get_preferred_allocation=_get(doc, "getPreferredAllocation", bool, origin, False),
        pre_start_required=_get(doc, "preStartRequired", bool, origin, False),
        allocate=template,
        allocate_delay=float(_get(doc, "allocateDelaySeconds", (int, float), origin, 0.0)),
        allocate_error=_get(doc, "allocateError", str, origin, ""),
        watch_interval=float(_get(doc, "watchIntervalSeconds", (int, float), origin, 1.0)),
    )


def load_profile(path: Path) -> Profile:
    return common_profile.load_profile(path, parse_profile)
