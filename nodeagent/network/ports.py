"""The Netlink port: what the netdev DRA driver needs from the kernel's network stack.

The driver depends on this Protocol only; netlink.py implements it over pyroute2 (root),
fake.py in memory (tests). Every method works in the port's own namespace (`netns`,
given when the port is made; None is the host, i.e. the process's own namespace) unless
a method is told another named namespace. Errors are nodeagent.network.errors types.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from nodeagent.network.model import Link, LinkEvent


class Netlink(Protocol):
    @property
    def netns(self) -> str | None:
        """The port's own namespace: a name under /run/netns, or None for the host."""
        ...

    async def list_links(self, netns: str | None = None) -> tuple[Link, ...]:
        """Every link of `netns` (None: the port's own namespace), in index order."""
        ...

    async def get_link(self, ifname: str, netns: str | None = None) -> Link:
        """One link by name; LinkNotFound when there is none."""
        ...

    def watch_links(self, netns: str | None = None) -> AsyncIterator[LinkEvent]:
        """Link events as the kernel sends them (RTNLGRP_LINK), no polling.

        Subscribes first, then yields a LINK_NEW event for every link that exists, then
        every change as it happens, so a consumer that applies events in order never
        misses one. Ends only when the consumer stops iterating (aclose / cancel).
        """
        ...

    async def set_link_up(self, ifname: str, up: bool, netns: str | None = None) -> None:
        """Set the link administratively up or down."""
        ...

    async def move_link(self, ifname: str, *, src: str | None = None, dst: str | None = None) -> None:
        """Move a link from namespace `src` to `dst` (None: the port's own namespace).

        The kernel sets a moved link down; the ifindex may change.
        """
        ...

    async def add_veth(self, ifname: str, peer: str, netns: str | None = None) -> None:
        """Create a veth pair (both ends in `netns`, administratively down)."""
        ...

    async def delete_link(self, ifname: str, netns: str | None = None) -> None:
        """Delete a link (for a veth, both ends go)."""
        ...

    async def list_netns(self) -> tuple[str, ...]:
        """Names of the named namespaces (/run/netns), sorted."""
        ...

    async def create_netns(self, name: str) -> None:
        """Create a named namespace; NetworkExists when it exists already."""
        ...

    async def delete_netns(self, name: str) -> None:
        """Delete a named namespace; NetnsNotFound when there is none.

        Links still inside are destroyed by the kernel (veth) or go back to the host (physical).
        """
        ...

    async def close(self) -> None:
        """Release sockets; the port is unusable afterwards."""
        ...
