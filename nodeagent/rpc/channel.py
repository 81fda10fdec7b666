"""The client side of the node's unix-socket gRPC: one channel factory with the kubelet's message limits.

Apart from server.py so that a client (the `nodeagent describe` and `device set-health` commands
above all) imports grpc alone, not the server's health, reflection and interceptor modules: the
CLI's start-up time is mostly imports.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

# Upstream clients raise the receive limit to 16 MiB; match it on both sides.
MAX_MESSAGE = 16 * 1024 * 1024
CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.max_send_message_length", MAX_MESSAGE),
)


def channel(
    path: Path, *, authority: str | None = "localhost", interceptors: Sequence[Any] | None = None
) -> grpc.aio.Channel:
    """An insecure channel to a unix socket, with the kubelet's message limits (and client
    interceptors, e.g. the faults' on channels to plugins)."""
    options = list(CHANNEL_OPTIONS)
    if authority:
        options.append(("grpc.default_authority", authority))
    return grpc.aio.insecure_channel(f"unix:{path}", options=options, interceptors=interceptors or None)
