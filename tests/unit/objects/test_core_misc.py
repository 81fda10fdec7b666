"""ResourceQuota and Event admission (store hooks), and a quota evaluator that survives any stored quota."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane import quota
from nodeagent.errors import ValidationError
from nodeagent.objects import core as core_misc
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock


@pytest.fixture
def store() -> Any:
    kinds = builtin_kinds().with_hooks({**resource.hooks(), **core_misc.hooks()})
    s = ObjectStore.memory(kinds, FakeClock())
    yield s
    s.close()


def rq(name: Any = "q", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec}


def event(name: Any = "e", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, "involvedObject": {"kind": "Pod"},
            **fields}


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        (rq(12345), 'metadata.name: Invalid value: 12345: must be a string, not number'),
        (event(12345), 'metadata.name: Invalid value: 12345: must be a string, not number'),
        (rq(hard="x"), 'spec.hard: Invalid value: "x": must be an object, not string'),
        (rq(hard={"pods": "lots"}), 'spec.hard[pods]: Invalid value: "lots": must be a valid quantity'),
        (rq(hard={"pods": "-1"}), 'spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0'),
        (rq(scopes=["Nope"]), 'spec.scopes[0]: Unsupported value: "Nope"'),
        (event(involvedObject="x"), 'involvedObject: Invalid value: "x": must be an object, not string'),
        (event(reason="r" * 129), "reason: Invalid value:"),
        (event(count="3"), 'count: Invalid value: "3": must be an integer'),
    ],
)
def test_refused_with_a_field_path_and_nothing_committed(store: ObjectStore, obj: dict[str, Any], text: str) -> None:
    with pytest.raises(ValidationError) as err:
        store.create(obj)
    assert text in str(err.value)
    assert store.list(obj["kind"]) == []


def test_valid_quota_and_event_and_a_numeric_looking_name(store: ObjectStore) -> None:
    store.create(rq("12345", hard={"pods": "2", "gpu.deviceclass.resource.k8s.io/devices": "1"}, scopes=["BestEffort"]))
    store.create(event("12345", reason="Started", count=1))
    assert [q["metadata"]["name"] for q in store.list("ResourceQuota")] == ["12345"]
    assert [e["metadata"]["name"] for e in store.list("Event")] == ["12345"]


def test_the_store_refuses_a_numeric_name_for_any_kind(store: ObjectStore) -> None:
    with pytest.raises(ValidationError, match=r"metadata\.name: Invalid value: 7: must be a string"):
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 7}})


@pytest.mark.parametrize("hard", ["x", ["a"], {"gpu.deviceclass.resource.k8s.io/devices": "x"}, None, {1: "2"}])
def test_quota_evaluator_survives_any_stored_quota(hard: Any) -> None:
    q: dict[str, Any] = {"metadata": {"name": "q"}, "spec": {"hard": hard}}
    assert quota.hard_limits(q) == {}
    assert quota.check({quota.CLAIM_COUNT: 1}, {}, [q, {"spec": "x"}]) is None
    assert quota.status_used(q, {}) == {"hard": {}, "used": {}}
