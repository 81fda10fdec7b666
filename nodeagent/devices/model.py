"""The device manager's model: devices, plugin options and Allocate answers as frozen dataclasses.

Pure data and the small pure checks the kubelet applies to it (extended resource names).
Protobuf messages never reach this module: devices/convert.py maps them at the edge, so
state, checkpoints and logs only ever hold these types. JSON helpers here define the
checkpoint shape of an Allocate answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
UNKNOWN = "Unknown"  # device held by a pod while its plugin is gone

VERSION = "v1beta1"
SUPPORTED_VERSIONS = ("v1beta1",)
PRE_START_TIMEOUT = 30.0  # KubeletPreStartContainerRPCTimeoutInSecs

# Qualified name (k8s.io/apimachinery validation.IsQualifiedName).
_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _is_qualified_name(value: str) -> bool:
    parts = value.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and _NAME_PART.fullmatch(name) is not None


def is_extended_resource_name(name: str) -> bool:
    """The kubelet's v1helper.IsExtendedResourceName (device plugin resource names)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return _is_qualified_name("requests." + name)


def is_healthy(health: str) -> bool:
    """Exactly "Healthy" is healthy; any other string counts as unhealthy (kubelet rule)."""
    return health == HEALTHY


@dataclass(frozen=True)
class Device:
    """One device as the plugin reported it in its last ListAndWatch snapshot."""

    id: str
    health: str = HEALTHY
    numa_nodes: tuple[int, ...] = ()

    @property
    def healthy(self) -> bool:
        return is_healthy(self.health)


@dataclass(frozen=True)
class PluginOptions:
    pre_start_required: bool = False
    get_preferred_allocation_available: bool = False


@dataclass(frozen=True)
class Mount:
    container_path: str
    host_path: str
    read_only: bool = False


@dataclass(frozen=True)
class DeviceSpec:
    container_path: str
    host_path: str
    permissions: str = ""


@dataclass(frozen=True)
class ContainerAllocation:
    """What the plugin's Allocate returned for one container (container_responses[0])."""

    envs: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    devices: tuple[DeviceSpec, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    cdi_devices: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "envs": dict(self.envs),
            "mounts": [[m.container_path, m.host_path, m.read_only] for m in self.mounts],
            "devices": [[d.container_path, d.host_path, d.permissions] for d in self.devices],
            "annotations": dict(self.annotations),
            "cdi_devices": list(self.cdi_devices),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ContainerAllocation:
        return cls(
            envs=dict(doc.get("envs", {})),
            mounts=tuple(Mount(str(c), str(h), bool(r)) for c, h, r in doc.get("mounts", [])),
            devices=tuple(DeviceSpec(str(c), str(h), str(p)) for c, h, p in doc.get("devices", [])),
            annotations=dict(doc.get("annotations", {})),
            cdi_devices=tuple(str(n) for n in doc.get("cdi_devices", [])),
        )


@dataclass(frozen=True)
class ResourceAllocation:
    """Devices of one resource held by one container, with the plugin's answer."""

    resource: str
    device_ids: tuple[str, ...]
    response: ContainerAllocation = field(default_factory=ContainerAllocation)
    # NUMA nodes of each device at allocation time, so pod-resources answers the same
    # after a restart, before the plugin has re-registered.
    numa: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainerRef:
    """A container of a pod holding devices; namespace/name kept for events."""

    pod_uid: str
    container: str
    namespace: str = ""
    pod_name: str = ""


@dataclass(frozen=True)
class ResourceSummary:
    """Per-resource figures for node status, the admin API and the metrics collector."""

    resource: str
    capacity: int
    allocatable: int
    healthy: int
    unhealthy: int
    allocated: int
    registered: bool  # a plugin stream is live
    endpoint: str = ""
