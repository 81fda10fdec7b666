"""Transaction.peek and writes with copy=False: the control plane's hot paths read and keep the
stored objects themselves instead of deep copies; the default writes still hand out copies."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from nodeagent.store import ObjectStore
from nodeagent.store.interning import ValueInterner
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


async def test_a_new_version_shares_its_unchanged_parts_with_the_one_it_replaces(open_store: OpenStore) -> None:
    """The version a write replaces stays alive in the watch history: the new one points at its
    unchanged dicts, lists and strings instead of holding a second copy, and neither changes."""
    store: ObjectStore = open_store()
    first = pod("a")
    first["metadata"]["labels"] = {"app": "x"}
    first["spec"]["containers"] = [{"name": "c", "image": "busybox"}, {"name": "d", "image": "busybox"}]
    old = store.create(first)
    old_rv = old["metadata"]["resourceVersion"]
    async with store.watch({"Pod"}) as watch:
        cur = store.get("Pod", "default", "a")
        cur["spec"]["nodeName"] = "n1"
        cur["spec"]["containers"][1]["image"] = "busybox:2"
        store.update(cur)
        ev = watch.get_nowait()
    assert ev is not None
    before, after = store.peek("Pod", "default", "a"), ev.object
    assert after is before
    committed_old = store._hub._history[0].object  # the created version, as the history keeps it
    assert committed_old["metadata"]["resourceVersion"] == old_rv  # the new version's stamp did not leak into it
    assert committed_old["spec"].get("nodeName") is None
    assert committed_old["spec"]["containers"][1]["image"] == "busybox"
    assert after["metadata"] is not committed_old["metadata"]
    assert after["metadata"]["labels"] is committed_old["metadata"]["labels"]
    assert after["spec"] is not committed_old["spec"]
    assert after["spec"]["containers"] is not committed_old["spec"]["containers"]
    assert after["spec"]["containers"][0] is committed_old["spec"]["containers"][0]
    assert after["spec"]["containers"][1] is not committed_old["spec"]["containers"][1]
    assert after["spec"]["containers"][1]["name"] is committed_old["spec"]["containers"][1]["name"]
    assert after["spec"]["containers"][1]["image"] == "busybox:2"
    assert store.get("Pod", "default", "a") == after


def _managed(time: str, volume: str) -> list[dict[str, Any]]:
    fields: dict[str, Any] = {"f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}},
                         "f:volumes": {f'k:{{"name":"{volume}"}}': {".": {}, "f:name": {}}}}}
    return [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": time,
             "fieldsType": "FieldsV1", "fieldsV1": fields}]


def test_equal_managed_fields_sets_of_different_objects_are_held_once(open_store: OpenStore) -> None:
    """Pods made from one template carry the same FieldsV1 trees but for their own names: the equal
    subtrees (and every empty leaf) are one object in the store, and each pod still reads as written."""
    store: ObjectStore = open_store()
    a = store.create(pod("a", managedFields=_managed("2026-01-01T00:00:00Z", "vol-a")))
    b = store.create(pod("b", managedFields=_managed("2026-01-01T00:00:01Z", "vol-b")))
    store.create(pod("c", managedFields=_managed("2026-01-01T00:00:01Z", "vol-a")))
    assert a["metadata"]["managedFields"] == _managed("2026-01-01T00:00:00Z", "vol-a")
    assert b["metadata"]["managedFields"] == _managed("2026-01-01T00:00:01Z", "vol-b")
    fa, fb, fc = (store.peek("Pod", "default", n)["metadata"]["managedFields"][0]["fieldsV1"]
                  for n in "abc")
    assert fc is fa  # the very same tree
    assert fb is not fa and fb["f:spec"] is not fa["f:spec"]  # they differ in f:volumes
    assert fb["f:spec"]["f:containers"] is fa["f:spec"]["f:containers"]
    leaves = fa["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert leaves["f:image"] is leaves["f:name"] is fb["f:spec"]["f:volumes"]['k:{"name":"vol-b"}']["f:name"]
    assert store.get("Pod", "default", "b")["metadata"]["managedFields"] == _managed("2026-01-01T00:00:01Z", "vol-b")


def test_the_interner_never_changes_what_it_is_given_and_keeps_what_is_used() -> None:
    interner = ValueInterner(size=4)
    given: dict[str, Any] = {"f:a": {}, "f:b": {"f:c": {}}}
    before = orjson.dumps(given)
    kept = interner.value(given)
    assert kept == given and kept is not given and orjson.dumps(given) == before
    assert interner.value({"f:a": {}, "f:b": {"f:c": {}}}) is kept
    for i in range(3):  # the young generation (4 subtrees: given's 3 and one) fills and becomes the old one
        interner.value([str(i)])
    assert interner.value({"f:a": {}, "f:b": {"f:c": {}}}) is kept  # found in the old one: kept on
    for i in range(7):
        interner.value([f"y{i}"])
    again = interner.value({"f:a": {}, "f:b": {"f:c": {}}})
    assert again == kept and again is not kept  # unused for two generations: gone


def test_only_values_that_encode_alike_are_joined() -> None:
    """`1`, `1.0` and `true` are equal in Python and two key orders make equal dicts; each keeps its
    own encoding."""
    interner = ValueInterner()
    values: list[Any] = [{"a": 1}, {"a": 1.0}, {"a": True}, {"a": 1, "b": 2}, {"b": 2, "a": 1}, [1], [True],
                         {"n": 2**70}]
    kept = [interner.value(v) for v in values]
    again = [interner.value(copy.deepcopy(v)) for v in values]
    assert [repr(v) for v in kept] == [repr(v) for v in values]  # repr tells 1, 1.0 and True apart
    assert [repr(v) for v in again] == [repr(v) for v in values]
    assert all(a is k for a, k in zip(again[:7], kept[:7], strict=True))
    assert again[7] is not kept[7]  # not JSON: left as given
    assert interner.value("a long enough name-0") is interner.value("".join(["a long enough ", "name-0"]))
    assert interner.value(100000) is interner.value(int("100000"))
    assert interner.value(True) is True and interner.value(1.5) == 1.5


def test_objects_from_one_template_share_their_equal_parts(open_store: OpenStore) -> None:
    """Pods of one template hold one copy of every equal string and subtree, and read as written."""
    store: ObjectStore = open_store()
    tolerations = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 300}]
    for name in ("a", "b"):
        p = pod(name)
        p["spec"]["tolerations"] = orjson.loads(orjson.dumps(tolerations))
        p["spec"]["containers"] = [{"name": "c", "image": "registry.example/pause:3.10"}]
        store.create(p)
    a, b = store.peek("Pod", "default", "a"), store.peek("Pod", "default", "b")
    assert a is not None and b is not None
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"] and a["spec"]["tolerations"] == tolerations
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["metadata"] is not b["metadata"] and a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["metadata"]["name"] == "a" and b["metadata"]["name"] == "b"
    got = store.get("Pod", "default", "b")
    got["spec"]["tolerations"][0]["tolerationSeconds"] = 5  # a read is a private copy
    store.update(got)
    assert store.peek("Pod", "default", "a")["spec"]["tolerations"] == tolerations
    assert store.peek("Pod", "default", "b")["spec"]["tolerations"][0]["tolerationSeconds"] == 5


def test_a_kept_subtree_is_found_by_identity_and_a_copy_of_it_by_value() -> None:
    interner = ValueInterner()
    kept = interner.value({"a": ["x", {"b": 1}]})
    assert interner.value(kept) is kept and interner.value(kept["a"]) is kept["a"]
    assert interner.value({"a": ["x", {"b": 1}]}) is kept
    assert interner.value({"a": ["x", {"b": 2}]})["a"][0] is kept["a"][0]


def test_a_write_that_changes_only_a_value_equal_by_python_is_written(open_store: OpenStore) -> None:
    """`==` takes 1, 1.0 and true for one another: a write turning a nested 1 into true was taken as
    a no-op (answered, nothing stored), and one that changed something else kept the old 1 through
    the shared parts. kube-apiserver compares the encoded bytes: both are writes."""
    store: ObjectStore = open_store()
    first = pod("a")
    first["spec"]["extra"] = {"flag": 1, "deep": {"n": 1}}
    old = store.create(first)
    cur = store.get("Pod", "default", "a")
    cur["spec"]["extra"]["deep"]["n"] = True
    written = store.update(cur)
    assert written["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
    assert orjson.dumps(store.get("Pod", "default", "a")["spec"]["extra"]) == b'{"flag":1,"deep":{"n":true}}'
    cur = store.get("Pod", "default", "a")
    cur["spec"]["extra"]["flag"] = True
    cur["metadata"]["labels"] = {"changed": "too"}
    store.update(cur)
    assert orjson.dumps(store.get("Pod", "default", "a")["spec"]["extra"]) == b'{"flag":true,"deep":{"n":true}}'
    same = store.get("Pod", "default", "a")
    assert store.update(same)["metadata"]["resourceVersion"] == same["metadata"]["resourceVersion"]  # a no-op


def test_empty_maps_are_never_one_object_outside_managed_fields() -> None:
    """A reader's copy.deepcopy keeps aliases: an empty map shared by a template's metadata, resources and
    securityContext would make a label set on the copy's metadata show in all three (a CronJob's Job got
    its controller-uid labels in its containers' resources). Only FieldsV1's empty leaves are shared."""
    import copy

    interner = ValueInterner()
    fields: dict[str, Any] = {"f:spec": {"f:a": {}, "f:b": {}}}
    obj = {"metadata": {"name": "x", "managedFields": [{"fieldsV1": fields}], "labels": {}},
           "spec": {"template": {"metadata": {}, "spec": {"containers": [{"resources": {}, "securityContext": {}}]}}}}
    interner.share(obj)
    template = copy.deepcopy(obj["spec"]["template"])
    template["metadata"]["labels"] = {"job-name": "j"}
    assert template["spec"]["containers"][0] == {"resources": {}, "securityContext": {}}
    leaves = obj["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
    assert leaves["f:a"] is leaves["f:b"]  # FieldsV1's empty leaves stay one object
