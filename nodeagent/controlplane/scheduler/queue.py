"""The scheduling queue: active, backoff and unschedulable pods, as kube-scheduler's PriorityQueue
(pkg/scheduler/backend/queue, v1.37.2).

One responsibility: order the work. A new pod goes to `active` (highest priority first, then
first come). A pod that failed as unschedulable waits in `unschedulable` with the cluster events
that may help it (hints.py, upstream's queueing hints of the plugins that rejected it): only such
an event (`move_unschedulable(event=...)`), an update of one of its own scheduling properties
(`update`), or `unschedulable_timeout` (podMaxInUnschedulablePodsDuration, 5 min) without a move
brings it back. It then sits in `backoff` until its backoff has passed since its last attempt:
initial * 2^(n-1), capped (podInitialBackoffSeconds 1, podMaxBackoffSeconds 10), n its count of
unschedulable attempts, or of consecutive errors after an error. When nothing is active, the
earliest pod backing off after an unschedulable attempt is tried at once (SchedulerPopFromBackoffQ,
on by default since 1.33); one backing off after an error waits its backoff out. Pods waiting for
something outside the scheduler (their claims to be created) are `gated` and only come back when a
pod or claim event names them. Pure: time is passed in (monotonic seconds).

Intended differences: upstream checks the 5-minute flush every 30 s (a pod comes back 5:00 to
5:30 after its attempt) and aligns backoff ends to whole seconds; here the flush and the backoff
end are deadlines of their own, exact.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from nodeagent.util.backoff import Backoff

Key = tuple[str, str]

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"


@dataclass
class _Info:
    attempts: int = 0
    last_attempt: float = 0.0
    first_seen: float = 0.0
    where: str = ""
    parked: float | None = None  # gated until this time at the latest (park)
    unschedulable: int = 0  # unschedulable attempts (upstream's UnschedulableCount)
    errors: int = 0  # consecutive attempts that ended in an error (ConsecutiveErrorsCount)
    hints: frozenset[str] | None = None  # the events that may help an unschedulable pod; None: any
    until: float = 0.0  # the end of its backoff, while in backoff


class SchedulingQueue:
    def __init__(self, initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 unschedulable_timeout: float = 300.0) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._delays = Backoff(initial_backoff, max_backoff)
        self.unschedulable_timeout = unschedulable_timeout
        self._info: dict[Key, _Info] = {}
        self._unschedulable: set[Key] = set()
        """A superset of the unschedulable pods: a cluster event (one per binding, too) costs nothing
        while no pod waits for one."""
        self._active: list[tuple[int, int, Key]] = []
        self._backoff: list[tuple[float, int, Key]] = []
        self._seq = itertools.count()

    def __contains__(self, key: object) -> bool:
        return key in self._info

    def info(self, key: Key) -> _Info | None:
        return self._info.get(key)

    def counts(self) -> dict[str, int]:
        out = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
        for info in self._info.values():
            if info.where:
                out[info.where] += 1
        return out

    def backoff_until(self, info: _Info) -> float:
        """getBackoffTime: the last attempt plus the backoff of its count (consecutive errors after
        an error, else unschedulable attempts); 0 before any attempt."""
        count = info.errors or info.unschedulable
        if count == 0:
            return 0.0
        return info.last_attempt + self._delays.delay(count)

    def add(self, key: Key, now: float, priority: int = 0) -> None:
        """A new or updated pod: to active, unless it is backing off (then to backoff)."""
        info = self._info.get(key)
        if info is None:
            info = self._info[key] = _Info(first_seen=now)
        if info.where in (ACTIVE, BACKOFF):
            return
        self._activate(key, info, now, priority)

    def _activate(self, key: Key, info: _Info, now: float, priority: int = 0) -> None:
        until = self.backoff_until(info)
        if until > now:
            info.where = BACKOFF
            info.until = until
            heapq.heappush(self._backoff, (until, next(self._seq), key))
        else:
            info.where = ACTIVE
            heapq.heappush(self._active, (-priority, next(self._seq), key))

    def gate(self, key: Key, now: float) -> None:
        """Waiting for something an event will announce (its claims); not retried on a timer."""
        info = self._info.get(key)
        if info is None:
            info = self._info[key] = _Info(first_seen=now)
        info.where = GATED

    def park(self, key: Key, now: float, until: float) -> None:
        """Gated, but back at `until` at the latest without an event (PreBind waiting for the
        binding conditions of a pod's devices until its binding timeout)."""
        self.gate(key, now)
        info = self._info[key]
        info.parked = until
        heapq.heappush(self._backoff, (until, next(self._seq), key))

    def _due(self, info: _Info, until: float) -> bool:
        return (info.where == BACKOFF and info.until == until) or (info.where == GATED and info.parked == until)

    def move_unschedulable(self, now: float, keys: object = None, event: str | None = None) -> int:
        """A cluster event: the unschedulable pods (all, or those in `keys`) it may help go to
        backoff/active; `event` None helps every one (a wildcard event)."""
        moved = 0
        if not self._unschedulable:
            return moved
        for key, info in self._info.items():
            if (info.where == UNSCHEDULABLE and (keys is None or key in keys)  # type: ignore[operator]
                    and (event is None or info.hints is None or event in info.hints)):
                self._activate(key, info, now)
                moved += 1
        self._unschedulable = {k for k in self._unschedulable
                               if (held := self._info.get(k)) is not None and held.where == UNSCHEDULABLE}
        return moved

    def update(self, key: Key, now: float, events: frozenset[str], priority: int = 0) -> None:
        """The pod itself, or something only it waits for, changed (`events`: which of its scheduling
        properties, hints.pod_update; or its claim): a new pod is added, a gated one when anything
        changed; an unschedulable one moves only when the change may help it (upstream's Update: a
        status write, the scheduler's own PodScheduled=False among them, moves nothing); a queued
        or in-flight one stays."""
        info = self._info.get(key)
        if info is None or (info.where == GATED and events):
            self.add(key, now, priority)
        elif info.where == UNSCHEDULABLE and events and (info.hints is None or events & info.hints):
            self._activate(key, info, now, priority)

    def pop(self, now: float) -> Key | None:
        """The next pod to try now, or None."""
        while self._backoff and self._backoff[0][0] <= now:
            until, _, key = heapq.heappop(self._backoff)
            info = self._info.get(key)
            if info is not None and self._due(info, until):
                info.parked = None
                info.where = ACTIVE
                heapq.heappush(self._active, (0, next(self._seq), key))
        while self._active:
            _, _, key = heapq.heappop(self._active)
            info = self._info.get(key)
            if info is not None and info.where == ACTIVE:
                info.where = ""
                return key
        return self._pop_backoff()

    def _pop_backoff(self) -> Key | None:
        """Nothing active: the pod whose backoff ends first, unless it backs off after an error
        (upstream's activeQ pops from the backoffQ, never from its error backoff queue)."""
        best: tuple[float, int, Key] | None = None
        for entry in self._backoff:
            info = self._info.get(entry[2])
            if info is not None and not info.errors and self._due(info, entry[0]) and info.where == BACKOFF:
                best = entry if best is None or entry < best else best
        if best is None:
            return None
        self._info[best[2]].where = ""
        return best[2]

    def next_deadline(self, now: float) -> float | None:
        """When pop may next return something without a new event (a backoff ends, or the periodic
        flush of unschedulable pods)."""
        if self._active or any(i.where == BACKOFF and not i.errors for i in self._info.values()):
            return now
        best: float | None = None
        while self._backoff:
            until, _, key = self._backoff[0]
            info = self._info.get(key)
            if info is None or not self._due(info, until):
                heapq.heappop(self._backoff)
                continue
            best = until
            break
        for info in self._info.values():
            if info.where == UNSCHEDULABLE:
                flush = info.last_attempt + self.unschedulable_timeout
                best = flush if best is None else min(best, flush)
        return best

    def flush_unschedulable(self, now: float) -> None:
        for key, info in self._info.items():
            if info.where == UNSCHEDULABLE and now - info.last_attempt >= self.unschedulable_timeout:
                self._activate(key, info, now)

    def failed(self, key: Key, now: float, *, retry: bool = False, hints: frozenset[str] | None = None) -> None:
        """An attempt failed: unschedulable until one of the events in `hints` (None: any) comes
        (retry=False), or an error: back off and retry (upstream's pod without rejecting plugins)."""
        info = self._info.get(key)
        if info is None:
            info = self._info[key] = _Info(first_seen=now)
        info.attempts += 1
        info.last_attempt = now
        if retry:
            info.errors += 1
            info.hints = None
            self._activate(key, info, now)
        else:
            info.unschedulable += 1
            info.errors = 0
            info.hints = hints
            info.where = UNSCHEDULABLE
            self._unschedulable.add(key)

    def requeue(self, key: Key, now: float) -> None:
        """Try again at once (a write conflict), without counting an attempt."""
        info = self._info.get(key)
        if info is None:
            info = self._info[key] = _Info(first_seen=now)
        info.where = ACTIVE
        heapq.heappush(self._active, (0, next(self._seq), key))

    def done(self, key: Key) -> _Info | None:
        """Scheduled or gone: forget the pod."""
        return self._info.pop(key, None)
