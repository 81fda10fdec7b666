"""The ports through which the device manager reaches plugins and the rest of the daemon.

The manager never imports grpc: it dials plugins through a `PluginDialer` (the real one
is devices/plugin_client.py, tests pass in-process fakes) and reports through plain
callbacks the daemon injects (pod status health, events, CPU NUMA lookup).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Protocol

from nodeagent.devices.model import ContainerAllocation, Device, PluginOptions
from nodeagent.objects.pod.model import ResourceStatus


class PluginConnection(Protocol):
    """An open connection to one device plugin endpoint (errors: Unavailable / PluginCallError)."""

    async def get_options(self) -> PluginOptions: ...

    def list_and_watch(self) -> AsyncIterator[list[Device]]:
        """Complete device snapshots until the stream ends (returns) or fails (raises)."""
        ...

    async def get_preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str], size: int
    ) -> tuple[str, ...]: ...

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocation: ...

    async def pre_start_container(self, device_ids: Sequence[str]) -> None: ...

    async def close(self) -> None: ...


class PluginDialer(Protocol):
    async def dial(self, resource: str, socket_path: Path) -> PluginConnection:
        """Connect within a bounded wait; raise Unavailable when nothing answers."""
        ...


class PluginControl(Protocol):
    """The control socket of nodeagent's own fake device plugin (`<endpoint>.ctl`)."""

    async def set_health(self, control_socket: Path, device_id: str, health: str) -> None: ...


# on_health_change(pod_uid, container, statuses): the container's allocatedResourcesStatus now.
HealthCallback = Callable[[str, str, tuple[ResourceStatus, ...]], Awaitable[None]]
# record(kind, namespace, name, type, reason, message)
EventRecorder = Callable[[str, str, str, str, str, str], None]
