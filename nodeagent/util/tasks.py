"""Ending background tasks: cancel them all, then wait for each to be over.

Cancelling first and awaiting after lets every task unwind at once (a stop waits for the slowest,
not for the sum); a task's CancelledError is its normal end, not the caller's. A cancellation of
the caller while it waits is the caller's own and goes through (awaiting each task under
suppress(CancelledError) swallowed it, so a stop that came in that moment was lost).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(
    tasks: Iterable[asyncio.Future[Any] | None], *, ignore_errors: bool = False
) -> None:
    """Cancel every task given (None skipped) and wait until each has ended.

    A task that had already failed raises its error here (the first such task in the order
    given) unless `ignore_errors` (for stops that must go on whatever a task did: its failure
    was logged where it ran); errors that are not Exceptions (KeyboardInterrupt, SystemExit)
    are always raised.
    """
    pending = [t for t in tasks if t is not None]
    for t in pending:
        t.cancel()
    if any(not t.done() for t in pending):
        await asyncio.wait(pending)  # never raises a task's outcome; the caller's cancellation goes through
    for t in pending:
        if t.cancelled():
            continue
        err = t.exception()
        if err is not None and not (ignore_errors and isinstance(err, Exception)):
            raise err
