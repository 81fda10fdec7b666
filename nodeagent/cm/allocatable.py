"""Node Allocatable: capacity minus reservations minus the hard eviction threshold. Pure.

The Node Allocatable design (and the kubelet's GetNodeAllocatableReservation):

    allocatable = capacity - kubeReserved - systemReserved - hardEvictionThreshold

per resource in capacity, clamped at 0. The eviction part is memory.available for
memory and nodefs.available for ephemeral-storage, percentages resolved against the
resource's capacity; allocatableIgnoreEviction leaves it out. `pid` reservations do
not enter allocatable (pids is not a node resource); they only limit kubepods.
As the kubelet's node status does, pre-allocated hugepages are also taken out of
allocatable memory, since MemTotal includes them.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.cm.capacity import EPHEMERAL_STORAGE, MEMORY, is_hugepages
from nodeagent.config import Threshold

# Which hard eviction signal reserves which resource.
EVICTION_RESERVES: Mapping[str, str] = {
    MEMORY: "memory.available",
    EPHEMERAL_STORAGE: "nodefs.available",
}


def hard_eviction_reservation(
    capacity: Mapping[str, int], eviction_hard: Mapping[str, Threshold]
) -> dict[str, int]:
    """The part of each resource held back for hard eviction."""
    out: dict[str, int] = {}
    for resource, signal in EVICTION_RESERVES.items():
        threshold = eviction_hard.get(signal)
        if threshold is not None and resource in capacity:
            out[resource] = threshold.resolve(capacity[resource])
    return out


def reserved_absolute(
    capacity: Mapping[str, int],
    kube_reserved: Mapping[str, int],
    system_reserved: Mapping[str, int],
) -> dict[str, int]:
    """capacity - kubeReserved - systemReserved, clamped at 0: the kubepods cgroup's budget."""
    return {
        r: max(0, cap - kube_reserved.get(r, 0) - system_reserved.get(r, 0)) for r, cap in capacity.items()
    }


def allocatable(
    capacity: Mapping[str, int],
    kube_reserved: Mapping[str, int],
    system_reserved: Mapping[str, int],
    eviction_hard: Mapping[str, Threshold],
    *,
    ignore_eviction: bool = False,
) -> dict[str, int]:
    eviction = {} if ignore_eviction else hard_eviction_reservation(capacity, eviction_hard)
    out = {
        r: max(0, v - eviction.get(r, 0))
        for r, v in reserved_absolute(capacity, kube_reserved, system_reserved).items()
    }
    if MEMORY in out:
        hugepages = sum(v for r, v in capacity.items() if is_hugepages(r))
        out[MEMORY] = max(0, out[MEMORY] - hugepages)
    return out


def effective_reservations(
    kube_reserved: Mapping[str, int],
    system_reserved: Mapping[str, int],
    reserved_system_cpus: tuple[int, ...],
) -> tuple[dict[str, int], dict[str, int]]:
    """reservedSystemCPUs overrides the cpu of both reservations, as the kubelet's server.go does:
    kubeReserved loses cpu and systemReserved.cpu becomes the number of reserved cpus."""
    kube = dict(kube_reserved)
    system = dict(system_reserved)
    if reserved_system_cpus:
        kube.pop("cpu", None)
        system["cpu"] = len(reserved_system_cpus) * 1000
    return kube, system
