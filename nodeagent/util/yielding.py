"""Long loops on the event loop that let everything else run between their chunks.

Why: the daemon serves every socket (the API, /healthz, pod-resources, the plugins' registration) from
one event loop, so a loop over the 10,000 containers of one pod held them all for seconds (issue 25:
no single request may delay a /healthz or pod-resources answer by more than 100 ms). A loop over
items that can be many yields to the event loop every `CHUNK` items; one that cannot give the loop
up (it runs in a synchronous callback) does `CHUNK` items per loop turn. Neither may be used where
the items must be handled without anything else seeing a state in between.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

CHUNK = 256
"""Items between two yields: a few ms of the per-item work of a container's events or status."""


async def chunked(items: Iterable[T], every: int = CHUNK) -> AsyncIterator[T]:
    """Each of `items`, with a turn of the event loop after every `every` of them."""
    for i, item in enumerate(items):
        if i and i % every == 0:
            await asyncio.sleep(0)
        yield item


SLICE = 0.025
"""Seconds of a long answer's build between two yields (sliced): a quarter of issue 25's bound on
what one request may delay another's answer by."""


async def sliced(items: Iterable[T], budget: float = SLICE) -> AsyncIterator[T]:
    """Each of `items`, with a turn of the event loop whenever `budget` seconds (wall) went by since the
    last. For the build of an answer a client waits for (a pod-resources List): every yield waits
    behind everything else ready on the loop (a pod's container events, 256 a turn), so a yield every
    `CHUNK` items made the List of a pod of 7,400 containers wait 29 times, 0.15-0.43 s in all (issue
    25); by time it yields once or twice, no turn longer than the budget and an item."""
    clock = time.perf_counter
    until = clock() + budget
    for item in items:
        if clock() >= until:
            await asyncio.sleep(0)
            until = clock() + budget
        yield item


async def sized_call(size: int, fn: Callable[..., R], *args: Any) -> R:
    """`fn(*args)`, in a worker thread when `size` (its items: a pod's containers) is above `CHUNK`.
    For pure functions over immutable inputs only: a status of 10,000 containers built on the loop
    held it 0.1-0.3 s on a loaded machine, and below `CHUNK` the thread hop would cost more than it
    saves."""
    if size > CHUNK:
        return await asyncio.to_thread(fn, *args)
    return fn(*args)
