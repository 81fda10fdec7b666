"""tasks.cancel_and_wait: every task ends, errors as asked, and the caller's own cancellation is kept."""

from __future__ import annotations

import asyncio

import pytest

from nodeagent.util.tasks import cancel_and_wait


async def _forever() -> None:
    await asyncio.Event().wait()


async def _fails() -> None:
    raise RuntimeError("boom")


async def _slow_to_stop(stopping: asyncio.Event, release: asyncio.Event) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        stopping.set()
        await release.wait()  # unwinding takes a while: the caller waits for it


async def test_every_task_is_cancelled_and_over() -> None:
    tasks = [asyncio.create_task(_forever()) for _ in range(3)]
    await asyncio.sleep(0)
    await cancel_and_wait([*tasks, None])
    assert all(t.cancelled() for t in tasks)


async def test_a_failed_task_raises_unless_errors_are_ignored() -> None:
    failed = asyncio.create_task(_fails())
    running = asyncio.create_task(_forever())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="boom"):
        await cancel_and_wait([failed, running])
    assert running.cancelled()  # waited for, even though the other one failed
    failed2 = asyncio.create_task(_fails())
    await asyncio.sleep(0)
    await cancel_and_wait([failed2], ignore_errors=True)


async def test_the_callers_own_cancellation_goes_through() -> None:
    """A stop that comes while the caller waits for a task to unwind is not swallowed."""
    stopping, release = asyncio.Event(), asyncio.Event()
    child = asyncio.create_task(_slow_to_stop(stopping, release))
    await asyncio.sleep(0)
    caller = asyncio.create_task(cancel_and_wait([child]))
    await stopping.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    release.set()
    await asyncio.gather(child, return_exceptions=True)
