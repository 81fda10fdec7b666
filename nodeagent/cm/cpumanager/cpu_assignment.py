"""Which cpus to take: the kubelet's cpuAccumulator (cpu_assignment.go), ported. Pure.

takeByTopologyNUMAPacked fills the fewest, fullest places first: whole NUMA nodes and
sockets (the bigger of the two levels first), then whole cores, then single threads,
always walking NUMA nodes / sockets / cores in ascending order of free cpus (ties by id),
so a partly used core or socket is filled before a fresh one is broken.
takeByTopologyNUMADistributed (distribute-cpus-across-numa) spreads a request that needs
several NUMA nodes evenly over the best-balanced set of them, in groups of `group_size`
cpus (a whole core under full-pcpus-only).

Two options change the packed walk (both as upstream's cpuAccumulator):
- prefer-align-cpus-by-uncorecache: after whole NUMA nodes / sockets, take whole L3
  (uncore cache) groups, then the first group whose free cores can hold the rest
  (takeUncoreCache / takePartialUncore); best effort, the walk goes on when none fits.
- distribute-cpus-across-cores (CPUSortingStrategySpread): never take whole cores; single
  cpus come socket by socket in id order, so siblings are the last resort.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable

from nodeagent.cm.topology.model import CPUTopology


class CPUAllocationError(Exception):
    """The accumulator could not take the cpus (the kubelet's error text)."""


class _Accumulator:
    def __init__(self, topo: CPUTopology, available: Iterable[int], n: int, spread: bool = False) -> None:
        self.topo = topo
        self.spread = spread
        self.free: set[int] = topo.details.keys() & set(available)
        self.needed = n
        self.result: set[int] = set()
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes
        self._groups: dict[str, dict[int, list[int]]] = {}  # _free_in, until the next take

    # ------------------------------------------------------------ free cpus per place

    def _free_in(self, key: str) -> dict[int, list[int]]:
        """Free cpus per core / socket / NUMA node / L3 group (ids with none are absent)."""
        cached = self._groups.get(key)
        if cached is not None:
            return cached
        out: dict[int, list[int]] = {}
        of = self.topo.index(key)
        for cpu in self.free:
            out.setdefault(of[cpu], []).append(cpu)
        self._groups[key] = out
        return out

    def _inside(self, parent: str, pid: int, child: str) -> set[int]:
        """The `child` ids of the free cpus inside `parent` `pid` (CPUDetails.XInY on free cpus)."""
        of = self.topo.index(child)
        return {of[c] for c in self._free_in(parent)[pid]}

    @staticmethod
    def _unique(ids: list[int]) -> list[int]:
        return list(dict.fromkeys(ids))

    @staticmethod
    def _sorted(ids: Iterable[int], size: Callable[[int], int]) -> list[int]:
        return sorted(ids, key=lambda i: (size(i), i))

    def sort_numa_nodes(self) -> list[int]:
        numa = self._free_in("numa_node")
        if self.numa_first:
            return self._sorted(numa, lambda n: len(numa[n]))
        sockets = self._free_in("socket")
        out: list[int] = []
        for s in self._sorted(sockets, lambda s: len(sockets[s])):
            out.extend(self._sorted(self._inside("socket", s, "numa_node"), lambda n: len(numa[n])))
        return self._unique(out)

    def sort_sockets(self) -> list[int]:
        sockets = self._free_in("socket")
        if not self.numa_first:
            return self._sorted(sockets, lambda s: len(sockets[s]))
        numa = self._free_in("numa_node")
        out: list[int] = []
        for n in self._sorted(numa, lambda n: len(numa[n])):
            out.extend(self._sorted(self._inside("numa_node", n, "socket"), lambda s: len(sockets[s])))
        return self._unique(out)

    def sort_cores(self) -> list[int]:
        cores = self._free_in("core")
        upper_key = "socket" if self.numa_first else "numa_node"
        order = self.sort_sockets() if self.numa_first else self.sort_numa_nodes()
        out: list[int] = []
        for u in order:
            out.extend(self._sorted(self._inside(upper_key, u, "core"), lambda k: len(cores[k])))
        return self._unique(out)

    def sort_cpus(self) -> list[int]:
        """sortAvailableCPUsPacked, or sortAvailableCPUsSpread under distribute-cpus-across-cores."""
        if self.spread:
            sockets = self._free_in("socket")
            return [cpu for s in self.sort_sockets() for cpu in sorted(sockets[s])]
        cores = self._free_in("core")
        return [cpu for core in self.sort_cores() for cpu in sorted(cores[core])]

    def sort_uncore_caches(self) -> list[int]:
        """sortAvailableUncoreCaches: per sorted NUMA node, its L3 groups by free cpus, then id."""
        uncores = self._free_in("uncore_cache")
        out: list[int] = []
        for n in self.sort_numa_nodes():
            out.extend(self._sorted(self._inside("numa_node", n, "uncore_cache"), lambda u: len(uncores[u])))
        return out

    # ------------------------------------------------------------ taking

    def take(self, cpus: Iterable[int]) -> None:
        cpus = set(cpus)
        self.result |= cpus
        self.free -= cpus
        self.needed -= len(cpus)
        self._groups.clear()

    def satisfied(self) -> bool:
        return self.needed < 1

    def failed(self) -> bool:
        return self.needed > len(self.free)

    def take_full_numa_nodes(self) -> None:
        if self.needed < min(len(self.topo.cpus_in_numa(n)) for n in self.topo.numa_nodes):
            return  # no NUMA node fits: skip the ordering (same result, less work)
        for n in self.sort_numa_nodes():
            whole = self.topo.cpus_in_numa(n)
            if whole <= self.free and self.needed >= len(whole):
                self.take(whole)

    def take_full_sockets(self) -> None:
        per_socket = self.topo.cpus_per_socket()
        if self.needed < per_socket:
            return
        for s in self.sort_sockets():
            whole = self.topo.cpus_in_socket(s)
            if len(whole & self.free) == per_socket and self.needed >= len(whole):
                self.take(whole)

    def take_full_cores(self) -> None:
        per_core = self.topo.cpus_per_core()
        if self.needed < per_core:
            return
        cores = self._free_in("core")  # taking a core changes no other core's free cpus
        for core in self.sort_cores():
            if self.needed < per_core:
                return  # no core fits any more: the rest of the walk would take nothing
            whole = self.topo.cpus_in_core(core)
            if len(cores[core]) == per_core and self.needed >= len(whole):
                self.take(whole)

    def take_full_uncore(self) -> None:
        """takeFullUncore: every wholly free L3 group the request still covers."""
        free = [u for u in self._unique(self.sort_uncore_caches())
                if self.topo.cpus_in_uncore(u) <= self.free]
        for u in free:
            whole = self.topo.cpus_in_uncore(u)
            if self.needed >= len(whole):
                self.take(whole)

    def take_partial_uncore(self, uncore: int) -> None:
        """takePartialUncore: the lowest free cores of one L3 group, only if they are exactly enough."""
        per_core = self.topo.cpus_per_core()
        cores_needed = (self.needed + per_core - 1) // per_core
        details = self.topo.details
        cores = sorted({details[c].core for c in self.free if details[c].uncore_cache == uncore})[:cores_needed]
        cpus = sorted(c for c in self.free if details[c].core in cores)
        if self.needed % 2 and per_core > 1 and len(cpus) > self.needed:
            cpus = cpus[:-1]  # an odd request leaves the last core's second thread
        if len(cpus) == self.needed:
            self.take(cpus)

    def take_uncore_cache(self) -> None:
        """takeUncoreCache: whole L3 groups while the request covers one, else the first that fits."""
        per_uncore = self.topo.cpus_per_uncore()
        for uncore in self.sort_uncore_caches():
            if self.needed >= per_uncore:
                self.take_full_uncore()
            if self.satisfied():
                return
            self.take_partial_uncore(uncore)
            if self.satisfied():
                return

    def take_remaining_cpus(self) -> None:
        for cpu in self.sort_cpus():
            self.take((cpu,))
            if self.satisfied():
                return


def _not_enough(n: int, available: int) -> CPUAllocationError:
    return CPUAllocationError(
        f"not enough cpus available to satisfy request: requested={n}, available={available}"
    )


def take_packed(topo: CPUTopology, available: Iterable[int], n: int, *, spread: bool = False,
                prefer_uncore: bool = False) -> frozenset[int]:
    """takeByTopologyNUMAPacked (`spread`: CPUSortingStrategySpread; `prefer_uncore`: L3 groups)."""
    available = frozenset(available)
    acc = _Accumulator(topo, available, n, spread)
    if acc.satisfied():
        return frozenset(acc.result)
    if acc.failed():
        raise _not_enough(n, len(available))
    steps: list[Callable[[], None]] = (
        [acc.take_full_numa_nodes, acc.take_full_sockets] if acc.numa_first
        else [acc.take_full_sockets, acc.take_full_numa_nodes]
    )
    if prefer_uncore:
        steps.append(acc.take_uncore_cache)
    if not spread:
        steps.append(acc.take_full_cores)
    for step in (*steps, acc.take_remaining_cpus):
        step()
        if acc.satisfied():
            return frozenset(acc.result)
    raise CPUAllocationError("failed to allocate cpus")


def _stddev(values: Iterable[int]) -> float:
    xs = list(values)
    mean = round(sum(xs) / len(xs) * 1000) / 1000
    return round(math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)) * 1000) / 1000


def take_distributed(topo: CPUTopology, available: Iterable[int], n: int, group_size: int, *,
                     spread: bool = False) -> frozenset[int]:
    """takeByTopologyNUMADistributed (KEP-2902)."""
    available = frozenset(available)
    if n % group_size:
        return take_packed(topo, available, n, spread=spread)
    acc = _Accumulator(topo, available, n, spread)
    if acc.satisfied():
        return frozenset()
    if acc.failed():
        raise _not_enough(n, len(available))
    numas = acc.sort_numa_nodes()
    free_in = {k: len(v) for k, v in acc._free_in("numa_node").items()}
    # rangeNUMANodesNeededToSatisfy
    groups = (topo.num_cpus - 1) // group_size + 1
    groups_per_numa = (groups - 1) // topo.num_numa_nodes + 1
    groups_needed = (n - 1) // group_size + 1
    min_numas = (groups_needed - 1) // groups_per_numa + 1
    max_numas = min(groups_needed, len(numas))
    for k in range(min_numas, max_numas + 1):
        best_balance = math.inf
        best_combo: tuple[int, ...] | None = None
        best_remainder: tuple[int, ...] = ()
        for combo in itertools.combinations(numas, k):
            if best_balance == 0:
                break
            if sum(free_in[x] for x in combo) < n:
                continue
            if sum(free_in[x] // group_size for x in combo) * group_size < n:
                continue
            distribution = (n // len(combo) // group_size) * group_size
            if any(free_in[x] < distribution for x in combo):
                continue
            after = {x: free_in[x] for x in numas}
            for x in combo:
                after[x] -= distribution
            remainder = n - distribution * len(combo)
            candidates = [x for x in combo if after[x] >= group_size]
            local_best = math.inf
            local_remainder: tuple[int, ...] = ()
            if remainder == 0:
                local_best = _stddev(after.values())
            for size in range(len(candidates), 0, -1):
                if remainder <= 0:
                    break
                for subset in itertools.combinations(candidates, size):
                    left = dict(after)
                    if sum(left[x] for x in subset) < remainder:
                        continue
                    r = remainder
                    while r > 0:
                        progressed = False
                        for x in subset:
                            if r == 0:
                                break
                            if left[x] < group_size:
                                continue
                            left[x] -= group_size
                            r -= group_size
                            progressed = True
                        if not progressed:
                            break
                    balance = _stddev(left.values())
                    if balance < local_best:
                        local_best = balance
                        local_remainder = subset
            if local_best < best_balance:
                best_balance, best_combo, best_remainder = local_best, combo, local_remainder
        if best_combo is None:
            continue
        distribution = (n // len(best_combo) // group_size) * group_size
        for x in best_combo:
            acc.take(take_packed(topo, topo.cpus_in_numa(x) & acc.free, distribution, spread=spread))
        remainder = n - distribution * len(best_combo)
        while remainder > 0:
            progressed = False
            for x in best_remainder:
                if remainder == 0:
                    break
                pool = topo.cpus_in_numa(x) & acc.free
                if len(pool) < group_size:
                    continue
                acc.take(take_packed(topo, pool, group_size, spread=spread))
                remainder -= group_size
                progressed = True
            if not progressed:
                break
        if acc.needed != 0:
            raise CPUAllocationError(f"accounting error, not enough CPUs allocated, remaining: {acc.needed}")
        return frozenset(acc.result)
    return take_packed(topo, available, n, spread=spread)
