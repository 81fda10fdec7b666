"""DRARegistry's DRAPlugin client and health streams against an in-test DRA driver (real unix sockets).

Plugins are registered directly through the handler interface (the watcher has its own
tests); health reopen timing runs on a FakeClock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import grpc
import pytest
from prometheus_client import CollectorRegistry

from nodeagent.dra.ports import HEALTHY, UNHEALTHY, UNKNOWN, ClaimRef, DeviceHealthUpdate, DriverCallError
from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.model import PluginInfo
from nodeagent.util.clock import FakeClock
from tests.rpc.dra_fake import ALL_VERSIONS, FakeDRADriver
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

DRIVER = "gpu.example.com"
V1_PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
V1BETA1_PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources"
C1 = ClaimRef("default", "uid-1", "claim-1")
C2 = ClaimRef("team-a", "uid-2", "claim-2")


class Env:
    def __init__(self, root: Path, clock: FakeClock, registry: CollectorRegistry, call_timeout: float = 45.0) -> None:
        self.root = root
        self.clock = clock
        self.registry = registry
        self.dra = DRARegistry(clock, Instruments(registry), call_timeout=call_timeout)
        self.health: list[tuple[str, list[DeviceHealthUpdate]]] = []
        self.drivers: list[FakeDRADriver] = []

        async def on_health(name: str, updates: Sequence[DeviceHealthUpdate]) -> None:
            self.health.append((name, list(updates)))

        self.dra.on_health(on_health)

    async def plugin(self, versions: tuple[str, ...] = ALL_VERSIONS, sock: str = "dra.sock",
                     **kw: object) -> FakeDRADriver:
        d = FakeDRADriver(DRIVER, self.root / f"{sock}-reg", self.root / sock, versions=versions,
                          **kw)  # type: ignore[arg-type]
        self.drivers.append(d)
        await d.start_service()
        info = PluginInfo("DRAPlugin", DRIVER, str(d.dra_path), versions, str(d.reg_path))
        assert self.dra.validate(info) is None
        await self.dra.register(info)
        return d

    def grpc_count(self, method: str, code: str = "OK") -> float | None:
        return self.registry.get_sample_value(
            "dra_grpc_operations_duration_seconds_count",
            {"driver_name": DRIVER, "method_name": method, "grpc_status_code": code},
        )


@pytest.fixture
async def env(short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry) -> AsyncIterator[Env]:
    e = Env(short_dir, fake_clock, registry)
    yield e
    await e.dra.close()
    for d in e.drivers:
        await d.stop()


async def test_prepare_unprepare_v1(env: Env) -> None:
    d = await env.plugin(share_id="share-7")
    results = await env.dra.prepare(DRIVER, [C1, C2])
    assert d.calls == [("v1", "NodePrepareResources",
                        [("default", "uid-1", "claim-1"), ("team-a", "uid-2", "claim-2")])]
    assert set(results) == {"uid-1", "uid-2"}
    dev = results["uid-1"].devices[0]
    assert results["uid-1"].error == ""
    assert (dev.request_names, dev.pool_name, dev.device_name, dev.cdi_device_ids, dev.share_id) == (
        ("gpu",), "node-1", "dev-uid-1", ("example.com/gpu=uid-1",), "share-7")
    assert await env.dra.unprepare(DRIVER, [C1, C2]) == {"uid-1": "", "uid-2": ""}
    assert d.calls[-1][:2] == ("v1", "NodeUnprepareResources")
    assert env.grpc_count(V1_PREPARE) == 1.0
    assert env.grpc_count("/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources") == 1.0


async def test_share_id_absent_is_none(env: Env) -> None:
    await env.plugin()
    results = await env.dra.prepare(DRIVER, [C1])
    assert results["uid-1"].devices[0].share_id is None


async def test_driver_offering_only_v1beta1(env: Env) -> None:
    d = await env.plugin(versions=("v1beta1.DRAPlugin",), serve_v1=False, health=())
    assert env.dra.drivers()[DRIVER].plugin_version == "v1beta1.DRAPlugin"
    results = await env.dra.prepare(DRIVER, [C1])
    assert results["uid-1"].devices[0].device_name == "dev-uid-1"
    assert results["uid-1"].devices[0].share_id is None
    assert await env.dra.unprepare(DRIVER, [C1]) == {"uid-1": ""}
    assert [c[:2] for c in d.calls] == [("v1beta1", "NodePrepareResources"), ("v1beta1", "NodeUnprepareResources")]
    assert env.grpc_count(V1BETA1_PREPARE) == 1.0
    assert env.grpc_count(V1_PREPARE) is None


async def test_v1_preferred_whatever_the_order(env: Env) -> None:
    d = await env.plugin(versions=("v1beta1.DRAPlugin", "v1.DRAPlugin"))
    await env.dra.prepare(DRIVER, [C1])
    assert d.calls[0][0] == "v1"


async def test_per_claim_errors(env: Env) -> None:
    await env.plugin(claim_errors={"uid-2": "no such device"})
    results = await env.dra.prepare(DRIVER, [C1, C2])
    assert results["uid-1"].error == "" and results["uid-1"].devices
    assert results["uid-2"].error == "no such device" and results["uid-2"].devices == ()
    assert await env.dra.unprepare(DRIVER, [C1, C2]) == {"uid-1": "", "uid-2": "no such device"}


async def test_rpc_error_becomes_driver_call_error(env: Env) -> None:
    await env.plugin(abort=grpc.StatusCode.INTERNAL)
    with pytest.raises(DriverCallError) as info:
        await env.dra.prepare(DRIVER, [C1])
    assert str(info.value) == "NodePrepareResources: rpc error: code = Internal desc = boom"
    assert isinstance(info.value.__cause__, grpc.aio.AioRpcError)
    assert env.grpc_count(V1_PREPARE, "Internal") == 1.0
    assert env.grpc_count(V1_PREPARE, "OK") is None
    with pytest.raises(DriverCallError, match=r"^NodeUnprepareResources: rpc error: code = Internal desc = boom$"):
        await env.dra.unprepare(DRIVER, [C1])


async def test_deadline(short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry) -> None:
    e = Env(short_dir, fake_clock, registry, call_timeout=0.2)
    try:
        await e.plugin(delay=1.0)
        with pytest.raises(DriverCallError, match=r"code = DeadlineExceeded"):
            await e.dra.prepare(DRIVER, [C1])
        assert e.grpc_count(V1_PREPARE, "DeadlineExceeded") == 1.0
    finally:
        await e.dra.close()
        for d in e.drivers:
            await d.stop()


async def test_missing_and_extra_keys(env: Env) -> None:
    d = await env.plugin(skip_uids={"uid-2"})
    with pytest.raises(DriverCallError, match=r"^NodePrepareResources skipped 1 ResourceClaims$"):
        await env.dra.prepare(DRIVER, [C1, C2])
    with pytest.raises(DriverCallError, match=r"^NodeUnprepareResources skipped 1 ResourceClaims$"):
        await env.dra.unprepare(DRIVER, [C1, C2])
    d.skip_uids.clear()
    d.extra_uid = "uid-9"
    with pytest.raises(DriverCallError, match=r"^NodePrepareResources returned result for unknown claim UID uid-9$"):
        await env.dra.prepare(DRIVER, [C1])
    with pytest.raises(DriverCallError, match=r"^NodeUnprepareResources returned result for unknown claim UID uid-9$"):
        await env.dra.unprepare(DRIVER, [C1])


async def test_unregistered_driver(env: Env) -> None:
    with pytest.raises(DriverCallError, match=r"^DRA driver other.example.com is not registered$"):
        await env.dra.prepare("other.example.com", [C1])


async def test_unreachable_endpoint(env: Env) -> None:
    d = await env.plugin()
    await d.stop()
    with pytest.raises(DriverCallError, match=r"code = Unavailable"):
        await env.dra.prepare(DRIVER, [C1])


async def test_health_v1_preferred_and_delivered(env: Env) -> None:
    d = await env.plugin()
    await eventually(lambda: d.open_streams == 1, what="health stream")
    assert d.health_opens == ["v1"]
    d.push_health([("node-1", "dev-a", 1), ("node-1", "dev-b", 2), ("node-1", "dev-c", 0)])
    await eventually(lambda: len(env.health) == 1, what="health update")
    name, updates = env.health[0]
    assert name == DRIVER
    assert [(u.pool_name, u.device_name, u.health) for u in updates] == [
        ("node-1", "dev-a", HEALTHY), ("node-1", "dev-b", UNHEALTHY), ("node-1", "dev-c", UNKNOWN)]
    assert updates[0].last_updated == 1_700_000_000.0
    assert updates[0].timeout_seconds == 7.0
    assert updates[1].message == "dev-b is 2"
    # Not counted in the unary-call histogram.
    assert env.registry.get_sample_value(
        "dra_grpc_operations_duration_seconds_count",
        {"driver_name": DRIVER, "method_name": "/v1.DRAResourceHealth/NodeWatchResources",
         "grpc_status_code": "OK"}) is None


async def test_health_v1alpha1_fallback(env: Env) -> None:
    d = await env.plugin(versions=("v1.DRAPlugin", "v1alpha1.DRAResourceHealth"))
    assert env.dra.drivers()[DRIVER].health_version == "v1alpha1.DRAResourceHealth"
    await eventually(lambda: d.open_streams == 1, what="health stream")
    assert d.health_opens == ["v1alpha1"]
    d.push_health([("p", "dev", 1)])
    await eventually(lambda: len(env.health) == 1, what="health update")
    assert env.health[0][1][0].health == HEALTHY


async def test_health_unimplemented_tolerated_without_retry(env: Env) -> None:
    d = await env.plugin(versions=("v1.DRAPlugin", "v1.DRAResourceHealth"), health=())  # advertised, not served
    results = await env.dra.prepare(DRIVER, [C1])  # the driver works without health
    assert results["uid-1"].error == ""
    await asyncio.sleep(0.2)
    for _ in range(5):
        env.clock.advance(5)
        await asyncio.sleep(0.02)
    assert d.health_opens == []  # no health service at all: UNIMPLEMENTED from grpc itself
    assert env.dra.is_registered(DRIVER)
    assert env.clock.sleepers == 0  # the health task is not waiting to retry: it stopped


async def test_health_unimplemented_from_servicer_asked_once(env: Env) -> None:
    d = await env.plugin(health_abort=grpc.StatusCode.UNIMPLEMENTED)
    await eventually(lambda: d.health_opens == ["v1"], what="one health call")
    await asyncio.sleep(0.1)
    for _ in range(5):
        env.clock.advance(5)
        await asyncio.sleep(0.02)
    assert d.health_opens == ["v1"]


async def test_health_other_errors_retried_every_five_seconds(env: Env) -> None:
    d = await env.plugin(health_abort=grpc.StatusCode.INTERNAL)
    await eventually(lambda: d.health_opens == ["v1"] and env.clock.sleepers == 1, what="first failure")
    env.clock.advance(4.9)
    await asyncio.sleep(0.1)
    assert d.health_opens == ["v1"]
    env.clock.advance(0.1)
    await eventually(lambda: d.health_opens == ["v1", "v1"], what="retry after 5 s")


async def test_health_stream_reopens_after_five_seconds(env: Env) -> None:
    d = await env.plugin()
    await eventually(lambda: d.open_streams == 1, what="health stream")
    d.end_streams()
    await eventually(lambda: d.open_streams == 0 and env.clock.sleepers == 1, what="stream ended")
    env.clock.advance(4.9)
    await asyncio.sleep(0.1)
    assert d.health_opens == ["v1"]
    env.clock.advance(0.1)
    await eventually(lambda: d.open_streams == 1, what="stream reopened")
    assert d.health_opens == ["v1", "v1"]
    # A driver that goes away: the stream fails, is retried every 5 s, and keeps going once it is back.
    await d.stop()
    await eventually(lambda: env.clock.sleepers == 1, what="retry pending")
    env.clock.advance(5)
    await eventually(lambda: env.clock.sleepers == 1, what="second retry pending")
    await d.start_service()
    # The channel reconnects on its own backoff (capped at 1 s); each retry is 5 s of fake time.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while d.open_streams == 0 and loop.time() < deadline:
        if env.clock.sleepers:
            env.clock.advance(5)
        await asyncio.sleep(0.05)
    assert d.open_streams == 1
    d.push_health([("p", "dev", 2)])
    await eventually(lambda: len(env.health) == 1, what="update after restart")


async def test_deregister_closes_stream_and_channel(env: Env) -> None:
    d = await env.plugin()
    events: list[tuple[str, bool]] = []

    async def on_driver(name: str, registered: bool) -> None:
        events.append((name, registered))

    env.dra.on_driver(on_driver)
    await eventually(lambda: d.open_streams == 1, what="health stream")
    await env.dra.deregister(DRIVER, str(d.dra_path))
    assert events == [(DRIVER, False)]
    await eventually(lambda: d.health_closed == 1, what="stream closed on the driver side")
    assert not env.dra.is_registered(DRIVER)
    with pytest.raises(DriverCallError, match=r"not registered"):
        await env.dra.prepare(DRIVER, [C1])
