"""DRAResourceHealth version negotiation, node side against the fake DRA driver (real unix sockets).

The driver (plugins/fake_dra_driver, profile `services`) offers only v1alpha1, only v1beta1,
only v1, or all three health versions; the registration answer it gives over its real
registration socket is what DRARegistry registers, as the plugin watcher would. The registry
must open exactly one stream, over the newest version both sides speak (pickHealthService),
and the v1 fields (per-device message and health-check timeout) must arrive. A plugin that
advertises no health service gets no stream, even when it would serve one.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.apis.pluginregistration.v1 import api_pb2 as reg_pb
from nodeagent.apis.pluginregistration.v1 import api_pb2_grpc as reg_grpc
from nodeagent.dra.health import HealthCache
from nodeagent.dra.ports import HEALTHY, UNHEALTHY, UNKNOWN, DeviceHealthUpdate
from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.model import PluginInfo
from nodeagent.rpc.server import channel
from nodeagent.util.clock import FakeClock
from plugins.dra_kit import control
from plugins.dra_kit.kube import KubeAccess
from plugins.fake_dra_driver.driver import FakeDRADriver
from plugins.fake_dra_driver.profile import parse_profile
from tests.rpc.dra_fake import FakeDRADriver as InTestDriver
from tests.unit.dra_kit.fake_apiserver import FakeAPIServer
from tests.unit.dra_kit.memory_api import MemoryAPI
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

DRIVER = "gpu.example.com"
NODE = "node-a"
V1, V1BETA1, V1ALPHA1 = "v1.DRAResourceHealth", "v1beta1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"
PROFILE: dict[str, Any] = {
    "driverName": DRIVER,
    "poolName": "pool-a",
    "devices": [
        {"name": "gpu-0", "healthCheckTimeoutSeconds": 3, "healthMessage": "warming up"},
        {"name": "gpu-1"},
    ],
    "cdi": {"kind": "gpu.example.com/gpu"},
    "healthCheckTimeoutSeconds": 0,  # unset: the kubelet's default for gpu-1
    "healthResendSeconds": 30,  # no re-sends during a test: every message is a change we made
    "sliceCheckSeconds": 5,
}


class Env:
    def __init__(self, driver: FakeDRADriver, dra: DRARegistry) -> None:
        self.driver, self.dra = driver, dra
        self.health: list[list[DeviceHealthUpdate]] = []

        async def on_health(name: str, updates: Sequence[DeviceHealthUpdate]) -> None:
            assert name == DRIVER
            self.health.append(list(updates))

        dra.on_health(on_health)

    async def register(self) -> PluginInfo:
        """GetInfo over the driver's registration socket, then register it (the watcher's job)."""
        async with channel(self.driver.server.registration_path) as chan:
            info = await reg_grpc.RegistrationStub(chan).GetInfo(reg_pb.InfoRequest(), timeout=5)
        plugin = PluginInfo(info.type, info.name, info.endpoint, tuple(info.supported_versions),
                            str(self.driver.server.registration_path))
        assert self.dra.validate(plugin) is None
        await self.dra.register(plugin)
        return plugin


@pytest.fixture
async def make_env(short_dir: Path, fake_clock: FakeClock,
                   registry: CollectorRegistry) -> AsyncIterator[Callable[..., Any]]:
    started: list[tuple[Env, KubeAccess, FakeAPIServer]] = []

    async def make(services: list[str]) -> Env:
        doc = copy.deepcopy(PROFILE)
        doc["services"] = services
        server = FakeAPIServer(MemoryAPI(NODE))
        await server.start()
        api = KubeAccess(server.kubeconfig(short_dir / "kubeconfig"))
        driver = FakeDRADriver(parse_profile(doc), root_dir=short_dir / "root", api=api, node_name=NODE,
                               cdi_dir=short_dir / "cdi")
        await driver.start()
        env = Env(driver, DRARegistry(fake_clock, Instruments(registry)))
        started.append((env, api, server))
        return env

    yield make
    for env, api, server in reversed(started):
        await env.dra.close()
        await env.driver.stop()
        await api.close()
        await server.stop()


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        pytest.param([V1ALPHA1], V1ALPHA1, id="only-v1alpha1"),
        pytest.param([V1BETA1], V1BETA1, id="only-v1beta1"),
        pytest.param([V1], V1, id="only-v1"),
        pytest.param([V1ALPHA1, V1BETA1, V1], V1, id="all-three-any-order"),
        pytest.param([V1ALPHA1, V1BETA1], V1BETA1, id="v1alpha1-and-v1beta1"),
    ],
)
async def test_newest_common_version_streamed(make_env: Callable[..., Any], offered: list[str],
                                              chosen: str) -> None:
    env: Env = await make_env(["v1.DRAPlugin", *offered])
    info = await env.register()
    assert list(info.supported_versions) == ["v1.DRAPlugin", *offered]
    assert env.dra.drivers()[DRIVER].health_version == chosen
    await eventually(lambda: len(env.health) == 1, what="first health message")
    assert env.driver.server.health_opens == [chosen]  # one stream, on the chosen version only
    first = {u.device_name: u for u in env.health[0]}
    assert {n: (u.health, u.timeout_seconds, u.message) for n, u in first.items()} == {
        "gpu-0": (HEALTHY, 3.0, "warming up"),
        "gpu-1": (HEALTHY, 0.0, ""),
    }
    # A flip with a message reaches the node over the same stream, message whole (the node cuts).
    long = "ECC error " * 150
    reply = await control.arequest(env.driver.server.control_path,
                                   {"set_health": {"device": "pool-a/gpu-1", "health": "Unhealthy",
                                                   "message": long}})
    assert reply == {"ok": True, "changed": True}
    await eventually(lambda: len(env.health) == 2, what="flip")
    flipped = {u.device_name: u for u in env.health[1]}["gpu-1"]
    assert (flipped.health, flipped.message) == (UNHEALTHY, long)
    assert env.driver.server.health_opens == [chosen]


async def test_stale_device_turns_unknown_after_its_own_timeout(make_env: Callable[..., Any],
                                                                fake_clock: FakeClock) -> None:
    """The per-device timeout sent over v1 drives the node's cache: gpu-0 (3 s) goes stale first."""
    env: Env = await make_env(["v1.DRAPlugin", V1])
    await env.register()
    await eventually(lambda: len(env.health) == 1, what="first health message")
    cache = HealthCache()
    keys = [(DRIVER, "pool-a", "gpu-0"), (DRIVER, "pool-a", "gpu-1")]
    assert sorted(cache.update(DRIVER, env.health[0], fake_clock.monotonic())) == keys
    await control.arequest(env.driver.server.control_path, {"pause_health": {"paused": True}})
    fake_clock.advance(3.5)
    assert cache.expire(fake_clock.monotonic()) == [keys[0]]
    assert [cache.state(k, fake_clock.monotonic()) for k in keys] == [(UNKNOWN, ""), (HEALTHY, "")]
    fake_clock.advance(27)  # 30.5 s: past the kubelet's default for gpu-1, which sent no timeout
    assert cache.expire(fake_clock.monotonic()) == [keys[1]]
    assert len(env.health) == 1  # nothing arrived meanwhile: this was silence, not a report


async def test_no_health_service_advertised_no_stream(short_dir: Path, fake_clock: FakeClock,
                                                     registry: CollectorRegistry) -> None:
    """Upstream's pickHealthService gives "" and the kubelet opens nothing, even if health is served."""
    dra = DRARegistry(fake_clock, Instruments(registry))
    d = InTestDriver(DRIVER, short_dir / "reg.sock", short_dir / "dra.sock", versions=("v1.DRAPlugin",),
                     health=("v1", "v1beta1", "v1alpha1"))
    await d.start_service()
    try:
        await dra.register(PluginInfo("DRAPlugin", DRIVER, str(d.dra_path), ("v1.DRAPlugin",), str(d.reg_path)))
        assert dra.drivers()[DRIVER].health_version == ""
        await asyncio.sleep(0.3)
        fake_clock.advance(10)
        await asyncio.sleep(0.1)
        assert d.health_opens == []
        assert fake_clock.sleepers == 0  # no health task waiting to retry either
    finally:
        await dra.close()
        await d.stop()


async def test_in_test_driver_v1beta1_only(short_dir: Path, fake_clock: FakeClock,
                                           registry: CollectorRegistry) -> None:
    """The raw v1beta1 wire (not the kit): path /v1beta1.DRAResourceHealth/NodeWatchResources."""
    dra = DRARegistry(fake_clock, Instruments(registry))
    got: list[list[DeviceHealthUpdate]] = []

    async def on_health(name: str, updates: Sequence[DeviceHealthUpdate]) -> None:
        got.append(list(updates))

    dra.on_health(on_health)
    versions = ("v1.DRAPlugin", V1BETA1)
    d = InTestDriver(DRIVER, short_dir / "reg.sock", short_dir / "dra.sock", versions=versions, health=("v1beta1",))
    await d.start_service()
    try:
        await dra.register(PluginInfo("DRAPlugin", DRIVER, str(d.dra_path), versions, str(d.reg_path)))
        await eventually(lambda: d.open_streams == 1, what="v1beta1 stream")
        assert d.health_opens == ["v1beta1"]
        d.push_health([("p", "dev", 2)])
        await eventually(lambda: len(got) == 1, what="update")
        (u,) = got[0]
        assert (u.pool_name, u.device_name, u.health, u.timeout_seconds, u.message) == ("p", "dev", UNHEALTHY, 7.0,
                                                                                         "dev is 2")
    finally:
        await dra.close()
        await d.stop()
