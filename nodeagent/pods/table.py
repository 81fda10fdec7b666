"""The pod table: every pod on the node in memory, each change committed to the StateDB at once.

The manager answers a caller only after the pod's record is durable, and podresources clients
watch a generation to learn that pods or statuses changed; both rules live here so that no path
can change a pod without persisting it and bumping the generation. The table also keeps the
active set (admitted, holding resources, not terminal) in admission order with its requests
summed, so admission never rebuilds either from every pod. On start it reads the records back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import Pod, PodStatus
from nodeagent.pods import admission, records
from nodeagent.state.batch import WriteBatch
from nodeagent.state.db import StateDB
from nodeagent.util.yielding import CHUNK

logger = logging.getLogger(__name__)

BUCKET = "pods"


@dataclass(frozen=True)
class PodView:
    """A pod and its current status, as the admin API shows it."""

    pod: Pod
    status: PodStatus


@dataclass
class PodEntry:
    pod: Pod
    status: PodStatus
    holds_resources: bool  # admitted by every admitter and owns a cgroup
    finish_at: float | None = None  # wall-clock time of the simulated exit


async def _in_thread_then(write: Callable[[], None], then: Callable[[], None]) -> None:
    """`write` in a worker thread, then `then` on the loop once it succeeded. Cancelled while the
    thread runs, it still waits for `write` (which cannot be stopped) and does `then` if it
    succeeded before the cancellation goes on: memory never disagrees with a committed record."""
    done = asyncio.ensure_future(asyncio.to_thread(write))
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        await asyncio.wait({done})
        if done.exception() is None:
            then()
        raise
    then()


class PodTable:
    """Pods by uid and by namespace/name, their durable records, the active set and a generation."""

    def __init__(self, db: StateDB, *, node_allocatable: bool = False) -> None:
        self._db = db
        self._by_uid: dict[str, PodEntry] = {}
        self._by_key: dict[str, str] = {}
        self._generation = 0  # bumped on every change of pods or statuses (podresources Versioned)
        # The active pods in admission order, and their requests summed for the fit check. Kept by
        # account on every committed change (persist), a release and a removal.
        self._active: dict[str, PodEntry] = {}
        self._requested = admission.RequestTotals(node_allocatable)
        # Their pods, built once per change of the set: every admission passes them to the
        # admitters, and rebuilding the list per pod cost O(active pods) each time.
        self._active_pods: tuple[Pod, ...] | None = None

    # --- reads -----------------------------------------------------------------------------

    @property
    def by_uid(self) -> Mapping[str, PodEntry]:
        return self._by_uid

    @property
    def requested(self) -> admission.RequestTotals:
        return self._requested

    def generation(self) -> int:
        return self._generation

    def entry(self, uid: str) -> PodEntry | None:
        return self._by_uid.get(uid)

    def entry_for(self, key: str) -> PodEntry | None:
        """The entry of the pod named `key` (namespace/name), if any."""
        uid = self._by_key.get(key)
        return None if uid is None else self._by_uid[uid]

    def entries(self) -> list[PodEntry]:
        return list(self._by_uid.values())

    def active_entries(self) -> list[PodEntry]:
        """Admitted pods that still run, in admission order."""
        return list(self._active.values())

    def active_pods(self) -> tuple[Pod, ...]:
        """The pods of active_entries (an entry's pod changes only through persist)."""
        if self._active_pods is None:
            self._active_pods = tuple(e.pod for e in self._active.values())
        return self._active_pods

    def is_active(self, uid: str) -> bool:
        return uid in self._active

    # --- writes ----------------------------------------------------------------------------

    def store(self, entry: PodEntry, staged: WriteBatch | None = None) -> None:
        """Persist a new entry and index it (see persist for `staged`)."""
        self.persist(entry, staged)
        self._by_uid[entry.pod.uid] = entry
        self._by_key[entry.pod.key] = entry.pod.uid

    def persist(self, entry: PodEntry, staged: WriteBatch | None = None) -> None:
        """Commit the entry's record (before the caller answers) and account for it.

        With `staged` (the admission's writes of the resource managers, state/batch.py) the
        record is committed in the same transaction: one commit per admitted pod. Nothing is
        accounted when the commit fails (sqlite3.Error is raised)."""
        self._generation += 1
        uid = entry.pod.uid
        record = records.entry_to_record(
            entry.pod, entry.status, holds_resources=entry.holds_resources, finish_at=entry.finish_at
        )
        if staged is None:
            self._db.put(BUCKET, uid, record)
        else:
            staged.stage((BUCKET, uid), lambda txn: txn.put(BUCKET, uid, record))
            staged.commit()
        self.account(entry)

    async def store_async(self, entry: PodEntry, staged: WriteBatch | None = None) -> None:
        """store, with a big pod's record built and committed in a worker thread (persist_async)."""
        await self.persist_async(entry, staged)
        self._by_uid[entry.pod.uid] = entry
        self._by_key[entry.pod.key] = entry.pod.uid

    async def persist_async(self, entry: PodEntry, staged: WriteBatch | None = None) -> None:
        """persist, for callers on the event loop: the record of a pod of more than
        util.yielding.CHUNK containers is built, encoded and committed in a worker thread (the
        StateDB is thread-safe). A pod of 10,000 containers has a record of megabytes (its
        manifest, every container and status): building it, the SQLite write and the commit held
        the event loop 0.3-1.5 s at each of its status changes (issue 25). The caller still goes
        on only once the record is durable; cancelled meanwhile, it waits for the commit first,
        so the accounting never falls behind a committed record."""
        pod = entry.pod
        if len(pod.containers) + len(pod.init_containers) <= CHUNK:
            self.persist(entry, staged)
            return
        self._generation += 1
        await _in_thread_then(self._writer(entry, staged), lambda: self.account(entry))

    def _writer(self, entry: PodEntry, staged: WriteBatch | None) -> Callable[[], None]:
        """The record's commit, of the entry as it is now (its fields taken here, not when it runs)."""
        pod, status, holds, finish_at = entry.pod, entry.status, entry.holds_resources, entry.finish_at

        def write() -> None:
            record = records.entry_to_record(pod, status, holds_resources=holds, finish_at=finish_at)
            if staged is None:
                self._db.put(BUCKET, pod.uid, record)
            else:
                staged.stage((BUCKET, pod.uid), lambda txn: txn.put(BUCKET, pod.uid, record))
                staged.commit()

        return write

    def account(self, entry: PodEntry) -> None:
        """Keep the active set and its requests in step with the entry (see active_entries)."""
        uid = entry.pod.uid
        if entry.holds_resources and not entry.status.terminal:
            if uid in self._active or self._active_pods is None:
                self._active_pods = None  # its pod may have changed in place: rebuilt when asked
            else:
                self._active_pods += (entry.pod,)  # a newly admitted pod goes last, as in _active
            self._active[uid] = entry  # an entry already active keeps its place
            self._requested.add(entry.pod)
        else:
            if uid in self._active:
                self._active_pods = None
            self._active.pop(uid, None)
            self._requested.discard(uid)

    def forget(self, pod: Pod) -> None:
        """Delete the pod's record and drop it from every index."""
        self._db.delete(BUCKET, pod.uid)
        self._unindex(pod)

    async def forget_async(self, pod: Pod) -> None:
        """forget, for callers on the event loop: a big pod's record (persist_async) is deleted in
        a worker thread, as freeing its megabytes of pages held the loop too. Cancelled meanwhile,
        it waits for the delete first, so the indexes never keep a pod whose record is gone."""
        if len(pod.containers) + len(pod.init_containers) <= CHUNK:
            self.forget(pod)
            return
        await _in_thread_then(lambda: self._db.delete(BUCKET, pod.uid), lambda: self._unindex(pod))

    def _unindex(self, pod: Pod) -> None:
        del self._by_uid[pod.uid]
        self._active.pop(pod.uid, None)
        self._active_pods = None
        self._requested.discard(pod.uid)
        self._generation += 1
        if self._by_key.get(pod.key) == pod.uid:
            del self._by_key[pod.key]

    def restore(self) -> Iterator[PodEntry]:
        """Load every readable record (no re-admission), yielding each entry once it is indexed.

        Unreadable records are logged and skipped (their keys stay listed by unreadable_uids, so
        the caller can keep what those pods hold until they come back). The caller restarts what
        each entry needs (timers, start retries) before the next one is loaded.
        """
        for key, doc in self._db.items(BUCKET):
            try:
                records.check_version(doc, key)
                pod = records.pod_from_record(doc["pod"])
                status = records.status_from_record(doc["status"])
            except (NodeAgentError, KeyError, TypeError, ValueError) as err:
                logger.error("pod record unreadable, skipped key=%s err=%s", key, err)
                continue
            entry = PodEntry(pod, status, bool(doc.get("holdsResources")), doc.get("finishAt"))
            self._by_uid[pod.uid] = entry
            self._by_key[pod.key] = pod.uid
            self.account(entry)
            yield entry
            self._generation += 1


def unreadable_uids(db: StateDB, readable: Collection[str]) -> set[str]:
    """Uids whose pod record is stored but was not restored (unreadable: see PodTable.restore).

    Such a pod may still be bound to the node; the kubelet would re-admit it reusing its
    checkpointed devices and CPUs, so its holdings must not be released as those of a pod gone.
    """
    return {key for key, _ in db.items(BUCKET) if key not in readable}
