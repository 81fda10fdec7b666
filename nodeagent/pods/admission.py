"""The kubelet's general admission predicates: pod OS, resource fit, affinity, name, ports.

Mirrors lifecycle.predicateAdmitHandler + scheduler AdmissionCheck: the pod's OS label and
spec.os must match the node (predicates.py); then the pod's effective requests
(resourcehelper.PodRequests, spec.overhead included) must fit into allocatable minus the
requests of the active pods, for cpu, memory, ephemeral-storage, hugepages-*, extended
resources and the pod count; then required node affinity / nodeSelector, spec.nodeName and
host ports (predicates.py). The first failure gives the reason (PodOSNotSupported,
OutOf<resource>, NodeAffinity, NodeName, NodePorts) and message, word for word as the
kubelet. The kubelet runs this after the eviction manager's and the resource managers'
admit handlers (see holdings.py). Extended resources
backed by DRA (a container's resource named in pod.status.extendedResourceClaimStatus
.requestMappings) are left out: the scheduler's ResourceClaim serves them, not the node's
allocatable. With DRANodeAllocatableResources a pod also holds what its
status.nodeAllocatableResourceClaimStatuses lists (the 1.37 kubelet's AdmissionCheck passes
EnableDRANodeAllocatableResources). Pure: no I/O.

Summing the requests of every active pod on each admission grows with the node, so a
caller may keep them as a running total (`RequestTotals`) and pass it as `requested`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeagent.objects.pod import node_allocatable_status
from nodeagent.objects.pod.manifest import aggregate_container_requests, is_extended
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods import predicates
from nodeagent.pods.ports import ADMITTED, AdmitResult
from nodeagent.pods.resources import pod_overhead

PODS = "pods"
FIXED_RESOURCES = ("cpu", "memory", "ephemeral-storage")
POD_LEVEL_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True)
class InsufficientResource:
    resource: str
    requested: int
    used: int
    capacity: int

    @property
    def reason(self) -> str:
        return f"OutOf{self.resource}"

    @property
    def message(self) -> str:
        return (
            f"Node didn't have enough resource: {self.resource}, requested: {self.requested}, "
            f"used: {self.used}, capacity: {self.capacity}"
        )


def pod_requests(pod: Pod) -> dict[str, int]:
    """resourcehelper.PodRequests: container aggregate, cpu/memory from pod-level resources if set,
    plus spec.overhead."""
    reqs = aggregate_container_requests(pod.containers, pod.init_containers)
    for name, value in pod.pod_requests.items():
        if name in POD_LEVEL_RESOURCES:
            reqs[name] = value
    for name, value in pod_overhead(pod).items():
        reqs[name] = reqs.get(name, 0) + value
    return reqs


def dra_backed(pod: Pod) -> set[tuple[str, str]]:
    """(container, resource) pairs the pod's extended resource claim serves (KEP-5004)."""
    status = pod.manifest.get("status")
    raw = status.get("extendedResourceClaimStatus") if isinstance(status, Mapping) else None
    if not isinstance(raw, Mapping):
        return set()
    return {(str(m.get("containerName")), str(m.get("resourceName")))
            for m in raw.get("requestMappings") or () if isinstance(m, Mapping)}


def without_dra_backed(pod: Pod) -> Pod:
    """removeMissingExtendedResources' DRA half: the pod without the requests its claim serves."""
    backed = dra_backed(pod)
    if not backed:
        return pod

    def strip(containers: tuple[Container, ...]) -> tuple[Container, ...]:
        return tuple(dataclasses.replace(c, requests={n: v for n, v in c.requests.items() if (c.name, n) not in backed})
                     for c in containers)

    return dataclasses.replace(pod, containers=strip(pod.containers), init_containers=strip(pod.init_containers))


def held_requests(pod: Pod, node_allocatable: bool = False) -> dict[str, int]:
    """resourcehelper.PodRequests as the kubelet's admission computes it: with the
    DRANodeAllocatableResources gate, plus what pod.status.nodeAllocatableResourceClaimStatuses
    adds (the scheduler wrote it; a pod-level request still wins for its resource)."""
    reqs = pod_requests(pod)
    if not node_allocatable:
        return reqs
    status = pod.manifest.get("status")
    extra = node_allocatable_status.claim_resources(status)
    pod_level = set(pod.pod_requests) if pod.pod_requests else set()
    for name, value in extra.items():
        if name not in pod_level:
            reqs[name] = reqs.get(name, 0) + value
    return reqs


def requested_by(pods: Sequence[Pod], node_allocatable: bool = False) -> dict[str, int]:
    total: dict[str, int] = {}
    for p in pods:
        for name, value in held_requests(p, node_allocatable).items():
            total[name] = total.get(name, 0) + value
    return total


class RequestTotals:
    """Requests of a set of pods (by uid), summed as pods come and go: requested_by, kept up to date."""

    def __init__(self, node_allocatable: bool = False) -> None:
        self._by_uid: dict[str, dict[str, int]] = {}
        self._totals: dict[str, int] = {}
        self._node_allocatable = node_allocatable  # DRANodeAllocatableResources

    @property
    def totals(self) -> Mapping[str, int]:
        return self._totals

    def add(self, pod: Pod) -> None:
        """Count `pod` (again: its old requests are replaced)."""
        self.discard(pod.uid)
        reqs = held_requests(pod, self._node_allocatable)
        self._by_uid[pod.uid] = reqs
        for name, value in reqs.items():
            self._totals[name] = self._totals.get(name, 0) + value

    def discard(self, uid: str) -> None:
        reqs = self._by_uid.pop(uid, None)
        if reqs is None:
            return
        for name, value in reqs.items():
            left = self._totals[name] - value
            if left:
                self._totals[name] = left
            else:
                del self._totals[name]  # absent and 0 read the same (used.get(name, 0))


def insufficient_resources(
    pod: Pod,
    allocatable: Mapping[str, int],
    active: Sequence[Pod],
    requested: Mapping[str, int] | None = None,
    node_allocatable: bool = False,
) -> list[InsufficientResource]:
    """Every resource the pod does not fit in, in the scheduler's order (pods, cpu, memory, ...).

    `requested` is requested_by(active) when the caller keeps it as a running total.
    """
    out: list[InsufficientResource] = []
    if PODS in allocatable and len(active) + 1 > allocatable[PODS]:
        out.append(InsufficientResource(PODS, 1, len(active), allocatable[PODS]))
    requests = held_requests(without_dra_backed(pod), node_allocatable)
    # removeMissingExtendedResources: an extended resource the node does not advertise is left
    # to the device manager (the kubelet's own caveat for cluster-level resources).
    requests = {n: v for n, v in requests.items() if not is_extended(n) or n in allocatable}
    if not any(requests.values()):
        return out
    used = requested_by(active, node_allocatable) if requested is None else requested
    scalar = sorted(n for n in requests if n not in FIXED_RESOURCES)
    for name in (*FIXED_RESOURCES, *scalar):
        want = requests.get(name, 0)
        if want > 0 and want > allocatable.get(name, 0) - used.get(name, 0):
            out.append(InsufficientResource(name, want, used.get(name, 0), allocatable.get(name, 0)))
    return out


def admit(
    pod: Pod,
    *,
    node_name: str,
    allocatable: Mapping[str, int],
    active: Sequence[Pod],
    requested: Mapping[str, int] | None = None,
    node_labels: Mapping[str, str] | None = None,
    node_allocatable: bool = False,
) -> AdmitResult:
    """The general predicates for `pod` against the node; `pod` itself never counts as active.

    `requested`, when given, is requested_by(active) (a RequestTotals' totals), and then the
    caller promises that `active` does not hold `pod`. `node_labels` are the Node object's
    labels (for nodeSelector and required node affinity).
    """
    rejected = predicates.os_rejection(pod)
    if rejected is not None:
        return AdmitResult(admit=False, reason=rejected[0], message=rejected[1])
    others = active if requested is not None else [p for p in active if p.uid != pod.uid]
    missing = insufficient_resources(pod, allocatable, others, requested, node_allocatable)
    if missing:
        first = missing[0]
        return AdmitResult(admit=False, reason=first.reason, message=first.message)
    failed = predicates.failures(pod, node_name=node_name, node_labels=node_labels or {}, active=others)
    if failed:
        return AdmitResult(admit=False, reason=failed[0].name, message=failed[0].message)
    return ADMITTED
