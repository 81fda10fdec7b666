"""Deletion: finalizers and deletionTimestamp, ownerReference garbage collection, restart durability."""

from __future__ import annotations

import pytest

from nodeagent.errors import Conflict, NotFound, Unavailable, ValidationError
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock
from tests.unit.store.builders import claim, node, owner_ref, pod
from tests.unit.store.conftest import OpenStore

FINALIZER = "resource.kubernetes.io/delete-protection"


def test_delete_without_finalizers_is_immediate(store: ObjectStore) -> None:
    store.create(pod("p"))
    gone = store.delete("Pod", "default", "p")
    assert gone["metadata"]["name"] == "p"
    assert gone["metadata"]["resourceVersion"] == "2"
    assert store.try_get("Pod", "default", "p") is None
    with pytest.raises(NotFound, match='pods "p" not found'):
        store.delete("Pod", "default", "p")


def test_delete_preconditions(store: ObjectStore) -> None:
    p = store.create(pod("p"))
    with pytest.raises(Conflict, match="the object has been modified"):
        store.delete("Pod", "default", "p", resource_version="7")
    with pytest.raises(Conflict, match="UID in precondition"):
        store.delete("Pod", "default", "p", uid="other")
    store.delete("Pod", "default", "p", resource_version=p["metadata"]["resourceVersion"], uid=p["metadata"]["uid"])


def test_finalizers_hold_the_object_until_removed(store: ObjectStore, fake_clock: FakeClock) -> None:
    store.create(claim("c", finalizers=[FINALIZER]))
    fake_clock.advance(30)
    marked = store.delete("ResourceClaim", "default", "c")
    assert marked["metadata"]["deletionTimestamp"] == "1970-01-12T13:47:10Z"
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert marked["metadata"]["resourceVersion"] == "2"
    # A second delete changes nothing.
    assert store.delete("ResourceClaim", "default", "c")["metadata"]["resourceVersion"] == "2"
    current = store.get("ResourceClaim", "default", "c")
    assert current["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    # Updates other than the finalizers still work; deletionTimestamp cannot be cleared.
    current["metadata"]["labels"] = {"x": "y"}
    del current["metadata"]["deletionTimestamp"]
    kept = store.update(current)
    assert kept["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    # No new finalizers while deleting.
    kept["metadata"]["finalizers"] = [FINALIZER, "example.com/other"]
    with pytest.raises(ValidationError) as err:
        store.update(kept)
    assert err.value.path == "metadata.finalizers"
    assert "no new finalizers can be added" in err.value.detail
    # Removing the last finalizer deletes for real.
    kept["metadata"]["finalizers"] = []
    gone = store.update(kept)
    assert gone["metadata"]["resourceVersion"] == "5"
    assert store.try_get("ResourceClaim", "default", "c") is None


def test_garbage_collection_cascades_from_pod_to_claim(store: ObjectStore) -> None:
    owner = store.create(pod("p"))
    store.create(claim("p-gpu", owner=owner))
    store.create(claim("unrelated"))
    store.delete("Pod", "default", "p")
    assert store.try_get("ResourceClaim", "default", "p-gpu") is None
    assert store.try_get("ResourceClaim", "default", "unrelated") is not None
    assert store.resource_version == 5  # two creates, delete pod (4), collect claim (5)


def test_garbage_collection_waits_for_owner_finalizers(store: ObjectStore) -> None:
    owner = store.create(pod("p", finalizers=["example.com/hold"]))
    store.create(claim("p-gpu", owner=owner))
    store.delete("Pod", "default", "p")
    assert store.try_get("ResourceClaim", "default", "p-gpu") is not None
    held = store.get("Pod", "default", "p")
    held["metadata"]["finalizers"] = []
    store.update(held)
    assert store.try_get("Pod", "default", "p") is None
    assert store.try_get("ResourceClaim", "default", "p-gpu") is None


def test_dependent_with_finalizer_gets_deletion_timestamp(store: ObjectStore) -> None:
    owner = store.create(pod("p"))
    store.create(claim("p-gpu", owner=owner, finalizers=[FINALIZER]))
    store.delete("Pod", "default", "p")
    dep = store.get("ResourceClaim", "default", "p-gpu")
    assert "deletionTimestamp" in dep["metadata"]
    dep["metadata"]["finalizers"] = []
    store.update(dep)
    assert store.try_get("ResourceClaim", "default", "p-gpu") is None


def test_dependent_with_a_live_second_owner_stays(store: ObjectStore) -> None:
    a = store.create(pod("a"))
    b = store.create(node("n1"))
    shared = claim("shared")
    shared["metadata"]["ownerReferences"] = [owner_ref(a), owner_ref(b)]
    store.create(shared)
    store.delete("Pod", "default", "a")
    assert store.try_get("ResourceClaim", "default", "shared") is not None
    store.delete("Node", "", "n1")
    assert store.try_get("ResourceClaim", "default", "shared") is None


def test_cascade_goes_through_chains(store: ObjectStore) -> None:
    n = store.create(node("n1"))
    p = store.create(pod("p", ownerReferences=[owner_ref(n)]))
    store.create(claim("c", owner=p))
    store.delete("Node", "", "n1")
    assert store.list("Pod") == []
    assert store.list("ResourceClaim") == []


def test_removing_owner_reference_protects_the_dependent(store: ObjectStore) -> None:
    owner = store.create(pod("p"))
    dep = store.create(claim("c", owner=owner))
    dep["metadata"]["ownerReferences"] = []
    store.update(dep)
    store.delete("Pod", "default", "p")
    assert store.try_get("ResourceClaim", "default", "c") is not None


def test_reopen_keeps_objects_and_counter(open_store: OpenStore) -> None:
    first = open_store()
    a = first.create(pod("a"))
    first.create(claim("c", finalizers=[FINALIZER]))
    first.delete("ResourceClaim", "default", "c")
    first.create(pod("b"))
    first.delete("Pod", "default", "b")  # the newest version belongs to a deleted object
    rv = first.resource_version
    assert rv == 5
    first.close()
    with pytest.raises(Unavailable):
        first.get("Pod", "default", "a")
    second = open_store()
    assert second.resource_version == rv
    assert second.get("Pod", "default", "a") == a
    assert "deletionTimestamp" in second.get("ResourceClaim", "default", "c")["metadata"]
    assert second.try_get("Pod", "default", "b") is None
    assert second.create(pod("d"))["metadata"]["resourceVersion"] == str(rv + 1)


def test_orphans_are_collected_at_start(open_store: OpenStore) -> None:
    first = open_store()
    owner = first.create(pod("p"))
    first.create(claim("c", owner=owner))
    orphan = claim("orphan")
    orphan["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "gone", "uid": "dead-uid"}]
    first.create(orphan)
    first.close()
    second = open_store()
    assert [c["metadata"]["name"] for c in second.list("ResourceClaim")] == ["c"]
    # A store that does not collect at start leaves orphans to collect_garbage().
    second.create(orphan)
    second.close()
    third = open_store(collect_orphans=False)
    assert len(third.list("ResourceClaim")) == 2
    assert third.collect_garbage() == 1
    assert [c["metadata"]["name"] for c in third.list("ResourceClaim")] == ["c"]
