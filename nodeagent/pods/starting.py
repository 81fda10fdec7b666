"""Starting admitted pods: every PodStarter must answer ready before a pod goes Running.

A starter (DRA's NodePrepareResources) may refuse for a while (claims not allocated yet, a
driver not registered) or take up to its 45 s deadline. So a pod that is not ready stays
Pending with the starter's reason and is retried with backoff (1 s doubling to 30 s by
default), or at once when the manager is poked. Each attempt is a sync pass of the pod's own
worker (workers.py), and the manager's lock is held only to read and to commit, never while the
starters run: other pods, deletions and health updates must not wait for a slow prepare.
Kept apart from the manager because this retry state and its lock discipline are its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence

from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import PENDING, Pod, ResourceStatus
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.ports import PodStarter, StartResult
from nodeagent.pods.table import PodEntry, PodTable
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)


class PodStarting:
    """The starters, the admitted pods still waiting for them, and the tasks that retry those."""

    def __init__(
        self,
        *,
        starters: Sequence[PodStarter],
        table: PodTable,
        lock: asyncio.Lock,
        clock: Clock,
        recorder: EventRecorder,
        go_running: Callable[[PodEntry, StartResult], Awaitable[None]],
        poke: Callable[[str], Awaitable[None]],
        containers_failed: Callable[[PodEntry, StartResult], Awaitable[None]] | None = None,
        retry_initial: float,
        retry_max: float,
    ) -> None:
        self._starters = tuple(starters)
        self._table = table
        self._lock = lock  # the pod manager's lock: taken to read and to commit, never around starters
        self._clock = clock
        self._recorder = recorder
        self._go_running = go_running
        self._poke = poke  # ask the pod's worker for a sync pass (which runs `sync`)
        self._containers_failed = containers_failed  # a result with failed_containers: status and events
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        self._delays = Backoff(retry_initial, retry_max)
        # Admitted pods whose starters are not ready yet: uid -> the next backoff delay, and the
        # task that retries after that delay.
        self._pending: dict[str, float] = {}
        self._retries: dict[str, asyncio.Task[None]] = {}

    @property
    def has_starters(self) -> bool:
        return bool(self._starters)

    def pending_uids(self) -> tuple[str, ...]:
        return tuple(self._pending)

    def ready_now(self, pod: Pod) -> StartResult | None:
        """Every starter's ready answer for `pod` without a call out (`PodStarter.prepare_now`),
        merged; None when any of them must really prepare (or is not ready: the worker's
        pass reports why, with its event and retries)."""
        ready: list[StartResult] = []
        for starter in self._starters:
            result = starter.prepare_now(pod)
            if result is None or not result.ready:
                return None
            ready.append(result)
        return _merged(ready)

    def begin(self, uid: str) -> None:
        """A newly admitted (and stored, Pending) pod waits for its starters; the caller asks its
        worker for the first attempt."""
        self._pending[uid] = self._retry_initial

    def resume(self, uid: str) -> None:
        """Retry a restored Pending pod soon: a prepare may have been in flight at the crash."""
        self._pending[uid] = self._retry_initial
        self.schedule_retry(uid, 0.0)

    def retry_all(self) -> list[Awaitable[None]]:
        """Try every waiting pod now: one sync pass each, asked of their workers."""
        passes = []
        for uid in list(self._pending):
            task = self._retries.pop(uid, None)
            if task is not None:
                task.cancel()
            passes.append(self._poke(uid))
        return passes

    async def sync(self, uid: str) -> None:
        """The worker's sync pass: ask every starter; ready -> Running, else Pending with the
        reason and a retry later.

        The lock is held only to read the pod and to commit the outcome: a DRA prepare may take
        up to its 45 s deadline, and other pods, deletions and health updates must not wait for
        it. A pod that went away meanwhile is left alone: its termination, queued behind this
        pass in the same worker, unprepares whatever the starters prepared.
        """
        async with self._lock:
            entry = self._table.entry(uid)
            if entry is None or uid not in self._pending or not entry.holds_resources or entry.status.phase != PENDING:
                self._pending.pop(uid, None)
                return
            pod = entry.pod
        result = await self._start(pod)
        async with self._lock:
            await self._commit(uid, entry, result)

    async def _commit(self, uid: str, entry: PodEntry, result: StartResult) -> None:
        pod = entry.pod
        delay = self._pending.get(uid)
        if self._table.entry(uid) is not entry or delay is None or entry.status.phase != PENDING:
            return
        if result.ready:
            self._pending.pop(uid, None)
            await self._go_running(entry, result)
            logger.info("pod started pod=%s uid=%s", pod.key, uid)
            return
        if result.failed_containers and self._containers_failed is not None:
            # the kubelet records these at every attempt (startContainer runs at each sync)
            await self._containers_failed(entry, result)
        elif entry.status.message != result.message:
            entry.status = dataclasses.replace(entry.status, message=result.message)
            await self._table.persist_async(entry)
            self._recorder.warning(ObjectRef.for_pod(pod), result.reason or "FailedPrepare",
                                   result.event or result.message)
        logger.info("pod waiting to start pod=%s uid=%s reason=%s message=%s retry_in=%.1f",
                    pod.key, uid, result.reason, result.message, delay)
        self._pending[uid] = self._delays.next_delay(delay)
        self.schedule_retry(uid, delay)

    def stop_waiting(self, uid: str) -> None:
        """The pod terminates: no more attempts for it."""
        self._pending.pop(uid, None)
        self.cancel_retry(uid)

    async def unprepare(self, pod: Pod) -> None:
        for starter in reversed(self._starters):
            try:
                await starter.unprepare(pod)
            except Exception:
                # Unprepare failures are the starter's to retry; the pod is released regardless.
                logger.exception("pod starter unprepare failed pod=%s uid=%s", pod.key, pod.uid)

    def forget(self, pod: Pod) -> None:
        """The manager drops the pod for good."""
        for starter in self._starters:
            starter.forget(pod)

    def schedule_retry(self, uid: str, delay: float) -> None:
        self.cancel_retry(uid)
        self._retries[uid] = asyncio.get_running_loop().create_task(
            self._retry_later(uid, delay), name=f"pod-start-retry-{uid}"
        )

    def cancel_retry(self, uid: str) -> None:
        task = self._retries.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def take_tasks(self) -> list[asyncio.Task[None]]:
        """Hand over every pending retry task (for the manager's close) and forget them."""
        tasks = list(self._retries.values())
        self._retries.clear()
        return tasks

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
        return _merged(ready)

    async def _retry_later(self, uid: str, delay: float) -> None:
        await self._clock.sleep(delay)
        if self._retries.get(uid) is not asyncio.current_task():
            return  # superseded by a poke or a newer schedule
        del self._retries[uid]
        self._poke(uid)  # the pass runs in the pod's worker; this timer's work is done


def _merged(ready: Sequence[StartResult]) -> StartResult:
    """The starters' ready answers as one: resource statuses per container and pod-level, in order."""
    merged: dict[str, tuple[ResourceStatus, ...]] = {}
    pod_level: tuple[ResourceStatus, ...] = ()
    for r in ready:
        for container, statuses in r.container_resource_status.items():
            merged[container] = merged.get(container, ()) + tuple(statuses)
        pod_level += r.pod_resource_status
    return StartResult(True, container_resource_status=merged, pod_resource_status=pod_level)
