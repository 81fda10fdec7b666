"""The Protocols through which the pod manager meets the resource managers.

Mirrors the kubelet's PodAdmitHandler chain: the eviction manager's handler (the node's
pressure conditions), then each resource manager (CPU, memory, device manager) admits the
pod in order, then the general predicates (OutOf<resource>, NodeAffinity, NodePorts, ...);
the first refusal wins and every manager that had admitted it is asked to release it
again. `remove` is idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from nodeagent.objects.pod.model import Pod, ResourceStatus


@dataclass(frozen=True)
class AdmitResult:
    admit: bool
    reason: str = ""  # e.g. OutOfcpu, UnexpectedAdmissionError, TopologyAffinityError
    message: str = ""


ADMITTED = AdmitResult(admit=True)


@dataclass(frozen=True)
class NodeResources:
    """What the node offers, in canonical units, merged from the container manager and
    the device manager (extended resources)."""

    capacity: Mapping[str, int] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)  # the Node object's labels
    conditions: tuple[str, ...] = ()  # pressure conditions that are True (the eviction manager's)


class NodeResourcesSource(Protocol):
    def node_resources(self) -> NodeResources: ...


class ResourceAdmitter(Protocol):
    """A resource manager taking part in admission (CPU manager, device manager, ...)."""

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        """Allocate for `pod` (its state durable before returning ADMITTED) or refuse."""
        ...

    async def remove(self, pod: Pod) -> None:
        """Release whatever `pod` holds; a no-op for an unknown pod."""
        ...


class PodCgroups(Protocol):
    """The container manager's per-pod cgroup operations."""

    def create_pod_cgroup(self, pod: Pod, qos_class: str) -> None: ...

    def remove_pod_cgroup(self, pod: Pod, qos_class: str) -> None: ...


@dataclass(frozen=True)
class StartResult:
    """A pre-start hook's verdict (the kubelet's "prepare before containers start").

    Not ready: the pod stays Pending with waiting containers, `message` shown as the pod's
    status message and `reason` as the Warning event's reason; the pod manager retries.
    Ready: the initial allocatedResourcesStatus entries (per container, and pod-level) go into
    the Running status in the same write.
    """

    ready: bool
    reason: str = ""
    message: str = ""
    event: str = ""  # the Warning event's message when the kubelet words it apart ("" = `message`)
    container_resource_status: Mapping[str, tuple[ResourceStatus, ...]] = field(default_factory=dict)
    pod_resource_status: tuple[ResourceStatus, ...] = ()
    # Not ready because containers failed to start with the pod's sandbox up (the device plugin's
    # PreStartContainer, which the kubelet calls as it creates each container): name -> (waiting
    # reason, message). The pod shows those containers waiting with them (no pod message) and each
    # gets the kubelet's Warning `reason` "Error: message" about it (kuberuntime's startContainer).
    failed_containers: Mapping[str, tuple[str, str]] = field(default_factory=dict)


START_READY = StartResult(ready=True)


class PodStarter(Protocol):
    """Runs after admission and before the pod goes Running (DRA's NodePrepareResources).

    `prepare` is called again (backoff, or `PodManager.retry_pending`) until it answers ready;
    it must be idempotent. `unprepare` runs when the pod finishes, is evicted or deleted
    (a no-op for an unknown pod); `forget` when the pod manager drops the pod for good.
    `prepare_now` is the answer `prepare` would give when it needs no call out and no wait
    (nothing to prepare for this pod: no claims), else None; when every starter answers
    ready that way, the pod goes Running in its admission, with one durable write, instead
    of being stored Pending for its worker (nothing was prepared that a crash could leave
    half done).
    """

    async def prepare(self, pod: Pod) -> StartResult: ...

    def prepare_now(self, pod: Pod) -> StartResult | None: ...

    async def unprepare(self, pod: Pod) -> None: ...

    def forget(self, pod: Pod) -> None: ...
