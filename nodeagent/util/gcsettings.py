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
