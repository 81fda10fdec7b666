"""Applying faults: grpc.aio interceptors on the node's channels to plugins and on the sockets it serves.

`FaultInjector` holds the active rules (rules.FaultSet), the call record (record.CallLog) and
the streams open to plugins now. Each channel to a plugin gets its own client interceptors
(`client_interceptors(plugin)`), which

- record every call: a unary call when it ends, a stream when it opens and when it closes;
- delay a call on the injected clock (a delay that reaches the call's deadline ends it with
  DEADLINE_EXCEEDED, as the wait would on the wire; a shorter one leaves the rest of the
  deadline to the call) or fail it with the rule's status, without reaching the plugin;
- drop a stream (ListAndWatch, NodeWatchResources): the node cancels it and its reader sees
  CANCELLED, as when the connection goes; what follows is what the kubelet does then (the
  device manager starts the plugin's grace period and waits for it to register again, the
  DRA health stream is reopened after 5 s). A drop rule takes the matching streams open when
  it is added; left over, it takes new streams right after their first message.

`server_interceptor()` delays or fails calls the node serves (pod-resources, Pods API,
device-plugin Register) and refuses device-plugin registrations (a plain error, UNKNOWN on the
wire, as the kubelet's Register errors are). Faulted served calls are recorded too.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import grpc
from google.protobuf.message import DecodeError, Message
from google.protobuf.text_format import MessageToString

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2 as dp_api
from nodeagent.faults.model import DELAY, DROP, FAIL, REFUSE, REFUSE_MESSAGE, FaultRule
from nodeagent.faults.record import CALL, CLOSE, OPEN, CallLog
from nodeagent.faults.rules import CALL_ACTIONS, FaultSet, plugin_from_socket
from nodeagent.util.clock import Clock

if TYPE_CHECKING:
    _UnaryUnary = grpc.aio.UnaryUnaryClientInterceptor[Any, Any]
    _UnaryStream = grpc.aio.UnaryStreamClientInterceptor[Any, Any]
    _ServerInterceptor = grpc.aio.ServerInterceptor[Any, Any]
    _Handler = grpc.RpcMethodHandler[Any, Any]
else:
    _UnaryUnary = grpc.aio.UnaryUnaryClientInterceptor
    _UnaryStream = grpc.aio.UnaryStreamClientInterceptor
    _ServerInterceptor = grpc.aio.ServerInterceptor
    _Handler = grpc.RpcMethodHandler

SUMMARY_LIMIT = 160
DROPPED = "stream dropped by a nodeagent fault"
SERVED = "served"


def method_name(path: str | bytes) -> str:
    """'/v1beta1.DevicePlugin/Allocate' -> 'Allocate'."""
    text = path.decode() if isinstance(path, bytes) else path
    return text.rsplit("/", 1)[-1]


def summarize(request: object) -> str:
    """A short one-line text of a request (for the record only; messages never enter state)."""
    if isinstance(request, bytes):
        return f"({len(request)} bytes)"
    if not isinstance(request, Message):
        return ""
    text = MessageToString(request, as_one_line=True)
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 3] + "..."


def rpc_error(code: str, message: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(grpc.StatusCode[code], grpc.aio.Metadata(), grpc.aio.Metadata(), details=message,
                                debug_error_string=None)


@dataclass(eq=False)
class _OpenStream:
    plugin: str
    method: str
    call: Any
    drop_after_first: FaultRule | None = None
    dropped_by: FaultRule | None = None

    def drop(self, rule: FaultRule) -> None:
        self.dropped_by = rule
        self.call.cancel()


@dataclass
class FaultInjector:
    """The node's faults and call record, and the interceptors that apply them."""

    clock: Clock
    faults: FaultSet = field(default_factory=FaultSet)
    log: CallLog = field(default_factory=CallLog)
    _streams: set[_OpenStream] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.faults.on_drop(self._drop_open)

    def client_interceptors(self, plugin: str) -> list[grpc.aio.ClientInterceptor]:
        """Interceptors for one channel to `plugin` (extended resource name or DRA driver name)."""
        return [cast(grpc.aio.ClientInterceptor, _ClientUnary(self, plugin)),
                cast(grpc.aio.ClientInterceptor, _ClientStream(self, plugin))]

    def registration_interceptors(self, socket_path: str) -> list[grpc.aio.ClientInterceptor]:
        """Interceptors for a registration socket, named as its plugin: by the socket's name
        (`DRIVER-reg.sock` -> DRIVER) until GetInfo answers, then by the name GetInfo gives, so the
        calls of a driver on a rolling-update socket (`DRIVER-<pod uid>-reg.sock`, or the hashed
        `dra-<hash>-reg.sock` of kubeletplugin's RollingUpdateRegistrarSocketFile) are recorded,
        and matched by fault rules, under the driver's name."""
        return [cast(grpc.aio.ClientInterceptor, _RegistrationUnary(self, plugin_from_socket(socket_path)))]

    def server_interceptor(self) -> grpc.aio.ServerInterceptor:  # type: ignore[type-arg]
        return _ServerFaults(self)

    def open_streams(self) -> list[tuple[str, str]]:
        return sorted((s.plugin, s.method) for s in self._streams)

    def _drop_open(self, rule: FaultRule) -> None:
        for stream in sorted(self._streams, key=id):
            if stream.method != rule.method or (rule.plugin and rule.plugin != stream.plugin):
                continue
            if stream.dropped_by is not None or not self.faults.take(rule.id):
                continue
            stream.drop(rule)

    def record(self, plugin: str, method: str, event: str, started: float, **kw: Any) -> None:
        self.log.add(self.clock.now(), plugin, method, event, duration=time.perf_counter() - started, **kw)

    async def before_call(self, rule: FaultRule | None, timeout: float | None) -> float | None:
        """Apply a delay or fail rule before the call goes out; returns the timeout left for it."""
        if rule is None:
            return timeout
        if rule.action == FAIL:
            raise rpc_error(rule.code, rule.message)
        if rule.action == DELAY:
            if timeout is not None and rule.delay >= timeout:
                await self.clock.sleep(timeout)
                raise rpc_error("DEADLINE_EXCEEDED", "Deadline Exceeded")
            await self.clock.sleep(rule.delay)
            if timeout is not None:
                return timeout - rule.delay
        return timeout


def _registering(method: str, request: Any) -> str:
    """The resource a device-plugin Register call names ("" for other calls). The request may still be
    bytes: the server's decode interceptor (rpc/interceptors.py) parses inside the handler."""
    if method != "Register":
        return ""
    if isinstance(request, bytes):
        try:
            request = dp_api.RegisterRequest.FromString(request)
        except DecodeError:
            return ""
    return str(getattr(request, "resource_name", ""))


def _code_of(err: BaseException) -> str:
    if isinstance(err, grpc.aio.AioRpcError):
        return str(err.code().name)
    if isinstance(err, asyncio.CancelledError):
        return "CANCELLED"
    return "UNKNOWN"


class _Client:
    """What both client interceptors of one channel share: the injector, the plugin, the decision."""

    def __init__(self, injector: FaultInjector, plugin: str) -> None:
        self._i = injector
        self._plugin = plugin

    def _decide(self, details: Any) -> tuple[str, float, FaultRule | None]:
        method = method_name(details.method)
        return method, time.perf_counter(), self._i.faults.match(method, self._plugin)


class _ClientUnary(_Client, _UnaryUnary):
    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        method, started, rule = self._decide(client_call_details)
        code = "OK"
        try:
            timeout = await self._i.before_call(rule, client_call_details.timeout)
            if timeout != client_call_details.timeout:
                client_call_details = client_call_details._replace(timeout=timeout)
            call = await continuation(client_call_details, request)
            await call
            return call
        except BaseException as err:
            code = _code_of(err)
            raise
        finally:
            self._i.record(self._plugin, method, CALL, started, summary=summarize(request), code=code,
                           fault=rule.describe() if rule else "")


class _RegistrationUnary(_ClientUnary):
    """A registration channel's calls (GetInfo, NotifyRegistrationStatus): the plugin's name is
    the one GetInfo answers with, once it has (the GetInfo call itself is recorded under it)."""

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        async def learning(details: Any, req: Any) -> Any:
            call = await continuation(details, req)
            if method_name(details.method) == "GetInfo":
                name = str(getattr(await call, "name", "") or "")
                if name:
                    self._plugin = name
            return call

        return await super().intercept_unary_unary(learning, client_call_details, request)


class _ClientStream(_Client, _UnaryStream):
    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        method, started, rule = self._decide(client_call_details)
        fault = rule.describe() if rule else ""
        try:
            await self._i.before_call(rule, client_call_details.timeout)
        except BaseException as err:
            self._i.record(self._plugin, method, OPEN, started, summary=summarize(request), code=_code_of(err),
                           fault=fault)
            raise
        call = await continuation(client_call_details, request)
        stream = _OpenStream(self._plugin, method, call)
        stream.drop_after_first = self._i.faults.match(method, self._plugin, frozenset({DROP}))
        self._i.record(self._plugin, method, OPEN, started, summary=summarize(request), fault=fault)
        return self._iterate(stream, time.perf_counter())

    async def _iterate(self, stream: _OpenStream, opened: float) -> AsyncIterator[Any]:
        i = self._i
        i._streams.add(stream)
        code = "OK"
        try:
            try:
                async for msg in stream.call:
                    yield msg
                    if stream.drop_after_first is not None:
                        stream.drop(stream.drop_after_first)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if stream.dropped_by is None or (task is not None and task.cancelling()):
                    raise
                raise rpc_error("CANCELLED", DROPPED) from None
        except BaseException as err:
            code = _code_of(err)
            raise
        finally:
            i._streams.discard(stream)
            i.record(stream.plugin, stream.method, CLOSE, opened, code=code,
                     fault=stream.dropped_by.describe() if stream.dropped_by else "")


class _ServerFaults(_ServerInterceptor):
    """Delays and fails served calls, refuses device-plugin registrations."""

    def __init__(self, injector: FaultInjector) -> None:
        self._i = injector

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[_Handler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> _Handler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming:
            return handler
        method = method_name(handler_call_details.method)
        des, ser = handler.request_deserializer, handler.response_serializer
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(self._unary(method, handler.unary_unary), des, ser)
        if handler.unary_stream is not None:
            behaviour = handler.unary_stream
            wrapped = (self._stream(method, behaviour) if inspect.isasyncgenfunction(behaviour)
                       else self._unary(method, behaviour))
            return grpc.unary_stream_rpc_method_handler(wrapped, des, ser)
        return handler

    def _decide(self, method: str, request: Any) -> FaultRule | None:
        plugin = _registering(method, request)
        if method == "Register":
            refused = self._i.faults.match("", plugin, frozenset({REFUSE}))
            if refused is not None:
                return refused
        return self._i.faults.match(method, plugin, CALL_ACTIONS)

    async def _apply(self, rule: FaultRule, method: str, request: Any, context: Any) -> bool:
        """Apply `rule`; whether it refused the call (its status then set: not context.abort, whose exception
        the call's state keeps in a cycle with the request, so each refused request stayed in memory)."""
        started = time.perf_counter()
        plugin = _registering(method, request)
        if rule.action == DELAY:
            await self._i.clock.sleep(rule.delay)
            self._i.record(plugin, method, SERVED, started, summary=summarize(request), fault=rule.describe())
            return False
        code, text = (("UNKNOWN", f"{rule.message or REFUSE_MESSAGE}: {plugin}") if rule.action == REFUSE
                      else (rule.code, rule.message))
        self._i.record(plugin, method, SERVED, started, summary=summarize(request), code=code,
                       fault=rule.describe())
        context.set_code(grpc.StatusCode[code])
        context.set_details(text)
        return True

    def _unary(self, method: str, behaviour: Callable[..., Any]) -> Callable[..., Any]:
        async def call(request: Any, context: Any) -> Any:
            rule = self._decide(method, request)
            if rule is not None and await self._apply(rule, method, request, context):
                return None
            result = behaviour(request, context)
            return await result if inspect.isawaitable(result) else result

        return call

    def _stream(self, method: str, behaviour: Callable[..., Any]) -> Callable[..., Any]:
        async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
            rule = self._decide(method, request)
            if rule is not None and await self._apply(rule, method, request, context):
                return
            async for item in behaviour(request, context):
                yield item

        return stream
