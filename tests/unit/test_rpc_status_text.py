"""gRPC error texts are valid UTF-8 and bounded, or the status cannot be sent and the call hangs."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from nodeagent.errors import ValidationError
from nodeagent.rpc.status import handle_errors


class Context:
    """The status the handler sets (it sets it and returns: grpc.aio kept an aborted call's memory, issue 25)."""

    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details


class Servicer:
    @handle_errors
    async def Call(self, request: Any, context: Any) -> None:
        raise ValidationError("metadata.name", f"Invalid value: {request}")


@pytest.mark.parametrize("text", ["a\ud83d", "x" * 20_000])
async def test_abort_text_is_encodable_and_bounded(text: str) -> None:
    ctx = Context()
    await Servicer().Call(text, ctx)
    assert ctx.code is grpc.StatusCode.INVALID_ARGUMENT
    assert len(ctx.details.encode("utf-8")) < 8 * 1024
