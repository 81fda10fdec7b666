"""grpc.aio server interceptors: per-call metrics for every server, rate limiting for pod-resources.

`MetricsInterceptor` counts each call by service, method and status code and observes
its duration (Instruments.grpc_requests / grpc_duration); every server the daemon runs
takes one. `RateLimitInterceptor` is the kubelet's pod-resources limiter
(pkg/kubelet/apis/grpc/ratelimit.go): unary calls over the token bucket fail with
RESOURCE_EXHAUSTED "rejected by rate limit" before reaching the servicer. The bucket
itself is pure (podresources/ratelimit.py). Health checks and reflection never take a token:
they are the socket's own plumbing (UnixServer adds them), not the API being limited, and a
client hammering the API must not make the socket look dead to its liveness probe.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc

from nodeagent.logtext import LogLimiter, untrusted
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.meta import safe_text
from nodeagent.podresources.ratelimit import TokenBucket

if TYPE_CHECKING:
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
    _Handler = grpc.RpcMethodHandler[Any, Any]
else:
    _Interceptor = grpc.aio.ServerInterceptor
    _Handler = grpc.RpcMethodHandler

logger = logging.getLogger(__name__)

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[_Handler]]

RATE_LIMIT_MESSAGE = "rejected by rate limit"

UNLIMITED_SERVICES = frozenset({
    "grpc.health.v1.Health",
    "grpc.reflection.v1alpha.ServerReflection",
    "grpc.reflection.v1.ServerReflection",
})
"""Services the rate limiter never rejects: health and reflection, served next to every API."""


def split_method(full: str) -> tuple[str, str]:
    """'/pkg.Service/Method' -> ('pkg.Service', 'Method')."""
    _, _, rest = full.partition("/")
    service, _, method = rest.rpartition("/")
    return service or "unknown", method or full


def _code_name(context: Any, failed: bool) -> str:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code.name
    if code is None or code == 0:
        return grpc.StatusCode.UNKNOWN.name if failed else grpc.StatusCode.OK.name
    for known in grpc.StatusCode:
        if known.value[0] == code:
            return known.name
    return grpc.StatusCode.UNKNOWN.name


class MetricsInterceptor(_Interceptor):
    """Counts calls and observes durations per service/method/code on Instruments."""

    def __init__(self, instruments: Instruments) -> None:
        self._requests = instruments.grpc_requests
        self._duration = instruments.grpc_duration
        # method path -> (the server's handler, our wrapped one): handlers are registered once,
        # so wrapping them once keeps the per-call cost to the timing itself.
        self._wrapped: dict[str, tuple[_Handler, _Handler]] = {}

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> _Handler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        cached = self._wrapped.get(handler_call_details.method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(handler_call_details.method, handler)
        self._wrapped[handler_call_details.method] = (handler, wrapped)
        return wrapped

    def _wrap(self, full_method: str, handler: _Handler) -> _Handler:
        service, method = split_method(full_method)
        requests = self._requests
        duration = self._duration.labels(service, method)

        def record(context: Any, started: float, failed: bool) -> None:
            requests.labels(service, method, _code_name(context, failed)).inc()
            duration.observe(time.perf_counter() - started)

        def wrap_call(behaviour: Callable[..., Any]) -> Callable[..., Any]:
            async def call(request: Any, context: Any) -> Any:
                started = time.perf_counter()
                failed = True
                try:
                    result = behaviour(request, context)
                    if inspect.isawaitable(result):
                        result = await result
                    failed = False
                    return result
                finally:
                    record(context, started, failed)

            return call

        def wrap_stream(behaviour: Callable[..., Any]) -> Callable[..., Any]:
            async def stream(request: Any, context: Any) -> AsyncIterator[Any]:
                started = time.perf_counter()
                failed = True
                try:
                    async for item in behaviour(request, context):
                        yield item
                    failed = False
                finally:
                    record(context, started, failed)

            return stream

        def wrap(behaviour: Callable[..., Any]) -> Callable[..., Any]:
            return wrap_stream(behaviour) if inspect.isasyncgenfunction(behaviour) else wrap_call(behaviour)

        return _rewrap(handler, wrap)


class RateLimitInterceptor(_Interceptor):
    """Rejects unary API calls over the token bucket with RESOURCE_EXHAUSTED, as the kubelet does
    (one bucket for every client, as upstream); UNLIMITED_SERVICES pass untouched."""

    def __init__(self, bucket: TokenBucket) -> None:
        self._bucket = bucket

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> _Handler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming or handler.response_streaming:
            return handler
        if split_method(handler_call_details.method)[0] in UNLIMITED_SERVICES:
            return handler
        if self._bucket.allow():
            return handler

        async def reject(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, RATE_LIMIT_MESSAGE)

        return grpc.unary_unary_rpc_method_handler(
            reject,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def rate_limit(qps: float, burst: int, now: Callable[[], float] = time.monotonic) -> RateLimitInterceptor:
    """The pod-resources limiter from cfg.agent.pod_resources (qps, burst)."""
    return RateLimitInterceptor(TokenBucket(qps, burst, now))


class DecodeErrorInterceptor(_Interceptor):
    """Undecodable requests: INTERNAL "grpc: error unmarshalling request: ..." (grpc-go's answer) and
    one short log line per method and `log_every` seconds, with the count of those not logged.

    Left to grpc.aio, a request that fails to parse is logged with a full traceback each time
    (9,506 tracebacks, 41.7 MB of log for 21k fuzzed calls) and answered UNKNOWN. So the
    handler takes raw bytes and its behaviour parses them, where a failure can be answered.
    """

    def __init__(self, now: Callable[[], float] = time.monotonic, log_every: float = 10.0) -> None:
        self._now = now
        self._log = LogLimiter(log_every)
        self._wrapped: dict[str, tuple[_Handler, _Handler]] = {}

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> _Handler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        method = handler_call_details.method
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        wrapped = self._wrap(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def failed(self, method: str, err: Exception) -> str:
        """Log (rate-limited) and return the status text for an undecodable request of `method`."""
        text = f"grpc: error unmarshalling request: {safe_text(str(err), 512)}"
        more = self._log.allow(method, self._now())
        if more is None:
            return text
        logger.warning("undecodable request method=%s err=%s%s", untrusted(method), untrusted(str(err)),
                       f" (and {more} more since the last line)" if more else "")
        return text

    def _wrap(self, method: str, handler: _Handler) -> _Handler:
        parse = handler.request_deserializer
        assert parse is not None
        ser = handler.response_serializer

        async def decode(raw: bytes, context: Any) -> Any:
            try:
                return parse(raw)
            except Exception as err:  # any parser failure is the request's fault
                await context.abort(grpc.StatusCode.INTERNAL, self.failed(method, err))

        async def requests(raw_iter: AsyncIterator[bytes], context: Any) -> AsyncIterator[Any]:
            async for raw in raw_iter:
                yield await decode(raw, context)

        def unary_in(behaviour: Callable[..., Any], streaming_out: bool) -> Callable[..., Any]:
            if streaming_out and inspect.isasyncgenfunction(behaviour):
                async def gen(raw: bytes, context: Any) -> AsyncIterator[Any]:
                    request = await decode(raw, context)
                    async for item in behaviour(request, context):
                        yield item
                return gen

            async def call(raw: bytes, context: Any) -> Any:
                result = behaviour(await decode(raw, context), context)
                return await result if inspect.isawaitable(result) else result
            return call

        def stream_in(behaviour: Callable[..., Any], streaming_out: bool) -> Callable[..., Any]:
            if streaming_out and inspect.isasyncgenfunction(behaviour):
                async def gen(raw_iter: AsyncIterator[bytes], context: Any) -> AsyncIterator[Any]:
                    async for item in behaviour(requests(raw_iter, context), context):
                        yield item
                return gen

            async def call(raw_iter: AsyncIterator[bytes], context: Any) -> Any:
                result = behaviour(requests(raw_iter, context), context)
                return await result if inspect.isawaitable(result) else result
            return call

        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(unary_in(handler.unary_unary, False), None, ser)
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(unary_in(handler.unary_stream, True), None, ser)
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(stream_in(handler.stream_unary, False), None, ser)
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(stream_in(handler.stream_stream, True), None, ser)
        return handler


def _rewrap(handler: _Handler, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> _Handler:
    des, ser = handler.request_deserializer, handler.response_serializer
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(wrap(handler.unary_unary), des, ser)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(wrap(handler.unary_stream), des, ser)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(wrap(handler.stream_unary), des, ser)
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(wrap(handler.stream_stream), des, ser)
    return handler
