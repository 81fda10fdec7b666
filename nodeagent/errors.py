"""Typed errors raised by the core; the only place they become gRPC codes is rpc/status.py.

Policy: the core raises NodeAgentError subclasses and nothing else on purpose. Anything
that is not a NodeAgentError reaching a servicer is a bug: it is logged and answered
with INTERNAL. Client adapters wrap grpc.aio.AioRpcError with `raise ... from err`.
`safe_text` is how every edge (gRPC status, API Status, field errors) makes an error's text safe
to send; it is here, beside the errors, because those edges share nothing else.
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


TEXT_MAX = 4 * 1024
"""Longest error text an edge (gRPC status, API Status) sends: well under gRPC's 8 KiB metadata limit."""


def safe_text(text: str, limit: int = TEXT_MAX) -> str:
    """`text` as valid UTF-8 of at most `limit` characters (plus "..."): a lone surrogate (from a
    JSON `\\ud83d` escape read by the YAML parser) becomes U+FFFD, as Go's encoders write invalid
    UTF-8, instead of making the encoder (gRPC's status, orjson) fail and the answer never come."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text if len(text) <= limit else text[:limit] + "..."


class RequestTooLarge(NodeAgentError):
    """A write the store refuses for its size, as etcd refuses a request over --max-request-bytes (the
    text is the etcd client's or server's, which kube-apiserver answers as it is, with code 500)."""
