"""One timer for many periodic checks: the idle ticks of a thousand full virtual nodes.

Why: a node's periodic passes (the node sync's status pass, the Pods API source's refresh) each
slept their own interval, so every node paid a timer, a future and (with wait_for) a task per
tick, even when nothing had changed; with a thousand nodes that was a quarter of the start-up CPU
(bench/nodes.py). Here one task sleeps the interval and calls every registered check in turn.
A check is synchronous and cheap: it looks whether anything is due (a generation moved, a
deadline passed) and only then starts the work (a task of its owner). The ticker begins when
`start` is called, so the nodes of a group that start together do no periodic work until the
whole group is up (each node's first sync happens in its start, not on a tick).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


class Ticker:
    """Calls each registered check every `interval` seconds on `clock`, from one task."""

    def __init__(self, clock: Clock, interval: float) -> None:
        if interval <= 0:
            raise ValueError(f"ticker interval must be positive, got {interval}")
        self.interval = interval
        self._clock = clock
        self._checks: dict[int, Callable[[], None]] = {}
        self._next_id = 0
        self._task: asyncio.Task[None] | None = None
        self.ticks = 0  # passes over the checks so far (tests, status)

    def add(self, check: Callable[[], None]) -> Callable[[], None]:
        """Register `check`; returns the function that removes it again."""
        key = self._next_id
        self._next_id += 1
        self._checks[key] = check
        return lambda: self._checks.pop(key, None) and None

    def __len__(self) -> int:
        return len(self._checks)

    def start(self) -> None:
        """Begin ticking (once; again after close)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ticker")

    def tick(self) -> None:
        """One pass over the checks; a failing check is logged and the others still run."""
        self.ticks += 1
        for check in list(self._checks.values()):
            try:
                check()
            except Exception:
                logger.exception("periodic check failed check=%r", check)

    async def _run(self) -> None:
        while True:
            await self._clock.sleep(self.interval)
            self.tick()

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait([task])
