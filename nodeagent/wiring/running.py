"""The record of what the daemon has started, so a failed or finished run stops exactly that.

Every builder in nodeagent.wiring appends what it starts here (servers, background tasks,
async closers) in start order; the daemon's shutdown stops servers first, then cancels the
tasks, then runs the closers in reverse.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from nodeagent.rpc.server import UnixServer
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


@dataclass
class Running:
    """What has been started so far, so a failed start stops exactly that."""

    servers: list[UnixServer] = field(default_factory=list)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def spawn(self, coro: Awaitable[Any], name: str) -> None:
        """Run `coro` as a named background task, cancelled at shutdown."""
        self.tasks.append(asyncio.ensure_future(coro))
        self.tasks[-1].set_name(name)

    async def stop(self) -> None:
        """Stop it all: servers in reverse, then cancel the tasks, then run the closers in reverse."""
        for server in reversed(self.servers):
            with contextlib.suppress(Exception):
                await server.stop(grace=1.0)
        await cancel_and_wait(self.tasks, ignore_errors=True)
        for close in reversed(self.closers):
            try:
                await close()
            except Exception:
                logger.exception("error while stopping")


def closer(fn: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    """A synchronous close() as one of the async closers `Running` expects."""

    async def close() -> None:
        fn()

    return close
