"""The shape the workload controllers share: a keyed work queue driven by loop.py.

Why: upstream's workload controllers (pkg/controller/{replicaset,deployment,daemon,statefulset,job})
each map informer events to owner keys, queue the keys (a key queued twice is synced once), and
sync one key at a time with rate-limited retries. `KeyedController` does that over the store's
watch: subclasses say which keys an event concerns (`keys_for`) and how to sync one (`sync`,
returning when to look again, or None). A sync that raises is retried with a per-key backoff
(5 ms doubling to 1000 s, client-go's default controller rate limiter's per-item part).
Synchronous; a loop.py Component. Clock injected.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name) of the object a controller owns
BASE_DELAY, MAX_DELAY = 0.005, 1000.0


class KeyedController:
    """Queue of owner keys with due times; `sync(key)` does one key's work."""

    name = "controller"

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._due: dict[Key, float] = {}  # key -> monotonic time it is due
        self._failures: dict[Key, int] = {}

    # --- loop.py Component ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        for key in self.keys_for(event_type, obj):
            self.enqueue(key)

    def work(self, limit: int) -> int:
        now = self.clock.monotonic()
        due = sorted((t, k) for k, t in self._due.items() if t <= now)[:limit]
        for _, key in due:
            del self._due[key]
            try:
                again = self.sync(key)
            except Exception as err:
                n = self._failures.get(key, 0)
                self._failures[key] = n + 1
                delay = min(BASE_DELAY * 2**n, MAX_DELAY)
                logger.warning("%s sync failed key=%s/%s retry_in=%.3fs err=%s", self.name, key[0], key[1], delay, err)
                self.enqueue(key, self.clock.monotonic() + delay)
                continue
            self._failures.pop(key, None)
            if again is not None:
                self.enqueue(key, self.clock.monotonic() + max(0.0, again - self.clock.now()))
        return len(due)

    def deadline(self) -> float | None:
        return min(self._due.values()) if self._due else None

    def idle(self) -> bool:
        due = self.deadline()
        return due is None or due > self.clock.monotonic()

    # --- for subclasses ---

    def enqueue(self, key: Key, at: float | None = None) -> None:
        """Queue `key` (now, or at the monotonic time `at`); an earlier due time wins."""
        when = self.clock.monotonic() if at is None else at
        cur = self._due.get(key)
        if cur is None or when < cur:
            self._due[key] = when

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        raise NotImplementedError

    def sync(self, key: Key) -> float | None:
        """One key's work; the wall-clock time (clock.now()) to look again, or None."""
        raise NotImplementedError


def owner_key(obj: Mapping[str, Any], kind: str) -> Key | None:
    """The key of the object's controller when it is of `kind`."""
    md = obj.get("metadata") or {}
    for ref in md.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") == kind:
            return (str(md.get("namespace") or "default"), str(ref.get("name") or ""))
    return None


def own_or_owner_key(obj: Mapping[str, Any], kind: str) -> list[Key]:
    """The keys an event of `obj` queues for a controller of `kind`: its own when it is one, else its
    controller's when that is one (a Job for the cronjob controller, a Pod for the job controller)."""
    if obj.get("kind") == kind:
        return [obj_key(obj)]
    key = owner_key(obj, kind)
    return [key] if key is not None else []


def obj_key(obj: Mapping[str, Any]) -> Key:
    md = obj.get("metadata") or {}
    return (str(md.get("namespace") or "default"), str(md.get("name") or ""))
