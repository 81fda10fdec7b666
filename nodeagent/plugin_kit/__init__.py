"""The part of nodeagent a plugin (a device plugin or a DRA driver under plugins/) may use: its public kit.

plugins/ are standalone programs that speak the kubelet's node-local gRPC APIs, written as an example
kit for driver authors; they must keep working against a real kubelet, so they may not reach into
the daemon. What they share with nodeagent is declared here, and an import-linter contract in
pyproject.toml holds them to it: plugins/ import nodeagent only through this package and the
generated API stubs (nodeagent.apis, upstream's own .proto files compiled, which a driver author
would generate the same way; wrapping them here would add nothing).

This module: the typed errors, serving a gRPC API on a unix socket (the socket path checks, one
status table for errors), ending background tasks (cancel_and_wait) and the log set-up the daemon
uses, so a plugin's log lines, socket handling and stops match the daemon's. The rest is in
submodules, so a plugin loads only what it uses: kube (the Kubernetes API client, for DRA drivers
publishing ResourceSlices), deviceplugin (the device-plugin API's model and its wire conversion,
shared with the node's device manager so the two sides cannot disagree), dra (the API server's
checks of DRA names and quantities) and netlink (the network seam, for the netdev driver).
"""

from __future__ import annotations

from nodeagent.errors import (
    ConfigError,
    Conflict,
    FailedPrecondition,
    NodeAgentError,
    NotFound,
    PluginCallError,
    StartupError,
    Unavailable,
    ValidationError,
)
from nodeagent.logs import FORMATS as LOG_FORMATS
from nodeagent.logs import setup as setup_logs
from nodeagent.rpc.server import Service, UnixServer, channel, check_socket_path, remove_stale_socket
from nodeagent.rpc.status import handle_errors
from nodeagent.util.tasks import cancel_and_wait

__all__ = [
    "LOG_FORMATS",
    "ConfigError",
    "Conflict",
    "FailedPrecondition",
    "NodeAgentError",
    "NotFound",
    "PluginCallError",
    "Service",
    "StartupError",
    "Unavailable",
    "UnixServer",
    "ValidationError",
    "cancel_and_wait",
    "channel",
    "check_socket_path",
    "handle_errors",
    "remove_stale_socket",
    "setup_logs",
]
