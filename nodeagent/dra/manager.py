"""The DRA manager: prepares a pod's ResourceClaims before it runs, releases them after, follows health.

The kubelet's cm/dra manager on a fake node. As the pod manager's PodStarter it checks every
claim a pod uses is allocated and reserved for it, sends one NodePrepareResources per driver
with the pod's claims not prepared yet, and records the devices in the claim cache (StateDB)
before answering ready; a claim shared by several pods is prepared once and unprepared when the
last of them is gone (failures retried by a 60 s loop or `retry`). As the pod-resources
DynamicResourcesProvider it answers with the prepared devices. From the drivers' health streams
it keeps a health cache and pushes `claim:<pod claim>/<request>` entries into pod status.
It reaches drivers only through the DriverRegistry port and claims only through ClaimSource.
Pods prepare concurrently (each from its pod worker, as the kubelet's): one asyncio lock guards
the claim cache and is never held across a driver call, and per-claim locks (claimlocks.py) keep
the driver calls about one claim in order, so a hanging NodePrepareResources stalls only the pods
of its claims. It never calls the pod manager while holding its lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry

from nodeagent.clock import Clock
from nodeagent.dra import extended, model
from nodeagent.dra.claimlocks import ClaimLocks
from nodeagent.dra.health import HealthCache
from nodeagent.dra.metrics import PREPARE, UNPREPARE, DRAMetrics
from nodeagent.dra.model import ClaimEntry, ClaimView, DeviceKey, PodRecord
from nodeagent.dra.ports import (
    ClaimSource,
    DeviceHealthUpdate,
    DriverCallError,
    DriverRegistry,
    PodHealthSink,
    PreparedDevice,
    PrepareResult,
)
from nodeagent.dra.state import CLAIMS_BUCKET, PODS_BUCKET, ClaimCache
from nodeagent.objects.pod import Pod, ResourceStatus
from nodeagent.podresources.providers import DynamicResourceInfo
from nodeagent.pods.ports import START_READY, StartResult
from nodeagent.state.db import StateDB
from nodeagent.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

REASON = "FailedPrepareDynamicResources"


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
        self._claims = claims
        self._db = db
        self._clock = clock
        self._pods = pods
        self._health_gate = health_gate
        self._health_period = health_period
        self._reconcile_period = reconcile_period
        self._optional_node_operations = optional_node_operations  # the DRAOptionalNodeOperations gate
        self._lock = asyncio.Lock()  # the claim cache; never held across a driver call
        self._claim_locks = ClaimLocks()  # driver calls about one claim, in order
        self._health = HealthCache()
        self._cache, problems = ClaimCache.load(db.items(CLAIMS_BUCKET), db.items(PODS_BUCKET))
        for problem in problems:
            logger.error("dra record unreadable, skipped record=%s", problem)
        self._index: dict[DeviceKey, set[str]] = {}
        for record in self._cache.pods.values():
            self._index_pod(record)
        self._metrics = None if metrics_registry is None else DRAMetrics(metrics_registry, self.claims_in_use)
        self._task: asyncio.Task[None] | None = None
        self._listening = False
        self._retries: set[asyncio.Task[list[str]]] = set()
        logger.info("dra claim cache loaded claims=%d pods=%d", len(self._cache.claims), len(self._cache.pods))

    async def reload(self) -> None:
        """A simulated kubelet restart: read the claim cache back from the state database, as a new
        process would (every prepared claim was committed there before its prepare was answered)."""
        async with self._lock:
            self._flush()
            self._cache, problems = ClaimCache.load(self._db.items(CLAIMS_BUCKET), self._db.items(PODS_BUCKET))
            for problem in problems:
                logger.error("dra record unreadable, skipped record=%s", problem)
            self._index = {}
            for record in self._cache.pods.values():
                self._index_pod(record)
        logger.info("dra claim cache reloaded claims=%d pods=%d", len(self._cache.claims), len(self._cache.pods))

    def attach_pods(self, pods: PodHealthSink) -> None:
        """Where health goes (the pod manager, created after this manager)."""
        self._pods = pods

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
        for retry in list(self._retries):
            retry.cancel()
        await cancel_and_wait([task])

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
        names = self._claim_names(pod)
        if not names:
            return START_READY
        started = self._clock.monotonic()
        result = StartResult(False, REASON, "prepare did not finish")
        try:
            result = await self._prepare(pod, names)
            return result
        finally:
            self._observe(PREPARE, not result.ready, started)

    def prepare_now(self, pod: Pod) -> StartResult | None:
        """Ready for a pod without claims (no driver to call), else None: `prepare` must run."""
        return None if self._claim_names(pod) else START_READY

    def _claim_names(self, pod: Pod) -> list[tuple[str, str]]:
        """The pod's claims (pod claim name, ResourceClaim name), the scheduler's extended one last."""
        names = list(self._claims.pod_claim_names(pod))
        special = extended.extended_claim(pod)
        if special is not None:  # extended resources backed by DRA: the scheduler's claim
            names.append((extended.EXTENDED_POD_CLAIM, special.claim_name))
        return names

    async def unprepare(self, pod: Pod) -> None:
        """The pod no longer uses its claims; claims without pods are unprepared (or retried later)."""
        if not self._cache.claims_of_pod(pod.uid) and pod.uid not in self._cache.pods:
            return
        started = self._clock.monotonic()
        errors: list[str] = ["unprepare did not finish"]
        try:
            async with self._lock:
                unused = []
                for entry in self._cache.claims_of_pod(pod.uid):
                    entry = dataclasses.replace(entry, pods=entry.pods - {pod.uid})
                    self._cache.set_claim(entry)
                    if not entry.pods:
                        unused.append(entry.uid)
                record = self._cache.pods.get(pod.uid)
                if record is not None and record.prepared:
                    self._cache.set_pod(dataclasses.replace(record, prepared=False))
                self._flush()
            errors = await self._unprepare_claims(unused)
        finally:
            self._observe(UNPREPARE, bool(errors), started)
        if errors:
            logger.warning("dra unprepare incomplete, will retry pod=%s uid=%s errors=%s",
                           pod.key, pod.uid, "; ".join(errors))

    def forget(self, pod: Pod) -> None:
        """The pod manager dropped the pod: no more health for it."""
        if pod.uid in self._cache.pods:
            self._unindex_pod(self._cache.pods[pod.uid])
            self._cache.drop_pod(pod.uid)
            self._flush()

    async def _prepare(self, pod: Pod, names: Sequence[tuple[str, str]]) -> StartResult:
        """Join the claims (cache lock), then, holding the claims' locks, call the drivers for what
        is not prepared yet (no cache lock) and record their answers (cache lock)."""
        async with self._lock:
            joined = self._join(pod, names)
        if isinstance(joined, StartResult):
            return joined
        async with self._claim_locks.hold(v.uid for _, v in joined):
            async with self._lock:
                to_prepare = self._to_prepare([v.uid for _, v in joined])
                missing = sorted(d for d in to_prepare if not self._registry.is_registered(d))
                if missing:
                    return StartResult(False, REASON,
                                       "; ".join(f"DRA driver {d} is not registered" for d in missing))
                calls = [(driver, uids, [self._cache.claims[u].ref for u in uids])
                         for driver, uids in sorted(to_prepare.items())]
            errors = []
            for n, (driver, uids, refs) in enumerate(calls, 1):
                try:
                    answer = await self._registry.prepare(driver, refs)
                except DriverCallError as err:
                    logger.warning("NodePrepareResources failed driver=%s claims=%d err=%s", driver, len(refs), err)
                    errors.append(f"NodePrepareResources: {driver}: {err}")
                    continue
                async with self._lock:
                    errors.extend(self._prepared(driver, uids, answer))
                    if n == len(calls) and not errors:
                        # the last answer and the pod's record commit together, before "ready"
                        return self._record_pod(pod, joined)
                    self._flush()
            if errors:
                return StartResult(False, REASON, "; ".join(errors))
            async with self._lock:  # nothing to call: every claim was prepared already
                return self._record_pod(pod, joined)

    def _join(self, pod: Pod, names: Sequence[tuple[str, str]]) -> list[tuple[str, ClaimView]] | StartResult:
        """Check every claim is allocated and reserved for the pod, and add the pod to them; lock held."""
        views: list[tuple[str, ClaimView]] = []
        skipped: dict[str, dict[str, frozenset[str]]] = {}  # claim uid -> driver -> skipped operations
        for pod_claim, claim_name in names:
            if not claim_name:
                return StartResult(False, REASON,
                                   f"waiting for the ResourceClaim of pod claim {pod_claim}: not created yet")
            doc = self._claims.get_claim(pod.namespace, claim_name)
            view = None if doc is None else model.parse_claim(pod.namespace, claim_name, doc)
            problem = model.claim_problem(view, pod.namespace, claim_name, pod.uid)
            if problem or view is None:
                return StartResult(False, REASON, problem)
            assert doc is not None
            skipped[view.uid] = extended.skipped_operations(doc)
            if skipped[view.uid] and not self._optional_node_operations and view.uid not in self._cache.claims:
                return StartResult(False, REASON, f"ResourceClaim {claim_name}: {extended.GATE_DISABLED}")
            views.append((pod_claim, view))

        # The pod joins its claims (durably, before any driver call: a crash mid-call leaves the
        # claim known, so it is prepared again for the pod or unprepared if the pod is gone).
        for _, view in views:
            entry = self._cache.claims.get(view.uid)
            if entry is None:
                entry = ClaimEntry(view.uid, view.namespace, view.name, view.results, view.drivers,
                                   {}, frozenset({pod.uid}), skipped=skipped.get(view.uid, {}))
                self._cache.set_claim(entry)
            elif pod.uid not in entry.pods or entry.released:
                entry = dataclasses.replace(entry, pods=entry.pods | {pod.uid}, released=frozenset())
                self._cache.set_claim(entry)
            for driver in entry.drivers:
                if driver in entry.prepared:
                    continue
                if extended.skips(entry.skipped, driver, extended.SKIP_PREPARE):
                    # no NodePrepareResources (nor registration) needed: the allocated devices as they are
                    devices = tuple(PreparedDevice((r.request,), r.pool, r.device) for r in entry.results
                                    if r.driver == driver)
                    entry = dataclasses.replace(entry, prepared={**entry.prepared, driver: devices})
                    self._cache.set_claim(entry)
        self._flush()
        return views

    def _to_prepare(self, uids: Sequence[str]) -> dict[str, list[str]]:
        """driver -> the claims (of `uids`) it has not prepared yet; lock held."""
        to_prepare: dict[str, list[str]] = {}
        for uid in dict.fromkeys(uids):
            entry = self._cache.claims[uid]
            for driver in entry.drivers:
                if driver not in entry.prepared:
                    to_prepare.setdefault(driver, []).append(uid)
        return to_prepare

    def _record_pod(self, pod: Pod, views: Sequence[tuple[str, ClaimView]]) -> StartResult:
        """Every claim prepared: the pod's record (devices, CDI ids) and its health; lock held."""
        record = model.pod_record(pod, [(pcn, self._cache.claims[v.uid]) for pcn, v in views])
        special = extended.extended_claim(pod)
        if special is not None:
            record = extended.with_refs(record, extended.container_refs(pod, special))
        old = self._cache.pods.get(pod.uid)
        if old is not None:
            self._unindex_pod(old)
        self._cache.set_pod(record)
        self._index_pod(record)
        self._flush()
        logger.info("dra claims prepared pod=%s uid=%s claims=%s", pod.key, pod.uid,
                    ",".join(v.name for _, v in views))
        if not self._health_gate:
            return START_READY
        return StartResult(True, container_resource_status=extended.visible(
                               model.container_statuses(record, self._lookup, self._message)),
                           pod_resource_status=model.pod_statuses(record, self._lookup, self._message))

    def _prepared(self, driver: str, uids: Sequence[str], answer: Mapping[str, PrepareResult]) -> list[str]:
        """Record one NodePrepareResources answer; lock held. The errors, as the kubelet words them."""
        errors = []
        skipped = 0
        for uid in uids:
            entry = self._cache.claims[uid]
            result = answer.get(uid)
            if result is None:
                skipped += 1
            elif result.error:
                errors.append(f"NodePrepareResources failed for ResourceClaim {entry.name}: {result.error}")
            else:
                self._cache.set_claim(dataclasses.replace(entry, prepared={**entry.prepared, driver: result.devices},
                                                          released=entry.released - {driver}))
        unknown = sorted(set(answer) - set(uids))
        if unknown:
            errors.append(f"NodePrepareResources returned result for unknown claim UID {unknown[0]}")
        if skipped:
            errors.append(f"NodePrepareResources skipped {skipped} ResourceClaims")
        return errors

    async def _unprepare_claims(self, uids: Iterable[str]) -> list[str]:
        """NodeUnprepareResources, one call per driver, for the claims (of `uids`) no pod uses.

        Holding the claims' locks: plan (cache lock), call each driver (no cache lock), record
        each answer (cache lock). A pod that joined a claim meanwhile keeps it (and prepares it
        again after this, behind the claim's lock)."""
        wanted = sorted(set(uids))
        if not wanted:
            return []
        async with self._claim_locks.hold(wanted):
            async with self._lock:
                groups = self._plan_unprepare(wanted)
                self._flush()
                calls = [(driver, group, [self._cache.claims[u].ref for u in group])
                         for driver, group in sorted(groups.items())]
            errors: list[str] = []
            for driver, group, refs in calls:
                if not self._registry.is_registered(driver):
                    errors.append(f"DRA driver {driver} is not registered")
                    continue
                try:
                    answer = await self._registry.unprepare(driver, refs)
                except DriverCallError as err:
                    errors.append(f"NodeUnprepareResources: {driver}: {err}")
                    continue
                async with self._lock:
                    errors.extend(self._unprepared(driver, group, answer))
                    self._flush()
        return errors

    def _plan_unprepare(self, uids: Iterable[str]) -> dict[str, list[str]]:
        """driver -> claims to unprepare on it; claims needing no call are settled here; lock held."""
        groups: dict[str, list[str]] = {}
        for uid in uids:
            entry = self._cache.claims.get(uid)
            if entry is None or entry.pods:
                continue
            pending = [d for d in entry.drivers if d not in entry.released]
            if any(extended.skips(entry.skipped, d, extended.SKIP_UNPREPARE) for d in pending):
                # no NodeUnprepareResources for drivers whose devices all skip it
                skip = {d for d in pending if extended.skips(entry.skipped, d, extended.SKIP_UNPREPARE)}
                entry = dataclasses.replace(entry, released=entry.released | skip,
                                            prepared={d: v for d, v in entry.prepared.items() if d not in skip})
                self._cache.set_claim(entry)
                pending = [d for d in pending if d not in skip]
            if not pending:
                self._cache.drop_claim(uid)
            for driver in pending:
                groups.setdefault(driver, []).append(uid)
        return groups

    def _unprepared(self, driver: str, group: Sequence[str], answer: Mapping[str, str]) -> list[str]:
        """Record one NodeUnprepareResources answer; lock held."""
        errors = []
        for uid in group:
            entry = self._cache.claims[uid]
            if uid not in answer:
                errors.append(f"NodeUnprepareResources skipped ResourceClaim {entry.name}")
            elif answer[uid]:
                errors.append(f"NodeUnprepareResources failed for ResourceClaim {entry.name}: {answer[uid]}")
            else:
                prepared = {d: devs for d, devs in entry.prepared.items() if d != driver}
                entry = dataclasses.replace(entry, prepared=prepared, released=entry.released | {driver})
                if all(d in entry.released for d in entry.drivers) and not entry.pods:
                    self._cache.drop_claim(uid)
                    logger.info("dra claim unprepared claim=%s/%s uid=%s", entry.namespace, entry.name, uid)
                else:
                    self._cache.set_claim(entry)
        return errors

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
        async with self._lock:
            for entry in list(self._cache.claims.values()):
                if not entry.pods <= active:
                    self._cache.set_claim(dataclasses.replace(entry, pods=entry.pods & active))
            for uid, record in list(self._cache.pods.items()):
                if uid not in known:
                    self._unindex_pod(record)
                    self._cache.drop_pod(uid)
                elif record.prepared and uid not in active:
                    self._cache.set_pod(dataclasses.replace(record, prepared=False))
            self._flush()
            unused = [u for u, e in self._cache.claims.items() if not e.pods]
        errors = await self._unprepare_claims(unused)
        if errors:
            logger.warning("dra reconcile left claims to unprepare errors=%s", "; ".join(errors))
        await self._publish_pods(list(self._cache.pods))
        return errors

    async def retry(self) -> list[str]:
        """Unprepare the claims left over by earlier failures (the loop calls this every 60 s)."""
        async with self._lock:
            unused = [u for u, e in self._cache.claims.items() if not e.pods]
        return await self._unprepare_claims(unused)

    # --- health -------------------------------------------------------------------------------

    async def _on_health(self, driver: str, devices: Sequence[DeviceHealthUpdate]) -> None:
        await self._publish(self._health.update(driver, devices, self._clock.monotonic()))

    async def _on_driver(self, driver: str, registered: bool) -> None:
        if registered:
            if self._lock.locked() or self._claim_locks.busy():
                # A prepare is in flight (perhaps on an older instance of this very driver, leaving
                # in a rolling update): the registration must not wait for it; retry behind it.
                retry = asyncio.get_running_loop().create_task(self.retry(), name=f"dra retry {driver}")
                self._retries.add(retry)
                retry.add_done_callback(self._retries.discard)
                return
            await self.retry()
        else:
            await self._publish(self._health.driver_gone(driver))

    async def check_health(self) -> None:
        """Devices whose timeout passed become Unknown (called every second by the loop)."""
        await self._publish(self._health.expire(self._clock.monotonic()))

    def _lookup(self, key: DeviceKey) -> str:
        return self._health.health(key, self._clock.monotonic())

    def _message(self, key: DeviceKey) -> str:
        return self._health.message(key, self._clock.monotonic())

    async def _publish(self, keys: Sequence[DeviceKey]) -> None:
        if not keys or not self._health_gate:
            return
        uids: set[str] = set()
        for key in keys:
            uids |= self._index.get(key, set())
        await self._publish_pods(sorted(uids), set(keys))

    async def _publish_pods(self, uids: Sequence[str], only: set[model.DeviceKey] | None = None) -> None:
        """Push the pods' claim health; with `only`, just the entries that hold one of those devices."""
        sink = self._pods
        if sink is None or not self._health_gate:
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

    def _index_pod(self, record: PodRecord) -> None:
        for key in record.device_keys():
            self._index.setdefault(key, set()).add(record.uid)

    def _unindex_pod(self, record: PodRecord) -> None:
        for key in record.device_keys():
            pods = self._index.get(key)
            if pods is not None:
                pods.discard(record.uid)
                if not pods:
                    del self._index[key]

    # --- DynamicResourcesProvider and queries -------------------------------------------------

    def generation(self) -> int:
        """Changes whenever prepared claims change (podresources Versioned)."""
        return self._cache.generation

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
        return self._health.state(key, self._clock.monotonic())

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
        """({driver: prepared claims using it}, total) for dra_resource_claims_in_use, as the
        kubelet's claimsInUse: a claim counts once prepared by all its drivers and until every
        driver unprepared it (pods or not); only drivers with such claims are listed."""
        per_driver: dict[str, int] = {}
        total = 0
        for entry in self._cache.claims.values():
            if not entry.prepared or not all(d in entry.prepared or d in entry.released for d in entry.drivers):
                continue
            total += 1
            for driver in entry.drivers:
                per_driver[driver] = per_driver.get(driver, 0) + 1
        return per_driver, total

    # --- internals ----------------------------------------------------------------------------

    def _flush(self) -> None:
        if self._cache.dirty:
            with self._db.transaction() as txn:
                self._cache.flush(txn)

    def _observe(self, operation: str, is_error: bool, started: float) -> None:
        if self._metrics is not None:
            self._metrics.observe(operation, is_error, self._clock.monotonic() - started)

