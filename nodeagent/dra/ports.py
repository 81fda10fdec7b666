"""Contracts inside the DRA subsystem: plain data and Protocols, no gRPC.

The gRPC edge (registry.py, client.py, health_client.py, fed by the plugin watcher)
implements `DriverRegistry`; the manager (manager.py) uses it to prepare and unprepare
claims and to follow device health. Protobuf never crosses this line: convert.py maps
v1 / v1beta1 / health v1 / v1alpha1 messages to these dataclasses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nodeagent.objects.pod.model import Pod, ResourceStatus

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
UNKNOWN = "Unknown"


@dataclass(frozen=True)
class ClaimRef:
    """What NodePrepareResources / NodeUnprepareResources carry per claim."""

    namespace: str
    uid: str
    name: str


@dataclass(frozen=True)
class PreparedDevice:
    request_names: tuple[str, ...]  # empty: every request of the claim
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...] = ()
    share_id: str | None = None


@dataclass(frozen=True)
class PrepareResult:
    """One claim's answer: devices, or the driver's per-claim error text."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class DeviceHealthUpdate:
    """One device in one NodeWatchResources message (the complete list of the driver)."""

    pool_name: str
    device_name: str
    health: str  # Healthy | Unhealthy | Unknown
    last_updated: float  # unix seconds as the driver reported
    timeout_seconds: float  # health_check_timeout_seconds, <= 0: the kubelet default (30 s)
    message: str = ""


@dataclass(frozen=True)
class DriverInfo:
    name: str
    endpoint: str  # absolute path of the DRA service socket
    plugin_version: str  # the DRAPlugin service token in use: "v1.DRAPlugin" or "v1beta1.DRAPlugin"
    health_version: str  # "v1.DRAResourceHealth", "v1beta1.…", "v1alpha1.…" or "" (none advertised: no stream)


class DriverCallError(Exception):
    """A whole prepare/unprepare call failed (unreachable, timeout, RPC error); text says why."""


HealthListener = Callable[[str, Sequence[DeviceHealthUpdate]], Awaitable[None]]
"""(driver name, the complete device list of one NodeWatchResources message)."""

DriverListener = Callable[[str, bool], Awaitable[None]]
"""(driver name, registered) — called when a driver registers (True) or goes away (False)."""


class DriverRegistry(Protocol):
    """The registered DRA drivers, as the plugin watcher and the handler keep them."""

    def drivers(self) -> Mapping[str, DriverInfo]: ...

    def is_registered(self, driver: str) -> bool: ...

    async def prepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        """NodePrepareResources (45 s deadline); keyed by claim uid; raises DriverCallError."""
        ...

    async def unprepare(self, driver: str, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        """NodeUnprepareResources; claim uid -> error text ("" = done); raises DriverCallError."""
        ...

    def on_health(self, listener: HealthListener) -> None:
        """Every health message of every driver goes to `listener` (streams kept open by the registry)."""
        ...

    def on_driver(self, listener: DriverListener) -> None: ...


# --- what the DRA manager needs from the rest of the daemon (added for the manager) -------------


class ClaimSource(Protocol):
    """The ResourceClaims of the object store, as the DRA manager reads them (plain dicts).

    The daemon implements it over nodeagent/store; the manager never writes through it.
    """

    def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The resource.k8s.io/v1 ResourceClaim as a dict (metadata.uid, status.allocation.devices
        .results[{request, driver, pool, device}], status.reservedFor[{resource, name, uid}]), or None."""
        ...

    async def fetch_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The claim as the API server has it now, or None when it does not exist; raises
        NodeAgentError when it cannot be read. The kubelet GETs every claim of the pod at each
        PrepareResources (a node's credentials may not list or watch claims on a real
        kube-apiserver), so a claim created, allocated or reserved just before the pod reached the
        node is seen at once, never "not found" from a cache that has not caught up."""
        ...

    def pod_claim_names(self, pod: Pod) -> Sequence[tuple[str, str]]:
        """(pod claim name, ResourceClaim name) for each pod.spec.resourceClaims entry, templates
        resolved through pod.status.resourceClaimStatuses; "" as the claim name while the claim
        generated from a template is not known yet."""
        ...


class PodHealthSink(Protocol):
    """Where device health lands in pod status (the pod manager)."""

    async def on_resource_health(self, uid: str, container: str, statuses: Sequence[ResourceStatus]) -> None:
        """Merge `statuses` by name into the container's allocatedResourcesStatus."""
        ...

    async def on_pod_resource_health(self, uid: str, statuses: Sequence[ResourceStatus]) -> None:
        """Merge `statuses` by name into the pod-level allocatedResourcesStatus."""
        ...
