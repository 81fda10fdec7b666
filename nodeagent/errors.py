"""Typed errors raised by the core; the only place they become gRPC codes is rpc/status.py.

Policy: the core raises NodeAgentError subclasses and nothing else on purpose. Anything
that is not a NodeAgentError reaching a servicer is a bug: it is logged and answered
with INTERNAL. Client adapters wrap grpc.aio.AioRpcError with `raise ... from err`.
"""

from __future__ import annotations


class NodeAgentError(Exception):
    """Root of every error the daemon raises on purpose."""


class ConfigError(NodeAgentError):
    """The configuration is wrong; the message names the field path."""


class StartupError(NodeAgentError):
    """The daemon cannot start (socket path too long, root dir locked, ...): exit code 2."""


class StateDamaged(StartupError):
    """state.db or objects.db is damaged, lost, or does not match the other: the daemon refuses to start."""


class ValidationError(NodeAgentError):
    """An object or request is invalid; `path` is the field path, as the API server writes it."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.detail = message
        super().__init__(f"{path}: {message}" if path else message)


class NotFound(NodeAgentError):
    """The named object does not exist."""


class AlreadyExists(NodeAgentError):
    """An object with that name exists already."""


class Conflict(NodeAgentError):
    """Optimistic concurrency: the object changed since it was read."""


class Exhausted(NodeAgentError):
    """A limit was hit (rate limit, capacity)."""


class FailedPrecondition(NodeAgentError):
    """The request is valid but the state does not allow it (feature gate off, ...)."""


class Unavailable(NodeAgentError):
    """A peer (plugin, driver) cannot be reached."""


class PluginCallError(NodeAgentError):
    """A call to a plugin failed; the message carries the plugin's status and text."""


class KubeletError(NodeAgentError):
    """An error the kubelet returns as a plain Go error (gRPC status UNKNOWN on the wire)."""
