"""Writing a watch stream to a client that may stop reading: bounded bytes, a time budget, a close.

Why: a watcher that never reads kept its connection for as long as its watch lasted, with megabytes
queued in the process for each (50 such watchers: ~3 MB each, memory not given back). kube-apiserver
bounds each watcher by its channel (k8s.io/apiserver/pkg/storage/cacher: cacheWatcher.input, 10 to
1000 events) and, when that is full, waits for it at most the dispatch time budget (timeBudget:
maxBudget 100 ms, shared by the blocked watchers of one event), then closes the watcher ("Forcing
watcher close due to unresponsiveness"); the client sees its watch stream end, with no ERROR event,
and watches again from its last resourceVersion, as a watch that timed out.

Here the channel is the connection's write buffer, bounded in bytes (`BUFFER_BYTES`, the transport's
high-water mark, beyond what the kernel's socket buffer already holds): a write that finds it full
waits at most `BUDGET` for the client to take data, else the watcher is unresponsive. It is ended as
upstream ends it, the response finished cleanly (the last chunk), and if the client does not take even
that within the budget, the connection is aborted, so its buffers are freed at once. Knows nothing of
watch semantics; the caller (http.py `_watch`) stops its store watch when this raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiohttp import web

logger = logging.getLogger(__name__)

BUFFER_BYTES = 1 << 20
"""Bytes one watcher may have queued in the process (the write buffer's high-water mark)."""
BUDGET = 0.1
"""Seconds a write may wait for a full buffer to drain: upstream's dispatch timeBudget maximum."""


class Unresponsive(Exception):
    """The client took nothing from a full buffer within the budget."""


class WatchWriter:
    """The byte-bounded, time-budgeted writer of one watch response."""

    def __init__(self, request: web.Request, response: web.StreamResponse, what: str, *,
                 buffer_bytes: int = BUFFER_BYTES, budget: float = BUDGET) -> None:
        self._request = request
        self._response = response
        self._what = what
        self._budget = budget
        transport = request.transport
        if transport is not None:
            # drain() waits once this much is queued; below it writes never wait
            transport.set_write_buffer_limits(high=buffer_bytes)

    def queued(self) -> int:
        transport = self._request.transport
        return transport.get_write_buffer_size() if transport is not None else 0

    async def write(self, data: bytes) -> None:
        """Queue `data`; Unresponsive when the buffer stays full beyond the budget."""
        try:
            async with asyncio.timeout(self._budget):
                await self._response.write(data)
        except TimeoutError:
            raise Unresponsive(self._what) from None

    async def close_unresponsive(self) -> None:
        """End the stream as kube-apiserver ends an unresponsive watcher's; abort if even that is not taken."""
        queued = self.queued()
        logger.info("Forcing watcher close due to unresponsiveness: %s peer=%s queued_bytes=%d", self._what,
                    self._request.remote, queued)
        await self.end()

    async def end(self) -> None:
        """Finish the response (its last chunk) within the budget, else abort the connection: a client
        that does not read would otherwise hold this task and its buffer for ever."""
        try:
            async with asyncio.timeout(self._budget):
                await self._response.write_eof()
            return
        except (TimeoutError, ConnectionError):
            pass
        transport = self._request.transport
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.abort()
