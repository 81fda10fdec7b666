"""The network seam (links, network namespaces, netlink events) for a driver that hands out network devices.

The port (Netlink) with its pyroute2 adapter and model; a submodule of the kit because it loads pyroute2.
"""

from __future__ import annotations

from nodeagent.network.errors import NetnsNotFound
from nodeagent.network.model import LINK_DEL, Link, LinkEvent, check_netns_name, is_operational
from nodeagent.network.netlink import PyRoute2Netlink
from nodeagent.network.ports import Netlink

__all__ = [
    "LINK_DEL",
    "Link",
    "LinkEvent",
    "Netlink",
    "NetnsNotFound",
    "PyRoute2Netlink",
    "check_netns_name",
    "is_operational",
]
