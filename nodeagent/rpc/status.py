"""The only mapping from NodeAgentError classes to gRPC status codes.

Servicers catch NodeAgentError and abort with the mapped code; anything else is a bug,
logged and answered with INTERNAL. KubeletError maps to UNKNOWN because the kubelet
returns plain Go errors, which reach the wire as UNKNOWN with the text as message.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from nodeagent import errors
from nodeagent.errors import safe_text

logger = logging.getLogger(__name__)

_CODES: tuple[tuple[type[errors.NodeAgentError], grpc.StatusCode], ...] = (
    (errors.KubeletError, grpc.StatusCode.UNKNOWN),
    (errors.ValidationError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.ConfigError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (errors.Conflict, grpc.StatusCode.ABORTED),
    (errors.Exhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.Unavailable, grpc.StatusCode.UNAVAILABLE),
    (errors.PluginCallError, grpc.StatusCode.UNKNOWN),
)


def code_for(err: errors.NodeAgentError) -> grpc.StatusCode:
    for cls, code in _CODES:
        if isinstance(err, cls):
            return code
    return grpc.StatusCode.UNKNOWN


R = TypeVar("R")


def handle_errors(
    method: Callable[..., Awaitable[R]],
) -> Callable[..., Awaitable[R]]:
    """Decorate an async servicer method: NodeAgentError -> mapped status, others -> INTERNAL."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> R:
        try:
            return await method(self, request, context)
        except errors.NodeAgentError as err:
            # valid UTF-8 and bounded, or the status cannot be sent and the call never ends
            code, details = code_for(err), safe_text(str(err))
        except grpc.aio.AbortError:
            raise
        except Exception:
            logger.exception("internal error in %s", method.__qualname__)
            code, details = grpc.StatusCode.INTERNAL, f"internal error in {method.__name__}"
        # The status is set and the handler returns, instead of context.abort: grpc.aio keeps abort's
        # exception in the call's state, whose cycle (exception -> traceback -> these frames -> context ->
        # call state) the garbage collector cannot see through, so every refused call kept its request,
        # error and frames for ever (a 16 MiB request: 32 MiB each, issue 25). A non-OK status makes
        # grpc.aio discard the returned message.
        context.set_code(code)
        context.set_details(details)
        return None  # type: ignore[return-value]

    return wrapper
