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
    """A clock that moves only when told; sleepers wake when `advance` passes their deadline."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self._mono = 0.0
        self._wall = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def monotonic(self) -> float:
        return self._mono

    def now(self) -> float:
        return self._wall

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._mono + seconds, fut))
        await fut

    def advance(self, seconds: float) -> None:
        self._mono += seconds
        self._wall += seconds
        due = [s for s in self._sleepers if s[0] <= self._mono]
        self._sleepers = [s for s in self._sleepers if s[0] > self._mono]
        for _, fut in due:
            if not fut.done():
                fut.set_result(None)
