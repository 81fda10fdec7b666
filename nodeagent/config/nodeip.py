"""The node's IP (the kubelet's --node-ip flag, NodeAgentConfiguration.nodeIP): parsing and validation.

Exists because the kubelet's --node-ip is a flag, not a KubeletConfiguration field, yet a node that
registers with the API must name its InternalIP. Accepted as the kubelet accepts it
(cmd/kubelet ParseNodeIPArgument, pkg/kubelet validateNodeIP): one IP, or a dual-stack pair
"IPv4,IPv6" in either order; never an unspecified, multicast or link-local address. Two checks of
the kubelet are left out on purpose: a loopback IP is allowed (several fake nodes on one machine
are told apart by 127.0.0.x) and the IP need not be on one of the host's interfaces (a fake node
stands for another machine).
"""

from __future__ import annotations

import ipaddress

from nodeagent.errors import ConfigError


def parse_node_ips(text: str, path: str) -> tuple[str, ...]:
    """The node IPs of a --node-ip value, canonical; () for "" (found through the host). Raises
    ConfigError naming `path` for anything the kubelet would refuse."""
    text = text.strip()
    if not text:
        return ()
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > 2:
        raise ConfigError(f'{path}: Invalid value: "{text}": must contain either a single IP or a dual-stack '
                          "pair of IPs")
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for part in parts:
        try:
            ip = ipaddress.ip_address(part)
        except ValueError:
            raise ConfigError(f'{path}: Invalid value: "{text}": could not parse "{part}"') from None
        if ip.is_unspecified:
            raise ConfigError(f'{path}: Invalid value: "{part}": nodeIP can\'t be an all zeros address')
        if ip.is_multicast:
            raise ConfigError(f'{path}: Invalid value: "{part}": nodeIP can\'t be a multicast address')
        if ip.is_link_local:
            raise ConfigError(f'{path}: Invalid value: "{part}": nodeIP can\'t be a link-local unicast address')
        ips.append(ip)
    if len(ips) == 2 and ips[0].version == ips[1].version:
        raise ConfigError(f'{path}: Invalid value: "{text}": must contain either a single IP or a dual-stack '
                          "pair of IPs")
    return tuple(str(ip) for ip in ips)
