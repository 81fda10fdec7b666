"""Network errors: netlink errnos turned into NodeAgentError subclasses with clear messages.

nodeagent/network/netlink.py maps pyroute2's NetlinkError.code (an errno) and the OSError of
namespace operations here, so callers catch our types (LinkNotFound is a NotFound, ...) and
rpc/status.py maps them to gRPC codes without knowing about netlink.
"""

from __future__ import annotations

import errno
import os

from nodeagent.errors import AlreadyExists, Conflict, FailedPrecondition, NodeAgentError, NotFound, ValidationError
from nodeagent.network.model import check_netns_name


class NetworkError(NodeAgentError):
    """A netlink or namespace operation failed; `errno` is the kernel's code (0: none)."""

    def __init__(self, message: str, code: int = 0) -> None:
        self.errno = code
        super().__init__(message)


class LinkNotFound(NetworkError, NotFound):
    """No link of that name or index in the namespace (ENODEV)."""


class NetnsNotFound(NetworkError, NotFound):
    """The named network namespace does not exist (ENOENT)."""


class NetworkExists(NetworkError, AlreadyExists):
    """A link or namespace of that name exists already (EEXIST)."""


class NetworkBusy(NetworkError, Conflict):
    """The kernel refused because the object is in use (EBUSY)."""


class NetworkPermissionDenied(NetworkError, FailedPrecondition):
    """The operation needs CAP_NET_ADMIN / CAP_SYS_ADMIN (EPERM, EACCES)."""


def from_errno(code: int, what: str) -> NetworkError:
    """The error class for `code`, with a message "<what>: <strerror> (errno <code>)"."""
    text = f"{what}: {os.strerror(code) if code > 0 else 'unknown error'} (errno {code})"
    if code == errno.ENODEV:
        return LinkNotFound(text, code)
    if code == errno.ENOENT:
        return NetnsNotFound(text, code)
    if code == errno.EEXIST:
        return NetworkExists(text, code)
    if code == errno.EBUSY:
        return NetworkBusy(text, code)
    if code in (errno.EPERM, errno.EACCES):
        return NetworkPermissionDenied(text, code)
    return NetworkError(text, code)


def checked_netns(name: str) -> str:
    """`name` when it is a valid namespace file name, else ValidationError("netns", ...)."""
    try:
        return check_netns_name(name)
    except ValueError as err:
        raise ValidationError("netns", str(err)) from None
