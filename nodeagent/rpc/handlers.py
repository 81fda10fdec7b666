"""Rewrapping a grpc.aio method handler's behaviour, kept once for every server interceptor.

The interceptors (metrics, rate limit, peer credentials, request decoding) each replace the
behaviour of the handler they are given by a wrapper; the four handler kinds and their
constructors are told apart here only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc

if TYPE_CHECKING:
    Interceptor = grpc.aio.ServerInterceptor[Any, Any]
    Handler = grpc.RpcMethodHandler[Any, Any]
else:
    Interceptor = grpc.aio.ServerInterceptor
    Handler = grpc.RpcMethodHandler

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[Handler]]
_KEEP: Any = object()


def rewrap(handler: Handler, wrap: Callable[[Callable[..., Any]], Callable[..., Any]], *,
           request_deserializer: Any = _KEEP) -> Handler:
    """`handler` with `wrap(behaviour)` as its behaviour; `request_deserializer` replaces the
    handler's (None: the behaviour gets the raw bytes)."""
    des = handler.request_deserializer if request_deserializer is _KEEP else request_deserializer
    ser = handler.response_serializer
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(wrap(handler.unary_unary), des, ser)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(wrap(handler.unary_stream), des, ser)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(wrap(handler.stream_unary), des, ser)
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(wrap(handler.stream_stream), des, ser)
    return handler
