"""CPU manager policies `none` and `static` as the kubelet's policy_static.go decides. Pure.

- Only Guaranteed pods' containers with an integer cpu request get exclusive cpus.
- Reserved cpus: reservedSystemCPUs, or ceil(kube+system reserved cpu) cpus taken by the
  accumulator from all cpus (low-numbered whole cores first: {0,4} on 4 cores x 2 threads).
- A container's cpus come from the topology manager's NUMA affinity first (whole
  sockets of it under align-by-socket), the rest from anywhere, each time through the
  accumulator (cpu_assignment.py), or the distributed variant under distribute-cpus-across-numa.
- full-pcpus-only refuses requests that are not whole cores (SMTAlignmentError);
  distribute-cpus-across-cores spreads threads over cores, prefer-align-cpus-by-uncorecache
  packs into L3 groups (both in the accumulator; mutually exclusive as upstream).
- Hints: every NUMA mask whose free (plus reusable) cpus can hold the request; preferred
  when as narrow as the machine allows (or socket aligned under align-by-socket).
- Init containers' cpus are reused by later containers of the pod, except a restartable
  (sidecar) init container's, which runs alongside them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodeagent.cm.cpumanager.cpu_assignment import CPUAllocationError, take_distributed, take_packed
from nodeagent.cm.topology.model import CPUTopology
from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.hints import TopologyHint, iterate_masks, mask_bits, mask_count, mask_of
from nodeagent.pods.resources import CPU, has_pod_level_resources, is_guaranteed

NONE = "none"
STATIC = "static"

FULL_PCPUS_ONLY = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA = "distribute-cpus-across-numa"
ALIGN_BY_SOCKET = "align-by-socket"
STRICT_CPU_RESERVATION = "strict-cpu-reservation"
DISTRIBUTE_CPUS_ACROSS_CORES = "distribute-cpus-across-cores"
PREFER_ALIGN_BY_UNCORE_CACHE = "prefer-align-cpus-by-uncorecache"

# The option levels as upstream (1.37) grades them; the gates that unlock them.
_ALPHA = frozenset({ALIGN_BY_SOCKET, DISTRIBUTE_CPUS_ACROSS_CORES})
_BETA = frozenset({DISTRIBUTE_CPUS_ACROSS_NUMA, PREFER_ALIGN_BY_UNCORE_CACHE})
_STABLE = frozenset({FULL_PCPUS_ONLY, STRICT_CPU_RESERVATION})
# Pairs NewStaticPolicyOptions refuses together, in upstream's order of checking.
_EXCLUSIVE = (
    (FULL_PCPUS_ONLY, DISTRIBUTE_CPUS_ACROSS_CORES),
    (DISTRIBUTE_CPUS_ACROSS_NUMA, DISTRIBUTE_CPUS_ACROSS_CORES),
    (PREFER_ALIGN_BY_UNCORE_CACHE, DISTRIBUTE_CPUS_ACROSS_CORES),
    (PREFER_ALIGN_BY_UNCORE_CACHE, DISTRIBUTE_CPUS_ACROSS_NUMA),
)

SMT_ALIGNMENT_ERROR = "SMTAlignmentError"

# pod uid -> container name -> cpu ids
Assignments = Mapping[str, Mapping[str, frozenset[int]]]


@dataclass(frozen=True)
class StaticOptions:
    full_pcpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    strict_cpu_reservation: bool = False
    distribute_cpus_across_cores: bool = False
    prefer_align_by_uncore_cache: bool = False


def _parse_bool(name: str, value: str) -> bool:
    """Go's strconv.ParseBool."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ConfigError(f'bad value for option "{name}": strconv.ParseBool: parsing "{value}": invalid syntax')


def parse_static_options(raw: Mapping[str, str], *, alpha: bool, beta: bool) -> StaticOptions:
    """NewStaticPolicyOptions with CheckPolicyOptionAvailable's errors (gates: CPUManagerPolicy{Alpha,Beta}Options)."""
    values: dict[str, bool] = {}
    for name in sorted(raw):
        if name not in _ALPHA | _BETA | _STABLE:
            raise ConfigError(f'unknown CPU Manager Policy option: "{name}"')
        if name in _ALPHA and not alpha:
            raise ConfigError(f'CPU Manager Policy Alpha-level Options not enabled, but option "{name}" provided')
        if name in _BETA and not beta:
            raise ConfigError(f'CPU Manager Policy Beta-level Options not enabled, but option "{name}" provided')
        values[name] = _parse_bool(name, str(raw[name]))
    for a, b in _EXCLUSIVE:
        if values.get(a) and values.get(b):
            raise ConfigError(f"static policy options {a} and {b} can not be used at the same time")
    return StaticOptions(
        full_pcpus_only=values.get(FULL_PCPUS_ONLY, False),
        distribute_cpus_across_numa=values.get(DISTRIBUTE_CPUS_ACROSS_NUMA, False),
        align_by_socket=values.get(ALIGN_BY_SOCKET, False),
        strict_cpu_reservation=values.get(STRICT_CPU_RESERVATION, False),
        distribute_cpus_across_cores=values.get(DISTRIBUTE_CPUS_ACROSS_CORES, False),
        prefer_align_by_uncore_cache=values.get(PREFER_ALIGN_BY_UNCORE_CACHE, False),
    )


def validate_static_options(opts: StaticOptions, topo: CPUTopology, topology_policy: str) -> None:
    """ValidateStaticPolicyOptions."""
    if opts.align_by_socket:
        if topology_policy == "single-numa-node":
            raise ConfigError(f"Topolgy manager {topology_policy} policy is incompatible with CPUManager "
                              f"{ALIGN_BY_SOCKET} policy option")
        if topo.num_sockets > topo.num_numa_nodes:
            raise ConfigError("Align by socket is not compatible with hardware where number of sockets are more "
                              "than number of NUMA")


def smt_alignment_message(requested: int, per_core: int, available_physical: int | None = None) -> str:
    if available_physical is not None:
        return (f"SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
                f"{available_physical}, requested CPUs = {requested}, CPUs per core = {per_core}")
    return f"SMT Alignment Error: requested {requested} cpus not multiple cpus per core = {per_core}"


def guaranteed_cpus(pod: Pod, container: Container) -> int:
    """Exclusive cpus a container gets under the static policy (0: shared pool).

    A pod with pod-level resources (spec.resources) stays on the shared pool: "CPU Manager
    allocation skipped, pod is using pod-level resources which are not supported by the static
    CPU manager policy" (PodLevelResources on, PodLevelResourceManagers off, upstream's defaults).
    """
    if not is_guaranteed(pod) or has_pod_level_resources(pod):
        return 0
    request = container.requests.get(CPU, container.limits.get(CPU, 0))
    if request <= 0 or request % 1000:
        return 0
    return request // 1000


def _has_cpu_request(container: Container) -> bool:
    return CPU in container.requests or CPU in container.limits


def pod_guaranteed_cpus(pod: Pod) -> int:
    """podGuaranteedCPUs: max(init containers incl. sidecars started before them, app + sidecars)."""
    by_init = 0
    by_sidecars = 0
    for c in pod.init_containers:
        if not _has_cpu_request(c):
            continue
        n = guaranteed_cpus(pod, c)
        if c.is_sidecar:
            by_sidecars += n
        elif by_sidecars + n > by_init:
            by_init = by_sidecars + n
    by_app = sum(guaranteed_cpus(pod, c) for c in pod.containers if _has_cpu_request(c))
    return max(by_init, by_app + by_sidecars)


class StaticPolicy:
    """The static policy's decisions over a topology; the state (assignments) is passed in."""

    def __init__(
        self,
        topology: CPUTopology,
        num_reserved: int,
        reserved_cpus: Iterable[int] = (),
        options: StaticOptions | None = None,
    ) -> None:
        self.topology = topology
        self.options = options or StaticOptions()
        self.group_size = topology.cpus_per_core()
        explicit = frozenset(reserved_cpus)
        if explicit:
            reserved = explicit
        else:
            try:
                reserved = self.take_by_topology(frozenset(topology.cpus), num_reserved)
            except CPUAllocationError:
                reserved = frozenset()
        if len(reserved) != num_reserved:
            raise ConfigError(
                f"[cpumanager] unable to reserve the required amount of CPUs (size of "
                f"{format_cpuset(reserved)} did not equal {num_reserved})"
            )
        self.reserved = reserved
        self.reserved_physical = topology.core_siblings(reserved)

    # ---------------------------------------------------------------- pools

    def allocatable(self) -> frozenset[int]:
        return frozenset(self.topology.cpus) - self.reserved

    def available(self, assignments: Assignments) -> frozenset[int]:
        """GetAvailableCPUs: the shared pool minus the reserved cpus."""
        return self.allocatable() - in_use(assignments)

    def available_physical(self, assignments: Assignments) -> frozenset[int]:
        return frozenset(self.topology.cpus) - self.reserved_physical - in_use(assignments)

    # ---------------------------------------------------------------- allocation

    def take_by_topology(self, available: frozenset[int], n: int) -> frozenset[int]:
        spread = self.options.distribute_cpus_across_cores
        if self.options.distribute_cpus_across_numa:
            group = self.group_size if self.options.full_pcpus_only else 1
            return take_distributed(self.topology, available, n, group, spread=spread)
        return take_packed(self.topology, available, n, spread=spread,
                           prefer_uncore=self.options.prefer_align_by_uncore_cache)

    def smt_error(self, n: int, assignments: Assignments) -> str | None:
        """enforceSMTAlignment: the SMTAlignmentError message, or None when aligned."""
        if not self.options.full_pcpus_only:
            return None
        if n % self.group_size:
            return smt_alignment_message(n, self.group_size)
        physical = len(self.available_physical(assignments))
        if n > physical:
            return smt_alignment_message(n, self.group_size, physical)
        return None

    def aligned_cpus(self, affinity: int, allocatable: frozenset[int]) -> frozenset[int]:
        nodes = mask_bits(affinity)
        if self.options.align_by_socket:
            sockets = self.topology.sockets_in_numa(*nodes)
            return frozenset().union(*(allocatable & self.topology.cpus_in_socket(s) for s in sockets))
        return allocatable & self.topology.cpus_in_numa(*nodes)

    def allocate_cpus(
        self, available: frozenset[int], n: int, affinity: int | None, reusable: frozenset[int]
    ) -> frozenset[int]:
        """allocateCPUs: aligned cpus first, the rest from anywhere; raises CPUAllocationError."""
        allocatable = available | reusable
        result: frozenset[int] = frozenset()
        if affinity is not None:
            aligned = self.aligned_cpus(affinity, allocatable)
            result = self.take_by_topology(aligned, min(n, len(aligned)))
        if len(result) == n:
            return result
        return result | self.take_by_topology(allocatable - result, n - len(result))

    # ---------------------------------------------------------------- hints

    def free_per_numa(self, available: Iterable[int]) -> dict[int, int]:
        """How many of `available` sit on each NUMA node."""
        avail = available if isinstance(available, (set, frozenset)) else frozenset(available)
        topo = self.topology
        return {n: k for n in topo.numa_nodes if (k := len(avail & topo.cpus_in_numa(n)))}

    def generate_hints(self, available: frozenset[int], reusable: frozenset[int], request: int,
                       free_on: Mapping[int, int] | None = None) -> list[TopologyHint]:
        """generateCPUTopologyHints (`free_on`: free_per_numa(available), when the caller keeps it)."""
        topo = self.topology
        min_size = topo.num_numa_nodes
        hints: list[int] = []
        if free_on is None:
            free_on = self.free_per_numa(available)
        reusable_mask = mask_of(topo.numa_of(c) for c in reusable)
        for mask in iterate_masks(topo.numa_nodes):
            nodes = mask_bits(mask)
            if len(topo.cpus_in_numa(*nodes)) >= request and len(nodes) < min_size:
                min_size = len(nodes)
            if reusable_mask & ~mask:
                continue
            matching = len(reusable) + sum(free_on.get(n, 0) for n in nodes)
            if matching >= request:
                hints.append(mask)
        out = []
        for mask in hints:
            preferred = (self.options.align_by_socket and self._socket_aligned(mask, min_size)) or (
                mask_count(mask) == min_size
            )
            out.append(TopologyHint(mask, preferred))
        return out

    def _socket_aligned(self, mask: int, min_size: int) -> bool:
        per_socket = self.topology.num_numa_nodes // max(1, self.topology.num_sockets)
        if per_socket == 0:
            return False
        min_sockets = (min_size + per_socket - 1) // per_socket
        return len(self.topology.sockets_in_numa(*mask_bits(mask))) == min_sockets


def in_use(assignments: Assignments) -> frozenset[int]:
    return frozenset(c for containers in assignments.values() for cpus in containers.values() for c in cpus)


def num_reserved_cpus(reserved_milli: int) -> int:
    return math.ceil(reserved_milli / 1000)


def format_cpuset(cpus: Iterable[int]) -> str:
    """cpuset.CPUSet.String(): "0-2,5"."""
    ids = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)
