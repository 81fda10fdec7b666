"""The netdev DRA driver and the pyroute2 Netlink adapter against the real kernel (root only).

Each test gets a throwaway namespace na-t-<random> holding a veth pair; the driver publishes
that namespace's links and makes its per-claim namespaces as na-t-<random>-p-<claim uid>.
Every namespace carrying the random tag is deleted in the fixture's finally, and the test
checks that nothing is left. Skips (with the reason) when not root or when the kernel
refuses a new network namespace.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nodeagent.apis.dra.v1 import api_pb2 as dra_pb
from nodeagent.apis.dra.v1 import api_pb2_grpc as dra_grpc
from nodeagent.apis.dra_health.v1 import api_pb2 as health_pb
from nodeagent.apis.dra_health.v1 import api_pb2_grpc as health_grpc
from nodeagent.network.errors import LinkNotFound, NetnsNotFound, NetworkError
from nodeagent.network.model import LINK_DEL, LINK_NEW, LinkEvent
from nodeagent.network.netlink import PyRoute2Netlink
from nodeagent.rpc.server import channel
from plugins.dra_kit.server import DriverServer
from plugins.netdev_driver.driver import NetdevDriver
from plugins.netdev_driver.profile import parse_profile
from tests.unit.network.memory_admin import MemoryAdmin

pytestmark = pytest.mark.linux


@dataclass
class Lab:
    nl: PyRoute2Netlink
    home: str  # the driver's namespace, holding veth pair nt0/nt1
    prefix: str  # per-claim namespaces


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = f"na-t-{uuid.uuid4().hex[:8]}"
    nl = PyRoute2Netlink(tag)
    try:
        await nl.create_netns(tag)
    except NetworkError as err:
        pytest.skip(f"cannot create a network namespace: {err}")
    try:
        await nl.add_veth("nt0", "nt1")
        yield Lab(nl, tag, f"{tag}-p-")
    finally:
        leftovers = [n for n in await nl.list_netns() if n.startswith(tag)]
        for name in sorted(leftovers, reverse=True):  # claim namespaces first
            await nl.delete_netns(name)
        assert not [n for n in await nl.list_netns() if n.startswith(tag)]
        assert leftovers == [tag], f"left behind: {leftovers}"


async def _within(check: Callable[[], Any], timeout: float) -> None:
    async def loop() -> None:
        while not await check():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(loop(), timeout)


async def test_links_listed_with_attributes(lab: Lab) -> None:
    links = {link.ifname: link for link in await lab.nl.list_links()}
    assert set(links) == {"lo", "nt0", "nt1"}
    nt0 = links["nt0"]
    assert (nt0.kind, nt0.mtu, nt0.operstate, nt0.netns, nt0.pci_address, nt0.admin_up) == (
        "veth", 1500, "DOWN", lab.home, None, False)
    assert len(nt0.mac) == 17 and nt0.mac != links["nt1"].mac
    assert links["lo"].kind == "device"
    assert (await lab.nl.get_link("nt1")).index == links["nt1"].index
    with pytest.raises(LinkNotFound, match=f"link nope not found in netns={lab.home}"):
        await lab.nl.get_link("nope")
    with pytest.raises(NetnsNotFound):
        await lab.nl.move_link("nt0", dst=f"{lab.prefix}missing")
    with pytest.raises(NetnsNotFound):
        await lab.nl.list_links(f"{lab.prefix}missing")


async def test_link_events_arrive_as_they_happen(lab: Lab) -> None:
    events = lab.nl.watch_links()
    snapshot = [await asyncio.wait_for(anext(events), 2) for _ in range(3)]
    assert {e.link.ifname for e in snapshot} == {"lo", "nt0", "nt1"}
    await lab.nl.set_link_up("nt0", True)
    seen: list[LinkEvent] = []
    while not any(e.link.ifname == "nt0" and e.link.admin_up for e in seen):
        seen.append(await asyncio.wait_for(anext(events), 1))
    await lab.nl.create_netns(f"{lab.prefix}x")
    await lab.nl.move_link("nt1", dst=f"{lab.prefix}x")
    while not any(e.action == LINK_DEL and e.link.ifname == "nt1" for e in seen):
        seen.append(await asyncio.wait_for(anext(events), 1))
    assert (await lab.nl.get_link("nt1", f"{lab.prefix}x")).netns == f"{lab.prefix}x"
    await lab.nl.move_link("nt1", src=f"{lab.prefix}x")
    while not any(e.action == LINK_NEW and e.link.ifname == "nt1" for e in seen[-3:]):
        seen.append(await asyncio.wait_for(anext(events), 1))
    await lab.nl.delete_netns(f"{lab.prefix}x")
    await events.aclose()  # type: ignore[attr-defined]


@pytest.fixture
async def served(lab: Lab, short_dir: Path) -> AsyncIterator[tuple[NetdevDriver, DriverServer, MemoryAdmin]]:
    admin = MemoryAdmin()
    profile = parse_profile({"netns": lab.home, "podNetnsPrefix": lab.prefix, "publishIntervalSeconds": 0.1})
    driver = NetdevDriver(profile, PyRoute2Netlink(lab.home), admin, state_dir=short_dir / "state")
    server = DriverServer(profile.driver_name, short_dir, driver)
    await driver.start()
    await server.start()
    try:
        yield driver, server, admin
    finally:
        await server.stop(0)
        await driver.stop()


async def test_health_stream_follows_operstate(lab: Lab, served: tuple[NetdevDriver, DriverServer, MemoryAdmin]
                                               ) -> None:
    _, server, admin = served

    async def published() -> bool:
        return set(admin.slice_devices()) == {"nt0", "nt1"}
    await _within(published, 2)
    assert admin.slice_devices()["nt0"]["kind"] == {"string": "veth"}
    async with channel(server.plugin_path) as ch:
        stream = health_grpc.DRAResourceHealthStub(ch).NodeWatchResources(health_pb.NodeWatchResourcesRequest())
        it = stream.__aiter__()

        async def health_after(change: Callable[[], Any], want: dict[str, int]) -> float:
            t0 = time.monotonic()
            await change()
            while True:
                msg = await asyncio.wait_for(it.__anext__(), 1.0)
                now = {d.device.device_name: d.health for d in msg.devices}
                if all(now.get(k) == v for k, v in want.items()):
                    return time.monotonic() - t0

        first = await asyncio.wait_for(it.__anext__(), 1.0)
        assert {d.device.device_name: d.health for d in first.devices} == {
            "nt0": health_pb.UNHEALTHY, "nt1": health_pb.UNHEALTHY}

        async def both_up() -> None:
            await lab.nl.set_link_up("nt0", True)
            await lab.nl.set_link_up("nt1", True)
        up = await health_after(both_up, {"nt0": health_pb.HEALTHY, "nt1": health_pb.HEALTHY})

        async def nt1_down() -> None:
            await lab.nl.set_link_up("nt1", False)
        down = await health_after(nt1_down, {"nt1": health_pb.UNHEALTHY})
        assert up < 1.0 and down < 1.0
        stream.cancel()


async def test_prepare_moves_veth_end_and_unprepare_brings_it_back(
        lab: Lab, served: tuple[NetdevDriver, DriverServer, MemoryAdmin]) -> None:
    driver, server, admin = served
    await lab.nl.set_link_up("nt1", True)
    claim = admin.claim("0b5a6c2e-1111-4222-8333-944445555666", "nic", ["nt0"])
    pod_ns = f"{lab.prefix}{claim.uid}"
    req = [dra_pb.Claim(namespace=claim.namespace, uid=claim.uid, name=claim.name)]
    async with channel(server.plugin_path) as ch:
        stub = dra_grpc.DRAPluginStub(ch)
        resp = await stub.NodePrepareResources(dra_pb.NodePrepareResourcesRequest(claims=req), timeout=10)
        result = resp.claims[claim.uid]
        assert result.error == ""
        assert [(d.pool_name, d.device_name, list(d.request_names)) for d in result.devices] == [
            ("netdev", "nt0", ["nic"])]
        assert pod_ns in await lab.nl.list_netns()
        moved = await lab.nl.get_link("nt0", pod_ns)
        assert moved.admin_up
        assert "nt0" not in {link.ifname for link in await lab.nl.list_links()}

        async def healthy_in_pod() -> bool:
            return any(v.name == "nt0" and v.health == "Healthy" and v.prepared_in == pod_ns
                       for v in driver.devices())
        await _within(healthy_in_pod, 2)
        again = await stub.NodePrepareResources(dra_pb.NodePrepareResourcesRequest(claims=req), timeout=10)
        assert again.claims[claim.uid] == result

        out = await stub.NodeUnprepareResources(dra_pb.NodeUnprepareResourcesRequest(claims=req), timeout=10)
        assert out.claims[claim.uid].error == ""
    back = await lab.nl.get_link("nt0")
    assert back.netns == lab.home and not back.admin_up  # it was down before prepare
    assert pod_ns not in await lab.nl.list_netns()
    assert driver.links.all() == []
