"""crdrules.py's pieces that the kube-apiserver comparison (tests/integration/test_crd_validation_rules.py)
reaches only through whole writes: oldSelf correlation by list-map keys, ratcheting's deep equality,
fieldPath normalisation, format conversions, and the order of compile errors."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nodeagent.apiserver import crdrules
from nodeagent.apiserver.schema import crd as crd_schema
from nodeagent.apiserver.schema.model import Definitions

DEFS = Definitions()


def _node(raw: dict[str, Any]) -> crdrules.Node:
    node = crdrules.compile_node(crd_schema.schema_from_openapi_v3(raw), DEFS)
    assert node is not None
    return node


LIST_MAP = {"type": "object", "properties": {"items": {
    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
    "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}},
              "x-kubernetes-validations": [{"rule": "self.v == oldSelf.v", "message": "fixed"}]}}}}


def test_old_items_are_found_by_their_keys_not_their_index() -> None:
    node = _node(LIST_MAP)
    old = {"items": [{"k": "a", "v": 1}, {"k": "b", "v": 2}]}
    moved = {"items": [{"k": "b", "v": 2}, {"k": "a", "v": 1}, {"k": "c", "v": 9}]}
    assert crdrules.validate(node, moved, old, DEFS).errors == []
    changed = {"items": [{"k": "b", "v": 3}, {"k": "a", "v": 1}]}
    assert crdrules.validate(node, changed, old, DEFS).errors == [("items[0]", "Invalid value: fixed")]


def test_a_failing_rule_on_an_unchanged_part_is_a_warning() -> None:
    node = _node({"type": "object", "properties": {
        "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'bad'", "message": "a is bad"}]},
        "b": {"type": "integer"}}})
    result = crdrules.validate(node, {"a": "bad", "b": 2}, {"a": "bad", "b": 1}, DEFS)
    assert (result.errors, result.warnings) == ([], ['a: Invalid value: "bad": a is bad'])
    result = crdrules.validate(node, {"a": "bad"}, None, DEFS)
    assert result.errors == [("a", 'Invalid value: "bad": a is bad')]


def test_list_map_equality_ignores_order_but_an_atomic_list_does_not() -> None:
    schema = crd_schema.schema_from_openapi_v3(LIST_MAP)
    a, b = {"items": [{"k": "a", "v": 1}, {"k": "b", "v": 2}]}, {"items": [{"k": "b", "v": 2}, {"k": "a", "v": 1}]}
    assert crdrules._deep_equal(a, b, schema)
    atomic = crd_schema.schema_from_openapi_v3({"type": "array", "items": {"type": "integer"}})
    assert not crdrules._deep_equal([1, 2], [2, 1], atomic)
    assert not crdrules._deep_equal(1, 1.0, None)  # Go's DeepEqual: int64 and float64 differ


def test_field_paths_are_normalised_against_the_schema() -> None:
    schema = crd_schema.schema_from_openapi_v3({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "string"}}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}}}})
    assert crdrules._normalized_path(".a.b", schema, DEFS) == "a.b"
    assert crdrules._normalized_path(".m['x.y']", schema, DEFS) == "m[x.y]"
    assert crdrules._normalized_path(".nope", schema, DEFS) == ""


def test_format_strings_become_cel_values() -> None:
    assert crdrules._duration("1h30m") == timedelta(minutes=90)
    assert crdrules._duration("-1.5s") == timedelta(seconds=-1.5)
    assert crdrules._duration("soon") == "soon"
    assert crdrules._timestamp("2024-01-02T03:04:05Z").year == 2024
    assert crdrules._bytes("YWI=") == b"ab"


def test_compile_errors_list_children_before_their_parent() -> None:
    schema = crd_schema.schema_from_openapi_v3({"type": "object", "properties": {
        "s": {"type": "object", "properties": {"x": {"type": "integer"}},
              "x-kubernetes-validations": [{"rule": "self.y > 1"}]}},
        "x-kubernetes-validations": [{"rule": "self.q == 1"}]})
    found = crdrules.compile_errors(schema, DEFS, "root")
    assert [path for path, _ in found] == ["root.properties[s].x-kubernetes-validations[0].rule",
                                           "root.x-kubernetes-validations[0].rule"]
    assert "undefined field 'y'" in found[0][1]
