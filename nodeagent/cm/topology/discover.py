"""Where the machine topology comes from: the node profile, the host's sysfs, or a flat fallback. Pure.

Order, as the container manager applies it:
1. nodeProfile.cpuTopology (shorthand or explicit cores);
2. nodeProfile.numaNodes alone (the older profile): each cpu its own core, one socket per NUMA node;
3. the host's sysfs (through the host probe's facts) when the node's cpus are the host's:
   siblings from thread_siblings_list, socket from physical_package_id, the L3 group from
   cache/index3/shared_cpu_list, NUMA nodes and distances from /sys/devices/system/node;
4. otherwise flat: each cpu its own core on socket 0 / NUMA node 0 (or the known NUMA nodes).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from nodeagent.cm.topology.model import CPUInfo, CPUTopology
from nodeagent.config import NodeProfile, NumaNode
from nodeagent.config.model import CpuTopologySpec
from nodeagent.host.model import HostFacts


def from_spec(spec: CpuTopologySpec) -> CPUTopology:
    infos = [
        CPUInfo(cpu=t, core=min(core.threads), socket=core.socket, numa_node=core.numa_node,
                uncore_cache=core.uncore_cache)
        for core in spec.cores for t in core.threads
    ]
    nodes = sorted(spec.numa_distances)
    distances = {a: dict(zip(nodes, row, strict=True)) for a, row in spec.numa_distances.items()}
    return CPUTopology(infos, distances or None)


def flat(cpus: Sequence[int], numa_nodes: Sequence[NumaNode]) -> CPUTopology:
    node_of = {c: n.id for n in numa_nodes for c in n.cpus}
    infos = [CPUInfo(cpu=c, core=c, socket=node_of.get(c, 0), numa_node=node_of.get(c, 0),
                     uncore_cache=node_of.get(c, 0)) for c in cpus]
    return CPUTopology(infos)


# Memoized: a CPUTopology is never changed after it is built, and the full virtual nodes of one
# process share one machine (wiring/machine.py): one object for all, not 4.6 KiB per node.
@functools.lru_cache(maxsize=8)
def from_host(facts: HostFacts) -> CPUTopology | None:
    """The host's layout, or None when sysfs did not describe every online cpu."""
    info = {c.id: c for c in facts.cpu_info}
    if not facts.cpus or set(info) != set(facts.cpus):
        return None
    node_of = {c: n.id for n in facts.numa_nodes for c in n.cpus}
    infos = []
    for cpu in facts.cpus:
        c = info[cpu]
        siblings = [s for s in c.siblings if s in info] or [cpu]
        infos.append(CPUInfo(cpu=cpu, core=min(siblings), socket=c.package, numa_node=node_of.get(cpu, 0),
                             uncore_cache=min(c.l3) if c.l3 else c.package))
    ids = [n.id for n in facts.numa_nodes]
    distances = {
        n.id: dict(zip(ids, n.distances, strict=True))
        for n in facts.numa_nodes if len(n.distances) == len(ids)
    }
    return CPUTopology(infos, distances or None)


def machine_topology(
    profile: NodeProfile, facts: HostFacts, cpus: Sequence[int], numa_nodes: Sequence[NumaNode]
) -> CPUTopology:
    """The node's topology (see the module docstring for the order)."""
    if profile.cpu_topology is not None:
        return from_spec(profile.cpu_topology)
    if not profile.numa_nodes and tuple(cpus) == tuple(facts.cpus):
        host = from_host(facts)
        if host is not None:
            return host
    return flat(cpus, numa_nodes)
