"""Device health into pod status: the drivers' health streams pushed to the pods that hold the devices.

The kubelet's health handling in pkg/kubelet/cm/dra/manager.go (HandleWatchResourcesStream,
UpdateAllocatedResourcesStatus) over the health cache of healthinfo.go (here the pure
HealthCache, health.py). Each report, a driver leaving and a device's timeout passing (`check`,
every second from the manager's loop) changes some devices' visible health; the pods whose
records hold those devices (the claim info cache's index) get `claim:<pod claim>/<request>`
entries in their allocatedResourcesStatus, only the entries that changed. With the
ResourceHealthStatus gate off nothing is pushed and a prepared pod starts without entries.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodeagent.dra import extended, model
from nodeagent.dra.claiminfo import ClaimInfoCache
from nodeagent.dra.health import HealthCache
from nodeagent.dra.model import DeviceKey, PodRecord
from nodeagent.dra.ports import DeviceHealthUpdate, PodHealthSink
from nodeagent.objects.pod.model import ResourceStatus
from nodeagent.pods.ports import START_READY, StartResult
from nodeagent.util.clock import Clock


class PodHealth:
    """The health cache, and the pods' allocatedResourcesStatus kept in step with it."""

    def __init__(self, cache: ClaimInfoCache, clock: Clock, *, gate: bool = True,
                 sink: PodHealthSink | None = None) -> None:
        self._cache = cache
        self._clock = clock
        self._gate = gate  # the ResourceHealthStatus feature gate
        self._sink = sink
        self._health = HealthCache()

    def attach(self, sink: PodHealthSink) -> None:
        """Where health goes (the pod manager, created after the DRA manager)."""
        self._sink = sink

    async def on_health(self, driver: str, devices: Sequence[DeviceHealthUpdate]) -> None:
        """A driver's health report (NodeWatchResources)."""
        await self._publish(self._health.update(driver, devices, self._clock.monotonic()))

    async def driver_gone(self, driver: str) -> None:
        """The driver left: its devices are Unknown."""
        await self._publish(self._health.driver_gone(driver))

    async def check(self) -> None:
        """Devices whose timeout passed become Unknown."""
        await self._publish(self._health.expire(self._clock.monotonic()))

    def device_health(self, key: DeviceKey) -> tuple[str, str]:
        """(effective health, the driver's message while its report holds) of one device."""
        return self._health.state(key, self._clock.monotonic())

    def ready(self, record: PodRecord) -> StartResult:
        """A prepared pod's start, with its claims' health as its first allocatedResourcesStatus."""
        if not self._gate:
            return START_READY
        return StartResult(True, container_resource_status=extended.visible(
                               model.container_statuses(record, self._lookup, self._message)),
                           pod_resource_status=model.pod_statuses(record, self._lookup, self._message))

    def _lookup(self, key: DeviceKey) -> str:
        return self._health.health(key, self._clock.monotonic())

    def _message(self, key: DeviceKey) -> str:
        return self._health.message(key, self._clock.monotonic())

    async def _publish(self, keys: Sequence[DeviceKey]) -> None:
        if not keys or not self._gate:
            return
        await self.publish_pods(sorted(self._cache.pods_using(keys)), set(keys))

    async def publish_pods(self, uids: Sequence[str], only: set[DeviceKey] | None = None) -> None:
        """Push the pods' claim health; with `only`, just the entries that hold one of those devices."""
        sink = self._sink
        if sink is None or not self._gate:
            return
        for uid in uids:
            record = self._cache.pods.get(uid)
            if record is None:
                continue
            ids = None if only is None else model.health_resource_ids(record, only)

            def touched(statuses: Sequence[ResourceStatus], ids: set[str] | None = ids) -> bool:
                return ids is None or any(h.resource_id in ids for rs in statuses for h in rs.resources)

            for container, statuses in extended.visible(
                    model.container_statuses(record, self._lookup, self._message)).items():
                if touched(statuses):
                    await sink.on_resource_health(uid, container, statuses)
            pod_level = model.pod_statuses(record, self._lookup, self._message)
            if pod_level and touched(pod_level):
                await sink.on_pod_resource_health(uid, pod_level)
