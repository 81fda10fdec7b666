"""CPUManager: admits pods through the policy, keeps the assignments durable, serves them.

Implements the pod manager's ResourceAdmitter (admit/remove) and pod-resources'
CPUsProvider (container_cpus/allocatable_cpus). Assignments live in the StateDB
bucket "cpu_manager" (key "pod:<uid>", plus "policy"), written in one transaction
before admit returns, and are loaded back at construction: a restart keeps every
container's cpus. Switching policy drops the old assignments, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from nodeagent.cm.cpumanager import policy as cpupolicy
from nodeagent.cm.cpumanager.policy import CPUTopology
from nodeagent.errors import ConfigError, Exhausted
from nodeagent.objects.pod import Pod
from nodeagent.podresources.providers import MemoryBlock
from nodeagent.pods.ports import ADMITTED, AdmitResult
from nodeagent.state.db import StateDB

logger = logging.getLogger(__name__)

BUCKET = "cpu_manager"
_POLICY_KEY = "policy"
_POD_PREFIX = "pod:"


class CPUManager:
    def __init__(
        self,
        policy: str,
        topology: CPUTopology,
        db: StateDB,
        *,
        reserved_system_cpus: Sequence[int] = (),
        reserved_milli: int = 0,
    ) -> None:
        if policy not in (cpupolicy.NONE, cpupolicy.STATIC):
            raise ConfigError(f'KubeletConfiguration.cpuManagerPolicy: unsupported value "{policy}"')
        self.policy = policy
        self.topology = topology
        self._db = db
        if policy == cpupolicy.STATIC:
            unknown = sorted(set(reserved_system_cpus) - set(topology.cpus))
            if unknown:
                raise ConfigError(
                    f"KubeletConfiguration.reservedSystemCPUs: cpus {unknown} are not on this node "
                    f"(cpus {','.join(map(str, topology.cpus))})"
                )
            if not reserved_system_cpus and reserved_milli <= 0:
                raise ConfigError(
                    "KubeletConfiguration.cpuManagerPolicy: the static policy requires "
                    "systemReserved.cpu + kubeReserved.cpu (or reservedSystemCPUs) to be greater than zero"
                )
            self.reserved = cpupolicy.reserved_cpus(topology, reserved_system_cpus, reserved_milli)
        else:
            self.reserved = ()
        self._assignments: dict[str, dict[str, tuple[int, ...]]] = {}
        self._generation = 0
        self._restore()

    def _restore(self) -> None:
        stored = dict(self._db.items(BUCKET))
        stored_policy = (stored.get(_POLICY_KEY) or {}).get("name")
        pods = {k[len(_POD_PREFIX):]: v for k, v in stored.items() if k.startswith(_POD_PREFIX)}
        if stored_policy not in (None, self.policy) or self.policy != cpupolicy.STATIC:
            if pods:
                logger.warning("cpu manager policy changed, dropping assignments old=%s new=%s pods=%d",
                               stored_policy, self.policy, len(pods))
            with self._db.transaction() as txn:
                txn.delete_bucket(BUCKET)
                txn.put(BUCKET, _POLICY_KEY, {"name": self.policy})
            return
        valid = set(self.topology.cpus) - set(self.reserved)
        taken: set[int] = set()
        dropped: list[str] = []
        for uid, doc in sorted(pods.items()):
            containers = {str(name): tuple(int(c) for c in cpus) for name, cpus in doc["containers"].items()}
            cpus = {c for cs in containers.values() for c in cs}
            if not cpus <= valid or cpus & taken:
                dropped.append(uid)
                continue
            taken |= cpus
            self._assignments[uid] = containers
        if dropped:
            logger.warning("cpu manager dropped invalid assignments pods=%s", ",".join(dropped))
            with self._db.transaction() as txn:
                for uid in dropped:
                    txn.delete(BUCKET, _POD_PREFIX + uid)
        logger.info("cpu manager restored policy=%s pods=%d reserved=%s",
                    self.policy, len(self._assignments), ",".join(map(str, self.reserved)))

    # ---------------------------------------------------------------- ResourceAdmitter

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        if self.policy != cpupolicy.STATIC or pod.uid in self._assignments:
            return ADMITTED
        try:
            result = cpupolicy.allocate(self.policy, pod, self.topology, self.reserved, self._assignments)
        except Exhausted as err:
            logger.info("cpu manager refused pod=%s uid=%s reason=%s", pod.key, pod.uid, err)
            return AdmitResult(
                admit=False,
                reason="UnexpectedAdmissionError",
                message=f"Allocate failed due to {err}, which is unexpected",
            )
        if not result:
            return ADMITTED
        with self._db.transaction() as txn:
            txn.put(BUCKET, _POLICY_KEY, {"name": self.policy})
            txn.put(BUCKET, _POD_PREFIX + pod.uid, {"containers": {n: list(c) for n, c in result.items()}})
        self._assignments[pod.uid] = result
        self._generation += 1
        logger.info("cpu manager assigned pod=%s uid=%s cpus=%s", pod.key, pod.uid,
                    ";".join(f"{n}={','.join(map(str, c))}" for n, c in result.items()))
        return ADMITTED

    async def remove(self, pod: Pod) -> None:
        self.release(pod.uid)

    def release(self, pod_uid: str) -> None:
        if pod_uid not in self._assignments:
            return
        with self._db.transaction() as txn:
            txn.delete(BUCKET, _POD_PREFIX + pod_uid)
        del self._assignments[pod_uid]
        self._generation += 1
        logger.info("cpu manager released uid=%s", pod_uid)

    # ---------------------------------------------------------------- CPUsProvider

    def generation(self) -> int:
        """Changes whenever an assignment changes (podresources Versioned)."""
        return self._generation

    def container_cpus(self, pod_uid: str, container: str) -> Sequence[int]:
        """Exclusive cpus of the container (empty on the shared pool or with policy none)."""
        return self._assignments.get(pod_uid, {}).get(container, ())

    def allocatable_cpus(self) -> Sequence[int]:
        """All cpus minus the reserved ones under static; empty under none, as the kubelet."""
        if self.policy != cpupolicy.STATIC:
            return ()
        return tuple(c for c in self.topology.cpus if c not in set(self.reserved))

    # ---------------------------------------------------------------- introspection

    def assignments(self) -> dict[str, dict[str, tuple[int, ...]]]:
        return {uid: dict(a) for uid, a in self._assignments.items()}

    def shared_pool(self) -> tuple[int, ...]:
        """Cpus that containers without exclusive cpus run on (reserved included, as the kubelet)."""
        used = cpupolicy.in_use(self._assignments)
        return tuple(c for c in self.topology.cpus if c not in used)


class NoMemoryManager:
    """MemoryProvider for memory manager policy None: no blocks, nothing allocatable."""

    def generation(self) -> int:
        return 0

    def container_memory(self, pod_uid: str, container: str) -> Sequence[MemoryBlock]:
        return ()

    def allocatable_memory(self) -> Sequence[MemoryBlock]:
        return ()
