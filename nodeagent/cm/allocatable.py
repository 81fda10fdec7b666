"""Node Allocatable: capacity minus reservations minus the hard eviction threshold. Pure.

The Node Allocatable design (and the kubelet's GetNodeAllocatableReservation):

    allocatable = capacity - kubeReserved - systemReserved - hardEvictionThreshold

per resource in capacity, clamped at 0. The eviction part is memory.available for
memory and nodefs.available for ephemeral-storage, percentages resolved against the
resource's capacity; allocatableIgnoreEviction leaves it out. `pid` reservations do
not enter allocatable (pids is not a node resource); they only limit kubepods.
As the kubelet's node status does, pre-allocated hugepages are also taken out of
allocatable memory, since MemTotal includes them.

Start-up checks as the kubelet's: a reservation above its capacity is refused
(validateNodeAllocatable), and podsPerCore caps the pods capacity.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.cm.capacity import EPHEMERAL_STORAGE, MEMORY, is_hugepages
from nodeagent.config import Threshold
from nodeagent.errors import ConfigError
from nodeagent.util import quantity

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


def node_reservation(
    capacity: Mapping[str, int],
    kube_reserved: Mapping[str, int],
    system_reserved: Mapping[str, int],
    eviction_hard: Mapping[str, Threshold],
    *,
    ignore_eviction: bool = False,
) -> dict[str, int]:
    """GetNodeAllocatableReservation: kubeReserved + systemReserved + hard eviction, per resource."""
    out: dict[str, int] = {}
    eviction = {} if ignore_eviction else hard_eviction_reservation(capacity, eviction_hard)
    for part in (kube_reserved, system_reserved, eviction):
        for name, value in part.items():
            if name == "pid":
                continue
            out[name] = out.get(name, 0) + value
    return out


def validate_reservation(capacity: Mapping[str, int], reservation: Mapping[str, int]) -> None:
    """validateNodeAllocatable: no reservation above its capacity (the kubelet refuses to start)."""
    errors = [
        f'Resource "{name}" has a reservation of {_text(name, value)} but capacity of '
        f"{_text(name, capacity.get(name, 0))}. Expected capacity >= reservation."
        for name, value in sorted(reservation.items())
        if capacity.get(name, 0) - value < 0
    ]
    if errors:
        raise ConfigError(f"invalid Node Allocatable configuration. {' '.join(errors)}")


def pods_capacity(max_pods: int, pods_per_core: int, cpus: int) -> int:
    """The pods capacity: maxPods, capped at podsPerCore x logical cpus when podsPerCore is set."""
    if pods_per_core > 0:
        return min(max_pods, pods_per_core * cpus)
    return max_pods


def _text(name: str, value: int) -> str:
    return quantity.format_canonical(name, value) if value else "0"
