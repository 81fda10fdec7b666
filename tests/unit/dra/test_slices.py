"""The kubelet's ResourceSlice wiping: the decision, the delay on a FakeClock, the store deletion."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.dra.slices import Decision, SliceWiper, WipeSchedule, field_selector
from nodeagent.nodeapi.inprocess import delete_node_slices
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore
from nodeagent.store.kinds import builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.unit.dra.fakes import settle

NODE = "node-a"
GPU = "gpu.example.com"
NET = "net.example.com"


class Deleter:
    """Records delete(driver) calls; fails the first `failures` of them."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[float, str | None]] = []
        self.failures = failures
        self.clock: FakeClock | None = None

    def __call__(self, driver: str | None) -> int:
        assert self.clock is not None
        self.calls.append((self.clock.monotonic(), driver))
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("store unavailable")
        return 1


def wiper(clock: FakeClock, deleter: Deleter, delay: float = 30.0) -> SliceWiper:
    deleter.clock = clock
    return SliceWiper(clock, NODE, deleter, delay=delay)


async def advance(clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    await settle()


def test_schedule_decisions() -> None:
    s = WipeSchedule(30.0)
    assert s.update(GPU, True, 0.0) is Decision.NOTHING
    assert s.update(GPU, False, 5.0) is Decision.SCHEDULE
    assert s.due(GPU) == 35.0
    # Still unusable later: the first deadline stands (the kubelet does not push it back).
    assert s.update(GPU, False, 20.0) is Decision.KEEP
    assert s.due(GPU) == 35.0
    assert s.pending == {GPU: 35.0}
    assert s.update(GPU, True, 21.0) is Decision.CANCEL
    assert s.pending == {}
    assert s.update(NET, False, 1.0) is Decision.SCHEDULE
    s.done(NET)
    assert s.update(NET, False, 2.0) is Decision.SCHEDULE
    assert s.due(NET) == 32.0


def test_field_selector_as_the_kubelet_sends_it() -> None:
    assert field_selector(NODE, None) == "spec.nodeName=node-a"
    assert field_selector(NODE, GPU) == "spec.driver=gpu.example.com,spec.nodeName=node-a"


async def test_slices_wiped_30s_after_driver_loss(fake_clock: FakeClock) -> None:
    d = Deleter()
    w = wiper(fake_clock, d)
    w.update(GPU, False)
    assert w.pending == {GPU: 30.0}
    await advance(fake_clock, 29.9)
    assert d.calls == []
    await advance(fake_clock, 0.1)
    assert d.calls == [(30.0, GPU)]
    assert w.pending == {}
    await w.close()


async def test_slices_kept_when_driver_returns_in_time(fake_clock: FakeClock) -> None:
    d = Deleter()
    w = wiper(fake_clock, d)
    w.update(GPU, False)
    await advance(fake_clock, 29.0)
    w.update(GPU, True)
    assert w.pending == {}
    await advance(fake_clock, 60.0)
    assert d.calls == []
    # Lost again: a fresh 30 s from now.
    w.update(GPU, False)
    await advance(fake_clock, 29.0)
    assert d.calls == []
    await advance(fake_clock, 1.0)
    assert d.calls == [(119.0, GPU)]
    await w.close()


async def test_repeated_loss_keeps_first_deadline_and_drivers_are_independent(fake_clock: FakeClock) -> None:
    d = Deleter()
    w = wiper(fake_clock, d)
    w.update(GPU, False)
    await advance(fake_clock, 10.0)
    w.update(GPU, False)  # e.g. the second of two plugins left too
    w.update(NET, False)
    await advance(fake_clock, 20.0)
    assert d.calls == [(30.0, GPU)]
    await advance(fake_clock, 10.0)
    assert d.calls == [(30.0, GPU), (40.0, NET)]
    await w.close()


async def test_failed_deletion_retried_with_backoff(fake_clock: FakeClock) -> None:
    d = Deleter(failures=2)
    w = wiper(fake_clock, d)
    w.update(GPU, False)
    await advance(fake_clock, 30.0)
    await advance(fake_clock, 1.0)
    await advance(fake_clock, 2.0)
    assert d.calls == [(30.0, GPU), (31.0, GPU), (33.0, GPU)]
    await advance(fake_clock, 100.0)
    assert len(d.calls) == 3
    await w.close()


async def test_driver_back_during_retries_stops_them(fake_clock: FakeClock) -> None:
    d = Deleter(failures=100)
    w = wiper(fake_clock, d)
    w.update(GPU, False)
    await advance(fake_clock, 30.0)
    w.update(GPU, True)
    await advance(fake_clock, 100.0)
    assert d.calls == [(30.0, GPU)]
    await w.close()


async def test_startup_wipe_retries_in_background_and_close_cancels(fake_clock: FakeClock) -> None:
    d = Deleter(failures=1)
    w = wiper(fake_clock, d)
    assert w.wipe_at_start() == 0
    await settle()
    await advance(fake_clock, 1.0)
    assert d.calls == [(0.0, None), (1.0, None)]
    w.update(GPU, False)
    await w.close()
    await advance(fake_clock, 60.0)
    assert d.calls == [(0.0, None), (1.0, None)]
    w.update(NET, False)  # after close: ignored
    assert w.pending == {}


def _slice(name: str, driver: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                            "devices": [{"name": "d0"}]}
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def store(fake_clock: FakeClock) -> ObjectStore:
    s = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), fake_clock)
    for obj in (_slice("a-gpu", GPU, NODE), _slice("a-net", NET, NODE), _slice("b-gpu", GPU, "node-b"),
                _slice("all-gpu", GPU, None)):
        s.create(obj)
    return s


def names(store: ObjectStore) -> list[str]:
    return [o["metadata"]["name"] for o in store.list("ResourceSlice")]


def test_delete_node_slices_of_one_driver(store: ObjectStore) -> None:
    assert delete_node_slices(store, NODE, GPU) == 1
    assert names(store) == ["a-net", "all-gpu", "b-gpu"]
    assert delete_node_slices(store, NODE, GPU) == 0


def test_startup_wipe_deletes_every_slice_of_the_node_only(store: ObjectStore, fake_clock: FakeClock) -> None:
    w = SliceWiper(fake_clock, NODE, lambda driver: delete_node_slices(store, NODE, driver))
    assert w.wipe_at_start() == 2
    assert names(store) == ["all-gpu", "b-gpu"]
