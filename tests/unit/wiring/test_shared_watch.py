"""The full virtual nodes' shared store watches (wiring/shared_watch.py), on a real ObjectStore:
pods reach the node they are bound to only, a node's watch starts with a SYNC of its pods, and a
burst of ResourceClaim changes wakes every subscriber once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nodeagent.errors import Unavailable
from nodeagent.nodeapi.ports import ADDED, DELETED, SYNC
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from nodeagent.wiring.shared_watch import SharedClaimChanges, SharedPods

BOUND = 5.0


def _pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}


def _claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}


@pytest.fixture
def store() -> ObjectStore:
    return ObjectStore(":memory:", builtin_kinds(), FakeClock())


async def test_pods_go_to_their_node_only(store: ObjectStore) -> None:
    store.create(_pod("early", "n1"))
    pods = SharedPods(store)
    try:
        n1, n2 = pods.watch("n1"), pods.watch("n2")
        first = await asyncio.wait_for(n1.next(), BOUND)
        assert first.type == SYNC and [o["metadata"]["name"] for o in first.items] == ["early"]
        assert (await asyncio.wait_for(n2.next(), BOUND)).items == []
        waiting = asyncio.ensure_future(n2.next())  # waits: nothing for n2 yet
        store.create(_pod("late", "n2"))
        event = await asyncio.wait_for(waiting, BOUND)
        assert event.type == ADDED and event.object["metadata"]["name"] == "late"
        store.delete("Pod", "default", "early")
        event = await asyncio.wait_for(n1.next(), BOUND)
        assert event.type == DELETED and event.object["metadata"]["name"] == "early"
        assert n2.get_nowait() is None
        with pytest.raises(ValueError):
            pods.watch("n1")
        waiting = asyncio.ensure_future(n1.next())
        await asyncio.sleep(0)
        n1.close()
        with pytest.raises(Unavailable):
            await asyncio.wait_for(waiting, BOUND)
    finally:
        await pods.close()


async def test_a_burst_of_claim_changes_wakes_every_subscriber_once(store: ObjectStore) -> None:
    changes = SharedClaimChanges(store)
    a, b = changes.changes(), changes.changes()
    try:
        wait_a, wait_b = asyncio.ensure_future(anext(a)), asyncio.ensure_future(anext(b))
        for _ in range(5):
            await asyncio.sleep(0)
        for i in range(3):
            store.create(_claim(f"c{i}"))
        await asyncio.wait_for(asyncio.gather(wait_a, wait_b), BOUND)
        # b is busy meanwhile: a later burst is still its next item, once
        store.create(_claim("c9"))
        await asyncio.wait_for(anext(a), BOUND)
        await asyncio.wait_for(anext(b), BOUND)
        extra = asyncio.ensure_future(anext(b))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not extra.done()
        extra.cancel()
    finally:
        await a.aclose()  # type: ignore[attr-defined]  # an async generator, typed as its iterator
        await changes.close()
