"""Slice wiping and rolling-update registration against in-test DRA drivers over real unix sockets.

The plugin watcher, the DRA registry and the slice wiper run on a FakeClock, so the kubelet's
30 s wiping delay is measured exactly while connections come and go in real time. The
rolling-update test runs the DRA manager and the pod manager on top of the real registry: two
instances of one driver named as the upstream helper names them for rolling updates
(`<driver>-<podUID>-reg.sock`, `dra-<podUID>.sock`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.dra.client import CONN_CLOSING
from nodeagent.dra.ports import ClaimRef, DriverCallError
from nodeagent.dra.registry import DRARegistry
from nodeagent.dra.slices import SliceWiper
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import delete_node_slices
from nodeagent.objects.pod.model import PENDING, RUNNING
from nodeagent.objects.resource import validation as resource
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.store.kinds import builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.rpc.dra_fake import FakeDRADriver
from tests.unit.dra.fakes import FakeClaims, build, claim_doc, claim_pod, settle
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

NODE = "node-a"
DRIVER = "gpu.example.com"
OTHER = "net.example.com"
OLD_UID = "0b1c2d3e-0000-4000-8000-000000000001"
NEW_UID = "0b1c2d3e-0000-4000-8000-000000000002"


def _slice(name: str, driver: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node, "devices": [{"name": "d0"}],
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}}}


class Env:
    def __init__(self, root: Path, clock: FakeClock, registry: CollectorRegistry) -> None:
        self.root = root
        self.reg_dir = root / "plugins_registry"
        self.clock = clock
        self.store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
        for obj in (_slice("gpu-a", DRIVER, NODE), _slice("net-a", OTHER, NODE), _slice("gpu-b", DRIVER, "node-b")):
            self.store.create(obj)
        self.wiper = SliceWiper(clock, NODE, lambda d: delete_node_slices(self.store, NODE, d))
        self.dra = DRARegistry(clock, Instruments(registry), slices=self.wiper)
        self.watcher = PluginWatcher(self.reg_dir, {"DRAPlugin": self.dra}, clock, registry=registry)
        self.drivers: list[FakeDRADriver] = []

    def driver(self, pod_uid: str | None = None, **kw: Any) -> FakeDRADriver:
        """An instance named like the upstream helper: with a pod UID for rolling updates."""
        reg = f"{DRIVER}-{pod_uid}-reg.sock" if pod_uid else f"{DRIVER}-reg.sock"
        dra = f"dra-{pod_uid}.sock" if pod_uid else "dra.sock"
        d = FakeDRADriver(name=DRIVER, reg_path=self.reg_dir / reg, dra_path=self.root / "plugins" / DRIVER / dra, **kw)
        self.drivers.append(d)
        return d

    async def pass_(self) -> None:
        await self.watcher.sync()
        await self.watcher.wait_idle()

    async def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        await settle()

    def slices(self) -> list[str]:
        return [o["metadata"]["name"] for o in self.store.list("ResourceSlice")]


@pytest.fixture
async def env(short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry) -> AsyncIterator[Env]:
    e = Env(short_dir, fake_clock, registry)
    yield e
    await e.watcher.stop()
    await e.dra.close()
    await e.wiper.close()
    for d in e.drivers:
        await d.stop()


async def stop_service(d: FakeDRADriver) -> None:
    """The driver's DRA socket stops serving; its registration socket stays (a crash of the service)."""
    for server in [s for s in d._servers if s.path == d.dra_path]:
        await server.stop(0)
        d._servers.remove(server)


async def registered_and_connected(env: Env, d: FakeDRADriver) -> None:
    await d.start()
    await env.pass_()
    assert await asyncio.wait_for(d.notifications.get(), 5) == (True, "")
    await eventually(lambda: env.dra.usable(DRIVER), what="plugin connected")
    await settle()
    assert env.wiper.pending == {}


async def test_connection_lost_then_back_in_time_keeps_slices(env: Env) -> None:
    d = env.driver()
    await env.watcher.start()
    await registered_and_connected(env, d)
    lost_at = env.clock.monotonic()
    await stop_service(d)
    await eventually(lambda: not env.dra.usable(DRIVER), what="connection lost")
    assert env.wiper.pending == {DRIVER: lost_at + 30.0}
    await env.advance(29.0)
    assert env.slices() == ["gpu-a", "gpu-b", "net-a"]
    await d.start_service()  # back on the same socket: the registry reconnects by itself
    await eventually(lambda: env.dra.usable(DRIVER), what="reconnected")
    assert env.wiper.pending == {}
    await env.advance(60.0)
    assert env.slices() == ["gpu-a", "gpu-b", "net-a"]


async def test_connection_lost_for_30s_wipes_the_drivers_slices_of_this_node(env: Env) -> None:
    d = env.driver()
    await env.watcher.start()
    await registered_and_connected(env, d)
    await stop_service(d)
    await eventually(lambda: not env.dra.usable(DRIVER), what="connection lost")
    await env.advance(29.9)
    assert env.slices() == ["gpu-a", "gpu-b", "net-a"]
    await env.advance(0.1)
    assert env.slices() == ["gpu-b", "net-a"]  # other node's slice and other driver's slice stay
    assert env.dra.is_registered(DRIVER)  # still registered: only its slices went


async def test_unregistered_driver_wiped_after_delay_unless_it_registers_again(env: Env) -> None:
    d = env.driver()
    await env.watcher.start()
    await registered_and_connected(env, d)
    await d.stop()  # registration socket removed: the watcher deregisters it
    await env.pass_()
    assert not env.dra.is_registered(DRIVER)
    assert set(env.wiper.pending) == {DRIVER}
    await env.advance(20.0)
    await registered_and_connected(env, d)  # back within 30 s
    await env.advance(60.0)
    assert env.slices() == ["gpu-a", "gpu-b", "net-a"]
    await d.stop()
    await env.pass_()
    await env.advance(30.0)
    assert env.slices() == ["gpu-b", "net-a"]


async def test_rolling_update_older_instance_leaves_mid_prepare(env: Env) -> None:
    rig = build(env.clock, StateDB.memory(), cast(Any, env.dra), FakeClaims())
    await rig.dra.start()
    try:
        await env.watcher.start()
        old = env.driver(OLD_UID, delay=5.0)
        await registered_and_connected(env, old)

        # A prepare goes to the only (old) instance and is still outstanding ...
        p1 = claim_pod("p1", env.clock, {"gpu": "c1"})
        rig.claims.put(claim_doc("c1", reserved=[p1]))
        apply1 = asyncio.create_task(rig.pods.apply(p1))
        await eventually(lambda: len(old.calls) == 1, what="prepare reached the old instance")

        # ... when the new instance registers beside it (both registered at once) ...
        new = env.driver(NEW_UID)
        await registered_and_connected(env, new)
        assert env.dra.endpoints(DRIVER) == [str(old.dra_path), str(new.dra_path)]
        assert env.dra.drivers()[DRIVER].endpoint == str(new.dra_path)  # the newest connected serves

        # ... and the old one goes away mid-call (the helper removes its registration socket first):
        # the kubelet closes its conn, so the call fails, and the pod waits for a retry.
        await old.stop_registration()
        await env.pass_()
        await asyncio.wait_for(apply1, 5)
        status = rig.pods.get("default", "p1").status
        assert status.phase == PENDING
        assert CONN_CLOSING in status.message
        await old.stop()
        assert env.dra.is_registered(DRIVER)
        assert env.dra.drivers()[DRIVER].endpoint == str(new.dra_path)

        # The kubelet keeps going: the retry and the next pods are prepared by the new instance.
        await rig.pods.retry_pending()
        assert rig.pods.get("default", "p1").status.phase == RUNNING
        p2 = claim_pod("p2", env.clock, {"gpu": "c2"})
        rig.claims.put(claim_doc("c2", reserved=[p2]))
        await rig.pods.apply(p2)
        assert rig.pods.get("default", "p2").status.phase == RUNNING
        assert [(m, [n for _, _, n in cs]) for _, m, cs in new.calls] == [
            ("NodePrepareResources", ["c1"]), ("NodePrepareResources", ["c2"])]
        assert [(m, [n for _, _, n in cs]) for _, m, cs in old.calls] == [("NodePrepareResources", ["c1"])]

        # One instance remains: the driver's slices are never scheduled for wiping.
        assert env.wiper.pending == {}
        await env.advance(120.0)
        assert env.slices() == ["gpu-a", "gpu-b", "net-a"]
    finally:
        await rig.close()


async def test_rolling_update_older_instance_leaves_between_prepares(env: Env) -> None:
    rig = build(env.clock, StateDB.memory(), cast(Any, env.dra), FakeClaims())
    await rig.dra.start()
    try:
        await env.watcher.start()
        old = env.driver(OLD_UID)
        await registered_and_connected(env, old)
        new = env.driver(NEW_UID)
        await registered_and_connected(env, new)
        p1 = claim_pod("p1", env.clock, {"gpu": "c1"})
        rig.claims.put(claim_doc("c1", reserved=[p1]))
        await rig.pods.apply(p1)
        assert rig.pods.get("default", "p1").status.phase == RUNNING
        # The old instance leaves (registration first, then its service, as the helper stops).
        await old.stop_registration()
        await env.pass_()
        await old.stop()
        assert env.wiper.pending == {}
        p2 = claim_pod("p2", env.clock, {"gpu": "c2"})
        rig.claims.put(claim_doc("c2", reserved=[p2]))
        await rig.pods.apply(p2)
        assert rig.pods.get("default", "p2").status.phase == RUNNING
        await rig.pods.delete("default", "p1")
        assert [m for _, m, _ in new.calls] == ["NodePrepareResources", "NodePrepareResources",
                                                "NodeUnprepareResources"]
        assert old.calls == []
        await env.advance(120.0)
        assert env.slices() == ["gpu-a", "gpu-b", "net-a"]
        # The last instance leaving does start the 30 s clock.
        await new.stop()
        await env.pass_()
        await env.advance(30.0)
        assert env.slices() == ["gpu-b", "net-a"]
    finally:
        await rig.close()


async def test_call_in_flight_when_its_plugin_unregisters_fails_not_cancels(env: Env) -> None:
    d = env.driver(OLD_UID, delay=5.0)
    await env.watcher.start()
    await registered_and_connected(env, d)
    call = asyncio.create_task(env.dra.prepare(DRIVER, [ClaimRef("default", "uid-c", "c")]))
    await eventually(lambda: len(d.calls) == 1, what="call reached the plugin")
    await env.dra.deregister(DRIVER, str(d.dra_path))
    with pytest.raises(DriverCallError) as err:
        await asyncio.wait_for(call, 5)
    assert str(err.value) == f"NodePrepareResources: rpc error: code = Canceled desc = {CONN_CLOSING}"
