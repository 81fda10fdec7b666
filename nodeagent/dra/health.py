"""The DRA device health cache (KEP-4680): what each driver last said about each device, and when.

Keyed (driver, pool, device). Entries are stamped with the node's own receive time (monotonic),
as the kubelet does, never the driver's `last_updated`. A device's effective health is Unknown
when nothing was heard, when its own timeout passed without an update, or when its driver went
away. The timeout is per device, from the report's health_check_timeout_seconds: zero or unset
means the kubelet's 30 s default, and a negative value is logged and treated as unset, as the
DRAResourceHealth API says. The report's message is kept as the kubelet keeps it: longer than
1024 characters, it is cut to 1021 plus "..."; a device that timed out shows no message (it
described a report that no longer holds). The cache remembers the (health, message) last
published, so each operation returns exactly the devices whose visible state changed — the ones
whose pods need a status update. Pure: time is passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from nodeagent.dra.model import DeviceKey
from nodeagent.dra.ports import UNKNOWN, DeviceHealthUpdate

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
MESSAGE_MAX = 1024
_ELLIPSIS = "..."


def truncate_message(message: str) -> str:
    """The kubelet's cut: at most 1024 characters, longer ones end in "..." (1021 + 3)."""
    if len(message) <= MESSAGE_MAX:
        return message
    return message[: MESSAGE_MAX - len(_ELLIPSIS)] + _ELLIPSIS


def device_timeout(driver: str, update: DeviceHealthUpdate) -> float:
    """The device's health-check timeout in seconds: its own when positive, else the default."""
    if update.timeout_seconds > 0:
        return update.timeout_seconds
    if update.timeout_seconds < 0:
        logger.warning(
            "negative health check timeout treated as unset driver=%s device=%s/%s timeout=%s default=%ss",
            driver, update.pool_name, update.device_name, update.timeout_seconds, DEFAULT_TIMEOUT,
        )
    return DEFAULT_TIMEOUT


@dataclass(frozen=True)
class HealthEntry:
    health: str
    received: float  # monotonic seconds at receipt
    timeout: float  # seconds
    message: str = ""


class HealthCache:
    def __init__(self) -> None:
        self._entries: dict[DeviceKey, HealthEntry] = {}
        self._published: dict[DeviceKey, tuple[str, str]] = {}

    def entry(self, key: DeviceKey) -> HealthEntry | None:
        return self._entries.get(key)

    def _fresh(self, key: DeviceKey, now: float) -> HealthEntry | None:
        e = self._entries.get(key)
        if e is None or now - e.received > e.timeout:
            return None
        return e

    def health(self, key: DeviceKey, now: float) -> str:
        e = self._fresh(key, now)
        return UNKNOWN if e is None else e.health

    def message(self, key: DeviceKey, now: float) -> str:
        """The driver's (cut) message while its report holds; "" once the device timed out."""
        e = self._fresh(key, now)
        return "" if e is None else e.message

    def state(self, key: DeviceKey, now: float) -> tuple[str, str]:
        e = self._fresh(key, now)
        return (UNKNOWN, "") if e is None else (e.health, e.message)

    def update(self, driver: str, devices: Sequence[DeviceHealthUpdate], now: float) -> list[DeviceKey]:
        """Record one NodeWatchResources message; devices it omits age out by their timeout."""
        keys = []
        for d in devices:
            key = (driver, d.pool_name, d.device_name)
            self._entries[key] = HealthEntry(d.health, now, device_timeout(driver, d), truncate_message(d.message))
            keys.append(key)
        return self._changed(keys, now)

    def expire(self, now: float) -> list[DeviceKey]:
        """Devices whose timeout passed since the last look (now Unknown)."""
        return self._changed(list(self._entries), now)

    def driver_gone(self, driver: str) -> list[DeviceKey]:
        """Forget a deregistered driver's devices: every one of them is Unknown now."""
        for key in [k for k in self._entries if k[0] == driver]:
            del self._entries[key]
        changed = [k for k, h in self._published.items() if k[0] == driver and h != (UNKNOWN, "")]
        for key in [k for k in self._published if k[0] == driver]:
            del self._published[key]
        return changed

    def _changed(self, keys: Sequence[DeviceKey], now: float) -> list[DeviceKey]:
        out = []
        for key in keys:
            value = self.state(key, now)
            if self._published.get(key, (UNKNOWN, "")) != value:
                out.append(key)
            if value == (UNKNOWN, ""):
                self._published.pop(key, None)
            else:
                self._published[key] = value
        return out
