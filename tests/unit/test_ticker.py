"""The shared ticker (nodeagent/util/ticker.py) and the node sync and Pods API source on it: nothing
before start, every check once per interval, a failing check does not stop the others; an idle
tick starts no task, a due one writes what changed; pod events do not wait for a tick."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.inprocess import InProcessAPI
from nodeagent.nodesync.loop import NodeSync
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.podsapi.source import PodsSource
from nodeagent.state.db import StateDB
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from nodeagent.util.ticker import Ticker
from tests.unit.pods.fakes import FakeCgroups, FakeResources

NODE = "node-t"


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_ticker_calls_each_check_per_interval_from_start(fake_clock: FakeClock) -> None:
    ticker = Ticker(fake_clock, 0.5)
    calls: list[str] = []

    def broken() -> None:
        calls.append("broken")
        raise RuntimeError("boom")

    remove_a = ticker.add(lambda: calls.append("a"))
    ticker.add(broken)
    ticker.add(lambda: calls.append("c"))
    fake_clock.advance(1.0)
    await _settle()
    assert calls == []  # not started: nothing ticks
    ticker.start()
    await _settle()
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(0.5)
    await _settle()
    assert calls == ["a", "broken", "c"]  # the failing check is logged, the next still runs
    remove_a()
    assert len(ticker) == 2
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(0.5)
    await _settle()
    assert calls[3:] == ["broken", "c"] and ticker.ticks == 2
    await ticker.close()
    fake_clock.advance(5)
    await _settle()
    assert ticker.ticks == 2


def test_ticker_interval_must_be_positive(fake_clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="interval must be positive, got 0"):
        Ticker(fake_clock, 0)


async def _stop(task: asyncio.Task[None], sync: NodeSync, store: ObjectStore) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    sync.close()
    store.close()


def _parts(clock: FakeClock) -> tuple[ObjectStore, EventRecorder, PodManager]:
    """A store, an event recorder and a pod manager for one node sync."""
    store = ObjectStore.memory(admitted_kinds({}), clock)
    recorder = EventRecorder(clock=clock, host=NODE)
    pods = PodManager(node_name=NODE, resources=FakeResources({"cpu": 8000, "memory": 32 << 30, "pods": 110}),
                      admitters=[], cgroups=FakeCgroups(), db=StateDB.memory(), clock=clock,
                      instruments=Instruments(CollectorRegistry()), recorder=recorder)
    return store, recorder, pods


@pytest.fixture
async def ticked(fake_clock: FakeClock) -> AsyncIterator[tuple[NodeSync, ObjectStore, dict[str, Any], Ticker]]:
    store, recorder, pods = _parts(fake_clock)
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
                            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    ticker = Ticker(fake_clock, 0.5)
    sync = NodeSync(node_name=NODE, api=InProcessAPI(store), pods=pods, node_object=lambda: dict(node),
                    recorder=recorder, clock=fake_clock, bind_unscheduled=False, ticker=ticker)
    await sync.start()
    task = asyncio.create_task(sync.run())
    await _settle()
    try:
        yield sync, store, node, ticker
    finally:
        await _stop(task, sync, store)
    assert len(ticker) == 0  # run() removed its check


async def test_idle_tick_starts_nothing_and_a_due_one_writes(
    ticked: tuple[NodeSync, ObjectStore, dict[str, Any], Ticker],
) -> None:
    _sync, store, node, ticker = ticked
    assert len(ticker) == 1
    before = len(asyncio.all_tasks())
    ticker.tick()
    assert len(asyncio.all_tasks()) == before  # nothing changed: no pass, no task
    node["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    ticker.tick()
    assert len(asyncio.all_tasks()) == before + 1
    await _settle()
    assert store.get("Node", "", NODE)["status"]["conditions"][0]["status"] == "False"


async def test_pod_events_do_not_wait_for_a_tick(
    ticked: tuple[NodeSync, ObjectStore, dict[str, Any], Ticker],
) -> None:
    sync, store, _node, ticker = ticked
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
                  "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "pause"}]}})
    await _settle()
    assert sync.pod_object("default", "web") is not None and ticker.ticks == 0


class _View:
    def __init__(self) -> None:
        self.gen = 0
        self.docs: dict[str, dict[str, Any]] = {}

    def generation(self) -> int:
        return self.gen

    def pods(self) -> dict[str, dict[str, Any]]:
        return self.docs


async def test_pods_source_refreshes_on_the_ticker(fake_clock: FakeClock) -> None:
    ticker = Ticker(fake_clock, 0.5)
    view = _View()
    source = PodsSource(view, synced=lambda: True, clock=fake_clock, ticker=ticker)
    _pods, sub = source.watch()
    task = asyncio.create_task(source.run())
    await _settle()
    assert len(ticker) == 1
    view.docs = {"u1": {"metadata": {"uid": "u1", "name": "a", "namespace": "default"}}}
    view.gen = 1
    ticker.tick()
    assert source._generation == 1  # refreshed by the tick, no timer of its own
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert len(ticker) == 0
    sub.close()


async def test_unchanged_node_inputs_build_no_node_object(fake_clock: FakeClock) -> None:
    """With node_inputs (the backend's resources and conditions), an idle tick compares those and
    builds no Node object; changed inputs build it and write the Node."""
    store, recorder, pods = _parts(fake_clock)
    state: dict[str, Any] = {"ready": "True", "built": 0}

    def node_object() -> dict[str, Any]:
        state["built"] += 1
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
                "status": {"conditions": [{"type": "Ready", "status": state["ready"]}]}}

    ticker = Ticker(fake_clock, 0.5)
    sync = NodeSync(node_name=NODE, api=InProcessAPI(store), pods=pods, node_object=node_object,
                    recorder=recorder, clock=fake_clock, bind_unscheduled=False, ticker=ticker,
                    node_inputs=lambda: state["ready"])
    await sync.start()
    task = asyncio.create_task(sync.run())
    await _settle()
    try:
        ticker.tick()  # the first idle tick builds it once to learn that these inputs are published
        built = state["built"]
        for _ in range(3):
            ticker.tick()
        assert state["built"] == built
        state["ready"] = "False"
        ticker.tick()
        await _settle()
        assert store.get("Node", "", NODE)["status"]["conditions"][0]["status"] == "False"
    finally:
        await _stop(task, sync, store)
