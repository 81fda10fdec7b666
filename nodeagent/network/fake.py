"""FakeNetlink: the Netlink port in memory, for tests without root.

Namespaces are dicts of links keyed by name (None: the host). It behaves as the kernel
does where the driver cares: a moved link arrives down in its new namespace (DEL event in
the old, NEW in the new), deleting a namespace destroys the veth links inside it (and their
peers) and returns other links to the host, watchers get a snapshot then every change.
Tests drive it with add_link / set_operstate and inject failures with fail_next.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import AsyncIterator
from dataclasses import replace

from nodeagent.network.errors import (
    LinkNotFound,
    NetnsNotFound,
    NetworkError,
    NetworkExists,
    checked_netns,
)
from nodeagent.network.model import (
    KIND_DEVICE,
    LINK_DEL,
    LINK_NEW,
    OPER_DOWN,
    OPER_LOWERLAYERDOWN,
    OPER_UP,
    Link,
    LinkEvent,
)

_HOST: str | None = None


class FakeNetlink:
    """In-memory Netlink; `netns` is the port's own namespace (created if missing)."""

    def __init__(self, netns: str | None = None) -> None:
        self._home = None if netns is None else checked_netns(netns)
        self._spaces: dict[str | None, dict[str, Link]] = {_HOST: {}}
        self._spaces.setdefault(self._home, {})
        self._peers: dict[tuple[str | None, str], tuple[str | None, str]] = {}
        self._watchers: dict[str | None, list[asyncio.Queue[LinkEvent]]] = {}
        self._next_index = 1
        self._failures: dict[str, NetworkError] = {}
        self.calls: list[tuple[str, ...]] = []  # (method, args...) of every mutating call

    # --- test controls ---------------------------------------------------------------

    def add_link(self, ifname: str, *, netns: str | None = None, kind: str = KIND_DEVICE, mac: str = "",
                 mtu: int = 1500, operstate: str = OPER_UP, pci_address: str | None = None) -> Link:
        """Put a link into a namespace (None: the port's own) as if a driver had made it."""
        name = self._ns(netns)
        space = self._space(name)
        link = Link(self._index(), ifname, mac or f"02:00:00:00:00:{self._next_index:02x}", mtu, kind,
                    operstate, pci_address, name, admin_up=operstate != OPER_DOWN)
        space[ifname] = link
        self._emit(name, LinkEvent(LINK_NEW, link))
        return link

    def set_operstate(self, ifname: str, operstate: str, netns: str | None = None) -> None:
        """Change a link's operstate (carrier lost, ...) and tell the watchers."""
        name = self._ns(netns)
        link = self._link(ifname, name)
        self._update(name, replace(link, operstate=operstate))

    def fail_next(self, method: str, error: NetworkError) -> None:
        """The next call of `method` (e.g. "move_link") raises `error` instead."""
        self._failures[method] = error

    def links_now(self, netns: str | None = None) -> dict[str, Link]:
        """A copy of a namespace's links (None: the port's own)."""
        return dict(self._space(self._ns(netns)))

    def watcher_count(self, netns: str | None = None) -> int:
        return len(self._watchers.get(self._ns(netns), []))

    # --- the port --------------------------------------------------------------------

    @property
    def netns(self) -> str | None:
        return self._home

    async def list_links(self, netns: str | None = None) -> tuple[Link, ...]:
        self._maybe_fail("list_links")
        space = self._space(self._ns(netns))
        return tuple(sorted(space.values(), key=lambda link: link.index))

    async def get_link(self, ifname: str, netns: str | None = None) -> Link:
        self._maybe_fail("get_link")
        return self._link(ifname, self._ns(netns))

    async def watch_links(self, netns: str | None = None) -> AsyncIterator[LinkEvent]:
        name = self._ns(netns)
        self._space(name)
        queue: asyncio.Queue[LinkEvent] = asyncio.Queue()
        self._watchers.setdefault(name, []).append(queue)
        try:
            for link in sorted(self._space(name).values(), key=lambda item: item.index):
                yield LinkEvent(LINK_NEW, link)
            while True:
                yield await queue.get()
        finally:
            self._watchers[name].remove(queue)

    async def set_link_up(self, ifname: str, up: bool, netns: str | None = None) -> None:
        self._maybe_fail("set_link_up")
        name = self._ns(netns)
        self.calls.append(("set_link_up", ifname, str(up), str(name)))
        link = self._link(ifname, name)
        self._update(name, replace(link, admin_up=up, operstate=self._oper(name, ifname, up)))
        peer = self._peers.get((name, ifname))
        if peer is not None:
            other = self._spaces[peer[0]][peer[1]]
            self._update(peer[0], replace(other, operstate=self._oper(peer[0], peer[1], other.admin_up)))

    async def move_link(self, ifname: str, *, src: str | None = None, dst: str | None = None) -> None:
        self._maybe_fail("move_link")
        source, target = self._ns(src), self._ns(dst)
        if source == target:
            return
        if target not in self._spaces:
            raise NetnsNotFound(f"move link {ifname}: network namespace {target} does not exist", errno.ENOENT)
        link = self._link(ifname, source)
        if ifname in self._spaces[target]:
            raise NetworkExists(f"move link {ifname} to netns={target}: File exists (errno 17)", errno.EEXIST)
        self.calls.append(("move_link", ifname, str(source), str(target)))
        self._relocate(link, source, target)

    async def add_veth(self, ifname: str, peer: str, netns: str | None = None) -> None:
        self._maybe_fail("add_veth")
        name = self._ns(netns)
        space = self._space(name)
        for n in (ifname, peer):
            if n in space:
                raise NetworkExists(f"add veth {ifname}/{peer} in netns={name}: File exists (errno 17)", errno.EEXIST)
        self.calls.append(("add_veth", ifname, peer, str(name)))
        for n in (peer, ifname):
            link = Link(self._index(), n, f"02:00:00:00:01:{self._next_index:02x}", 1500, "veth", OPER_DOWN,
                        None, name, admin_up=False)
            space[n] = link
            self._emit(name, LinkEvent(LINK_NEW, link))
        self._peers[(name, ifname)] = (name, peer)
        self._peers[(name, peer)] = (name, ifname)

    async def delete_link(self, ifname: str, netns: str | None = None) -> None:
        self._maybe_fail("delete_link")
        name = self._ns(netns)
        self.calls.append(("delete_link", ifname, str(name)))
        self._destroy(self._link(ifname, name))

    async def list_netns(self) -> tuple[str, ...]:
        return tuple(sorted(n for n in self._spaces if n is not None))

    async def create_netns(self, name: str) -> None:
        self._maybe_fail("create_netns")
        checked_netns(name)
        if name in self._spaces:
            raise NetworkExists(f"network namespace {name} exists already", errno.EEXIST)
        self.calls.append(("create_netns", name))
        self._spaces[name] = {}

    async def delete_netns(self, name: str) -> None:
        self._maybe_fail("delete_netns")
        checked_netns(name)
        if name not in self._spaces:
            raise NetnsNotFound(f"network namespace {name} does not exist", errno.ENOENT)
        self.calls.append(("delete_netns", name))
        for link in list(self._spaces[name].values()):
            if link.kind == "veth":
                self._destroy(link)
            elif link.kind == KIND_DEVICE:
                self._relocate(link, name, _HOST)
            else:
                del self._spaces[name][link.ifname]
        del self._spaces[name]

    async def close(self) -> None:
        """Nothing to release."""

    # --- internals -------------------------------------------------------------------

    def _ns(self, netns: str | None) -> str | None:
        return self._home if netns is None else checked_netns(netns)

    def _space(self, name: str | None) -> dict[str, Link]:
        space = self._spaces.get(name)
        if space is None:
            raise NetnsNotFound(f"network namespace {name} does not exist", errno.ENOENT)
        return space

    def _link(self, ifname: str, name: str | None) -> Link:
        link = self._space(name).get(ifname)
        if link is None:
            raise LinkNotFound(f"link {ifname} not found in netns={name or 'host'}", errno.ENODEV)
        return link

    def _index(self) -> int:
        self._next_index += 1
        return self._next_index - 1

    def _oper(self, name: str | None, ifname: str, up: bool) -> str:
        if not up:
            return OPER_DOWN
        peer = self._peers.get((name, ifname))
        if peer is None:
            return OPER_UP
        other = self._spaces[peer[0]][peer[1]]
        return OPER_UP if other.admin_up else OPER_LOWERLAYERDOWN

    def _update(self, name: str | None, link: Link) -> None:
        self._spaces[name][link.ifname] = link
        self._emit(name, LinkEvent(LINK_NEW, link))

    def _relocate(self, link: Link, source: str | None, target: str | None) -> None:
        del self._spaces[source][link.ifname]
        self._emit(source, LinkEvent(LINK_DEL, link))
        moved = replace(link, netns=target, admin_up=False, operstate=OPER_DOWN)
        self._spaces[target][link.ifname] = moved
        self._emit(target, LinkEvent(LINK_NEW, moved))
        peer = self._peers.pop((source, link.ifname), None)
        if peer is not None:
            self._peers[(target, link.ifname)] = peer
            self._peers[peer] = (target, link.ifname)
            other = self._spaces[peer[0]][peer[1]]
            self._update(peer[0], replace(other, operstate=self._oper(peer[0], peer[1], other.admin_up)))

    def _destroy(self, link: Link) -> None:
        name = link.netns
        self._spaces[name].pop(link.ifname, None)
        self._emit(name, LinkEvent(LINK_DEL, link))
        peer = self._peers.pop((name, link.ifname), None)
        if peer is not None:
            self._peers.pop(peer, None)
            other = self._spaces.get(peer[0], {}).pop(peer[1], None)
            if other is not None:
                self._emit(peer[0], LinkEvent(LINK_DEL, other))

    def _emit(self, name: str | None, event: LinkEvent) -> None:
        for queue in self._watchers.get(name, []):
            queue.put_nowait(event)

    def _maybe_fail(self, method: str) -> None:
        error = self._failures.pop(method, None)
        if error is not None:
            raise error
