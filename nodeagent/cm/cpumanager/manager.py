"""CPUManager: the static policy as a topology hint provider, its assignments kept durable.

Implements pods/hints.HintProvider (hints per container or per pod, allocate within the
topology manager's merged affinity, remove) and pod-resources' CPUsProvider
(container_cpus/allocatable_cpus). Assignments live in the StateDB bucket "cpu_manager"
(key "pod:<uid>", plus "policy"), written before allocate returns (or, under the topology
manager, in its one commit per admission: state/batch.py), and are loaded back at
construction: a restart keeps every container's cpus. Switching policy drops the old
assignments, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from nodeagent.cm.cpumanager import policy as cpupolicy
from nodeagent.cm.cpumanager.cpu_assignment import CPUAllocationError
from nodeagent.cm.cpumanager.policy import StaticOptions, StaticPolicy
from nodeagent.cm.policystate import PolicyBucket, pod_key
from nodeagent.cm.topology.model import CPUTopology
from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.podresources.providers import MemoryBlock
from nodeagent.pods.hints import AdmissionFailure, HintMemo, Hints, TopologyHint
from nodeagent.pods.resources import CPU
from nodeagent.state import batch
from nodeagent.state.db import StateDB, Txn

logger = logging.getLogger(__name__)

BUCKET = "cpu_manager"
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


def unexpected(err: object) -> AdmissionFailure:
    """admission.GetPodAdmitResult for an error that is not an admission error."""
    return AdmissionFailure(UNEXPECTED_ADMISSION_ERROR, f"Allocate failed due to {err}, which is unexpected")


class CPUManager:
    def __init__(
        self,
        policy: str,
        topology: CPUTopology,
        db: StateDB,
        *,
        reserved_system_cpus: Sequence[int] = (),
        reserved_milli: int = 0,
        options: StaticOptions | None = None,
    ) -> None:
        if policy not in (cpupolicy.NONE, cpupolicy.STATIC):
            raise ConfigError(f'KubeletConfiguration.cpuManagerPolicy: unsupported value "{policy}"')
        self.policy = policy
        self.topology = topology
        self._db = db
        self._bucket = PolicyBucket(db, BUCKET, policy, what="cpu manager", items="assignments")
        self._static: StaticPolicy | None = None
        if policy == cpupolicy.STATIC:
            unknown = sorted(set(reserved_system_cpus) - set(topology.cpus))
            if unknown:
                raise ConfigError(
                    f"KubeletConfiguration.reservedSystemCPUs: cpus {unknown} are not on this node "
                    f"(cpus {cpupolicy.format_cpuset(topology.cpus)})"
                )
            num_reserved = len(set(reserved_system_cpus)) or cpupolicy.num_reserved_cpus(reserved_milli)
            if num_reserved == 0:
                raise ConfigError(
                    "KubeletConfiguration.cpuManagerPolicy: [cpumanager] the static policy requires "
                    "systemreserved.cpu + kubereserved.cpu to be greater than zero"
                )
            self._static = StaticPolicy(topology, num_reserved, reserved_system_cpus, options)
            self.reserved: tuple[int, ...] = tuple(sorted(self._static.reserved))
        else:
            self.reserved = ()
        self._assignments: dict[str, dict[str, frozenset[int]]] = {}
        self._reuse: dict[str, frozenset[int]] = {}  # the kubelet's cpusToReuse (one pod at a time)
        self._generation = 0
        self._available_cache: tuple[int, frozenset[int], dict[int, int]] | None = None
        self._hinted: HintMemo[tuple[TopologyHint, ...]] = HintMemo()
        self._restore()

    @property
    def options(self) -> StaticOptions:
        return self._static.options if self._static else StaticOptions()

    def _restore(self) -> None:
        pods = self._bucket.stored_pods(self._static is not None)
        if self._static is None:
            return
        valid = self._static.allocatable()
        taken: set[int] = set()
        dropped: list[str] = []
        for uid, doc in sorted(pods.items()):
            containers = {str(n): frozenset(int(c) for c in cpus) for n, cpus in doc["containers"].items()}
            cpus: set[int] = set().union(*containers.values()) if containers else set()
            if not cpus <= valid or cpus & taken:
                dropped.append(uid)
                continue
            taken |= cpus
            self._assignments[uid] = containers
        self._bucket.drop(dropped)
        logger.info("cpu manager restored policy=%s pods=%d reserved=%s",
                    self.policy, len(self._assignments), cpupolicy.format_cpuset(self.reserved))

    # ---------------------------------------------------------------- HintProvider

    def _available(self) -> frozenset[int]:
        """The static policy's available cpus, kept until an assignment changes."""
        assert self._static is not None
        if self._available_cache is None or self._available_cache[0] != self._generation:
            available = self._static.available(self._assignments)
            self._available_cache = (self._generation, available, self._static.free_per_numa(available))
        return self._available_cache[1]

    def _hints(self, reusable: frozenset[int], requested: int) -> list[TopologyHint]:
        """generateCPUTopologyHints, memoised: the free counts per NUMA node matter only up to
        the request (a sum reaches it with a count capped at it exactly when without)."""
        static = self._static
        assert static is not None
        available = self._available()
        assert self._available_cache is not None
        free_on = self._available_cache[2]
        key = (requested, reusable, tuple(sorted((n, min(k, requested)) for n, k in free_on.items())))
        return list(self._hinted.get(key, lambda: tuple(
            static.generate_hints(available, reusable, requested, free_on))))

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        if self._static is None:
            return {}
        requested = cpupolicy.guaranteed_cpus(pod, container)
        if requested == 0:
            return {}
        allocated = self._assignments.get(pod.uid, {}).get(container.name)
        if allocated is not None:
            if len(allocated) != requested:
                return {CPU: []}
            return {CPU: self._static.generate_hints(allocated, frozenset(), requested)}
        return {CPU: self._hints(self._reuse.get(pod.uid, frozenset()), requested)}

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        if self._static is None:
            return {}
        requested = cpupolicy.pod_guaranteed_cpus(pod)
        if requested == 0:
            return {}
        assigned: frozenset[int] = frozenset()
        held = self._assignments.get(pod.uid, {})
        for c in pod.all_containers():
            allocated = held.get(c.name)
            if allocated is None:
                continue
            if len(allocated) != cpupolicy.guaranteed_cpus(pod, c):
                return {CPU: []}
            assigned |= allocated
        if len(assigned) == requested:
            return {CPU: self._static.generate_hints(assigned, frozenset(), requested)}
        return {CPU: self._hints(self._reuse.get(pod.uid, frozenset()) | assigned, requested)}

    def _update_reuse(self, pod: Pod, container: Container, cpus: frozenset[int]) -> None:
        reuse = self._reuse.get(pod.uid, frozenset())
        self._reuse = {}
        is_init = any(c.name == container.name for c in pod.init_containers)
        if is_init and not container.is_sidecar:
            self._reuse[pod.uid] = reuse | cpus
        else:
            self._reuse[pod.uid] = reuse - cpus

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        static = self._static
        if static is None:
            return
        n = cpupolicy.guaranteed_cpus(pod, container)
        if n == 0:
            return
        smt = static.smt_error(n, self._assignments)
        if smt is not None:
            raise AdmissionFailure(cpupolicy.SMT_ALIGNMENT_ERROR, smt)
        held = self._assignments.get(pod.uid, {})
        if container.name in held:
            self._update_reuse(pod, container, held[container.name])
            return
        reusable = self._reuse.get(pod.uid, frozenset())
        try:
            cpus = static.allocate_cpus(self._available(), n, affinity.numa_affinity, reusable)
        except CPUAllocationError as err:
            logger.info("cpu manager refused pod=%s container=%s err=%s", pod.key, container.name, err)
            raise unexpected(err) from None
        containers = {**held, container.name: cpus}
        doc = {"containers": {name: sorted(c) for name, c in containers.items()}}

        def put(txn: Txn) -> None:
            txn.put(BUCKET, pod_key(pod.uid), doc)

        # committed now, or with the rest of the admission (state/batch.py) before its answer
        batch.write(self._db, (BUCKET, pod_key(pod.uid)), put)
        self._assignments[pod.uid] = containers
        self._update_reuse(pod, container, cpus)
        self._generation += 1
        logger.info("cpu manager assigned pod=%s container=%s cpus=%s", pod.key, container.name,
                    cpupolicy.format_cpuset(cpus))

    async def remove(self, pod: Pod) -> None:
        self.release(pod.uid)

    def release(self, pod_uid: str) -> None:
        self._reuse.pop(pod_uid, None)
        if pod_uid not in self._assignments:
            return
        with self._db.transaction() as txn:
            txn.delete(BUCKET, pod_key(pod_uid))
        del self._assignments[pod_uid]
        self._generation += 1
        logger.info("cpu manager released uid=%s", pod_uid)

    # ---------------------------------------------------------------- CPUsProvider

    def generation(self) -> int:
        """Changes whenever an assignment changes (podresources Versioned)."""
        return self._generation

    def holds_any(self, pod_uid: str) -> bool:
        """podresources PodHoldings: False when the pod has no exclusive cpus."""
        return bool(self._assignments.get(pod_uid))

    def container_cpus(self, pod_uid: str, container: str) -> Sequence[int]:
        """Exclusive cpus of the container (empty on the shared pool or with policy none)."""
        return tuple(sorted(self._assignments.get(pod_uid, {}).get(container, ())))

    def allocatable_cpus(self) -> Sequence[int]:
        """All cpus minus the reserved ones under static; empty under none, as the kubelet."""
        if self._static is None:
            return ()
        return tuple(sorted(self._static.allocatable()))

    # ---------------------------------------------------------------- introspection

    def assignments(self) -> dict[str, dict[str, tuple[int, ...]]]:
        return {uid: {n: tuple(sorted(c)) for n, c in a.items()} for uid, a in self._assignments.items()}

    def shared_pool(self) -> tuple[int, ...]:
        """Cpus that containers without exclusive cpus run on (reserved included unless strict-cpu-reservation)."""
        used = cpupolicy.in_use(self._assignments)
        strict = self._static is not None and self._static.options.strict_cpu_reservation
        return tuple(c for c in self.topology.cpus if c not in used and not (strict and c in self.reserved))


class NoMemoryManager:
    """MemoryProvider for memory manager policy None: no blocks, nothing allocatable."""

    def generation(self) -> int:
        return 0

    def container_memory(self, pod_uid: str, container: str) -> Sequence[MemoryBlock]:
        return ()

    def allocatable_memory(self) -> Sequence[MemoryBlock]:
        return ()
