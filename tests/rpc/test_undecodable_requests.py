"""Undecodable protobuf over a real socket: INTERNAL as grpc-go answers, one short log line, no traceback.

grpc.aio logs a full traceback for every request it cannot parse (9,506 of them, 41.7 MB of
log for 21k fuzzed calls); every UnixServer parses requests itself instead (DecodeErrorInterceptor).
"""

from __future__ import annotations

import logging
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from nodeagent.rpc.decoding import DecodeErrorInterceptor
from nodeagent.rpc.server import UnixServer, channel

pytestmark = pytest.mark.rpc

GARBAGE = b"\xff\xff\xff\xff\xff\xff"


async def test_garbage_answers_internal_and_logs_one_line_per_method(
    short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = UnixServer(short_dir / "s.sock", [])
    await server.start()
    try:
        async with channel(short_dir / "s.sock") as ch:
            check = ch.unary_unary("/grpc.health.v1.Health/Check", None, None)
            watch = ch.unary_stream("/grpc.health.v1.Health/Watch", None, None)
            reflect = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", None, None)
            for _ in range(30):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await check(GARBAGE, timeout=5)
                assert err.value.code() == grpc.StatusCode.INTERNAL
                assert err.value.details().startswith(
                    "grpc: error unmarshalling request: Error parsing message with type "
                    "'grpc.health.v1.HealthCheckRequest'")
            with pytest.raises(grpc.aio.AioRpcError) as err:
                async for _ in watch(GARBAGE, timeout=5):
                    pass
            assert err.value.code() == grpc.StatusCode.INTERNAL
            call = reflect(iter([GARBAGE]), timeout=5)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                async for _ in call:
                    pass
            assert err.value.code() == grpc.StatusCode.INTERNAL
            # well-formed calls are unaffected
            ok = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert ok.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(grace=0.1)
    assert not [r for r in caplog.records if r.exc_info], "no traceback is logged"
    lines = [r.getMessage() for r in caplog.records if "undecodable request" in r.getMessage()]
    assert len(lines) == 3, lines  # one per method, the 29 repeats of Check are counted, not logged
    assert all(len(line) < 600 and "\n" not in line for line in lines)


def test_repeated_failures_are_counted_into_the_next_line(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    interceptor = DecodeErrorInterceptor(now=lambda: now[0], log_every=10.0)
    for _ in range(5):
        assert interceptor.failed("/a.B/C", ValueError("x" * 100_000)).startswith(
            "grpc: error unmarshalling request: xxx")
    now[0] = 10.0
    interceptor.failed("/a.B/C", ValueError("bad"))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert len(lines[0]) < 600
    assert lines[1].endswith("(and 4 more since the last line)")
    assert len(interceptor.failed("/a.B/C", ValueError("y" * 100_000))) < 600


@pytest.mark.parametrize("good_before", [0, 1, 2])
async def test_a_bad_message_in_a_client_stream_ends_the_call_with_grpc_gos_stream_text(
    short_dir: Path, caplog: pytest.LogCaptureFixture, good_before: int
) -> None:
    """grpc-go's handler reads each message of a stream with RecvMsg, whose failure it returns:
    INTERNAL "grpc: failed to unmarshal the received message: ...", the answers to the messages
    before it delivered. A server-streaming call's one request is read the same way."""
    server = UnixServer(short_dir / "s.sock", [])
    await server.start()
    try:
        async with channel(short_dir / "s.sock") as ch:
            reflect = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", None, None)
            good = reflection_pb2.ServerReflectionRequest(list_services="").SerializeToString()
            call = reflect(iter([good] * good_before + [GARBAGE]), timeout=5)
            answers = []
            with pytest.raises(grpc.aio.AioRpcError) as err:
                async for answer in call:
                    answers.append(reflection_pb2.ServerReflectionResponse.FromString(answer))
            assert err.value.code() == grpc.StatusCode.INTERNAL
            assert err.value.details().startswith(
                "grpc: failed to unmarshal the received message: Error parsing message with type "
                "'grpc.reflection.v1alpha.ServerReflectionRequest'"), err.value.details()
            assert len(answers) == good_before
            assert all(a.list_services_response.service for a in answers)
            watch = ch.unary_stream("/grpc.health.v1.Health/Watch", None, None)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                async for _ in watch(GARBAGE, timeout=5):
                    pass
            assert err.value.code() == grpc.StatusCode.INTERNAL
            assert err.value.details().startswith("grpc: failed to unmarshal the received message: ")
            # the server goes on answering
            ok = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert ok.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(grace=0.1)
    assert not [r for r in caplog.records if r.exc_info], "no traceback is logged"
