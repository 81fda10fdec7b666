"""The Pod model shared by every subsystem: spec as parsed from a v1 Pod manifest, and status.

Pure data: no I/O, no gRPC. Quantities are already canonical integers (millicores for
cpu, bytes or counts for the rest; see nodeagent.util.quantity). Parsing and validation of
manifests lives in objects/pod/manifest.py; this module only defines the shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# QoS classes (v1.PodQOSClass)
GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"

# Phases (v1.PodPhase)
PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"

# Annotations understood by nodeagent on a fake node.
ANNOTATION_FINISH_AFTER = "nodeagent.dev/finish-after-seconds"
ANNOTATION_EXIT_CODE = "nodeagent.dev/exit-code"
ANNOTATION_USAGE_PREFIX = "nodeagent.dev/usage-"  # e.g. nodeagent.dev/usage-memory: 200Mi


@dataclass(frozen=True)
class ClaimRef:
    """A container's reference to one of the pod's resource claims (resources.claims[])."""

    name: str
    request: str = ""


@dataclass(frozen=True)
class Container:
    name: str
    image: str = ""
    requests: Mapping[str, int] = field(default_factory=dict)
    limits: Mapping[str, int] = field(default_factory=dict)
    # Only for init containers: "Always" makes it a restartable (sidecar) init container.
    restart_policy: str = ""
    claims: tuple[ClaimRef, ...] = ()

    @property
    def is_sidecar(self) -> bool:
        return self.restart_policy == "Always"


@dataclass(frozen=True)
class PodResourceClaim:
    """pod.spec.resourceClaims[]: a claim by name or generated from a template."""

    name: str
    resource_claim_name: str = ""
    resource_claim_template_name: str = ""


@dataclass(frozen=True)
class Pod:
    uid: str
    name: str
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    priority: int = 0
    priority_class_name: str = ""
    node_name: str = ""
    restart_policy: str = "Always"
    resource_claims: tuple[PodResourceClaim, ...] = ()
    # Pod-level resources (spec.resources), when set.
    pod_requests: Mapping[str, int] = field(default_factory=dict)
    pod_limits: Mapping[str, int] = field(default_factory=dict)
    source: str = "api"  # "api" | "file" (static pod)
    creation_timestamp: float = 0.0
    manifest: Mapping[str, object] = field(default_factory=dict)  # the manifest as given

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def all_containers(self) -> tuple[Container, ...]:
        return self.init_containers + self.containers


@dataclass(frozen=True)
class ResourceHealth:
    """One entry of allocatedResourcesStatus[].resources (KEP-4680)."""

    resource_id: str
    health: str  # Healthy | Unhealthy | Unknown
    message: str = ""  # the driver's detail (DRA health v1: at most 1024 characters), omitted when empty


@dataclass(frozen=True)
class ResourceStatus:
    """One entry of containerStatuses[].allocatedResourcesStatus."""

    name: str  # extended resource name, or claim:<claim>/<request>
    resources: tuple[ResourceHealth, ...] = ()


@dataclass(frozen=True)
class ContainerStatus:
    name: str
    state: str = "waiting"  # waiting | running | terminated
    reason: str = ""
    exit_code: int | None = None
    started_at: float | None = None
    finished_at: float | None = None
    allocated_resources_status: tuple[ResourceStatus, ...] = ()
    message: str = ""  # a waiting container's: why its last start failed (the kubelet's reasonCache)


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: float = 0.0


@dataclass(frozen=True)
class PodStatus:
    phase: str = PENDING
    reason: str = ""
    message: str = ""
    qos_class: str = ""
    start_time: float | None = None
    conditions: tuple[Condition, ...] = ()
    container_statuses: tuple[ContainerStatus, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    # Pod-level allocatedResourcesStatus: DRA claims that no container references.
    allocated_resources_status: tuple[ResourceStatus, ...] = ()

    @property
    def terminal(self) -> bool:
        return self.phase in (SUCCEEDED, FAILED)
