"""Hostile device-plugin registrations over the real kubelet.sock: bounded metric, quoted logs, deadlines.

kubelet_device_plugin_registration_total gets a series only for a valid resource name with a
supported version, and for at most MAX_RESOURCE_SERIES names; a name with a newline cannot
forge a log line; a plugin that never answers GetDevicePluginOptions fails its Register
within the dial budget instead of holding it open.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.devices.plugin_client import GrpcPluginDialer
from nodeagent.devices.registration_service import MAX_RESOURCE_SERIES
from nodeagent.metrics.instruments import Instruments
from nodeagent.rpc.server import Service, UnixServer, channel
from tests.rpc import test_device_plugins
from tests.rpc.test_device_plugins import GPU, Node

pytestmark = pytest.mark.rpc

node = test_device_plugins.node  # the device subsystem fixture, on a FakeClock


async def _register(node: Node, resource: str, endpoint: str = "none.sock", version: str = "v1beta1"
                    ) -> grpc.aio.AioRpcError:
    async with channel(node.cfg.kubelet_socket) as chan:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await api_pb2_grpc.RegistrationStub(chan).Register(
                api_pb2.RegisterRequest(version=version, endpoint=endpoint, resource_name=resource), timeout=30)
    return info.value


def _series(node: Node) -> int:
    return sum(1 for metric in node.registry.collect() if metric.name == "kubelet_device_plugin_registration"
               for s in metric.samples if s.name.endswith("_total"))


async def test_invalid_names_and_versions_are_not_counted(node: Node) -> None:
    for i in range(20):
        await _register(node, f"bogus-{i}")
        await _register(node, f"example.com/x{i}", version="v1alpha")
    assert _series(node) == 0
    await _register(node, GPU)
    assert node.registrations(GPU) == 1


async def test_valid_names_get_at_most_the_bounded_number_of_series(node: Node) -> None:
    for i in range(MAX_RESOURCE_SERIES + 20):
        await _register(node, f"example.com/r{i}")
    assert _series(node) == MAX_RESOURCE_SERIES
    await _register(node, "example.com/r0")
    assert node.registrations("example.com/r0") == 2  # names counted already keep counting


async def test_newline_in_resource_name_is_logged_escaped(node: Node, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    err = await _register(node, "example.com/gpu\nERROR forged line", endpoint="x\ny.sock")
    assert err.code() == grpc.StatusCode.UNKNOWN
    lines = [r.getMessage() for r in caplog.records]
    assert any('"example.com/gpu\\nERROR forged line"' in line for line in lines), lines
    assert not any("\n" in line for line in lines), lines


async def test_huge_resource_name_is_logged_bounded(node: Node, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    err = await _register(node, "example.com/" + "x" * 4_000_000, endpoint="y" * 1_000_000)
    assert err.code() == grpc.StatusCode.UNKNOWN
    assert len(err.details() or "") < 5000  # the status text is bounded too
    assert max(len(r.getMessage()) for r in caplog.records) < 2000


class _Silent(api_pb2_grpc.DevicePluginServicer):
    async def GetDevicePluginOptions(self, request: Any, context: Any) -> api_pb2.DevicePluginOptions:
        await asyncio.sleep(3600)
        return api_pb2.DevicePluginOptions()


async def test_silent_get_options_fails_register_within_the_deadline(node: Node) -> None:
    silent = UnixServer(node.cfg.device_plugins_dir / "silent.sock",
                        [Service("v1beta1.DevicePlugin",
                                 lambda s: api_pb2_grpc.add_DevicePluginServicer_to_server(_Silent(), s))])
    await silent.start()
    try:
        started = time.monotonic()
        err = await _register(node, GPU, endpoint="silent.sock")
        took = time.monotonic() - started
    finally:
        await silent.stop(grace=0)
    assert err.code() == grpc.StatusCode.UNKNOWN
    assert err.details() == (f"failed to get device plugin options: GetDevicePluginOptions "
                             f"{node.cfg.device_plugins_dir / 'silent.sock'}: no answer within 1s")
    assert took < 10  # the node's dial budget is 1 s here (10 s by default)
    assert node.manager.extended_resources() == ({}, {})


class _Repeating(api_pb2_grpc.DevicePluginServicer):
    """Sends one large snapshot three times, then one with a device unhealthy, then waits."""

    def __init__(self, n: int) -> None:
        self.n = n

    def _snapshot(self, bad: str = "") -> api_pb2.ListAndWatchResponse:
        return api_pb2.ListAndWatchResponse(devices=[
            api_pb2.Device(ID=f"d{i}", health="Unhealthy" if f"d{i}" == bad else "Healthy") for i in range(self.n)])

    async def ListAndWatch(self, request: Any, context: Any) -> Any:
        for _ in range(3):
            yield self._snapshot()
        yield self._snapshot(bad="d7")
        await asyncio.sleep(3600)


async def test_identical_snapshots_are_skipped_and_large_ones_converted(short_dir: Path) -> None:
    sock = short_dir / "rep.sock"
    server = UnixServer(sock, [Service("v1beta1.DevicePlugin",
                                       lambda s: api_pb2_grpc.add_DevicePluginServicer_to_server(_Repeating(5000), s))])
    await server.start()
    dialer = GrpcPluginDialer(Instruments(CollectorRegistry()), allocate_timeout=5.0)
    conn = await dialer.dial(GPU, sock)
    try:
        seen: list[list[str]] = []
        async for devices in conn.list_and_watch():
            seen.append([d.id for d in devices if not d.healthy])
            if len(seen) == 2:
                break
        assert seen == [[], ["d7"]]  # the two repeats of the first snapshot never came through
    finally:
        await conn.close()
        await server.stop(grace=0)
