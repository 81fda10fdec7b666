"""The plugin watcher's worlds and retry bookkeeping, as plain data (no I/O, no gRPC).

The desired world is what the directory scan saw (one `SocketFile` per registration
socket); the actual world is what went through registration (`RegisteredPlugin`).
A socket is identified by its path plus a generation (inode and ctime), so a socket
removed and re-created between two scans is seen as a new plugin, like the kubelet's
timestamp in desired_state_of_world. `Backoff` is the per-socket exponential retry
delay of the kubelet's operation executor (500 ms doubling to 2 min 2 s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Generation = tuple[int, int]  # (st_ino, st_ctime_ns) of the socket file

INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 122.0  # the kubelet's maxDurationBeforeRetry, 2m2s


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


@dataclass
class Backoff:
    """Per-key exponential retry delay driven by the caller's monotonic time."""

    initial: float = INITIAL_BACKOFF
    cap: float = MAX_BACKOFF
    factor: float = 2.0
    _next: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (not before, last delay)

    def ready(self, key: str, now: float) -> bool:
        entry = self._next.get(key)
        return entry is None or now >= entry[0]

    def failed(self, key: str, now: float) -> float:
        """Record a failure at `now`; return the delay before the next attempt."""
        entry = self._next.get(key)
        delay = self.initial if entry is None else min(entry[1] * self.factor, self.cap)
        self._next[key] = (now + delay, delay)
        return delay

    def succeeded(self, key: str) -> None:
        self._next.pop(key, None)

    def forget_except(self, keys: Mapping[str, object]) -> None:
        """Drop entries of keys that are gone (a removed socket starts afresh when it returns)."""
        for key in [k for k in self._next if k not in keys]:
            del self._next[key]

    def pending(self) -> dict[str, float]:
        return {key: entry[0] for key, entry in self._next.items()}
