"""Pure rules of the netdev driver: which links are devices, their names, attributes and health.

No I/O, no pyroute2, no gRPC: the driver feeds links from the Netlink port in and gets
ResourceSlice device entries and kit DeviceHealth values out, so every rule is unit-tested
with plain values.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.plugin_kit.netlink import Link, is_operational
from plugins.dra_kit.model import HEALTHY, UNHEALTHY, UNKNOWN

_NOT_LABEL = re.compile(r"[^a-z0-9-]+")
DEVICE_NAME_MAX = 63  # a DNS label, as ResourceSlice device names are


@dataclass(frozen=True)
class LinkFilter:
    """Which links become devices: name patterns (fnmatch) and link kinds; empty means all."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ("lo",)
    kinds: tuple[str, ...] = ()

    def matches(self, link: Link) -> bool:
        if self.include and not any(fnmatch.fnmatchcase(link.ifname, p) for p in self.include):
            return False
        if any(fnmatch.fnmatchcase(link.ifname, p) for p in self.exclude):
            return False
        return not self.kinds or link.kind in self.kinds


def device_name(ifname: str) -> str:
    """A DNS label for an interface name: "eth0.100" -> "eth0-100", "Wlan_1" -> "wlan-1".

    When the mapping loses information (anything but [a-z0-9-], or too long) a short hash
    of the real name is appended so two links never share a device name.
    """
    label = _NOT_LABEL.sub("-", ifname.lower()).strip("-") or "link"
    if label == ifname and len(label) <= DEVICE_NAME_MAX:
        return label
    digest = hashlib.sha256(ifname.encode()).hexdigest()[:6]
    return f"{label[:DEVICE_NAME_MAX - 7].rstrip('-')}-{digest}"


def link_health(link: Link | None) -> str:
    """UP (or UNKNOWN: no carrier state, e.g. dummy) -> Healthy; DOWN and the rest -> Unhealthy.

    None (the link is not where the driver expects it) -> Unknown.
    """
    if link is None:
        return UNKNOWN
    return HEALTHY if is_operational(link.operstate) else UNHEALTHY


def health_message(link: Link | None) -> str:
    if link is None:
        return "link not found"
    where = link.netns or "host"
    return f"operstate {link.operstate} ({'admin up' if link.admin_up else 'admin down'}) in netns {where}"


def attributes(link: Link) -> dict[str, Any]:
    """ResourceSlice device attributes: ifname, mac, mtu, kind, pciAddress (when there is one)."""
    out: dict[str, Any] = {
        "ifname": {"string": link.ifname},
        "mac": {"string": link.mac},
        "mtu": {"int": link.mtu},
        "kind": {"string": link.kind},
    }
    if link.pci_address:
        out["pciAddress"] = {"string": link.pci_address}
    return out


def slice_device(name: str, link: Link) -> dict[str, Any]:
    return {"name": name, "attributes": attributes(link)}


@dataclass(frozen=True)
class DeviceView:
    """One published device: its name, the link as last seen, where it is now and its health."""

    name: str
    link: Link  # last known attributes (a prepared link keeps them while it is in a pod namespace)
    health: str
    message: str
    prepared_in: str | None = None  # pod namespace holding the link, None: in the driver's namespace


def inventory(
    link_filter: LinkFilter,
    home: Mapping[str, Link],
    moved: Mapping[str, tuple[str, Link]],
    pods: Mapping[str, Mapping[str, Link]],
) -> list[DeviceView]:
    """Every device the driver publishes, sorted by name.

    home: links of the driver's namespace by ifname; moved: ifname -> (pod namespace, the
    link as it was before the move) for prepared links; pods: links seen in each pod
    namespace. A moved link stays published (it is in use); its health comes from the pod
    namespace, Unknown when it is not seen there (yet).
    """
    views: dict[str, DeviceView] = {}
    for ifname, (netns, saved) in moved.items():
        now = pods.get(netns, {}).get(ifname)
        if now is None and ifname in home:  # moved back already (or never moved)
            continue
        name = device_name(ifname)
        views[name] = DeviceView(name, saved, link_health(now), health_message(now), netns)
    for ifname, link in home.items():
        name = device_name(ifname)
        if name in views or not link_filter.matches(link):
            continue
        views[name] = DeviceView(name, link, link_health(link), health_message(link))
    return [views[n] for n in sorted(views)]


def find_device(views: Iterable[DeviceView], name: str) -> DeviceView | None:
    for view in views:
        if view.name == name:
            return view
    return None


def pod_netns_name(prefix: str, claim_uid: str) -> str:
    """The per-claim namespace: prefix + the claim uid (a uid is [0-9a-f-], 36 characters)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", claim_uid)
    return f"{prefix}{safe}"


def claim_uid_of(prefix: str, netns: str) -> str | None:
    """The claim uid a pod namespace was made for, None for a namespace that is not ours."""
    return netns[len(prefix):] if netns.startswith(prefix) and len(netns) > len(prefix) else None


def cdi_env(netns: str | None, ifnames: Sequence[str]) -> tuple[str, ...]:
    """Container edits of a prepared claim: where its links are."""
    env = [f"NETDEV_IFNAMES={','.join(ifnames)}"]
    if netns:
        env.append(f"NETDEV_NETNS=/var/run/netns/{netns}")
    return tuple(env)
