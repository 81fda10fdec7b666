"""Strict field validation: decoding with duplicates, unknown fields, pruning and the texts.

Expected texts are upstream's, from k8s test/integration/apiserver/field_validation_test.go
(the Deployment and CRD bodies below are the ones used there) and sigs.k8s.io/json's tests.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.schema.crd import schema_from_openapi_v3
from nodeagent.apiserver.schema.fields import (
    OBJECT_META,
    BodyDecodeError,
    apply_strict_error_message,
    decode_json,
    decode_yaml,
    decoding_error_message,
    patch_strict_error,
    prune,
    strict_error_message,
    strict_errors,
    strict_warnings,
    typed_strict_errors,
    unknown_fields,
)
from nodeagent.apiserver.schema.model import ANY, Definitions, Schema

S = Schema(type="string")
B = Schema(type="boolean")
I = Schema(type="integer")  # noqa: E741
STRING_MAP = Schema(type="object", additional_properties=S)

DEFS = Definitions(
    {
        OBJECT_META: Schema(
            type="object",
            properties={"name": S, "namespace": S, "labels": STRING_MAP, "resourceVersion": S},
        ),
        "Container": Schema(type="object", properties={"name": S, "image": S, "imagePullPolicy": S}),
        "PodSpec": Schema(
            type="object", properties={"containers": Schema(type="array", items=Schema(ref="Container"))}
        ),
        "PodTemplateSpec": Schema(
            type="object", properties={"metadata": Schema(ref=OBJECT_META), "spec": Schema(ref="PodSpec")}
        ),
        "LabelSelector": Schema(type="object", properties={"matchLabels": STRING_MAP}),
        "DeploymentSpec": Schema(
            type="object",
            properties={
                "replicas": I,
                "paused": B,
                "selector": Schema(ref="LabelSelector"),
                "template": Schema(ref="PodTemplateSpec"),
            },
        ),
        "Deployment": Schema(
            type="object",
            properties={
                "apiVersion": S,
                "kind": S,
                "metadata": Schema(ref=OBJECT_META),
                "spec": Schema(ref="DeploymentSpec"),
            },
        ),
    }
)
DEPLOYMENT = Schema(ref="Deployment")

INVALID_DEPLOYMENT_JSON = b"""
{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "dupename",
    "name": "test-deployment",
    "unknownMeta": "metaVal",
    "labels": {"app": "nginx"}
  },
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}
"""

INVALID_DEPLOYMENT_YAML = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: test-deployment
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never"""

TYPED_ERRORS = [
    'duplicate field "metadata.name"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]


def test_typed_json_body_lists_errors_in_document_order() -> None:
    value, errors = typed_strict_errors(INVALID_DEPLOYMENT_JSON, DEPLOYMENT, DEFS)
    assert errors == TYPED_ERRORS
    assert value["metadata"]["name"] == "test-deployment"
    assert value["spec"]["paused"] is False
    assert decoding_error_message("Deployment", "v1", errors) == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'duplicate field "metadata.name", unknown field "metadata.unknownMeta", unknown field "spec.unknown1", '
        'unknown field "spec.unknownDupe", duplicate field "spec.paused", '
        'unknown field "spec.template.spec.containers[0].unknownNested", '
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"'
    )


def test_typed_body_without_duplicates_takes_the_fast_path() -> None:
    body = b'{"apiVersion":"v1","kind":"Deployment","metadata":{"name":"a:b"},"spec":{"replica":3,"paused":true}}'
    value, errors = typed_strict_errors(body, DEPLOYMENT, DEFS)
    assert errors == ['unknown field "spec.replica"']
    assert strict_error_message("Deployment", "v1", ["spec.replica"], []) == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.replica"'
    )
    assert value["metadata"]["name"] == "a:b"


def test_yaml_body_duplicates_by_line_then_unknown_fields_in_sorted_order() -> None:
    value, duplicates = decode_yaml(INVALID_DEPLOYMENT_YAML)
    assert duplicates == [
        'line 5: key "name" already set in map',
        'line 12: key "unknownDupe" already set in map',
        'line 14: key "paused" already set in map',
        'line 28: key "imagePullPolicy" already set in map',
    ]
    unknown = unknown_fields(value, DEPLOYMENT, DEFS, sorted_keys=True)
    assert strict_error_message("Deployment", "v1", unknown, duplicates, yaml=True).endswith(
        "strict decoding error: yaml: unmarshal errors:\n"
        '  line 5: key "name" already set in map\n'
        '  line 12: key "unknownDupe" already set in map\n'
        '  line 14: key "paused" already set in map\n'
        '  line 28: key "imagePullPolicy" already set in map, unknown field "metadata.unknownMeta", '
        'unknown field "spec.template.spec.containers[0].unknownNested", unknown field "spec.unknown1", '
        'unknown field "spec.unknownDupe"'
    )
    assert strict_warnings(unknown, duplicates, yaml=True) == [
        'line 5: key "name" already set in map',
        'line 12: key "unknownDupe" already set in map',
        'line 14: key "paused" already set in map',
        'line 28: key "imagePullPolicy" already set in map',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
    ]


MERGE_PATCH = b"""
{"spec": {
  "unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
  "paused": true, "paused": false,
  "template": {"spec": {"containers": [{
    "name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
    "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}
"""


def test_merge_patch_duplicates_of_the_patch_then_unknown_fields_of_the_result() -> None:
    patch, duplicates = decode_json(MERGE_PATCH)
    patched: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, **patch}
    unknown = unknown_fields(patched, DEPLOYMENT, DEFS, sorted_keys=True)
    errors = strict_errors(unknown, duplicates)
    assert "strict decoding error: " + ", ".join(errors) == (
        'strict decoding error: duplicate field "spec.unknownDupe", duplicate field "spec.paused", '
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy", '
        'unknown field "spec.template.spec.containers[0].unknownNested", unknown field "spec.unknown1", '
        'unknown field "spec.unknownDupe"'
    )
    field, detail = patch_strict_error('{"spec":{"a":1}}', ['unknown field "spec.a"'])
    assert (field, detail) == (
        "patch",
        'Invalid value: "{\\"spec\\":{\\"a\\":1}}": strict decoding error: unknown field "spec.a"',
    )
    _, smp = patch_strict_error({"spec": {"b": [1, "x"], "a": None}}, ["x"], strategic=True)
    assert smp == 'Invalid value: "map[spec:map[a:<nil> b:[1 x]]]": strict decoding error: x'


def test_apply_duplicate_keys_message() -> None:
    body = b'{\n "spec": {\n  "paused": false,\n  "paused": true\n }\n}'
    _, duplicates = decode_yaml(body)
    assert apply_strict_error_message(duplicates) == (
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 4: key "paused" already set in map'
    )


@pytest.mark.parametrize(
    ("body", "value", "duplicates"),
    [
        (b'{"a":1,"a":2,"b":1,"b":2}', {"a": 2, "b": 2}, ["a", "b"]),
        (b'{"c":{"a":"1","a":"2","b":"1","b":"2"}}', {"c": {"a": "2", "b": "2"}}, ["c.a", "c.b"]),
        (b'{"l":[{"x":1},{"x":1,"x":2}]}', {"l": [{"x": 1}, {"x": 2}]}, ["l[1].x"]),
        (b'{"a":"x:y","b":"\\u003a"}', {"a": "x:y", "b": ":"}, []),
        (b'{"big":123456789012345678901234567890}', {"big": 1.2345678901234568e29}, []),
    ],
)
def test_decode_json(body: bytes, value: Any, duplicates: list[str]) -> None:
    assert decode_json(body) == (value, duplicates)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "unexpected end of JSON input"),
        (b'{"a":1', "unexpected end of JSON input"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
        (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
        (b"[1,]", "invalid character ']' looking for beginning of value"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b'{"a":nul}', "invalid character '}' in literal null (expecting 'l')"),
        (b'{"a":1} {}', "invalid character '{' after top-level value"),
        (b"{'a':1}", "invalid character '\\'' looking for beginning of object key string"),
    ],
)
def test_malformed_json_has_go_messages(body: bytes, message: str) -> None:
    with pytest.raises(BodyDecodeError) as err:
        decode_json(body)
    assert str(err.value) == message
    assert isinstance(err.value, ValueError)


def test_yaml_keeps_timestamps_as_strings_and_stringifies_keys() -> None:
    assert decode_yaml(b"t: 2024-01-02T03:04:05Z\n1: one\ntrue: yes\n") == (
        {"t": "2024-01-02T03:04:05Z", "1": "one", "true": True},
        [],
    )
    with pytest.raises(BodyDecodeError) as err:
        decode_yaml(b"a: b: c\n")
    assert (
        str(err.value) == "error converting YAML to JSON: yaml: line 1: mapping values are not allowed in this context"
    )


def test_unknown_fields_respect_preserve_and_any_subtrees() -> None:
    schema = Schema(
        type="object",
        properties={
            "spec": Schema(
                type="object",
                properties={"free": Schema(type="object", preserve_unknown_fields=True), "raw": ANY},
            )
        },
    )
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "bogus": 1}, "spec": {
        "free": {"anything": {"goes": 1}}, "raw": {"x": [1]}, "other": 1}}  # fmt: skip
    assert unknown_fields(obj, schema, DEFS) == ["metadata.bogus", "spec.other"]
    assert unknown_fields(obj, schema, DEFS, resource=False) == ["apiVersion", "kind", "metadata", "spec.other"]


CRD_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                "knownField1": {"type": "string"},
                "embeddedObj": {
                    "x-kubernetes-embedded-resource": True,
                    "type": "object",
                    "properties": {
                        "apiversion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                    },
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                    "x-kubernetes-list-type": "map",
                    "items": {
                        "properties": {
                            "containerPort": {"format": "int32", "type": "integer"},
                            "hostIP": {"type": "string"},
                            "hostPort": {"format": "int32", "type": "integer"},
                            "name": {"type": "string"},
                            "protocol": {"type": "string"},
                        },
                        "required": ["containerPort", "protocol"],
                        "type": "object",
                    },
                },
            },
        }
    },
}

CRD_INVALID_BODY = b"""
{
  "apiVersion": "example.com/v1",
  "kind": "Example",
  "metadata": {"name": "dupename", "name": "ex", "unknownMeta": "metaVal", "resourceVersion": "1"},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "knownField1": "val1",
    "knownField1": "val2",
    "ports": [{
      "name": "portName", "containerPort": 8080, "protocol": "TCP",
      "hostPort": 8081, "hostPort": 8082, "unknownNested": "val"
    }],
    "embeddedObj": {
      "apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "my-cm", "namespace": "my-ns", "unknownEmbeddedMeta": "foo"}
    }
  }
}
"""


def test_custom_resource_duplicates_then_pruned_paths() -> None:
    value, duplicates = decode_json(CRD_INVALID_BODY)
    pruned, unknown = prune(value, schema_from_openapi_v3(CRD_SCHEMA), DEFS)
    assert strict_errors(unknown, duplicates) == [
        'duplicate field "metadata.name"',
        'duplicate field "spec.unknownDupe"',
        'duplicate field "spec.knownField1"',
        'duplicate field "spec.ports[0].hostPort"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.ports[0].unknownNested"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'unknown field "spec.embeddedObj.metadata.unknownEmbeddedMeta"',
    ]
    assert pruned == {
        "apiVersion": "example.com/v1",
        "kind": "Example",
        "metadata": {"name": "ex", "resourceVersion": "1"},
        "spec": {
            "knownField1": "val2",
            "ports": [{"name": "portName", "containerPort": 8080, "protocol": "TCP", "hostPort": 8082}],
            "embeddedObj": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "my-cm", "namespace": "my-ns"},
            },
        },
    }


def test_schemaless_custom_resource_prunes_only_below_declared_fields() -> None:
    # Upstream's "schemaless" CRD is the same schema with x-kubernetes-preserve-unknown-fields on spec.
    schemaless: Any = copy.deepcopy(CRD_SCHEMA)
    schemaless["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] = True
    value, duplicates = decode_json(CRD_INVALID_BODY)
    pruned, unknown = prune(value, schema_from_openapi_v3(schemaless), DEFS)
    assert strict_errors(unknown, duplicates) == [
        'duplicate field "metadata.name"',
        'duplicate field "spec.unknownDupe"',
        'duplicate field "spec.knownField1"',
        'duplicate field "spec.ports[0].hostPort"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.ports[0].unknownNested"',
        'unknown field "spec.embeddedObj.metadata.unknownEmbeddedMeta"',
    ]
    assert pruned["spec"]["unknown1"] == "val1"


def test_prune_drops_nulls_of_non_nullable_fields_without_reporting_them() -> None:
    schema = schema_from_openapi_v3(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "string"},
                        "b": {"type": "string", "nullable": True},
                        "c": {"type": "string", "default": "x"},
                    },
                }
            },
        }
    )
    pruned, paths = prune({"spec": {"a": None, "b": None, "c": None, "d": 1}}, schema, Definitions())
    assert pruned == {"spec": {"b": None, "c": None}}
    assert paths == ["spec.d"]
