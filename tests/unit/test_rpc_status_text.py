"""gRPC error texts are valid UTF-8 and bounded, or the status cannot be sent and the call hangs."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from nodeagent.errors import ValidationError
from nodeagent.rpc.status import handle_errors


class Aborted(Exception):
    pass


class Context:
    def __init__(self) -> None:
        self.aborts: list[tuple[grpc.StatusCode, str]] = []

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborts.append((code, details))
        raise Aborted


class Servicer:
    @handle_errors
    async def Call(self, request: Any, context: Any) -> None:
        raise ValidationError("metadata.name", f"Invalid value: {request}")


@pytest.mark.parametrize("text", ["a\ud83d", "x" * 20_000])
async def test_abort_text_is_encodable_and_bounded(text: str) -> None:
    ctx = Context()
    with pytest.raises(Aborted):
        await Servicer().Call(text, ctx)
    code, details = ctx.aborts[0]
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert len(details.encode("utf-8")) < 8 * 1024
