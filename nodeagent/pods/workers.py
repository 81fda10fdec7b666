"""Per-pod workers, as the kubelet's pod_workers.go: one task per pod uid, its updates coalesced.

Admission stays serial (the manager's lock, the kubelet's HandlePodAdditions), but what a pod
does afterwards, its sync (the starters: DRA's NodePrepareResources, up to 45 s) and its
termination (unprepare, release), runs in the pod's own worker. So pods prepare concurrently,
one hanging prepare stalls only its pod, and the work of one pod stays in order: updates that
arrive while a pass runs are coalesced into one more pass after it, and a termination cancels
a sync in flight (as the kubelet cancels the sync's context) and runs once that sync returned.
A worker task exists only while its pod has work; callers may await the pass they asked for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

SyncFn = Callable[[str], Coroutine[Any, Any, None]]
TerminateFn = Callable[[], Awaitable[None]]


@dataclass
class _Worker:
    uid: str
    sync_wanted: bool = False
    terminations: list[TerminateFn] = field(default_factory=list)  # asked for, not run yet
    terminating: bool = False  # once asked, the pod syncs no more
    sync_waiters: list[asyncio.Future[None]] = field(default_factory=list)
    terminate_waiters: list[asyncio.Future[None]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    syncing: asyncio.Task[None] | None = None  # the sync pass in flight, cancelled by a termination


class PodWorkers:
    """The node's pod workers: `sync` and `terminate` requests per uid, run in order per pod."""

    def __init__(self, sync: SyncFn) -> None:
        self._sync = sync
        self._workers: dict[str, _Worker] = {}
        self._closed = False

    def busy(self, uid: str) -> bool:
        """The pod's worker has work in flight or queued."""
        return uid in self._workers

    def sync(self, uid: str) -> asyncio.Future[None]:
        """Ask for one sync pass of the pod (coalesced with any not started yet); the future is
        done when a pass that started after this call ended, or the pod was terminated."""
        worker = self._worker(uid)
        fut = asyncio.get_running_loop().create_future()
        if worker.terminating:
            worker.terminate_waiters.append(fut)  # no more syncs once terminating
            return fut
        worker.sync_wanted = True
        worker.sync_waiters.append(fut)
        self._kick(worker)
        return fut

    def terminate(self, uid: str, work: TerminateFn) -> asyncio.Future[None]:
        """Stop syncing the pod (a sync in flight is cancelled) and run `work` after it.

        Terminations asked for while one runs (an eviction, then the delete) run after it, in order."""
        worker = self._worker(uid)
        fut = asyncio.get_running_loop().create_future()
        worker.terminate_waiters.append(fut)
        worker.terminations.append(work)
        if not worker.terminating:
            worker.terminating = True
            worker.sync_wanted = False
            worker.terminate_waiters.extend(worker.sync_waiters)
            worker.sync_waiters.clear()
            if worker.syncing is not None:
                worker.syncing.cancel()
        self._kick(worker)
        return fut

    async def close(self) -> None:
        """Cancel every worker (daemon stop); what was durable stays, restore picks it up."""
        self._closed = True
        tasks = [w.task for w in self._workers.values() if w.task is not None]
        await cancel_and_wait(tasks)
        for worker in self._workers.values():
            for fut in worker.sync_waiters + worker.terminate_waiters:
                if not fut.done():
                    fut.cancel()
        self._workers.clear()

    def _worker(self, uid: str) -> _Worker:
        worker = self._workers.get(uid)
        if worker is None:
            worker = self._workers[uid] = _Worker(uid)
        return worker

    def _kick(self, worker: _Worker) -> None:
        if worker.task is None and not self._closed:
            worker.task = asyncio.get_running_loop().create_task(self._run(worker), name=f"pod-worker-{worker.uid}")

    async def _run(self, worker: _Worker) -> None:
        try:
            while True:
                if worker.terminating:
                    while worker.terminations:
                        try:
                            await worker.terminations.pop(0)()
                        except Exception:
                            logger.exception("pod termination failed uid=%s", worker.uid)
                    # Whoever asked meanwhile (a second delete, a late sync) is answered too: done.
                    _resolve(worker.terminate_waiters + worker.sync_waiters)
                    worker.terminate_waiters, worker.sync_waiters = [], []
                    worker.sync_wanted = False
                    return
                if not worker.sync_wanted:
                    return
                worker.sync_wanted = False
                waiters, worker.sync_waiters = worker.sync_waiters, []
                worker.syncing = asyncio.get_running_loop().create_task(
                    self._sync(worker.uid), name=f"pod-sync-{worker.uid}")
                try:
                    await asyncio.wait({worker.syncing})
                    if not worker.syncing.cancelled() and worker.syncing.exception() is not None:
                        logger.error("pod sync failed uid=%s", worker.uid, exc_info=worker.syncing.exception())
                except asyncio.CancelledError:
                    await cancel_and_wait([worker.syncing])
                    for fut in waiters:
                        fut.cancel()
                    raise
                finally:
                    worker.syncing = None
                if not worker.terminating:
                    _resolve(waiters)
                else:
                    worker.terminate_waiters.extend(waiters)
        finally:
            worker.task = None
            if self._workers.get(worker.uid) is worker and not worker.sync_wanted:
                del self._workers[worker.uid]


def _resolve(waiters: list[asyncio.Future[None]]) -> None:
    for fut in waiters:
        if not fut.done():
            fut.set_result(None)
