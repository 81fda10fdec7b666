"""The cheaper write paths keep their answers: JSON copies as deep as copy.deepcopy's, the
compare of a value new as a whole (`Typer._added`) against the general walk, FieldSet results
sharing subtrees without their inputs changing, managedFields bookkeeping that leaves its inputs
alone, and a pod create parsed once but still validated whenever the object changed in between."""

from __future__ import annotations

import copy
import random
from collections import OrderedDict
from typing import Any

import pytest

from nodeagent.apiserver.apply.fieldmanager import update_managed_fields
from nodeagent.apiserver.apply.fieldset import FieldSet, field_path, fieldset_to_fieldsv1
from nodeagent.apiserver.apply.typedvalue import Typer
from nodeagent.apiserver.jsoncopy import json_copy
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.schema.model import Schema
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.errors import ValidationError
from nodeagent.util.clock import FakeClock

DEFS = builtin_definitions()
POD_SCHEMA = Schema(ref="io.k8s.api.core.v1.Pod")
CLAIM_SCHEMA = Schema(ref="io.k8s.api.resource.v1.ResourceClaim")
CLOCK = FakeClock()


def pod(i: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"p-{i}", "namespace": "default", "labels": {"app": "a", "tier": str(i)},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u1"}]},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": f"c-{i}"}],
            "containers": [
                {"name": "main", "image": "pause", "resources": {"claims": [{"name": "gpu"}],
                                                               "limits": {"cpu": "1"}},
                 "ports": [{"containerPort": 80, "protocol": "TCP"}], "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "busybox", "args": ["a", "b"]},
            ],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "nodeSelector": {},
            "hostNetwork": False,
            "priority": 0,
        },
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "lastProbeTime": None}]},
    }


def claim() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "d", "pool": "p", "device": "gpu-0"}]}},
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]},
    }


# --- json_copy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [pod(), claim(), [], {}, [1, [2, [3, {"a": None}]]], "s", 1.5, True, None])
def test_json_copy_equals_deepcopy_and_shares_no_container(value: Any) -> None:
    out = json_copy(value)
    assert out == copy.deepcopy(value)

    def containers(v: Any) -> list[int]:
        if isinstance(v, dict):
            return [id(v), *(i for x in v.values() for i in containers(x))]
        if isinstance(v, list):
            return [id(v), *(i for x in v for i in containers(x))]
        return []

    assert not set(containers(out)) & set(containers(value))


def test_json_copy_of_what_json_never_holds_falls_back_to_deepcopy() -> None:
    odd = {"ordered": OrderedDict(a=[1]), "tuple": (1, [2]), "set": {1, 2}}
    out = json_copy(odd)
    assert out == odd
    assert type(out["ordered"]) is OrderedDict and out["ordered"]["a"] is not odd["ordered"]["a"]
    assert out["tuple"][1] is not odd["tuple"][1]


# --- compare of new values -------------------------------------------------------------------


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice([None, True, 0, 1.5, "", "x", [], {}])
    if roll < 0.65:
        return {rng.choice(["a", "b", "name", "spec", "items"]): _random_json(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _sets(fs: FieldSet) -> Any:
    return fieldset_to_fieldsv1(fs)


@pytest.mark.parametrize(("value", "schema", "builtin"), [
    (pod(), POD_SCHEMA, True),
    (claim(), CLAIM_SCHEMA, True),
    (pod(), POD_SCHEMA, False),
    *((_random_json(random.Random(seed)), Schema(preserve_unknown_fields=True), False) for seed in range(40)),
])
def test_a_value_new_as_a_whole_compares_as_the_removal_of_it(value: Any, schema: Schema, builtin: bool) -> None:
    """compare({}, x) takes the fast walk for every field of x; compare(x, {}) the general one
    for the mirror image: the added set of the one is the removed set of the other."""
    typer = Typer(DEFS, builtin_kind=builtin)
    doc = value if isinstance(value, dict) else {"v": value}
    added = typer.compare({}, doc, schema)
    removed = typer.compare(doc, {}, schema)
    assert _sets(added.added) == _sets(removed.removed)
    assert added.removed.empty() and added.modified.empty()


def test_a_shared_subtree_compares_as_unchanged() -> None:
    typer = Typer(DEFS)
    old = pod()
    new = dict(old, metadata=dict(old["metadata"], labels={"app": "b"}))  # spec and status: the very same
    cmp = typer.compare(old, new, POD_SCHEMA)
    assert _sets(cmp.modified) == {"f:metadata": {"f:labels": {"f:app": {}}}}
    assert _sets(cmp.removed) == {"f:metadata": {"f:labels": {"f:tier": {}}}}
    assert cmp.added.empty()


# --- FieldSet results share subtrees ------------------------------------------------------------


def test_fieldset_operations_leave_their_inputs_as_they_were() -> None:
    a = FieldSet.of(field_path("spec.a.x"), field_path("spec.b"), field_path("status.c.d"), field_path("meta"))
    b = FieldSet.of(field_path("spec.a.y"), field_path("status"), field_path("other.z"))
    before = (_sets(a), _sets(b))
    union, diff, rdiff = a.union(b), a.difference(b), a.recursive_difference(b)
    assert (_sets(a), _sets(b)) == before
    assert _sets(union) == {"f:meta": {}, "f:other": {"f:z": {}},
                            "f:spec": {"f:a": {"f:x": {}, "f:y": {}}, "f:b": {}},
                            "f:status": {".": {}, "f:c": {"f:d": {}}}}
    assert _sets(diff) == {"f:meta": {}, "f:spec": {"f:a": {"f:x": {}}, "f:b": {}}, "f:status": {"f:c": {"f:d": {}}}}
    assert _sets(rdiff) == {"f:meta": {}, "f:spec": {"f:a": {"f:x": {}}, "f:b": {}}}
    # a new set built from scratch does not reach into the shared ones
    built = FieldSet.of(field_path("spec.a.z"))
    assert _sets(a) == before[0] and _sets(built) == {"f:spec": {"f:a": {"f:z": {}}}}


# --- managedFields bookkeeping leaves its inputs alone ------------------------------------------


def test_update_managed_fields_changes_neither_input() -> None:
    old = pod()
    old["metadata"]["uid"] = "u"
    old["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                                         "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:spec": {"f:priority": {}}}}]
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["app"] = "b"
    old_before, new_before = copy.deepcopy(old), copy.deepcopy(new)
    out = update_managed_fields(old, new, manager="bench", schema=POD_SCHEMA, defs=DEFS, api_version="v1",
                                now="2026-01-02T00:00:00Z")
    assert old == old_before and new == new_before
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == ["kubectl", "bench"]
    assert out["metadata"]["managedFields"][1]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:app": {}}}}
    assert out["spec"] == new["spec"]


# --- a pod create parses once -------------------------------------------------------------------


def test_pod_prepared_for_create_is_still_validated_after_a_change() -> None:
    strategy = builtin_strategies()["Pod"]
    obj = pod()
    strategy.prepare_for_create(obj, CLOCK)
    strategy.validate(obj, CLOCK)  # the object just parsed
    strategy.prepare_for_create(obj, CLOCK)
    obj["spec"] = dict(obj["spec"], containers=[])  # replaced in between: parsed again, refused
    with pytest.raises(ValidationError):
        strategy.validate(obj, CLOCK)
    other = pod(1)
    other["spec"]["containers"] = []
    strategy.prepare_for_create(pod(), CLOCK)
    with pytest.raises(ValidationError):  # another object than the one prepared
        strategy.validate(other, CLOCK)
    with pytest.raises(ValidationError):  # nothing prepared: a plain validate
        strategy.validate(other, CLOCK)
