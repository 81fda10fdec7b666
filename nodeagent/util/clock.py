"""The clock seam: real time in the daemon, a fake clock in tests (no monkeypatching).

Only monotonic time drives timeouts and grace periods; wall time is used for
timestamps shown to users (pod start times, events).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class FakeClock:
    """A clock that moves only when told; sleepers wake when `advance` passes their deadline.

    Why `wait_for_sleepers`: a test that calls `advance` while the task under test is still on its
    way to `sleep` (between two awaits) loses the wake-up: the task then sleeps a whole interval
    from the new time and the test waits for a pass that never comes (a flaky test, never a
    failing one). The test waits until the tasks it means to wake sleep first, as kopf's looptime
    advances only when every task sleeps, then advances. A cancelled sleep stops counting at once.
    """

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._mono = 0.0
        self._wall = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []
        self._waiters: list[asyncio.Future[None]] = []

    def monotonic(self) -> float:
        return self._mono

    def now(self) -> float:
        return self._wall

    @property
    def sleepers(self) -> int:
        """How many sleeps are pending on this clock now."""
        return len(self._sleepers)

    @property
    def deadlines(self) -> list[float]:
        """The monotonic deadlines of the pending sleeps, earliest first."""
        return sorted(deadline for deadline, _ in self._sleepers)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self._mono + seconds, fut)
        self._sleepers.append(entry)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        try:
            await fut
        finally:
            # Cancelled before its deadline: no longer a sleeper (advance already removed a woken one).
            self._sleepers = [s for s in self._sleepers if s[1] is not fut]

    async def wait_for_sleepers(self, n: int = 1, *, timeout: float = 10.0) -> None:
        """Return once at least `n` sleeps are pending on this clock (right away if they already are).

        `timeout` is in real seconds: a task that never sleeps fails the test with the count seen."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                while len(self._sleepers) < n:
                    waiter: asyncio.Future[None] = loop.create_future()
                    self._waiters.append(waiter)
                    try:
                        await waiter
                    finally:
                        self._waiters.remove(waiter)
        except TimeoutError:
            raise TimeoutError(f"{len(self._sleepers)} of {n} sleepers on the fake clock after {timeout} s") from None

    def advance(self, seconds: float) -> None:
        self._mono += seconds
        self._wall += seconds
        due = [s for s in self._sleepers if s[0] <= self._mono]
        self._sleepers = [s for s in self._sleepers if s[0] > self._mono]
        for _, fut in due:
            if not fut.done():
                fut.set_result(None)
