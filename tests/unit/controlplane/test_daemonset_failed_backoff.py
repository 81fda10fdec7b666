"""The embedded DaemonSet controller on a FakeClock: a daemon pod that keeps failing on its node is
deleted and recreated at most once per failedPodsBackoff delay (1 s, then 2 s, ...), each deletion
with upstream's FailedDaemonPod event, and the controller asks to be woken when the delay ends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodeagent.controlplane.controllers.daemonset import DaemonSetController
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore, clone
from nodeagent.util.clock import FakeClock


@pytest.fixture
def store(fake_clock: FakeClock) -> Iterator[ObjectStore]:
    s = ObjectStore.memory(admitted_kinds({}), fake_clock)
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    s.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    s.create({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
              "spec": {"selector": {"matchLabels": {"app": "agent"}},
                       "template": {"metadata": {"labels": {"app": "agent"}},
                                    "spec": {"containers": [{"name": "c", "image": "pause:1"}]}}}})
    yield s
    s.close()


def _pods(store: ObjectStore) -> list[dict[str, Any]]:
    return store.list("Pod", "default")


def _fail_the_pod(store: ObjectStore, ctl: DaemonSetController) -> str:
    [pod] = _pods(store)
    failed = clone(pod)
    failed["status"]["phase"] = "Failed"
    ctl.handle("MODIFIED", store.update_status(failed))
    return str(pod["metadata"]["name"])


def _failed_events(store: ObjectStore) -> list[str]:
    return sorted(e["message"] for e in store.list("Event", "default") if e["reason"] == "FailedDaemonPod")


def _sync(ctl: DaemonSetController, store: ObjectStore) -> None:
    """The due syncs, and those the watch's events about the controller's own pod writes cause, until
    none is due (the clock does not move)."""
    seen = {p["metadata"]["uid"]: p for p in _pods(store)}
    for _ in range(10):
        if ctl.work(100) == 0:
            return
        now = {p["metadata"]["uid"]: p for p in _pods(store)}
        for uid, pod in seen.items():
            if uid not in now:
                ctl.handle("DELETED", pod)
        for uid, pod in now.items():
            if uid not in seen or pod["metadata"]["resourceVersion"] != seen[uid]["metadata"]["resourceVersion"]:
                ctl.handle("MODIFIED", pod)
        seen = now
    raise AssertionError("the controller never settled")


def test_a_failing_daemon_pod_is_replaced_with_a_doubling_backoff(store: ObjectStore, fake_clock: FakeClock) -> None:
    ctl = DaemonSetController(store, fake_clock)
    ctl.load([*store.list("DaemonSet"), *store.list("Node")])
    _sync(ctl, store)
    assert len(_pods(store)) == 1

    first = _fail_the_pod(store, ctl)
    _sync(ctl, store)  # deleted at once (a failed pod has no grace period), then recreated
    [second] = _pods(store)
    assert second["metadata"]["name"] != first
    assert _failed_events(store) == [f"Found failed daemon pod default/{first} on node n1, will try to kill it"]

    fake_clock.advance(0.4)
    _fail_the_pod(store, ctl)  # fails again within the 1 s delay: kept until it ends
    _sync(ctl, store)
    assert [p["metadata"]["name"] for p in _pods(store)] == [second["metadata"]["name"]]
    assert ctl.deadline() == pytest.approx(fake_clock.monotonic() + 1.0, abs=0.01)  # the whole delay, as upstream

    fake_clock.advance(1.0)
    _sync(ctl, store)
    [third] = _pods(store)
    assert third["metadata"]["name"] != second["metadata"]["name"] and len(_failed_events(store)) == 2

    fake_clock.advance(1.5)
    _fail_the_pod(store, ctl)
    _sync(ctl, store)  # 1.5 s < the doubled 2 s
    assert [p["metadata"]["name"] for p in _pods(store)] == [third["metadata"]["name"]]
    fake_clock.advance(2.0)
    _sync(ctl, store)
    assert [p["metadata"]["name"] for p in _pods(store)] != [third["metadata"]["name"]]
    assert len(_failed_events(store)) == 3
