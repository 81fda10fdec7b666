"""Transactions: several writes commit together or not at all; reads inside see the writes."""

from __future__ import annotations

import threading

import pytest

from nodeagent.errors import AlreadyExists, Conflict
from nodeagent.store import ObjectStore
from tests.unit.store.builders import claim, pod
from tests.unit.store.conftest import OpenStore


def test_bind_and_reserve_commit_together(store: ObjectStore) -> None:
    p = store.create(pod("p"))
    store.create(claim("c"))
    with store.transaction() as tx:
        c = tx.get("ResourceClaim", "default", "c")
        c["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": p["metadata"]["uid"]}]}
        tx.update_status(c)
        bound = tx.get("Pod", "default", "p")
        bound["spec"]["nodeName"] = "n1"
        tx.update(bound)
        # Reads through the store still see the committed state until the block ends.
        assert "nodeName" not in store.get("Pod", "default", "p")["spec"]
        assert tx.get("Pod", "default", "p")["spec"]["nodeName"] == "n1"
    assert store.get("Pod", "default", "p")["spec"]["nodeName"] == "n1"
    assert store.get("ResourceClaim", "default", "c")["status"]["reservedFor"][0]["name"] == "p"
    assert store.resource_version == 4


def test_failing_second_write_leaves_nothing(open_store: OpenStore) -> None:
    store = open_store()
    stale = store.create(claim("c"))
    fresh = store.get("ResourceClaim", "default", "c")
    fresh["metadata"]["labels"] = {"v": "2"}
    store.update(fresh)
    with pytest.raises(Conflict), store.transaction() as tx:
        tx.create(pod("new"))
        stale["metadata"]["labels"] = {"v": "stale"}
        tx.update(stale)
    assert store.try_get("Pod", "default", "new") is None
    assert store.get("ResourceClaim", "default", "c")["metadata"]["labels"] == {"v": "2"}
    assert store.resource_version == 2
    assert store.create(pod("next"))["metadata"]["resourceVersion"] == "3"
    store.close()
    reopened = open_store()
    assert reopened.try_get("Pod", "default", "new") is None
    assert reopened.resource_version == 3


def test_exception_in_block_rolls_back(store: ObjectStore) -> None:
    with pytest.raises(RuntimeError, match="boom"), store.transaction() as tx:
        tx.create(pod("a"))
        raise RuntimeError("boom")
    assert store.list("Pod") == []
    assert store.resource_version == 0


def test_caught_error_undoes_only_that_operation(store: ObjectStore) -> None:
    owner = store.create(pod("owner", finalizers=["example.com/x"]))
    store.create(claim("dep", owner=owner))
    with store.transaction() as tx:
        tx.create(pod("a"))
        with pytest.raises(AlreadyExists):
            tx.create(pod("a"))
        with pytest.raises(Conflict):
            tx.delete("ResourceClaim", "default", "dep", resource_version="999")
        tx.create(pod("b"))
        assert [p["metadata"]["name"] for p in tx.list("Pod")] == ["a", "b", "owner"]
    assert [p["metadata"]["name"] for p in store.list("Pod")] == ["a", "b", "owner"]
    assert store.try_get("ResourceClaim", "default", "dep") is not None
    assert [int(p["metadata"]["resourceVersion"]) for p in store.list("Pod")] == [3, 4, 1]


@pytest.mark.parametrize("savepoints", [True, False])
def test_failed_group_undoes_its_writes_only(open_store: OpenStore, savepoints: bool) -> None:
    """A controller batching many objects in one commit: the group that fails leaves nothing
    (rows, versions, overlay), the groups around it commit."""
    store = open_store()
    with store.transaction(savepoints=savepoints) as tx:
        with tx.group():
            tx.create(pod("a"))
        with pytest.raises(AlreadyExists), tx.group():
            tx.create(pod("b"))
            tx.create(pod("a"))
        assert tx.try_get("Pod", "default", "b") is None
        with tx.group():
            tx.create(pod("c"))
    assert [(p["metadata"]["name"], p["metadata"]["resourceVersion"]) for p in store.list("Pod")] == [
        ("a", "1"), ("c", "2")]
    store.close()
    assert [p["metadata"]["name"] for p in open_store().list("Pod")] == ["a", "c"]


def test_delete_and_recreate_in_one_transaction(store: ObjectStore) -> None:
    first = store.create(pod("p"))
    store.create(claim("c", owner=first))
    with store.transaction() as tx:
        tx.delete("Pod", "default", "p")
        assert tx.try_get("ResourceClaim", "default", "c") is None
        assert tx.list("ResourceClaim") == []
        again = tx.create(pod("p"))
    assert store.get("Pod", "default", "p")["metadata"]["uid"] == again["metadata"]["uid"] != first["metadata"]["uid"]
    assert store.list("ResourceClaim") == []


def test_transactions_do_not_nest(store: ObjectStore) -> None:
    with store.transaction() as tx:
        tx.create(pod("a"))
        with pytest.raises(RuntimeError, match="do not nest"):
            store.create(pod("b"))
    assert [p["metadata"]["name"] for p in store.list("Pod")] == ["a"]


def test_writers_in_threads_get_distinct_versions(store: ObjectStore) -> None:
    def write(prefix: str) -> None:
        for i in range(25):
            store.create(pod(f"{prefix}-{i}"))

    threads = [threading.Thread(target=write, args=(f"t{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    versions = sorted(int(p["metadata"]["resourceVersion"]) for p in store.list("Pod"))
    assert versions == list(range(1, 101))
