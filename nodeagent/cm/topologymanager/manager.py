"""TopologyManager: the kubelet's resource managers' admit handler (topology, CPU, memory, devices).

A ResourceAdmitter (pods/ports.py) in place of separate CPU and device admitters. Per
container (scope `container`) or once per pod (scope `pod`) it asks every hint provider
for hints, merges them under the policy (policy.py), refuses with TopologyAffinityError
when the policy does not admit, and otherwise asks each provider, in order (CPU, memory,
devices), to allocate every container within the merged affinity. Any refusal removes the
pod from every provider (so nothing stays held) and is answered with that provider's
reason and message (UnexpectedAdmissionError, SMTAlignmentError, ...). Admissions are
serialised by one lock, as the kubelet admits one pod at a time. Given the providers'
database, the providers' writes of one admission are staged and committed together before
the answer (state/batch.py): one commit per pod instead of one per provider and container.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence

from nodeagent.cm.topologymanager import policy as tmpolicy
from nodeagent.cm.topologymanager.policy import NUMAInfo, PolicyOptions
from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.admitting import admit_or_roll_back
from nodeagent.pods.hints import (
    AdmissionFailure,
    HintMemo,
    HintProvider,
    Hints,
    TopologyHint,
    format_mask,
    hints_key,
)
from nodeagent.pods.ports import AdmitResult
from nodeagent.state import batch
from nodeagent.state.db import StateDB
from nodeagent.util.yielding import chunked

logger = logging.getLogger(__name__)

_NO_HINT = TopologyHint(None, False)
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


class TopologyManager:
    def __init__(
        self,
        providers: Sequence[HintProvider],
        *,
        policy: str,
        scope: str,
        numa: NUMAInfo,
        options: PolicyOptions | None = None,
        db: StateDB | None = None,
    ) -> None:
        if policy not in tmpolicy.POLICIES:
            raise ConfigError(f'KubeletConfiguration.topologyManagerPolicy: unsupported value "{policy}"')
        if scope not in (tmpolicy.CONTAINER_SCOPE, tmpolicy.POD_SCOPE):
            raise ConfigError(f'KubeletConfiguration.topologyManagerScope: unsupported value "{scope}"')
        self.options = options or PolicyOptions()
        if policy != tmpolicy.NONE and len(numa.nodes) > self.options.max_allowable_numa_nodes:
            raise ConfigError(f"KubeletConfiguration.topologyManagerPolicy: unsupported on machines with more "
                              f"than {self.options.max_allowable_numa_nodes} NUMA Nodes")
        self.providers = tuple(providers)
        self.policy = policy
        self.scope = scope
        self.numa = numa
        self._lock = asyncio.Lock()
        self._affinity: dict[str, dict[str, TopologyHint]] = {}
        self._merged: HintMemo[tuple[TopologyHint, bool]] = HintMemo()
        self._db = db  # the providers' database: one commit per admission (state/batch.py)

    # ---------------------------------------------------------------- the merge

    def container_hint(self, pod: Pod, container: Container) -> tuple[TopologyHint, bool]:
        return self._merge([p.get_topology_hints(pod, container) for p in self.providers])

    def pod_hint(self, pod: Pod) -> tuple[TopologyHint, bool]:
        return self._merge([p.get_pod_topology_hints(pod) for p in self.providers])

    def _merge(self, hints: list[Hints]) -> tuple[TopologyHint, bool]:
        """The policy's merge (pure in the hints: policy, NUMA info and options are fixed)."""
        return self._merged.get(hints_key(hints),
                                lambda: tmpolicy.merge(self.policy, self.numa, self.options, hints))

    def affinity(self, pod_uid: str, container: str) -> TopologyHint:
        """The merged hint a container was admitted with (GetAffinity); "any" when unknown."""
        return self._affinity.get(pod_uid, {}).get(container, _NO_HINT)

    # ---------------------------------------------------------------- ResourceAdmitter

    async def admit(self, pod: Pod, active: Sequence[Pod]) -> AdmitResult:
        async with self._lock:
            return await admit_or_roll_back(pod, lambda: self._admit_durably(pod), self._rollback,
                                            "topology manager")

    async def _admit_durably(self, pod: Pod) -> None:
        if self._db is None or batch.staging(self._db):
            # No database, or the caller (the pod manager) stages the whole admission and
            # commits it, with the pod's record, before it answers.
            await self._admit(pod)
            return
        with batch.batch(self._db) as staged:
            await self._admit(pod)
        self._commit(staged)  # every provider's state, durable before the answer

    @staticmethod
    def _commit(staged: batch.WriteBatch) -> None:
        try:
            staged.commit()
        except sqlite3.Error as err:
            logger.error("resource managers' state commit failed err=%s", err)
            raise AdmissionFailure(UNEXPECTED_ADMISSION_ERROR,
                                   f"Allocate failed due to state commit failed: {err}, which is unexpected") from err

    async def _admit(self, pod: Pod) -> None:
        containers = pod.all_containers()
        # a turn of the event loop every CHUNK containers: a pod of 10,000 held it through every allocation (issue
        # 25). Safe: the admission holds this manager's lock and stages its writes in its own context
        # (state.batch), and the pod is in no table until admitted.
        if self.scope == tmpolicy.POD_SCOPE and self.policy != tmpolicy.NONE:
            hint, admit = self.pod_hint(pod)
            if not admit:
                raise AdmissionFailure(tmpolicy.TOPOLOGY_AFFINITY_ERROR, tmpolicy.TOPOLOGY_AFFINITY_MESSAGE)
            logger.debug("topology manager pod hint pod=%s affinity=%s preferred=%s",
                         pod.key, format_mask(hint.numa_affinity), hint.preferred)
            async for c in chunked(containers):
                await self._allocate(pod, c, hint)
            return
        async for c in chunked(containers):
            hint, admit = (_NO_HINT, True) if self.policy == tmpolicy.NONE else self.container_hint(pod, c)
            if not admit:
                raise AdmissionFailure(tmpolicy.TOPOLOGY_AFFINITY_ERROR, tmpolicy.TOPOLOGY_AFFINITY_MESSAGE)
            await self._allocate(pod, c, hint)

    async def _allocate(self, pod: Pod, container: Container, hint: TopologyHint) -> None:
        self._affinity.setdefault(pod.uid, {})[container.name] = hint
        for provider in self.providers:
            await provider.allocate(pod, container, hint)

    async def _rollback(self, pod: Pod) -> None:
        self._affinity.pop(pod.uid, None)
        for provider in reversed(self.providers):
            try:
                await provider.remove(pod)
            except Exception:  # a failing release must not hide the refusal; the next remove retries
                logger.exception("topology manager rollback failed pod=%s provider=%s", pod.key,
                                 type(provider).__name__)

    async def remove(self, pod: Pod) -> None:
        self._affinity.pop(pod.uid, None)
        for provider in reversed(self.providers):
            await provider.remove(pod)
