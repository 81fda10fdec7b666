"""A CRD's selectableFields: the jsonPath checks (texts as kube-apiserver v1.37.2 answers them, see
tests/integration/test_custom_resource_selectable_fields.py), the values a field selector compares, the
published extension, and the custom resource strategy's field labels."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.crds import CustomResourceStrategy
from nodeagent.apiserver.schema import crd as crd_schema
from nodeagent.apiserver.schema import selectable
from nodeagent.apiserver.schema.model import Schema

SPEC = {"type": "object", "properties": {
    "color": {"type": "string"}, "n": {"type": "integer"}, "ok": {"type": "boolean"}, "ratio": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "extra": {"type": "object", "additionalProperties": {"type": "string"}},
    "port": {"x-kubernetes-int-or-string": True},
}}
SCHEMA = {"type": "object", "properties": {"metadata": {"type": "object"}, "spec": SPEC}}
TYPE = ("must point to a field of type string, boolean or integer. Enum string fields and strings with formats are "
        "allowed.")


@pytest.mark.parametrize(("path", "details"), [
    (".spec.color", []),
    (".spec.n", []),
    (".spec.ok", []),
    (".spec.extra.k", []),
    ("spec.color", ['Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec']),
    (".spec.nosuch", ['Invalid value: ".spec.nosuch": is an invalid path: does not refer to a valid field']),
    (".spec.tags.x", ['Invalid value: ".spec.tags.x": is an invalid path: does not refer to a valid field']),
    (".spec.", ['Invalid value: ".spec.": is an invalid path: unexpected end of JSON path']),
    (".spec.tags[0]", ['Invalid value: ".spec.tags[0]": is an invalid path: array notation is not allowed']),
    (".spec['color']", ['Invalid value: ".spec[\'color\']": is an invalid path: array notation is not allowed']),
    (".spec", [f'Invalid value: ".spec": {TYPE}']),
    (".spec.ratio", [f'Invalid value: ".spec.ratio": {TYPE}']),
    (".spec.tags", [f'Invalid value: ".spec.tags": {TYPE}']),
    (".spec.port", [f'Invalid value: ".spec.port": {TYPE}']),
    (".metadata", ['Invalid value: ".metadata": must not point to fields in metadata',
                   f'Invalid value: ".metadata": {TYPE}']),
    (".metadata.name", ['Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field']),
])
def test_json_path_checks(path: str, details: list[str]) -> None:
    assert selectable.validate([{"jsonPath": path}], SCHEMA, "f") == [("f[0].jsonPath", d) for d in details]


def test_duplicates_empty_and_too_many() -> None:
    fields = [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.color"}, {"jsonPath": ""}, {}]
    assert selectable.validate(fields, SCHEMA, "f") == [
        ("f[1].jsonPath", 'Duplicate value: ".spec.color"'), ("f[2].jsonPath", "Required value"),
        ("f[3].jsonPath", "Required value")]
    many = {"type": "object", "properties": {f"s{i}": {"type": "string"} for i in range(9)}}
    assert selectable.validate([{"jsonPath": f".s{i}"} for i in range(8)], many, "f") == []
    assert selectable.validate([{"jsonPath": f".s{i}"} for i in range(9)], many, "f") == [
        ("f", "Too many: 9: must have at most 8 items")]


def _crd(*versions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "ws.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "versions": list(versions),
                     "names": {"plural": "ws", "singular": "w", "kind": "W", "listKind": "WList"}}}


def _version(name: str, paths: list[str], *, storage: bool, description: str = "") -> dict[str, Any]:
    spec = {**SPEC, "description": description} if description else SPEC
    return {"name": name, "served": True, "storage": storage, "selectableFields": [{"jsonPath": p} for p in paths],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}


def test_where_a_crd_reports_them() -> None:
    """Identical in every version: lifted to spec.selectableFields (v1 conversion); else per version, and
    refused where the schema was lifted away or not."""
    one = _crd(_version("v1", [".spec.nosuch"], storage=True))
    assert crd_schema.validate_crd(one) == [
        ("spec.selectableFields[0].jsonPath",
         'Invalid value: ".spec.nosuch": is an invalid path: does not refer to a valid field')]
    apart = _crd(_version("v1", [".spec.color"], storage=True),
                 _version("v2", [".spec.nosuch"], storage=False, description="v2"))
    assert crd_schema.validate_crd(apart) == [
        ("spec.versions[1].selectableFields[0].jsonPath",
         'Invalid value: ".spec.nosuch": is an invalid path: does not refer to a valid field')]
    same_schema = _crd(_version("v1", [".spec.color"], storage=True), _version("v2", [".spec.n"], storage=False))
    lifted = 'Invalid value: "": may only be set when `version.schema.openAPIV3Schema` is not included'
    assert crd_schema.validate_crd(same_schema) == [("spec.versions[0].selectableFields", lifted),
                                                    ("spec.versions[1].selectableFields", lifted)]
    same_fields = _crd(_version("v1", [".spec.color"], storage=True),
                       _version("v2", [".spec.color"], storage=False, description="v2"))
    assert crd_schema.validate_crd(same_fields) == [
        ("spec.selectableFields", 'Invalid value: "": may only be set when validations.schema is included')]
    fine = _crd(_version("v1", [".spec.color", ".spec.n"], storage=True),
                _version("v2", [".spec.ok"], storage=False, description="v2"))
    assert crd_schema.validate_crd(fine) == []


@pytest.mark.parametrize(("obj", "value"), [
    ({"spec": {"v": "blue"}}, "blue"),
    ({"spec": {"v": 2}}, "2"),
    ({"spec": {"v": True}}, "true"),
    ({"spec": {"v": False}}, "false"),
    ({"spec": {"v": 1e6}}, "1e+06"),
    ({"spec": {"v": None}}, ""),
    ({"spec": {}}, ""),
    ({"spec": "x"}, ""),
    ({}, ""),
])
def test_values_as_fmt_sprint(obj: dict[str, Any], value: str) -> None:
    assert selectable.getter("spec.v")(obj) == value


def test_names_and_published_extension() -> None:
    names = selectable.names([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.extra.k"}])
    assert names == ("spec.color", "spec.extra.k")
    assert selectable.published(Schema(type="object"), names).extra == {
        "x-kubernetes-selectable-fields": [{"fieldPath": "spec.color"}, {"fieldPath": "spec.extra.k"}]}
    assert selectable.published(Schema(type="object"), ()).extra == {}


def test_field_labels_of_a_custom_resource() -> None:
    """metadata.name always, metadata.namespace only when namespaced, then the version's own."""
    fields = {"spec.color": selectable.getter("spec.color")}
    namespaced = CustomResourceStrategy("W.example.com", fields=fields).field_getters()
    assert set(namespaced) == {"metadata.name", "metadata.namespace", "spec.color"}
    cluster = CustomResourceStrategy("W.example.com", fields=fields, namespaced=False).field_getters()
    assert set(cluster) == {"metadata.name", "spec.color"}
