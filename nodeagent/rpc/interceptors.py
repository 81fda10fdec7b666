"""grpc.aio server interceptors: per-call metrics for every server, rate limiting for pod-resources.

`MetricsInterceptor` counts each call by service, method and status code and observes
its duration (Instruments.grpc_requests / grpc_duration); every server the daemon runs
takes one. `RateLimitInterceptor` is the kubelet's pod-resources limiter
(pkg/kubelet/apis/grpc/ratelimit.go): unary calls over the token bucket fail with
RESOURCE_EXHAUSTED "rejected by rate limit" before reaching the servicer. The bucket
itself is pure (rpc/ratelimit.py). Health checks and reflection never take a token:
they are the socket's own plumbing (UnixServer adds them), not the API being limited, and a
client hammering the API must not make the socket look dead to its liveness probe.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from nodeagent.metrics.instruments import Instruments
from nodeagent.rpc.handlers import Continuation, rewrap
from nodeagent.rpc.handlers import Handler as _Handler
from nodeagent.rpc.handlers import Interceptor as _Interceptor
from nodeagent.rpc.ratelimit import TokenBucket

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

        return rewrap(handler, wrap)


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
            # the status set and nothing returned, not context.abort: abort's exception stays in the call's
            # state in a cycle with this frame, so every refused request (up to 16 MiB) was kept (rpc/status.py)
            context.set_code(grpc.StatusCode.RESOURCE_EXHAUSTED)
            context.set_details(RATE_LIMIT_MESSAGE)
            return None

        return grpc.unary_unary_rpc_method_handler(
            reject,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def rate_limit(qps: float, burst: int, now: Callable[[], float] = time.monotonic) -> RateLimitInterceptor:
    """The pod-resources limiter from cfg.agent.pod_resources (qps, burst)."""
    return RateLimitInterceptor(TokenBucket(qps, burst, now))
