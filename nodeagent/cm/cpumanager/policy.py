"""CPU manager policies `none` and `static`: which exclusive cpus a pod's containers get. Pure.

The kubelet's cpumanager static policy, reduced to what a fake node needs:
- only Guaranteed pods' containers with an integer cpu request get exclusive cpus
  (request / 1000 of them); everything else runs on the shared pool;
- reserved cpus (reservedSystemCPUs, or the ceil(kube+system reserved cpu) lowest
  numbered cpus) are never handed out;
- a container's cpus come from one NUMA node when one has enough free cpus (the
  fullest such node, to keep the others whole), otherwise from the fewest nodes;
  whole physical cores are not required;
- ordinary init containers run before the app containers, so their cpus are reused
  by later containers of the same pod (the kubelet's cpusToReuse).
The `none` policy assigns nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodeagent.cm.resources import CPU, is_guaranteed
from nodeagent.config import NumaNode
from nodeagent.errors import Exhausted
from nodeagent.objects.pod import Container, Pod

NONE = "none"
STATIC = "static"

# pod uid -> container name -> cpu ids
Assignments = Mapping[str, Mapping[str, tuple[int, ...]]]


@dataclass(frozen=True)
class CPUTopology:
    cpus: tuple[int, ...]
    numa_nodes: tuple[NumaNode, ...] = ()  # empty: unknown

    def node_of(self, cpu: int) -> int | None:
        for node in self.numa_nodes:
            if cpu in node.cpus:
                return node.id
        return None


def reserved_cpus(
    topology: CPUTopology, reserved_system_cpus: Iterable[int], reserved_milli: int
) -> tuple[int, ...]:
    """reservedSystemCPUs if given, else the ceil(reserved cpu) lowest-numbered cpus."""
    explicit = tuple(sorted(set(reserved_system_cpus)))
    if explicit:
        return explicit
    return tuple(sorted(topology.cpus)[: math.ceil(reserved_milli / 1000)])


def guaranteed_cpus(pod: Pod, container: Container) -> int:
    """Exclusive cpus a container gets under the static policy (0: shared pool)."""
    if not is_guaranteed(pod):
        return 0
    request = container.requests.get(CPU, container.limits.get(CPU, 0))
    if request <= 0 or request % 1000:
        return 0
    return request // 1000


def take(pool: set[int], n: int, topology: CPUTopology) -> tuple[int, ...] | None:
    """n cpus from `pool`, NUMA-packed; None when the pool is too small."""
    if n > len(pool):
        return None
    if not topology.numa_nodes:
        return tuple(sorted(pool)[:n])
    per_node: dict[int | None, list[int]] = {}
    for cpu in sorted(pool):
        per_node.setdefault(topology.node_of(cpu), []).append(cpu)
    fitting = [(len(cpus), nid) for nid, cpus in per_node.items() if nid is not None and len(cpus) >= n]
    if fitting:
        _, best = min(fitting)
        return tuple(per_node[best][:n])
    chosen: list[int] = []
    order = sorted(per_node.items(), key=lambda kv: (-len(kv[1]), kv[0] is None, kv[0] or 0))
    for _, cpus in order:
        chosen.extend(cpus[: n - len(chosen)])
        if len(chosen) == n:
            break
    return tuple(sorted(chosen))


def in_use(assignments: Assignments) -> set[int]:
    return {cpu for containers in assignments.values() for cpus in containers.values() for cpu in cpus}


def allocate(
    policy: str,
    pod: Pod,
    topology: CPUTopology,
    reserved: Iterable[int],
    assignments: Assignments,
) -> dict[str, tuple[int, ...]]:
    """Exclusive cpus per container of `pod`; raises Exhausted when the shared pool is short."""
    if policy != STATIC:
        return {}
    free = set(topology.cpus) - set(reserved) - in_use(
        {uid: a for uid, a in assignments.items() if uid != pod.uid}
    )
    reusable: set[int] = set()
    result: dict[str, tuple[int, ...]] = {}
    for container in (*pod.init_containers, *pod.containers):
        n = guaranteed_cpus(pod, container)
        if n == 0:
            continue
        pool = free | reusable
        cpus = take(pool, n, topology)
        if cpus is None:
            raise Exhausted(
                f"not enough cpus available to satisfy request: requested={n}, available={len(pool)}"
            )
        result[container.name] = cpus
        free -= set(cpus)
        reusable -= set(cpus)
        if container in pod.init_containers and not container.is_sidecar:
            reusable |= set(cpus)
    return result
