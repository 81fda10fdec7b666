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
import functools
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

CHUNK = 256
"""Items between two yields: a few ms of the per-item work of a container's events or status."""


TURN = 0.01
"""Seconds of a long pass's work on the event loop between two yields, when paced by time (`chunked`'s
`budget`, the node's event writes): a request needs several loop turns to be answered (its read, its
handler, its write; a gRPC call more), so a turn of 60 ms (256 containers' three events each, or 256
events' store writes, at load 2) made a /healthz or pod-resources answer 0.1-0.2 s late although no
turn was longer than the bound (issue 25)."""

BREATH = 0.002
"""Seconds a paced pass waits after each of its turns before the next (a timer, not the next loop
turn): a gRPC answer needs about ten loop turns, and a pass that came back in each of them (the node's
container events, their store writes: a turn each) made a pod-resources List wait for it ten times
(0.1-0.14 s while a pod of 7,400 containers starts, issue 25); with the breath, those turns run back to
back while the pass waits. The bench's pod life (22,200 events made and written) took no longer
beyond the noise (8.7-9.6 s either way, bench/huge_pod_stall.py); the CPU is the same."""

LEAST = 32
"""Items a paced pass handles between two yields whatever the clock says: a pod of a few containers is
handled in one turn, as before, however the machine's load stretches the wall clock."""


async def chunked(items: Iterable[T], every: int = CHUNK, budget: float | None = None,
                  breath: float = BREATH) -> AsyncIterator[T]:
    """Each of `items`, with a turn of the event loop after every `every` of them, and with `budget`
    (seconds) also whenever that much wall time went by since the last turn once `LEAST` items were
    handled in it; a paced pass (`budget`) goes on `breath` seconds after its turn, not in the next."""
    clock = time.perf_counter
    until = clock() + budget if budget is not None else 0.0
    pause = 0.0 if budget is None else breath
    count = 0
    for item in items:
        if count >= every or (budget is not None and count >= LEAST and clock() >= until):
            await asyncio.sleep(pause)
            count = 0
            if budget is not None:
                until = clock() + budget
        count += 1
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


_PURE = threading.Lock()


def _one_at_a_time(fn: Callable[[], R]) -> R:
    with _PURE:
        return fn()


async def pure_call(fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """`fn(*args, **kwargs)` in a worker thread, one such call at a time in the process (the others
    wait on a lock, which holds no GIL). For pure Python functions over immutable inputs only (a big
    pod's parse, its status), which wait on nothing else, so the lock can never be held waiting.

    Why one at a time: the event loop takes the GIL back after each of its socket and file calls, and
    with one worker computing it waits at most the switch interval for it; with two (the node's parse
    of a new pod of 7,400 containers and the scheduler's, side by side) the GIL often went from one
    worker to the other, and a /healthz or pod-resources answer waited 70-120 ms for a loop that was
    idle (issue 25). The work takes the same CPU either way."""
    return await asyncio.to_thread(_one_at_a_time, functools.partial(fn, *args, **kwargs))


async def sized_call(size: int, fn: Callable[..., R], *args: Any) -> R:
    """`fn(*args)`, in a worker thread (pure_call) when `size` (its items: a pod's containers) is above
    `CHUNK`. For pure functions over immutable inputs only: a status of 10,000 containers built on the
    loop held it 0.1-0.3 s on a loaded machine, and below `CHUNK` the thread hop would cost more than
    it saves."""
    if size > CHUNK:
        return await pure_call(fn, *args)
    return fn(*args)
