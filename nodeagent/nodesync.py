"""The node's side of the Kubernetes API: the kubelet's API pod source and status manager.

Everything goes through the node's API port (nodeagent.nodeapi): the object store of this
process or an API server on the network, the same code either way. This bridge:
- registers the local Node (labels, capacity, allocatable, conditions, addresses, nodeInfo),
  keeps its status current, and registers it again when the Node object was deleted under
  the running node (checked every `status_interval`, the kubelet's nodeStatusUpdateFrequency);
- runs every Pod bound to this node (the watch's fieldSelector spec.nodeName) through the pod
  manager, and stops pods deleted from the API, including those deleted while the node was down
  or while the API server was out of reach (each full list, a SYNC, reconciles); a pod deleted
  with a grace period (deletionTimestamp set) is killed, its terminal status written and, once it
  gave back what it held, deleted from the API with period 0 and its uid as precondition (the
  kubelet's status manager, canBeDeleted);
- writes the pod manager's status back (the status manager's patch: the node's fields and
  conditions; what the control plane owns, PodScheduled and resourceClaimStatuses, stays);
  a write that failed is retried on the next pass, so the node catches up after an outage; a
  write the API server refused (422) is retried with backoff (nodeapi/refusals.py);
- keeps mirror pods for static pods, as the kubelet does (the ones it keeps are tracked,
  found in the first list, so no pass scans every pod);
- when no scheduler runs (controlPlane.enabled false, in process), binds unscheduled pods to itself.

`flush()` handles everything already received, so the admin API can answer after the node
has acted (a deleted pod is gone from pod-resources when `delete` returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from nodeagent.backoff import Backoff
from nodeagent.clock import Clock
from nodeagent.errors import NodeAgentError, NotFound, ValidationError
from nodeagent.nodeapi import inprocess
from nodeagent.nodeapi.ports import DELETED, SYNC, NodeAPI, PodEvent, PodWatch
from nodeagent.nodeapi.refusals import StatusRefusals
from nodeagent.objects.pod import Pod
from nodeagent.objects.pod_manifest import pod_from_manifest, pod_to_manifest, status_to_json
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.manager import PodManager
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339
from nodeagent.ticker import Ticker

logger = logging.getLogger(__name__)

MIRROR = "kubernetes.io/config.mirror"
# Condition types the node owns; the rest (PodScheduled, ...) belong to the control plane.
NODE_CONDITIONS = frozenset(
    {"Initialized", "ContainersReady", "Ready", "PodReadyToStartContainers", "DisruptionTarget"}
)
NODE_STATUS_FIELDS = ("phase", "reason", "message", "qosClass", "startTime", "containerStatuses",
                      "initContainerStatuses")
_NODE_OWNED = frozenset(NODE_STATUS_FIELDS)
NODE_STATUS_UPDATE_FREQUENCY = 10.0
"""The kubelet's nodeStatusUpdateFrequency default: how often the Node object is checked."""
NODE_STATUS_REPORT_FREQUENCY = 300.0
"""The kubelet's nodeStatusReportFrequency default: an unchanged status is posted again after 5 min."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def delete_node_slices(store: ObjectStore, node: str, driver: str | None = None) -> int:
    """The kubelet's ResourceSlice DeleteCollection over the store of this process (nodeapi.inprocess)."""
    return inprocess.delete_node_slices(store, node, driver)


def _without_heartbeats(status: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Node status as the node computes it: conditions without lastHeartbeatTime."""
    conditions = status.get("conditions")
    if not conditions:
        return status
    return {**status, "conditions": [{k: v for k, v in c.items() if k != "lastHeartbeatTime"}
                                     for c in conditions]}


def merged_status(current: Mapping[str, Any], node_status: Mapping[str, Any]) -> dict[str, Any]:
    """The API's status with the node's fields and conditions laid over it."""
    return inprocess.merged_status(current, node_status, _NODE_OWNED, NODE_CONDITIONS)


class NodeSync:
    def __init__(
        self,
        *,
        node_name: str,
        api: NodeAPI,
        pods: PodManager,
        node_object: Callable[[], Mapping[str, Any]],
        recorder: EventRecorder,
        clock: Clock,
        bind_unscheduled: bool,
        interval: float = 0.05,
        status_interval: float = NODE_STATUS_UPDATE_FREQUENCY,
        report_interval: float = NODE_STATUS_REPORT_FREQUENCY,
        first_list_timeout: float = 5.0,
        ticker: Ticker | None = None,
        node_inputs: Callable[[], object] | None = None,
    ) -> None:
        self._first_list_timeout = first_list_timeout
        self._node = node_name
        self._api = api
        self._pods = pods
        self._node_object = node_object
        self._recorder = recorder
        self._clock = clock
        self._bind = bind_unscheduled
        self._interval = interval
        self._status_interval = status_interval
        self._report_interval = report_interval  # the kubelet's nodeStatusReportFrequency
        self._watch: PodWatch | None = None
        self._objects: dict[str, Mapping[str, Any]] = {}  # namespace/name -> the API's pod (of this node)
        self._seen: dict[str, tuple[Any, ...]] = {}  # uid -> what of the pod the node acted on
        self._pushed: dict[str, Any] = {}  # uid -> last status written
        # uid -> the (immutable) pod and status last written: a pass converts only the pods whose
        # status changed, not every pod of the node every 50 ms
        self._pushed_from: dict[str, tuple[Pod, object]] = {}
        self._pushed_generation = -1
        self._published_node: Mapping[str, Any] | None = None
        self._node_checked = float("-inf")
        self._registered = False
        self._reported = float("-inf")  # monotonic time the status was last written
        # After a failed write the Node is tried again with a backoff (the pass interval doubling up
        # to status_interval), and the outage is logged once: every 50 ms pass retried and logged,
        # and each failure retired the API client, 20 times a second while the API server was away.
        self._publish_failures = 0
        self._publish_retry_at = float("-inf")
        self._mirrors: set[str] = set()  # namespace/name of the mirror pods this node keeps
        # uid -> (namespace, name) of the pods deleted with a grace period that this node
        # terminates; each is deleted from the API (period 0) once terminal and released
        self._terminating: dict[str, tuple[str, str]] = {}
        # pods whose status write was refused by validation: retried with backoff on the clock
        self._refused = StatusRefusals(clock, recorder, api.description)
        self._lock = asyncio.Lock()
        # A shared ticker (full virtual nodes): run() waits on the watch alone, the ticker's
        # check starts a pass (a task) only when something is due.
        self._ticker = ticker
        self._pass: asyncio.Task[None] | None = None
        # What the Node object is computed from (cheaper to get and compare than the object): a
        # tick whose inputs equal those of a tick that found the Node published builds nothing.
        self._node_inputs = node_inputs
        self._clean_inputs: object = None

    @property
    def api(self) -> NodeAPI:
        return self._api

    def pod_object(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The API's pod as last received (for the DRA claim source: resourceClaimStatuses)."""
        return self._objects.get(f"{namespace}/{name}")

    async def start(self) -> None:
        """Register the node, then reconcile the pod manager with the API's list (after a restart too)."""
        self._watch = self._api.watch_pods(self._node, unscheduled=self._bind)
        await self.publish_node()
        try:  # the first list: at once in process; over the network, unless the API is out of reach
            first = await asyncio.wait_for(self._watch.next(), self._first_list_timeout)
        except TimeoutError:
            logger.warning("no pod list from the API yet node=%s api=%s: the node runs what it has and "
                           "reconciles when the API answers", self._node, self._api.description)
            return
        async with self._lock:
            await self._event(first)
            await self._sync_mirrors_and_status()

    async def run(self) -> None:
        """Follow the API until cancelled. Every `interval` (50 ms) a cheap pass writes what
        changed on the node side (pod statuses when the pod manager's generation moved, the
        node's status when it differs), so health changes reach the API within that."""
        assert self._watch is not None, "start() first"
        if self._ticker is not None:
            await self._run_ticked(self._ticker)
            return
        watch = self._watch

        async def next_or_none() -> PodEvent | None:
            try:
                return await asyncio.wait_for(watch.next(), self._interval)
            except TimeoutError:
                return None

        while True:
            await self._guarded_pass(next_or_none(), watch)

    async def _guarded_pass(self, next_event: Awaitable[PodEvent | None], watch: PodWatch) -> None:
        """The next event (and any already received after it), then a status pass and the Node;
        a failure is logged and retried after one interval, never ends the loop."""
        try:
            event = await next_event
            async with self._lock:
                if event is not None:
                    await self._event(event)
                    while (more := watch.get_nowait()) is not None:
                        await self._event(more)
                await self._sync_mirrors_and_status()
            await self.publish_node()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("node sync pass failed node=%s", self._node)
            await self._clock.sleep(self._interval)

    async def _run_ticked(self, ticker: Ticker) -> None:
        """run() with a shared ticker: events are handled as they come; the periodic pass costs
        nothing on a tick where nothing is due (no task, no timer of this node's own)."""
        assert self._watch is not None
        watch = self._watch
        remove = ticker.add(self._tick)
        try:
            while True:
                await self._guarded_pass(watch.next(), watch)
        finally:
            remove()
            if self._pass is not None:
                self._pass.cancel()

    def _due(self) -> bool:
        """Whether a periodic pass has work: statuses to write, or the Node to write or check."""
        if self._pods.generation() != self._pushed_generation or self._terminating or self._refused.due():
            return True
        now = self._clock.monotonic()
        if now - self._node_checked >= self._status_interval or now - self._reported >= self._report_interval:
            return True
        inputs = self._node_inputs() if self._node_inputs is not None else None
        if inputs is not None and inputs == self._clean_inputs:
            return False
        if self._node_object() != self._published_node:
            return True
        self._clean_inputs = inputs
        return False

    def _tick(self) -> None:
        if (self._pass is None or self._pass.done()) and self._due():
            self._pass = asyncio.get_running_loop().create_task(self._periodic(), name=f"node-sync {self._node}")

    async def _periodic(self) -> None:
        try:
            async with self._lock:
                await self._sync_mirrors_and_status()
            await self.publish_node()
        except Exception:  # the next tick tries again
            logger.exception("node sync pass failed node=%s", self._node)

    async def flush(self) -> None:
        """Handle every event received so far and write statuses; used by the admin API."""
        if self._watch is None:
            return
        async with self._lock:
            while (event := self._watch.get_nowait()) is not None:
                await self._event(event)
            await self._sync_mirrors_and_status()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()

    # ------------------------------------------------------------------ node

    async def publish_node(self) -> None:
        """Write the Node when it changed; every `status_interval`, read it back and register it
        again if it was deleted (or write the status again if someone else changed it). Written
        conditions carry lastHeartbeatTime; an unchanged status is written again (a heartbeat)
        every `report_interval` (nodeStatusReportFrequency), as the kubelet does when it also renews a Lease."""
        node = self._node_object()
        now = self._clock.monotonic()
        if now < self._publish_retry_at:
            return
        if now - self._node_checked >= self._status_interval:
            self._published_node, self._node_checked = None, now
        if node == self._published_node and now - self._reported < self._report_interval:
            return
        try:
            current = await self._api.get_node(self._node)
            status = node.get("status") or {}
            if current is None:
                await self._api.create_node({**node, "status": self._heartbeat(status)})
                logger.info("node %s node=%s api=%s", "registered again (the Node object was deleted)"
                            if self._registered else "registered", self._node, self._api.description)
                self._published_node, self._registered, self._reported = node, True, now
                self._published_again()
                return
            # the kubelet's labels are set when they differ; labels added by others stay
            want_labels = dict(_meta(node).get("labels") or {})
            have_labels = dict(_meta(current).get("labels") or {})
            patch = {k: v for k, v in want_labels.items() if have_labels.get(k) != v}
            if patch:
                await self._api.patch_node_labels(self._node, patch)
            if (_without_heartbeats(current.get("status") or {}) != status
                    or now - self._reported >= self._report_interval):
                await self._api.update_node_status(self._node, self._heartbeat(status))
                self._reported = now
            self._published_node, self._registered = node, True
        except NodeAgentError as err:
            self._publish_failures += 1
            # the pass interval doubled per failure: 2, 4, 8... passes, up to status_interval
            delay = Backoff(self._interval * 2, self._status_interval).delay(self._publish_failures)
            self._publish_retry_at = now + delay
            if self._publish_failures == 1:
                logger.warning("node status not published node=%s api=%s err=%s (retrying with backoff)",
                               self._node, self._api.description, err)
            return
        self._published_again()

    def _published_again(self) -> None:
        """After an outage: say so once, and write without waiting from now on."""
        if self._publish_failures:
            logger.info("node status published again node=%s api=%s after=%d failures", self._node,
                        self._api.description, self._publish_failures)
            self._publish_failures, self._publish_retry_at = 0, float("-inf")

    def _heartbeat(self, status: Mapping[str, Any]) -> dict[str, Any]:
        stamp = rfc3339(self._clock.now())
        conditions = [{**c, "lastHeartbeatTime": stamp} for c in status.get("conditions") or []]
        return {**status, "conditions": conditions} if conditions else dict(status)

    # ------------------------------------------------------------------ pods

    async def _event(self, event: PodEvent) -> None:
        if event.type == SYNC:
            await self._reconcile(event)
            return
        await self._handle(event.object, deleted=event.type == DELETED)

    async def _reconcile(self, event: PodEvent) -> None:
        """A complete list: act on every pod, stop what the list no longer has."""
        present = set()
        self._objects.clear()
        for obj in event.items:
            meta = _meta(obj)
            present.add(str(meta.get("uid")))
            if MIRROR in (meta.get("annotations") or {}) and (obj.get("spec") or {}).get("nodeName") == self._node:
                self._mirrors.add(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            await self._handle(obj, deleted=False)
        for pod in self._pods.all_pods():
            if pod.source == "api" and pod.uid not in present:
                logger.info("pod deleted while the node did not watch pod=%s uid=%s", pod.key, pod.uid)
                await self._delete_local(pod)
        for uid in [u for u in self._terminating if u not in present]:
            del self._terminating[uid]
        self._pushed_generation = -1  # write every status again: the API may have missed some

    async def _handle(self, obj: Mapping[str, Any], *, deleted: bool) -> None:
        meta = _meta(obj)
        spec = obj.get("spec") or {}
        uid = str(meta.get("uid", ""))
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name", ""))
        key_name = f"{namespace}/{name}"
        if deleted:
            if str(_meta(self._objects.get(key_name) or {}).get("uid", "")) == uid:
                self._objects.pop(key_name, None)
        elif spec.get("nodeName") == self._node:
            self._objects[key_name] = obj
        if MIRROR in (meta.get("annotations") or {}):
            return
        local = self._pods.get_pod(namespace, name)
        if deleted:
            self._seen.pop(uid, None)
            self._pushed.pop(uid, None)
            self._pushed_from.pop(uid, None)
            self._terminating.pop(uid, None)
            self._refused.forget(uid)
            if local is not None and local.uid == uid:
                await self._delete_local(local)
            return
        if meta.get("deletionTimestamp"):
            if spec.get("nodeName") == self._node:
                await self._terminate(uid, namespace, name, local)
            return
        node_name = spec.get("nodeName") or ""
        if not node_name:
            if self._bind:
                await self._bind_here(namespace, name)
            return
        if node_name != self._node:
            return
        key = (meta.get("generation"), repr(meta.get("labels")), repr(meta.get("annotations")))
        if self._seen.get(uid) == key and local is not None and local.uid == uid:
            return
        if local is not None and local.uid != uid:
            await self._delete_local(local)  # same name, new object: the old one is gone
        try:
            pod = pod_from_manifest(obj, uid=uid, clock=self._clock)
            await self._pods.apply(pod, wait=False)  # its prepare runs in its pod worker
        except NodeAgentError as err:
            ref = ObjectRef("Pod", name, namespace, uid)
            self._recorder.warning(ref, "FailedSync", str(err))
            logger.warning("pod not run pod=%s/%s err=%s", namespace, name, err)
        self._seen[uid] = key

    async def _terminate(self, uid: str, namespace: str, name: str, local: Pod | None) -> None:
        """A pod of this node deleted with a grace period (deletionTimestamp set): kill its
        containers and release what it holds (the pod worker's termination, not awaited here);
        the status pass writes its terminal status, then deletes it from the API."""
        if uid in self._terminating:
            return
        self._terminating[uid] = (namespace, name)
        logger.info("pod deletion requested pod=%s/%s uid=%s", namespace, name, uid)
        if local is not None and local.uid == uid:
            await self._pods.kill(uid)

    async def _finish_terminated(self) -> None:
        """The status manager's final DELETE (canBeDeleted, then a delete with period 0 and the
        pod's uid as precondition): once the pod's terminal status is written to the API and the
        pod gave back everything it held. A refused delete is tried again on the next pass; the
        watch's DELETED forgets the pod here."""
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
                logger.info("terminated pod not deleted pod=%s/%s uid=%s err=%s", namespace, name, uid, err)
                continue
            logger.info("pod fully terminated and removed from the API pod=%s/%s uid=%s", namespace, name, uid)
            self._terminating.pop(uid, None)

    async def _bind_here(self, namespace: str, name: str) -> None:
        try:
            await self._api.bind_pod(namespace, name, self._node)
        except NodeAgentError as err:
            logger.info("bind skipped pod=%s err=%s", name, err)

    async def _delete_local(self, pod: Pod) -> None:
        with contextlib.suppress(NotFound):
            await self._pods.delete(pod.namespace, pod.name)

    # ------------------------------------------------------------------ status and mirrors

    async def _sync_mirrors_and_status(self) -> None:
        """Write the statuses that changed since the last pass (in table order: no pass sorts the
        node's pods) and keep the mirror pods; a failure leaves the generation for the next pass."""
        generation = self._pods.generation()
        if generation == self._pushed_generation and not self._refused.due():
            if self._terminating:
                await self._finish_terminated()
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
                failed |= not await self._ensure_mirror(pod)
            last = self._pushed_from.get(pod.uid)
            if last is not None and last[0] is pod and last[1] is status:
                continue
            node_status = status_to_json(pod, status)
            if self._pushed.get(pod.uid) == node_status:
                self._pushed_from[pod.uid] = (pod, status)
                self._refused.written(pod)  # what the API has: nothing left to retry
                continue
            if not self._refused.ready(pod.uid):
                continue  # refused before: its retry is due later (the pass that is due then writes it)
            changed.append((pod, status, node_status))
        failed |= not await self._write_statuses(changed)
        self._refused.keep_only(pod.uid for pod in self._pods.all_pods())
        for key in sorted(self._mirrors - static_keys):
            namespace, _, name = key.partition("/")
            try:
                await self._api.delete_pod(namespace, name)
            except NotFound:
                pass
            except NodeAgentError as err:
                failed = True
                logger.info("mirror pod not deleted pod=%s err=%s", key, err)
                continue
            self._mirrors.discard(key)
        if not failed:  # otherwise the next pass tries again
            self._pushed_generation = generation
        if self._terminating:
            await self._finish_terminated()

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
            elif isinstance(answer, ValidationError):
                self._refused.refused(pod, answer)  # not a failed pass: retried on its own backoff
            elif not isinstance(answer, NotFound):  # NotFound: deleted in the API, the watch brings it
                ok = False
                logger.info("pod status not written pod=%s err=%s", pod.key, answer)
        return ok

    async def _patch_one(self, namespace: str, name: str, uid: str,
                         status: Mapping[str, Any]) -> NodeAgentError | None:
        try:
            await self._api.patch_pod_status(namespace, name, uid, status, _NODE_OWNED, NODE_CONDITIONS)
        except NodeAgentError as err:
            return err
        return None

    async def _ensure_mirror(self, pod: Pod) -> bool:
        self._mirrors.add(pod.key)
        try:
            if pod.key in self._objects or await self._api.get_pod(pod.namespace, pod.name) is not None:
                return True
        except NodeAgentError as err:
            logger.info("mirror pod not checked pod=%s err=%s", pod.key, err)
            return False
        doc = pod_to_manifest(pod)
        meta = doc["metadata"]
        meta.pop("uid", None)
        meta.pop("creationTimestamp", None)
        meta.setdefault("annotations", {})[MIRROR] = pod.annotations.get("kubernetes.io/config.hash", pod.uid)
        doc.pop("status", None)
        try:
            await self._api.create_pod(doc)
        except NodeAgentError as err:
            logger.warning("mirror pod not created pod=%s err=%s", pod.key, err)
            return False
        return True
