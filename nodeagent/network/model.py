"""The network model: links and link events as frozen dataclasses, plus pure helpers.

Pure on purpose: the netdev DRA driver decides health, filters and device names from
these values alone, so its logic is tested without root, sockets or pyroute2. Only
nodeagent/network/netlink.py turns pyroute2 messages into these types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Link.kind for a link whose kernel driver reports no IFLA_INFO_KIND (physical NICs, lo).
KIND_DEVICE = "device"

# Kernel operstates (RFC 2863), as IFLA_OPERSTATE names them.
OPER_UP = "UP"
OPER_DOWN = "DOWN"
OPER_UNKNOWN = "UNKNOWN"
OPER_LOWERLAYERDOWN = "LOWERLAYERDOWN"
OPER_NOTPRESENT = "NOTPRESENT"
OPER_DORMANT = "DORMANT"
OPER_TESTING = "TESTING"

LINK_NEW = "new"  # the link appeared or changed (RTM_NEWLINK)
LINK_DEL = "del"  # the link is gone from the namespace (RTM_DELLINK: deleted or moved away)

_NETNS_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
_PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


@dataclass(frozen=True)
class Link:
    """One network link as the kernel reports it in one namespace."""

    index: int
    ifname: str
    mac: str  # "aa:bb:cc:dd:ee:ff"; "" when the link has no hardware address
    mtu: int  # bytes
    kind: str  # IFLA_INFO_KIND ("veth", "dummy", "bridge", ...); KIND_DEVICE when there is none
    operstate: str  # OPER_* ("UP", "DOWN", "LOWERLAYERDOWN", "UNKNOWN", ...)
    pci_address: str | None = None  # "0000:00:03.0" when the link sits on a PCI function
    netns: str | None = None  # named namespace (/run/netns/<name>) the link is in; None: the host's
    admin_up: bool = False  # IFF_UP: administratively up (operstate can still be DOWN: no carrier)


@dataclass(frozen=True)
class LinkEvent:
    """A link appeared or changed (LINK_NEW), or left the namespace (LINK_DEL)."""

    action: str  # LINK_NEW | LINK_DEL
    link: Link


def is_operational(operstate: str) -> bool:
    """UP carries traffic; UNKNOWN is what drivers without carrier state (dummy, lo, tun) say when up."""
    return operstate in (OPER_UP, OPER_UNKNOWN)


def is_pci_address(text: str) -> bool:
    """A PCI function address "DDDD:BB:DD.F" (domain, bus, device, function)."""
    return bool(_PCI_ADDRESS.match(text))


def check_netns_name(name: str) -> str:
    """A plain namespace file name under /run/netns; raise ValueError naming the rule otherwise."""
    if not _NETNS_NAME.match(name) or name in (".", ".."):
        raise ValueError(f'network namespace name "{name}" must be 1-200 characters of [A-Za-z0-9_.-]')
    return name
