"""Peer-credential check for a unix socket served by grpc.aio (SO_PEERCRED), containerd style.

The admin socket can create and delete anything, so its file mode must not be its only
guard: only root and the daemon's own uid may call it, whatever `socketMode` says. grpc.aio
shows a servicer neither the connection's fd nor its credentials, so the public socket is
accepted here: each connection's SO_PEERCRED uid is read at accept and the bytes are spliced
to the real gRPC server, which listens in a private 0700 directory. The splice's client end
is bound to an abstract address that carries the uid (`context.peer()` on the server shows
it), and `PeerCredInterceptor` answers every call of a uid not allowed with PERMISSION_DENIED
naming the uid. Only root and the daemon's uid can reach the private socket directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import secrets
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from pathlib import Path
from typing import Any

import grpc

from nodeagent.rpc.handlers import Handler as _Handler
from nodeagent.rpc.handlers import Interceptor as _Interceptor
from nodeagent.rpc.handlers import rewrap
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_CHUNK = 256 * 1024


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected unix socket (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    return int(_UCRED.unpack(raw)[1])


def allowed_uids() -> frozenset[int]:
    """Root and the daemon's own uid (the kubelet's and containerd's rule for their sockets)."""
    return frozenset({0, os.getuid()})


def denied_message(uid: int, what: str, allowed: Collection[int]) -> str:
    return (f"{what}: peer uid {uid} is not allowed "
            f"(only uids {', '.join(str(u) for u in sorted(allowed))} may call it)")


class PeerCredProxy:
    """Accepts the public socket (already bound and listening) and splices each connection to `inner`,
    its client end bound to an abstract address that names the peer's uid."""

    def __init__(self, listener: socket.socket, inner: Path) -> None:
        self._listener = listener
        self._inner = inner
        self._tag = f"nodeagent-peer-{secrets.token_hex(6)}-"
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[asyncio.Task[None]] = set()

    @property
    def tag(self) -> str:
        """The abstract-address prefix of spliced connections (the uid follows it)."""
        return self._tag

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._accepted, sock=self._listener)

    def stop_accepting(self) -> None:
        """No new connection from here on (the socket's server stops next); those spliced go on."""
        server, self._server = self._server, None
        if server is not None:
            server.close()

    async def stop(self) -> None:
        self.stop_accepting()
        await cancel_and_wait(list(self._conns), ignore_errors=True)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._server is None:
            # accepted as the proxy stopped, its task begun after: spliced to a gRPC server that is
            # stopping, the connection could be accepted there and never served, and the client's call
            # waited for its whole deadline (45 s, 1 run in 60 of test_dra_client's unreachable endpoint)
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        try:
            sock = writer.get_extra_info("socket")
            uid = peer_uid(sock)
            inner_reader, inner_writer = await self._connect(uid)
        except (OSError, asyncio.CancelledError) as err:
            writer.close()
            if isinstance(err, asyncio.CancelledError):
                raise
            logger.warning("peer connection not forwarded socket=%s err=%s", self._inner, err)
            return
        try:
            await asyncio.gather(_pipe(reader, inner_writer), _pipe(inner_reader, writer))
        finally:
            writer.close()
            inner_writer.close()
            if task is not None:
                self._conns.discard(task)

    async def _connect(self, uid: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(f"\0{self._tag}{uid}-{secrets.token_hex(6)}")
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, str(self._inner))
        except BaseException:
            sock.close()
            raise
        return await asyncio.open_unix_connection(sock=sock, limit=_CHUNK)


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(_CHUNK):
            dst.write(data)
            await dst.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if dst.can_write_eof():
                dst.write_eof()


def uid_of_peer(peer: str, tag: str) -> int | None:
    """The uid a spliced connection's peer string names; None for a direct connection."""
    prefix = f"unix-abstract:{tag}"
    if not peer.startswith(prefix):
        return None
    uid, _, _ = peer[len(prefix):].partition("-")
    return int(uid) if uid.isdigit() else None


class PeerCredInterceptor(_Interceptor):
    """Aborts every call of a peer whose uid is not allowed with PERMISSION_DENIED naming the uid."""

    def __init__(self, tag: Callable[[], str], what: str, allowed: Collection[int] | None = None) -> None:
        self._tag = tag
        self._what = what
        self._allowed = frozenset(allowed_uids() if allowed is None else allowed)

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], handler_call_details: grpc.HandlerCallDetails
    ) -> _Handler:
        handler: _Handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        return _guarded(handler, self._check)

    async def _check(self, context: grpc.aio.ServicerContext[Any, Any]) -> bool:
        """Whether the call is refused (its status then set: not context.abort, whose exception the call's
        state keeps in a cycle with the request, so each refused request stayed in memory; rpc/status.py)."""
        uid = uid_of_peer(context.peer(), self._tag())
        if uid is not None and uid not in self._allowed:
            logger.warning("%s refused peer uid=%d", self._what, uid)
            context.set_code(grpc.StatusCode.PERMISSION_DENIED)
            context.set_details(denied_message(uid, self._what, self._allowed))
            return True
        return False


def _guarded(handler: _Handler, check: Callable[[Any], Awaitable[bool]]) -> _Handler:
    def wrap(behaviour: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isasyncgenfunction(behaviour):
            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                if await check(context):
                    return
                async for item in behaviour(request, context):
                    yield item
            return stream

        async def call(request: Any, context: Any) -> Any:
            if await check(context):
                return None
            result = behaviour(request, context)
            return await result if inspect.isawaitable(result) else result
        return call

    return rewrap(handler, wrap)
