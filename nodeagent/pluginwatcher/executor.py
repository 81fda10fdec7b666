"""Runs one Register or Unregister operation against a registration socket (pluginregistration).

Register is the kubelet's flow (pluginmanager/operationexecutor): dial with a 10 s
bound -> GetInfo with a 1 s deadline -> handler by PluginInfo.type -> empty endpoint
becomes the registration socket -> handler.validate -> handler.register ->
NotifyRegistrationStatus (5 s deadline), with the kubelet's exact texts. A failure
before the plugin is taken in raises RegistrationError so the watcher backs off and
retries; no business rules here beyond that flow. The channel is closed afterwards:
the registration socket is only used during registration.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc

from nodeagent.apis.pluginregistration.v1 import api_pb2, api_pb2_grpc
from nodeagent.errors import NodeAgentError
from nodeagent.pluginwatcher.model import PluginInfo, RegisteredPlugin, SocketFile
from nodeagent.pluginwatcher.ports import PluginHandler
from nodeagent.rpc.server import channel
from nodeagent.util.logtext import untrusted

logger = logging.getLogger(__name__)

DIAL_TIMEOUT = 10.0
GET_INFO_TIMEOUT = 1.0
NOTIFY_TIMEOUT = 5.0

# Go's codes.Code.String(): the kubelet's error texts and metric labels use these spellings.
_GO_CODE_NAMES = {grpc.StatusCode.OK: "OK", grpc.StatusCode.CANCELLED: "Canceled"}


def go_code_name(code: grpc.StatusCode) -> str:
    """grpc.StatusCode.DEADLINE_EXCEEDED -> 'DeadlineExceeded', as grpc-go spells it."""
    name = _GO_CODE_NAMES.get(code)
    if name is None:
        name = "".join(part.capitalize() for part in code.name.split("_"))
    return name


def rpc_error_text(err: grpc.aio.AioRpcError) -> str:
    """The text of a grpc-go status error: `rpc error: code = X desc = Y`."""
    return f"rpc error: code = {go_code_name(err.code())} desc = {err.details() or ''}"


class RegistrationError(NodeAgentError):
    """Registration did not happen (dial, GetInfo, no handler, validation): retried with backoff."""


async def _probe(path: str, timeout: float) -> None:
    """Fail fast on a stale socket: a Go blocking dial would spin until its deadline instead."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(path), timeout)
    except TimeoutError:
        raise RegistrationError(
            f"RegisterPlugin error -- dial failed at socket {path}, err: context deadline exceeded"
        ) from None
    except OSError as err:
        reason = errno.errorcode.get(err.errno or 0, "") if err.errno else ""
        text = {"ENOENT": "no such file or directory", "ECONNREFUSED": "connection refused"}.get(
            reason, err.strerror or str(err)
        )
        raise RegistrationError(
            f"RegisterPlugin error -- dial failed at socket {path}, err: dial unix {path}: connect: {text}"
        ) from err
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


class RegistrationExecutor:
    """Registers and unregisters plugins found by the watcher with the handler of their type."""

    def __init__(
        self,
        handlers: Mapping[str, PluginHandler],
        *,
        dial_timeout: float = DIAL_TIMEOUT,
        info_timeout: float = GET_INFO_TIMEOUT,
        notify_timeout: float = NOTIFY_TIMEOUT,
        interceptors: Callable[[str], Sequence[Any]] | None = None,
    ) -> None:
        """`interceptors(socket_path)`: client interceptors for a registration channel (nodeagent.faults)."""
        self._interceptors = interceptors
        self._handlers = dict(handlers)
        self._dial_timeout = dial_timeout
        self._info_timeout = info_timeout
        self._notify_timeout = notify_timeout

    async def register(self, sock: SocketFile) -> RegisteredPlugin:
        path = sock.path
        await _probe(path, self._dial_timeout)
        chan = channel(Path(path), interceptors=self._interceptors(path) if self._interceptors else None)
        try:
            try:
                await asyncio.wait_for(chan.channel_ready(), self._dial_timeout)
            except TimeoutError:
                raise RegistrationError(
                    f"RegisterPlugin error -- dial failed at socket {path}, err: context deadline exceeded"
                ) from None
            stub = api_pb2_grpc.RegistrationStub(chan)
            return await self._register(stub, sock)
        finally:
            await chan.close(None)

    async def _register(self, stub: api_pb2_grpc.RegistrationAsyncStub, sock: SocketFile) -> RegisteredPlugin:
        path = sock.path
        try:
            resp = await stub.GetInfo(api_pb2.InfoRequest(), timeout=self._info_timeout)
        except grpc.aio.AioRpcError as err:
            raise RegistrationError(
                f"RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket {path}, "
                f"err: {rpc_error_text(err)}"
            ) from err
        info = PluginInfo(
            type=resp.type,
            name=resp.name,
            endpoint=resp.endpoint or path,
            supported_versions=tuple(resp.supported_versions),
            socket_path=path,
        )
        handler = self._handlers.get(info.type)
        if handler is None:
            text = f"RegisterPlugin error -- no handler registered for plugin type: {info.type} at socket {path}"
            await self._notify(stub, path, False, text)
            raise RegistrationError(text)
        problem = handler.validate(info)
        if problem is not None:
            text = f"RegisterPlugin error -- plugin validation failed with err: {problem}"
            await self._notify(stub, path, False, text)
            raise RegistrationError(text)
        try:
            await handler.register(info)
        except NodeAgentError as err:
            # As in the kubelet, the plugin stays in the actual world (no retry until its socket changes).
            logger.warning("plugin registration failed socket=%s name=%s err=%s", untrusted(path), untrusted(info.name),
                           untrusted(str(err), 1024))
            await self._notify(stub, path, False, f"RegisterPlugin error -- plugin registration failed with err: {err}")
            return RegisteredPlugin(sock, info, accepted=False)
        await self._notify(stub, path, True, "")
        logger.info("plugin registered socket=%s type=%s name=%s endpoint=%s", untrusted(path), untrusted(info.type),
                    untrusted(info.name), untrusted(info.endpoint))
        return RegisteredPlugin(sock, info)

    async def _notify(
        self, stub: api_pb2_grpc.RegistrationAsyncStub, path: str, registered: bool, error: str
    ) -> None:
        try:
            await stub.NotifyRegistrationStatus(
                api_pb2.RegistrationStatus(plugin_registered=registered, error=error), timeout=self._notify_timeout
            )
        except grpc.aio.AioRpcError as err:
            # The plugin's own answer does not change our decision (the kubelet only logs it too).
            logger.warning(
                "NotifyRegistrationStatus failed socket=%s registered=%s err=%s", untrusted(path), registered,
                untrusted(rpc_error_text(err), 1024)
            )

    async def unregister(self, plugin: RegisteredPlugin) -> None:
        if not plugin.accepted:
            return
        handler = self._handlers.get(plugin.info.type)
        if handler is None:
            return
        await handler.deregister(plugin.info.name, plugin.info.endpoint)
        logger.info("plugin deregistered socket=%s name=%s", untrusted(plugin.path), untrusted(plugin.info.name))
