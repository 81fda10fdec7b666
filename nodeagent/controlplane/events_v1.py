"""client-go tools/events' recorder (events.k8s.io/v1) over the object store: the adapter.

eventseries.py decides (names, fields, series); this writes its decisions into a store
transaction and runs the broadcaster's two timers (refresh every 30 minutes, finish every 6)
on the injected clock, when the owner asks (`deadline` / `tick`, driven by the component loop).

Intended differences from upstream, with their reasons:
- The write goes into the caller's transaction (the scheduler's binding or status update),
  not through an asynchronous sink with 12 retries: the store either takes both or neither.
  A write that was rolled back leaves the cache believing the Event exists; its next repeat
  patches a series into an Event that is not there and so creates it (upstream's own path for
  a series whose Event expired).
- Under a clock that does not move (tests' fake clock), two events about one object at the
  same instant would get the same name, and upstream drops the second (AlreadyExists, "will not
  retry"); here the second name takes the next free nanosecond.
- A refresh or final series write the store refuses is logged and, at finish, forgotten all
  the same (upstream keeps it for the next finish when the error is retryable).
- The name's nanoseconds come from the clock's float seconds, so their last hex digits are
  rounded (about a microsecond's precision); the shape is upstream's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nodeagent.controlplane import eventseries
from nodeagent.controlplane.eventseries import SeriesCache, Write
from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore, Transaction
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"


class SeriesRecorder:
    """One reporting controller's events.k8s.io recorder (NewRecorder(scheme, controller)):
    reportingInstance is `<controller>-<host>` as upstream's os.Hostname() gives it."""

    def __init__(self, controller: str, host: str, clock: Clock, *, manager: str = "") -> None:
        self.controller = controller
        self.instance = f"{controller}-{host}"
        self.clock = clock
        self.manager = manager
        """The field manager of the timers' writes (in transactions of their own)."""
        self.cache = SeriesCache()
        start = clock.monotonic()
        self._next_refresh = start + eventseries.REFRESH_TIME
        self._next_finish = start + eventseries.FINISH_TIME

    def eventf(
        self, tx: Transaction, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str,
        *, related: Mapping[str, Any] | None = None,
    ) -> None:
        """Record an event about `regarding` (the object as the caller had it: its resourceVersion
        is part of the reference) in `tx`: created, a series started, or only counted."""
        now = self.clock.now()
        event = eventseries.make_event(regarding, type_=type_, reason=reason, action=action, note=note, now=now,
                                       controller=self.controller, instance=self.instance, related=related)
        write = self.cache.observe(event, now)
        if write is None:
            return
        if not write.patch:
            # the cache's entry shares this metadata: a later series patch goes to the name chosen here
            md, nanos = write.event["metadata"], round(now * 1e9)
            while tx.peek("Event", md["namespace"], md["name"]) is not None:  # a frozen clock only
                nanos += 1
                md["name"] = eventseries.event_name(event["involvedObject"].get("name", ""), nanos)
        _write(tx, write)

    def deadline(self) -> float | None:
        """When `tick` has work (monotonic seconds), None while the cache is empty."""
        if not len(self.cache):
            return None
        return min(self._next_refresh, self._next_finish)

    def tick(self, store: ObjectStore) -> None:
        """Run the refresh and finish timers that are due (wait.Until: the next run a period after)."""
        mono = self.clock.monotonic()
        writes: list[Write] = []
        if mono >= self._next_refresh:
            writes += self.cache.refresh()
            self._next_refresh = mono + eventseries.REFRESH_TIME
        if mono >= self._next_finish:
            writes += self.cache.finish(self.clock.now())
            self._next_finish = mono + eventseries.FINISH_TIME
        for write in writes:
            try:
                with store.transaction(manager=self.manager) as tx:
                    _write(tx, write)
            except NodeAgentError as err:
                md = write.event["metadata"]
                logger.warning("event series not written name=%s/%s err=%s", md["namespace"], md["name"], err)


def _write(tx: Transaction, write: Write) -> None:
    event = write.event
    md = event["metadata"]
    if write.patch:
        cur = tx.try_get("Event", md["namespace"], md["name"])
        if cur is not None:  # the strategic merge patch of the series alone
            cur["series"] = event["series"]
            tx.update(cur, copy=False)
            return
    tx.create(event)
