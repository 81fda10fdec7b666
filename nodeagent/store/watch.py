"""In-process watch: committed changes fanned out to subscribers, in resourceVersion order.

The store calls `WatchHub.publish` right after a commit while it still holds its write
lock, so events reach every subscriber in commit order whatever thread wrote. Each
subscriber has its own bounded buffer; a subscriber that falls `maxsize` events behind
gets one RESYNC event and its stream ends (like the API server's "410 Gone"), so a slow
consumer never blocks writers: it relists with `list_and_watch` and carries on. A short
history lets `watch(since=rv)` resume without a relist. No I/O; wakeups go through the
subscriber's event loop (call_soon_threadsafe when published from another thread).

The history is bounded by event count and by bytes: each event carries the length of the
JSON text the store wrote for it, and the oldest events go once either bound is passed, so
a churn of large objects cannot pin thousands of full copies (the API server's watch cache
is bounded the same way, by capacity; here the size bound is what keeps memory flat).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from nodeagent.errors import FailedPrecondition

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
RESYNC = "RESYNC"
"""The subscriber fell behind and missed events; relist. It is the stream's last event."""

DEFAULT_QUEUE_SIZE = 100_000
DEFAULT_HISTORY = 20_000
DEFAULT_HISTORY_BYTES = 32 * 1024 * 1024
"""The history's byte budget, counted in the committed objects' JSON text."""


class TooOldResourceVersion(FailedPrecondition):
    """`watch(since=rv)` asked for events the history no longer holds (the API server's 410 Gone)."""


@dataclass(frozen=True)
class WatchEvent:
    """One committed change. `object` is shared by every subscriber and must not be mutated:
    copy it (`nodeagent.store.clone`) before changing it for an update."""

    type: str
    object: Mapping[str, Any]
    resource_version: int
    size: int = 0
    """The object's JSON text length as committed: the history's byte estimate."""

    @property
    def kind(self) -> str:
        return str(self.object.get("kind", ""))

    @property
    def namespace(self) -> str:
        return str(self.object.get("metadata", {}).get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.object.get("metadata", {}).get("name") or "")


class Watch:
    """An async iterator of WatchEvents for a set of kinds (None: every kind).

    Registered when created, so nothing committed afterwards is missed even before the
    first `async for`. Use as `async with store.watch({"Pod"}) as w: async for ev in w: ...`
    or call `close()`; the iteration ends after close, after RESYNC, or when the store closes.
    """

    def __init__(
        self,
        hub: WatchHub,
        kinds: frozenset[str] | None,
        loop: asyncio.AbstractEventLoop,
        maxsize: int,
        start_version: int,
    ) -> None:
        self._hub = hub
        self.kinds = kinds
        self._only = next(iter(kinds)) if kinds is not None and len(kinds) == 1 else None
        self._loop = loop
        self._maxsize = maxsize
        self.start_version = start_version
        self._buffer: deque[WatchEvent] = deque()
        self._lock = threading.Lock()
        self._wake = asyncio.Event()
        self._ended = False
        self.overflowed = False

    # --- producer side (called by the hub under the store's lock) ---

    def _wants(self, event: WatchEvent) -> bool:
        return self.kinds is None or event.kind in self.kinds

    def _offer(self, events: list[WatchEvent], by_kind: Mapping[str, list[WatchEvent]] | None = None) -> bool:
        """Buffer the events this watch wants; False when it overflowed and must be dropped.

        `by_kind` (the same events grouped by kind, made once per publish by the hub) spares
        every subscriber a pass over events of kinds it does not watch."""
        if self.kinds is None:
            wanted = events
        elif by_kind is not None and self._only is not None:
            wanted = by_kind.get(self._only, [])
        elif by_kind is not None:
            # a commit's events are of one or two kinds: when this watch wants all of them or none
            # (the usual case), no pass over the events; else one in commit order
            hits = sum(1 for kind in by_kind if kind in self.kinds)
            if hits == len(by_kind):
                wanted = events
            elif not hits:
                return not self._ended
            else:
                wanted = [ev for ev in events if self._wants(ev)]
        else:
            wanted = [ev for ev in events if self._wants(ev)]
        if not wanted:
            # nothing to buffer: no lock (every commit offers itself to each of the ~40 watches kube-scheduler,
            # the components and the clients hold, most of another kind); _ended only ever turns True
            return not self._ended
        with self._lock:
            if self._ended:
                return False
            if len(self._buffer) + len(wanted) > self._maxsize:
                self._buffer.clear()
                self._buffer.append(WatchEvent(RESYNC, {}, 0))
                self._ended = True
                self.overflowed = True
            else:
                self._buffer.extend(wanted)
        self._signal()
        return not self._ended

    def _signal(self) -> None:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wake.set()
            return
        try:
            self._loop.call_soon_threadsafe(self._wake.set)
        except RuntimeError:  # the subscriber's loop is closed: nobody will read this watch again
            self._ended = True

    def _end(self) -> None:
        with self._lock:
            self._ended = True
        self._signal()

    # --- consumer side ---

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            with self._lock:
                if self._buffer:
                    return self._buffer.popleft()
                if self._ended:
                    raise StopAsyncIteration
                self._wake.clear()
            await self._wake.wait()

    def get_nowait(self) -> WatchEvent | None:
        """The next buffered event, or None; never waits."""
        with self._lock:
            return self._buffer.popleft() if self._buffer else None

    def drain(self, limit: int) -> list[WatchEvent]:
        """Up to `limit` buffered events at once (one lock for a whole batch); never waits."""
        with self._lock:
            n = min(limit, len(self._buffer))
            return [self._buffer.popleft() for _ in range(n)]

    def pending(self) -> int:
        with self._lock:
            return len(self._buffer)

    def close(self) -> None:
        """Stop receiving; iteration ends once the buffered events are read."""
        self._hub.unsubscribe(self)
        self._end()

    async def __aenter__(self) -> Watch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class WatchHub:
    """Subscribers plus a bounded history of recent events, for resuming from a resourceVersion."""

    def __init__(
        self, start_version: int, history: int = DEFAULT_HISTORY, history_bytes: int = DEFAULT_HISTORY_BYTES
    ) -> None:
        self._watches: list[Watch] = []
        self._history: deque[WatchEvent] = deque()
        self._history_size = history
        self._history_budget = history_bytes
        self._history_bytes = 0
        self._forgotten_upto = start_version
        """Every event with a resourceVersion above this is still in the history."""
        self._lock = threading.Lock()

    def subscribe(
        self,
        kinds: Collection[str] | None,
        *,
        current: int,
        since: int | None,
        maxsize: int,
    ) -> Watch:
        """A new watch. With `since`, the history after it is replayed first (or TooOldResourceVersion)."""
        loop = asyncio.get_running_loop()
        kindset = None if kinds is None else frozenset(kinds)
        with self._lock:
            watch = Watch(self, kindset, loop, maxsize, current if since is None else since)
            if since is not None and since != current:
                if since > current:
                    raise TooOldResourceVersion(f"resourceVersion {since} is newer than the store's {current}")
                if since < self._forgotten_upto:
                    raise TooOldResourceVersion(f"too old resource version: {since} ({self._forgotten_upto})")
                replay = [ev for ev in self._history if ev.resource_version > since]
                if not watch._offer(replay):
                    return watch
            self._watches.append(watch)
        return watch

    def states_at(self, kind: str, since: int) -> dict[tuple[str, str], Mapping[str, Any] | None]:
        """Each object of `kind` changed after `since`, as it was at `since` (None: it did not exist),
        for a watch resumed there: what a selector matched then decides whether a change is sent as
        ADDED, MODIFIED or DELETED (the API server's watch cache keeps each event's previous object).
        Raises TooOldResourceVersion when the history no longer holds an object's state at `since`
        (changed after it, last written before the history's start): the watcher relists."""
        with self._lock:
            if since < self._forgotten_upto:
                raise TooOldResourceVersion(f"too old resource version: {since} ({self._forgotten_upto})")
            # newest first: the events after `since` (the replay: each key's earliest wins), then back
            # only as far as the last earlier write of each key modified after it
            first: dict[tuple[str, str], WatchEvent] = {}
            before: dict[tuple[str, str], WatchEvent] = {}
            pending: set[tuple[str, str]] | None = None
            for ev in reversed(self._history):
                if ev.resource_version > since:
                    if ev.kind == kind:
                        first[(ev.namespace, ev.name)] = ev
                    continue
                if pending is None:
                    pending = {k for k, e in first.items() if e.type == MODIFIED}
                if not pending:
                    break
                key = (ev.namespace, ev.name)
                if ev.kind == kind and key in pending:
                    before[key] = ev
                    pending.discard(key)
            out: dict[tuple[str, str], Mapping[str, Any] | None] = {}
            for key, ev in first.items():
                if ev.type == ADDED:
                    out[key] = None
                elif ev.type == DELETED:
                    out[key] = ev.object  # the deleted object as it last was (its resourceVersion aside)
                elif key in before:
                    out[key] = None if before[key].type == DELETED else before[key].object
                else:
                    raise TooOldResourceVersion(f"too old resource version: {since} ({self._forgotten_upto})")
            return out

    def unsubscribe(self, watch: Watch) -> None:
        with self._lock:
            if watch in self._watches:
                self._watches.remove(watch)

    def publish(self, events: list[WatchEvent]) -> None:
        if not events:
            return
        with self._lock:
            if self._history_size > 0:
                self._history.extend(events)
                self._history_bytes += sum(ev.size for ev in events)
                while self._history and (
                    len(self._history) > self._history_size or self._history_bytes > self._history_budget
                ):
                    old = self._history.popleft()
                    self._history_bytes -= old.size
                    self._forgotten_upto = old.resource_version
            else:
                self._forgotten_upto = events[-1].resource_version
            by_kind: dict[str, list[WatchEvent]] = {}
            for ev in events:
                by_kind.setdefault(ev.kind, []).append(ev)
            dead = [w for w in self._watches if not w._offer(events, by_kind)]
            for w in dead:
                self._watches.remove(w)

    def subscribers(self) -> int:
        with self._lock:
            return len(self._watches)

    def history_usage(self) -> tuple[int, int]:
        """(events, estimated bytes) the history holds now."""
        with self._lock:
            return len(self._history), self._history_bytes

    def close_all(self) -> None:
        with self._lock:
            watches, self._watches = self._watches, []
        for w in watches:
            w._end()
