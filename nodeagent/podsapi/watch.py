"""Fan-out of pod events to every open WatchPods stream, each with its own bounded queue.

Why bounded and dropping: the kubelet gives each watcher a 100-event channel and drops a
watcher that falls behind rather than slowing the node or the other watchers (its stream ends
with RESOURCE_EXHAUSTED "watch client channel closed"). Publishing never awaits. asyncio only,
no grpc: the service adapter turns a subscription into a stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from nodeagent.podsapi.model import WATCH_BUFFER, PodEvent, WatchDropped

logger = logging.getLogger(__name__)


class Subscription:
    """One watcher's queue; `next()` raises WatchDropped once the broadcaster dropped it."""

    def __init__(self, owner: Broadcaster, size: int) -> None:
        self._owner = owner
        self._queue: asyncio.Queue[PodEvent | None] = asyncio.Queue(size + 1)  # +1: the drop marker
        self._size = size
        self.dropped = False

    def offer(self, event: PodEvent) -> bool:
        """Queue an event; False (and the subscription marked dropped) when it is full."""
        if self.dropped:
            return False
        if self._queue.qsize() >= self._size:
            self.dropped = True
            self._queue.put_nowait(None)
            return False
        self._queue.put_nowait(event)
        return True

    async def next(self) -> PodEvent:
        event = await self._queue.get()
        if event is None:
            raise WatchDropped()
        return event

    def close(self) -> None:
        self._owner.unsubscribe(self)


class Broadcaster:
    def __init__(self, size: int = WATCH_BUFFER) -> None:
        self._size = size
        self._subs: list[Subscription] = []
        self.dropped_total = 0

    def subscribe(self) -> Subscription:
        sub = Subscription(self, self._size)
        self._subs.append(sub)
        logger.info("pods api watch opened watchers=%d", len(self._subs))
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)
            logger.info("pods api watch closed watchers=%d", len(self._subs))

    @property
    def watchers(self) -> int:
        return len(self._subs)

    def publish(self, events: Sequence[PodEvent]) -> None:
        for sub in list(self._subs):
            for event in events:
                if not sub.offer(event):
                    self.dropped_total += 1
                    logger.info("pods api watcher fell behind, dropped")
                    self.unsubscribe(sub)
                    break
