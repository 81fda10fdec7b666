"""Plain data a DRA driver deals in: claims, allocation results, prepared devices, device health.

Pure: no gRPC, no protobuf, no I/O. The kit's gRPC edge (convert.py) maps the v1 / v1beta1
DRAPlugin and v1 / v1beta1 / v1alpha1 DRAResourceHealth messages to and from these frozen dataclasses,
so drivers built on the kit never touch protobuf.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
UNKNOWN = "Unknown"
HEALTH_VALUES = (HEALTHY, UNHEALTHY, UNKNOWN)

# Registration tokens (PluginInfo.supported_versions), in the order upstream's helper lists them.
V1_PLUGIN = "v1.DRAPlugin"
V1BETA1_PLUGIN = "v1beta1.DRAPlugin"
V1_HEALTH = "v1.DRAResourceHealth"
V1BETA1_HEALTH = "v1beta1.DRAResourceHealth"
V1ALPHA1_HEALTH = "v1alpha1.DRAResourceHealth"
HEALTH_SERVICES = (V1_HEALTH, V1BETA1_HEALTH, V1ALPHA1_HEALTH)
ALL_SERVICES = (V1_PLUGIN, V1BETA1_PLUGIN, *HEALTH_SERVICES)
PLUGIN_TYPE = "DRAPlugin"


@dataclass(frozen=True)
class ClaimRef:
    """One claim in NodePrepareResources / NodeUnprepareResources."""

    namespace: str
    uid: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} ({self.uid})"


@dataclass(frozen=True)
class AllocatedDevice:
    """One entry of the claim's status.allocation.devices.results that belongs to this driver."""

    request: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str | None = None


@dataclass(frozen=True)
class PreparedDevice:
    """One device in a NodePrepareResourceResponse."""

    request_names: tuple[str, ...]  # empty: every request of the claim
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...] = ()
    share_id: str | None = None  # v1 only (k8s 1.35+); dropped for v1beta1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "requestNames": list(self.request_names),
            "poolName": self.pool_name,
            "deviceName": self.device_name,
            "cdiDeviceIds": list(self.cdi_device_ids),
        }
        if self.share_id is not None:
            out["shareId"] = self.share_id
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> PreparedDevice:
        share = doc.get("shareId")
        return cls(
            request_names=tuple(str(r) for r in doc.get("requestNames", ())),
            pool_name=str(doc.get("poolName", "")),
            device_name=str(doc.get("deviceName", "")),
            cdi_device_ids=tuple(str(c) for c in doc.get("cdiDeviceIds", ())),
            share_id=None if share is None else str(share),
        )


@dataclass(frozen=True)
class PrepareResult:
    """One claim's answer to NodePrepareResources: devices, or a per-claim error text."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class DeviceHealth:
    """One device in a NodeWatchResources message (each message carries the complete list)."""

    pool: str
    device: str
    health: str = HEALTHY  # Healthy | Unhealthy | Unknown
    timeout_seconds: int = 0  # health_check_timeout_seconds; <= 0: the kubelet's default (30 s)
    message: str = ""

    @property
    def key(self) -> str:
        return f"{self.pool}/{self.device}"


def check_health(value: str) -> str:
    """Accept Healthy / Unhealthy / Unknown (any case); raise ValueError naming the choices."""
    for known in HEALTH_VALUES:
        if value.lower() == known.lower():
            return known
    raise ValueError(f'health must be one of {", ".join(HEALTH_VALUES)}, got "{value}"')
