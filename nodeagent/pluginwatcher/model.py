"""The plugin watcher's worlds and retry bookkeeping, as plain data (no I/O, no gRPC).

The desired world is what the directory scan saw (one `SocketFile` per registration
socket); the actual world is what went through registration (`RegisteredPlugin`).
A socket is identified by its path plus a generation (inode and ctime), so a socket
removed and re-created between two scans is seen as a new plugin, like the kubelet's
timestamp in desired_state_of_world. `Backoff` (nodeagent.util.backoff, re-exported) is the
per-socket exponential retry delay of the kubelet's operation executor (its defaults: 500 ms
doubling to 2 min 2 s).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeagent.util.backoff import Backoff as Backoff  # re-exported: the watcher's retry bookkeeping

Generation = tuple[int, int]  # (st_ino, st_ctime_ns) of the socket file


@dataclass(frozen=True)
class SocketFile:
    """One registration socket as the last scan saw it."""

    path: str
    generation: Generation


@dataclass(frozen=True)
class PluginInfo:
    """pluginregistration.PluginInfo, converted; `endpoint` already defaulted to the socket."""

    type: str
    name: str
    endpoint: str
    supported_versions: tuple[str, ...]
    socket_path: str


@dataclass(frozen=True)
class RegisteredPlugin:
    """A socket that went through registration. `accepted` is False when the handler's
    register step failed: the kubelet still keeps such a plugin in its actual world (so
    it is not retried), but it must not be deregistered from the handler later."""

    socket: SocketFile
    info: PluginInfo
    accepted: bool = True

    @property
    def path(self) -> str:
        return self.socket.path


@dataclass(frozen=True)
class WorldSnapshot:
    """Socket paths in each world, for the plugin_manager_total_plugins collector."""

    desired: tuple[str, ...]
    actual: tuple[str, ...]

