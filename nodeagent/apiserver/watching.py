"""The REST watch: initial events, changes after a resourceVersion, bookmarks, selectors, timeouts.

Why apart from the registry: a watch is a long-lived stream with its own rules (k8s.io/apiserver
watch cache semantics): resourceVersion unset or "0" starts with ADDED events for what exists;
a given resourceVersion replays the store's history after it, or ends at once with an ERROR
event carrying 410 Expired ("too old resource version") when the history no longer reaches
back; sendInitialEvents=true sends the current state then a BOOKMARK annotated
`k8s.io/initial-events-end`; with selectors an object that stops matching is sent as DELETED
and one that starts matching as ADDED; allowWatchBookmarks adds periodic BOOKMARKs; a watcher
that falls too far behind ends with 410 so it relists. Nothing here knows HTTP.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.catalog import Resource
from nodeagent.apiserver.errors import status_object
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.selection import FieldSelector
from nodeagent.store.selectors import Selector
from nodeagent.store.watch import DELETED, RESYNC, TooOldResourceVersion, Watch, WatchEvent

Event = dict[str, Any] | WatchEvent
"""A watch event for the client: a dict {type, object}, or the store's own WatchEvent when the
object goes out unchanged (the storage version, no selector transition), so that the HTTP edge
can encode it once for every watcher (it is the same instance for all of them)."""
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
MAX_BATCH = 512


@dataclass(frozen=True)
class WatchOptions:
    resource_version: int | None = None
    send_initial_events: bool | None = None
    bookmarks: bool = False
    timeout: float | None = None
    bookmark_interval: float = 30.0
    queue_size: int = 100_000


class RestWatch:
    """One client's watch; iterate `batches()` for lists of watch events ({type, object})."""

    def __init__(self, registry: Registry, res: Resource, namespace: str, labels: Selector | None,
                 fields: FieldSelector | None, opts: WatchOptions) -> None:
        self._registry = registry
        self._res = res
        self._namespace = namespace
        self._labels = labels if labels is not None and not labels.empty else None
        self._fields = fields if fields is not None and fields.requirements else None
        self._getters = registry.behaviour(res).strategy.field_getters()
        self._opts = opts
        self._matching: set[tuple[str, str]] = set()
        self._last_rv = 0
        info = registry.store.kinds.get(res.store_kind)
        self._as_stored = res.store_kind == res.kind and info.api_versions[0] == res.api_version
        self._passthrough = self._as_stored and not namespace and self._labels is None and self._fields is None

    def _matches(self, obj: Mapping[str, Any]) -> bool:
        md = obj.get("metadata") or {}
        if self._labels is not None and not self._labels.matches(md.get("labels")):
            return False
        return self._fields is None or self._fields.matches(obj, self._getters)

    def _event(self, type_: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        return {"type": type_, "object": self._registry.from_store(self._res, obj)}

    def bookmark(self, *, initial_end: bool = False) -> dict[str, Any]:
        md: dict[str, Any] = {"resourceVersion": str(self._last_rv)}
        if initial_end:
            md["annotations"] = {INITIAL_EVENTS_END: "true"}
        return {"type": "BOOKMARK", "object": {"kind": self._res.kind, "apiVersion": self._res.api_version,
                                               "metadata": md}}

    def _expired(self, message: str) -> dict[str, Any]:
        return {"type": "ERROR", "object": status_object(410, "Expired", message)}

    async def batches(self) -> AsyncGenerator[list[Event], None]:
        store = self._registry.store
        kind = self._res.store_kind
        ns = self._namespace or None
        rv = self._opts.resource_version
        send_initial = self._opts.send_initial_events
        if send_initial is None:
            send_initial = rv is None or rv == 0
        await store.until_free()  # the start takes the store's lock: not on the loop behind a worker's write
        if send_initial or rv is None or rv == 0:
            objs, self._last_rv, watch = store.scan_and_watch(kind, namespace=ns, maxsize=self._opts.queue_size)
            initial = [o for o in objs if self._matches(o)]
            self._matching = {_key(o) for o in initial}
            if send_initial:
                for start in range(0, len(initial), MAX_BATCH):
                    yield [self._event("ADDED", o) for o in initial[start:start + MAX_BATCH]]
                if self._opts.send_initial_events and self._opts.bookmarks:
                    yield [self.bookmark(initial_end=True)]
        else:
            try:
                if self._labels is None and self._fields is None:
                    watch = store.watch((kind,), since=rv, maxsize=self._opts.queue_size)
                else:
                    # what matched at rv, not now: a change after rv to an object that then matched
                    # and no longer does is a DELETED, as the watch cache's previous object tells
                    then, watch = store.scan_at_and_watch(kind, rv, namespace=ns, maxsize=self._opts.queue_size)
                    self._matching = {_key(o) for o in then if self._matches(o)}
            except TooOldResourceVersion as err:
                yield [self._expired(_too_old_text(str(err), rv))]
                return
            self._last_rv = rv
        try:
            async for batch in self._follow(watch):
                yield batch
        finally:
            watch.close()

    async def _follow(self, watch: Watch) -> AsyncIterator[list[Event]]:
        loop = asyncio.get_running_loop()
        deadline = None if self._opts.timeout is None else loop.time() + self._opts.timeout
        # spread bookmarks of many watchers over time, as the watch cache does
        next_bookmark = loop.time() + self._opts.bookmark_interval * (0.5 + random.random() / 2)
        it = watch.__aiter__()
        while True:
            now = loop.time()
            if deadline is not None and now >= deadline:
                return
            events = watch.drain(MAX_BATCH)
            if not events:
                wait = next_bookmark - now if self._opts.bookmarks else None
                if deadline is not None:
                    wait = deadline - now if wait is None else min(wait, deadline - now)
                try:
                    # asyncio.timeout, not wait_for: no task per wakeup (hundreds of watchers)
                    async with asyncio.timeout(wait):
                        first = await it.__anext__()
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if self._opts.bookmarks and loop.time() >= next_bookmark:
                        next_bookmark = loop.time() + self._opts.bookmark_interval
                        yield [self.bookmark()]
                    continue
                events = [first, *watch.drain(MAX_BATCH - 1)]
            if self._passthrough and events[-1].type != RESYNC:
                # every event goes out as stored (RESYNC can only be the last one)
                self._last_rv = events[-1].resource_version
                yield list(events)
                continue
            out: list[Event] = []
            for ev in events:
                if ev.type == RESYNC:
                    out.append(self._expired("the watcher fell behind: too old resource version"))
                    yield out
                    return
                self._last_rv = ev.resource_version
                converted = self._translate(ev)
                if converted is not None:
                    out.append(converted)
            if out:
                yield out

    def _translate(self, ev: WatchEvent) -> Event | None:
        obj = ev.object
        if self._namespace and (obj.get("metadata") or {}).get("namespace") != self._namespace:
            return None
        if self._labels is None and self._fields is None:
            return ev if self._as_stored else self._event(ev.type, obj)
        key = _key(obj)
        was = key in self._matching
        if ev.type == DELETED:
            self._matching.discard(key)
            return self._event(DELETED, obj) if was else None
        now = self._matches(obj)
        if now:
            self._matching.add(key)
            return self._event("ADDED" if not was else ev.type, obj)
        if was:
            self._matching.discard(key)
            return self._event(DELETED, obj)
        return None


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


def _too_old_text(err: str, rv: int) -> str:
    if "newer" in err:
        return f"too large resource version: {rv}"
    return err if err.startswith("too old resource version") else f"too old resource version: {rv}"
