"""Serve a set of gRPC services on one unix socket, the way the kubelet's servers do.

`UnixServer` creates the socket's directory (0750), removes a stale socket, binds,
sets the socket mode, and adds server reflection and grpc.health.v1 so grpcurl works
with no proto files. The file mode is the socket's only access control, so the socket
never exists at its path with a wider mode: it is bound inside a private 0700 directory
next to its path, chmodded there, then renamed into place (`bind_privately`). It refuses
relative paths and paths over the unix limit with a StartupError that names the socket.
Stop is graceful: health goes NOT_SERVING first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from nodeagent.errors import StartupError
from nodeagent.rpc.channel import CHANNEL_OPTIONS as CHANNEL_OPTIONS
from nodeagent.rpc.channel import MAX_MESSAGE as MAX_MESSAGE
from nodeagent.rpc.channel import channel as channel
from nodeagent.rpc.decoding import DecodeErrorInterceptor
from nodeagent.rpc.peercred import PeerCredInterceptor, PeerCredProxy

logger = logging.getLogger(__name__)

# sun_path is 108 bytes including the terminating NUL.
UNIX_PATH_MAX = 107



def check_socket_path(path: Path, what: str = "socket") -> None:
    """Raise StartupError unless `path` is absolute and fits in sockaddr_un."""
    if not path.is_absolute():
        raise StartupError(f"{what} {path}: socket path must be absolute")
    size = len(os.fsencode(str(path)))
    if size > UNIX_PATH_MAX:
        raise StartupError(
            f"{what} {path}: socket path is {size} bytes, over the unix limit of {UNIX_PATH_MAX}"
        )


def remove_stale_socket(path: Path) -> None:
    """Remove a leftover socket file; refuse to delete anything that is not a socket."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise StartupError(f"socket {path}: path exists and is not a socket")
    path.unlink()


class BindDir:
    """One private 0700 directory in which many sockets are bound, each then renamed into place.

    Exists because bind_privately's directory per socket costs a mkdir and an rmdir per socket,
    3.5 ms together on the test machine's filesystem (the rmdir most of it), and a thousand full
    virtual nodes bind three thousand sockets (bench/nodes.py). Created on first use under
    `parent` (which must be private to the daemon, e.g. its state dir); removed by close(). A
    socket on another filesystem (a rename cannot cross) or whose name here would not fit in
    sockaddr_un gets bind_privately's own directory instead.
    """

    def __init__(self, parent: Path) -> None:
        self._parent = parent
        self._path: Path | None = None
        self._device = 0
        self._count = 0

    def name_for(self, path: Path) -> Path | None:
        """A fresh name in the directory to bind `path`'s socket at; None: use a directory of its own."""
        if self._path is None:
            self._path = Path(tempfile.mkdtemp(prefix=".bind-", dir=self._parent))
            self._device = self._path.stat().st_dev
        if path.parent.stat().st_dev != self._device:
            return None
        self._count += 1
        inner = self._path / str(self._count)
        return inner if len(os.fsencode(str(inner))) <= UNIX_PATH_MAX else None

    def close(self) -> None:
        path, self._path = self._path, None
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)


def bind_privately(server: grpc.aio.Server, path: Path, mode: int, bind_dir: BindDir | None = None) -> int:
    """Bind `server` to unix socket `path` so the socket is never reachable with a mode wider than `mode`.

    A socket is created with 0777 & ~umask; binding at `path` and chmodding after leaves a
    window (0777 under umask 000) in which any user can connect. Binding inside a fresh 0700
    directory, chmodding there and renaming onto `path` closes it. When the private path
    would not fit in sockaddr_un, bind under umask 0o177 instead (process-wide, so only for
    the instant of the bind). With `bind_dir`, the socket is bound there instead (one directory
    for many sockets). Returns add_insecure_port's answer (0: not bound)."""
    def bind(p: Path) -> int:
        return server.add_insecure_port(f"unix:{p}")

    inner = bind_dir.name_for(path) if bind_dir is not None else None
    if inner is None:
        return _bind_privately(bind, path, mode)
    bound = bind(inner)
    if bound:
        os.chmod(inner, mode)
        os.replace(inner, path)
    return bound


def bind_socket_privately(sock: socket.socket, path: Path, mode: int) -> None:
    """bind_privately for a plain unix socket (raises OSError when it cannot bind)."""
    def bind(p: Path) -> int:
        sock.bind(str(p))
        return 1

    _bind_privately(bind, path, mode)


def _bind_privately(bind: Callable[[Path], int], path: Path, mode: int) -> int:
    private = Path(tempfile.mkdtemp(prefix=".b", dir=path.parent))
    try:
        inner = private / "s"
        if len(os.fsencode(str(inner))) > UNIX_PATH_MAX:
            old = os.umask(0o177)
            try:
                bound = bind(path)
            finally:
                os.umask(old)
            if bound:
                os.chmod(path, mode)
            return bound
        bound = bind(inner)
        if bound:
            os.chmod(inner, mode)
            os.replace(inner, path)
        return bound
    finally:
        with contextlib.suppress(OSError):
            for leftover in private.iterdir():
                leftover.unlink()
            private.rmdir()


class _GenericOnly:
    """A grpc.aio.Server as the services' add functions see it: their handlers, generic only.

    Generated code adds each service twice, as a generic handler and as registered methods; the
    aio server keeps a task and a requested call in the core for every registered method, so
    a socket with six methods cost 42 KiB instead of 16 KiB (bench/nodes.py: three sockets on
    each of a thousand nodes). Dispatch by the generic handler's method table serves the same calls.
    """

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler[Any, Any]]) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: object) -> None:
        """Dropped: the generic handler added next to it routes the same methods."""


def _generic_only(server: grpc.aio.Server) -> grpc.aio.Server:
    return cast(grpc.aio.Server, _GenericOnly(server))


@dataclass(frozen=True)
class Service:
    """One gRPC service to serve: its full name and a function that adds it to a server."""

    name: str
    add: Callable[[grpc.aio.Server], None]


class UnixServer:
    """A grpc.aio server bound to one unix socket, with reflection and health."""

    def __init__(
        self,
        path: Path,
        services: Sequence[Service],
        *,
        mode: int = 0o660,
        interceptors: Sequence[Any] = (),
        what: str = "socket",
        peer_check: bool = False,
        bind_dir: BindDir | None = None,
    ) -> None:
        """`peer_check`: only root and the daemon's uid may call (rpc/peercred.py), whatever `mode` allows.
        `bind_dir`: where to bind before the socket is renamed into place (None: a directory of its own)."""
        check_socket_path(path, what)
        self.path = path
        self._services = list(services)
        self._mode = mode
        self._interceptors = list(interceptors)
        self._what = what
        self._server: grpc.aio.Server | None = None
        self._peer_check = peer_check
        self._bind_dir = bind_dir
        self._proxy: PeerCredProxy | None = None
        self._private: Path | None = None  # the gRPC server's own socket lives here with peer_check
        self._health = health.aio.HealthServicer()  # type: ignore[attr-defined]

    async def start(self) -> None:
        try:
            if not self.path.parent.is_dir():  # a stat, not a failing mkdir, when it exists (most starts)
                self.path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
            remove_stale_socket(self.path)
        except OSError as err:
            raise StartupError(f"{self._what} {self.path}: {err.strerror}") from None
        # Innermost: requests are parsed after the other interceptors (peer check, metrics) ran.
        interceptors = [*self._interceptors, DecodeErrorInterceptor()]
        if self._peer_check:
            interceptors.insert(0, PeerCredInterceptor(lambda: self._proxy.tag if self._proxy else "", self._what))
        server = grpc.aio.server(interceptors=interceptors, options=CHANNEL_OPTIONS)
        adding = _generic_only(server)
        for svc in self._services:
            svc.add(adding)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, adding)
        names = [svc.name for svc in self._services]
        # What reflection.enable_server_reflection does for an aio server (it tells them apart by type).
        servicer = reflection.aio.ReflectionServicer(  # type: ignore[attr-defined]  # public, in __all__
            [*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
        )
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, adding)
        try:
            if self._peer_check:
                bound = await self._bind_behind_proxy(server)
            else:
                bound = bind_privately(server, self.path, self._mode, self._bind_dir)
        except OSError as err:
            raise StartupError(f"{self._what} {self.path}: {err.strerror}") from None
        if bound == 0:
            raise StartupError(f"{self._what} {self.path}: cannot bind")
        await server.start()
        for name in ["", *names]:
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._server = server
        logger.info("serving socket=%s services=%s", self.path, ",".join(names))

    async def _bind_behind_proxy(self, server: grpc.aio.Server) -> int:
        """Bind the gRPC server in a private 0700 directory and accept `path` through the peer check."""
        self._private = Path(tempfile.mkdtemp(prefix="nodeagent-"))
        inner = self._private / "s"
        bound = server.add_insecure_port(f"unix:{inner}")
        if not bound:
            return 0
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            bind_socket_privately(listener, self.path, self._mode)
            listener.listen(128)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._proxy = PeerCredProxy(listener, inner)
        await self._proxy.start()
        return bound

    async def stop(self, grace: float = 2.0) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        await self._health.enter_graceful_shutdown()
        if self._proxy is not None:
            self._proxy.stop_accepting()  # before the server: nothing new is spliced to a server that stops
        await server.stop(grace)
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            await proxy.stop()
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None
        try:
            remove_stale_socket(self.path)
        except (OSError, StartupError):
            logger.warning("could not remove socket=%s", self.path)
        logger.info("stopped socket=%s", self.path)

    @property
    def serving(self) -> bool:
        return self._server is not None
