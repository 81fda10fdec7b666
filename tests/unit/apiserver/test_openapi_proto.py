"""The swagger 2.0 document as gnostic's openapi.v2.Document: the encoding parses with the generated
message and every definition reads back to the JSON it came from; vendor extensions are YAML as
gnostic stores them; what swagger 2.0 has no place for is refused with its path; content
negotiation picks what kube-openapi's handler picks."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodeagent.apis.openapi.v2 import openapiv2_pb2 as pb
from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.openapi_http import JSON, PROTO_V2, PROTO_V2_DEPRECATED, etag_of, negotiate
from nodeagent.apiserver.protobuf import gnostic
from nodeagent.apiserver.protobuf.gnostic import OpenAPIProtoError, schema, to_yaml
from nodeagent.apiserver.schema.builtin import BUILTIN_GVK, builtin_definitions
from nodeagent.apiserver.schema.openapi import openapi_v2
from nodeagent.apiserver.server import OpenAPIDocs

RESOURCES = builtin_resources()
V2 = openapi_v2(RESOURCES, builtin_definitions(), BUILTIN_GVK)
DOC = pb.Document.FromString(gnostic.encode(V2))

_SCALARS = {
    "_ref": "$ref", "format": "format", "title": "title", "description": "description", "pattern": "pattern",
    "discriminator": "discriminator",
}
_NUMBERS = {"maximum": "maximum", "minimum": "minimum", "multiple_of": "multipleOf"}
_INTS = {"max_length": "maxLength", "min_length": "minLength", "max_items": "maxItems", "min_items": "minItems",
         "max_properties": "maxProperties", "min_properties": "minProperties"}
_BOOLS = {"exclusive_maximum": "exclusiveMaximum", "exclusive_minimum": "exclusiveMinimum",
          "unique_items": "uniqueItems", "read_only": "readOnly"}


def back_to_json(s: pb.Schema) -> dict[str, Any]:
    """What a reader of the protobuf (kube-openapi's proto models) sees, as swagger JSON again."""
    out: dict[str, Any] = {}
    for field, key in _SCALARS.items():
        if getattr(s, field):
            out[key] = getattr(s, field)
    for field, key in {**_NUMBERS, **_INTS}.items():
        if getattr(s, field):
            out[key] = getattr(s, field)
    for field, key in _BOOLS.items():
        if getattr(s, field):
            out[key] = True
    if s.HasField("type"):
        out["type"] = s.type.value[0] if len(s.type.value) == 1 else list(s.type.value)
    if s.HasField("items"):
        out["items"] = back_to_json(s.items.schema[0])
    if s.HasField("properties"):
        out["properties"] = {p.name: back_to_json(p.value) for p in s.properties.additional_properties}
    if s.HasField("additional_properties"):
        ap = s.additional_properties
        out["additionalProperties"] = back_to_json(ap.schema) if ap.HasField("schema") else ap.boolean
    if s.required:
        out["required"] = list(s.required)
    if s.enum:
        out["enum"] = [yaml.safe_load(e.yaml) for e in s.enum]
    if s.HasField("default"):
        out["default"] = yaml.safe_load(s.default.yaml)
    if s.all_of:
        out["allOf"] = [back_to_json(x) for x in s.all_of]
    for ext in s.vendor_extension:
        out[ext.name] = yaml.safe_load(ext.value.yaml)
    return out


def test_every_definition_round_trips() -> None:
    names = [d.name for d in DOC.definitions.additional_properties]
    assert names == list(V2["definitions"])  # document order kept
    for named in DOC.definitions.additional_properties:
        assert back_to_json(named.value) == V2["definitions"][named.name], named.name


def test_paths_and_document_fields() -> None:
    assert DOC.swagger == "2.0" and DOC.info.title == "Kubernetes"
    assert [p.name for p in DOC.paths.path] == list(V2["paths"])
    item = next(p.value for p in DOC.paths.path if p.name == "/api/v1/namespaces/{namespace}/pods")
    assert [p.parameter.non_body_parameter.path_parameter_sub_schema.name for p in item.parameters
            if p.parameter.non_body_parameter.HasField("path_parameter_sub_schema")] == ["namespace"]
    post = item.post
    assert list(post.consumes) == ["*/*"] and list(post.schemes) == ["https"]
    codes = [(r.name, r.value.response.schema.schema._ref) for r in post.responses.response_code]
    assert codes[0] == ("200", "#/definitions/io.k8s.api.core.v1.Pod")
    assert codes[-1] == ("401", "")
    gvk = next(e for e in post.vendor_extension if e.name == "x-kubernetes-group-version-kind")
    assert gvk.value.yaml == "group: ''\nkind: Pod\nversion: v1\n"
    assert DOC.security[0].additional_properties[0].name == "BearerToken"
    assert not DOC.security[0].additional_properties[0].value.value


@pytest.mark.parametrize(("value", "text"), [
    ("list", "list\n"),
    (True, "true\n"),
    (3, "3\n"),
    ([{"group": "", "kind": "Pod", "version": "v1"}], "- group: ''\n  kind: Pod\n  version: v1\n"),
    (["name", "protocol"], "- name\n- protocol\n"),
    ({"b": 1, "a": 2}, "b: 1\na: 2\n"),  # keys in document order, as gnostic keeps them
])
def test_vendor_extension_yaml(value: Any, text: str) -> None:
    assert to_yaml(value) == text
    assert yaml.safe_load(text) == value


@pytest.mark.parametrize(("doc", "expected"), [
    ({"type": ["string", "null"]}, {"type": ["string", "null"]}),
    ({"type": "object", "additionalProperties": False}, {"type": "object", "additionalProperties": False}),
    ({"type": "string", "enum": ["A", "B"], "default": "A"}, {"type": "string", "enum": ["A", "B"], "default": "A"}),
    ({"type": "integer", "format": "int32", "minimum": 1, "maximum": 10, "exclusiveMaximum": True},
     {"type": "integer", "format": "int32", "minimum": 1.0, "maximum": 10.0, "exclusiveMaximum": True}),
    # proto3 scalars have no presence: a zero bound is absent from the encoding, with gnostic too.
    ({"type": "integer", "minimum": 0}, {"type": "integer"}),
    ({"allOf": [{"$ref": "#/definitions/X"}], "description": "d"},
     {"allOf": [{"$ref": "#/definitions/X"}], "description": "d"}),
    ({"x-kubernetes-int-or-string": True}, {"x-kubernetes-int-or-string": True}),
])
def test_schema_table(doc: dict[str, Any], expected: dict[str, Any]) -> None:
    assert back_to_json(schema(doc, "$")) == expected


@pytest.mark.parametrize(("doc", "message"), [
    ({"definitions": {"A": {"type": "object", "nullable": True}}},
     "$.definitions[A].nullable: swagger 2.0 has no field 'nullable' here"),
    ({"definitions": {"A": {"properties": {"b": {"maxLength": "3"}}}}},
     "$.definitions[A].properties.b.maxLength: expected a int, got '3'"),
    ({"definitions": {"A": {"anyOf": []}}}, "$.definitions[A].anyOf: swagger 2.0 has no field 'anyOf' here"),
    ({"paths": {"/x": {"get": {"parameters": [{"name": "h", "in": "header"}]}}}},
     "$.paths[/x].get.parameters[0].in: unsupported parameter location 'header' (want body, query or path)"),
    ({"paths": {"x": {}}}, "$.paths.x: a path must start with '/'"),
    ({"securityDefinitions": {"B": {"type": "basic"}}},
     "$.securityDefinitions.B.type: only apiKey security schemes are supported, got 'basic'"),
    ({"openapi": "3.0.0"}, "$.openapi: swagger 2.0 has no field 'openapi' here"),
    ({"definitions": []}, "$.definitions: expected an object, got list"),
])
def test_refused_with_the_path(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(OpenAPIProtoError) as err:
        gnostic.encode(doc)
    assert str(err.value) == message


@pytest.mark.parametrize(("accept", "chosen"), [
    ("", JSON),
    ("*/*", JSON),
    ("application/*", JSON),
    (JSON, JSON),
    (PROTO_V2_DEPRECATED, PROTO_V2_DEPRECATED),
    (PROTO_V2, PROTO_V2),
    (f"{PROTO_V2_DEPRECATED}, {JSON}", PROTO_V2_DEPRECATED),  # kubectl's header: the first clause wins
    (f"{JSON};q=0.5, {PROTO_V2}", PROTO_V2),
    ("text/*, */*;q=0.1", JSON),
    (f"{JSON};q=0", None),
    ("text/html", None),
    ("application/yaml", None),
])
def test_v2_negotiation(accept: str, chosen: str | None) -> None:
    assert negotiate(accept, (JSON, PROTO_V2_DEPRECATED, PROTO_V2)) == chosen


def test_documents_encoded_once_per_catalog_version() -> None:
    ticks = iter(range(100, 200))
    docs = OpenAPIDocs(Catalog(RESOURCES), builtin_definitions, lambda: float(next(ticks)))
    first = docs.v2_protobuf()
    assert docs.v2_protobuf() is first
    assert pb.Document.FromString(first).definitions == DOC.definitions
    assert docs._v2_protobuf().etag == etag_of(docs.v2())
    docs.invalidate()
    again = docs.v2_protobuf()
    assert again is not first and again == first
