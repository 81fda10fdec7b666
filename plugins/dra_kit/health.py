"""The driver's device health table and its change feed for NodeWatchResources streams.

A driver (or its control socket) calls `set(pool, device, health)`; every open stream
gets the complete list at once, then again on every change, and again every `resend`
seconds even without a change: the kubelet marks a device Unknown when it hears nothing
about it within health_check_timeout_seconds, so silence is not an option. `pause()`
holds all sends back (a test fault: lets the receiving side time devices out). Each device
carries its own health-check timeout and message into the stream; messages go out whole
(the kubelet, not the driver, cuts them at 1024 characters). Pure asyncio; no gRPC here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable

from plugins.dra_kit.model import DeviceHealth, check_health

logger = logging.getLogger(__name__)


class HealthBoard:
    """Health of every device the driver publishes, with a change counter streams wait on."""

    def __init__(self, devices: Iterable[DeviceHealth] = (), *, resend: float = 10.0) -> None:
        if resend <= 0:
            raise ValueError("resend interval must be positive")
        self.resend = resend
        self._devices: dict[str, DeviceHealth] = {d.key: d for d in devices}
        self._version = 0
        self._changed = asyncio.Condition()
        self._closed = False
        self._paused = False

    def snapshot(self) -> list[DeviceHealth]:
        return list(self._devices.values())

    def get(self, pool: str, device: str) -> DeviceHealth:
        try:
            return self._devices[f"{pool}/{device}"]
        except KeyError:
            raise KeyError(f"{pool}/{device}") from None

    @property
    def paused(self) -> bool:
        return self._paused

    async def _bump(self) -> None:
        async with self._changed:
            self._version += 1
            self._changed.notify_all()

    async def set(self, pool: str, device: str, health: str, message: str = "") -> bool:
        """Change one device's health; True when it changed. KeyError: unknown device."""
        old = self.get(pool, device)
        health = check_health(health)
        if old.health == health and old.message == message:
            return False
        self._devices[old.key] = DeviceHealth(old.pool, old.device, health, old.timeout_seconds, message)
        logger.info("device health changed device=%s health=%s", old.key, health)
        await self._bump()
        return True

    async def replace(self, devices: Iterable[DeviceHealth]) -> None:
        """Swap the whole table (a driver whose device set changed)."""
        self._devices = {d.key: d for d in devices}
        await self._bump()

    async def pause(self, paused: bool) -> None:
        self._paused = paused
        await self._bump()

    async def close(self) -> None:
        """End every watch (the server is stopping)."""
        async with self._changed:
            self._closed = True
            self._changed.notify_all()

    async def reopen(self) -> None:
        self._closed = False
        await self._bump()

    async def watch(self) -> AsyncIterator[list[DeviceHealth]]:
        """The complete list now, on every change, and every `resend` seconds; ends on close()."""
        seen = -1
        while True:
            async with self._changed:
                if self._version == seen and not self._closed:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), self.resend)
                if self._closed:
                    return
                seen = self._version
            if not self._paused:
                yield self.snapshot()
