"""The simulated machine as a sysfs tree: what /sys/devices/system/{cpu,node} would hold on it.

Why: node agents that take a sysfs root (NFD's nfd-topology-updater through ghw and its
`bus/node/devices` reader, the resource-topology-exporter's --sysfs) learn the machine from
sysfs, so pointed at the host's /sys they see the host, not the node nodeagent simulates. This
renders the node's CPU topology (cpus, cores, sockets, NUMA nodes, L3 groups, NUMA distances)
and memory (per NUMA node, hugepages per size) as the kernel lays them out, in its formats:
cpu lists ("0-3,8"), cpu masks (32-bit hex words, comma separated, high word first), node
meminfo lines, hugepages-<size>kB folders. Not modelled, so not written: cache sizes and the
other cache levels, cpufreq, memory blocks; cpuN/online is written for every cpu (the kernel
omits cpu0's). Pure: returns files and symlinks as data; wiring/sysfs_view.py writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodeagent.cm.cpumanager.policy import format_cpuset
from nodeagent.cm.topology.model import CPUTopology

KIB = 1024
DEFAULT_HUGEPAGE_SIZES = (2 * KIB * KIB,)
"""Hugepage sizes every node lists even with no pages (the kernel lists each size it supports)."""


@dataclass(frozen=True)
class NodeMemory:
    """One NUMA node's memory: bytes, and hugepage size in bytes -> bytes pre-allocated."""

    total: int
    hugepages: Mapping[int, int]


@dataclass(frozen=True)
class Tree:
    """Paths relative to the sysfs root: file contents, and symlinks (path -> relative target)."""

    files: Mapping[str, str]
    links: Mapping[str, str]


def cpu_list(cpus: Iterable[int]) -> str:
    """The kernel's cpulist format: "0-2,5" (the same text as cpuset.CPUSet.String())."""
    return format_cpuset(cpus)


def cpu_mask(cpus: Iterable[int], nr_cpus: int) -> str:
    """The kernel's cpumask format for a machine of `nr_cpus` cpus: 32-bit words in hex, comma
    separated, the highest word first ("00000000,0000000f")."""
    value = 0
    for c in cpus:
        value |= 1 << c
    words = max(1, (nr_cpus + 31) // 32)
    return ",".join(f"{(value >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(words)))


def _hugepage_dir(size: int) -> str:
    return f"hugepages-{size // KIB}kB"


def render(topology: CPUTopology, memory: Mapping[int, NodeMemory]) -> Tree:
    """The tree of a machine: `memory` per NUMA node of the topology (a node missing there has 0)."""
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    cpus = topology.cpus
    nr = max(cpus) + 1 if cpus else 1
    cpu_dir = "devices/system/cpu"
    node_dir = "devices/system/node"
    for name in ("online", "possible", "present"):
        files[f"{cpu_dir}/{name}"] = cpu_list(cpus)
    for cpu in cpus:
        info = topology.details[cpu]
        base = f"{cpu_dir}/cpu{cpu}"
        threads = topology.cpus_in_core(info.core)
        package = topology.cpus_in_socket(info.socket)
        l3 = topology.cpus_in_uncore(info.uncore_cache)
        files[f"{base}/online"] = "1"
        for key, value in (
            ("physical_package_id", str(info.socket)),
            ("die_id", "0"),
            ("core_id", str(info.core)),
            ("thread_siblings_list", cpu_list(threads)),
            ("thread_siblings", cpu_mask(threads, nr)),
            ("core_cpus_list", cpu_list(threads)),
            ("core_cpus", cpu_mask(threads, nr)),
            ("core_siblings_list", cpu_list(package)),
            ("core_siblings", cpu_mask(package, nr)),
            ("package_cpus_list", cpu_list(package)),
            ("package_cpus", cpu_mask(package, nr)),
            ("die_cpus_list", cpu_list(package)),
            ("die_cpus", cpu_mask(package, nr)),
        ):
            files[f"{base}/topology/{key}"] = value
        for key, value in (("level", "3"), ("type", "Unified"), ("id", str(info.uncore_cache)),
                           ("shared_cpu_list", cpu_list(l3)), ("shared_cpu_map", cpu_mask(l3, nr))):
            files[f"{base}/cache/index3/{key}"] = value
        links[f"{base}/node{info.numa_node}"] = f"../../node/node{info.numa_node}"
    nodes = topology.numa_nodes
    for name in ("online", "possible", "has_cpu", "has_memory", "has_normal_memory"):
        files[f"{node_dir}/{name}"] = cpu_list(nodes)
    distances = topology.distances()
    sizes = sorted({*DEFAULT_HUGEPAGE_SIZES, *(s for m in memory.values() for s in m.hugepages)})
    for node in nodes:
        base = f"{node_dir}/node{node}"
        own = topology.cpus_in_numa(node)
        mem = memory.get(node, NodeMemory(0, {}))
        files[f"{base}/cpulist"] = cpu_list(own)
        files[f"{base}/cpumap"] = cpu_mask(own, nr)
        files[f"{base}/distance"] = " ".join(str(distances[node][other]) for other in nodes)
        files[f"{base}/meminfo"] = _meminfo(node, mem)
        for size in sizes:
            pages = mem.hugepages.get(size, 0) // size
            for key, count in (("nr_hugepages", pages), ("free_hugepages", pages), ("surplus_hugepages", 0)):
                files[f"{base}/hugepages/{_hugepage_dir(size)}/{key}"] = str(count)
        for cpu in sorted(own):
            links[f"{base}/cpu{cpu}"] = f"../../cpu/cpu{cpu}"
        links[f"bus/node/devices/node{node}"] = f"../../../{base}"
    return Tree(files, links)


def _meminfo(node: int, mem: NodeMemory) -> str:
    """node<N>/meminfo's first lines, as the kernel prints them (kB, right-aligned to 8)."""
    total = mem.total // KIB
    hugepages = sum(mem.hugepages.values()) // KIB
    free = max(total - hugepages, 0)
    lines = [("MemTotal", total), ("MemFree", free), ("MemUsed", total - free)]
    return "\n".join(f"Node {node} {key + ':':<15} {value:>8} kB" for key, value in lines)
