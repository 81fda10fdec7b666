"""One lock per ResourceClaim uid, so driver calls for a claim never overlap while other claims proceed.

Pods now prepare concurrently (each in its pod worker), and the DRA manager's own lock guards only
its cache, never a driver call. A claim shared by several pods must still not see a
NodeUnprepareResources overtake the NodePrepareResources of a pod that just joined it (or the
reverse): every prepare, unprepare and retry takes the locks of the claims it calls about, in uid
order so two callers never wait on each other. Locks exist only while someone holds or awaits them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable


class ClaimLocks:
    """asyncio locks by claim uid, taken in sorted order and dropped when nobody uses them."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def busy(self) -> bool:
        """Some claim's driver call is in flight or waiting."""
        return bool(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, uids: Iterable[str]) -> AsyncIterator[None]:
        held: list[str] = []
        wanted = sorted(set(uids))
        for uid in wanted:
            lock, users = self._locks.get(uid, (asyncio.Lock(), 0))
            self._locks[uid] = (lock, users + 1)
        try:
            for uid in wanted:
                await self._locks[uid][0].acquire()
                held.append(uid)
            yield
        finally:
            for uid in wanted:
                lock, users = self._locks[uid]
                if uid in held:
                    lock.release()
                if users == 1:
                    del self._locks[uid]
                else:
                    self._locks[uid] = (lock, users - 1)
