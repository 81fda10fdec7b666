"""ObjectStore: the control plane's embedded API server storage (SQLite file + in-memory cache).

Holds Kubernetes-shaped objects keyed by (kind, namespace, name) with the API server's
semantics (see txn.py for the write rules) and an in-process watch. The SQLite file is
the truth on disk; every committed object is also kept in memory, so reads never touch
SQLite and a write costs one small transaction. One process owns the file.

Copy policy: `get`, `list` and every write return deep copies the caller may change and
pass back to `update`. `peek` and `scan`, and `WatchEvent.object`, return the shared
committed objects for hot read paths: never mutate those (copy with `clone` first).

Threads: every method may be called from any thread; a re-entrant lock serialises writers
and readers. Writers are synchronous, meant to be called from asyncio code: a write returns
after its commit, and watch events are queued before it returns.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import random
import threading
from collections.abc import Awaitable, Callable, Collection, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeagent.errors import Unavailable
from nodeagent.state.marker import Marker
from nodeagent.store.interning import ValueInterner
from nodeagent.store.kinds import KindInfo, KindRegistry, Obj
from nodeagent.store.limits import StoredSize
from nodeagent.store.meta import Key, clone, generated_name
from nodeagent.store.selectors import Selector, as_selector
from nodeagent.store.sqlite import ObjectsDB
from nodeagent.store.storelock import LoopWaits, StoreLock
from nodeagent.store.txn import ApplyResult, FieldManagerHook, Transaction
from nodeagent.store.watch import (
    DEFAULT_HISTORY,
    DEFAULT_HISTORY_BYTES,
    DEFAULT_QUEUE_SIZE,
    DELETED,
    TooOldResourceVersion,
    Watch,
    WatchHub,
)
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

SelectorLike = Selector | str | Mapping[str, str] | None
_Objs = list[Obj]  # aliases: the `list` method shadows the builtin inside the class
_KeyedObjs = list[tuple[Key, Obj]]

OBJECTS_DB = "objects.db"
"""The store's file name inside the daemon's state directory."""


IndexValues = Callable[[Mapping[str, Any]], Iterable[Hashable]]


@dataclass
class _Index:
    """One secondary index of a kind: the values each object yields, and the objects per value."""

    values: IndexValues
    by_value: dict[Hashable, set[tuple[str, str]]]
    of_key: dict[tuple[str, str], frozenset[Hashable]]

    def put(self, key: tuple[str, str], obj: Mapping[str, Any] | None) -> None:
        for value in self.of_key.pop(key, ()):
            keys = self.by_value.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_value[value]
        if obj is None:
            return
        try:
            values = frozenset(self.values(obj))
        except Exception:  # a bug in the index function: never after a commit, index the object nowhere
            logger.exception("object store index failed key=%s", key)
            return
        if values:
            self.of_key[key] = values
            for value in values:
                self.by_value.setdefault(value, set()).add(key)


@dataclass(frozen=True)
class ObjectList:
    """A consistent list of objects and the resourceVersion it was taken at."""

    items: list[Obj]
    resource_version: int


FREE_POLL = 0.005
"""Seconds between two looks of `until_free` whether another thread still writes."""


class StoreBusy(Unavailable):
    """A transaction asked for without waiting (`wait=False`) while another thread holds the store."""


class ObjectStore:
    """Kubernetes-shaped objects in SQLite, with optimistic concurrency, finalizers, GC and watch."""

    def __init__(
        self,
        path: Path | str,
        kinds: KindRegistry,
        clock: Clock,
        *,
        rng: random.Random | None = None,
        history: int = DEFAULT_HISTORY,
        history_bytes: int = DEFAULT_HISTORY_BYTES,
        collect_orphans: bool = True,
        ttls: Mapping[str, float] | None = None,
    ) -> None:
        self.path = None if str(path) == ":memory:" else Path(path)
        self.kinds = kinds
        self.clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._lock = StoreLock()
        self._not_waiting = threading.local()
        """Set in a thread inside `not_waiting`: its transactions raise StoreBusy rather than wait."""
        self._db = ObjectsDB(path)
        self._cache: dict[str, dict[tuple[str, str], Obj]] = {}
        self._indexes: dict[str, dict[str, _Index]] = {}
        self._values = ValueInterner()
        """Equal values (strings, subtrees) of committed objects held once (interning.py)."""
        self.field_manager: FieldManagerHook | None = None
        """Records an in-process writer's managedFields (Transaction's `manager`): set by the API
        server, which holds the schemas; without one, in-process writes leave managedFields as they are."""
        self.stored_size: StoredSize | None = None
        """The stored (protobuf) size of a built-in kind's object, for the write size limit (limits.py):
        set by the API server, which holds the encoder; without one every kind is weighed as JSON."""
        self.go_fields: Callable[[str], Callable[[Obj, Obj | None], Obj] | None] | None = None
        """Per stored kind, the fill of the fields its Go types always write (apply/gozero.py), run
        after admission on every write: set by the API server, which holds the schemas; without one
        objects are stored as written."""
        self._ttls = dict(ttls or {})
        # Expiry of the kinds with a TTL (Events): each key's deadline on the monotonic clock, and a
        # heap of (deadline, key) whose entries are current only while they match the dict.
        self._deadlines: dict[Key, float] = {}
        self._expiries: list[tuple[float, Key]] = []
        start = clock.monotonic()
        for (kind, ns, name), obj in self._db.load():
            self._cache.setdefault(kind, {})[(ns, name)] = obj
            # what was stored before a restart gets a whole TTL again, as etcd's lessor renews every
            # lease when it starts (Promote)
            self._set_deadline((kind, ns, name), obj, start)
        self._rv = self._db.counter()
        self._hub = WatchHub(self._rv, history, history_bytes)
        self._tx_thread: int | None = None
        self._closed = False
        if collect_orphans:
            with self.transaction() as tx:
                count = tx.collect_garbage()
            if count:
                logger.info("object store collected orphans count=%d path=%s", count, self.path)

    @classmethod
    def memory(cls, kinds: KindRegistry, clock: Clock, **kwargs: Any) -> ObjectStore:
        """A store in an in-memory SQLite database (tests, one-shot tools)."""
        return cls(":memory:", kinds, clock, **kwargs)

    def read_marker(self) -> Marker | None:
        """The state marker shared with state.db (nodeagent/state/marker.py), checked at start."""
        with self._lock:
            return self._db.read_marker()

    def write_marker(self, marker: Marker) -> None:
        with self._lock:
            self._db.write_marker(marker)

    @property
    def busy(self) -> bool:
        """Whether another thread is inside a transaction now: a write from the event loop would
        wait for it (a worker thread's write of a pod of 10,000 containers takes a second and more
        on a loaded machine). Event-loop writers that can wait check this and write later or from
        a worker thread instead of holding the loop (issue 25). A hint, not a reservation."""
        holder = self._tx_thread
        return holder is not None and holder != threading.get_ident()

    async def until_free(self, sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                         poll: float = FREE_POLL) -> None:
        """Return once no other thread is inside a transaction (`busy`), looking every `poll` seconds: for
        an event-loop writer that can wait (a controller's round, a watch's start, a periodic reconcile),
        which would otherwise hold the loop, every socket with it, for a worker's whole transaction (a
        huge pod's status write, 0.1-1 s: issue 25). A hint, as `busy`: a worker may take the store right
        after; `not_waiting` is the race-free form for a caller that can do its work again."""
        while self.busy:
            await sleep(poll)

    @contextmanager
    def not_waiting(self) -> Iterator[None]:
        """Every transaction this thread begins in the block raises StoreBusy at once, nothing written, when
        another thread holds the store, as `transaction(wait=False)`: for an event-loop caller whose
        transaction is deep inside other code (an API write), which then does the same work again from a
        worker thread. Checking `busy` first leaves a race: a worker's huge write taking the store between
        the check and the transaction held the loop 0.3 s (issue 25)."""
        flag = self._not_waiting
        before = getattr(flag, "on", False)
        flag.on = True
        try:
            yield
        finally:
            flag.on = before

    @property
    def loop_waits(self) -> LoopWaits:
        """How often and how long an event loop's thread waited for this store's lock (storelock.py):
        zero while every writer on the loop keeps off the store when it is `busy`."""
        return self._lock.waits

    @property
    def resource_version(self) -> int:
        """The resourceVersion of the last committed write (0 for a new store)."""
        return self._rv

    # --- reads: copies ---

    def get(self, kind: str, namespace: str, name: str) -> Obj:
        """A copy of the object; NotFound with the API server's message."""
        with self._lock:
            return self._read_tx().get(kind, namespace, name)

    def try_get(self, kind: str, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._read_tx().try_get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None, selector: SelectorLike = None) -> _Objs:
        """Copies of the objects of a kind (namespace None: every namespace), sorted by namespace and name."""
        return [clone(o) for o in self.scan(kind, namespace, selector)]

    def list_with_version(
        self, kinds: Iterable[str], namespace: str | None = None, selector: SelectorLike = None
    ) -> ObjectList:
        with self._lock:
            items = [clone(o) for kind in kinds for o in self.scan(kind, namespace, selector)]
            return ObjectList(items, self._rv)

    def count(self, kind: str, namespace: str | None = None) -> int:
        """How many objects of a kind (in a namespace) are committed. Taken without the store's lock, as
        `scan`: the API's admission asks it on the event loop at every write (are there policy
        bindings?), and waited 0.4 s behind a worker thread's transaction of a huge pod (issue 25)."""
        info = self.kinds.get(kind)
        objs = self._cache.get(kind, {})
        if namespace is None:
            return len(objs)
        ns = self._ns(info, namespace)
        return sum(1 for k in list(objs) if k[0] == ns)  # the keys copied in one C call

    # --- reads: shared, read-only ---

    def generate_name(self, prefix: str) -> str:
        """`prefix` + the API server's five random characters (names.SimpleNameGenerator), from the
        store's generator: what an admission plugin names a thing it adds (a token volume)."""
        return generated_name(prefix, self._rng)

    def peek(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The committed object itself (no copy): must not be mutated.

        Taken without the store's lock: a worker thread's transaction of a huge object (a pod of
        10,000 containers: its SQLite write and commit) holds the lock for a second or more, and
        the event loop's reads (a GET, the node's own Node, Lease and pods) waited behind it (issue
        25). One object is one dict lookup, atomic under the GIL; _commit replaces an object by
        assignment after its SQLite commit, so a reader sees the old or the new one, never a mix."""
        info = self.kinds.get(kind)
        return self._cache.get(kind, {}).get((self._ns(info, namespace), name))

    def scan(self, kind: str, namespace: str | None = None, selector: SelectorLike = None) -> _Objs:
        """The committed objects themselves (no copies), sorted: read-only, for hot paths.

        Taken without the store's lock, as `peek`: the event loop's scans (the RBAC authorizer's
        bindings on every request) waited behind a worker thread's whole transaction of a huge
        object, its encoding for the size limit included (issue 25: 0.5-0.8 s per request). The
        kind's objects are copied out of the cache in one C call (atomic under the GIL); a scan
        that runs while another thread commits sees each object old or new. Readers that need a
        whole commit, or the resourceVersion with it, hold the lock (list_with_version, scan_and_watch)."""
        info = self.kinds.get(kind)
        ns = None if namespace is None else self._ns(info, namespace)
        sel = as_selector(selector)
        items = list(self._cache.get(kind, {}).items())
        items.sort()
        return [
            obj
            for k, obj in items
            if (ns is None or k[0] == ns) and (sel.empty or sel.matches(obj["metadata"].get("labels")))
        ]

    def add_index(self, kind: str, name: str, values: IndexValues) -> None:
        """Keep a secondary index `name` of `kind`: each committed object under every value
        `values(obj)` yields (hashable), updated at each commit. For readers that must not scan a
        kind per question (the Node authorizer: pods by what they reference on which node).
        `values` gets the shared committed object: it must not mutate it, and must be cheap."""
        with self._lock:
            self.kinds.get(kind)
            index = _Index(values, {}, {})
            for key, obj in self._cache.get(kind, {}).items():
                index.put(key, obj)
            self._indexes.setdefault(kind, {})[name] = index

    def indexed(self, kind: str, name: str, value: Hashable) -> _Objs:
        """The committed objects (shared, read-only) index `name` of `kind` holds under `value`."""
        with self._lock:
            index = self._indexes[kind][name]
            objs = self._cache.get(kind, {})
            return [objs[key] for key in sorted(index.by_value.get(value, ())) if key in objs]

    # --- writes: each its own transaction ---

    def create(self, obj: Mapping[str, Any], *, manager: str = "") -> Obj:
        with self.transaction(savepoints=False, manager=manager) as tx:
            return tx.create(obj)

    def update(self, obj: Mapping[str, Any], *, manager: str = "") -> Obj:
        """Replace spec and metadata (status is kept); Conflict when metadata.resourceVersion is stale."""
        with self.transaction(savepoints=False, manager=manager) as tx:
            return tx.update(obj)

    def update_status(self, obj: Mapping[str, Any], *, manager: str = "") -> Obj:
        """Replace only status; Conflict when metadata.resourceVersion is stale."""
        with self.transaction(savepoints=False, manager=manager) as tx:
            return tx.update_status(obj)

    def apply(self, obj: Mapping[str, Any]) -> ApplyResult:
        """Create, or replace spec, labels and annotations of the existing object (status kept)."""
        with self.transaction(savepoints=False) as tx:
            return tx.apply(obj)

    def delete(
        self, kind: str, namespace: str, name: str, *, resource_version: str | None = None, uid: str | None = None,
        copy: bool = True,
    ) -> Obj:
        """Delete (and collect dependents), or mark with deletionTimestamp while finalizers remain
        (`copy=False`: the object as left is answered read-only, Transaction.delete)."""
        with self.transaction(savepoints=False) as tx:
            return tx.delete(kind, namespace, name, resource_version=resource_version, uid=uid, copy=copy)

    def collect_garbage(self) -> int:
        with self.transaction(savepoints=False) as tx:
            return tx.collect_garbage()

    def ttl(self, kind: str) -> float:
        """Seconds an object of `kind` lives after its last write; 0: for ever."""
        ttl = self._ttls.get(kind)
        if ttl is not None:
            return ttl
        return self.kinds.get(kind).ttl if kind in self.kinds else 0.0

    def expire(self) -> int:
        """Delete every object whose TTL ran out since its last write (Events, kube-apiserver's
        --event-ttl: etcd deletes the key when its lease expires, finalizers or not, and watchers see
        DELETED); the number deleted. Cheap when nothing is due: one look at the heap's top."""
        now = self.clock.monotonic()
        with self._lock:
            due: list[tuple[float, Key]] = []
            while self._expiries and self._expiries[0][0] <= now:
                deadline, key = heapq.heappop(self._expiries)
                if self._deadlines.get(key) == deadline:
                    due.append((deadline, key))
            if not due:
                return 0
            try:
                with self.transaction(savepoints=False) as tx:
                    count = sum(tx.expire(key) for _, key in due)
            except BaseException:
                for entry in due:  # try again at the next sweep
                    heapq.heappush(self._expiries, entry)
                raise
            return count

    @contextmanager
    def transaction(self, *, savepoints: bool = True, manager: str = "", wait: bool = True) -> Iterator[Transaction]:
        """All writes in the block commit together at its end, or none if it raises.

        `wait` False: StoreBusy at once, nothing written, when another thread is inside a transaction
        (for the event loop's writers, which `busy` alone left a race: checked free, the lock taken
        by a worker's status write of a huge pod before theirs, they held the loop for its whole
        transaction, 0.9 s measured).

        `manager`: the in-process writer (the field manager kube-apiserver would record for the
        component's requests: kube-controller-manager, kube-scheduler, kubelet), whose creates and
        updates get their managedFields entry as through the API (field_manager); "" records none.

        Each operation is atomic by itself, so a caller may catch e.g. AlreadyExists and go
        on; an exception leaving the block rolls everything back. Watch events are published
        after the commit. Transactions do not nest (RuntimeError).
        """
        if not self._lock.acquire(blocking=wait and not getattr(self._not_waiting, "on", False)):
            raise StoreBusy("object store: another thread is writing")
        with self._lock:
            self._lock.release()  # held once, by the `with`
            if self._closed:
                raise Unavailable(f"object store {self.path or ':memory:'} is closed")
            if self._tx_thread is not None:
                raise RuntimeError("object store transactions do not nest")
            self._tx_thread = threading.get_ident()
            try:
                self._db.execute("BEGIN IMMEDIATE")
                tx = Transaction(self, self._db, self._rng, savepoints=savepoints, manager=manager)
                try:
                    yield tx
                    if any(ev.type == DELETED for ev in tx.events):
                        # Rows carry their resourceVersion, so the counter row matters only when
                        # the newest version may belong to a deleted object.
                        self._db.set_counter(tx.rv)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                self._commit(tx)
            finally:
                self._tx_thread = None

    # --- watch ---

    def watch(
        self, kinds: Collection[str] | None = None, *, since: int | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> Watch:
        """Events committed after now (or after `since`, replayed from history); needs a running loop."""
        with self._lock:
            if kinds is not None:
                for kind in kinds:
                    self.kinds.get(kind)
            return self._hub.subscribe(kinds, current=self._rv, since=since, maxsize=maxsize)

    def list_and_watch(
        self, kinds: Collection[str], *, namespace: str | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> tuple[ObjectList, Watch]:
        """A list of the kinds and a watch starting exactly after it: nothing missed, nothing twice."""
        with self._lock:
            listed = self.list_with_version(kinds, namespace)
            return listed, self.watch(kinds, maxsize=maxsize)

    def shared_list_and_watch(
        self, kinds: Collection[str], *, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> tuple[_Objs, Watch]:
        """list_and_watch without the copies: the committed objects of the kinds (shared, read-only, as
        the watch's events carry them) and a watch starting exactly after them. For readers that treat
        the listed objects as they treat events (the control plane's components: their load is their
        ADDED handling). Why: a component keeps the objects it was listed (the scheduler's nodes), and
        list_and_watch's copies stayed beside the store's own for as long as an object did not change,
        one more full copy per component and object (500 nodes: ~4.5 MiB in the scheduler alone)."""
        with self._lock:
            return [o for kind in kinds for o in self.scan(kind)], self.watch(kinds, maxsize=maxsize)

    def scan_and_watch(
        self, kind: str, *, namespace: str | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> tuple[_Objs, int, Watch]:
        """The committed objects of a kind (shared, read-only, sorted), the resourceVersion they
        were read at, and a watch starting exactly after it: the REST watch's initial events
        without copying every object."""
        with self._lock:
            return self.scan(kind, namespace), self._rv, self.watch((kind,), maxsize=maxsize)

    def scan_at_and_watch(
        self, kind: str, since: int, *, namespace: str | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> tuple[_Objs, Watch]:
        """The objects of a kind as they were at `since` (shared, read-only, sorted) and a watch replaying
        every change after it: a watch resumed at `since` with a selector tells from them what matched
        then. TooOldResourceVersion when the history no longer reaches back (WatchHub.states_at)."""
        with self._lock:
            watch = self.watch((kind,), since=since, maxsize=maxsize)
            try:
                then = self._hub.states_at(kind, since)
            except TooOldResourceVersion:
                watch.close()
                raise
            ns = None if namespace is None else self._ns(self.kinds.get(kind), namespace)
            objs: dict[tuple[str, str], Any] = {
                (str(o["metadata"].get("namespace") or ""), str(o["metadata"]["name"])): o
                for o in self.scan(kind, namespace)
            }
            for key, obj in then.items():
                if ns is not None and key[0] != ns:
                    continue
                if obj is None:
                    objs.pop(key, None)
                else:
                    objs[key] = obj
            return [objs[k] for k in sorted(objs)], watch

    def subscribers(self) -> int:
        return self._hub.subscribers()

    def watch_history(self) -> tuple[int, int]:
        """(events, estimated bytes) the watch history holds: bounded by `history` and `history_bytes`."""
        return self._hub.history_usage()

    def close(self) -> None:
        """End every watch and close the file; later calls raise Unavailable."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._hub.close_all()
            self._db.close()

    # --- for Transaction ---

    def _ns(self, info: KindInfo, namespace: str) -> str:
        if not info.namespaced:
            return ""
        return namespace or "default"

    def _committed(self, key: Key) -> Obj | None:
        return self._cache.get(key[0], {}).get((key[1], key[2]))

    def _kind_objects(self, kind: str) -> dict[tuple[str, str], Obj]:
        return self._cache.get(kind, {})

    def _all_committed(self) -> _KeyedObjs:
        return [((kind, ns, name), obj) for kind, objs in self._cache.items() for (ns, name), obj in objs.items()]

    def _read_tx(self) -> Transaction:
        """A read-only view of the committed state (no SQLite transaction is opened)."""
        if self._closed:
            raise Unavailable(f"object store {self.path or ':memory:'} is closed")
        return Transaction(self, self._db, self._rng, savepoints=False)

    def _set_deadline(self, key: Key, obj: Obj | None, now: float) -> None:
        """The key's expiry after a write (`obj`) or a removal (None), for kinds with a TTL."""
        ttl = self.ttl(key[0])
        if ttl <= 0:
            return
        if obj is None:
            self._deadlines.pop(key, None)
            return
        deadline = now + ttl
        self._deadlines[key] = deadline
        heapq.heappush(self._expiries, (deadline, key))
        if len(self._expiries) > 2 * len(self._deadlines) + 1024:
            # every write of an Event pushes an entry and the replaced ones wait for their old deadline:
            # bound the heap to the live deadlines (an Event bumped thousands of times an hour)
            self._expiries = [(d, k) for k, d in self._deadlines.items()]
            heapq.heapify(self._expiries)

    def _commit(self, tx: Transaction) -> None:
        now = self.clock.monotonic()
        for (kind, ns, name), obj in tx.overlay.items():
            self._set_deadline((kind, ns, name), obj, now)
            objs = self._cache.setdefault(kind, {})
            for index in self._indexes.get(kind, {}).values():
                index.put((ns, name), obj)
            if obj is None:
                objs.pop((ns, name), None)
            else:
                objs[(ns, name)] = obj
        self._rv = tx.rv
        self._hub.publish(tx.events)
