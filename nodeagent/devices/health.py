"""Device health as pods see it: which held devices changed health, and what containers report.

Split out of the device manager because health is fed from two places (every ListAndWatch
snapshot and every plugin loss, in devices/endpoints.py) and read by a third (the pod
manager's allocatedResourcesStatus), so its rules live here once: a change is reported
only for devices some container holds, as a pod event and through the injected
on_health_change callback. It also holds the event-recorder guard every device module
uses, so that a failing recorder never breaks registration, streams or health, and the
coalescer (HealthCoalescer) that bounds how often a flapping device reaches the pods.
Pure: no I/O libraries, no grpc; it reads DeviceState and calls injected callbacks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from nodeagent.devices.model import HEALTHY
from nodeagent.devices.ports import EventRecorder, HealthCallback
from nodeagent.devices.state import DeviceState
from nodeagent.objects.pod.model import ResourceHealth, ResourceStatus
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


class Events:
    """The injected EventRecorder (or none), guarded: a recorder failure is logged, never raised."""

    def __init__(self, record: EventRecorder | None) -> None:
        self._record = record

    def __call__(self, kind: str, namespace: str, name: str, type_: str, reason: str, message: str) -> None:
        if self._record is None:
            return
        try:
            self._record(kind, namespace, name, type_, reason, message)
        except Exception:
            logger.exception("event recorder failed reason=%s", reason)


class HealthReporter:
    """Turns health changes of held devices into pod events and on_health_change calls."""

    def __init__(
        self,
        state: DeviceState,
        events: Events,
        on_health_change: HealthCallback | None,
        pod_health_events: bool,
    ) -> None:
        self._state = state
        self._event = events
        self._on_health_change = on_health_change
        self._pod_health_events = pod_health_events

    def held_health(self, resource: str) -> dict[str, str]:
        """Health of every device of `resource` some container holds (take it before a change)."""
        return {i: self._state.device_health(resource, i) for i in self._state.in_use(resource)}

    async def notify(self, resource: str, before: Mapping[str, str]) -> None:
        """Report each holder of a device whose health differs from `before`."""
        after = self.held_health(resource)
        changed = {i for i in before.keys() | after.keys() if before.get(i) != after.get(i)}
        if not changed:
            return
        for ref in self._state.holders(resource, changed):
            held = self._state.container_allocations(ref.pod_uid, ref.container)[resource]
            moved = sorted(i for i in held.device_ids if i in changed)
            bad = [i for i in moved if after.get(i) != HEALTHY]
            text = ", ".join(f"{i}={after.get(i)}" for i in moved)
            if self._pod_health_events:
                self._event("Pod", ref.namespace, ref.pod_name, "Warning" if bad else "Normal",
                            "DeviceUnhealthy" if bad else "DeviceHealthy",
                            f"container {ref.container}: {resource} {text}")
            if self._on_health_change is not None:
                try:
                    statuses = self.container_resource_statuses(ref.pod_uid, ref.container)
                    await self._on_health_change(ref.pod_uid, ref.container, statuses)
                except Exception:
                    logger.exception("health callback failed pod=%s container=%s", ref.pod_uid, ref.container)

    def container_resource_statuses(self, pod_uid: str, container: str) -> tuple[ResourceStatus, ...]:
        """allocatedResourcesStatus of one container: every held device with its health."""
        allocs = self._state.container_allocations(pod_uid, container)
        return tuple(
            ResourceStatus(
                name=resource,
                resources=tuple(
                    ResourceHealth(i, self._state.device_health(resource, i))
                    for i in allocs[resource].device_ids
                ),
            )
            for resource in sorted(allocs)
        )

    def pod_resource_statuses(self, pod_uid: str) -> dict[str, tuple[ResourceStatus, ...]]:
        pod = self._state.pods.get(pod_uid)
        if pod is None:
            return {}
        return {c: self.container_resource_statuses(pod_uid, c) for c in pod.containers}


class HealthCoalescer:
    """An on_health_change callback that passes at most one update per container every `interval`.

    A plugin flapping a device 1,000 times a second once cost 93 % CPU (a pod status write and
    an event per flip). The first change of a container goes through at once; changes within
    `interval` of the last one wait, and only the latest state is passed when the interval is
    over, as the kubelet's status manager writes the latest status rather than every change.
    Sleeps on the injected clock.
    """

    _PRUNE_AT = 1024

    def __init__(self, callback: HealthCallback, clock: Clock, interval: float) -> None:
        self._callback = callback
        self._clock = clock
        self._interval = interval
        self._last: dict[tuple[str, str], float] = {}  # when each container's last update went through
        self._latest: dict[tuple[str, str], tuple[ResourceStatus, ...]] = {}  # waiting for its turn
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.coalesced = 0  # updates replaced by a later one before they went through

    async def __call__(self, pod_uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
        key = (pod_uid, container)
        if key in self._tasks:
            if key in self._latest:
                self.coalesced += 1
            self._latest[key] = statuses
            return
        now = self._clock.monotonic()
        last = self._last.get(key)
        if last is None or now - last >= self._interval:
            self._last[key] = now
            self._prune(now)
            await self._callback(pod_uid, container, statuses)
            return
        self._latest[key] = statuses
        self._tasks[key] = asyncio.ensure_future(self._later(key, last + self._interval - now))

    async def _later(self, key: tuple[str, str], delay: float) -> None:
        try:
            await self._clock.sleep(delay)
            statuses = self._latest.pop(key)
            self._last[key] = self._clock.monotonic()
            await self._callback(key[0], key[1], statuses)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("health callback failed pod=%s container=%s", key[0], key[1])
        finally:
            self._tasks.pop(key, None)

    def _prune(self, now: float) -> None:
        if len(self._last) >= self._PRUNE_AT:
            for key in [k for k, t in self._last.items() if now - t >= self._interval and k not in self._tasks]:
                del self._last[key]

    async def close(self) -> None:
        """Cancel the waiting updates (the daemon is stopping)."""
        await cancel_and_wait(list(self._tasks.values()))
