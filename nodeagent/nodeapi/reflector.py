"""client-go's reflector over REST: list, then watch from the list's resourceVersion, for ever.

Why its own module: the node's view of its pods and claims is only as good as this loop, and a
control plane that freezes (SIGSTOP, a hung process, a proxy that stops forwarding without
closing) must not leave it blind. As client-go's reflector (tools/cache/reflector.go) it:
- asks every watch for a server-side timeout, random in [minWatchTimeout, 2 x minWatchTimeout]
  (5 to 10 minutes), so watches of many nodes do not end together, and watches again from the
  last resourceVersion when the server ends one (a 410 lists again);
- treats a watch that goes quiet as dead (the stream's liveness check in remote.py, the part of
  client-go's HTTP/2 health check an HTTP/1.1 stream can have) and lists again;
- retries a failed list or watch on a capped exponential backoff on the injected clock.
A server that cannot be reached is reported once by the client's reachability tracker
(reachability.py); this loop then logs only at DEBUG. Other failures (a refusal, a body that is
not a watch event) are logged here, once per run of failures.

QueueWatch is the node's PodWatch fed by one reflector task. Nothing here knows HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol

from nodeagent.nodeapi.ports import DELETED, SYNC, Gone, PodEvent
from nodeagent.nodeapi.reachability import Unreachable
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

MIN_WATCH_TIMEOUT = 300
"""client-go's defaultMinWatchTimeout (5 min): each watch asks for timeoutSeconds in [min, 2 x min]."""
BACKOFF_START, BACKOFF_CAP = 0.5, 10.0


class ListWatchClient(Protocol):
    """What a reflector needs of the REST client (RemoteAPI)."""

    @property
    def description(self) -> str: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def rng(self) -> random.Random: ...

    async def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = ()) -> Any: ...

    def stream(self, path: str, query: Sequence[tuple[str, str]], *,
               timeout_seconds: int) -> AsyncIterator[dict[str, Any]]: ...


def watch_timeout(rng: random.Random, minimum: int = MIN_WATCH_TIMEOUT) -> int:
    """timeoutSeconds of one watch request: random in [minimum, 2 x minimum], as client-go's reflector."""
    return int(minimum * (rng.random() + 1.0))


class QueueWatch:
    """PodWatch fed by a Reflector task."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[PodEvent] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    def put(self, event: PodEvent) -> None:
        self._queue.put_nowait(event)

    async def next(self) -> PodEvent:
        return await self._queue.get()

    def get_nowait(self) -> PodEvent | None:
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return None

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()


class Reflector:
    """list, then watch from the list's resourceVersion (bookmarks on); 410, a failure or a watch
    gone quiet: list again, after a backoff when it failed."""

    def __init__(self, api: ListWatchClient, path: str, field_selector: str, what: str, *,
                 on_list: Callable[[list[Mapping[str, Any]]], None],
                 on_event: Callable[[str, Mapping[str, Any]], None]) -> None:
        self._api = api
        self._path = path
        self._selector = field_selector
        self._what = what
        self._on_list = on_list
        self._on_event = on_event
        self.synced = asyncio.Event()
        self.lists = 0
        """Complete lists so far (the first one, then one per relist): tests read it."""
        self._failures = 0  # consecutive failed lists or watches: the backoff's count

    def _query(self) -> list[tuple[str, str]]:
        return [("fieldSelector", self._selector)] if self._selector else []

    async def run(self) -> None:
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP)
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except Gone:
                logger.info("watch expired (410): listing %s again", self._what)
                continue
            except Exception as err:
                self._failures += 1
                wait = backoff.delay(self._failures)
                if isinstance(err, Unreachable):  # the client's reachability tracker said so
                    level = logging.DEBUG
                else:
                    level = logging.WARNING if self._failures == 1 or self._failures % 20 == 0 else logging.DEBUG
                logger.log(level, "cannot watch %s api=%s err=%s (retry in %.1fs)", self._what,
                           self._api.description, err or type(err).__name__, wait)
                await self._api.clock.sleep(wait)

    async def _list_and_watch(self) -> None:
        listed = await self._api.request("GET", self._path, query=self._query())
        # list items carry no apiVersion and kind (kube-apiserver leaves them out): a pod without them is
        # refused by the node's validation ("apiVersion: Required value"), so every relist lost the pods
        type_meta = _type_meta(self._path)
        items: list[Mapping[str, Any]] = [{**type_meta, **i} for i in listed.get("items") or []
                                          if isinstance(i, Mapping)]
        self._on_list(items)
        self.lists += 1
        self._failures = 0
        self.synced.set()
        rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        while True:  # the server ended a watch (its timeout): watch again from where it was
            timeout = watch_timeout(self._api.rng)
            query = [*self._query(), ("watch", "true"), ("resourceVersion", rv),
                     ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout))]
            async for raw in self._api.stream(self._path, query, timeout_seconds=timeout):
                obj = raw.get("object") or {}
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                event = str(raw.get("type", ""))
                if event in ("ADDED", "MODIFIED", DELETED):
                    self._on_event(event, obj)


def _type_meta(path: str) -> dict[str, str]:
    """apiVersion and kind of the items of a list at `path` (/api/v1/pods, /apis/GROUP/VERSION/PLURAL)."""
    parts = [p for p in path.split("/") if p]
    version = parts[1] if parts[0] == "api" else f"{parts[1]}/{parts[2]}"
    kind = {"pods": "Pod", "resourceclaims": "ResourceClaim"}.get(parts[-1], "")
    return {"apiVersion": version, "kind": kind} if kind else {}


def queue_watch(api: ListWatchClient, spawn: Callable[..., asyncio.Task[None]], path: str, field_selector: str,
                what: str) -> QueueWatch:
    """A QueueWatch fed by a reflector that `spawn` runs: a SYNC with the list, then each event."""
    watch = QueueWatch()
    reflector = Reflector(api, path, field_selector, what,
                          on_list=lambda items: watch.put(PodEvent(SYNC, items=items)),
                          on_event=lambda kind, obj: watch.put(PodEvent(kind, obj)))
    watch.task = spawn(reflector.run(), f"watch {what}")
    return watch
