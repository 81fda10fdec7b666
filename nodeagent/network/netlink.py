"""The Netlink port over pyroute2 (AsyncIPRoute): the only module that imports pyroute2.

Why asyncio-native: the driver runs on one asyncio loop; AsyncIPRoute reads netlink on that
loop, so link events (RTNLGRP_LINK multicast) arrive as they happen with no thread and no
polling. A socket for a named namespace is opened inside it by pyroute2 (a short-lived
child does setns and hands the socket back), so the process itself never changes namespace.
Every pyroute2 NetlinkError / OSError leaves here as a nodeagent.network.errors type that
names the operation, the link and the namespace.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pyroute2 import AsyncIPRoute
from pyroute2 import netns as pr_netns
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl import RTMGRP_LINK

from nodeagent.network import sysfs
from nodeagent.network.errors import (
    LinkNotFound,
    NetnsNotFound,
    NetworkError,
    NetworkExists,
    checked_netns,
    from_errno,
)
from nodeagent.network.model import KIND_DEVICE, LINK_DEL, LINK_NEW, Link, LinkEvent

logger = logging.getLogger(__name__)

IFF_UP = 0x1
CLONE_NEWNET = 0x40000000
NETNS_RUN_DIR = Path("/var/run/netns")
NETLINK_ROUTE = 0

T = TypeVar("T")


async def _in_fresh_thread(fn: Callable[[], T]) -> T:
    """Run `fn` on a new OS thread that ends afterwards (so its namespace never leaks)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def deliver(value: T | None, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)  # type: ignore[arg-type]

    def run() -> None:
        try:
            value = fn()
        except BaseException as err:
            loop.call_soon_threadsafe(deliver, None, err)
        else:
            loop.call_soon_threadsafe(deliver, value, None)

    threading.Thread(target=run, name="netns", daemon=True).start()
    return await done


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _setns(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc().setns(fd, CLONE_NEWNET) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(path))
    finally:
        os.close(fd)


def _netlink_socket_in(name: str) -> int:
    """(fresh thread) Enter namespace `name`, open a NETLINK_ROUTE socket there, return its fd."""
    _setns(NETNS_RUN_DIR / name)
    return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_ROUTE).detach()


def _create_netns(name: str) -> None:
    """(fresh thread) unshare a new network namespace and bind it at /var/run/netns/<name>."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), "unshare(CLONE_NEWNET)")
    pr_netns.attach(name, threading.get_native_id(), libc=libc)


def _where(netns: str | None) -> str:
    return f"netns={netns}" if netns else "netns=host"


@contextmanager
def _wrapped(what: str) -> Iterator[None]:
    """Turn pyroute2 / OS errors into NetworkError subclasses; ours pass through."""
    try:
        yield
    except NetworkError:
        raise
    except NetlinkError as err:
        raise from_errno(int(err.code), what) from err
    except OSError as err:
        raise from_errno(err.errno or 0, what) from err


class PyRoute2Netlink:
    """Netlink over pyroute2; `netns` is the port's own namespace (None: the host's).

    `sys_root` is where sysfs is mounted (PCI addresses of host links).
    """

    def __init__(self, netns: str | None = None, *, sys_root: Path = Path("/sys")) -> None:
        self._home = None if netns is None else checked_netns(netns)
        self._sys_root = sys_root

    @property
    def netns(self) -> str | None:
        return self._home

    def _ns(self, netns: str | None) -> str | None:
        return self._home if netns is None else checked_netns(netns)

    async def _open(self, name: str | None) -> Any:
        """A fresh socket in `name`; NetnsNotFound when that namespace does not exist."""
        if name is None:
            return AsyncIPRoute()
        if name not in pr_netns.listnetns():
            raise NetnsNotFound(f"network namespace {name} does not exist", errno.ENOENT)
        with _wrapped(f"open netlink socket in {_where(name)}"):
            fd = await _in_fresh_thread(lambda: _netlink_socket_in(name))
            try:
                return AsyncIPRoute(fileno=fd)
            except BaseException:
                os.close(fd)
                raise

    def _to_link(self, msg: Any, name: str | None) -> Link:
        ifname = str(msg.get("ifname") or "")
        pci: str | None = None
        if msg.get("parent_dev_bus_name") == "pci" and msg.get("parent_dev_name"):
            pci = str(msg.get("parent_dev_name"))
        elif name is None and ifname:
            pci = sysfs.pci_address(self._sys_root, ifname)
        return Link(
            index=int(msg.get("index") or 0),
            ifname=ifname,
            mac=str(msg.get("address") or ""),
            mtu=int(msg.get("mtu") or 0),
            kind=str(msg.get(("linkinfo", "kind")) or KIND_DEVICE),
            operstate=str(msg.get("operstate") or "UNKNOWN"),
            pci_address=pci,
            netns=name,
            admin_up=bool(int(msg.get("flags") or 0) & IFF_UP),
        )

    async def _index(self, ipr: Any, ifname: str, name: str | None) -> int:
        found = await ipr.link_lookup(ifname=ifname)
        if not found:
            raise LinkNotFound(f"link {ifname} not found in {_where(name)}", errno.ENODEV)
        return int(found[0])

    async def list_links(self, netns: str | None = None) -> tuple[Link, ...]:
        name = self._ns(netns)
        ipr = await self._open(name)
        try:
            with _wrapped(f"list links in {_where(name)}"):
                links = [self._to_link(m, name) async for m in await ipr.link("dump")]
        finally:
            ipr.close()
        return tuple(sorted(links, key=lambda link: link.index))

    async def get_link(self, ifname: str, netns: str | None = None) -> Link:
        name = self._ns(netns)
        ipr = await self._open(name)
        try:
            with _wrapped(f"get link {ifname} in {_where(name)}"):
                index = await self._index(ipr, ifname, name)
                msgs = [m async for m in await ipr.link("dump", index=index)]
        finally:
            ipr.close()
        for m in msgs:
            if m.get("ifname") == ifname:
                return self._to_link(m, name)
        raise LinkNotFound(f"link {ifname} not found in {_where(name)}", errno.ENODEV)

    async def watch_links(self, netns: str | None = None) -> AsyncIterator[LinkEvent]:
        name = self._ns(netns)
        events = await self._open(name)
        known: set[str] = set()
        try:
            with _wrapped(f"subscribe to link events in {_where(name)}"):
                await events.bind(groups=RTMGRP_LINK)
            logger.debug("link events subscribed %s", _where(name))
            resync = True
            while True:
                if resync:
                    resync = False
                    current = await self.list_links(name)
                    for gone in known - {link.ifname for link in current}:
                        yield LinkEvent(LINK_DEL, Link(0, gone, "", 0, KIND_DEVICE, "UNKNOWN", netns=name))
                    known = {link.ifname for link in current}
                    for link in current:
                        yield LinkEvent(LINK_NEW, link)
                batch: list[LinkEvent] = []
                try:
                    async for msg in events.get():
                        event = msg.get("event")
                        if event in ("RTM_NEWLINK", "RTM_DELLINK"):
                            batch.append(LinkEvent(LINK_NEW if event == "RTM_NEWLINK" else LINK_DEL,
                                                   self._to_link(msg, name)))
                except NetlinkError as err:
                    if err.code != errno.ENOBUFS:
                        raise from_errno(int(err.code), f"read link events in {_where(name)}") from err
                    logger.warning("link events overflowed, listing again %s", _where(name))
                    resync = True
                for ev in batch:
                    if ev.action == LINK_NEW:
                        known.add(ev.link.ifname)
                    else:
                        known.discard(ev.link.ifname)
                    yield ev
        finally:
            events.close()

    async def set_link_up(self, ifname: str, up: bool, netns: str | None = None) -> None:
        name = self._ns(netns)
        ipr = await self._open(name)
        try:
            with _wrapped(f"set link {ifname} {'up' if up else 'down'} in {_where(name)}"):
                index = await self._index(ipr, ifname, name)
                await ipr.link("set", index=index, state="up" if up else "down")
        finally:
            ipr.close()

    async def move_link(self, ifname: str, *, src: str | None = None, dst: str | None = None) -> None:
        source, target = self._ns(src), self._ns(dst)
        if source == target:
            return
        if target is not None and target not in pr_netns.listnetns():
            raise NetnsNotFound(f"move link {ifname}: network namespace {target} does not exist", errno.ENOENT)
        ipr = await self._open(source)
        try:
            with _wrapped(f"move link {ifname} from {_where(source)} to {_where(target)}"):
                index = await self._index(ipr, ifname, source)
                if target is None:
                    await ipr.link("set", index=index, net_ns_pid=os.getpid())
                else:
                    await ipr.link("set", index=index, net_ns_fd=target)
        finally:
            ipr.close()

    async def add_veth(self, ifname: str, peer: str, netns: str | None = None) -> None:
        name = self._ns(netns)
        ipr = await self._open(name)
        try:
            with _wrapped(f"add veth {ifname}/{peer} in {_where(name)}"):
                await ipr.link("add", ifname=ifname, kind="veth", peer={"ifname": peer})
        finally:
            ipr.close()

    async def delete_link(self, ifname: str, netns: str | None = None) -> None:
        name = self._ns(netns)
        ipr = await self._open(name)
        try:
            with _wrapped(f"delete link {ifname} in {_where(name)}"):
                index = await self._index(ipr, ifname, name)
                await ipr.link("del", index=index)
        finally:
            ipr.close()

    async def list_netns(self) -> tuple[str, ...]:
        with _wrapped("list network namespaces"):
            return tuple(sorted(str(n) for n in pr_netns.listnetns()))

    async def create_netns(self, name: str) -> None:
        checked_netns(name)
        if name in await self.list_netns():
            raise NetworkExists(f"network namespace {name} exists already", errno.EEXIST)
        with _wrapped(f"create network namespace {name}"):
            await _in_fresh_thread(lambda: _create_netns(name))
        logger.info("network namespace created netns=%s", name)

    async def delete_netns(self, name: str) -> None:
        checked_netns(name)
        if name not in await self.list_netns():
            raise NetnsNotFound(f"network namespace {name} does not exist", errno.ENOENT)
        with _wrapped(f"delete network namespace {name}"):
            await asyncio.to_thread(pr_netns.remove, name)  # umount + unlink: no fork
        logger.info("network namespace deleted netns=%s", name)

    async def close(self) -> None:
        """Nothing to release: every call opens and closes its own socket."""
