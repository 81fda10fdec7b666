"""Faults on demand against real plugins over real unix sockets: the fake device plugin (plugins/) behind
the device subsystem, and a DRA driver behind the plugin watcher and DRA registry. Every fault kind is
exercised (fail, delay, drop, refuse, on calls made and served) and read back from the call record."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.dra.ports import ClaimRef, DriverCallError
from nodeagent.dra.registry import DRARegistry
from nodeagent.faults.interceptors import DROPPED, FaultInjector
from nodeagent.faults.model import parse_rule
from nodeagent.faults.registration import RefusingHandler
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.executor import RegistrationExecutor
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.rpc.server import channel
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from tests.rpc.dra_fake import FakeDRADriver
from tests.rpc.test_device_plugins import GPU, Node, gpu_pod, profile
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

DRIVER = "gpu.example.com"


def add(injector: FaultInjector, **doc: object) -> None:
    injector.faults.add(parse_rule(doc, "fault"))


class FaultyNode(Node):
    """The device-plugin tests' node, with the faults' interceptors on its channels and kubelet.sock."""

    def __init__(self, root: Path, clock: FakeClock, db: StateDB, injector: FaultInjector) -> None:
        super().__init__(root, clock, db)
        self.injector = injector
        self.registry = CollectorRegistry()
        self.devices = DeviceSubsystem(
            self.cfg, db, Instruments(self.registry), clock,
            on_health_change=self._on_health, record=self._record, dial_timeout=1.0,
            channel_interceptors=injector.client_interceptors, server_interceptors=[injector.server_interceptor()],
        )
        self.manager = self.devices.manager


@pytest.fixture
async def dp(short_dir: Path, fake_clock: FakeClock) -> AsyncIterator[tuple[FaultyNode, FakeDevicePlugin]]:
    node = FaultyNode(short_dir, fake_clock, StateDB(short_dir / "state" / "state.db"), FaultInjector(fake_clock))
    await node.devices.start()
    plugin = FakeDevicePlugin(profile(), device_plugins_dir=node.cfg.device_plugins_dir)
    await plugin.start()
    await eventually(lambda: node.allocatable() == 4)
    yield node, plugin
    await plugin.stop()
    await node.devices.stop()


def calls(injector: FaultInjector, method: str) -> list[tuple[str, str, str, str]]:
    return [(e.plugin, e.event, e.code, e.fault) for e in injector.log.entries(method=method)]


async def test_device_plugin_calls_are_recorded(dp: tuple[FaultyNode, FakeDevicePlugin]) -> None:
    node, _ = dp
    log = node.injector
    assert calls(log, "GetDevicePluginOptions") == [(GPU, "call", "OK", "")]
    assert calls(log, "ListAndWatch") == [(GPU, "open", "OK", "")]
    assert (await node.manager.admit(gpu_pod("p1", 2), [])).admit
    assert calls(log, "GetPreferredAllocation") == [(GPU, "call", "OK", "")]
    [allocate] = log.log.entries(method="Allocate")
    assert allocate.summary.startswith("container_requests {") and "devices_ids" in allocate.summary
    assert allocate.duration > 0 and allocate.time == node.injector.clock.now()
    assert log.open_streams() == [(GPU, "ListAndWatch")]


async def test_fail_allocate_with_a_count(dp: tuple[FaultyNode, FakeDevicePlugin]) -> None:
    node, _ = dp
    add(node.injector, method="Allocate", action="fail", code="RESOURCE_EXHAUSTED", message="no luck", count=1)
    refused = await node.manager.admit(gpu_pod("p1", 1), [])
    assert not refused.admit
    # grpc-go's status text, as the kubelet's devicemanager passes the Allocate error on
    assert refused.message == (
        "Allocate failed due to rpc error: code = ResourceExhausted desc = no luck, which is unexpected")
    assert (await node.manager.admit(gpu_pod("p2", 1), [])).admit  # the count is spent
    assert calls(node.injector, "Allocate") == [
        (GPU, "call", "RESOURCE_EXHAUSTED", "fail RESOURCE_EXHAUSTED"), (GPU, "call", "OK", "")]
    assert node.injector.faults.list() == []


async def test_delay_to_the_deadline_times_allocate_out(dp: tuple[FaultyNode, FakeDevicePlugin],
                                                       fake_clock: FakeClock) -> None:
    node, _ = dp
    add(node.injector, method="Allocate", action="delay", delay="5s", plugin=GPU)
    admit = asyncio.ensure_future(node.manager.admit(gpu_pod("p1", 1), []))
    await fake_clock.wait_for_sleepers(1)
    assert not admit.done()
    fake_clock.advance(1.0)  # allocate_timeout of the test node
    result = await asyncio.wait_for(admit, 5)
    assert not result.admit and "no answer within 1s" in result.message
    assert calls(node.injector, "Allocate") == [(GPU, "call", "DEADLINE_EXCEEDED", "delay 5s")]


async def test_drop_list_and_watch_then_kubelet_restart(dp: tuple[FaultyNode, FakeDevicePlugin]) -> None:
    node, _ = dp
    assert (await node.manager.admit(gpu_pod("p1", 2), [])).admit
    held = [d.device_id for d in node.manager.container_devices("p1", "main")]
    add(node.injector, method="ListAndWatch", action="drop", plugin=GPU, count=1)
    # The kubelet's answer to a broken stream: the plugin is gone, capacity kept for the grace period.
    await eventually(lambda: GPU not in node.manager.registered_endpoints())
    closed = node.injector.log.entries(method="ListAndWatch")[-1]
    assert (closed.event, closed.code, closed.fault) == ("close", "CANCELLED", "drop")
    assert node.injector.faults.list() == []
    assert node.capacity() == 4
    # A simulated kubelet restart: kubelet.sock recreated, state restored; the plugin registers again.
    await node.devices.server.stop()
    await node.manager.restart()
    await node.devices.server.start()
    await eventually(lambda: GPU in node.manager.registered_endpoints() and node.allocatable() == 4)
    assert [d.device_id for d in node.manager.container_devices("p1", "main")] == held
    assert [e.event for e in node.injector.log.entries(method="ListAndWatch")] == ["open", "close", "open"]


async def test_refuse_and_fail_served_register(dp: tuple[FaultyNode, FakeDevicePlugin]) -> None:
    node, _ = dp
    # Resources of their own, so the fake plugin's own re-registrations cannot take the rules.
    refused_rs, failed_rs = "example.com/refused", "example.com/failed"
    add(node.injector, action="refuse", plugin=refused_rs, count=1, message="not now")
    add(node.injector, method="Register", action="fail", code="UNAVAILABLE", plugin=failed_rs)
    async with channel(node.cfg.kubelet_socket) as chan:
        stub = api_pb2_grpc.RegistrationStub(chan)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Register(api_pb2.RegisterRequest(version="v1beta1", endpoint="x.sock",
                                                        resource_name=refused_rs))
        assert refused.value.code() == grpc.StatusCode.UNKNOWN
        assert refused.value.details() == f"not now: {refused_rs}"
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await stub.Register(api_pb2.RegisterRequest(version="v1beta1", endpoint="x.sock",
                                                        resource_name=failed_rs))
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        # Spent: the next registration reaches the device manager (which cannot dial x.sock).
        with pytest.raises(grpc.aio.AioRpcError) as dialed:
            await stub.Register(api_pb2.RegisterRequest(version="v1beta1", endpoint="x.sock",
                                                        resource_name=refused_rs))
        assert "failed to dial device plugin" in (dialed.value.details() or "")
    # The refusal is spent; the unbounded fail rule stays.
    assert [(a.rule.action, a.hits) for a in node.injector.faults.list()] == [("fail", 1)]
    assert [e for e in calls(node.injector, "Register") if e[0] != GPU] == [
        (refused_rs, "served", "UNKNOWN", "refuse"), (failed_rs, "served", "UNAVAILABLE", "fail UNAVAILABLE")]


class DRAEnv:
    def __init__(self, root: Path, clock: FakeClock, reg_socket: str = f"{DRIVER}-reg.sock") -> None:
        self.clock = clock
        self.injector = FaultInjector(clock)
        self.reg_dir = root / "plugins_registry"
        self.dra = DRARegistry(clock, Instruments(CollectorRegistry()),
                               channel_interceptors=self.injector.client_interceptors)
        handlers = {"DRAPlugin": RefusingHandler(self.dra, self.injector.faults)}
        self.watcher = PluginWatcher(self.reg_dir, handlers, clock, executor=RegistrationExecutor(
            handlers, interceptors=self.injector.registration_interceptors))
        self.driver = FakeDRADriver(name=DRIVER, reg_path=self.reg_dir / reg_socket,
                                    dra_path=root / "plugins" / DRIVER / "dra.sock")

    async def pass_(self) -> None:
        await self.watcher.sync()
        await self.watcher.wait_idle()


@pytest.fixture
async def dra(short_dir: Path, fake_clock: FakeClock) -> AsyncIterator[DRAEnv]:
    env = DRAEnv(short_dir, fake_clock)
    await env.driver.start()
    yield env
    await env.watcher.stop()
    await env.dra.close()
    await env.driver.stop()


async def test_refused_dra_registration_is_retried(dra: DRAEnv) -> None:
    add(dra.injector, action="refuse", plugin=DRIVER, count=1)
    await dra.pass_()
    status = await asyncio.wait_for(dra.driver.notifications.get(), 5)
    assert status == (False, "RegisterPlugin error -- plugin validation failed with err: "
                             f"registration refused by a nodeagent fault: {DRIVER}")
    assert not dra.dra.is_registered(DRIVER)
    dra.clock.advance(60)  # past the watcher's backoff
    await dra.pass_()
    assert await asyncio.wait_for(dra.driver.notifications.get(), 5) == (True, "")
    assert dra.dra.is_registered(DRIVER)
    notify = dra.injector.log.entries(method="NotifyRegistrationStatus")
    assert [(e.plugin, e.code) for e in notify] == [(DRIVER, "OK"), (DRIVER, "OK")]
    assert "plugin_registered: true" not in notify[0].summary and "plugin_registered: true" in notify[1].summary
    assert len(dra.injector.log.entries(method="GetInfo", plugin=DRIVER)) == 2


@pytest.mark.parametrize("socket", [
    f"{DRIVER}-0b4f3d1e-6f1c-4c5e-9a7b-1c2d3e4f5a6b-reg.sock",  # kubeletplugin's rolling-update names
    "dra-q83vEjdvYF7dXb0jK3PFhw-reg.sock",
])
async def test_rolling_update_registration_calls_are_recorded_under_the_driver(
        short_dir: Path, fake_clock: FakeClock, socket: str) -> None:
    env = DRAEnv(short_dir, fake_clock, reg_socket=socket)
    await env.driver.start()
    try:
        await env.pass_()
        assert await asyncio.wait_for(env.driver.notifications.get(), 5) == (True, "")
        calls = [(e.plugin, e.method) for e in env.injector.log.entries()
                 if e.method in ("GetInfo", "NotifyRegistrationStatus")]
        assert calls == [(DRIVER, "GetInfo"), (DRIVER, "NotifyRegistrationStatus")]
        # and a fault rule for the driver takes its registration, whatever the socket's name
        add(env.injector, action="fail", method="NotifyRegistrationStatus", plugin=DRIVER, count=1)
        await env.watcher.forget()
        await env.pass_()
        notify = env.injector.log.entries(method="NotifyRegistrationStatus")
        assert [(e.plugin, e.code) for e in notify][-1] == (DRIVER, "UNAVAILABLE")
    finally:
        await env.watcher.stop()
        await env.dra.close()
        await env.driver.stop()


async def test_fail_and_delay_dra_calls(dra: DRAEnv) -> None:
    await dra.pass_()
    claim = ClaimRef("default", "uid-1", "claim-1")
    add(dra.injector, method="NodePrepareResources", action="fail", code="UNAVAILABLE", message="driver away",
        count=1)
    with pytest.raises(DriverCallError, match="rpc error: code = Unavailable desc = driver away"):
        await dra.dra.prepare(DRIVER, [claim])
    assert dra.driver.calls == []  # never reached the driver
    assert "uid-1" in (await dra.dra.prepare(DRIVER, [claim]))
    add(dra.injector, method="NodeUnprepareResources", action="delay", delay="2s", count=1)
    unprepare = asyncio.ensure_future(dra.dra.unprepare(DRIVER, [claim]))
    await dra.clock.wait_for_sleepers(1)
    assert not unprepare.done()
    dra.clock.advance(2)
    assert await asyncio.wait_for(unprepare, 5) == {"uid-1": ""}
    assert [(e.code, e.fault) for e in dra.injector.log.entries(plugin=DRIVER, method="NodePrepareResources")] == [
        ("UNAVAILABLE", "fail UNAVAILABLE"), ("OK", "")]
    assert [e.fault for e in dra.injector.log.entries(method="NodeUnprepareResources")] == ["delay 2s"]


async def test_drop_health_stream_reopens(dra: DRAEnv) -> None:
    await dra.pass_()
    await eventually(lambda: dra.driver.open_streams == 1)
    add(dra.injector, method="NodeWatchResources", action="drop", plugin=DRIVER)
    await eventually(lambda: dra.driver.health_closed == 1)
    [opened, closed] = dra.injector.log.entries(method="NodeWatchResources")
    assert (opened.event, closed.event, closed.code, closed.fault) == ("open", "close", "CANCELLED", "drop")
    dra.injector.faults.clear()
    await dra.clock.wait_for_sleepers()
    dra.clock.advance(5)  # the registry's health retry
    await eventually(lambda: dra.driver.open_streams == 1)
    assert len(dra.driver.health_opens) == 2
    assert DROPPED == "stream dropped by a nodeagent fault"


async def test_delay_served_register(dp: tuple[FaultyNode, FakeDevicePlugin], fake_clock: FakeClock) -> None:
    node, _ = dp
    add(node.injector, method="Register", action="delay", delay="3s", plugin="example.com/late", count=1)
    async with channel(node.cfg.kubelet_socket) as chan:
        call = asyncio.ensure_future(api_pb2_grpc.RegistrationStub(chan).Register(
            api_pb2.RegisterRequest(version="v1beta1", endpoint="x.sock", resource_name="example.com/late")))
        await fake_clock.wait_for_sleepers(1)
        assert not call.done()
        fake_clock.advance(3)
        with pytest.raises(grpc.aio.AioRpcError) as late:  # then the device manager's own answer
            await asyncio.wait_for(call, 5)
    assert "failed to dial device plugin" in (late.value.details() or "")
    assert calls(node.injector, "Register")[-1] == ("example.com/late", "served", "OK", "delay 3s")
