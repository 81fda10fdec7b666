"""The node's sync loop with the API: one watch, one lock, and the passes that drive the roles.

The kubelet's syncLoop (pkg/kubelet/kubelet.go: syncLoopIteration) for what crosses the node's
API port (nodeagent.nodeapi: the object store of this process or an API server on the network,
the same code either way). It owns the pod watch and runs, under one lock:
- the API pod source (podsource.py): every event of the watch;
- the status manager (status.py, which keeps the mirror pods of mirror.py first): a pass every
  `interval` (50 ms) writes what changed on the node side, so health changes reach the API within that;
- node registration and status (nodestatus.py) after each pass.
A failed pass is logged and retried, never ends the loop. With a shared ticker (full virtual
nodes) run() waits on the watch alone and a periodic pass starts only when something is due.

`flush()` handles everything already received, so the admin API can answer after the node
has acted (a deleted pod is gone from pod-resources when `delete` returns).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from nodeagent.nodeapi.ports import NodeAPI, PodEvent, PodWatch
from nodeagent.nodesync.mirror import MirrorPods
from nodeagent.nodesync.nodestatus import NODE_STATUS_REPORT_FREQUENCY, NODE_STATUS_UPDATE_FREQUENCY, NodeStatusUpdater
from nodeagent.nodesync.podsource import APIPodSource
from nodeagent.nodesync.status import StatusManager
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait
from nodeagent.util.ticker import Ticker

logger = logging.getLogger(__name__)


class NodeSync:
    """The roles of the node's side of the API, composed: the watch, the lock and the passes."""

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
        node_ips: Callable[[], tuple[str, ...]] = tuple,
        gate: Callable[[str], bool] | None = None,
    ) -> None:
        self._first_list_timeout = first_list_timeout
        self._node = node_name
        self._api = api
        self._clock = clock
        self._bind = bind_unscheduled
        self._interval = interval
        self._watch: PodWatch | None = None
        self._node_status = NodeStatusUpdater(
            node_name=node_name, api=api, node_object=node_object, clock=clock, interval=interval,
            status_interval=status_interval, report_interval=report_interval, node_inputs=node_inputs)
        self._mirrors = MirrorPods(api, self.pod_object, node_name, clock.now)
        self._status = StatusManager(api=api, pods=pods, mirrors=self._mirrors, recorder=recorder, clock=clock,
                                     node_ips=node_ips, gate=gate)
        self._source = APIPodSource(node_name=node_name, api=api, pods=pods, status=self._status,
                                    mirrors=self._mirrors, recorder=recorder, clock=clock,
                                    bind_unscheduled=bind_unscheduled)
        self._lock = asyncio.Lock()
        # A shared ticker (full virtual nodes): run() waits on the watch alone, the ticker's
        # check starts a pass (a task) only when something is due.
        self._ticker = ticker
        self._pass: asyncio.Task[None] | None = None

    @property
    def api(self) -> NodeAPI:
        return self._api

    def pod_object(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The API's pod as last received (for the DRA claim source: resourceClaimStatuses)."""
        return self._source.pod_object(namespace, name)

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
            await self._source.event(first)
            await self._status.sync()

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
                    await self._source.event(event)
                    while (more := watch.get_nowait()) is not None:
                        await self._source.event(more)
                await self._status.sync()
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
            await cancel_and_wait([self._pass], ignore_errors=True)  # a failed pass was logged where it ran

    def _due(self) -> bool:
        """Whether a periodic pass has work: statuses to write, or the Node to write or check."""
        return self._status.due() or self._node_status.due()

    def _tick(self) -> None:
        if (self._pass is None or self._pass.done()) and self._due():
            self._pass = asyncio.get_running_loop().create_task(self._periodic(), name=f"node-sync {self._node}")

    async def _periodic(self) -> None:
        try:
            async with self._lock:
                await self._status.sync()
            await self.publish_node()
        except Exception:  # the next tick tries again
            logger.exception("node sync pass failed node=%s", self._node)

    async def flush(self) -> None:
        """Handle every event received so far and write statuses; used by the admin API."""
        if self._watch is None:
            return
        async with self._lock:
            while (event := self._watch.get_nowait()) is not None:
                await self._source.event(event)
            await self._status.sync()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()

    async def publish_node(self) -> None:
        """Register or update the Node when due (nodestatus.py: NodeStatusUpdater.publish)."""
        await self._node_status.publish()
