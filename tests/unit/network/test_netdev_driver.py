"""The netdev driver on FakeNetlink and an in-memory Kubernetes API: slices, health, prepare/unprepare."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import NotFound
from nodeagent.network.errors import NetworkError
from nodeagent.network.fake import FakeNetlink
from plugins.dra_kit.cdi import CDIWriter
from plugins.dra_kit.model import ClaimRef, DeviceHealth
from plugins.netdev_driver.driver import NetdevDriver
from plugins.netdev_driver.profile import parse_profile
from tests.unit.network.memory_admin import DRIVER, MemoryAdmin
from tests.waiting import eventually


def _health(driver: NetdevDriver) -> dict[str, str]:
    return {d.device: d.health for d in driver.board.snapshot()}


@pytest.fixture
def fake() -> FakeNetlink:
    nl = FakeNetlink("lab")
    nl.add_link("lo", kind="device", operstate="UNKNOWN")
    nl.add_link("eth0", kind="device", pci_address="0000:00:03.0", mtu=9000)
    return nl


@pytest.fixture
async def make(fake: FakeNetlink, tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    started: list[NetdevDriver] = []

    async def build(admin: MemoryAdmin, netlink: FakeNetlink | None = None, **profile: Any) -> NetdevDriver:
        doc = {"netns": "lab", "publishIntervalSeconds": 0.05, "healthResendSeconds": 5, **profile}
        driver = NetdevDriver(parse_profile(doc), netlink or fake, admin, state_dir=tmp_path / "state",
                              cdi=CDIWriter(tmp_path / "cdi", "netdev.nodeagent.dev/link", DRIVER))
        await driver.start()
        started.append(driver)
        return driver

    yield build
    for d in started:
        await d.stop()


async def test_publishes_links_with_attributes(fake: FakeNetlink, make: Callable[..., Any]) -> None:
    await fake.add_veth("veth0", "veth1")
    admin = MemoryAdmin()
    driver: NetdevDriver = await make(admin)
    await eventually(lambda: len(admin.slice_devices()) == 3)
    devices = admin.slice_devices()
    assert set(devices) == {"eth0", "veth0", "veth1"}  # lo is excluded by default
    assert devices["eth0"] == {"ifname": {"string": "eth0"}, "mac": {"string": fake.links_now()["eth0"].mac},
                               "mtu": {"int": 9000}, "kind": {"string": "device"},
                               "pciAddress": {"string": "0000:00:03.0"}}
    assert devices["veth0"]["kind"] == {"string": "veth"}
    assert _health(driver) == {"eth0": "Healthy", "veth0": "Unhealthy", "veth1": "Unhealthy"}
    # a new link appears: published at once
    fake.add_link("dummy0", kind="dummy", operstate="UNKNOWN")
    await eventually(lambda: "dummy0" in admin.slice_devices())
    assert _health(driver)["dummy0"] == "Healthy"


async def test_filter_by_kind_and_name(fake: FakeNetlink, make: Callable[..., Any]) -> None:
    await fake.add_veth("veth0", "veth1")
    admin = MemoryAdmin()
    await make(admin, kinds=["veth"], exclude=["veth1"])
    await eventually(lambda: bool(admin.slice_devices()))
    assert set(admin.slice_devices()) == {"veth0"}


async def test_operstate_events_drive_health_stream(fake: FakeNetlink, make: Callable[..., Any]) -> None:
    await fake.add_veth("veth0", "veth1")
    driver: NetdevDriver = await make(MemoryAdmin())
    stream = driver.board.watch()
    first = await anext(stream)
    assert {d.device: d.health for d in first}["veth0"] == "Unhealthy"
    await fake.set_link_up("veth0", True)
    await fake.set_link_up("veth1", True)
    seen: list[DeviceHealth] = []
    while {d.device: d.health for d in seen}.get("veth0") != "Healthy":
        seen = await asyncio.wait_for(anext(stream), 1.0)
    fake.set_operstate("eth0", "DOWN")
    while {d.device: d.health for d in seen}.get("eth0") != "Unhealthy":
        seen = await asyncio.wait_for(anext(stream), 1.0)
    assert next(d for d in seen if d.device == "eth0").message.startswith("operstate DOWN")
    await stream.aclose()  # type: ignore[attr-defined]


async def test_prepare_moves_link_and_unprepare_moves_it_back(
        fake: FakeNetlink, make: Callable[..., Any], tmp_path: Path) -> None:
    await fake.add_veth("veth0", "veth1")
    await fake.set_link_up("veth1", True)
    admin = MemoryAdmin()
    driver: NetdevDriver = await make(admin)
    claim = admin.claim("uid-1", "c1", ["veth0"])
    result = (await driver.prepare([claim]))["uid-1"]
    assert result.error == ""
    [dev] = result.devices
    assert (dev.pool_name, dev.device_name, dev.request_names) == ("netdev", "veth0", ("nic",))
    assert dev.cdi_device_ids == ("netdev.nodeagent.dev/link=uid-1-veth0",)
    ns = "nadra-uid-1"
    assert "veth0" in fake.links_now(ns) and "veth0" not in fake.links_now()
    assert fake.links_now(ns)["veth0"].admin_up  # upInPod
    spec = json.loads((tmp_path / "cdi" / f"{DRIVER}-uid-1.json").read_text())
    assert "NETDEV_NETNS=/var/run/netns/nadra-uid-1" in spec["devices"][0]["containerEdits"]["env"]
    # still published while in use, health now from the claim's namespace
    await eventually(lambda: _health(driver).get("veth0") == "Healthy")
    assert "veth0" in admin.slice_devices()
    fake.set_operstate("veth0", "DOWN", netns=ns)
    await eventually(lambda: _health(driver).get("veth0") == "Unhealthy")
    # repeated prepare: same answer, nothing moves again
    moves = len([c for c in fake.calls if c[0] == "move_link"])
    assert (await driver.prepare([claim]))["uid-1"] == result
    assert len([c for c in fake.calls if c[0] == "move_link"]) == moves
    # unprepare: back home, admin state restored (it was down), namespace and CDI gone
    assert await driver.unprepare([claim]) == {"uid-1": ""}
    assert "veth0" in fake.links_now() and not fake.links_now()["veth0"].admin_up
    assert ns not in await fake.list_netns()
    assert not (tmp_path / "cdi" / f"{DRIVER}-uid-1.json").exists()
    assert driver.links.all() == []
    await eventually(lambda: _health(driver).get("veth0") == "Unhealthy")
    assert await driver.unprepare([claim]) == {"uid-1": ""}  # idempotent


async def test_prepare_errors(fake: FakeNetlink, make: Callable[..., Any]) -> None:
    await fake.add_veth("veth0", "veth1")
    admin = MemoryAdmin()
    driver: NetdevDriver = await make(admin)
    missing = admin.claim("uid-m", "missing", ["nope"])
    assert "device netdev/nope is not a link" in (await driver.prepare([missing]))["uid-m"].error
    other_pool = admin.claim("uid-o", "other", ["veth0"], pool="elsewhere")
    assert "not in pool netdev" in (await driver.prepare([other_pool]))["uid-o"].error
    first = admin.claim("uid-1", "c1", ["veth0"])
    assert (await driver.prepare([first]))["uid-1"].error == ""
    second = admin.claim("uid-2", "c2", ["veth0"])
    assert "in use by claim uid-1" in (await driver.prepare([second]))["uid-2"].error
    # a failing move rolls the claim back: nothing left in a namespace
    fake.fail_next("move_link", NetworkError("move link veth1: boom", 22))
    third = admin.claim("uid-3", "c3", ["veth1"])
    assert "boom" in (await driver.prepare([third]))["uid-3"].error
    assert "nadra-uid-3" not in await fake.list_netns() and "veth1" in fake.links_now()
    assert driver.links.get("uid-3") is None
    assert await fake.list_netns() == ("lab", "nadra-uid-1")


async def test_state_survives_restart(fake: FakeNetlink, make: Callable[..., Any]) -> None:
    await fake.add_veth("veth0", "veth1")
    await fake.set_link_up("veth0", True)
    admin = MemoryAdmin()
    first: NetdevDriver = await make(admin)
    claim = admin.claim("uid-1", "c1", ["veth0"])
    answer = (await first.prepare([claim]))["uid-1"]
    await first.stop()
    second: NetdevDriver = await make(admin)
    assert "veth0" in {v.name for v in second.devices()}  # still published while away
    assert (await second.prepare([claim]))["uid-1"] == answer
    assert await second.unprepare([claim]) == {"uid-1": ""}
    assert fake.links_now()["veth0"].admin_up  # was up before prepare


async def test_unprepare_without_state_finds_the_namespace(fake: FakeNetlink, make: Callable[..., Any],
                                                           tmp_path: Path) -> None:
    await fake.add_veth("veth0", "veth1")
    admin = MemoryAdmin()
    first: NetdevDriver = await make(admin)
    claim = admin.claim("uid-1", "c1", ["veth0"])
    assert (await first.prepare([claim]))["uid-1"].error == ""
    await first.stop()
    for f in (tmp_path / "state").iterdir():
        f.unlink()  # state lost
    second: NetdevDriver = await make(admin)
    assert await second.unprepare([claim]) == {"uid-1": ""}
    assert "veth0" in fake.links_now() and "nadra-uid-1" not in await fake.list_netns()


async def test_no_move_mode(fake: FakeNetlink, make: Callable[..., Any]) -> None:
    await fake.add_veth("veth0", "veth1")
    admin = MemoryAdmin()
    driver: NetdevDriver = await make(admin, moveToPodNetns=False)
    claim = admin.claim("uid-1", "c1", ["veth0"])
    assert (await driver.prepare([claim]))["uid-1"].devices[0].device_name == "veth0"
    assert "veth0" in fake.links_now() and await fake.list_netns() == ("lab",)
    assert await driver.unprepare([claim]) == {"uid-1": ""}


async def test_missing_claim_is_a_per_claim_error(make: Callable[..., Any]) -> None:
    driver: NetdevDriver = await make(MemoryAdmin())
    result = (await driver.prepare([ClaimRef("default", "u", "ghost")]))["u"]
    assert "not found" in result.error
    assert issubclass(NotFound, Exception)
