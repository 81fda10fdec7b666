"""The status manager: the node's pod statuses written back to the API, and terminated pods deleted.

The kubelet's pkg/kubelet/status/status_manager.go. Each pass writes the statuses that changed
since the last one (the pod manager's generation moved), as a patch of the node's own fields and
conditions: what the control plane owns (PodScheduled, resourceClaimStatuses) stays as the API has
it. A write that failed is retried on the next pass, so the node catches up after an outage; a
write the API server refused (422) is retried on its own backoff (nodeapi/refusals.py). A pod
deleted with a grace period is deleted from the API (period 0, its uid as precondition) once its
terminal status is written and it gave back what it held (the status manager's canBeDeleted).
Static pods' statuses go to their mirror pods, so each pass keeps those first (mirror.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from nodeagent.errors import NodeAgentError, NotFound, RequestTooLarge, ValidationError
from nodeagent.nodeapi import inprocess
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.nodeapi.reachability import Unreachable
from nodeagent.nodeapi.refusals import StatusRefusals
from nodeagent.nodesync.mirror import MirrorPods
from nodeagent.objects.pod.manifest import status_to_json
from nodeagent.objects.pod.model import Pod, PodStatus
from nodeagent.objects.pod.output import NODE_CONDITIONS as NODE_CONDITIONS
from nodeagent.objects.pod.output import NODE_STATUS_FIELDS as NODE_STATUS_FIELDS
from nodeagent.objects.pod.output import kept_transition_times
from nodeagent.objects.pod.status_resources import GATE_CONTAINER_RESOURCES, GATE_POD_RESOURCES, add_generated
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.resources import pod_limits, pod_requests
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock
from nodeagent.util.yielding import CHUNK, pure_call

logger = logging.getLogger(__name__)

_NODE_OWNED = frozenset(NODE_STATUS_FIELDS)
RETRY_START, RETRY_CAP = 0.2, 2.0
"""Seconds before a failed pass is tried again, doubling per failure: while the API server is away the
node does not write every 50 ms; a complete list (the server is back) retries at once."""


def merged_status(current: Mapping[str, Any], node_status: Mapping[str, Any]) -> dict[str, Any]:
    """The API's status with the node's fields and conditions laid over it."""
    return inprocess.merged_status(current, node_status, _NODE_OWNED, NODE_CONDITIONS)



def _all_on(name: str) -> bool:
    return True


class StatusManager:
    """What of each pod's status the API has, and the pods that wait for their final DELETE."""

    def __init__(self, *, api: NodeAPI, pods: PodManager, mirrors: MirrorPods, recorder: EventRecorder,
                 clock: Clock, node_ips: Callable[[], tuple[str, ...]] = tuple,
                 gate: Callable[[str], bool] | None = None) -> None:
        """`node_ips`: the node's host IPs (nodeutil.GetNodeHostIPs of its addresses) for hostIP(s);
        `gate`: the node's feature gates (its release's defaults), None: all the status fields 1.37 writes."""
        gate = gate if gate is not None else _all_on
        self._container_resources = gate(GATE_CONTAINER_RESOURCES)
        self._pod_resources = gate(GATE_POD_RESOURCES)
        self._api = api
        self._node_ips = node_ips
        self._pods = pods
        self._mirrors = mirrors
        self._pushed: dict[str, Any] = {}  # uid -> last status written
        # uid -> the (immutable) pod and status last written: a pass converts only the pods whose
        # status changed, not every pod of the node every 50 ms
        self._pushed_from: dict[str, tuple[Pod, object]] = {}
        self._pushed_generation = -1
        # uid -> (namespace, name) of the pods deleted with a grace period that this node
        # terminates; each is deleted from the API (period 0) once terminal and released
        self._terminating: dict[str, tuple[str, str]] = {}
        # pods whose status write was refused by validation: retried with backoff on the clock
        self._refused = StatusRefusals(clock, recorder, api.description)
        self._clock = clock
        self._backoff = Backoff(RETRY_START, RETRY_CAP)
        self._failed_passes = 0
        self._retry_at = float("-inf")  # monotonic time before which a failed pass is not tried again

    def due(self) -> bool:
        """Whether a pass has work: statuses changed, a refused write is due, a pod waits for its DELETE."""
        if self._clock.monotonic() < self._retry_at:
            return False
        return self._pods.generation() != self._pushed_generation or bool(self._terminating) or self._refused.due()

    def write_all_again(self) -> None:
        """After a complete list: the API may have missed some writes, so the next pass writes every status
        (at once, even if a failed pass was waiting: the list says the server answers)."""
        self._pushed_generation = -1
        self._retry_at = float("-inf")

    def terminating(self, uid: str, namespace: str, name: str) -> bool:
        """Track a pod deleted with a grace period until its final DELETE; False if already tracked."""
        if uid in self._terminating:
            return False
        self._terminating[uid] = (namespace, name)
        return True

    def keep_terminating(self, present: Iterable[str]) -> None:
        """Stop waiting for the pods a complete list no longer has (deleted from the API meanwhile)."""
        keep = set(present)
        for uid in [u for u in self._terminating if u not in keep]:
            del self._terminating[uid]

    def forget(self, uid: str) -> None:
        """The pod was deleted from the API: nothing of its status is kept."""
        self._pushed.pop(uid, None)
        self._pushed_from.pop(uid, None)
        self._terminating.pop(uid, None)
        self._refused.forget(uid)

    async def sync(self) -> None:
        """Write the statuses that changed since the last pass (in table order: no pass sorts the
        node's pods) and keep the mirror pods; a failure leaves the generation for the next pass."""
        if self._clock.monotonic() < self._retry_at:
            return
        generation = self._pods.generation()
        if generation == self._pushed_generation and not self._refused.due():
            if self._terminating and not await self._finish_terminated():
                self._pass_failed()
            return
        failed = False
        static_keys = set()
        changed: list[tuple[Pod, object, dict[str, Any]]] = []
        for pod in self._pods.all_pods():
            try:
                status = self._pods.status(pod.uid)
            except NotFound:  # forgotten while a mirror pod was written (a remote API awaits)
                continue
            if pod.source == "file":
                static_keys.add(pod.key)
                failed |= not await self._mirrors.ensure(pod)
            last = self._pushed_from.get(pod.uid)
            if last is not None and last[0] is pod and last[1] is status:
                continue
            node_status = self._transition_times(pod, await self._api_status_off_loop(pod, status))
            if self._pushed.get(pod.uid) == node_status:
                self._pushed_from[pod.uid] = (pod, status)
                self._refused.written(pod)  # what the API has: nothing left to retry
                continue
            if not self._refused.ready(pod.uid):
                continue  # refused before: its retry is due later (the pass that is due then writes it)
            changed.append((pod, status, node_status))
        failed |= not await self._write_statuses(changed)
        self._refused.keep_only(pod.uid for pod in self._pods.all_pods())
        failed |= not await self._mirrors.delete_orphans(static_keys)
        if self._terminating:
            failed |= not await self._finish_terminated()
        if not failed:
            self._pushed_generation = generation
            self._failed_passes = 0
        else:  # the next pass tries again, after a backoff
            self._pass_failed()

    def api_status(self, pod: Pod, status: PodStatus) -> dict[str, Any]:
        """The status as the kubelet's generateAPIPodStatus writes it: the pod's own state, and
        hostIP(s) and the resources of its spec (status_resources.add_generated)."""
        return add_generated(status_to_json(pod, status), pod, requests=pod_requests(pod), limits=pod_limits(pod),
                             node_ips=self._node_ips(), container_resources=self._container_resources,
                             pod_level=self._pod_resources)

    def _transition_times(self, pod: Pod, node_status: dict[str, Any]) -> dict[str, Any]:
        """The conditions' lastTransitionTime kept from the status last written, or before the first
        write from the API's (the pod as the node took it), where a condition's status did not change:
        updateStatusInternal's updateLastTransitionTime against its cache or pod.Status. A joined node's
        patch then carries the scheduler's PodScheduled time, not the node's own (the patch merges
        conditions by type, so the node's time replaced the binding's)."""
        conditions = node_status.get("conditions")
        if not conditions:
            return node_status
        old = self._pushed.get(pod.uid)
        if old is None:
            old = pod.manifest.get("status")
        if not isinstance(old, Mapping) or not isinstance(old.get("conditions"), list):
            return node_status
        node_status["conditions"] = kept_transition_times(old["conditions"], conditions)
        return node_status

    async def _api_status_off_loop(self, pod: Pod, status: PodStatus) -> dict[str, Any]:
        """api_status, in a worker thread for a pod of more than util.yielding.CHUNK containers: pure
        Python over frozen values (the loop gets the GIL back every switch interval), where the
        status of 10,000 containers held the event loop a tenth of a second and more (issue 25)."""
        if len(pod.containers) + len(pod.init_containers) <= CHUNK:
            return self.api_status(pod, status)
        ips, containers, pod_level = self._node_ips(), self._container_resources, self._pod_resources
        return await pure_call(
            lambda: add_generated(status_to_json(pod, status), pod, requests=pod_requests(pod),
                                  limits=pod_limits(pod), node_ips=ips, container_resources=containers,
                                  pod_level=pod_level))

    def _pass_failed(self) -> None:
        self._failed_passes += 1
        self._retry_at = self._clock.monotonic() + self._backoff.delay(self._failed_passes)

    async def _write_statuses(self, changed: Sequence[tuple[Pod, object, dict[str, Any]]]) -> bool:
        """Patch each pod's status (the API of this process: all in one transaction); False when
        one was not written for another reason than the pod being gone (the watch brings that)."""
        if not changed:
            return True
        patches = [(pod.namespace, pod.name, "" if pod.source == "file" else pod.uid, node_status)
                   for pod, _, node_status in changed]
        answers: Sequence[NodeAgentError | None]
        if isinstance(self._api, inprocess.InProcessAPI):
            try:
                answers = await self._api.patch_pod_statuses(patches, _NODE_OWNED, NODE_CONDITIONS)
            except NodeAgentError as err:
                answers = [err] * len(patches)
        else:
            answers = [await self._patch_one(*patch) for patch in patches]
        ok = True
        for (pod, status, node_status), answer in zip(changed, answers, strict=True):
            if answer is None:
                self._pushed[pod.uid] = node_status
                self._pushed_from[pod.uid] = (pod, status)
                self._refused.written(pod)
            elif isinstance(answer, ValidationError | RequestTooLarge):
                # not a failed pass: retried on its own backoff (a status too large for etcd: the
                # kubelet's status manager logs it and tries again later, the other pods go on)
                self._refused.refused(pod, answer)
            elif not isinstance(answer, NotFound):  # NotFound: deleted in the API, the watch brings it
                ok = False
                # unreachable: the client's reachability tracker logs the outage once
                logger.log(logging.DEBUG if isinstance(answer, Unreachable) else logging.INFO,
                           "pod status not written pod=%s err=%s", pod.key, answer)
        return ok

    async def _patch_one(self, namespace: str, name: str, uid: str,
                         status: Mapping[str, Any]) -> NodeAgentError | None:
        try:
            await self._api.patch_pod_status(namespace, name, uid, status, _NODE_OWNED, NODE_CONDITIONS)
        except NodeAgentError as err:
            return err
        return None

    async def _finish_terminated(self) -> bool:
        """The status manager's final DELETE (canBeDeleted, then a delete with period 0 and the
        pod's uid as precondition): once the pod's terminal status is written to the API and the
        pod gave back everything it held. A refused delete is tried again on the next pass; the
        watch's DELETED forgets the pod here. False when a DELETE got no answer (the pass backs off)."""
        ok = True
        for uid, (namespace, name) in list(self._terminating.items()):
            local = self._pods.get_pod_by_uid(uid)
            if local is not None:
                pushed = self._pushed.get(uid) or {}
                if not self._pods.released(uid) or pushed.get("phase") not in ("Succeeded", "Failed"):
                    continue
            try:
                await self._api.delete_pod(namespace, name, uid, grace_period=0)
            except NotFound:
                pass
            except NodeAgentError as err:
                ok = ok and not isinstance(err, Unreachable)  # a refusal is retried next pass, as before
                logger.log(logging.DEBUG if isinstance(err, Unreachable) else logging.INFO,
                           "terminated pod not deleted pod=%s/%s uid=%s err=%s", namespace, name, uid, err)
                continue
            logger.info("pod fully terminated and removed from the API pod=%s/%s uid=%s", namespace, name, uid)
            self._terminating.pop(uid, None)
        return ok
