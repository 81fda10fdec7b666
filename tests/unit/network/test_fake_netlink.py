"""FakeNetlink behaves like the kernel where the netdev driver relies on it."""

from __future__ import annotations

import asyncio
import errno

import pytest

from nodeagent.network.errors import LinkNotFound, NetnsNotFound, NetworkError, NetworkExists
from nodeagent.network.fake import FakeNetlink
from nodeagent.network.model import LINK_DEL, LINK_NEW, LinkEvent
from nodeagent.network.ports import Netlink


def _port(n: Netlink) -> Netlink:
    return n


async def _next(it: object, timeout: float = 1.0) -> LinkEvent:
    ev = await asyncio.wait_for(it.__anext__(), timeout)  # type: ignore[attr-defined]
    assert isinstance(ev, LinkEvent)
    return ev


async def test_veth_pair_operstate_follows_both_ends() -> None:
    nl = FakeNetlink()
    _port(nl)
    await nl.add_veth("va", "vb")
    await nl.set_link_up("va", True)
    assert (await nl.get_link("va")).operstate == "LOWERLAYERDOWN"
    await nl.set_link_up("vb", True)
    assert (await nl.get_link("va")).operstate == "UP"
    assert (await nl.get_link("vb")).operstate == "UP"
    await nl.set_link_up("vb", False)
    assert (await nl.get_link("vb")).operstate == "DOWN"
    assert (await nl.get_link("va")).operstate == "LOWERLAYERDOWN"
    with pytest.raises(NetworkExists):
        await nl.add_veth("va", "vc")
    with pytest.raises(LinkNotFound, match="link nope not found"):
        await nl.get_link("nope")


async def test_watch_snapshot_then_changes() -> None:
    nl = FakeNetlink("home")
    nl.add_link("eth0", kind="device", pci_address="0000:00:03.0")
    it = nl.watch_links()
    first = await _next(it)
    assert first.action == LINK_NEW and first.link.ifname == "eth0" and first.link.netns == "home"
    nl.set_operstate("eth0", "DOWN")
    ev = await _next(it)
    assert ev.link.operstate == "DOWN"
    assert nl.watcher_count() == 1
    await it.aclose()  # type: ignore[attr-defined]
    assert nl.watcher_count() == 0


async def test_move_and_delete_namespace() -> None:
    nl = FakeNetlink()
    await nl.add_veth("va", "vb")
    await nl.set_link_up("va", True)
    await nl.create_netns("pod1")
    with pytest.raises(NetworkExists):
        await nl.create_netns("pod1")
    home = nl.watch_links()
    pod = nl.watch_links("pod1")
    assert {(await _next(home)).link.ifname for _ in range(2)} == {"va", "vb"}
    await nl.move_link("va", dst="pod1")
    gone = await _next(home)
    assert (gone.action, gone.link.ifname) == (LINK_DEL, "va")
    arrived = await _next(pod)
    assert (arrived.action, arrived.link.netns, arrived.link.admin_up) == (LINK_NEW, "pod1", False)
    assert "va" in nl.links_now("pod1") and "va" not in nl.links_now()
    await nl.move_link("va", src="pod1")
    assert "va" in nl.links_now()
    await nl.move_link("va", dst="pod1")
    await nl.delete_netns("pod1")  # a veth inside dies with its peer
    assert nl.links_now() == {}
    assert await nl.list_netns() == ()
    with pytest.raises(NetnsNotFound):
        await nl.delete_netns("pod1")
    with pytest.raises(NetnsNotFound):
        await nl.move_link("x", dst="nowhere")
    await home.aclose()  # type: ignore[attr-defined]
    await pod.aclose()  # type: ignore[attr-defined]


async def test_physical_link_returns_to_host_and_failure_injection() -> None:
    nl = FakeNetlink()
    nl.add_link("eth1", pci_address="0000:03:00.0")
    await nl.create_netns("p")
    await nl.move_link("eth1", dst="p")
    await nl.delete_netns("p")
    assert nl.links_now()["eth1"].pci_address == "0000:03:00.0"
    nl.fail_next("move_link", NetworkError("boom", errno.EINVAL))
    with pytest.raises(NetworkError, match="boom"):
        await nl.move_link("eth1", dst="q")
    await nl.create_netns("q")
    await nl.move_link("eth1", dst="q")  # the failure was for one call only
    assert ("move_link", "eth1", "None", "q") in nl.calls
