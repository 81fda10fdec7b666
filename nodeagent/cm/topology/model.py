"""CPUTopology: which socket, core, NUMA node and L3 group every logical cpu belongs to. Pure.

The kubelet's cpumanager/topology.CPUTopology + CPUDetails: the CPU manager's accumulator
asks "which cpus are in this core / socket / NUMA node", the hint generators ask "which NUMA
node is this cpu on", the topology manager asks for NUMA distances. Everything is indexed
once at construction; the topology never changes while the daemon runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class CPUInfo:
    """One logical cpu. `core` is unique machine-wide (the lowest thread id of the core)."""

    cpu: int
    core: int
    socket: int
    numa_node: int
    uncore_cache: int = 0


def _group(cpus: Iterable[CPUInfo], key: str) -> dict[int, frozenset[int]]:
    out: dict[int, set[int]] = {}
    for info in cpus:
        out.setdefault(getattr(info, key), set()).add(info.cpu)
    return {k: frozenset(v) for k, v in out.items()}


class CPUTopology:
    def __init__(self, cpus: Iterable[CPUInfo], distances: Mapping[int, Mapping[int, int]] | None = None) -> None:
        infos = sorted(cpus, key=lambda c: c.cpu)
        self.details: dict[int, CPUInfo] = {c.cpu: c for c in infos}
        self.cpus: tuple[int, ...] = tuple(self.details)
        self._cores = _group(infos, "core")
        self._sockets = _group(infos, "socket")
        self._numa = _group(infos, "numa_node")
        self._uncore = _group(infos, "uncore_cache")
        self._index: dict[str, dict[int, int]] = {
            key: {c.cpu: getattr(c, key) for c in infos} for key in ("core", "socket", "numa_node", "uncore_cache")
        }
        self._per_core = len(infos) // len(self._cores) if self._cores else 0
        self.numa_nodes: tuple[int, ...] = tuple(sorted(self._numa))
        self.sockets: tuple[int, ...] = tuple(sorted(self._sockets))
        self.cores: tuple[int, ...] = tuple(sorted(self._cores))
        socket_of_numa: dict[int, set[int]] = {}
        for c in infos:
            socket_of_numa.setdefault(c.numa_node, set()).add(c.socket)
        self._numa_sockets = {n: frozenset(s) for n, s in socket_of_numa.items()}
        self._distances: dict[int, dict[int, int]] = {}
        for a in self.numa_nodes:
            row = (distances or {}).get(a, {})
            self._distances[a] = {
                b: row.get(b, self._default_distance(a, b)) for b in self.numa_nodes
            }

    def _default_distance(self, a: int, b: int) -> int:
        if a == b:
            return 10
        return 11 if self._numa_sockets.get(a, frozenset()) & self._numa_sockets.get(b, frozenset()) else 21

    # ---------------------------------------------------------------- sizes (as the kubelet's)

    @property
    def num_cpus(self) -> int:
        return len(self.cpus)

    @property
    def num_cores(self) -> int:
        return len(self._cores)

    @property
    def num_sockets(self) -> int:
        return len(self._sockets)

    @property
    def num_numa_nodes(self) -> int:
        return len(self._numa)

    def cpus_per_core(self) -> int:
        return self._per_core

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    @property
    def num_uncore_caches(self) -> int:
        return len(self._uncore)

    def cpus_per_uncore(self) -> int:
        """CPUsPerUncore: cpus over L3 groups (the size of a whole group on a regular machine)."""
        return self.num_cpus // self.num_uncore_caches if self.num_uncore_caches else 0

    # ---------------------------------------------------------------- lookups

    def index(self, key: str) -> Mapping[int, int]:
        """cpu -> its core / socket / numa_node / uncore_cache id (`key`), for hot loops."""
        return self._index[key]

    def cpus_in_core(self, core: int) -> frozenset[int]:
        return self._cores.get(core, frozenset())

    def cpus_in_socket(self, socket: int) -> frozenset[int]:
        return self._sockets.get(socket, frozenset())

    def cpus_in_numa(self, *nodes: int) -> frozenset[int]:
        if len(nodes) == 1:
            return self._numa.get(nodes[0], frozenset())
        return frozenset().union(*(self._numa.get(n, frozenset()) for n in nodes))

    def cpus_in_uncore(self, uncore: int) -> frozenset[int]:
        return self._uncore.get(uncore, frozenset())

    def sockets_in_numa(self, *nodes: int) -> frozenset[int]:
        return frozenset().union(*(self._numa_sockets.get(n, frozenset()) for n in nodes))

    def numa_of(self, cpu: int) -> int:
        return self.details[cpu].numa_node

    def distance(self, a: int, b: int) -> int:
        return self._distances[a][b]

    def distances(self) -> dict[int, dict[int, int]]:
        return {a: dict(row) for a, row in self._distances.items()}

    def core_siblings(self, cpus: Iterable[int]) -> frozenset[int]:
        """Every thread of every core that holds one of `cpus` (reservedPhysicalCPUs)."""
        return frozenset().union(*(self.cpus_in_core(self.details[c].core) for c in cpus if c in self.details))

    def __repr__(self) -> str:
        return (f"CPUTopology(cpus={self.num_cpus}, cores={self.num_cores}, sockets={self.num_sockets}, "
                f"numa={self.num_numa_nodes})")
