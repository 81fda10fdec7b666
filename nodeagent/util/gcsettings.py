"""Garbage-collector thresholds for the daemon process (set once by `nodeagent run`).

Why: the daemon keeps a large, growing, long-lived heap (the object store's cache, watch
history, the scheduler's and controllers' caches) and makes almost no reference cycles. With
CPython's default thresholds (700, 10, 10) full collections ran every ~25% of heap growth and
each walked the whole heap (~1 us per tracked object): in bench/scheduler.py they took a fifth
of the control plane's time and found nothing to free. A larger first generation and a rarer
full collection keep cycles (exception tracebacks, asyncio internals) collected while the
long-lived heap is walked far less often. bench/scheduler.py applies the same settings.
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 10, 100)


def apply() -> None:
    """Process-wide: call from the program's entry point, not from library code or tests."""
    gc.set_threshold(*THRESHOLDS)


def hold() -> None:
    """No collection from here until started(): for the entry point, before the daemon's imports.

    Why: a start builds almost nothing but long-lived objects (~160,000 tracked ones: modules, classes,
    functions, the store's cache, the managers' state) and almost no garbage cycles (a full collection
    at READY=1 finds ~1,800 objects), yet with collection on, the young generations' collections walked
    them as they were made: ~0.1 CPU-s of a restart to ready (issue 25)."""
    gc.disable()


def started() -> None:
    """Once the daemon is ready: freeze what the start built, then collect again with THRESHOLDS.

    gc.freeze() moves every tracked object into the permanent generation, which no collection walks:
    later full collections look only at what the running daemon made (a full walk of the start's heap
    costs ~0.15 CPU-s with the loop held). Frozen objects are still freed when their last reference
    goes; only the few garbage cycles made during the start (the ~1,800 objects above) stay."""
    gc.freeze()
    apply()
    gc.enable()
