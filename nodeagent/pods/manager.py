"""The pod manager: owns every pod on the node, its admission, lifecycle and durable status.

Pods arrive from the admin API and the static pod directory through `apply`. Admission
runs the kubelet's chain: the general predicates (admission.py), then each ResourceAdmitter
in order; a refusal releases the admitters that had admitted. Admitted pods get a QoS
class and a cgroup, then every PodStarter (DRA's prepare) must answer ready before the pod goes
Running (no containers run on a fake node); until then it stays Pending with the starter's
reason and is retried with backoff (1 s doubling to 30 s) or at once on `retry_pending`.
Rejected pods end Failed and stay listed, as with the kubelet. Every state change is committed to
the StateDB before the call returns, so a restart restores the same pods and statuses
without re-admitting. Finish timers (nodeagent.dev/finish-after-seconds) run on the
injected clock. The manager reaches the world only through the ports it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.clock import Clock
from nodeagent.errors import NodeAgentError, NotFound, ValidationError
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_FINISH_AFTER,
    PENDING,
    Pod,
    PodStatus,
    ResourceStatus,
)
from nodeagent.pods import admission, records
from nodeagent.pods import status as st
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.ports import (
    START_READY,
    AdmitResult,
    NodeResourcesSource,
    PodCgroups,
    PodStarter,
    ResourceAdmitter,
    StartResult,
)
from nodeagent.pods.qos import pod_qos
from nodeagent.state.db import StateDB

logger = logging.getLogger(__name__)

BUCKET = "pods"

CREATED = "created"
UNCHANGED = "unchanged"
CONFIGURED = "configured"
REPLACED = "replaced"

UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_MUTABLE_SPEC_FIELDS = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


@dataclass(frozen=True)
class PodView:
    """A pod and its current status, as the admin API shows it."""

    pod: Pod
    status: PodStatus


@dataclass
class _Entry:
    pod: Pod
    status: PodStatus
    holds_resources: bool  # admitted by every admitter and owns a cgroup
    finish_at: float | None = None  # wall-clock time of the simulated exit


class PodManager:
    def __init__(
        self,
        *,
        node_name: str,
        resources: NodeResourcesSource,
        admitters: Sequence[ResourceAdmitter],
        cgroups: PodCgroups,
        db: StateDB,
        clock: Clock,
        instruments: Instruments,
        recorder: EventRecorder,
        starters: Sequence[PodStarter] = (),
        retry_initial: float = 1.0,
        retry_max: float = 30.0,
    ) -> None:
        self._node_name = node_name
        self._resources = resources
        self._admitters = tuple(admitters)
        self._cgroups = cgroups
        self._db = db
        self._clock = clock
        self._instruments = instruments
        self._recorder = recorder
        self._starters = tuple(starters)
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        # Admitted pods whose starters are not ready yet: uid -> the next backoff delay, and the
        # task that retries after that delay.
        self._pending: dict[str, float] = {}
        self._retries: dict[str, asyncio.Task[None]] = {}
        self._by_uid: dict[str, _Entry] = {}
        self._by_key: dict[str, str] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()
        self._generation = 0  # bumped on every change of pods or statuses (podresources Versioned)
        # The active pods (admitted, holding resources, not terminal) in admission order, and
        # their requests summed for the fit check, so neither is rebuilt from every pod on each
        # admission. Kept by _account on every committed change (_persist), a release and a removal.
        self._active: dict[str, _Entry] = {}
        self._requested = admission.RequestTotals()

    # --- queries (PodsProvider and the admin API) ------------------------------------------

    def active_pods(self) -> list[Pod]:
        """Admitted pods that still run (they count for fit and hold resources)."""
        return [e.pod for e in self._active.values()]

    def all_pods(self) -> list[Pod]:
        return [e.pod for e in self._by_uid.values()]

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        uid = self._by_key.get(f"{namespace}/{name}")
        return None if uid is None else self._by_uid[uid].pod

    def get_pod_by_uid(self, uid: str) -> Pod | None:
        entry = self._by_uid.get(uid)
        return None if entry is None else entry.pod

    def get(self, namespace: str, name: str) -> PodView:
        uid = self._by_key.get(f"{namespace}/{name}")
        if uid is None:
            raise NotFound(f'pods "{name}" not found')
        entry = self._by_uid[uid]
        return PodView(entry.pod, entry.status)

    def list(self, namespace: str | None = None) -> list[PodView]:
        views = [PodView(e.pod, e.status) for e in self._by_uid.values()]
        if namespace is not None:
            views = [v for v in views if v.pod.namespace == namespace]
        return sorted(views, key=lambda v: (v.pod.namespace, v.pod.name))

    def status(self, uid: str) -> PodStatus:
        entry = self._by_uid.get(uid)
        if entry is None:
            raise NotFound(f"pod with uid {uid} not found")
        return entry.status

    # --- changes ---------------------------------------------------------------------------

    async def apply(self, pod: Pod) -> tuple[Pod, str]:
        """Create, update metadata, replace (static pods) or refuse a spec change, like the API server.

        Returns the stored pod and one of created / unchanged / configured / replaced. A created
        pod is admitted or rejected (then it is Failed with the reason); either way its record
        is committed before this returns.
        """
        if not pod.node_name:
            # Everything applied to this node is bound to it, as the scheduler would have done.
            pod = dataclasses.replace(pod, node_name=self._node_name)
        async with self._lock:
            uid = self._by_key.get(pod.key)
            if uid is None:
                await self._add(pod)
                return pod, CREATED
            entry = self._by_uid[uid]
            old = entry.pod
            if pod.source == "file" and old.source == "file":
                if old.uid == pod.uid:
                    return old, UNCHANGED
                await self._remove(entry)
                await self._add(pod)
                return pod, REPLACED
            return self._update(entry, pod)

    async def delete(self, namespace: str, name: str) -> Pod:
        """Stop the pod, release what it holds and forget it."""
        async with self._lock:
            uid = self._by_key.get(f"{namespace}/{name}")
            if uid is None:
                raise NotFound(f'pods "{name}" not found')
            entry = self._by_uid[uid]
            await self._remove(entry)
            return entry.pod

    async def evict(self, pod: Pod, reason: str, message: str) -> None:
        """The eviction manager's kill: Failed with `reason`, resources released, pod kept visible."""
        async with self._lock:
            entry = self._by_uid.get(pod.uid)
            if entry is None:
                raise NotFound(f'pods "{pod.name}" not found')
            if entry.status.terminal:
                return
            self._cancel_timer(pod.uid)
            self._cancel_retry(pod.uid)
            ref = ObjectRef.for_pod(entry.pod)
            await self._release(entry)
            entry.status = st.evicted_status(entry.status, reason, message, self._clock.now())
            entry.finish_at = None
            self._persist(entry)
            self._recorder.warning(ref, reason, message)
            for c in entry.pod.containers:
                self._recorder.normal(ref, "Killing", f"Stopping container {c.name}")
            logger.info("pod evicted pod=%s uid=%s reason=%s", entry.pod.key, pod.uid, reason)

    async def set_resource_health(
        self, uid: str, container: str, statuses: Sequence[ResourceStatus], *, replace: bool = False
    ) -> bool:
        """Update a container's allocatedResourcesStatus (merge by name, or replace all).

        Returns True when the status changed; the change is persisted and recorded as an event
        (Warning when a resource is unhealthy). Unknown pods or containers are ignored.
        """
        async with self._lock:
            entry = self._by_uid.get(uid)
            if entry is None:
                return False
            new = st.with_resource_status(entry.status, container, statuses, replace=replace)
            if new == entry.status:
                return False
            entry.status = new
            self._persist(entry)
            unhealthy = [
                f"{rs.name}/{h.resource_id}"
                for rs in statuses
                for h in rs.resources
                if h.health == "Unhealthy"
            ]
            summary = ", ".join(f"{rs.name}: {' '.join(f'{h.resource_id}={h.health}' for h in rs.resources)}"
                                for rs in statuses)
            ref = ObjectRef.for_pod(entry.pod)
            if unhealthy:
                self._recorder.warning(ref, "ResourceUnhealthy",
                                       f"container {container}: unhealthy {', '.join(unhealthy)}")
            else:
                self._recorder.normal(ref, "ResourceHealthChanged", f"container {container}: {summary}")
            return True

    async def on_resource_health(self, uid: str, container: str, statuses: Sequence[ResourceStatus]) -> None:
        """HealthCallback shape for the device/DRA managers: merge the statuses by resource name."""
        await self.set_resource_health(uid, container, statuses)

    async def on_pod_resource_health(self, uid: str, statuses: Sequence[ResourceStatus]) -> None:
        """Pod-level allocatedResourcesStatus (DRA claims no container references), merged by name."""
        async with self._lock:
            entry = self._by_uid.get(uid)
            if entry is None:
                return
            new = st.with_pod_resource_status(entry.status, statuses, replace=False)
            if new == entry.status:
                return
            entry.status = new
            self._persist(entry)
            unhealthy = [f"{rs.name}/{h.resource_id}" for rs in statuses for h in rs.resources
                         if h.health == "Unhealthy"]
            ref = ObjectRef.for_pod(entry.pod)
            if unhealthy:
                self._recorder.warning(ref, "ResourceUnhealthy", f"pod: unhealthy {', '.join(unhealthy)}")
            else:
                summary = ", ".join(f"{rs.name}: {' '.join(f'{h.resource_id}={h.health}' for h in rs.resources)}"
                                    for rs in statuses)
                self._recorder.normal(ref, "ResourceHealthChanged", f"pod: {summary}")

    async def retry_pending(self) -> None:
        """Try every pod waiting for its starters now (claims or drivers changed)."""
        async with self._lock:
            for uid in list(self._pending):
                task = self._retries.pop(uid, None)
                if task is not None:
                    task.cancel()
                await self._try_start(uid)

    def pending_uids(self) -> tuple[str, ...]:
        """Uids of admitted pods still waiting for their starters."""
        return tuple(self._pending)

    # --- start and stop ------------------------------------------------------------------

    async def restore(self) -> int:
        """Reload pods and statuses from the database (no re-admission); restart finish timers."""
        async with self._lock:
            count = 0
            for key, doc in self._db.items(BUCKET):
                try:
                    records.check_version(doc, key)
                    pod = records.pod_from_record(doc["pod"])
                    status = records.status_from_record(doc["status"])
                except (NodeAgentError, KeyError, TypeError, ValueError) as err:
                    logger.error("pod record unreadable, skipped key=%s err=%s", key, err)
                    continue
                entry = _Entry(pod, status, bool(doc.get("holdsResources")), doc.get("finishAt"))
                self._by_uid[pod.uid] = entry
                self._by_key[pod.key] = pod.uid
                self._account(entry)
                if entry.finish_at is not None and entry.holds_resources and not status.terminal:
                    self._start_timer(pod.uid, entry.finish_at - self._clock.now())
                if entry.holds_resources and status.phase == PENDING:
                    # A prepare may have been in flight at the crash: simply repeat it (idempotent).
                    self._pending[pod.uid] = self._retry_initial
                    self._schedule_retry(pod.uid, 0.0)
                count += 1
                self._generation += 1
            logger.info("pods restored count=%d", count)
            return count

    async def run(self) -> None:
        """Keep the manager's timers alive until cancelled; then stop them."""
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()

    async def close(self) -> None:
        timers = list(self._timers.values()) + list(self._retries.values())
        self._timers.clear()
        self._retries.clear()
        for task in timers:
            task.cancel()
        for task in timers:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- internals -----------------------------------------------------------------------

    async def _add(self, pod: Pod) -> None:
        qos = pod_qos(pod)
        now = self._clock.now()
        result = await self._admit(pod)
        ref = ObjectRef.for_pod(pod)
        if not result.admit:
            reason = result.reason or "UnexpectedAdmissionError"
            entry = _Entry(pod, st.rejected_status(qos, reason, result.message, now), holds_resources=False)
            self._store(entry)
            self._instruments.admissions.labels(result=reason).inc()
            self._recorder.warning(ref, reason, result.message)
            logger.info("pod rejected pod=%s uid=%s reason=%s message=%s", pod.key, pod.uid, reason,
                        result.message)
            return
        try:
            self._cgroups.create_pod_cgroup(pod, qos)
        except BaseException:
            await self._release_admitters(pod, self._admitters)
            raise
        self._instruments.admissions.labels(result="admitted").inc()
        logger.info("pod admitted pod=%s uid=%s qos=%s", pod.key, pod.uid, qos)
        if not self._starters:
            entry = _Entry(pod, st.running_status(pod, qos, now), holds_resources=True)
            self._go_running(entry, START_READY, store=True)
            return
        # Known (and durable) as Pending before the starters run, so a crash mid-prepare
        # leaves a pod that is retried on restart.
        entry = _Entry(pod, st.pending_status(pod, qos, "", now), holds_resources=True)
        self._store(entry)
        self._pending[pod.uid] = self._retry_initial
        await self._try_start(pod.uid)

    def _go_running(self, entry: _Entry, result: StartResult, *, store: bool = False) -> None:
        pod = entry.pod
        now = self._clock.now()
        status = st.running_status(pod, entry.status.qos_class, now)
        for container, statuses in result.container_resource_status.items():
            status = st.with_resource_status(status, container, statuses, replace=False)
        if result.pod_resource_status:
            status = st.with_pod_resource_status(status, result.pod_resource_status, replace=False)
        entry.status = status
        delay = _finish_after(pod)
        entry.finish_at = None if delay is None else now + delay
        if store:
            self._store(entry)
        else:
            self._persist(entry)
        ref = ObjectRef.for_pod(pod)
        for c in pod.all_containers():
            self._recorder.normal(ref, "Pulled", f'Container image "{c.image}" already present on machine')
            self._recorder.normal(ref, "Created", f"Created container: {c.name}")
            self._recorder.normal(ref, "Started", f"Started container {c.name}")
        if delay is not None:
            self._start_timer(pod.uid, delay)

    async def _try_start(self, uid: str) -> None:
        """Ask every starter; ready -> Running, else Pending with the reason and a retry later.

        Called with the lock held. The lock is dropped while the starters run: a DRA prepare
        may take up to its 45 s deadline, and other pods, deletions and health updates must
        not wait for it. Afterwards the pod is looked up again; if it went away meanwhile,
        whatever the starters prepared for it is released.
        """
        entry = self._by_uid.get(uid)
        delay = self._pending.get(uid)
        if entry is None or delay is None or not entry.holds_resources or entry.status.phase != PENDING:
            self._pending.pop(uid, None)
            return
        pod = entry.pod
        self._lock.release()
        try:
            result = await self._start(pod)
        finally:
            await self._lock.acquire()
        current = self._by_uid.get(uid)
        if current is not entry or uid not in self._pending or entry.status.phase != PENDING:
            if result.ready and current is None:
                await self._unprepare(pod)
            return
        if result.ready:
            self._pending.pop(uid, None)
            self._go_running(entry, result)
            logger.info("pod started pod=%s uid=%s", pod.key, uid)
            return
        if entry.status.message != result.message:
            entry.status = dataclasses.replace(entry.status, message=result.message)
            self._persist(entry)
            self._recorder.warning(ObjectRef.for_pod(pod), result.reason or "FailedPrepare", result.message)
        logger.info("pod waiting to start pod=%s uid=%s reason=%s message=%s retry_in=%.1f",
                    pod.key, uid, result.reason, result.message, delay)
        self._pending[uid] = min(delay * 2, self._retry_max)
        self._schedule_retry(uid, delay)

    async def _start(self, pod: Pod) -> StartResult:
        ready: list[StartResult] = []
        for starter in self._starters:
            try:
                result = await starter.prepare(pod)
            except Exception as err:
                if not isinstance(err, NodeAgentError):
                    logger.exception("pod starter failed unexpectedly pod=%s uid=%s", pod.key, pod.uid)
                result = StartResult(False, "FailedPrepare", f"prepare failed: {err}")
            if not result.ready:
                return result
            ready.append(result)
        merged: dict[str, tuple[ResourceStatus, ...]] = {}
        pod_level: tuple[ResourceStatus, ...] = ()
        for r in ready:
            for container, statuses in r.container_resource_status.items():
                merged[container] = merged.get(container, ()) + tuple(statuses)
            pod_level += r.pod_resource_status
        return StartResult(True, container_resource_status=merged, pod_resource_status=pod_level)

    def _schedule_retry(self, uid: str, delay: float) -> None:
        self._cancel_retry(uid)
        self._retries[uid] = asyncio.get_running_loop().create_task(
            self._retry_later(uid, delay), name=f"pod-start-retry-{uid}"
        )

    def _cancel_retry(self, uid: str) -> None:
        task = self._retries.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _retry_later(self, uid: str, delay: float) -> None:
        await self._clock.sleep(delay)
        async with self._lock:
            if self._retries.get(uid) is asyncio.current_task():
                del self._retries[uid]
            else:
                return  # superseded by a poke or a newer schedule
            await self._try_start(uid)

    async def _admit(self, pod: Pod) -> AdmitResult:
        active = self.active_pods()
        node = self._resources.node_resources()
        requested = None if pod.uid in self._active else self._requested.totals
        result = admission.admit(pod, node_name=self._node_name, allocatable=node.allocatable, active=active,
                                 requested=requested)
        if not result.admit:
            return result
        admitted: list[ResourceAdmitter] = []
        for admitter in self._admitters:
            try:
                result = await admitter.admit(pod, active)
            except Exception as err:
                # A failing manager must not leak what the earlier ones allocated.
                if not isinstance(err, NodeAgentError):
                    logger.exception("admitter failed unexpectedly pod=%s uid=%s", pod.key, pod.uid)
                result = AdmitResult(False, "UnexpectedAdmissionError",
                                     f"Allocate failed due to {err}, which is unexpected")
            if not result.admit:
                await self._release_admitters(pod, admitted)
                return result
            admitted.append(admitter)
        return result

    async def _release_admitters(self, pod: Pod, admitters: Sequence[ResourceAdmitter]) -> None:
        for admitter in reversed(admitters):
            try:
                await admitter.remove(pod)
            except NodeAgentError as err:
                logger.error("admitter release failed pod=%s uid=%s err=%s", pod.key, pod.uid, err)

    async def _unprepare(self, pod: Pod) -> None:
        for starter in reversed(self._starters):
            try:
                await starter.unprepare(pod)
            except Exception:
                # Unprepare failures are the starter's to retry; the pod is released regardless.
                logger.exception("pod starter unprepare failed pod=%s uid=%s", pod.key, pod.uid)

    async def _release(self, entry: _Entry) -> None:
        """Give back what an admitted pod holds: admitters' allocations and its cgroup."""
        if not entry.holds_resources:
            return
        await self._release_admitters(entry.pod, self._admitters)
        self._pending.pop(entry.pod.uid, None)
        self._cancel_retry(entry.pod.uid)
        await self._unprepare(entry.pod)
        try:
            self._cgroups.remove_pod_cgroup(entry.pod, entry.status.qos_class)
        except (NodeAgentError, OSError) as err:
            logger.error("pod cgroup removal failed pod=%s uid=%s err=%s", entry.pod.key, entry.pod.uid, err)
        entry.holds_resources = False
        self._account(entry)

    async def _remove(self, entry: _Entry) -> None:
        pod = entry.pod
        self._cancel_timer(pod.uid)
        self._cancel_retry(pod.uid)
        running = entry.holds_resources and not entry.status.terminal
        await self._release(entry)
        for starter in self._starters:
            starter.forget(pod)
        self._db.delete(BUCKET, pod.uid)
        del self._by_uid[pod.uid]
        self._active.pop(pod.uid, None)
        self._requested.discard(pod.uid)
        self._generation += 1
        if self._by_key.get(pod.key) == pod.uid:
            del self._by_key[pod.key]
        if running:
            ref = ObjectRef.for_pod(pod)
            for c in pod.containers:
                self._recorder.normal(ref, "Killing", f"Stopping container {c.name}")
        logger.info("pod deleted pod=%s uid=%s", pod.key, pod.uid)

    def _update(self, entry: _Entry, pod: Pod) -> tuple[Pod, str]:
        old = entry.pod
        old_spec = _comparable_spec(old.manifest)
        new_spec = _comparable_spec(pod.manifest)
        if old_spec != new_spec:
            raise ValidationError("spec", f"Forbidden: {UPDATE_FORBIDDEN}")
        images_changed = [c.image for c in old.all_containers()] != [c.image for c in pod.all_containers()]
        if not images_changed and old.labels == pod.labels and old.annotations == pod.annotations:
            return old, UNCHANGED
        manifest: dict[str, Any] = dict(pod.manifest)
        old_metadata: Mapping[str, Any] = old.manifest.get("metadata") or {}  # type: ignore[assignment]
        metadata: dict[str, Any] = dict(manifest.get("metadata") or {})
        metadata.update(uid=old.uid, creationTimestamp=old_metadata.get("creationTimestamp"))
        manifest["metadata"] = metadata
        updated = dataclasses.replace(
            pod, uid=old.uid, creation_timestamp=old.creation_timestamp, source=old.source, manifest=manifest
        )
        entry.pod = updated
        self._persist(entry)
        logger.info("pod updated pod=%s uid=%s", updated.key, updated.uid)
        return updated, CONFIGURED

    def _store(self, entry: _Entry) -> None:
        self._persist(entry)
        self._by_uid[entry.pod.uid] = entry
        self._by_key[entry.pod.key] = entry.pod.uid

    def generation(self) -> int:
        return self._generation

    def _account(self, entry: _Entry) -> None:
        """Keep the active set and its requests in step with the entry (see active_pods)."""
        uid = entry.pod.uid
        if entry.holds_resources and not entry.status.terminal:
            self._active[uid] = entry  # an entry already active keeps its place
            self._requested.add(entry.pod)
        else:
            self._active.pop(uid, None)
            self._requested.discard(uid)

    def _persist(self, entry: _Entry) -> None:
        self._generation += 1
        self._db.put(
            BUCKET,
            entry.pod.uid,
            records.entry_to_record(
                entry.pod, entry.status, holds_resources=entry.holds_resources, finish_at=entry.finish_at
            ),
        )
        self._account(entry)

    def _start_timer(self, uid: str, delay: float) -> None:
        self._cancel_timer(uid)
        self._timers[uid] = asyncio.get_running_loop().create_task(
            self._finish_later(uid, max(delay, 0.0)), name=f"pod-finish-{uid}"
        )

    def _cancel_timer(self, uid: str) -> None:
        task = self._timers.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _finish_later(self, uid: str, delay: float) -> None:
        await self._clock.sleep(delay)
        async with self._lock:
            self._timers.pop(uid, None)
            entry = self._by_uid.get(uid)
            if entry is None or entry.status.terminal:
                return
            exit_code = _exit_code(entry.pod)
            try:
                await self._release(entry)
            except Exception:
                # A bug in a port must not leave the pod running forever: finish it anyway.
                logger.exception("pod release failed pod=%s uid=%s", entry.pod.key, uid)
                entry.holds_resources = False
                self._account(entry)
            entry.status = st.finished_status(entry.status, exit_code, self._clock.now())
            entry.finish_at = None
            self._persist(entry)
            logger.info("pod finished pod=%s uid=%s phase=%s exit_code=%d", entry.pod.key, uid,
                        entry.status.phase, exit_code)


def _comparable_spec(manifest: Mapping[str, Any]) -> Any:
    """The spec without the fields the API server lets an update change."""
    spec = dict(manifest.get("spec") or {})
    for name in _MUTABLE_SPEC_FIELDS:
        spec.pop(name, None)
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, Mapping) else c
                for c in spec[key]
            ]
    return spec


def _finish_after(pod: Pod) -> float | None:
    raw = pod.annotations.get(ANNOTATION_FINISH_AFTER)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        logger.warning("annotation ignored pod=%s annotation=%s value=%r",
                       pod.key, ANNOTATION_FINISH_AFTER, raw)
        return None
    return max(value, 0.0)


def _exit_code(pod: Pod) -> int:
    raw = pod.annotations.get(ANNOTATION_EXIT_CODE, "0")
    try:
        return int(raw)
    except ValueError:
        logger.warning("annotation ignored pod=%s annotation=%s value=%r", pod.key, ANNOTATION_EXIT_CODE, raw)
        return 0
