"""client-go tools/events (events.k8s.io/v1) as kube-scheduler posts its events: eventseries.py's
decisions (pure, time passed in) and events_v1.py's store writes and timers on a fake clock.

Upstream facts (client-go v0.37.2 tools/events event_broadcaster.go, event_recorder.go): the
name is `<regarding>.<%x of UnixNano>`; isomorphic events (type, action, reason, reporting
controller and instance, regarding with its resourceVersion, related; not the note) make a
series whose first repeat patches {count 2, lastObservedTime} and whose later repeats only count
in memory until the 30-minute refresh or the 6-minute finish writes them.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane import eventseries
from nodeagent.controlplane.events_v1 import NORMAL, WARNING, SeriesRecorder
from nodeagent.controlplane.eventseries import FINISH_TIME, REFRESH_TIME, SeriesCache, make_event
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.unit.controlplane.test_scheduler_support import make_store

T0 = 1_800_000_000.25


def _pod(name: str = "p", rv: str = "7") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}", "resourceVersion": rv}}


def _event(now: float, *, rv: str = "7", note: str = "no fit", reason: str = "FailedScheduling") -> dict[str, Any]:
    return make_event(_pod(rv=rv), type_=WARNING, reason=reason, action="Scheduling", note=note, now=now,
                      controller="default-scheduler", instance="default-scheduler-host")


def test_the_event_has_the_new_apis_fields_and_none_of_the_old_ones() -> None:
    e = _event(T0)
    assert e["metadata"] == {"name": f"p.{round(T0 * 1e9):x}", "namespace": "team"}
    assert e["eventTime"] == "2027-01-15T08:00:00.250000Z"
    assert e["involvedObject"] == {"kind": "Pod", "namespace": "team", "name": "p", "uid": "uid-p",
                                   "apiVersion": "v1", "resourceVersion": "7"}
    assert (e["reportingComponent"], e["reportingInstance"], e["action"]) == (
        "default-scheduler", "default-scheduler-host", "Scheduling")
    # what kube-apiserver's conversion reads of such an event as core/v1
    assert (e["source"], e["firstTimestamp"], e["lastTimestamp"]) == ({}, None, None)
    assert "count" not in e and "series" not in e and "related" not in e


def test_a_name_that_is_no_dns_subdomain_becomes_a_uuid() -> None:
    assert eventseries.event_name("p", 255) == "p.ff"
    name = eventseries.event_name("x" * 260, 255)
    assert len(name) == 36 and name.count("-") == 4


def test_first_repeat_patches_count_two_later_ones_count_in_memory() -> None:
    cache = SeriesCache()
    first = cache.observe(_event(T0), T0)
    assert first is not None and not first.patch and "series" not in first.event
    second = cache.observe(_event(T0 + 1, note="another note"), T0 + 1)
    assert second is not None and second.patch
    # the first event's name, time and note, with the series
    assert second.event["metadata"]["name"] == first.event["metadata"]["name"]
    assert second.event["message"] == "no fit"
    assert second.event["series"] == {"count": 2, "lastObservedTime": "2027-01-15T08:00:01.250000Z"}
    assert cache.observe(_event(T0 + 2), T0 + 2) is None
    assert cache.observe(_event(T0 + 3), T0 + 3) is None
    [refreshed] = cache.refresh()
    assert refreshed.patch and refreshed.event["series"]["count"] == 4


@pytest.mark.parametrize("other", [
    {"rv": "8"},  # another version of the pod: the reference differs
    {"reason": "Scheduled"},
])
def test_events_that_differ_in_the_key_are_not_a_series(other: dict[str, Any]) -> None:
    cache = SeriesCache()
    cache.observe(_event(T0), T0)
    write = cache.observe(_event(T0 + 1, **other), T0 + 1)
    assert write is not None and not write.patch
    assert len(cache) == 2


def test_finish_writes_a_quiet_series_once_and_forgets_it_and_lone_events_expire() -> None:
    cache = SeriesCache()
    cache.observe(_event(T0), T0)
    cache.observe(_event(T0 + 1), T0 + 1)
    cache.observe(_event(T0 + 2), T0 + 2)
    cache.observe(_event(T0, reason="Other"), T0)
    assert cache.finish(T0 + 2 + FINISH_TIME) == []  # the series: not quiet for longer than finishTime yet
    assert len(cache) == 1  # the lone event, older than finishTime: forgotten without a write
    [last] = cache.finish(T0 + 2.5 + FINISH_TIME)
    assert last.patch and last.event["series"]["count"] == 3
    assert len(cache) == 0
    again = cache.observe(_event(T0 + 1000), T0 + 1000)
    assert again is not None and not again.patch  # a new event, under a new name


def _recorder() -> tuple[FakeClock, ObjectStore, SeriesRecorder]:
    clock = FakeClock(start=T0)
    store = make_store(clock=clock)
    return clock, store, SeriesRecorder("default-scheduler", "host", clock, manager="kube-scheduler")


def _record(store: ObjectStore, rec: SeriesRecorder, pod: dict[str, Any], note: str = "no fit") -> None:
    with store.transaction() as tx:
        rec.eventf(tx, pod, WARNING, "FailedScheduling", "Scheduling", note)


def test_the_recorder_creates_then_patches_the_series_and_the_timers_write_it() -> None:
    clock, store, rec = _recorder()
    pod = _pod()
    assert rec.deadline() is None  # nothing cached: no timer to run
    _record(store, rec, pod)
    [e] = store.list("Event", "team")
    assert e["metadata"]["name"] == f"p.{round(T0 * 1e9):x}"
    assert e["reportingInstance"] == "default-scheduler-host"
    clock.advance(1)
    _record(store, rec, pod, "a later note")
    [e] = store.list("Event", "team")
    assert e["series"] == {"count": 2, "lastObservedTime": "2027-01-15T08:00:01.250000Z"}
    assert e["message"] == "no fit"  # the patch carries the series alone
    rv = e["metadata"]["resourceVersion"]
    clock.advance(1)
    _record(store, rec, pod)
    [e] = store.list("Event", "team")
    assert e["series"]["count"] == 2 and e["metadata"]["resourceVersion"] == rv  # counted in memory only
    assert rec.deadline() == FINISH_TIME
    rec.tick(store)  # not due
    assert store.list("Event", "team")[0]["metadata"]["resourceVersion"] == rv
    clock.advance(FINISH_TIME - 2)
    rec.tick(store)  # due, but the series was seen less than finishTime ago
    assert store.list("Event", "team")[0]["series"]["count"] == 2
    assert rec.deadline() == 2 * FINISH_TIME
    clock.advance(FINISH_TIME)
    rec.tick(store)  # quiet for more than finishTime: written one last time, forgotten
    [e] = store.list("Event", "team")
    assert e["series"] == {"count": 3, "lastObservedTime": "2027-01-15T08:00:02.250000Z"}
    assert rec.deadline() is None


def test_the_refresh_rewrites_an_open_series_and_recreates_an_expired_event() -> None:
    clock, store, rec = _recorder()
    pod = _pod()
    seen = 0
    while clock.monotonic() < REFRESH_TIME:
        rec.tick(store)
        _record(store, rec, pod)  # seen every 5 minutes: the series never finishes
        seen += 1
        clock.advance(300)
    [name] = [e["metadata"]["name"] for e in store.list("Event", "team")]
    store.delete("Event", "team", name)  # expired (the event TTL)
    rec.tick(store)
    [e] = store.list("Event", "team")
    assert e["metadata"]["name"] == name
    assert e["series"]["count"] == seen == 6


def test_two_events_at_one_frozen_instant_get_two_names() -> None:
    _clock, store, rec = _recorder()
    with store.transaction() as tx:
        rec.eventf(tx, _pod(), WARNING, "FailedScheduling", "Scheduling", "no fit")
        rec.eventf(tx, _pod(), NORMAL, "Scheduled", "Binding", "bound")
    names = sorted(e["metadata"]["name"] for e in store.list("Event", "team"))
    assert names == [f"p.{round(T0 * 1e9):x}", f"p.{round(T0 * 1e9) + 1:x}"]
