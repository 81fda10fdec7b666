"""Node capacity and NUMA layout from host facts and the node profile. Pure.

Like the kubelet's cadvisor-derived capacity: cpu (millicores) from the online cpus,
memory from MemTotal, ephemeral-storage from the filesystem holding the root dir,
hugepages-<size> from every hugepage pool (0 included, as a real node reports),
pods = maxPods. The node profile overrides any resource, and its NUMA nodes replace
the host's layout.

Choices where the design is silent (documented so they can be revisited):
- profile NUMA nodes but no cpu capacity: cpu = number of profile cpus; likewise
  memory = sum of the nodes' memory when every node gives one, and hugepages-<size> =
  sum of the nodes' pools of that size (unless `capacity` names the resource);
- profile cpu capacity that disagrees with the host's cpu count and no profile NUMA
  nodes: the host layout no longer describes the node, so NUMA becomes unknown and the
  cpu ids are 0..n-1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodeagent.config import NodeProfile, NumaNode
from nodeagent.host.model import FsStats, HostFacts
from nodeagent.util.quantity import format_bytes

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"


@dataclass(frozen=True)
class Capacity:
    resources: Mapping[str, int] = field(default_factory=dict)  # canonical units
    cpus: tuple[int, ...] = ()  # logical cpu ids the node has
    numa_nodes: tuple[NumaNode, ...] = ()  # empty: unknown


def hugepage_resource(size: int) -> str:
    """Resource name of a hugepage size in bytes: 2097152 -> hugepages-2Mi."""
    return HUGEPAGES_PREFIX + format_bytes(size)


def is_hugepages(resource: str) -> bool:
    return resource.startswith(HUGEPAGES_PREFIX)


def node_capacity(facts: HostFacts, root_fs: FsStats, profile: NodeProfile, max_pods: int) -> Capacity:
    resources: dict[str, int] = {
        CPU: len(facts.cpus) * 1000,
        MEMORY: facts.memory_total,
        EPHEMERAL_STORAGE: root_fs.capacity,
    }
    for pool in facts.hugepages:
        resources[hugepage_resource(pool.size)] = pool.size * pool.total
    resources[PODS] = max_pods

    if profile.numa_nodes:
        numa = tuple(sorted(profile.numa_nodes, key=lambda n: n.id))
        cpus = tuple(sorted({c for n in numa for c in n.cpus}))
        resources[CPU] = len(cpus) * 1000
        if all(n.memory > 0 for n in numa):
            resources[MEMORY] = sum(n.memory for n in numa)
        # hugepages-<size>: the sum of the nodes' pools, as the kubelet's capacity sums
        # cadvisor's per-node hugepages (a size only some nodes have counts those)
        sizes = {h for n in numa for h, _ in n.hugepages}
        for h in sorted(sizes):
            resources[h] = sum(dict(n.hugepages).get(h, 0) for n in numa)
    else:
        # each node's hugepage pools, zero-sized ones too: the memory manager's machine state has an
        # entry for every size cadvisor lists (memory_manager_state's hugepages-2Mi/1Gi of total 0)
        numa = tuple(NumaNode(id=n.id, cpus=n.cpus, memory=n.memory,
                              hugepages=tuple((hugepage_resource(size), size * pages) for size, pages in n.hugepages))
                     for n in facts.numa_nodes)
        cpus = facts.cpus
        profile_cpu = profile.capacity.get(CPU)
        if profile_cpu is not None and profile_cpu != len(facts.cpus) * 1000:
            numa = ()
            cpus = tuple(range(math.ceil(profile_cpu / 1000)))

    resources.update(profile.capacity)
    return Capacity(resources=resources, cpus=cpus, numa_nodes=numa)
