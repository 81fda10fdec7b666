"""Retry pacing of the embedded scheduler, as kube-scheduler's PriorityQueue (v1.37.2
pkg/scheduler/backend/queue): an unschedulable pod waits in unschedulablePods until a cluster
event one of its rejecting plugins registers (queueing hints), an update of its own scheduling
properties, or the 5-minute flush; then backs off 1 s doubling to 10 s by unschedulable attempts
(or consecutive errors); when nothing else is active the backoffQ is popped at once
(SchedulerPopFromBackoffQ), the error backoff never. Fake clock, no sleeps.
"""

from __future__ import annotations

from nodeagent.controlplane.scheduler import hints
from nodeagent.controlplane.scheduler.core import SchedulerOptions
from nodeagent.controlplane.scheduler.queue import BACKOFF, UNSCHEDULABLE, SchedulingQueue
from tests.unit.controlplane.test_scheduler_support import GPU, Cluster, device, node, pod, resource_slice

P = ("default", "p")
Q = ("default", "q")
SELECTOR = frozenset({hints.NODE})


def test_backoff_doubles_by_unschedulable_attempts_up_to_ten_seconds() -> None:
    q = SchedulingQueue(1.0, 10.0)
    q.add(P, 0.0)
    now, delays = 0.0, []
    for _ in range(6):
        assert q.pop(now) == P  # (moved to backoff; nothing else active: popped at once)
        now += 100.0
        q.failed(P, now, hints=SELECTOR)
        info = q.info(P)
        assert info is not None
        delays.append(q.backoff_until(info) - now)
        q.move_unschedulable(now, event=hints.NODE)
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_only_a_hinted_event_moves_an_unschedulable_pod() -> None:
    q = SchedulingQueue(1.0, 10.0)
    q.add(P, 0.0)
    assert q.pop(0.0) == P
    q.failed(P, 0.0, hints=SELECTOR)
    for event in (hints.SLICE, hints.CLAIM, hints.ASSIGNED_POD_DELETE):
        assert q.move_unschedulable(0.5, event=event) == 0
    assert q.counts()[UNSCHEDULABLE] == 1
    assert q.next_deadline(0.5) == 300.0  # only the flush
    assert q.move_unschedulable(0.5, event=hints.NODE) == 1
    assert q.counts()[BACKOFF] == 1


def test_own_updates_move_it_only_when_a_property_its_rejectors_watch_changed() -> None:
    q = SchedulingQueue(1.0, 10.0)
    q.add(P, 0.0)
    assert q.pop(0.0) == P
    q.failed(P, 0.0, hints=frozenset({hints.NODE, hints.POD_TOLERATIONS}))
    q.update(P, 0.1, frozenset())  # a status write (the scheduler's own PodScheduled=False)
    q.update(P, 0.2, frozenset({hints.POD_LABELS}))
    assert q.counts()[UNSCHEDULABLE] == 1
    q.update(P, 0.3, frozenset({hints.POD_TOLERATIONS}))
    assert q.counts()[BACKOFF] == 1


def test_the_pod_comes_back_after_five_minutes_without_an_event() -> None:
    q = SchedulingQueue(1.0, 10.0)
    q.add(P, 0.0)
    assert q.pop(0.0) == P
    q.failed(P, 10.0, hints=SELECTOR)
    q.flush_unschedulable(309.9)
    assert q.pop(309.9) is None
    q.flush_unschedulable(310.0)
    assert q.pop(310.0) == P


def test_idle_pops_the_backoff_queue_but_not_the_error_backoff() -> None:
    q = SchedulingQueue(1.0, 10.0)
    for key in (P, Q):
        q.add(key, 0.0)
        assert q.pop(0.0) == key
    q.failed(P, 0.0, hints=SELECTOR)
    q.move_unschedulable(0.0, event=hints.NODE)  # backoff until 1.0
    q.failed(Q, 0.0, retry=True)  # an error: error backoff until 1.0
    assert q.next_deadline(0.1) == 0.1
    assert q.pop(0.1) == P  # nothing active: the backoffQ's head at once
    assert q.pop(0.1) is None  # the errored pod waits its backoff out
    assert q.next_deadline(0.1) == 1.0
    assert q.pop(1.0) == Q


def _unschedulable_attempts(c: Cluster) -> float:
    value = c.metrics.registry.get_sample_value("scheduler_schedule_attempts_total", {"result": "unschedulable"})
    return value or 0.0


async def test_a_selector_mismatch_waits_for_a_node_change_not_for_slices_or_its_own_status() -> None:
    c = Cluster(options=SchedulerOptions())  # upstream's backoff: 1 s doubling to 10 s
    c.add(node("n1"))
    p = pod("p")
    p["spec"]["nodeSelector"] = {"zone": "b"}
    c.add(p)
    c.run()
    assert _unschedulable_attempts(c) == 1
    c.clock.advance(5)
    c.add(resource_slice("n1", GPU, [device("g0")]))  # a DRA driver publishes: NodeAffinity does not care
    c.run()
    c.clock.advance(60)
    c.run()
    assert _unschedulable_attempts(c) == 1
    assert len([e for e in c.store.list("Event") if e["reason"] == "FailedScheduling"]) == 1
    n1 = c.get("Node", "n1")
    n1["metadata"]["labels"]["zone"] = "b"
    c.store.update(n1)
    c.run()  # backoff long over: straight to active
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n1"
    assert _unschedulable_attempts(c) == 1
