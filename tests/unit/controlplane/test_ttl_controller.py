"""The TTL controller (controllers/ttl.py): upstream's boundaries with their hysteresis, and each
added or updated Node brought to the desired annotation."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.controllers.ttl import ANNOTATION, TTLController
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock


def _node(name: str, ttl: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if ttl is not None:
        md["annotations"] = {ANNOTATION: ttl}
    return {"apiVersion": "v1", "kind": "Node", "metadata": md}


def test_nodes_get_the_annotation_of_the_cluster_size() -> None:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds(), clock)
    try:
        for obj in (_node("a"), _node("b", "15"), _node("c", "0"), _node("d", "x")):
            store.create(obj)
        ttl = TTLController(store)
        ttl.load(store.list("Node"))
        assert ttl.desired == 0 and not ttl.idle()
        ttl.work(100)
        assert ttl.idle()
        assert {n["metadata"]["name"]: n["metadata"]["annotations"][ANNOTATION] for n in store.list("Node")} == {
            "a": "0", "b": "0", "c": "0", "d": "0"}
    finally:
        store.close()


def test_boundaries_step_with_hysteresis() -> None:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds(), clock)
    try:
        ttl = TTLController(store)
        for i in range(100):
            ttl.handle("ADDED", _node(f"n{i}", "0"))
        assert ttl.desired == 0 and ttl.idle()  # annotated already: nothing to write
        ttl.handle("ADDED", _node("n100", "0"))
        assert ttl.desired == 15 and not ttl.idle()  # 101 > 100
        for i in range(11):  # down to 90 nodes: still 15 (sizeMin 90)
            ttl.handle("DELETED", _node(f"n{i}"))
        assert ttl.desired == 15
        ttl.handle("DELETED", _node("n11"))  # 89 < 90
        assert ttl.desired == 0
        ttl.work(10)  # the queued node is gone from the store: nothing written, no error
        assert ttl.idle()
    finally:
        store.close()
