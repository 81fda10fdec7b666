"""The object store's lock, which tells when an event loop's thread had to wait for it.

Why: one event loop serves every socket, and worker threads write the huge objects (a pod of 7,400
containers: its status write holds the store for 0.1-1 s). Each time code on the loop took the lock
while a worker held it, every socket waited with it, and nothing said so: the `kubernetes` Service's
10 s reconcile (a `try_get` on the loop) held a pod-resources List 30-230 ms (issue 25: "no single
request delays a /healthz or pod-resources answer by more than 100 ms"), found only with a lock of a
test's own. Now the store counts such waits (`LoopWaits`) and logs the first of each interval with
its caller, so a test can require that none happens during a huge pod's life and a user sees where
the loop stalled. The uncontended path is the plain lock's; only a contended acquire asks whether
the calling thread runs a loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sysconfig
import threading
import time
import traceback
from dataclasses import dataclass, field
from types import TracebackType

logger = logging.getLogger(__name__)

LOG_INTERVAL = 10.0
"""Seconds between two warnings of loop waits (the count and the longest go into the next)."""
LOG_AFTER = 0.01
"""Seconds of one wait from which it is logged (all are counted): a loop writer that checked the store
free can still lose it to a worker's small write (an API write offloaded while a huge pod's status is
written: 1-5 ms); what stalls the sockets is a wait behind a long transaction."""


@dataclass
class LoopWaits:
    """Waits of event-loop threads for the store's lock, since the store opened."""

    count: int = 0
    seconds: float = 0.0
    longest: float = 0.0
    _unlogged: int = field(default=0, repr=False)
    _logged_at: float = field(default=float("-inf"), repr=False)

    def note(self, waited: float, now: float) -> None:
        self.count += 1
        self.seconds += waited
        self.longest = max(self.longest, waited)
        if waited < LOG_AFTER:
            return
        self._unlogged += 1
        if now - self._logged_at < LOG_INTERVAL:
            return
        caller = _caller()
        logger.warning(
            "event loop waited for the object store seconds=%.3f waits=%d caller=%s "
            "(another thread's transaction held it: every socket waited too)",
            waited, self._unlogged, caller,
        )
        self._unlogged, self._logged_at = 0, now


_STORE = os.path.dirname(os.path.abspath(__file__))
_STDLIB = sysconfig.get_paths()["stdlib"]


def _caller() -> str:
    """The innermost three frames outside the store and the standard library: who took the lock."""
    frames = [f for f in traceback.extract_stack(limit=32)
              if not f.filename.startswith((_STORE, _STDLIB)) and not f.filename.startswith("<")]
    return " < ".join(f"{_short(f.filename)}:{f.lineno} {f.name}" for f in reversed(frames[-3:]))


def _short(path: str) -> str:
    _, sep, tail = path.rpartition("/nodeagent/")
    return "nodeagent/" + tail if sep else os.path.basename(path)


class StoreLock:
    """A re-entrant lock (threading.RLock) noting the time an event loop's thread waited for it."""

    __slots__ = ("_lock", "waits")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.waits = LoopWaits()

    def acquire(self, blocking: bool = True) -> bool:
        if self._lock.acquire(False):
            return True
        if not blocking:
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a worker thread: waiting is what it is for
            return self._lock.acquire()
        start = time.perf_counter()
        self._lock.acquire()
        end = time.perf_counter()
        self.waits.note(end - start, end)
        return True

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._lock.release()
