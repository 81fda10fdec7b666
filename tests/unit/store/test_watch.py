"""Watch: events after commit, in resourceVersion order, per subscriber, with list_and_watch and resync."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from nodeagent.store import (
    ADDED,
    DELETED,
    MODIFIED,
    RESYNC,
    ObjectStore,
    TooOldResourceVersion,
    Watch,
    WatchEvent,
)
from tests.unit.store.builders import claim, node, pod


def drain(watch: Watch) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    while (ev := watch.get_nowait()) is not None:
        out.append(ev)
    return out


def summary(events: list[WatchEvent]) -> list[tuple[str, str, str, int]]:
    return [(e.type, e.kind, e.name, e.resource_version) for e in events]


async def test_events_in_order_with_cascade(store: ObjectStore) -> None:
    w = store.watch()
    p = store.create(pod("p"))
    c = store.create(claim("c", owner=p))
    c["metadata"]["labels"] = {"a": "b"}
    store.update(c)
    store.delete("Pod", "default", "p")
    assert summary(drain(w)) == [
        (ADDED, "Pod", "p", 1),
        (ADDED, "ResourceClaim", "c", 2),
        (MODIFIED, "ResourceClaim", "c", 3),
        (DELETED, "Pod", "p", 4),
        (DELETED, "ResourceClaim", "c", 5),
    ]
    w.close()


async def test_event_object_carries_its_version(store: ObjectStore) -> None:
    w = store.watch({"Pod"})
    store.create(pod("p"))
    store.delete("Pod", "default", "p")
    added, deleted = drain(w)
    assert added.object["metadata"]["resourceVersion"] == "1"
    assert deleted.object["metadata"]["resourceVersion"] == "2"
    w.close()


async def test_async_iteration_and_kind_filter(store: ObjectStore) -> None:
    pods = store.watch({"Pod"})
    nodes = store.watch({"Node"})
    everything = store.watch(None)

    async def collect(w: Watch, n: int) -> list[str]:
        got: list[str] = []
        async for ev in w:
            got.append(f"{ev.type} {ev.kind}/{ev.name}")
            if len(got) == n:
                break
        return got

    tasks = [
        asyncio.create_task(collect(pods, 2)),
        asyncio.create_task(collect(nodes, 1)),
        asyncio.create_task(collect(everything, 3)),
    ]
    await asyncio.sleep(0)
    store.create(pod("a"))
    await asyncio.sleep(0)
    store.create(node("n1"))
    store.create(pod("b"))
    results = await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert results == [
        ["ADDED Pod/a", "ADDED Pod/b"],
        ["ADDED Node/n1"],
        ["ADDED Pod/a", "ADDED Node/n1", "ADDED Pod/b"],
    ]
    for w in (pods, nodes, everything):
        w.close()
    assert store.subscribers() == 0


async def test_rolled_back_transaction_publishes_nothing(store: ObjectStore) -> None:
    w = store.watch()
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.create(pod("a"))
        raise RuntimeError("abort")
    assert drain(w) == []
    with store.transaction() as tx:
        tx.create(pod("a"))
        tx.create(pod("b"))
        assert w.pending() == 0  # nothing before the commit
    assert summary(drain(w)) == [(ADDED, "Pod", "a", 1), (ADDED, "Pod", "b", 2)]
    w.close()


async def test_list_and_watch_misses_nothing_and_repeats_nothing(store: ObjectStore) -> None:
    store.create(pod("a"))
    store.create(node("n1"))
    listed, w = store.list_and_watch({"Pod"})
    assert [o["metadata"]["name"] for o in listed.items] == ["a"]
    assert listed.resource_version == 2
    store.create(pod("b"))
    assert summary(drain(w)) == [(ADDED, "Pod", "b", 3)]
    w.close()


async def test_shared_list_and_watch_lists_the_committed_objects_themselves(store: ObjectStore) -> None:
    """The control plane's components load from it: the store's own objects (what its watch events carry),
    not copies that stay beside them in a component's cache; then the watch, missing nothing."""
    store.create(pod("a"))
    store.create(node("n1"))
    store.create(claim("c"))
    listed, w = store.shared_list_and_watch(("Node", "Pod"))
    assert [(o["kind"], o["metadata"]["name"]) for o in listed] == [("Node", "n1"), ("Pod", "a")]
    assert listed[0] is store.peek("Node", "", "n1") and listed[1] is store.peek("Pod", "default", "a")
    store.create(pod("b"))
    store.create(claim("d"))
    assert summary(drain(w)) == [(ADDED, "Pod", "b", 4)]
    w.close()


async def test_watch_since_replays_history(store: ObjectStore) -> None:
    store.create(pod("a"))
    store.create(pod("b"))
    store.create(node("n"))
    w = store.watch({"Pod"}, since=1)
    store.create(pod("c"))
    assert summary(drain(w)) == [(ADDED, "Pod", "b", 2), (ADDED, "Pod", "c", 4)]
    w.close()


def _labels(objs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {o["metadata"]["name"]: o["metadata"].get("labels") for o in objs}


async def test_scan_at_gives_the_objects_as_they_were(store: ObjectStore) -> None:
    """A watch resumed at rv with a selector asks what matched then: objects changed after rv as they
    were at rv (added after: absent; deleted after: there), the others as they are."""
    store.create(pod("kept", labels={"v": "1"}))
    changed = store.create(pod("changed", labels={"v": "1"}))
    store.create(pod("gone", labels={"v": "1"}))
    store.create(pod("other", namespace="ns2", labels={"v": "1"}))
    rv = store.resource_version
    changed["metadata"]["labels"] = {"v": "2"}
    store.update(changed)
    store.delete("Pod", "default", "gone")
    store.create(pod("new", labels={"v": "1"}))
    then, w = store.scan_at_and_watch("Pod", rv, namespace="default")
    assert _labels(then) == {"changed": {"v": "1"}, "gone": {"v": "1"}, "kept": {"v": "1"}}
    assert [(e.type, e.name) for e in drain(w)] == [(MODIFIED, "changed"), (DELETED, "gone"), (ADDED, "new")]
    w.close()
    everywhere, w = store.scan_at_and_watch("Pod", rv)
    assert sorted(_labels(everywhere)) == ["changed", "gone", "kept", "other"]
    w.close()


async def test_scan_at_needs_the_history_of_what_changed(store: ObjectStore) -> None:
    """An object changed after rv whose state at rv the history no longer holds: 410, the watcher relists."""
    small = ObjectStore.memory(store.kinds, store.clock, history=2)
    a = small.create(pod("a", labels={"v": "1"}))
    small.create(pod("b"))
    small.create(pod("c"))
    then, w = small.scan_at_and_watch("Pod", 2)
    assert sorted(_labels(then)) == ["a", "b"]
    w.close()
    a["metadata"]["labels"] = {"v": "2"}
    small.update(a)
    with pytest.raises(TooOldResourceVersion, match=r"too old resource version: 3 \(2\)"):
        small.scan_at_and_watch("Pod", 3)
    assert small.subscribers() == 0
    small.close()


async def test_watch_since_too_old(store: ObjectStore) -> None:
    small = ObjectStore.memory(store.kinds, store.clock, history=2)
    for name in "abcd":
        small.create(pod(name))
    with pytest.raises(TooOldResourceVersion, match="too old resource version: 1"):
        small.watch(since=1)
    w = small.watch(since=2)
    assert [e.name for e in drain(w)] == ["c", "d"]
    with pytest.raises(TooOldResourceVersion):
        small.watch(since=99)
    small.close()


async def test_slow_subscriber_gets_resync_and_writers_do_not_block(store: ObjectStore) -> None:
    slow = store.watch({"Pod"}, maxsize=3)
    fast = store.watch({"Pod"})
    for i in range(10):
        store.create(pod(f"p{i}"))
    events = [ev async for ev in slow]  # ends after RESYNC
    assert [e.type for e in events] == [RESYNC]
    assert slow.overflowed
    assert len(drain(fast)) == 10
    assert store.subscribers() == 1
    fast.close()


async def test_close_ends_iteration(store: ObjectStore) -> None:
    w = store.watch()

    async def consume() -> list[str]:
        return [ev.name async for ev in w]

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    store.create(pod("a"))
    await asyncio.sleep(0)
    store.close()
    assert await asyncio.wait_for(task, 5) == ["a"]


async def test_events_from_another_thread_arrive_in_order(store: ObjectStore) -> None:
    w = store.watch({"Pod"})

    def writer() -> None:
        for i in range(50):
            store.create(pod(f"p{i}"))

    thread = threading.Thread(target=writer)
    thread.start()
    got: list[int] = []
    async for ev in w:
        got.append(ev.resource_version)
        if len(got) == 50:
            break
    thread.join()
    assert got == list(range(1, 51))
    w.close()


async def test_history_bounded_by_bytes_under_large_object_churn(store: ObjectStore) -> None:
    """A churn of ~100 KiB objects keeps the history under its byte budget (issue 15: 20,000 full
    copies were kept), and a watch from a version the budget forgot gets TooOldResourceVersion."""
    budget = 1024 * 1024
    big = ObjectStore.memory(store.kinds, store.clock, history_bytes=budget)
    filler = "x" * (100 * 1024)
    first = big.create(pod("big", annotations={"filler": filler}))
    for i in range(100):
        first["metadata"]["annotations"] = {"filler": filler, "i": str(i)}
        first = big.update(first)
    big.delete("Pod", "default", "big")
    events, size = big.watch_history()
    assert size <= budget
    assert 5 <= events < 20  # about ten 100 KiB copies fit in 1 MiB, not 102
    with pytest.raises(TooOldResourceVersion, match="too old resource version: 1"):
        big.watch(since=1)
    recent = big.resource_version - events
    w = big.watch(since=recent)
    replayed = drain(w)
    assert len(replayed) == events and replayed[-1].type == DELETED
    w.close()
    big.close()
