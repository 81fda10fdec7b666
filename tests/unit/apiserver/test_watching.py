"""The REST watch against the watch cache's semantics: initial events, resume, 410, initial-events-end
bookmark, periodic bookmarks, selector transitions and timeouts; in process over an in-memory store."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources
from nodeagent.apiserver.options import DeleteOptions, WriteOptions
from nodeagent.apiserver.registry import MERGE_PATCH, Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.selection import FieldSelector, parse_field_selector, parse_label_selector
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.apiserver.watching import INITIAL_EVENTS_END, RestWatch, WatchOptions
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, Selector, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.storeholding import held_by_a_worker

Event = dict[str, Any]
CATALOG = Catalog(builtin_resources())


def find(plural: str, group: str = "", version: str = "v1") -> Resource:
    found = CATALOG.find(group, version, plural)
    assert found is not None
    return found


CM, NS = find("configmaps"), find("namespaces")
SLICES_V1 = find("resourceslices", "resource.k8s.io")
SLICES_B1 = find("resourceslices", "resource.k8s.io", "v1beta1")
DEFS = builtin_definitions()
W = WriteOptions()


def make_registry(history: int = 20_000) -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock, history=history)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return Registry(store, Catalog(builtin_resources()), DEFS, builtin_strategies(), clock)


@pytest.fixture
def reg() -> Registry:
    return make_registry()


def put(reg: Registry, name: str, namespace: str = "default", **labels: str) -> None:
    """Create or relabel a ConfigMap."""
    if reg.store.peek("ConfigMap", namespace, name) is None:
        reg.create(CM, namespace, {"metadata": {"name": name, "labels": labels}}, W)
    else:
        reg.patch(CM, namespace, name, "", MERGE_PATCH, {"metadata": {"labels": labels or None}}, W)


async def collect(watch: RestWatch, count: int, timeout: float = 1.0) -> list[Event]:
    """Events until `count` arrived, the stream ended, or `timeout` passed."""
    out: list[Event] = []

    async def run() -> None:
        async for batch in watch.batches():
            # events already in the watched version may come through as the store's own WatchEvents
            out.extend(e if isinstance(e, dict) else {"type": e.type, "object": e.object} for e in batch)
            if len(out) >= count:
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(run(), timeout)
    return out


def summary(events: list[Event]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def watch(reg: Registry, namespace: str = "", labels: Selector | None = None, fields: FieldSelector | None = None,
          **opts: Any) -> RestWatch:
    return RestWatch(reg, CM, namespace, labels, fields, WatchOptions(**opts))


@pytest.mark.parametrize("rv", [None, 0])
async def test_unset_or_zero_resource_version_starts_with_added_events(reg: Registry, rv: int | None) -> None:
    put(reg, "a")
    put(reg, "b")
    w = watch(reg, resource_version=rv)
    later = asyncio.get_running_loop().call_later(0.02, put, reg, "c")
    events = await collect(w, 3)
    later.cancel()
    assert summary(events) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
    assert events[0]["object"]["apiVersion"] == "v1" and events[0]["object"]["kind"] == "ConfigMap"


async def test_resume_after_a_resource_version_replays_only_later_changes(reg: Registry) -> None:
    put(reg, "a")
    rv = reg.store.resource_version
    put(reg, "b")
    put(reg, "a", x="1")
    reg.delete(CM, "default", "b", DeleteOptions())
    events = await collect(watch(reg, resource_version=rv), 3)
    assert summary(events) == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert [int(e["object"]["metadata"]["resourceVersion"]) for e in events] == sorted(
        int(e["object"]["metadata"]["resourceVersion"]) for e in events)


async def test_too_old_resource_version_ends_with_410_error_event() -> None:
    reg = make_registry(history=2)
    for name in "abcde":
        put(reg, name)
    events = await collect(watch(reg, resource_version=1), 5)
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["status"], status["code"], status["reason"]) == ("Status", "Failure", 410, "Expired")
    assert status["message"].startswith("too old resource version: 1")


async def test_send_initial_events_ends_with_the_initial_events_end_bookmark(reg: Registry) -> None:
    put(reg, "a")
    put(reg, "b")
    rv = reg.store.resource_version
    w = watch(reg, resource_version=rv, send_initial_events=True, bookmarks=True)
    events = await collect(w, 3)
    assert summary(events)[:2] == [("ADDED", "a"), ("ADDED", "b")]
    end = events[2]
    assert end["type"] == "BOOKMARK"
    assert end["object"] == {"kind": "ConfigMap", "apiVersion": "v1",
                             "metadata": {"resourceVersion": str(rv), "annotations": {INITIAL_EVENTS_END: "true"}}}


async def test_send_initial_events_false_with_rv_zero_sends_no_initial_state(reg: Registry) -> None:
    put(reg, "a")
    w = watch(reg, resource_version=0, send_initial_events=False)
    later = asyncio.get_running_loop().call_later(0.02, put, reg, "b")
    events = await collect(w, 1)
    later.cancel()
    assert summary(events) == [("ADDED", "b")]


async def test_periodic_bookmarks_carry_the_latest_resource_version(reg: Registry) -> None:
    put(reg, "a")
    w = watch(reg, bookmarks=True, bookmark_interval=0.01, timeout=0.3)
    events = await collect(w, 4)
    assert events[0]["type"] == "ADDED"
    bookmarks = [e for e in events[1:] if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2
    assert bookmarks[0]["object"]["metadata"] == {"resourceVersion": str(reg.store.resource_version)}


async def test_no_bookmarks_unless_asked(reg: Registry) -> None:
    put(reg, "a")
    events = await collect(watch(reg, bookmark_interval=0.01, timeout=0.1), 10)
    assert summary(events) == [("ADDED", "a")]


async def test_timeout_ends_the_stream(reg: Registry) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    events = await collect(watch(reg, timeout=0.05), 10, timeout=2.0)
    assert events == []
    assert loop.time() - start < 1.0  # the stream ended by itself, not by collect's own timeout


async def test_label_selector_transitions_become_added_and_deleted(reg: Registry) -> None:
    put(reg, "in", app="web")
    put(reg, "out", app="db")
    w = watch(reg, labels=parse_label_selector("app=web"), resource_version=reg.store.resource_version)

    def changes() -> None:
        put(reg, "out", app="web")  # starts matching
        put(reg, "in", app="db")  # stops matching
        put(reg, "in", app="db", more="x")  # still not matching: nothing
        put(reg, "out", app="web", more="y")  # still matching: MODIFIED
        reg.delete(CM, "default", "in", DeleteOptions())  # not matching: nothing
        reg.delete(CM, "default", "out", DeleteOptions())

    later = asyncio.get_running_loop().call_later(0.02, changes)
    events = await collect(w, 4)
    later.cancel()
    assert summary(events) == [("ADDED", "out"), ("DELETED", "in"), ("MODIFIED", "out"), ("DELETED", "out")]


async def test_initial_events_honour_the_selector(reg: Registry) -> None:
    put(reg, "a", app="web")
    put(reg, "b", app="db")
    events = await collect(watch(reg, labels=parse_label_selector("app=web")), 2, timeout=0.1)
    assert summary(events) == [("ADDED", "a")]


async def test_field_selector_transitions(reg: Registry) -> None:
    getters = reg.behaviour(CM).strategy.field_getters()
    put(reg, "a")
    w = watch(reg, fields=parse_field_selector("metadata.name=b", getters, "ConfigMap", "v1"))
    def changes() -> None:
        put(reg, "b")
        put(reg, "c")

    later = asyncio.get_running_loop().call_later(0.02, changes)
    events = await collect(w, 1)
    later.cancel()
    assert summary(events) == [("ADDED", "b")]


async def test_namespace_scopes_the_watch(reg: Registry) -> None:
    reg.create(NS, "", {"metadata": {"name": "team"}}, W)
    put(reg, "a")
    put(reg, "b", "team")
    rv = reg.store.resource_version
    put(reg, "c")
    put(reg, "d", "team")
    events = await collect(watch(reg, "team", resource_version=rv), 1)
    assert summary(events) == [("ADDED", "d")]
    initial = await collect(watch(reg, "team"), 2)
    assert summary(initial) == [("ADDED", "b"), ("ADDED", "d")]


async def test_events_are_converted_to_the_watched_version(reg: Registry) -> None:
    body = {"metadata": {"name": "s"}, "spec": {"driver": "d", "pool": {"name": "p", "generation": 1,
                                                                        "resourceSliceCount": 1},
                                                "nodeName": "n1", "devices": [{"name": "g0", "attributes": {}}]}}
    reg.create(SLICES_V1, "", body, W)
    w = RestWatch(reg, SLICES_B1, "", None, None, WatchOptions())
    events = await collect(w, 1)
    assert events[0]["object"]["apiVersion"] == "resource.k8s.io/v1beta1"
    assert events[0]["object"]["spec"]["devices"] == [{"name": "g0", "basic": {}}]


async def test_closing_the_iterator_unsubscribes(reg: Registry) -> None:
    before = reg.store.subscribers()
    w = watch(reg, timeout=0.02)
    await collect(w, 1)
    assert reg.store.subscribers() == before


async def test_a_watch_starts_once_another_threads_transaction_is_committed_never_holding_the_loop(
        reg: Registry) -> None:
    """The start takes the store's lock: behind a worker's transaction (a huge pod's status write) it held
    the event loop for all of that transaction (issue 25); now it waits for it off the loop."""
    put(reg, "before")
    with held_by_a_worker(reg.store) as release:
        started = asyncio.ensure_future(collect(watch(reg), 1, timeout=5))
        await asyncio.sleep(0.05)  # the loop runs on meanwhile: the watch waits without holding it
        assert not started.done() and reg.store.loop_waits.count == 0
        await asyncio.to_thread(release)
        assert summary(await started) == [("ADDED", "before")]
    assert reg.store.loop_waits.count == 0
