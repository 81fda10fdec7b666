"""The node's pods as the Pods API serves them: current, diffed into events, gated on sync.

Why polling a generation: the pod manager bumps one counter on every durable change (the
node sync follows it the same way), so the source re-reads the pods only when it moved and
diffs them (model.diff) into the watchers' events. Reads refresh first, so ListPods and GetPod
are never older than the last committed change, and opening a watch takes the list and the
subscription in one step of the event loop: no event is lost or repeated between them.
The source reaches the pod manager only through the `PodsView` port and the clock passed in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from nodeagent.podsapi import model
from nodeagent.podsapi.model import Doc
from nodeagent.podsapi.watch import Broadcaster, Subscription
from nodeagent.util.clock import Clock
from nodeagent.util.ticker import Ticker

logger = logging.getLogger(__name__)


class PodsView(Protocol):
    """The node's pods: a change counter and the pods as v1 Pod JSON, by uid."""

    def generation(self) -> int: ...

    def pods(self) -> Mapping[str, Doc]: ...


class PodsSource:
    DEFAULT_INTERVAL = 0.05  # how often run() looks for changes to publish

    def __init__(
        self,
        view: PodsView,
        *,
        synced: Callable[[], bool],
        clock: Clock,
        broadcaster: Broadcaster | None = None,
        interval: float = DEFAULT_INTERVAL,
        ticker: Ticker | None = None,
    ) -> None:
        self._view = view
        self._synced = synced
        self._clock = clock
        self._interval = interval
        self._ticker = ticker  # shared by many nodes: no timer of this source's own
        self.broadcaster = broadcaster or Broadcaster()
        self._generation: int | None = None
        self._pods: Mapping[str, Doc] = {}

    def check_synced(self) -> None:
        """Raise NotSynced (FAILED_PRECONDITION) until the node has synced its pods."""
        if not self._synced():
            raise model.NotSynced()

    def refresh(self) -> None:
        """Re-read the pods if the pod manager changed; publish what changed."""
        generation = self._view.generation()
        if generation == self._generation:
            return
        pods = dict(self._view.pods())
        events = model.diff(self._pods, pods)
        self._pods, self._generation = pods, generation
        if events:
            self.broadcaster.publish(events)

    def pods(self) -> list[Doc]:
        self.check_synced()
        self.refresh()
        return [self._pods[uid] for uid in sorted(self._pods)]

    def get(self, uid: str) -> Doc:
        self.check_synced()
        self.refresh()
        pod = self._pods.get(uid)
        if pod is None:
            raise model.pod_not_found(uid)
        return pod

    def watch(self) -> tuple[list[Doc], Subscription]:
        """The pods now (for the ADDED events) and a subscription to every change after them."""
        pods = self.pods()
        return pods, self.broadcaster.subscribe()

    async def run(self) -> None:
        """Publish changes within `interval` (or the ticker's) of their commit, until cancelled."""
        if self._ticker is not None:
            remove = self._ticker.add(self._tick)
            try:
                await asyncio.get_running_loop().create_future()  # until cancelled
            finally:
                remove()
        while True:
            await self._clock.sleep(self._interval)
            self._tick()

    def _tick(self) -> None:
        if not self._synced() or not self.broadcaster.watchers:
            return
        try:
            self.refresh()
        except Exception:
            logger.exception("pods api refresh failed")
