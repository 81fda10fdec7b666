"""The API pod source: every Pod bound to this node, run through the pod manager.

The kubelet's pkg/kubelet/config/apiserver.go (the watch of pods with fieldSelector
spec.nodeName) and config.go (merging its ADD/UPDATE/DELETE/SET into what the pod workers run).
Pods deleted from the API are stopped, including those deleted while the node was down or while
the API server was out of reach: each complete list (a SYNC) reconciles. A pod deleted with a
grace period (deletionTimestamp set) is killed and handed to the status manager, which deletes
it from the API once terminal and released. Mirror pods are the node's own copies of its static
pods, never run from here.

Self-binding has no kubelet counterpart: only in the explicit no-scheduler setup (`node.selfBinding`,
in process, the embedded scheduler off) the node binds unscheduled pods to itself, as the scheduler's
DefaultBinder would (pkg/scheduler/framework/plugins/defaultbinder). Never by default: the node cannot
tell whether another scheduler (the real kube-scheduler on the API server) serves a pod's schedulerName.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import NodeAgentError, NotFound
from nodeagent.nodeapi.ports import DELETED, SYNC, NodeAPI, PodEvent
from nodeagent.nodesync.mirror import MIRROR, MirrorPods
from nodeagent.nodesync.status import StatusManager
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.manager import PodManager
from nodeagent.util.clock import Clock
from nodeagent.util.yielding import CHUNK, pure_call

logger = logging.getLogger(__name__)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class APIPodSource:
    """The pod watch's events applied to the pod manager (and, deleted ones, to the status manager)."""

    def __init__(self, *, node_name: str, api: NodeAPI, pods: PodManager, status: StatusManager,
                 mirrors: MirrorPods, recorder: EventRecorder, clock: Clock, bind_unscheduled: bool) -> None:
        self._node = node_name
        self._api = api
        self._pods = pods
        self._status = status
        self._mirrors = mirrors
        self._recorder = recorder
        self._clock = clock
        self._bind = bind_unscheduled
        self._objects: dict[str, Mapping[str, Any]] = {}  # namespace/name -> the API's pod (of this node)
        self._seen: dict[str, tuple[Any, ...]] = {}  # uid -> what of the pod the node acted on

    def pod_object(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The API's pod as last received (for the DRA claim source: resourceClaimStatuses)."""
        return self._objects.get(f"{namespace}/{name}")

    async def event(self, event: PodEvent) -> None:
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
                self._mirrors.found(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            await self._handle(obj, deleted=False)
        for pod in self._pods.all_pods():
            if pod.source == "api" and pod.uid not in present:
                logger.info("pod deleted while the node did not watch pod=%s uid=%s", pod.key, pod.uid)
                await self._delete_local(pod)
        self._status.keep_terminating(present)
        self._status.write_all_again()

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
            self._status.forget(uid)
            if local is not None and local.uid == uid:
                await self._delete_local(local)
            return
        if meta.get("deletionTimestamp"):
            if spec.get("nodeName") == self._node:
                await self._terminate(uid, namespace, name, local)
            return
        node_name = spec.get("nodeName") or ""
        if not node_name:
            if self._bind and not spec.get("schedulingGates"):  # a gated pod waits, as for any scheduler
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
            pod = await self._parse(obj, uid, spec)
            await self._pods.apply(pod, wait=False)  # its prepare runs in its pod worker
        except NodeAgentError as err:
            ref = ObjectRef("Pod", name, namespace, uid)
            self._recorder.warning(ref, "FailedSync", str(err))
            logger.warning("pod not run pod=%s/%s err=%s", namespace, name, err)
        self._seen[uid] = key

    async def _parse(self, obj: Mapping[str, Any], uid: str, spec: Mapping[str, Any]) -> Pod:
        """The pod's model; a pod of more than util.yielding.CHUNK containers is parsed in a worker
        thread (pure Python, so the event loop gets the GIL back within the switch interval): its
        10,000 containers took the loop 0.15 s of CPU (issue 25). The manifest is the watch's object,
        which nothing changes."""
        count = sum(len(v) for v in (spec.get("containers"), spec.get("initContainers")) if isinstance(v, list))
        if count <= CHUNK:
            return pod_from_manifest(obj, uid=uid, clock=self._clock)
        return await pure_call(pod_from_manifest, obj, uid=uid, clock=self._clock)

    async def _terminate(self, uid: str, namespace: str, name: str, local: Pod | None) -> None:
        """A pod of this node deleted with a grace period (deletionTimestamp set): kill its
        containers and release what it holds (the pod worker's termination, not awaited here);
        the status pass writes its terminal status, then deletes it from the API."""
        if not self._status.terminating(uid, namespace, name):
            return
        logger.info("pod deletion requested pod=%s/%s uid=%s", namespace, name, uid)
        if local is not None and local.uid == uid:
            await self._pods.kill(uid)

    async def _bind_here(self, namespace: str, name: str) -> None:
        try:
            await self._api.bind_pod(namespace, name, self._node)
        except NodeAgentError as err:
            logger.info("bind skipped pod=%s err=%s", name, err)

    async def _delete_local(self, pod: Pod) -> None:
        with contextlib.suppress(NotFound):
            await self._pods.delete(pod.namespace, pod.name)
