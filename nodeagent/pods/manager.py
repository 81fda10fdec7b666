"""The pod manager: owns every pod on the node, its admission, lifecycle and durable status.

Pods arrive from the node sync (the API), the admin API and the static pod directory through
`apply`. Admission is serial, as the kubelet's HandlePodAdditions: under this manager's lock,
`_admit` runs the kubelet's chain (the eviction manager's admit handler, each ResourceAdmitter
in order, then the general predicates of admission.py; a refusal releases the admitters that
had admitted, holdings.py).
Admitted pods get a QoS class and a cgroup; what follows runs in the pod's own worker
(workers.py, the kubelet's pod workers): every PodStarter (DRA's prepare) must answer ready
before the pod goes Running (no containers run on a fake node); until then it stays Pending
with the starter's reason and is retried with backoff (1 s doubling to 30 s) or at once on
`retry_pending` (starting.py). A deleted, evicted or finished pod gives back what it holds in
its worker too, after any sync in flight (which a deletion or eviction cancels), so pods
prepare and unprepare concurrently and a hanging driver call stalls only its own pod.
Rejected pods end Failed and stay listed, as with the kubelet. Every state change is committed
to the StateDB before the call returns (table.py), so a restart restores the same pods and
statuses without re-admitting. Finish timers (nodeagent.dev/finish-after-seconds) run on the
injected clock (lifecycle.py). The lock guards the table and admission, never a driver call;
the manager reaches the world only through the ports it is given.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
from collections.abc import Mapping, Sequence

from nodeagent.errors import NotFound
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.model import PENDING, Pod, PodStatus, ResourceStatus
from nodeagent.pods import admission, updates
from nodeagent.pods import status as st
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.holdings import PodHoldings
from nodeagent.pods.lifecycle import PodLifecycle
from nodeagent.pods.ports import (
    START_READY,
    AdmitResult,
    NodeResourcesSource,
    PodCgroups,
    PodStarter,
    ResourceAdmitter,
)
from nodeagent.pods.qos import pod_qos
from nodeagent.pods.starting import PodStarting
from nodeagent.pods.table import BUCKET, PodEntry, PodTable, PodView
from nodeagent.pods.updates import CONFIGURED, CREATED, REPLACED, UNCHANGED, UPDATE_FORBIDDEN
from nodeagent.pods.workers import PodWorkers
from nodeagent.state import batch
from nodeagent.state.db import StateDB
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait
from nodeagent.util.yielding import TURN, chunked, sized_call

__all__ = [
    "BUCKET",
    "CONFIGURED",
    "CREATED",
    "REPLACED",
    "UNCHANGED",
    "UPDATE_FORBIDDEN",
    "PodManager",
    "PodView",
]

logger = logging.getLogger(__name__)

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"

class PodManager:
    """Every pod of the node: admission behind one lock, each pod's sync and termination in its
    own worker; each answer is given after its change is durable."""

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
        node_allocatable: bool = False,
        ensure_secret_pulled: bool = True,
    ) -> None:
        self._node_name = node_name
        self._resources = resources
        self._clock = clock
        self._instruments = instruments
        self._admitted = instruments.admissions.labels(result="admitted")  # once: labels() costs per call
        self._recorder = recorder
        self._lock = asyncio.Lock()
        self._db = db
        # DRANodeAllocatableResources: a pod's nodeAllocatableResourceClaimStatuses count in admission
        self._table = PodTable(db, node_allocatable=node_allocatable)
        self._holdings = PodHoldings(node_name=node_name, admitters=admitters, cgroups=cgroups,
                                     node_allocatable=node_allocatable)
        self._lifecycle = PodLifecycle(
            table=self._table, lock=self._lock, clock=clock, recorder=recorder, release=self._release,
            ensure_secret_pulled=ensure_secret_pulled,
        )
        self._workers = PodWorkers(self._sync)
        self._starting = PodStarting(
            starters=starters,
            table=self._table,
            lock=self._lock,
            clock=clock,
            recorder=recorder,
            go_running=self._lifecycle.go_running,
            poke=self._workers.sync,
            containers_failed=self._lifecycle.containers_failed,
            retry_initial=retry_initial,
            retry_max=retry_max,
        )

    # The table's indexes, for tests that check them against a scan.
    @property
    def _by_uid(self) -> Mapping[str, PodEntry]:
        return self._table.by_uid

    @property
    def _requested(self) -> admission.RequestTotals:
        return self._table.requested

    # --- queries (PodsProvider and the admin API) ------------------------------------------

    def active_pods(self) -> list[Pod]:
        """Admitted pods that still run (they count for fit and hold resources)."""
        return list(self._table.active_pods())

    def all_pods(self) -> list[Pod]:
        return [e.pod for e in self._table.entries()]

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        entry = self._table.entry_for(f"{namespace}/{name}")
        return None if entry is None else entry.pod

    def is_active(self, uid: str) -> bool:
        """Whether the pod is admitted and not terminal (the kubelet's !isPodInactive)."""
        return self._table.is_active(uid)

    def get_pod_by_uid(self, uid: str) -> Pod | None:
        entry = self._table.entry(uid)
        return None if entry is None else entry.pod

    def get(self, namespace: str, name: str) -> PodView:
        entry = self._table.entry_for(f"{namespace}/{name}")
        if entry is None:
            raise NotFound(f'pods "{name}" not found')
        return PodView(entry.pod, entry.status)

    def list(self, namespace: str | None = None) -> list[PodView]:
        views = [PodView(e.pod, e.status) for e in self._table.entries()]
        if namespace is not None:
            views = [v for v in views if v.pod.namespace == namespace]
        return sorted(views, key=lambda v: (v.pod.namespace, v.pod.name))

    def status(self, uid: str) -> PodStatus:
        entry = self._table.entry(uid)
        if entry is None:
            raise NotFound(f"pod with uid {uid} not found")
        return entry.status

    def generation(self) -> int:
        return self._table.generation()

    def pending_uids(self) -> tuple[str, ...]:
        """Uids of admitted pods still waiting for their starters."""
        return self._starting.pending_uids()

    # --- changes ---------------------------------------------------------------------------

    async def apply(self, pod: Pod, *, wait: bool = True) -> tuple[Pod, str]:
        """Create, update metadata, replace (static pods) or refuse a spec change, like the API server.

        Returns the stored pod and one of created / unchanged / configured / replaced. A created
        pod is admitted or rejected (then it is Failed with the reason); either way its record
        is committed before this returns. An admitted pod's first start attempt runs in its
        worker; `wait` answers after that attempt, else at once (the node sync must not wait
        for one pod's prepare before it admits the next).
        """
        if not pod.node_name:
            # Everything applied to this node is bound to it, as the scheduler would have done.
            pod = dataclasses.replace(pod, node_name=self._node_name)
        outcome = CREATED
        while True:
            async with self._lock:
                entry = self._table.entry_for(pod.key)
                if entry is None:
                    started = await self._add(pod)
                    break
                old = entry.pod
                if not (pod.source == "file" and old.source == "file"):
                    return self._update(entry, pod)
                if old.uid == pod.uid:
                    return old, UNCHANGED
                gone = await self._remove(entry)
            # The replaced static pod gives back what it holds before its successor is admitted.
            await gone
            outcome = REPLACED
        if wait and started is not None:
            await started
        return pod, outcome

    async def delete(self, namespace: str, name: str) -> Pod:
        """Stop the pod, forget it, and answer once it gave back what it holds.

        A start attempt in flight is cancelled first (its worker unprepares after it returned)."""
        async with self._lock:
            entry = self._table.entry_for(f"{namespace}/{name}")
            if entry is None:
                raise NotFound(f'pods "{name}" not found')
            gone = await self._remove(entry)
        await gone
        return entry.pod

    async def evict(self, pod: Pod, reason: str, message: str) -> None:
        """The eviction manager's kill: Failed with `reason`, resources released, pod kept visible."""
        async with self._lock:
            entry = self._table.entry(pod.uid)
            if entry is None:
                raise NotFound(f'pods "{pod.name}" not found')
            if entry.status.terminal:
                return
            self._lifecycle.cancel_timer(pod.uid)
            self._starting.stop_waiting(pod.uid)
            ref = ObjectRef.for_pod(entry.pod)
            entry.status = st.evicted_status(entry.status, reason, message, self._clock.now())
            entry.finish_at = None
            self._table.persist(entry)
            self._recorder.warning(ref, reason, message)
            async for c in chunked(entry.pod.containers, budget=TURN):
                self._killing(entry.pod, c.name, init=False)
            logger.info("pod evicted pod=%s uid=%s reason=%s", entry.pod.key, pod.uid, reason)
            released = self._workers.terminate(pod.uid, lambda: self._give_back(entry))
        await released

    async def kill(self, uid: str) -> asyncio.Future[None] | None:
        """Terminate a pod deleted from the API (its deletionTimestamp set), keeping its entry.

        The containers stop (Killing events, the terminal status of status.killed_status, durable
        before this returns) and the pod gives back what it holds in its worker; the future is
        done once it did (the kubelet's SyncTerminatedPod: what its status manager waits for
        before the final DELETE). None when the pod is unknown; a pod already terminal or
        already killed answers its release (done at once when nothing is held)."""
        async with self._lock:
            entry = self._table.entry(uid)
            if entry is None:
                return None
            self._lifecycle.cancel_timer(uid)
            self._starting.stop_waiting(uid)
            if not entry.status.terminal:
                # a set, not a scan per container: 10,000 containers took 20 s of the event loop (issue 25)
                running = {cs.name for cs in entry.status.container_statuses if cs.state == "running"}
                async for c in chunked(entry.pod.containers, budget=TURN):
                    if c.name in running:
                        self._killing(entry.pod, c.name, init=False)
                entry.status = await sized_call(len(entry.pod.containers) + len(entry.pod.init_containers),
                                                st.killed_status, entry.pod, entry.status, self._clock.now())
                entry.finish_at = None
                await self._table.persist_async(entry)
                logger.info("pod killed pod=%s uid=%s phase=%s", entry.pod.key, uid, entry.status.phase)
            return self._workers.terminate(uid, lambda: self._give_back(entry))

    def released(self, uid: str) -> bool:
        """Whether the pod holds nothing any more (or is unknown): its termination is complete."""
        entry = self._table.entry(uid)
        return entry is None or not entry.holds_resources

    async def set_resource_health(
        self, uid: str, container: str, statuses: Sequence[ResourceStatus], *, replace: bool = False
    ) -> bool:
        """Update a container's allocatedResourcesStatus (merge by name, or replace all).

        Returns True when the status changed; the change is persisted. No event: the kubelet's
        device and DRA managers post none for a health change (the status is what users see).
        Unknown pods or containers are ignored.
        """
        async with self._lock:
            entry = self._table.entry(uid)
            if entry is None:
                return False
            new = st.with_resource_status(entry.status, container, statuses, replace=replace)
            if new == entry.status:
                return False
            entry.status = new
            self._table.persist(entry)
            return True

    async def on_resource_health(self, uid: str, container: str, statuses: Sequence[ResourceStatus]) -> None:
        """HealthCallback shape for the device/DRA managers: merge the statuses by resource name."""
        await self.set_resource_health(uid, container, statuses)

    async def on_pod_resource_health(self, uid: str, statuses: Sequence[ResourceStatus]) -> None:
        """Pod-level allocatedResourcesStatus (DRA claims no container references), merged by name."""
        async with self._lock:
            entry = self._table.entry(uid)
            if entry is None:
                return
            new = st.with_pod_resource_status(entry.status, statuses, replace=False)
            if new == entry.status:
                return
            entry.status = new
            self._table.persist(entry)

    async def retry_pending(self, *, wait: bool = True) -> None:
        """Try every pod waiting for its starters now (claims or drivers changed); `wait` answers
        after those attempts, else once they are asked of the pods' workers."""
        async with self._lock:
            passes = self._starting.retry_all()
        if wait and passes:
            await asyncio.gather(*passes)

    # --- start and stop ------------------------------------------------------------------

    async def restore(self) -> int:
        """Reload pods and statuses from the database (no re-admission); restart finish timers."""
        async with self._lock:
            count = 0
            for entry in self._table.restore():
                uid, status = entry.pod.uid, entry.status
                if entry.finish_at is not None and entry.holds_resources and not status.terminal:
                    self._lifecycle.start_timer(uid, entry.finish_at - self._clock.now())
                if entry.holds_resources and status.phase == PENDING:
                    # A prepare may have been in flight at the crash: simply repeat it (idempotent).
                    self._starting.resume(uid)
                count += 1
            logger.info("pods restored count=%d", count)
            return count

    async def run(self) -> None:
        """Keep the manager's timers alive until cancelled; then stop them."""
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()

    async def close(self) -> None:
        timers = self._lifecycle.take_tasks() + self._starting.take_tasks()
        await cancel_and_wait(timers)
        await self._workers.close()

    # --- internals -----------------------------------------------------------------------

    async def _add(self, pod: Pod) -> asyncio.Future[None] | None:
        """Admit (or reject) and store a new pod; lock held. The future is its first start attempt.

        The resource managers' writes are staged (state/batch.py) and committed with the pod's
        record, in one transaction, before the answer; a refusal drops them (the managers'
        rollbacks commit on their own)."""
        qos = pod_qos(pod)
        now = self._clock.now()
        with batch.batch(self._db) as staged:
            result = await self._admit(pod)
        if not result.admit:
            self._reject(pod, qos, result.reason or UNEXPECTED_ADMISSION_ERROR, result.message, now)
            return None
        await self._holdings.create_cgroup(pod, qos)
        started = self._starting.ready_now(pod) if self._starting.has_starters else START_READY
        try:
            if started is not None:
                # Nothing to prepare (no starters, or none with work for this pod): Running at once.
                entry = PodEntry(pod, PodStatus(qos_class=qos), holds_resources=True)
                await self._lifecycle.go_running(entry, started, store=True, staged=staged)
            else:
                # Known (and durable) as Pending before the starters run, so a crash mid-prepare
                # leaves a pod that is retried on restart.
                entry = PodEntry(pod, st.pending_status(pod, qos, "", now), holds_resources=True)
                await self._table.store_async(entry, staged)
        except sqlite3.Error as err:
            # Nothing of the admission is durable: give it all back and refuse, as the kubelet's
            # resource managers refuse when their checkpoint cannot be written.
            logger.error("pod admission commit failed pod=%s uid=%s err=%s", pod.key, pod.uid, err)
            await self._holdings.release_admitters(pod)
            self._holdings.remove_cgroup(pod, qos)
            self._reject(pod, qos, UNEXPECTED_ADMISSION_ERROR,
                         f"Allocate failed due to state commit failed: {err}, which is unexpected", now)
            return None
        self._admitted.inc()
        logger.info("pod admitted pod=%s uid=%s qos=%s", pod.key, pod.uid, qos)
        if started is not None:
            return None
        self._starting.begin(pod.uid)
        return self._workers.sync(pod.uid)

    def _reject(self, pod: Pod, qos: str, reason: str, message: str, now: float) -> None:
        """Store the refused pod as Failed with the reason (it stays listed, as with the kubelet)."""
        entry = PodEntry(pod, st.rejected_status(qos, reason, message, now), holds_resources=False)
        self._table.store(entry)
        self._instruments.admissions.labels(result=reason).inc()
        self._recorder.warning(ObjectRef.for_pod(pod), reason, message)
        logger.info("pod rejected pod=%s uid=%s reason=%s message=%s", pod.key, pod.uid, reason, message)

    async def _admit(self, pod: Pod) -> AdmitResult:
        """The kubelet's admission of one pod, in one place (lock held): the eviction manager's
        admit handler, every ResourceAdmitter in order, then the general predicates (holdings.py)."""
        active = self._table.active_pods()  # a tuple: no caller's copy to make
        node = self._resources.node_resources()
        requested = None if self._table.is_active(pod.uid) else self._table.requested.totals
        return await self._holdings.admit(pod, active=active, node=node, requested=requested)

    async def _sync(self, uid: str) -> None:
        """The pod worker's sync pass: one start attempt (starting.py)."""
        await self._starting.sync(uid)

    async def _release(self, entry: PodEntry) -> None:
        """A finished pod gives back what it holds, in its worker (after any sync of it)."""
        await self._workers.terminate(entry.pod.uid, lambda: self._give_back(entry))

    async def _give_back(self, entry: PodEntry, *, forget: bool = False) -> None:
        """Termination work, run in the pod's worker: the admitters' allocations and the cgroup
        (lock held, as admission), the starters' (DRA unprepare: never under the lock), then
        the starters forget a deleted pod. The entry's record is durable again afterwards."""
        pod = entry.pod
        if entry.holds_resources:
            async with self._lock:
                await self._holdings.release_admitters(pod)
            await self._starting.unprepare(pod)
            async with self._lock:
                self._holdings.remove_cgroup(pod, entry.status.qos_class)
                entry.holds_resources = False
                if self._table.entry(pod.uid) is entry:
                    await self._table.persist_async(entry)
        if forget:
            self._starting.forget(pod)

    async def _remove(self, entry: PodEntry) -> asyncio.Future[None]:
        """Forget the pod (durably, lock held) and hand its release to its worker; the future is
        done once it gave everything back."""
        pod = entry.pod
        self._lifecycle.cancel_timer(pod.uid)
        self._starting.stop_waiting(pod.uid)
        running = entry.holds_resources and not entry.status.terminal
        await self._table.forget_async(pod)
        if running:
            for c in pod.containers:
                self._killing(pod, c.name, init=False)
        logger.info("pod deleted pod=%s uid=%s", pod.key, pod.uid)
        return self._workers.terminate(pod.uid, lambda: self._give_back(entry, forget=True))

    def _killing(self, pod: Pod, container: str, *, init: bool) -> None:
        """killContainer's event: about the container (its field path), the default message."""
        self._recorder.normal(ObjectRef.for_container(pod, container, init=init), "Killing",
                              f"Stopping container {container}")

    def _update(self, entry: PodEntry, pod: Pod) -> tuple[Pod, str]:
        updated = updates.updated_pod(entry.pod, pod)
        if updated is None:
            return entry.pod, UNCHANGED
        entry.pod = updated
        self._table.persist(entry)
        logger.info("pod updated pod=%s uid=%s", updated.key, updated.uid)
        return updated, CONFIGURED

