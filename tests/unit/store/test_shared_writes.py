"""Transaction.peek and writes with copy=False: the control plane's hot paths read and keep the
stored objects themselves instead of deep copies; the default writes still hand out copies."""

from __future__ import annotations

from nodeagent.store import ObjectStore
from tests.unit.store.builders import pod
from tests.unit.store.conftest import OpenStore


def test_peek_sees_the_transactions_own_writes(open_store: OpenStore) -> None:
    store: ObjectStore = open_store()
    store.create(pod("a"))
    with store.transaction() as tx:
        before = tx.peek("Pod", "default", "a")
        assert before is store.peek("Pod", "default", "a")  # committed, not copied
        cur = dict(before or {})
        cur["status"] = {"phase": "Running"}
        tx.update_status(cur)
        seen = tx.peek("Pod", "default", "a")
        assert seen is not None and seen["status"] == {"phase": "Running"}
        assert store.peek("Pod", "default", "a") is before  # nothing visible before the commit
        assert tx.peek("Pod", "default", "missing") is None
    assert store.get("Pod", "default", "a")["status"] == {"phase": "Running"}


def test_copy_false_returns_the_stored_object_and_copy_true_a_private_one(open_store: OpenStore) -> None:
    store: ObjectStore = open_store()
    with store.transaction() as tx:
        shared = tx.create(pod("a"), copy=False)
        private = tx.create(pod("b"))
    assert store.peek("Pod", "default", "a") is shared
    assert store.peek("Pod", "default", "b") is not private and store.peek("Pod", "default", "b") == private
    with store.transaction() as tx:
        cur = dict(shared)
        cur["status"] = {"phase": "Pending"}
        written = tx.update_status(cur, copy=False)
        cur["status"]["phase"] = "changed by the caller afterwards"  # the input was copied on the way in
    assert store.peek("Pod", "default", "a") is written
    assert written["status"] == {"phase": "Pending"}
    assert written["metadata"]["resourceVersion"] != shared["metadata"]["resourceVersion"]
