"""MemoryManager: the kubelet's memory manager with the None and Static policies.

Implements the pod manager's ResourceAdmitter (admit/remove: every container of a
Guaranteed pod, init containers first, with no topology affinity, as the kubelet does when
the topology manager's policy is none), the topology manager's HintProvider
(get_topology_hints / get_pod_topology_hints / allocate within an affinity) and
pod-resources' MemoryProvider (container_memory / allocatable_memory). Blocks live in the
StateDB bucket "memory_manager" (key "pod:<uid>", plus "policy"), written before a call
returns; the machine state is rebuilt from them at start, so a restart keeps every block.
Switching policy drops the old blocks, with a warning. Start-up validation (Static needs
reservedMemory summing to the Node Allocatable reservation) raises ConfigError with the
kubelet's texts.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence

from nodeagent.cm.memorymanager import policy as mp
from nodeagent.cm.memorymanager.model import Block, MachineState
from nodeagent.cm.policystate import PolicyBucket, pod_key
from nodeagent.errors import ConfigError, Exhausted
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.podresources.providers import MemoryBlock
from nodeagent.pods.hints import AdmissionFailure, Hints, TopologyHint
from nodeagent.pods.ports import ADMITTED, AdmitResult
from nodeagent.state import batch
from nodeagent.state.db import StateDB, Txn

logger = logging.getLogger(__name__)

BUCKET = "memory_manager"
UNEXPECTED = "UnexpectedAdmissionError"


class MemoryManager:
    def __init__(
        self,
        policy: str,
        numa_memory: Mapping[int, Mapping[str, int]],
        db: StateDB,
        *,
        reserved_memory: Mapping[int, Mapping[str, int]] | None = None,
        node_reservation: Mapping[str, int] | None = None,
    ) -> None:
        """`numa_memory`: NUMA node -> memory type -> bytes; `node_reservation`: kube + system
        reserved + hard eviction per resource (GetNodeAllocatableReservation)."""
        if policy not in mp.POLICIES:
            raise ConfigError(f'KubeletConfiguration.memoryManagerPolicy: unsupported value "{policy}" '
                              f'(one of {", ".join(mp.POLICIES)})')
        self.policy = policy
        self._db = db
        self._bucket = PolicyBucket(db, BUCKET, policy, what="memory manager", items="blocks")
        reserved = dict(reserved_memory or {})
        if policy == mp.STATIC:
            if not numa_memory:
                raise ConfigError("KubeletConfiguration.memoryManagerPolicy: the Static policy needs the "
                                  "memory of each NUMA node (nodeProfile.numaNodes[].memory)")
            mp.validate_reserved(numa_memory, node_reservation or {}, reserved)
            mp.check_static(reserved)
        self._state: MachineState = mp.machine_state(numa_memory, reserved) if policy == mp.STATIC else {}
        self._blocks: dict[str, dict[str, tuple[Block, ...]]] = {}
        self._reusable: tuple[str, mp.Reusable] = ("", {})
        self._generation = 0
        self._restore()

    @property
    def static(self) -> bool:
        return self.policy == mp.STATIC

    # ---------------------------------------------------------------- state

    def _restore(self) -> None:
        pods = self._bucket.stored_pods(self.static)
        dropped: list[str] = []
        for uid, doc in sorted(pods.items()):
            try:
                blocks = {str(n): tuple(Block.from_doc(b) for b in bs) for n, bs in doc["containers"].items()}
            except (KeyError, TypeError, ValueError):
                dropped.append(uid)
                continue
            if not self._replay(blocks):
                dropped.append(uid)
                continue
            self._blocks[uid] = blocks
        self._bucket.drop(dropped)
        logger.info("memory manager restored policy=%s pods=%d", self.policy, len(self._blocks))

    def _replay(self, blocks: Mapping[str, Sequence[Block]]) -> bool:
        """Take stored blocks out of the machine state again; False (state unchanged) if they no longer fit."""
        trial = copy.deepcopy(self._state)
        for bs in blocks.values():
            for b in bs:
                if any(n not in trial or b.type not in trial[n].memory_map for n in b.numa_affinity):
                    return False
                left = b.size
                for n in b.numa_affinity:
                    table = trial[n].memory_map[b.type]
                    got = min(table.free, left)
                    table.free -= got
                    table.reserved += got
                    left -= got
                    trial[n].number_of_assignments += 1
                    trial[n].cells = b.numa_affinity
                if left:
                    return False
        self._state = trial
        return True

    def _persist(self, uid: str) -> None:
        """Write the pod's blocks: now, or in the admission's one commit (state/batch.py)."""
        blocks = self._blocks.get(uid)
        doc = {"containers": {n: [b.to_doc() for b in bs] for n, bs in blocks.items()}} if blocks else None

        def apply(txn: Txn) -> None:
            if doc is not None:
                txn.put(BUCKET, pod_key(uid), doc)
            else:
                txn.delete(BUCKET, pod_key(uid))

        batch.write(self._db, (BUCKET, pod_key(uid)), apply)
        self._generation += 1

    def _reusable_for(self, uid: str) -> mp.Reusable:
        if self._reusable[0] != uid:
            self._reusable = (uid, {})
        return self._reusable[1]

    # ---------------------------------------------------------------- ResourceAdmitter

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        """Every container's blocks with no topology affinity (topology manager policy none)."""
        if not self.static or pod.uid in self._blocks:
            return ADMITTED
        before = copy.deepcopy(self._state)
        blocks: dict[str, tuple[Block, ...]] = {}
        reusable = self._reusable_for(pod.uid)
        try:
            for c in (*pod.init_containers, *pod.containers):
                got = mp.allocate(self._state, reusable, pod, c, None, blocks)
                if got:
                    blocks[c.name] = got
        except Exhausted as err:
            self._state = before
            self._reusable = ("", {})
            logger.info("memory manager refused pod=%s uid=%s reason=%s", pod.key, pod.uid, err)
            return AdmitResult(False, UNEXPECTED, f"Allocate failed due to {err}, which is unexpected")
        if blocks:
            self._blocks[pod.uid] = blocks
            self._persist(pod.uid)
            logger.info("memory manager assigned pod=%s uid=%s blocks=%s", pod.key, pod.uid, _show(blocks))
        return ADMITTED

    async def remove(self, pod: Pod) -> None:
        self.release(pod.uid)

    def release(self, pod_uid: str) -> None:
        blocks = self._blocks.pop(pod_uid, None)
        if self._reusable[0] == pod_uid:
            self._reusable = ("", {})
        if blocks is None:
            return
        for bs in blocks.values():
            mp.remove(self._state, bs)
        self._persist(pod_uid)
        logger.info("memory manager released uid=%s", pod_uid)

    # ---------------------------------------------------------------- HintProvider

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        if not self.static:
            return {}
        req = mp.requested(pod, container)
        if not req:
            return {}
        have = self._blocks.get(pod.uid, {}).get(container.name)
        if have:
            # regenerateHints: the container keeps the NUMA nodes it already has.
            return {b.type: [TopologyHint(mp.mask_of(b.numa_affinity), True)] for b in have}
        return dict(mp.calculate_hints(self._state, self._reusable_for(pod.uid), req))

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        if not self.static:
            return {}
        req = _pod_requested(pod)
        if not req:
            return {}
        have = self._blocks.get(pod.uid)
        if have:
            return {b.type: [TopologyHint(mp.mask_of(b.numa_affinity), True)] for bs in have.values() for b in bs}
        return dict(mp.calculate_hints(self._state, {}, req))

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        """One container's blocks within the topology manager's affinity; AdmissionFailure to refuse."""
        if not self.static or container.name in self._blocks.get(pod.uid, {}):
            return
        blocks = dict(self._blocks.get(pod.uid, {}))
        try:
            got = mp.allocate(self._state, self._reusable_for(pod.uid), pod, container, affinity, blocks)
        except Exhausted as err:
            raise AdmissionFailure(UNEXPECTED, f"Allocate failed due to {err}, which is unexpected") from None
        if got:
            blocks[container.name] = got
            self._blocks[pod.uid] = blocks
            self._persist(pod.uid)

    # ---------------------------------------------------------------- MemoryProvider

    def generation(self) -> int:
        return self._generation

    def holds_any(self, pod_uid: str) -> bool:
        """podresources PodHoldings: False when the pod has no memory blocks."""
        return bool(self._blocks.get(pod_uid))

    def container_memory(self, pod_uid: str, container: str) -> Sequence[MemoryBlock]:
        return tuple(MemoryBlock(b.type, b.size, b.numa_affinity)
                     for b in self._blocks.get(pod_uid, {}).get(container, ()))

    def allocatable_memory(self) -> Sequence[MemoryBlock]:
        """Per NUMA node and memory type, its allocatable bytes (Static only, as the kubelet)."""
        return tuple(MemoryBlock(name, table.allocatable, (node,))
                     for node, state in sorted(self._state.items())
                     for name, table in sorted(state.memory_map.items()) if table.allocatable)

    # ---------------------------------------------------------------- introspection

    def machine_state(self) -> MachineState:
        return copy.deepcopy(self._state)

    def assignments(self) -> dict[str, dict[str, tuple[Block, ...]]]:
        return {uid: dict(b) for uid, b in self._blocks.items()}


def _pod_requested(pod: Pod) -> dict[str, int]:
    """getPodRequestedResources: the larger of the biggest init container and the app sum."""
    init_peak: dict[str, int] = {}
    for c in pod.init_containers:
        for n, v in mp.requested(pod, c).items():
            init_peak[n] = max(init_peak.get(n, 0), v)
    total: dict[str, int] = {}
    for c in pod.containers:
        for n, v in mp.requested(pod, c).items():
            total[n] = total.get(n, 0) + v
    return {n: max(total.get(n, 0), init_peak.get(n, 0)) for n in set(total) | set(init_peak)}


def _show(blocks: Mapping[str, Sequence[Block]]) -> str:
    return ";".join(f"{n}={','.join(f'{b.type}:{b.size}@{list(b.numa_affinity)}' for b in bs)}"
                    for n, bs in blocks.items())
