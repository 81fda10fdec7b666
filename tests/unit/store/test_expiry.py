"""Events expire after the event TTL (kube-apiserver's --event-ttl, 1 h), counted from their last write.

Upstream stores each Event under an etcd lease of the TTL that every write renews; when it runs out
etcd deletes the key (watchers see DELETED) whatever the object holds. Events carry no
ownerReferences: deleting the object they report leaves them to the TTL.
"""

from __future__ import annotations

import asyncio

from nodeagent.controlplane import events
from nodeagent.kinds.core import EVENT_TTL
from nodeagent.store import ObjectStore
from nodeagent.store.watch import DELETED
from nodeagent.util.clock import FakeClock
from nodeagent.wiring.control_plane import expire_objects
from tests.unit.store.builders import pod
from tests.unit.store.conftest import OpenStore


def _event(name: str, **extra: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default", **extra},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R", "message": "m"}


def test_the_event_kind_declares_kube_apiservers_default_ttl(store: ObjectStore) -> None:
    assert EVENT_TTL == 3600.0
    assert store.ttl("Event") == 3600.0
    assert store.ttl("Pod") == 0.0


def test_an_event_expires_one_ttl_after_its_last_write(store: ObjectStore, fake_clock: FakeClock) -> None:
    store.create(_event("a"))
    fake_clock.advance(1800)
    b = store.create(_event("b"))
    fake_clock.advance(1799)
    assert store.expire() == 0
    fake_clock.advance(1)
    assert store.expire() == 1  # a: one hour after its create
    assert store.try_get("Event", "default", "a") is None
    b["count"] = 2
    store.update(b)  # renews b's lease: a whole TTL again from now
    fake_clock.advance(3599)
    assert store.expire() == 0
    fake_clock.advance(1)
    assert store.expire() == 1
    assert store.list("Event") == []


def test_expiry_ignores_finalizers_and_is_watched_as_deleted(store: ObjectStore, fake_clock: FakeClock) -> None:
    async def scenario() -> None:
        store.create(_event("held", finalizers=["example.com/keep"]))
        store.create(pod("p"))
        watch = store.watch({"Event", "Pod"})
        fake_clock.advance(EVENT_TTL)
        assert store.expire() == 1
        ev = watch.get_nowait()
        assert ev is not None and ev.type == DELETED and ev.object["metadata"]["name"] == "held"
        assert watch.get_nowait() is None
        assert store.try_get("Pod", "default", "p") is not None  # kinds without a TTL never expire
        watch.close()

    asyncio.run(scenario())


def test_a_restart_gives_stored_events_a_whole_ttl(open_store: OpenStore, fake_clock: FakeClock) -> None:
    first = open_store()
    first.create(_event("a"))
    fake_clock.advance(3000)
    first.close()
    again = open_store()
    fake_clock.advance(3000)  # 6000 s after the write, 3000 after the restart: etcd's lessor renews at start
    assert again.expire() == 0
    fake_clock.advance(600)
    assert again.expire() == 1


def test_the_ttl_is_an_option_of_the_store(open_store: OpenStore, fake_clock: FakeClock) -> None:
    store = open_store(ttls={"Event": 60.0})
    store.create(_event("a"))
    fake_clock.advance(60)
    assert store.expire() == 1


def test_a_deleted_object_leaves_its_events_to_the_ttl(store: ObjectStore, fake_clock: FakeClock) -> None:
    p = store.create(pod("p"))
    with store.transaction() as tx:
        events.record(tx, p, "FailedScheduling", "no nodes", now=fake_clock.now(), component="default-scheduler")
        events.EventRecorder("kubelet").record(tx, p, events.NORMAL, "Pulled", "pulled", now=fake_clock.now())
    got = store.list("Event")
    assert len(got) == 2
    assert all("ownerReferences" not in e["metadata"] for e in got)
    store.delete("Pod", "default", "p")
    store.collect_garbage()
    assert len(store.list("Event")) == 2  # outlive the pod, as upstream's
    fake_clock.advance(EVENT_TTL)
    assert store.expire() == 2


def test_a_new_object_of_the_same_name_starts_a_fresh_event(store: ObjectStore, fake_clock: FakeClock) -> None:
    first = store.create(pod("p"))
    with store.transaction() as tx:
        events.record(tx, first, "FailedScheduling", "no nodes", now=fake_clock.now(), component="s")
    store.delete("Pod", "default", "p")
    second = store.create(pod("p"))
    fake_clock.advance(5)
    with store.transaction() as tx:
        events.record(tx, second, "FailedScheduling", "no nodes", now=fake_clock.now(), component="s")
    (ev,) = store.list("Event")
    assert ev["count"] == 1
    assert ev["involvedObject"]["uid"] == second["metadata"]["uid"]
    assert ev["firstTimestamp"] == ev["lastTimestamp"]


def test_the_sweeper_expires_on_its_interval(store: ObjectStore, fake_clock: FakeClock) -> None:
    async def scenario() -> None:
        store.create(_event("a"))
        task = asyncio.create_task(expire_objects(store, fake_clock, interval=1.0))
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(EVENT_TTL)
        await fake_clock.wait_for_sleepers()  # back asleep after one sweep
        assert store.try_get("Event", "default", "a") is None
        task.cancel()

    asyncio.run(scenario())


def test_the_expiry_heap_stays_bounded_by_the_live_events(store: ObjectStore, fake_clock: FakeClock) -> None:
    ev = store.create(_event("busy"))
    for n in range(3000):  # an Event bumped 3000 times within its hour
        ev["count"] = n + 2
        ev = store.update(ev)
    assert len(store._expiries) <= 2 * len(store._deadlines) + 1024
    fake_clock.advance(EVENT_TTL - 1)
    assert store.expire() == 0  # the renewed deadline holds after the heap was rebuilt
    fake_clock.advance(1)
    assert store.expire() == 1
