"""The node's addresses (Node.status.addresses) from the configured node IP or the host's facts.

Exists as a pure function over HostFacts so the choice is tested without a network: the kubelet's
NodeAddress setter (pkg/kubelet/nodestatus/setters.go) writes InternalIP then Hostname; with no
--node-ip it takes the address of the interface that holds the default route (utilnet's
ChooseHostInterface); nodeagent does the same and falls back to 127.0.0.1 on a host without one,
so a node always has an InternalIP (`kubectl get nodes -o wide` shows it).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from nodeagent.host.model import HostFacts, HostProbe

FALLBACK_IP = "127.0.0.1"


def default_node_ip(facts: HostFacts) -> str:
    """A global unicast IPv4 of the first default-route interface that has one, else 127.0.0.1."""
    for iface in facts.default_route_interfaces:
        for name, address in facts.interface_addresses:
            if name != iface:
                continue
            try:
                ip = ipaddress.ip_address(address)
            except ValueError:
                continue
            if ip.version == 4 and not (ip.is_loopback or ip.is_link_local or ip.is_unspecified
                                        or ip.is_multicast):
                return str(ip)
    return FALLBACK_IP


def resolve_node_ips(configured: Sequence[str], probe: HostProbe) -> tuple[str, ...]:
    """The configured node IPs (--node-ip), else the one found through the host (its facts read
    only then)."""
    return tuple(configured) or (default_node_ip(probe.facts()),)


def node_addresses(ips: Sequence[str], hostname: str) -> list[dict[str, Any]]:
    """Node.status.addresses as the kubelet writes them: each InternalIP, then the Hostname."""
    return [*({"type": "InternalIP", "address": ip} for ip in ips), {"type": "Hostname", "address": hostname}]
