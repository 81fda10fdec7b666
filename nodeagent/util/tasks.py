"""Ending background tasks: cancel them all, then wait for each to be over.

Cancelling first and awaiting after lets every task unwind at once (a stop waits for the slowest,
not for the sum); a task's CancelledError is its normal end, not the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(
    tasks: Iterable[asyncio.Future[Any] | None], *, ignore_errors: bool = False
) -> None:
    """Cancel every task given (None skipped) and wait until each has ended.

    A task that had already failed raises its error here unless `ignore_errors` (for stops that
    must go on whatever a task did: its failure was logged where it ran).
    """
    pending = [t for t in tasks if t is not None]
    for t in pending:
        t.cancel()
    for t in pending:
        if ignore_errors:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        else:
            with contextlib.suppress(asyncio.CancelledError):
                await t
