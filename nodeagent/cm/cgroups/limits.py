"""Cgroup limits as the kubelet sets them, and the shares/weight/quota conversions. Pure.

CgroupLimits is the whole desired state of one cgroup: None means "unlimited" (or the
kernel default for cpu shares), so `ensure(path, limits)` is declarative and
idempotent. Sources: pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares,
MilliCPUToQuota, ResourceConfigForPod), node_container_manager_linux.go (kubepods and
reserved cgroups), qos_container_manager_linux.go (QoS cgroups), and runc's
ConvertCPUSharesToCgroupV2Value for cgroup v2 cpu.weight.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodeagent.objects.pod import node_allocatable_status
from nodeagent.objects.pod.model import BEST_EFFORT, GUARANTEED, Pod
from nodeagent.pods.resources import CPU, MEMORY, all_limited, pod_limits, pod_requests

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
DEFAULT_SHARES = 1024  # kernel default (cpu.weight 100 on v2)
MILLI_PER_CPU = 1000
QUOTA_PERIOD = 100000  # microseconds, the kubelet's default cpuCFSQuotaPeriod
MIN_QUOTA = 1000  # microseconds
PID = "pid"


@dataclass(frozen=True)
class CgroupLimits:
    memory_max: int | None = None  # bytes; None: unlimited
    cpu_shares: int | None = None  # None: the kernel default (1024)
    cpu_quota: int | None = None  # microseconds per period; None: unlimited
    cpu_period: int = QUOTA_PERIOD  # microseconds
    pids_max: int | None = None  # None: unlimited

    @property
    def cpu_weight(self) -> int:
        """cgroup v2 cpu.weight for these shares."""
        return shares_to_weight(self.cpu_shares if self.cpu_shares is not None else DEFAULT_SHARES)


UNLIMITED = CgroupLimits()


def milli_to_shares(milli: int) -> int:
    if milli == 0:
        return MIN_SHARES
    return max(MIN_SHARES, min(MAX_SHARES, milli * SHARES_PER_CPU // MILLI_PER_CPU))


def milli_to_quota(milli: int, period: int = QUOTA_PERIOD) -> int:
    """CFS quota for a cpu limit; 0 means no quota."""
    if milli == 0:
        return 0
    return max(MIN_QUOTA, milli * period // MILLI_PER_CPU)


def shares_to_weight(shares: int) -> int:
    """runc's conversion: [2, 262144] shares onto [1, 10000] weight."""
    if shares == 0:
        return 0
    return 1 + ((shares - 2) * 9999) // 262142


def weight_to_shares(weight: int) -> int:
    """The smallest shares value whose weight is `weight` (inverse of shares_to_weight)."""
    if weight <= 0:
        return 0
    return 2 + math.ceil((weight - 1) * 262142 / 9999)


def kubepods_limits(
    capacity: Mapping[str, int],
    kube_reserved: Mapping[str, int],
    system_reserved: Mapping[str, int],
    pid_max: int,
    *,
    enforce_pods: bool,
) -> CgroupLimits:
    """Limits of the kubepods cgroup: capacity - reserved when 'pods' is enforced, else capacity.

    capacity - reserved equals allocatable + the hard eviction threshold: pods may use
    the eviction headroom, eviction (not the OOM killer) takes it back.
    """
    budget = dict(capacity)
    budget[PID] = pid_max
    if enforce_pods:
        budget = {
            r: max(0, v - kube_reserved.get(r, 0) - system_reserved.get(r, 0)) for r, v in budget.items()
        }
    return CgroupLimits(
        memory_max=budget.get(MEMORY),
        cpu_shares=milli_to_shares(budget[CPU]) if CPU in budget else None,
        pids_max=budget[PID] if enforce_pods and (PID in kube_reserved or PID in system_reserved) else None,
    )


def reserved_limits(reservation: Mapping[str, int]) -> CgroupLimits:
    """Limits of kubeReservedCgroup/systemReservedCgroup when enforced: the reservation itself."""
    return CgroupLimits(
        memory_max=reservation.get(MEMORY),
        cpu_shares=milli_to_shares(reservation[CPU]) if CPU in reservation else None,
        pids_max=reservation.get(PID),
    )


def besteffort_limits() -> CgroupLimits:
    return CgroupLimits(cpu_shares=MIN_SHARES)


def burstable_limits(burstable_cpu_requests: Iterable[int]) -> CgroupLimits:
    """Burstable QoS cgroup: shares from the sum of the burstable pods' cpu requests."""
    return CgroupLimits(cpu_shares=milli_to_shares(sum(burstable_cpu_requests)))


def pod_cgroup_requests(pod: Pod, node_allocatable: bool = False) -> dict[str, int]:
    """resourcehelper.PodRequests as ResourceConfigForPod and the Burstable QoS cgroup ask for it:
    with DRANodeAllocatableResources, plus the pod's nodeAllocatableResourceClaimStatuses (mapped
    quantities, perPod and perContainer x references), unless a pod-level request sets the resource."""
    requests = pod_requests(pod)
    if node_allocatable:
        for name, value in node_allocatable_status.claim_resources(pod.manifest.get("status")).items():
            if name not in pod.pod_requests:
                requests[name] = requests.get(name, 0) + value
    return requests


def pod_cgroup_pod_limits(pod: Pod, node_allocatable: bool = False) -> dict[str, int]:
    """resourcehelper.PodLimits with DRANodeAllocatableResources: the claims' resources are added
    where the containers declare a limit (unlimited stays unlimited) and to hugepages always
    (addDRANodeAllocatableLimits); a pod-level limit still wins."""
    limits = pod_limits(pod)
    if node_allocatable:
        for name, value in node_allocatable_status.claim_resources(pod.manifest.get("status")).items():
            if name not in pod.pod_limits and (name in limits or name.startswith("hugepages-")):
                limits[name] = limits.get(name, 0) + value
    return limits


def pod_cgroup_limits(pod: Pod, qos_class: str, period: int = QUOTA_PERIOD,
                      node_allocatable: bool = False) -> CgroupLimits:
    """ResourceConfigForPod: the pod cgroup's limits from its containers (and, with
    DRANodeAllocatableResources, its claims' node allocatable resources)."""
    if qos_class == BEST_EFFORT:
        return CgroupLimits(cpu_shares=MIN_SHARES)
    requests = pod_cgroup_requests(pod, node_allocatable)
    limits = pod_cgroup_pod_limits(pod, node_allocatable)
    shares = milli_to_shares(requests.get(CPU, 0))
    quota = milli_to_quota(limits.get(CPU, 0), period) or None
    memory = limits.get(MEMORY) or None
    if qos_class == GUARANTEED:
        return CgroupLimits(memory_max=memory, cpu_shares=shares, cpu_quota=quota, cpu_period=period)
    return CgroupLimits(
        memory_max=memory if all_limited(pod, MEMORY) else None,
        cpu_shares=shares,
        cpu_quota=quota if all_limited(pod, CPU) else None,
        cpu_period=period,
    )
