"""Typer.compare's fields of new values (every create, every new item of a write): written
straight into the set's nodes and grafted where the new value sits; the sets must be the ones
upstream's managedFields show (maps and list items with ".", a struct field with it only when the
left side lacks it: a plain struct is there whenever its parent is, a new item's are not)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.apply.fieldset import fieldset_to_fieldsv1, key_pe, pe_order
from nodeagent.apiserver.apply.typedvalue import Typer
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.schema.model import Schema

TYPER = Typer(builtin_definitions())
POD = Schema(ref="io.k8s.api.core.v1.Pod")
C1 = 'k:{"name":"c1"}'
C2 = 'k:{"name":"c2"}'
NEW: dict[str, Any] = {
    "metadata": {"labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c1", "image": "b", "workingDir": "/w"},
                            {"name": "c2", "image": "x", "resources": {"limits": {"cpu": "1"}}}]},
}
C2_FIELDS: dict[str, Any] = {".": {}, "f:image": {}, "f:name": {},
                             "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}}}}
LABELS: dict[str, Any] = {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}


@pytest.mark.parametrize(("old", "added", "modified"), [
    pytest.param({}, {**LABELS, "f:spec": {"f:containers": {
        C1: {".": {}, "f:image": {}, "f:name": {}, "f:workingDir": {}}, C2: C2_FIELDS}}}, {}, id="create"),
    pytest.param({"spec": {"containers": [{"name": "c1", "image": "a"}]}},
                 {**LABELS, "f:spec": {"f:containers": {C1: {"f:workingDir": {}}, C2: C2_FIELDS}}},
                 {"f:spec": {"f:containers": {C1: {"f:image": {}}}}}, id="new item and field next to a modified one"),
])
def test_added_fields(old: dict[str, Any], added: dict[str, Any], modified: dict[str, Any]) -> None:
    c = TYPER.compare(old, NEW, POD)
    assert fieldset_to_fieldsv1(c.added) == added
    assert fieldset_to_fieldsv1(c.modified) == modified
    assert fieldset_to_fieldsv1(c.removed) == {}


def test_memoised_tokens_are_the_plain_ones() -> None:
    assert key_pe({"name": "c1"}) == C1 == key_pe({"name": "c1"})
    assert key_pe({"port": 80}) == 'k:{"port":80}'
    assert key_pe({"b": "1", "a": "2"}) == 'k:{"a":"2","b":"1"}'
    assert sorted(["i:2", C1, "f:z", "v:1"], key=pe_order) == ["f:z", C1, "v:1", "i:2"]
