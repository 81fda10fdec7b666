"""Refused gRPC calls give their memory back (issue 25: each 16 MiB message kept 33-86 MB).

A call the servicer refuses (a NodeAgentError: pod-resources Get of an unknown pod) and a request
that does not parse (DecodeErrorInterceptor) and one the rate limiter refuses used to end in
context.abort. grpc.aio keeps abort's
exception in the call's state, in a cycle (exception, traceback, the handler's frames, the context,
the call's state) the garbage collector cannot break, so the request and the error text were kept
for ever. Measured here with tracemalloc over a real server on a unix socket: after the calls and a
collection, Python holds less than one request's size more than before.
"""

from __future__ import annotations

import asyncio
import gc
import math
import tracemalloc
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.metrics.instruments import Instruments
from nodeagent.podresources import service
from nodeagent.podresources.fakes import VersionedResources
from nodeagent.rpc import interceptors
from nodeagent.rpc.server import UnixServer

pytestmark = pytest.mark.rpc
SIZE = 4 * 1024 * 1024
CALLS = 6


def _send(path: Path, method: str, raw: bytes) -> list[tuple[grpc.StatusCode, str]]:
    """CALLS blocking calls with a raw request; their codes and the head of their details."""
    got = []
    with grpc.insecure_channel(f"unix:{path}", options=[("grpc.max_send_message_length", 2 * SIZE)]) as ch:
        rpc = ch.unary_unary(method, request_serializer=None, response_deserializer=None)
        for _ in range(CALLS):
            try:
                rpc(raw, timeout=30)
            except grpc.RpcError as err:
                got.append((err.code(), (err.details() or "")[:40]))
    return got


_GET = v1.GetPodResourcesRequest(pod_name="x" * SIZE, pod_namespace="default").SerializeToString()


@pytest.mark.parametrize(("method", "raw", "code", "details", "qps"), [
    ("/v1.PodResourcesLister/Get", _GET, grpc.StatusCode.UNKNOWN, "pod xxxx", math.inf),
    ("/v1.PodResourcesLister/List", b"\xff" * SIZE, grpc.StatusCode.INTERNAL, "grpc: error unmarshalling request",
     math.inf),
    ("/v1.PodResourcesLister/Get", _GET, grpc.StatusCode.RESOURCE_EXHAUSTED, interceptors.RATE_LIMIT_MESSAGE, 1e-9),
], ids=["refused-by-the-servicer", "undecodable", "rate-limited"])
async def test_refused_calls_keep_nothing(short_dir: Path, method: str, raw: bytes, code: grpc.StatusCode,
                                          details: str, qps: float) -> None:
    res = VersionedResources()
    inst = Instruments(CollectorRegistry())
    path = short_dir / "pr.sock"
    # a burst of 1 at a rate of nothing: the warm-up call takes the one token, the limiter refuses every later
    # call after decoding its request
    server = UnixServer(path, service.services(res, res, res, res, res, instruments=inst, gates=lambda _: True),
                        interceptors=[interceptors.MetricsInterceptor(inst),
                                      interceptors.rate_limit(qps, 10 if qps > 1 else 1, lambda: 0.0)])
    await server.start()
    tracemalloc.start()
    try:
        await asyncio.to_thread(_send, path, method, raw[:16])  # warm: the first call's one-off allocations
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        got = await asyncio.to_thread(_send, path, method, raw)
        await asyncio.sleep(0.2)  # the server's side of the last call ends
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        await server.stop(0)
    assert [c for c, _ in got] == [code] * CALLS
    assert all(d.startswith(details) for _, d in got), got
    assert kept < SIZE, f"{kept / 2**20:.1f} MiB kept after {CALLS} refused calls of {SIZE / 2**20:.0f} MiB"
