"""Plugin endpoints: one live registration per resource, its ListAndWatch stream, its grace period.

Split out of the device manager because this is the part that lives on the plugins'
schedule rather than the pods': Register validates, dials and asks the options, a new
registration replaces the old one for the same resource (and the one of another resource
on the same socket: a socket serves one plugin), every ListAndWatch snapshot
updates DeviceState and (coalesced, devices/registered.py) the registered-devices
checkpoint, and a stream that ends starts the grace period after which the resource
leaves capacity unless the plugin comes back.
Plugins are reached only through the ports in devices/ports.py, so this stays free of grpc.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.health import Events, HealthReporter
from nodeagent.devices.model import (
    HEALTHY,
    SUPPORTED_VERSIONS,
    UNHEALTHY,
    Device,
    PluginOptions,
    is_extended_resource_name,
)
from nodeagent.devices.ports import PluginConnection, PluginControl, PluginDialer
from nodeagent.devices.registered import RegisteredWriter
from nodeagent.devices.state import DeviceState
from nodeagent.errors import FailedPrecondition, KubeletError, NodeAgentError, NotFound, ValidationError
from nodeagent.util.clock import Clock
from nodeagent.util.logtext import LogLimiter, untrusted
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class Endpoint:
    """A live registration: one (resource, socket path) with its connection and stream task."""

    resource: str
    path: Path
    conn: PluginConnection
    options: PluginOptions
    task: asyncio.Task[None] | None = None

UPDATE_LOG_INTERVAL = 5.0  # at most one "devices updated" line per resource this often


class PluginEndpoints:
    """The live registrations by resource, their streams and the grace timers of lost plugins."""

    def __init__(
        self,
        *,
        dialer: PluginDialer,
        checkpoint: Checkpoint,
        clock: Clock,
        state: DeviceState,
        health: HealthReporter,
        events: Events,
        device_plugins_dir: Path,
        node_name: str,
        grace_period: float,
        control: PluginControl | None,
    ) -> None:
        self._dialer = dialer
        self._checkpoint = checkpoint
        self._clock = clock
        self._state = state
        self._health = health
        self._event = events
        self._dir = device_plugins_dir
        self._node_name = node_name
        self._grace = grace_period
        self._control = control
        self._endpoints: dict[str, Endpoint] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._update_log = LogLimiter(UPDATE_LOG_INTERVAL)
        self._registered = RegisteredWriter(checkpoint, state, clock)

    def get(self, resource: str) -> Endpoint | None:
        """The live registration of `resource`, or None while no plugin serves it."""
        return self._endpoints.get(resource)

    def paths(self) -> dict[str, Path]:
        return {r: ep.path for r, ep in self._endpoints.items()}

    # ------------------------------------------------------------------ lifecycle

    def start_grace_timers(self) -> None:
        """Start the grace timers of resources restored from the checkpoint (stopped until re-registered)."""
        for rs in list(self._state.resources.values()):
            if not rs.connected:
                self._spawn(self._expire_later(rs.name, rs.epoch))

    async def stop(self) -> None:
        """Close every plugin connection and cancel the streams and timers."""
        endpoints, self._endpoints = list(self._endpoints.values()), {}
        tasks, self._tasks = list(self._tasks), set()
        await cancel_and_wait([*tasks, *(ep.task for ep in endpoints)], ignore_errors=True)
        for ep in endpoints:
            await self._close(ep)
        await self._registered.close()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ registration

    async def register(self, version: str, endpoint: str, resource: str) -> None:
        """v1beta1.Registration/Register after the counter: validate, dial, ask options, keep.

        Raises KubeletError with the kubelet's texts (UNKNOWN on the wire).
        """
        if version not in SUPPORTED_VERSIONS:
            supported = "[" + " ".join(f'"{v}"' for v in SUPPORTED_VERSIONS) + "]"
            raise KubeletError(
                f'requested API version "{version}" is not supported by kubelet. '
                f"Supported version is {supported}"
            )
        if not is_extended_resource_name(resource):
            raise KubeletError(f'the ResourceName "{resource}" is invalid')
        if not endpoint or "/" in endpoint or endpoint in (".", ".."):
            raise KubeletError(
                f'failed to dial device plugin: endpoint "{endpoint}" is not a socket file name '
                f"in {self._dir}"
            )
        path = self._dir / endpoint
        if path.is_symlink():
            # A link could point at any socket on the host (the daemon's own admin socket included);
            # a plugin's endpoint is a socket it created in the device-plugins directory itself.
            logger.warning("device plugin endpoint is a symlink, registration ignored resource=%s endpoint=%s",
                           untrusted(resource), untrusted(str(path)))
            raise KubeletError(f'failed to dial device plugin: endpoint "{endpoint}" is a symlink in {self._dir}')
        try:
            conn = await self._dialer.dial(resource, path)
        except NodeAgentError as err:
            raise KubeletError(f"failed to dial device plugin: {err}") from err
        try:
            options = await conn.get_options()
        except NodeAgentError as err:
            await conn.close()
            raise KubeletError(f"failed to get device plugin options: {err}") from err
        old = self._endpoints.get(resource)
        ep = Endpoint(resource, path, conn, options)
        self._endpoints[resource] = ep
        await self._take_endpoint(resource, path)
        self._state.register(resource, str(path), options)
        if old is not None:
            logger.info("device plugin replaced resource=%s old=%s new=%s", resource, untrusted(str(old.path)),
                        untrusted(str(path)))
            await self._drop(old)
        logger.info(
            "device plugin registered resource=%s endpoint=%s pre_start=%s preferred=%s",
            resource, untrusted(str(path)), options.pre_start_required, options.get_preferred_allocation_available,
        )
        self._event("Node", "", self._node_name, "Normal", "DevicePluginRegistered",
                    f"device plugin for {resource} registered at {path}")
        ep.task = asyncio.ensure_future(self._watch(ep))

    async def _take_endpoint(self, resource: str, path: Path) -> None:
        """Another resource registered on `path` is replaced: stream stopped, capacity gone at once."""
        before = {r: self._health.held_health(r) for r in self._state.resources if r != resource}
        for name in self._state.take_endpoint(resource, str(path)):
            logger.warning("device plugin endpoint taken over endpoint=%s old_resource=%s new_resource=%s",
                           untrusted(str(path)), name, resource)
            self._event("Node", "", self._node_name, "Warning", "DevicePluginReplaced",
                        f"device plugin for {name} at {path} replaced by a registration of {resource}")
            gone = self._endpoints.pop(name, None)
            if gone is not None:
                await self._drop(gone)
            await self._health.notify(name, before.get(name, {}))
            await self._registered.changed()

    async def _drop(self, ep: Endpoint) -> None:
        if ep.task is not None and ep.task is not asyncio.current_task():
            await cancel_and_wait([ep.task], ignore_errors=True)
        await self._close(ep)

    async def _close(self, ep: Endpoint) -> None:
        try:
            await ep.conn.close()
        except NodeAgentError as err:
            logger.debug("closing plugin connection failed endpoint=%s err=%s", ep.path, err)

    # ------------------------------------------------------------------ stream and grace period

    async def _watch(self, ep: Endpoint) -> None:
        try:
            async for devices in ep.conn.list_and_watch():
                if self._endpoints.get(ep.resource) is not ep:
                    return
                await self._apply_devices(ep.resource, devices)
            logger.warning("device plugin stream ended resource=%s endpoint=%s", ep.resource, untrusted(str(ep.path)))
        except NodeAgentError as err:
            logger.warning("device plugin stream failed resource=%s endpoint=%s err=%s",
                           ep.resource, untrusted(str(ep.path)), untrusted(str(err), 1024))
        if self._endpoints.get(ep.resource) is ep:
            await self._plugin_gone(ep)

    async def _apply_devices(self, resource: str, devices: Sequence[Device]) -> None:
        before = self._health.held_health(resource)
        change = self._state.update_devices(resource, devices)
        # a new resource written at once, changed device ids coalesced (see devices/registered.py)
        await self._registered.changed(devices=change.changed)
        if not change.changed:
            return  # the same devices with the same health: nothing to log or report
        skipped = self._update_log.allow(resource, self._clock.monotonic())
        if skipped is not None:  # a flapping plugin once wrote 80 KB/s of these
            logger.info(
                "devices updated resource=%s total=%d healthy=%d%s",
                resource, len(devices), len(self._state.healthy_devices(resource)),
                f" (and {skipped} updates since the last line)" if skipped else "",
            )
        await self._health.notify(resource, before)

    async def _plugin_gone(self, ep: Endpoint) -> None:
        before = self._health.held_health(ep.resource)
        del self._endpoints[ep.resource]
        self._state.disconnect(ep.resource, self._clock.monotonic())
        await self._close(ep)
        self._event("Node", "", self._node_name, "Warning", "DevicePluginGone",
                    f"device plugin for {ep.resource} at {ep.path} is gone; "
                    f"capacity kept for {self._grace:g}s")
        await self._health.notify(ep.resource, before)
        rs = self._state.resources.get(ep.resource)
        if rs is not None:
            self._spawn(self._expire_later(ep.resource, rs.epoch))

    async def _expire_later(self, resource: str, epoch: int) -> None:
        await self._clock.sleep(self._grace)
        if self._state.expire(resource, epoch):
            logger.info("device plugin resource removed after grace period resource=%s", resource)
            self._event("Node", "", self._node_name, "Normal", "DevicePluginRemoved",
                        f"resource {resource} removed from capacity: plugin did not come back")
            await self._registered.changed()

    # ------------------------------------------------------------------ fake plugin control

    async def set_device_health(self, resource: str, device_id: str, health: str) -> None:
        """Switch a device's health through nodeagent's fake plugin control socket."""
        if health not in (HEALTHY, UNHEALTHY):
            raise ValidationError("health", f'must be "{HEALTHY}" or "{UNHEALTHY}", got "{health}"')
        ep = self._endpoints.get(resource)
        if ep is None:
            if self._state.is_device_resource(resource):
                raise FailedPrecondition(f"device plugin for resource {resource} is not connected")
            raise NotFound(f"no device plugin registered for resource {resource}")
        if device_id not in {d.id for d in self._state.all_devices(resource)}:
            raise NotFound(f"resource {resource} has no device {device_id}")
        if self._control is None:
            raise FailedPrecondition(f"device plugin {ep.path} has no control socket")
        await self._control.set_health(Path(f"{ep.path}.ctl"), device_id, health)
