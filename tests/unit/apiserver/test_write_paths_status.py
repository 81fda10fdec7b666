"""A status write's cheaper path keeps its answers: a strategic merge patch that shares the parts
it does not name gives the same object as the deep-copying one (the input untouched), the
unknown-field walk skips only the parts shared with the stored object, list keys written without
the JSON encoder read as with it, and a pod status write skips the pod parse only while the spec
and the metadata the parse reads are the stored ones."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.apply.fieldset import key_pe
from nodeagent.apiserver.jsoncopy import json_copy
from nodeagent.apiserver.patch.strategic import strategic_merge_patch
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.schema.fields import unknown_fields
from nodeagent.apiserver.schema.gotext import go_json
from nodeagent.apiserver.schema.model import Schema
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.errors import ValidationError
from nodeagent.util.clock import FakeClock

DEFS = builtin_definitions()
POD = Schema(ref="io.k8s.api.core.v1.Pod")


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "labels": {"app": "a"},
                     "finalizers": ["x", "y"]},
        "spec": {"containers": [{"name": "c", "image": "pause", "env": [{"name": "A", "value": "1"}]}],
                 "nodeName": "n1"},
        "status": {"phase": "Pending", "qosClass": "BestEffort",
                   "conditions": [{"type": "PodScheduled", "status": "True"},
                                  {"type": "Ready", "status": "False", "reason": "x"}],
                   "containerStatuses": [{"name": "c", "ready": False, "state": {"waiting": {"reason": "W"}}}]},
    }


PATCHES: list[dict[str, Any]] = [
    {"metadata": {"uid": "u1"}, "status": {"phase": "Running", "startTime": "t",
                                           "conditions": [{"type": "Ready", "status": "True"},
                                                          {"type": "Initialized", "status": "True"}],
                                           "containerStatuses": [{"name": "c", "ready": True,
                                                                  "state": {"running": {"startedAt": "t"}}}]}},
    {"status": {"$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}],
                "conditions": [{"type": "Ready", "status": "True"}], "message": None}},
    {"status": {"$retainKeys": ["phase"], "phase": "Failed"}},
    {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"], "labels": {"b": "2", "app": None}}},
    {"status": {"containerStatuses": [{"name": "c", "$patch": "delete"}]}},
    {"status": {"conditions": [{"type": "Ready", "$patch": "replace", "status": "Unknown"}]}},
    {"status": {"$patch": "replace", "phase": "Succeeded"}},
    {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
]


@pytest.mark.parametrize("patch", PATCHES)
def test_shared_merge_is_the_copying_merge(patch: dict[str, Any]) -> None:
    doc = pod()
    before = copy.deepcopy(doc)
    want = strategic_merge_patch(doc, json_copy(patch), POD, DEFS)
    got = strategic_merge_patch(doc, json_copy(patch), POD, DEFS, share=True)
    assert got == want
    assert doc == before  # the stored object is not written into
    for key in ("spec", "status", "metadata"):
        if key not in patch and key in got:
            assert got[key] is doc[key]  # not named by the patch: shared


def test_unknown_field_walk_skips_only_the_shared_parts() -> None:
    old = pod()
    new = {**old, "metadata": dict(old["metadata"]), "status": {**old["status"], "bogus": 1}}
    new["metadata"]["alsoBogus"] = "x"
    assert unknown_fields(new, POD, DEFS, unchanged=old) == unknown_fields(new, POD, DEFS) == \
        ["metadata.alsoBogus", "status.bogus"]
    old["spec"]["containers"][0]["unknownInside"] = True  # a shared part is not walked again
    assert unknown_fields(new, POD, DEFS, unchanged=old) == ["metadata.alsoBogus", "status.bogus"]
    assert "spec.containers[0].unknownInside" in unknown_fields(new, POD, DEFS)
    fresh = copy.deepcopy(new)  # nothing shared: all of it walked
    assert unknown_fields(fresh, POD, DEFS, unchanged=old) == unknown_fields(fresh, POD, DEFS)


@pytest.mark.parametrize("fields", [
    {"type": "Ready"}, {"name": "a b", "containerPort": "x"}, {"k": "<tag>"}, {"k": "é"}, {"k": 'a"b'},
    {"k": "a\\b"}, {"b": "1", "a": "2"}, {"port": 80, "protocol": "TCP"}, {"k": "\x7f"}, {"k": True},
    {"k": "line\u2028"}, {"&": "x"},
])
def test_list_keys_read_as_the_json_encoder_writes_them(fields: dict[str, Any]) -> None:
    assert key_pe(fields) == "k:" + go_json(dict(sorted(fields.items())))


def test_pod_status_write_parses_the_pod_only_when_what_it_reads_changed() -> None:
    strategy = builtin_strategies()["Pod"]
    clock = FakeClock()
    old = pod()
    old["spec"]["containers"][0]["name"] = "Not_A_DNS_Label"  # stored before (e.g. by a controller)
    new = {**old, "metadata": {**old["metadata"], "resourceVersion": "9"}, "status": {"phase": "Running"}}
    strategy.validate_status(new, old, clock)  # spec and labels are the stored ones: not parsed again
    relabeled = {**new, "metadata": {**new["metadata"], "labels": {"app": "b"}}}
    with pytest.raises(ValidationError):
        strategy.validate_status(relabeled, old, clock)
    respec = {**new, "spec": copy.deepcopy(old["spec"])}
    with pytest.raises(ValidationError):
        strategy.validate_status(respec, old, clock)
