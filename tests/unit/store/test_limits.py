"""The store's write size limit: etcd's --max-request-bytes as a real cluster applies it (issue 25)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from nodeagent.errors import RequestTooLarge
from nodeagent.store import KindInfo, Obj, ObjectStore, StoreBusy, limits


def test_the_raft_request_is_measured_as_the_fixture_found_it() -> None:
    """kube-apiserver v1.37.2 + etcd v3.7.0 (default limit), a custom resource under a 43-byte key: stored
    as 1,572,738 bytes it is created, one byte more is refused; an update fits 1,572,688 bytes, not one more."""
    assert limits.raft_size(limits.txn_size(43, 1_572_738, update=False, revision=0)) == limits.MAX_REQUEST_BYTES
    assert limits.fits(43, 1_572_738, update=False, revision=0)
    assert not limits.fits(43, 1_572_739, update=False, revision=0)
    assert limits.fits(43, 1_572_688, update=True, revision=252)
    assert not limits.fits(43, 1_572_689, update=True, revision=252)


@pytest.mark.parametrize("update", [False, True])
@pytest.mark.parametrize("lease", [False, True])
@pytest.mark.parametrize("key", [1, 43, 253, 5000])
def test_fits_answers_as_the_exact_count_around_its_shortcut(key: int, update: bool, lease: bool) -> None:
    """fits' shortcut (no count below a bound) answers what `check` does, at the largest revisions too."""
    bound = limits.MAX_REQUEST_BYTES - 128 - 3 * key
    for revision in (0, 1, 127, 2**32, 2**63 - 1):
        for value in (0, bound - 1, bound, bound + 1, *range(bound + 2, bound + 400, 7)):
            try:
                limits.check(key, value, update=update, revision=revision, lease=lease)
                exact = True
            except RequestTooLarge:
                exact = False
            assert limits.fits(key, value, update=update, revision=revision, lease=lease) is exact, (revision, value)
        assert limits.fits(key, bound, update=update, revision=revision, lease=lease)


def test_past_the_clients_send_limit_the_text_is_the_grpc_clients() -> None:
    with pytest.raises(RequestTooLarge, match=r"^etcdserver: request is too large$"):
        limits.check(30, 1_600_000, update=False, revision=0)
    with pytest.raises(RequestTooLarge) as err:
        limits.check(30, 2_200_000, update=False, revision=0)
    txn = limits.txn_size(30, 2_200_000, update=False, revision=0)
    assert str(err.value) == ("rpc error: code = ResourceExhausted desc = trying to send message larger than max "
                              f"({txn} vs. 2097152)")


def _cm(name: str, size: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "x" * size}}


def test_a_too_large_write_changes_nothing(store: ObjectStore) -> None:
    store.create(_cm("small", 10))
    rv, history = store.resource_version, store.watch_history()
    with pytest.raises(RequestTooLarge, match="etcdserver: request is too large"):
        store.create(_cm("big", 1_600_000))
    cur = store.get("ConfigMap", "default", "small")
    cur["data"] = {"k": "y" * 1_600_000}
    with pytest.raises(RequestTooLarge):
        store.update(cur)
    assert (store.resource_version, store.watch_history()) == (rv, history)  # no version, no event
    assert store.try_get("ConfigMap", "default", "big") is None
    assert store.get("ConfigMap", "default", "small")["data"] == {"k": "x" * 10}
    # just under the limit is stored
    store.create(_cm("fits", 1_500_000))


def test_the_stored_encoding_is_asked_for_only_near_the_limit(store: ObjectStore) -> None:
    """JSON is larger than a built-in kind's protobuf: an object whose JSON fits is not encoded again."""
    asked: list[str] = []

    def sized(_info: KindInfo, obj: Obj) -> int:
        asked.append(obj["metadata"]["name"])
        return 1000  # as if its protobuf were small

    store.stored_size = sized
    store.create(_cm("small", 1_000_000))
    store.create(_cm("large", 1_600_000))  # its JSON is too large, its stored encoding is not
    assert asked == ["large"]


def test_an_in_process_writer_is_retried_without_its_managed_fields(store: ObjectStore) -> None:
    """As kube-apiserver's handlers retry a component's too large create or update without managedFields."""
    def record(_old: Obj | None, new: Obj, manager: str, _sub: str) -> Obj:
        return {**new, "metadata": {**new["metadata"], "managedFields": [
            {"manager": manager, "operation": "Update", "fieldsV1": {"f:data": {"f:k": {}}, "pad": "p" * 200_000}}]}}

    store.field_manager = record
    small = store.create(_cm("a", 10), manager="kubelet")
    assert small["metadata"]["managedFields"][0]["manager"] == "kubelet"
    big = store.create(_cm("b", 1_450_000), manager="kubelet")  # fits alone, not with its entry
    assert "managedFields" not in big["metadata"]
    small["data"] = {"k": "z" * 1_450_000}
    updated = store.update(small, manager="kubelet")
    assert "managedFields" not in updated["metadata"]
    with pytest.raises(RequestTooLarge):
        store.create(_cm("c", 1_600_000), manager="kubelet")


def test_a_writer_that_cannot_wait_is_told_the_store_is_busy(store: ObjectStore) -> None:
    """transaction(wait=False) (the event loop's event writer): StoreBusy at once while another thread
    writes, instead of holding the loop for that thread's whole transaction."""
    inside, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.transaction() as tx:
            tx.create(_cm("worker", 10))
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert inside.wait(10)
        with pytest.raises(StoreBusy), store.transaction(wait=False) as tx:
            tx.create(_cm("loop", 10))
    finally:
        release.set()
        thread.join(10)
    with store.transaction(wait=False) as tx:
        tx.create(_cm("loop", 10))
    assert {o["metadata"]["name"] for o in store.list("ConfigMap")} == {"worker", "loop"}
