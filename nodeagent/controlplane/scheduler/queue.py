"""The scheduling queue: active, backoff and unschedulable pods, as in the upstream scheduler.

One responsibility: order the work. A new or changed pod goes to `active` (highest priority
first, then first come). A pod that failed waits in `unschedulable` until a relevant change
moves it back; it then sits in `backoff` until its backoff (initial * 2^(attempts-1), capped)
has passed since its last attempt, so a flood of events never turns into a busy loop. Pods
waiting for something outside the scheduler (their claims to be created) are `gated` and only
come back when a pod or claim event names them. Pure: time is passed in (monotonic seconds).
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


class SchedulingQueue:
    def __init__(self, initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 unschedulable_timeout: float = 300.0) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._delays = Backoff(initial_backoff, max_backoff)
        self.unschedulable_timeout = unschedulable_timeout
        self._info: dict[Key, _Info] = {}
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
        if info.attempts == 0:
            return 0.0
        return info.last_attempt + self._delays.delay(info.attempts)

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
        return info.where == BACKOFF or (info.where == GATED and info.parked == until)

    def move_unschedulable(self, now: float, keys: object = None) -> int:
        """A relevant change: unschedulable pods (all, or those in `keys`) go to backoff/active."""
        moved = 0
        for key, info in self._info.items():
            if info.where == UNSCHEDULABLE and (keys is None or key in keys):  # type: ignore[operator]
                self._activate(key, info, now)
                moved += 1
        return moved

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
        return None

    def next_deadline(self, now: float) -> float | None:
        """When pop may next return something without a new event (a backoff ends, or the periodic
        flush of unschedulable pods)."""
        if self._active:
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

    def failed(self, key: Key, now: float, *, retry: bool = False) -> None:
        """An attempt failed: unschedulable until a change (retry=False), or back off and retry."""
        info = self._info.get(key)
        if info is None:
            info = self._info[key] = _Info(first_seen=now)
        info.attempts += 1
        info.last_attempt = now
        if retry:
            self._activate(key, info, now)
        else:
            info.where = UNSCHEDULABLE

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
