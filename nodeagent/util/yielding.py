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
from collections.abc import AsyncIterator, Iterable
from typing import TypeVar

T = TypeVar("T")

CHUNK = 256
"""Items between two yields: a few ms of the per-item work of a container's events or status."""


async def chunked(items: Iterable[T], every: int = CHUNK) -> AsyncIterator[T]:
    """Each of `items`, with a turn of the event loop after every `every` of them."""
    for i, item in enumerate(items):
        if i and i % every == 0:
            await asyncio.sleep(0)
        yield item
