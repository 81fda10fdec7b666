"""What an admitted pod holds on the node: taking it through the admission chain and giving it back.

Admission is the kubelet's chain: the eviction manager's admit handler, then each
ResourceAdmitter in order (the resource managers), then the general predicates
(admission.py), then the pod's cgroup. A refusal or failure part way must release
the admitters that had already admitted, and a release must reach every admitter and the
cgroup even when one of them fails, or allocations leak for the node's life. Acquiring and
giving back sit together here so the two stay symmetrical.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import Pod
from nodeagent.pods import admission, eviction_admit
from nodeagent.pods.ports import AdmitResult, NodeResources, PodCgroups, ResourceAdmitter
from nodeagent.state import batch

logger = logging.getLogger(__name__)


class PodHoldings:
    """The admitters and the cgroups of one node, applied to a pod in order and undone in reverse."""

    def __init__(self, *, node_name: str, admitters: Sequence[ResourceAdmitter], cgroups: PodCgroups,
                 node_allocatable: bool = False) -> None:
        self._node_name = node_name
        self._node_allocatable = node_allocatable  # DRANodeAllocatableResources
        self._admitters = tuple(admitters)
        self._cgroups = cgroups

    async def admit(
        self, pod: Pod, *, active: Sequence[Pod], node: NodeResources, requested: Mapping[str, int] | None
    ) -> AdmitResult:
        """Run the chain in the kubelet's order; on refusal, release the admitters that had admitted.

        The kubelet's admit handlers: the eviction manager's first, then the resource
        managers' (allocating), then the general predicates; a predicate refusal gives back
        what the resource managers allocated.
        """
        result = eviction_admit.admit(pod, node.conditions)
        if not result.admit:
            return result
        admitted: list[ResourceAdmitter] = []
        for admitter in self._admitters:
            try:
                result = await admitter.admit(pod, active)
            except Exception as err:
                # A failing manager must not leak what the earlier ones allocated.
                if not isinstance(err, NodeAgentError):
                    logger.exception("admitter failed unexpectedly pod=%s uid=%s", pod.key, pod.uid)
                result = AdmitResult(False, "UnexpectedAdmissionError",
                                     f"Allocate failed due to {err}, which is unexpected")
            if not result.admit:
                await self._release_admitters(pod, admitted)
                return result
            admitted.append(admitter)
        result = admission.admit(pod, node_name=self._node_name, allocatable=node.allocatable, active=active,
                                 requested=requested, node_labels=node.labels,
                                 node_allocatable=self._node_allocatable)
        if not result.admit:
            await self._release_admitters(pod, admitted)
        return result

    async def create_cgroup(self, pod: Pod, qos: str) -> None:
        """Create the admitted pod's cgroup; if that fails, release every admitter and re-raise."""
        try:
            self._cgroups.create_pod_cgroup(pod, qos)
        except BaseException:
            await self._release_admitters(pod, self._admitters)
            raise

    async def release_admitters(self, pod: Pod) -> None:
        """Give back every admitter's allocation for the pod (errors are logged, not raised)."""
        await self._release_admitters(pod, self._admitters)

    def remove_cgroup(self, pod: Pod, qos: str) -> None:
        """Remove the pod's cgroup (errors are logged, not raised)."""
        try:
            self._cgroups.remove_pod_cgroup(pod, qos)
        except (NodeAgentError, OSError) as err:
            logger.error("pod cgroup removal failed pod=%s uid=%s err=%s", pod.key, pod.uid, err)

    async def _release_admitters(self, pod: Pod, admitters: Sequence[ResourceAdmitter]) -> None:
        # Commits at once even when the pod manager stages the admission: that batch is dropped.
        with batch.suspended():
            for admitter in reversed(admitters):
                try:
                    await admitter.remove(pod)
                except NodeAgentError as err:
                    logger.error("admitter release failed pod=%s uid=%s err=%s", pod.key, pod.uid, err)
