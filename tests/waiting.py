"""The one "poll until true" of the suite: `eventually` for async tests, `eventually_blocking` for sync ones.

Why one: seven copies had drifted apart (2 s to 5 s timeouts, some naming what they waited for,
some not). A condition is polled in real time with a generous timeout, reached only when the code
under test is broken, and the failure says what was awaited and the last value seen. Waiting for a
task to go to sleep on the fake clock is `FakeClock.wait_for_sleepers`, not a poll.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
TIMEOUT = 10.0  # real seconds; only a failing test waits this long


async def eventually(check: Callable[[], T], *, timeout: float = TIMEOUT, what: str = "condition",
                     interval: float = 0.01) -> T:
    """Poll `check()` until it returns something truthy, and return that; AssertionError after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = check()
        if got:
            return got
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {got!r})")
        await asyncio.sleep(interval)


def eventually_blocking(check: Callable[[], T], *, timeout: float = TIMEOUT, what: str = "condition",
                        interval: float = 0.1, ignore: tuple[type[Exception], ...] = ()) -> T:
    """`eventually` for code with no event loop (subprocess daemons): exceptions in `ignore` count as not yet."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            got = check()
            if got:
                return got
            last = got
        except ignore as err:
            last = err
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
        time.sleep(interval)
