"""Secondary indexes of the object store (add_index / indexed): built from what is stored when added,
kept at every commit (create, update, delete, a rolled-back transaction changes nothing), and a
failing index function never breaks a commit."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import pytest

from nodeagent.store import ObjectStore
from tests.unit.store.builders import pod
from tests.unit.store.conftest import OpenStore


def _by_node(obj: Mapping[str, Any]) -> Iterable[Hashable]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


def _names(objs: Iterable[Mapping[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def _bound(name: str, node: str) -> dict[str, Any]:
    obj = pod(name)
    obj["spec"]["nodeName"] = node
    return obj


def test_index_follows_commits(open_store: OpenStore) -> None:
    store: ObjectStore = open_store()
    store.create(_bound("a", "n1"))
    store.add_index("Pod", "node", _by_node)
    store.create(_bound("b", "n1"))
    store.create(pod("c"))
    assert _names(store.indexed("Pod", "node", "n1")) == ["a", "b"]
    moved = store.get("Pod", "default", "b")
    moved["spec"]["nodeName"] = "n2"
    store.update(moved)
    assert _names(store.indexed("Pod", "node", "n1")) == ["a"]
    assert _names(store.indexed("Pod", "node", "n2")) == ["b"]
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.delete("Pod", "default", "a")
        raise RuntimeError("roll back")
    assert _names(store.indexed("Pod", "node", "n1")) == ["a"]
    store.delete("Pod", "default", "a")
    assert store.indexed("Pod", "node", "n1") == []
    assert store.indexed("Pod", "node", "nowhere") == []


def test_a_failing_index_function_never_breaks_a_commit(open_store: OpenStore,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    store: ObjectStore = open_store()

    def broken(obj: Mapping[str, Any]) -> Iterable[Hashable]:
        raise KeyError("bug")

    store.add_index("Pod", "broken", broken)
    store.create(pod("a"))
    assert store.get("Pod", "default", "a")["metadata"]["name"] == "a"
    assert "object store index failed" in caplog.text
