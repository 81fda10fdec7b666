"""The node's API port over the embedded object store, in this process (the default).

Exists so a one-process nodeagent pays nothing for the port: reads are the store's shared
committed objects (no copy, no JSON), writes are store transactions, the pod watch is the
store's watch filtered by spec.nodeName, events are batched one transaction per loop turn
(wiring.event_poster's EventPoster, handed in as `events`). What the API server would do
for a patch (merge the node's status fields over the control plane's) is done here.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodeagent.errors import NodeAgentError, NotFound, Unavailable
from nodeagent.nodeapi.lease import parse_time
from nodeagent.nodeapi.ports import ADDED, DELETED, LEASE_NAMESPACE, MODIFIED, SYNC, PodEvent
from nodeagent.objects import resourcequota
from nodeagent.objects.node_admission import admit_new_node, node_defaults
from nodeagent.objects.pod.admission import forbidden
from nodeagent.objects.pod.output import merged_status as merged_status  # the status manager's patch, applied
from nodeagent.objects.pod_create_admission import admit_new_pod
from nodeagent.pods.events import Event
from nodeagent.store import DELETED as STORE_DELETED
from nodeagent.store import RESYNC, ObjectStore, Watch
from nodeagent.store.kinds import Obj
from nodeagent.store.meta import rfc3339
from nodeagent.util.yielding import CHUNK

MANAGER = "kubelet"
"""The field manager of the node's writes: what kube-apiserver records for the kubelet's requests
(its user agent's first word). ResourceSlices are the driver's, not the kubelet's: left unrecorded."""

StatusPatch = tuple[str, str, str, Mapping[str, Any]]
"""One pod's status patch: namespace, name, uid ("" for any) and the node's status."""


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


class StorePodWatch:
    """The store's Pod watch, filtered to one node (or to any node with `node` None): a SYNC
    first, another after a RESYNC. With `kind` another kind, unfiltered (watch_claims)."""

    def __init__(self, store: ObjectStore, node: str | None, unscheduled: bool, kind: str = "Pod") -> None:
        self._store = store
        self._node = node
        self._unscheduled = unscheduled
        self._kind = kind
        self._watch: Watch | None = None
        self._pending: PodEvent | None = None
        self._closed = False
        self._relist()

    def _wanted(self, obj: Mapping[str, Any]) -> bool:
        if self._kind != "Pod":
            return True
        node = (obj.get("spec") or {}).get("nodeName") or ""
        if self._node is None:
            return bool(node)
        return node == self._node or (self._unscheduled and not node)

    def _relist(self) -> None:
        if self._watch is not None:
            self._watch.close()
        listed, self._watch = self._store.list_and_watch((self._kind,))
        self._pending = PodEvent(SYNC, items=[o for o in listed.items if self._wanted(o)])

    def _convert(self, event_type: str, obj: Mapping[str, Any]) -> PodEvent | None:
        if not self._wanted(obj):
            # A pod that leaves the node's selection (never for spec.nodeName, immutable once set)
            return None
        if event_type == STORE_DELETED:
            return PodEvent(DELETED, obj)
        return PodEvent(ADDED if event_type == ADDED else MODIFIED, obj)

    async def next(self) -> PodEvent:
        while True:
            if self._pending is not None:
                event, self._pending = self._pending, None
                return event
            if self._closed or self._watch is None:
                raise Unavailable("pod watch closed")
            try:
                raw = await self._watch.__anext__()
            except StopAsyncIteration:
                if self._closed:
                    raise Unavailable("pod watch closed") from None
                self._relist()  # fell behind (RESYNC) or the store ended the watch: list again
                continue
            if raw.type == RESYNC:
                self._relist()
                continue
            converted = self._convert(raw.type, raw.object)
            if converted is not None:
                return converted

    def get_nowait(self) -> PodEvent | None:
        if self._pending is not None:
            event, self._pending = self._pending, None
            return event
        while self._watch is not None and (raw := self._watch.get_nowait()) is not None:
            if raw.type == RESYNC:
                self._relist()
                return self.get_nowait()
            converted = self._convert(raw.type, raw.object)
            if converted is not None:
                return converted
        return None

    def close(self) -> None:
        self._closed = True
        if self._watch is not None:
            self._watch.close()


class _Refused(Exception):
    """The store refused a write of a batch made without savepoints: the batch is made again with them."""


class InProcessAPI:
    """NodeAPI over the ObjectStore of this process."""

    def __init__(self, store: ObjectStore, events: Callable[[Event], None] | None = None) -> None:
        self.store = store
        self._events = events

    @property
    def description(self) -> str:
        return "in process"

    # ------------------------------------------------------------------ Node

    async def get_node(self, name: str) -> Mapping[str, Any] | None:
        return self.store.peek("Node", "", name)

    async def create_node(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        """The kubelet's registration, through kube-apiserver's decoding defaults and TaintNodesByCondition
        (the new Node is tainted not-ready until the node lifecycle controller sees it Ready)."""
        with self.store.transaction(savepoints=False, manager=MANAGER) as tx:
            doc = copy.deepcopy(dict(node))
            node_defaults(doc)
            doc = tx.record_fields(None, doc)  # the create's managedFields: before admission
            admit_new_node(doc)
            return tx.create(doc)

    async def patch_node_labels(self, name: str, labels: Mapping[str, str | None]) -> None:
        current = self.store.get("Node", "", name)
        merged = dict(_meta(current).get("labels") or {})
        for key, value in labels.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        current["metadata"]["labels"] = merged
        self.store.update(current, manager=MANAGER)

    async def update_node_status(self, name: str, status: Mapping[str, Any]) -> None:
        current = self.store.peek("Node", "", name)
        if current is None:
            raise NotFound(f'nodes "{name}" not found')
        # no copy here: the store copies what it is given (and answers a copy, unused)
        status_write = functools.partial(self.store.update_status, manager=MANAGER)
        await self._write(status_write, {**current, "status": dict(status)})

    # ------------------------------------------------------------------ Lease

    async def get_lease(self, name: str) -> Mapping[str, Any] | None:
        return self.store.peek("Lease", LEASE_NAMESPACE, name)

    async def create_lease(self, lease: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.store.create(lease, manager=MANAGER)

    async def update_lease(self, lease: Mapping[str, Any]) -> Mapping[str, Any]:
        return await self._write(functools.partial(self.store.update, manager=MANAGER), lease)

    async def _write(self, write: Callable[[Mapping[str, Any]], Obj], obj: Mapping[str, Any]) -> Obj:
        """A periodic small write (Lease renewal, Node status): from a worker thread when another
        thread's transaction holds the store (store.busy), so the loop does not wait for it: the
        lease renewal waited a second and more behind a huge pod's write (issue 25)."""
        if self.store.busy:
            return await asyncio.to_thread(write, obj)
        return write(obj)

    # ------------------------------------------------------------------ Pods

    def watch_pods(self, node_name: str, *, unscheduled: bool = False) -> StorePodWatch:
        return StorePodWatch(self.store, node_name, unscheduled)

    async def get_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.store.peek("Pod", namespace, name)

    async def patch_pod_status(self, namespace: str, name: str, uid: str, status: Mapping[str, Any],
                               node_owned: frozenset[str], node_conditions: frozenset[str]) -> None:
        doc = self._patched(namespace, name, uid, status, node_owned, node_conditions)
        if doc is not None:
            self.store.update_status(doc, manager=MANAGER)

    async def patch_pod_statuses(self, patches: Sequence[StatusPatch], node_owned: frozenset[str],
                                 node_conditions: frozenset[str]) -> list[NodeAgentError | None]:
        """Several pods' status patches in one store transaction: one commit and one watch
        publish for a whole status pass instead of one per pod. Each patch is atomic by itself
        (the transaction's savepoint); a pod that is gone or refused gets its error in the answer
        (same order as `patches`) and the others are written. A failed commit raises: none was.
        The common case, every write accepted, runs without a savepoint per write; a refused
        write rolls that attempt back and the batch is written again with them.

        Statuses of more than util.yielding.CHUNK containers in all are written in a worker thread
        (the store is thread-safe, as the API server's big writes use it): the status of a pod of
        10,000 containers held the event loop in its merge, validation and the Node authorizer's
        index (issue 25)."""
        if sum(_containers_in(status) for *_, status in patches) > CHUNK:
            return await asyncio.to_thread(self._patch_statuses_once, patches, node_owned, node_conditions)
        return self._patch_statuses_once(patches, node_owned, node_conditions)

    def _patch_statuses_once(self, patches: Sequence[StatusPatch], node_owned: frozenset[str],
                             node_conditions: frozenset[str]) -> list[NodeAgentError | None]:
        try:
            return self._patch_statuses(patches, node_owned, node_conditions, savepoints=False)
        except _Refused:
            return self._patch_statuses(patches, node_owned, node_conditions, savepoints=True)

    def _patch_statuses(self, patches: Sequence[StatusPatch], node_owned: frozenset[str],
                        node_conditions: frozenset[str], *, savepoints: bool) -> list[NodeAgentError | None]:
        answers: list[NodeAgentError | None] = []
        with self.store.transaction(savepoints=savepoints, manager=MANAGER) as tx:
            for namespace, name, uid, status in patches:
                try:  # a gone pod is answered before anything is written
                    doc = self._patched(namespace, name, uid, status, node_owned, node_conditions)
                except NodeAgentError as err:
                    answers.append(err)
                    continue
                if doc is not None:
                    try:
                        tx.update_status(doc, copy=False)
                    except NodeAgentError as err:
                        if not savepoints:
                            raise _Refused from err
                        answers.append(err)
                        continue
                answers.append(None)
        return answers

    def _patched(self, namespace: str, name: str, uid: str, status: Mapping[str, Any],
                 node_owned: frozenset[str], node_conditions: frozenset[str]) -> dict[str, Any] | None:
        """The pod with the node's status merged in, or None when that changes nothing."""
        current = self.store.peek("Pod", namespace, name)
        if current is None or (uid and str(_meta(current).get("uid")) != uid):
            raise NotFound(f'pods "{name}" not found')
        merged = merged_status(current.get("status") or {}, status, node_owned, node_conditions)
        if merged == current.get("status"):
            return None  # the API server's patch of an unchanged status writes nothing either
        # no copy here: the store copies what it is given (a shallow dict keeps `current` intact)
        return {**current, "status": merged}

    async def create_pod(self, pod: Mapping[str, Any]) -> None:
        """A mirror pod's create, through the API server's default mutating admission as the
        kubelet's create meets it (a static pod's priorityClassName resolved, default tolerations),
        and its ResourceQuota admission (a refusal is the kubelet's failed mirror pod create)."""
        with self.store.transaction(savepoints=False, manager=MANAGER) as tx:
            # the create's managedFields are the pod as sent, before admission (as kube-apiserver's handler)
            doc = tx.record_fields(None, copy.deepcopy(dict(pod)))
            admit_new_pod(doc, tx.peek, lambda: tx.list("PriorityClass"), tx.generate_name, strict=False)
            try:  # kube-apiserver's ResourceQuota admission meets the kubelet's mirror pods too
                resourcequota.admit_create(tx, "", "pods", doc, self.store.clock.now())
            except resourcequota.QuotaRefused as err:
                raise forbidden(doc, str(err)) from None
            tx.create(doc)

    async def delete_pod(self, namespace: str, name: str, uid: str | None = None,
                         grace_period: int | None = None) -> None:
        """The store's delete, which is a delete with period 0 (a pod in its grace period goes).
        Asked for with period 0, a pod in its grace period is first marked with no grace left,
        in the same transaction, as kube-apiserver writes that update before it deletes (the
        DELETED event shows deletionGracePeriodSeconds 0).

        A pod of more than util.yielding.CHUNK containers is deleted in a worker thread, as its
        status patches are: the write of its multi-megabyte row and the commit held the event loop
        a second and more (issue 25)."""
        current = self.store.peek("Pod", namespace, name)
        if uid is not None and (current is None or str(_meta(current).get("uid")) != uid):
            raise NotFound(f'pods "{name}" not found')
        if current is not None and _containers_in(current.get("spec") or {}, _SPEC_CONTAINERS) > CHUNK:
            await asyncio.to_thread(self._delete_pod, namespace, name, current, grace_period)
            return
        self._delete_pod(namespace, name, current, grace_period)

    def _delete_pod(self, namespace: str, name: str, current: Mapping[str, Any] | None,
                    grace_period: int | None) -> None:
        md = _meta(current or {})
        pending = md.get("deletionGracePeriodSeconds")
        stamp = parse_time(md.get("deletionTimestamp"))
        if grace_period == 0 and pending and stamp is not None:
            with self.store.transaction() as tx:  # neither answer is read: no copies of a big pod
                tx.mark_deleting("Pod", namespace, name, deletion_timestamp=rfc3339(stamp - int(pending)),
                                 grace_period=0, copy=False)
                tx.delete("Pod", namespace, name, copy=False)
            return
        self.store.delete("Pod", namespace, name, copy=False)

    async def bind_pod(self, namespace: str, name: str, node_name: str) -> None:
        """Self-binding's write: what a scheduler's DefaultBinder gets from pods/binding, spec.nodeName
        and PodScheduled=True in one write (status.nominatedNodeName cleared), so a self-bound pod
        reads as any scheduled pod does."""
        current = self.store.get("Pod", namespace, name)
        current.setdefault("spec", {})["nodeName"] = node_name
        status = current.setdefault("status", {})
        status.pop("nominatedNodeName", None)
        status["conditions"] = [*(c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"),
                                {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                 "lastTransitionTime": rfc3339(self.store.clock.now())}]
        with self.store.transaction() as tx:
            tx.update(current, with_status=True, keep_generation=True)

    # ------------------------------------------------------------------ events, DRA

    def post_event(self, event: Event) -> None:
        if self._events is not None:
            self._events(event)

    async def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.store.peek("ResourceClaim", namespace, name)

    async def delete_node_slices(self, node_name: str, driver: str | None = None) -> int:
        return delete_node_slices(self.store, node_name, driver)

    def watch_claims(self) -> StorePodWatch:
        return StorePodWatch(self.store, None, False, kind="ResourceClaim")

    # ------------------------------------------------------------------ many nodes in one process

    def watch_bound_pods(self) -> StorePodWatch:
        return StorePodWatch(self.store, None, False)

    async def list_nodes(self, label_selector: str) -> list[Mapping[str, Any]]:
        return list(self.store.scan("Node", selector=label_selector))

    async def list_slices(self, label_selector: str) -> list[Mapping[str, Any]]:
        return list(self.store.scan("ResourceSlice", selector=label_selector))

    async def put_slice(self, resource_slice: Mapping[str, Any], field_manager: str) -> None:
        if _meta(resource_slice).get("resourceVersion"):
            self.store.update(resource_slice, manager=field_manager)
        else:
            self.store.create(resource_slice, manager=field_manager)

    async def delete_slice(self, name: str) -> None:
        self.store.delete("ResourceSlice", "", name)

    async def close(self) -> None:
        await asyncio.sleep(0)


_STATUS_CONTAINERS = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
_SPEC_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")


def _containers_in(part: Mapping[str, Any], keys: tuple[str, ...] = _STATUS_CONTAINERS) -> int:
    """How many container statuses a pod status carries (the size of its patch's work), or with
    `keys` _SPEC_CONTAINERS how many containers its spec has."""
    return sum(len(v) for k in keys if isinstance(v := part.get(k), list))
