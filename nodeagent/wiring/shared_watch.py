"""One store watch for all full virtual nodes, fanned out: pods by spec.nodeName, claim changes to all.

Exists because every store write is offered to every watch: a thousand nodes with a Pod watch and
a ResourceClaim watch each made every Lease renewal cost two thousand offers, and the loop spent
its time there (bench/nodes.py). Here the store has two watches whatever the node count; a Pod
event goes to the one node it names (a dict lookup), a burst of claim changes wakes every node
once. Each node's view keeps the PodWatch contract (nodeapi/ports.py): a SYNC of its pods first,
another after the shared watch fell behind and relisted.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

from nodeagent.errors import Unavailable
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodeapi.ports import ADDED, DELETED, MODIFIED, SYNC, PodEvent, PodWatch
from nodeagent.store import DELETED as STORE_DELETED
from nodeagent.store import RESYNC, ObjectStore, Watch
from nodeagent.util.tasks import cancel_and_wait


def _node_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("nodeName") or "")


class NodePods:
    """One node's pods from the shared watch (a PodWatch)."""

    def __init__(self, hub: SharedPods, node: str) -> None:
        self._hub = hub
        self.node = node
        self._events: deque[PodEvent] = deque()
        # who waits in next(): a future while waiting, not an asyncio.Event (860 bytes a node)
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    def push(self, event: PodEvent) -> None:
        if event.type == SYNC:
            self._events.clear()  # a relist replaces whatever was not read yet
        self._events.append(event)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def next(self) -> PodEvent:
        while not self._events:
            if self._closed:
                raise Unavailable("pod watch closed")
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._events.popleft()

    def get_nowait(self) -> PodEvent | None:
        return self._events.popleft() if self._events else None

    def close(self) -> None:
        self._closed = True
        self._wake()
        self._hub.forget(self)


class SharedPods:
    """The store's Pod watch, dispatched to the NodePods of the node each pod is bound to."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._nodes: dict[str, NodePods] = {}
        self._watch: Watch | None = None
        self._task: asyncio.Task[None] | None = None

    def watch(self, node: str) -> NodePods:
        if node in self._nodes:
            raise ValueError(f"node {node} already watches its pods")
        if self._watch is None:
            self._relist()
            self._task = asyncio.get_running_loop().create_task(self._pump(), name="shared pod watch")
        else:
            self._drain()  # everything before the list below is in it: no event twice, none lost
        view = NodePods(self, node)
        view.push(PodEvent(SYNC, items=[o for o in self._store.scan("Pod") if _node_of(o) == node]))
        self._nodes[node] = view
        return view

    def forget(self, view: NodePods) -> None:
        if self._nodes.get(view.node) is view:
            del self._nodes[view.node]

    def _relist(self) -> None:
        if self._watch is not None:
            self._watch.close()
        listed, self._watch = self._store.list_and_watch(("Pod",))
        by_node: dict[str, list[Mapping[str, Any]]] = {}
        for obj in listed.items:
            by_node.setdefault(_node_of(obj), []).append(obj)
        for node, view in self._nodes.items():
            view.push(PodEvent(SYNC, items=by_node.get(node, [])))

    def _dispatch(self, event_type: str, obj: Mapping[str, Any]) -> None:
        view = self._nodes.get(_node_of(obj))
        if view is None:
            return
        if event_type == STORE_DELETED:
            view.push(PodEvent(DELETED, obj))
        else:
            view.push(PodEvent(ADDED if event_type == ADDED else MODIFIED, obj))

    def _drain(self) -> None:
        while self._watch is not None and (raw := self._watch.get_nowait()) is not None:
            if raw.type == RESYNC:
                self._relist()
            else:
                self._dispatch(raw.type, raw.object)

    async def _pump(self) -> None:
        while True:
            assert self._watch is not None
            try:
                raw = await self._watch.__anext__()
            except StopAsyncIteration:
                self._relist()  # fell behind or the store ended the watch: list again
                continue
            if raw.type == RESYNC:
                self._relist()
                continue
            self._dispatch(raw.type, raw.object)
            self._drain()

    async def close(self) -> None:
        await cancel_and_wait([self._task])
        if self._watch is not None:
            self._watch.close()
        for view in list(self._nodes.values()):
            view.close()


class SharedClaimChanges:
    """The store's ResourceClaim watch; every subscriber gets one item per burst of changes."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._bursts = 0  # bursts of changes so far
        self._waiters: list[asyncio.Future[None]] = []  # subscribers waiting for the next burst
        self._task: asyncio.Task[None] | None = None

    async def changes(self) -> AsyncIterator[None]:
        """One item per burst since the previous item (bursts while the subscriber was busy: one)."""
        loop = asyncio.get_running_loop()
        if self._task is None:
            self._task = loop.create_task(self._pump(), name="shared claim watch")
        seen = self._bursts
        while True:
            while seen == self._bursts:
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiters.append(waiter)
                try:
                    await waiter
                finally:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
            seen = self._bursts
            yield None

    async def _pump(self) -> None:
        while True:
            watch = self._store.watch({"ResourceClaim"})
            try:
                async for _ in watch:
                    while watch.get_nowait() is not None:
                        pass  # one wake covers a burst of changes
                    self._bursts += 1
                    waiters, self._waiters = self._waiters, []
                    for waiter in waiters:
                        if not waiter.done():
                            waiter.set_result(None)
            finally:
                watch.close()

    async def close(self) -> None:
        await cancel_and_wait([self._task])


class SharedWatchAPI(InProcessAPI):
    """The in-process API client of the full virtual nodes: pods from the shared watch."""

    def __init__(self, base: InProcessAPI, pods: SharedPods) -> None:
        super().__init__(base.store, base._events)
        self._pods = pods

    # InProcessAPI names its own watch class as the result; the port (NodeAPI) asks for a PodWatch.
    def watch_pods(self, node_name: str, *, unscheduled: bool = False) -> PodWatch:  # type: ignore[override]
        if unscheduled:  # no control plane to bind pods: the node's own watch, with the unbound pods
            return super().watch_pods(node_name, unscheduled=True)
        return self._pods.watch(node_name)
