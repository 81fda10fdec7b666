"""Undecodable requests on every server: grpc-go's INTERNAL answer and a bounded, rate-limited log.

A module of its own because every UnixServer installs it (rpc/server.py), and the other
interceptors (rpc/interceptors.py) pull in what only some servers need.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from nodeagent.errors import safe_text
from nodeagent.rpc.handlers import Continuation, rewrap
from nodeagent.rpc.handlers import Handler as _Handler
from nodeagent.rpc.handlers import Interceptor as _Interceptor
from nodeagent.util.logtext import LogLimiter, untrusted

logger = logging.getLogger(__name__)
UNARY_PREFIX = "grpc: error unmarshalling request: "
"""grpc-go's status text for a unary call's undecodable request (server.go processUnaryRPC)."""
STREAM_PREFIX = "grpc: failed to unmarshal the received message: "
"""grpc-go's status text for an undecodable message that a handler's RecvMsg reads (rpc_util.go recv)."""
_UNDECODABLE = object()
"""What decode_one answers for a request the parser refused (its status already set on the call)."""


class DecodeErrorInterceptor(_Interceptor):
    """Undecodable requests: INTERNAL with grpc-go's text and one short log line per method and
    `log_every` seconds, with the count of those not logged.

    grpc-go words it two ways (v1.82.1, the version Kubernetes v1.37.2 builds with): a unary call's
    request is parsed by the server (server.go processUnaryRPC: "grpc: error unmarshalling request:
    ..."), every other kind's by the handler's RecvMsg (rpc_util.go recv: "grpc: failed to unmarshal
    the received message: ..."), which the generated handler returns as the call's status. So a
    server-streaming call's one request and every message of a client stream, the first or a later
    one, take the second text; the responses sent before a bad message in a stream stay delivered
    (compared with a grpc-go v1.82.1 server: same codes, prefixes and answers delivered). Intended
    difference: the text after the prefix is Python protobuf's ("Error parsing message with type
    'X': Wire format was corrupt"), not Go's ("proto: cannot parse invalid wire-format data"): the
    parser does not say which rule the bytes broke, so Go's several reasons cannot be told apart.

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

    def failed(self, method: str, err: Exception, *, unary: bool = True) -> str:
        """Log (rate-limited) and return the status text for an undecodable request of `method`
        (`unary`: a unary call's, else a streaming call's, which grpc-go words differently)."""
        text = f"{UNARY_PREFIX if unary else STREAM_PREFIX}{safe_text(str(err), 512)}"
        more = self._log.allow(method, self._now())
        if more is None:
            return text
        logger.warning("undecodable request method=%s err=%s%s", untrusted(method), untrusted(str(err)),
                       f" (and {more} more since the last line)" if more else "")
        return text

    def _wrap(self, method: str, handler: _Handler) -> _Handler:
        parse = handler.request_deserializer
        assert parse is not None

        async def decode(raw: bytes, context: Any) -> Any:
            try:
                return parse(raw)
            except Exception as err:  # any parser failure is the request's fault
                await context.abort(grpc.StatusCode.INTERNAL, self.failed(method, err, unary=False))

        def decode_one(raw: bytes, context: Any, unary: bool) -> Any:
            """The request, or _UNDECODABLE with the call's status set. Not context.abort: grpc.aio keeps
            abort's exception in the call's state, in a cycle with these frames (and the raw request) that
            the garbage collector cannot see through, so each undecodable request was kept for ever (issue
            25); with the status set and the handler returning, grpc.aio discards what it returns."""
            try:
                return parse(raw)
            except Exception as err:  # any parser failure is the request's fault
                context.set_code(grpc.StatusCode.INTERNAL)
                context.set_details(self.failed(method, err, unary=unary))
                return _UNDECODABLE

        async def requests(raw_iter: AsyncIterator[bytes], context: Any) -> AsyncIterator[Any]:
            async for raw in raw_iter:
                yield await decode(raw, context)

        def unary_in(behaviour: Callable[..., Any], streaming_out: bool) -> Callable[..., Any]:
            if streaming_out and inspect.isasyncgenfunction(behaviour):
                async def gen(raw: bytes, context: Any) -> AsyncIterator[Any]:
                    request = decode_one(raw, context, unary=False)
                    if request is _UNDECODABLE:
                        return
                    async for item in behaviour(request, context):
                        yield item
                return gen

            async def call(raw: bytes, context: Any) -> Any:
                request = decode_one(raw, context, unary=not streaming_out)
                if request is _UNDECODABLE:
                    return None
                result = behaviour(request, context)
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

        streaming_out = handler.response_streaming
        if handler.request_streaming:
            return rewrap(handler, lambda b: stream_in(b, streaming_out), request_deserializer=None)
        return rewrap(handler, lambda b: unary_in(b, streaming_out), request_deserializer=None)
