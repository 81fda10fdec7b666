"""The DRA device health cache (KEP-4680): what each driver last said about each device, and when.

Keyed (driver, pool, device). Entries are stamped with the node's own receive time (monotonic),
as the kubelet does, never the driver's `last_updated`. A device's effective health is Unknown
when nothing was heard, when its timeout passed without an update (health_check_timeout_seconds,
<= 0 meaning the 30 s default), or when its driver went away. The cache also remembers the
effective value last published, so each operation returns exactly the devices whose effective
health changed — the ones whose pods need a status update. Pure: time is passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodeagent.dra.model import DeviceKey
from nodeagent.dra.ports import UNKNOWN, DeviceHealthUpdate

DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class HealthEntry:
    health: str
    received: float  # monotonic seconds at receipt
    timeout: float  # seconds
    message: str = ""


class HealthCache:
    def __init__(self) -> None:
        self._entries: dict[DeviceKey, HealthEntry] = {}
        self._published: dict[DeviceKey, str] = {}

    def entry(self, key: DeviceKey) -> HealthEntry | None:
        return self._entries.get(key)

    def health(self, key: DeviceKey, now: float) -> str:
        e = self._entries.get(key)
        if e is None or now - e.received > e.timeout:
            return UNKNOWN
        return e.health

    def update(self, driver: str, devices: Sequence[DeviceHealthUpdate], now: float) -> list[DeviceKey]:
        """Record one NodeWatchResources message; devices it omits age out by their timeout."""
        keys = []
        for d in devices:
            key = (driver, d.pool_name, d.device_name)
            timeout = d.timeout_seconds if d.timeout_seconds > 0 else DEFAULT_TIMEOUT
            self._entries[key] = HealthEntry(d.health, now, timeout, d.message)
            keys.append(key)
        return self._changed(keys, now)

    def expire(self, now: float) -> list[DeviceKey]:
        """Devices whose timeout passed since the last look (now Unknown)."""
        return self._changed(list(self._entries), now)

    def driver_gone(self, driver: str) -> list[DeviceKey]:
        """Forget a deregistered driver's devices: every one of them is Unknown now."""
        for key in [k for k in self._entries if k[0] == driver]:
            del self._entries[key]
        changed = [k for k, h in self._published.items() if k[0] == driver and h != UNKNOWN]
        for key in [k for k in self._published if k[0] == driver]:
            del self._published[key]
        return changed

    def _changed(self, keys: Sequence[DeviceKey], now: float) -> list[DeviceKey]:
        out = []
        for key in keys:
            value = self.health(key, now)
            if self._published.get(key, UNKNOWN) != value:
                out.append(key)
            if value == UNKNOWN:
                self._published.pop(key, None)
            else:
                self._published[key] = value
        return out
