"""The Pods API's pure rules: events from diffs, the sync gate, GetPod's not-found, watch fan-out."""

from __future__ import annotations

import asyncio

import pytest

from nodeagent.errors import FailedPrecondition, NotFound
from nodeagent.podsapi import model
from nodeagent.podsapi.model import ADDED, DELETED, MODIFIED, WatchDropped
from nodeagent.podsapi.source import PodsSource
from nodeagent.podsapi.watch import Broadcaster
from nodeagent.util.clock import FakeClock
from tests.unit.podsapi.fakes import FakePods, pod


def test_diff_added_modified_deleted_in_uid_order() -> None:
    old = {"b": pod("b", "pb"), "c": pod("c", "pc")}
    new = {"a": pod("a", "pa"), "b": pod("b", "pb", "Running"), "c": pod("c", "pc")}
    events = model.diff(old, new)
    assert [(e.type, e.uid) for e in events] == [(ADDED, "a"), (MODIFIED, "b")]
    gone = model.diff(new, {})
    assert [e.type for e in gone] == [DELETED] * 3
    assert gone[0].pod == {"metadata": {"name": "pa", "namespace": "default", "uid": "a"}}


def _source(view: FakePods, synced: bool = True) -> PodsSource:
    return PodsSource(view, synced=lambda: synced, clock=FakeClock())


def test_not_synced_is_failed_precondition() -> None:
    src = _source(FakePods(), synced=False)
    for call in (src.pods, lambda: src.get("x"), src.watch):
        with pytest.raises(FailedPrecondition, match=r"^Kubelet is initializing$"):
            call()


def test_list_sorted_by_uid_and_get_unknown() -> None:
    view = FakePods()
    view.put(pod("z", "last"))
    view.put(pod("a", "first"))
    src = _source(view)
    assert [p["metadata"]["name"] for p in src.pods()] == ["first", "last"]
    assert src.get("z")["metadata"]["name"] == "last"
    with pytest.raises(NotFound, match=r"^pod with UID nope not found$"):
        src.get("nope")


def test_reads_only_when_the_generation_moves() -> None:
    view = FakePods()
    view.put(pod("a", "pa"))
    src = _source(view)
    src.pods()
    src.pods()
    src.get("a")
    assert view.reads == 1
    view.put(pod("a", "pa", "Running"))
    assert src.get("a")["status"]["phase"] == "Running"
    assert view.reads == 2


async def test_watch_sees_existing_then_changes() -> None:
    view = FakePods()
    view.put(pod("a", "pa"))
    src = _source(view)
    initial, sub = src.watch()
    assert [p["metadata"]["uid"] for p in initial] == ["a"]
    view.put(pod("b", "pb"))
    view.put(pod("a", "pa", "Running"))
    src.refresh()
    view.remove("b")
    src.refresh()
    got = [await sub.next() for _ in range(3)]
    assert [(e.type, e.uid) for e in got] == [(MODIFIED, "a"), (ADDED, "b"), (DELETED, "b")]
    sub.close()
    assert src.broadcaster.watchers == 0


async def test_a_watcher_that_falls_behind_is_dropped() -> None:
    caster = Broadcaster(size=2)
    slow, fast = caster.subscribe(), caster.subscribe()
    events = [model.PodEvent(ADDED, str(i), pod(str(i), f"p{i}")) for i in range(3)]
    for ev in events:
        caster.publish([ev])
        if ev.uid != "2":
            await fast.next()
    assert caster.watchers == 1 and caster.dropped_total == 1
    await slow.next()
    await slow.next()
    with pytest.raises(WatchDropped, match=r"^watch client channel closed$"):
        await slow.next()
    assert (await fast.next()).uid == "2"


async def test_run_publishes_on_the_clock() -> None:
    clock = FakeClock()
    view = FakePods()
    src = PodsSource(view, synced=lambda: True, clock=clock, interval=0.05)
    _, sub = src.watch()
    task = asyncio.create_task(src.run())
    try:
        view.put(pod("a", "pa"))
        await asyncio.sleep(0)
        await clock.wait_for_sleepers()
        clock.advance(0.05)
        event = await asyncio.wait_for(sub.next(), 1)
        assert (event.type, event.uid) == (ADDED, "a")
    finally:
        task.cancel()
