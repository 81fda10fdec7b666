"""The node's side of the control plane: the kubelet's API pod source and status manager.

The object store holds the cluster's view (Pods, the Node). This bridge:
- publishes the local Node object (labels, capacity, allocatable, conditions);
- runs every Pod bound to this node (spec.nodeName) through the pod manager, and stops
  pods deleted from the store, including those deleted while the daemon was down;
- writes the pod manager's status back into the store, merged with what the control
  plane owns (PodScheduled, resourceClaimStatuses);
- keeps mirror pods in the store for static pods, as the kubelet does (the ones it keeps are
  tracked, found once at start, so no pass scans every pod of the store);
- when no scheduler runs (controlPlane.enabled false), binds unscheduled pods to itself;
- deletes the node's ResourceSlices for the DRA slice wiper (`delete_node_slices`, the
  kubelet's DeleteCollection by spec.nodeName and spec.driver).

`flush()` handles everything already committed, so the admin API can answer after the
node has acted (a deleted pod is gone from pod-resources when `delete` returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.clock import Clock
from nodeagent.errors import NodeAgentError, NotFound
from nodeagent.objects.pod import Pod
from nodeagent.objects.pod_manifest import pod_from_manifest, pod_to_manifest, status_to_json
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.manager import PodManager
from nodeagent.store import DELETED, RESYNC, ObjectStore, Watch, WatchEvent, clone

logger = logging.getLogger(__name__)

MIRROR = "kubernetes.io/config.mirror"
# Condition types the node owns; the rest (PodScheduled, ...) belong to the control plane.
NODE_CONDITIONS = frozenset(
    {"Initialized", "ContainersReady", "Ready", "PodReadyToStartContainers", "DisruptionTarget"}
)
NODE_STATUS_FIELDS = ("phase", "reason", "message", "qosClass", "startTime", "containerStatuses",
                      "initContainerStatuses")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def delete_node_slices(store: ObjectStore, node: str, driver: str | None = None) -> int:
    """The kubelet's ResourceSlice DeleteCollection (fieldSelector spec.nodeName=<node>, plus
    spec.driver=<driver> when given), in one store transaction; the number of slices deleted."""
    names = [
        str(_meta(obj).get("name"))
        for obj in store.scan("ResourceSlice")
        if (obj.get("spec") or {}).get("nodeName") == node
        and (driver is None or (obj.get("spec") or {}).get("driver") == driver)
    ]
    if not names:
        return 0
    with store.transaction() as tx:
        for name in names:
            with contextlib.suppress(NotFound):
                tx.delete("ResourceSlice", "", name)
    return len(names)


def merged_status(current: Mapping[str, Any], node_status: Mapping[str, Any]) -> dict[str, Any]:
    """The store's status with the node's fields and conditions laid over it."""
    out = {k: v for k, v in current.items() if k not in NODE_STATUS_FIELDS and k != "conditions"}
    out.update({k: v for k, v in node_status.items() if k != "conditions"})
    conditions = [c for c in current.get("conditions") or [] if c.get("type") not in NODE_CONDITIONS]
    conditions += [c for c in node_status.get("conditions") or [] if c.get("type") in NODE_CONDITIONS]
    if conditions:
        out["conditions"] = conditions
    return out


class NodeSync:
    def __init__(
        self,
        *,
        node_name: str,
        store: ObjectStore,
        pods: PodManager,
        node_object: Callable[[], Mapping[str, Any]],
        recorder: EventRecorder,
        clock: Clock,
        bind_unscheduled: bool,
        interval: float = 0.05,
    ) -> None:
        self._node = node_name
        self._store = store
        self._pods = pods
        self._node_object = node_object
        self._recorder = recorder
        self._clock = clock
        self._bind = bind_unscheduled
        self._interval = interval
        self._watch: Watch | None = None
        self._seen: dict[str, tuple[Any, ...]] = {}  # uid -> what of the pod the node acted on
        self._pushed: dict[str, Any] = {}  # uid -> last status written
        # uid -> the (immutable) pod and status last written: a pass converts only the pods whose
        # status changed, not every pod of the node every 50 ms
        self._pushed_from: dict[str, tuple[Pod, object]] = {}
        self._pushed_generation = -1
        self._published_node: Mapping[str, Any] | None = None
        self._mirrors: set[str] = set()  # namespace/name of the mirror pods this node keeps
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Publish the node, then reconcile the pod manager with the store (after a restart too)."""
        self._watch = self._store.watch({"Pod"})
        self.publish_node()
        async with self._lock:
            present = set()
            for obj in self._store.list("Pod"):
                meta = _meta(obj)
                present.add(str(meta.get("uid")))
                if MIRROR in (meta.get("annotations") or {}) and (obj.get("spec") or {}).get("nodeName") == self._node:
                    self._mirrors.add(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
                await self._handle(obj, deleted=False)
            for pod in self._pods.all_pods():
                if pod.source == "api" and pod.uid not in present:
                    logger.info("pod deleted while the node was down pod=%s uid=%s", pod.key, pod.uid)
                    await self._delete_local(pod)
            self._sync_mirrors_and_status()

    async def run(self) -> None:
        """Follow the store until cancelled. Every `interval` (50 ms) a cheap pass writes what
        changed on the node side (pod statuses when the pod manager's generation moved, the
        node's status when it differs), so health changes reach the store within that."""
        assert self._watch is not None, "start() first"
        while True:
            try:
                event = await asyncio.wait_for(self._watch.__anext__(), self._interval)
            except TimeoutError:
                event = None
            except StopAsyncIteration:
                # RESYNC or store closed: relist and watch again.
                self._watch = self._store.watch({"Pod"})
                await self.start()
                continue
            try:
                async with self._lock:
                    if event is not None:
                        await self._event(event)
                        while (more := self._watch.get_nowait()) is not None:
                            await self._event(more)
                    self._sync_mirrors_and_status()
                self.publish_node()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("node sync pass failed node=%s", self._node)

    async def flush(self) -> None:
        """Handle every event committed so far and write statuses; used by the admin API."""
        if self._watch is None:
            return
        async with self._lock:
            while (event := self._watch.get_nowait()) is not None:
                await self._event(event)
            self._sync_mirrors_and_status()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()

    # ------------------------------------------------------------------ node

    def publish_node(self) -> None:
        node = self._node_object()
        if node == self._published_node:
            return
        current = self._store.peek("Node", "", self._node)
        try:
            if current is None:
                self._store.create(node)
                self._published_node = node
                return
            if dict(_meta(current).get("labels") or {}) != dict(_meta(node).get("labels") or {}):
                updated = clone(current)
                updated["metadata"]["labels"] = dict(_meta(node).get("labels") or {})
                self._store.update(updated)
            if current.get("status") != node.get("status"):
                self._store.update_status({**clone(current), "status": node.get("status")})
            self._published_node = node
        except NodeAgentError as err:
            logger.warning("node status not published node=%s err=%s", self._node, err)

    # ------------------------------------------------------------------ pods

    async def _event(self, event: WatchEvent) -> None:
        if event.type == RESYNC:
            return
        await self._handle(event.object, deleted=event.type == DELETED)

    async def _handle(self, obj: Mapping[str, Any], *, deleted: bool) -> None:
        meta = _meta(obj)
        if MIRROR in (meta.get("annotations") or {}):
            return
        spec = obj.get("spec") or {}
        uid = str(meta.get("uid", ""))
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name", ""))
        local = self._pods.get_pod(namespace, name)
        if deleted or meta.get("deletionTimestamp"):
            self._seen.pop(uid, None)
            self._pushed.pop(uid, None)
            self._pushed_from.pop(uid, None)
            if local is not None and local.uid == uid:
                await self._delete_local(local)
            return
        node_name = spec.get("nodeName") or ""
        if not node_name:
            if self._bind:
                self._bind_here(obj)
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

    def _bind_here(self, obj: Mapping[str, Any]) -> None:
        bound = clone(obj)
        bound.setdefault("spec", {})["nodeName"] = self._node
        try:
            self._store.update(bound)
        except NodeAgentError as err:
            logger.info("bind skipped pod=%s err=%s", _meta(obj).get("name"), err)

    async def _delete_local(self, pod: Pod) -> None:
        with contextlib.suppress(NotFound):
            await self._pods.delete(pod.namespace, pod.name)

    # ------------------------------------------------------------------ status and mirrors

    def _sync_mirrors_and_status(self) -> None:
        generation = self._pods.generation()
        if generation == self._pushed_generation:
            return
        static_keys = set()
        for view in self._pods.list():
            pod, status = view.pod, view.status
            if pod.source == "file":
                static_keys.add(pod.key)
                self._ensure_mirror(pod)
            last = self._pushed_from.get(pod.uid)
            if last is not None and last[0] is pod and last[1] is status:
                continue
            node_status = status_to_json(pod, status)
            if self._pushed.get(pod.uid) == node_status:
                self._pushed_from[pod.uid] = (pod, status)
                continue
            current = self._store.peek("Pod", pod.namespace, pod.name)
            if current is None:
                continue
            if pod.source != "file" and str(_meta(current).get("uid")) != pod.uid:
                continue
            try:
                self._store.update_status({**clone(current), "status": merged_status(current.get("status") or {},
                                                                                      node_status)})
                self._pushed[pod.uid] = node_status
                self._pushed_from[pod.uid] = (pod, status)
            except NodeAgentError as err:
                logger.info("pod status not written pod=%s err=%s", pod.key, err)
        for key in sorted(self._mirrors - static_keys):
            namespace, _, name = key.partition("/")
            with contextlib.suppress(NotFound):
                self._store.delete("Pod", namespace, name)
            self._mirrors.discard(key)
        self._pushed_generation = generation

    def _ensure_mirror(self, pod: Pod) -> None:
        self._mirrors.add(pod.key)
        if self._store.peek("Pod", pod.namespace, pod.name) is not None:
            return
        doc = pod_to_manifest(pod)
        meta = doc["metadata"]
        meta.pop("uid", None)
        meta.pop("creationTimestamp", None)
        meta.setdefault("annotations", {})[MIRROR] = pod.annotations.get("kubernetes.io/config.hash", pod.uid)
        doc.pop("status", None)
        try:
            self._store.create(doc)
        except NodeAgentError as err:
            logger.warning("mirror pod not created pod=%s err=%s", pod.key, err)
