"""The DRA manager: prepares a pod's ResourceClaims before it runs, releases them after, follows health.

The kubelet's pkg/kubelet/cm/dra/manager.go on a fake node, composed of its three roles:
- the claim info cache (claiminfo.py, the kubelet's claiminfo.go): prepared claims and pod
  records, committed to the state database before a prepare is answered;
- prepare and unprepare (prepare.py, manager.go's PrepareResources/UnprepareResources): the
  driver calls, under per-claim locks, never holding the cache lock across one;
- health (podhealth.py over health.py, manager.go's health stream and healthinfo.go): the
  drivers' reports pushed as `claim:<pod claim>/<request>` entries into pod status.
This class is what the rest of the node sees: the pod manager's PodStarter (prepare, unprepare,
forget), the pod-resources DynamicResourcesProvider, the describe and metrics queries, and the
loop that checks health every second and retries failed unprepares every 60 s (or `retry`, or a
driver registering). It never calls the pod manager while holding the cache lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry

from nodeagent.dra import model
from nodeagent.dra.claiminfo import ClaimInfoCache
from nodeagent.dra.metrics import PREPARE, UNPREPARE, DRAMetrics
from nodeagent.dra.model import ClaimEntry, DeviceKey, PodRecord
from nodeagent.dra.podhealth import PodHealth
from nodeagent.dra.ports import ClaimSource, DeviceHealthUpdate, DriverRegistry, PodHealthSink
from nodeagent.dra.prepare import REASON, ClaimPreparer
from nodeagent.objects.pod.model import Pod
from nodeagent.podresources.providers import DynamicResourceInfo
from nodeagent.pods.ports import START_READY, StartResult
from nodeagent.state.db import StateDB
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

EVENT_PREFIX = "Failed to prepare dynamic resources: prepare dynamic resources: "


class DRAManager:
    def __init__(
        self,
        registry: DriverRegistry,
        claims: ClaimSource,
        db: StateDB,
        clock: Clock,
        *,
        metrics_registry: CollectorRegistry | None = None,
        pods: PodHealthSink | None = None,
        health_gate: bool = True,
        health_period: float = 1.0,
        reconcile_period: float = 60.0,
        optional_node_operations: bool = False,
    ) -> None:
        self._registry = registry
        self._clock = clock
        self._health_period = health_period
        self._reconcile_period = reconcile_period
        self._cache = ClaimInfoCache(db)
        self._preparer = ClaimPreparer(registry, claims, self._cache, optional_node_operations=optional_node_operations)
        self._health = PodHealth(self._cache, clock, gate=health_gate, sink=pods)
        self._metrics = None if metrics_registry is None else DRAMetrics(metrics_registry, self.claims_in_use)
        self._task: asyncio.Task[None] | None = None
        self._listening = False
        self._retries: set[asyncio.Task[list[str]]] = set()

    async def reload(self) -> None:
        """A simulated kubelet restart: read the claim cache back from the state database, as a new
        process would (every prepared claim was committed there before its prepare was answered)."""
        async with self._cache.lock:
            self._cache.reload()
        logger.info("dra claim cache reloaded claims=%d pods=%d", len(self._cache.claims), len(self._cache.pods))

    def attach_pods(self, pods: PodHealthSink) -> None:
        """Where health goes (the pod manager, created after this manager)."""
        self._health.attach(pods)

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Subscribe to the registry's health and driver events; start the health/reconcile loop."""
        if not self._listening:
            self._registry.on_health(self._on_health)
            self._registry.on_driver(self._on_driver)
            self._listening = True
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="dra-manager")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait([task, *self._retries])

    async def _loop(self) -> None:
        since_reconcile = 0.0
        while True:
            await self._clock.sleep(self._health_period)
            try:
                await self.check_health()
                since_reconcile += self._health_period
                if since_reconcile >= self._reconcile_period:
                    since_reconcile = 0.0
                    await self.retry()
            except Exception:
                logger.exception("dra manager loop iteration failed")

    # --- PodStarter ---------------------------------------------------------------------------

    async def prepare(self, pod: Pod) -> StartResult:
        """Every claim of `pod` prepared on its drivers and recorded, or why not yet."""
        names = self._preparer.claim_names(pod)
        if not names:
            return START_READY
        started = self._clock.monotonic()
        result = StartResult(False, REASON, "prepare did not finish")
        try:
            prepared = await self._preparer.prepare(pod, names)
            if isinstance(prepared, StartResult):
                # the kubelet's event: kuberuntime's "Failed to prepare dynamic resources: %v" around
                # PrepareResources' "prepare dynamic resources: %w"
                result = dataclasses.replace(prepared, event=f"{EVENT_PREFIX}{prepared.message}")
            else:
                result = self._health.ready(prepared)
            return result
        finally:
            self._observe(PREPARE, not result.ready, started)

    def prepare_now(self, pod: Pod) -> StartResult | None:
        """Ready for a pod without claims (no driver to call), else None: `prepare` must run."""
        return None if self._preparer.claim_names(pod) else START_READY

    async def unprepare(self, pod: Pod) -> None:
        """The pod no longer uses its claims; claims without pods are unprepared (or retried later)."""
        if not self._cache.claims_of_pod(pod.uid) and pod.uid not in self._cache.pods:
            return
        started = self._clock.monotonic()
        errors: list[str] = ["unprepare did not finish"]
        try:
            errors = await self._preparer.release(pod)
        finally:
            self._observe(UNPREPARE, bool(errors), started)
        if errors:
            logger.warning("dra unprepare incomplete, will retry pod=%s uid=%s errors=%s",
                           pod.key, pod.uid, "; ".join(errors))

    def forget(self, pod: Pod) -> None:
        """The pod manager dropped the pod: no more health for it."""
        if pod.uid in self._cache.pods:
            self._cache.drop_pod(pod.uid)
            self._cache.flush()

    # --- reconcile ----------------------------------------------------------------------------

    async def reconcile(self, active_pod_uids: Iterable[str], known_pod_uids: Iterable[str] | None = None
                        ) -> list[str]:
        """After a restart: drop pods that are gone (or no longer active) from the claims, unprepare
        the claims left without pods, forget records of pods no longer known, and push the current
        health (Unknown until the drivers report again) into every known pod's status.

        `active_pod_uids`: pods that still hold their claims (admitted, not terminal, Pending
        included); `known_pod_uids`: every pod the pod manager still lists (defaults to active).
        Returns the unprepare errors (retried by the loop).
        """
        active = set(active_pod_uids)
        known = active if known_pod_uids is None else set(known_pod_uids) | active
        errors = await self._preparer.reconcile(active, known)
        await self._health.publish_pods(list(self._cache.pods))
        return errors

    async def retry(self) -> list[str]:
        """Unprepare the claims left over by earlier failures (the loop calls this every 60 s)."""
        return await self._preparer.retry()

    # --- health -------------------------------------------------------------------------------

    async def _on_health(self, driver: str, devices: Sequence[DeviceHealthUpdate]) -> None:
        await self._health.on_health(driver, devices)

    async def _on_driver(self, driver: str, registered: bool) -> None:
        if registered:
            if self._preparer.busy():
                # A prepare is in flight (perhaps on an older instance of this very driver, leaving
                # in a rolling update): the registration must not wait for it; retry behind it.
                retry = asyncio.get_running_loop().create_task(self.retry(), name=f"dra retry {driver}")
                self._retries.add(retry)
                retry.add_done_callback(self._retries.discard)
                return
            await self.retry()
        else:
            await self._health.driver_gone(driver)

    async def check_health(self) -> None:
        """Devices whose timeout passed become Unknown (called every second by the loop)."""
        await self._health.check()

    # --- DynamicResourcesProvider and queries -------------------------------------------------

    def generation(self) -> int:
        """Changes whenever prepared claims change (podresources Versioned)."""
        return self._cache.generation

    def holds_any(self, pod_uid: str) -> bool:
        """podresources PodHoldings: False when the pod has no prepared record with containers that
        reference claims."""
        record = self._cache.pods.get(pod_uid)
        return record is not None and record.prepared and bool(record.containers)

    def container_dynamic_resources(self, pod: Pod, container: str) -> Sequence[DynamicResourceInfo]:
        record = self._cache.pods.get(pod.uid)
        if record is None or not record.prepared:
            return []
        return model.container_resources(record, container)

    def pod_record(self, uid: str) -> PodRecord | None:
        """What the pod was given (claims, devices, CDI ids), for describe."""
        return self._cache.pods.get(uid)

    def claim(self, uid: str) -> ClaimEntry | None:
        return self._cache.claims.get(uid)

    def claims(self) -> Mapping[str, ClaimEntry]:
        return dict(self._cache.claims)

    def device_health(self, key: DeviceKey) -> tuple[str, str]:
        """(effective health, the driver's message while its report holds) of one device."""
        return self._health.device_health(key)

    def describe_lines(self, pod: Pod) -> list[str]:
        """Lines for `nodeagent describe pod`: each claim, its devices, CDI ids and health."""
        record = self._cache.pods.get(pod.uid)
        if record is None:
            return []
        lines = []
        for claim in record.claims:
            state = "prepared" if record.prepared else "released"
            lines.append(f"{claim.pod_claim_name}: ResourceClaim {claim.namespace}/{claim.name} ({state})")
            cdi = {(driver, d.pool_name, d.device_name): d for driver, devs in claim.devices.items() for d in devs}
            for result in claim.results:
                health, message = self.device_health(result.key)
                line = f"  {result.request}: {model.resource_id(result.key)} health={health}"
                if message:
                    line += f" ({message})"
                device = cdi.get(result.key)
                if device is not None and device.cdi_device_ids:
                    line += f" cdi={','.join(device.cdi_device_ids)}"
                if device is not None and device.share_id:
                    line += f" shareID={device.share_id}"
                lines.append(line)
        return lines

    def claims_in_use(self) -> tuple[dict[str, int], int]:
        """({driver: prepared claims using it}, total) for dra_resource_claims_in_use (claiminfo.py)."""
        return self._cache.claims_in_use()

    def _observe(self, operation: str, is_error: bool, started: float) -> None:
        if self._metrics is not None:
            self._metrics.observe(operation, is_error, self._clock.monotonic() - started)
