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
    aborters: list[Callable[[], None]] = field(default_factory=list)
    """Run when stop() did not finish in time: what must not outlive the daemon (plugin processes)."""
    stopping: str = ""
    """What stop() is waiting for now, so a shutdown that times out can say where it hung."""
    identity_kubeconfig: Callable[..., None] | None = None
    """Once this process's API server serves: write a kubeconfig holding one identity's own credential
    (path, UserInfo, node=NAME), for the plugins the nodes spawn."""
    after_ready: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """Steps of the start that the daemon runs right after READY=1, in order (the embedded control
    plane's loops): nothing a client may rely on at READY=1 waits for them."""
    api_server: Any = None
    """This process's embedded API server once it serves (apiserver.server.APIServer): it answers the
    TokenReviews and SubjectAccessReviews of the full virtual nodes' kubelet endpoints."""

    def spawn(self, coro: Awaitable[Any], name: str) -> None:
        """Run `coro` as a named background task, cancelled at shutdown."""
        self.tasks.append(asyncio.ensure_future(coro))
        self.tasks[-1].set_name(name)

    async def stop(self) -> None:
        """Stop it all: servers in reverse, then cancel the tasks, then run the closers in reverse."""
        for server in reversed(self.servers):
            self.stopping = f"stopping the server on {server.path}"
            with contextlib.suppress(Exception):
                await server.stop(grace=1.0)
        self.stopping = "cancelling background tasks"
        await cancel_and_wait(self.tasks, ignore_errors=True)
        for close in reversed(self.closers):
            self.stopping = f"running the closer {_name(close)}"
            try:
                await close()
            except Exception:
                logger.exception("error while stopping")
        self.stopping = ""

    def abort(self) -> None:
        """After a stop that timed out: kill what must not outlive the daemon (errors logged)."""
        for abort in reversed(self.aborters):
            try:
                abort()
            except Exception:
                logger.exception("error while aborting the stop")

    def waiting_for(self) -> str:
        """Where stop() is now, with the background tasks still running (for the timeout's log line)."""
        left = sorted(t.get_name() for t in self.tasks if not t.done())
        shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        return f"{self.stopping or 'not stopping'}; tasks still running: {shown or 'none'}"


def _name(fn: Callable[..., Any]) -> str:
    """A closer's name for the log: its bound object's class and method, or its qualified name."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__qualname__", None) or repr(fn)
    if owner is not None:
        return f"{type(owner).__qualname__}.{getattr(fn, '__name__', name)}"
    return name


def closer(fn: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    """A synchronous close() as one of the async closers `Running` expects."""

    async def close() -> None:
        fn()

    return close
