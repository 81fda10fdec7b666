"""CRD schemas: conversion to the model, structural checks, CRD validation, values and defaults.

Texts are upstream's (apiextensions-apiserver validation.go / schema/validation.go messages,
kube-openapi's validator messages as apiextensions turns them into field errors).
NodeResourceTopology is a trimmed but faithful copy of the topology.node.k8s.io CRD that
node-feature-discovery ships (deployment/base/noderesourcetopologies-crd).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.apiserver.schema import crd as crd_schema
from nodeagent.apiserver.schema.crd import (
    defaults,
    schema_from_openapi_v3,
    structural_errors,
    validate_crd,
    validate_values,
)
from nodeagent.apiserver.schema.model import ANY, Definitions, Schema

QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "pattern": (
        "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))"
        "(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"
    ),
    "x-kubernetes-int-or-string": True,
}
ATTRIBUTES = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
        "required": ["name", "value"],
    },
}
ZONES = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "attributes": ATTRIBUTES,
            "costs": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "value": {"type": "integer", "format": "int64"}},
                    "required": ["name", "value"],
                },
            },
            "name": {"type": "string"},
            "parent": {"type": "string"},
            "resources": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "allocatable": QUANTITY,
                        "available": QUANTITY,
                        "capacity": QUANTITY,
                        "name": {"type": "string", "description": "Name of the resource."},
                    },
                    "required": ["allocatable", "available", "capacity", "name"],
                },
            },
            "type": {"type": "string"},
        },
        "required": ["name", "type"],
    },
}
NRT_V1ALPHA2 = {
    "description": "NodeResourceTopology describes node resources and their topology.",
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "attributes": ATTRIBUTES,
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "topologyPolicies": {"type": "array", "items": {"type": "string"}},
        "zones": ZONES,
    },
    "required": ["zones"],
}
NRT_V1ALPHA1: dict[str, Any] = copy.deepcopy(NRT_V1ALPHA2)
del NRT_V1ALPHA1["properties"]["attributes"]
NRT_V1ALPHA1["required"] = ["topologyPolicies", "zones"]

NRT_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": "noderesourcetopologies.topology.node.k8s.io",
        "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1870"},
    },
    "spec": {
        "group": "topology.node.k8s.io",
        "names": {
            "kind": "NodeResourceTopology",
            "listKind": "NodeResourceTopologyList",
            "plural": "noderesourcetopologies",
            "shortNames": ["node-res-topo"],
            "singular": "noderesourcetopology",
        },
        "scope": "Cluster",
        "versions": [
            {"name": "v1alpha1", "served": True, "storage": False, "schema": {"openAPIV3Schema": NRT_V1ALPHA1}},
            {"name": "v1alpha2", "served": True, "storage": True, "schema": {"openAPIV3Schema": NRT_V1ALPHA2}},
        ],
    },
}

NRT_OBJECT: dict[str, Any] = {
    "apiVersion": "topology.node.k8s.io/v1alpha2",
    "kind": "NodeResourceTopology",
    "metadata": {"name": "node-1"},
    "topologyPolicies": ["SingleNUMANodeContainerLevel"],
    "zones": [
        {
            "name": "node-0",
            "type": "Node",
            "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}],
            "resources": [{"name": "cpu", "capacity": 4, "allocatable": "3", "available": "2500m"}],
        }
    ],
}


def test_node_resource_topology_crd_is_valid() -> None:
    assert validate_crd(NRT_CRD) == []
    for props in (NRT_V1ALPHA1, NRT_V1ALPHA2):
        assert structural_errors(props) == []


def test_node_resource_topology_values() -> None:
    schema = schema_from_openapi_v3(NRT_V1ALPHA2)
    defs = Definitions()
    assert validate_values(NRT_OBJECT, schema, defs) == []
    wrong = copy.deepcopy(NRT_OBJECT)
    wrong["zones"][0]["costs"][1]["value"] = "twenty"
    assert validate_values(wrong, schema, defs) == [
        (
            "zones[0].costs[1].value",
            'Invalid value: "string": zones[0].costs[1].value in body must be of type integer: "string"',
        )
    ]
    wrong = copy.deepcopy(NRT_OBJECT)
    wrong["zones"][0]["resources"][0]["capacity"] = "lots"
    del wrong["zones"][0]["type"]
    assert validate_values(wrong, schema, defs) == [
        ("zones[0].type", "Required value"),
        (
            "zones[0].resources[0].capacity",
            f"Invalid value: \"lots\": zones[0].resources[0].capacity in body should match '{QUANTITY['pattern']}'",
        ),
    ]
    wrong = copy.deepcopy(NRT_OBJECT)
    wrong["zones"][0]["resources"][0]["allocatable"] = True
    assert validate_values(wrong, schema, defs) == [
        (
            "zones[0].resources[0].allocatable",
            'Invalid value: "boolean": zones[0].resources[0].allocatable in body must be of type integer,string: '
            '"boolean"',
        )
    ]


def test_schema_from_openapi_v3() -> None:
    schema = schema_from_openapi_v3(
        {
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port"],
                            "maxItems": 4,
                            "items": {"type": "object", "properties": {"port": {"type": "integer", "minimum": 1}}},
                        },
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "any": {"type": "object", "additionalProperties": True},
                        "mode": {"type": "string", "enum": ["a", "b"], "default": "a", "nullable": True},
                        "q": QUANTITY,
                        "obj": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": True,
                            "x-kubernetes-map-type": "atomic",
                        },
                    },
                    "x-kubernetes-validations": [{"rule": "self.ports.size() > 0"}],
                }
            },
        }
    )
    spec = schema.properties["spec"]
    assert schema.required == ("spec",)
    assert spec.preserve_unknown_fields
    assert spec.extra == {"x-kubernetes-validations": [{"rule": "self.ports.size() > 0"}]}
    ports = spec.properties["ports"]
    assert (ports.list_type, ports.list_map_keys, ports.max_items) == ("map", ("port",), 4)
    assert ports.items is not None and ports.items.properties["port"].minimum == 1.0
    assert spec.properties["labels"].additional_properties == Schema(type="string")
    assert spec.properties["any"].additional_properties == ANY
    mode = spec.properties["mode"]
    assert (mode.enum, mode.default, mode.nullable) == (("a", "b"), "a", True)
    q = spec.properties["q"]
    assert q.int_or_string and q.type == "" and q.extra == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    obj = spec.properties["obj"]
    assert obj.embedded_resource and obj.map_type == "atomic"


P = "spec.versions[0].schema.openAPIV3Schema"


def _obj(**spec: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", **spec}}}


@pytest.mark.parametrize(
    ("props", "errors"),
    [
        pytest.param(
            _obj(properties={"a": {"properties": {"b": {"type": "string"}}}}),
            [
                (
                    f"{P}.properties[spec].properties[a].type",
                    "Required value: must not be empty for specified object fields",
                )
            ],
            id="field without type",
        ),
        pytest.param(
            _obj(properties={"l": {"type": "array", "items": {}}}),
            [
                (
                    f"{P}.properties[spec].properties[l].items.type",
                    "Required value: must not be empty for specified array items",
                )
            ],
            id="items without type",
        ),
        pytest.param(
            {"properties": {}},
            [(f"{P}.type", "Required value: must not be empty at the root")],
            id="root without type",
        ),
        pytest.param(
            _obj(properties={"l": {"type": "array"}}),
            [(f"{P}.properties[spec].properties[l].items", "Required value: must be specified")],
            id="array without items",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": "string"}},
            [(f"{P}.additionalProperties", "Forbidden: must not be used at the root")],
            id="additionalProperties at the root",
        ),
        pytest.param(
            _obj(properties={"a": {"type": "string"}}, additionalProperties={"type": "string"}),
            [
                (
                    f"{P}.properties[spec].additionalProperties",
                    "Forbidden: additionalProperties and properties are mutual exclusive",
                )
            ],
            id="properties and additionalProperties",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}},
            },
            [
                (
                    f"{P}.properties[metadata]",
                    "Forbidden: must not specify anything other than name and generateName, "
                    "but metadata is implicitly specified",
                )
            ],
            id="metadata beyond name",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}
                },
            },
            [],
            id="metadata restricting name",
        ),
        pytest.param(
            _obj(
                properties={"a": {"type": "string"}},
                anyOf=[{"type": "object", "properties": {"b": {"type": "string"}}}],
            ),
            [
                (f"{P}.properties[spec].anyOf[0].properties[b].type", "Forbidden: must be empty to be structural"),
                (f"{P}.properties[spec].anyOf[0].type", "Forbidden: must be empty to be structural"),
            ],
            id="types in anyOf",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "anyOf": [{"properties": {"b": {"minLength": 1}}}],
            },
            [(f"{P}.properties[b]", f"Required value: because it is defined in {P}.anyOf[0].properties[b]")],
            id="undeclared field in a root anyOf",
        ),
        pytest.param(
            _obj(properties={"q": QUANTITY, "r": {"x-kubernetes-int-or-string": True}}),
            [],
            id="int-or-string patterns",
        ),
        pytest.param(
            _obj(properties={"e": {"type": "string", "x-kubernetes-embedded-resource": True}}),
            [
                (
                    f"{P}.properties[spec].properties[e].properties",
                    "Required value: must not be empty if x-kubernetes-embedded-resource is true without "
                    "x-kubernetes-preserve-unknown-fields",
                ),
                (
                    f"{P}.properties[spec].properties[e].type",
                    'Invalid value: "string": must be object if x-kubernetes-embedded-resource is true',
                ),
            ],
            id="embedded resource not an object",
        ),
        pytest.param(
            {"type": "string"},
            [(f"{P}.type", 'Invalid value: "string": must be object at the root')],
            id="root not an object",
        ),
        pytest.param(
            _obj(properties={"l": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}),
            [
                (
                    f"{P}.properties[spec].properties[l].uniqueItems",
                    "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                )
            ],
            id="uniqueItems",
        ),
        pytest.param(
            _obj(
                properties={
                    "l": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "items": {"type": "object", "properties": {"k": {"type": "string"}}},
                    }
                }
            ),
            [
                (
                    f"{P}.properties[spec].properties[l].x-kubernetes-list-map-keys",
                    "Required value: must not be empty if x-kubernetes-list-type is map",
                )
            ],
            id="map list without keys",
        ),
        pytest.param(
            _obj(
                properties={
                    "l": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["k"],
                        "items": {"type": "object", "properties": {"k": {"type": "string"}}},
                    }
                }
            ),
            [
                (
                    f"{P}.properties[spec].properties[l].items.properties[k].default",
                    "Required value: this property is in x-kubernetes-list-map-keys, "
                    "so it must have a default or be a required property",
                )
            ],
            id="map list key neither required nor defaulted",
        ),
        pytest.param(
            _obj(properties={"t": {"type": "foo"}}),
            [
                (
                    f"{P}.properties[spec].properties[t].type",
                    'Unsupported value: "foo": supported values: '
                    '"array", "boolean", "integer", "number", "object", "string"',
                )
            ],
            id="unknown type",
        ),
        pytest.param(
            _obj(properties={"a": {"type": "string", "x-kubernetes-preserve-unknown-fields": False}}),
            [
                (
                    f"{P}.properties[spec].properties[a].x-kubernetes-preserve-unknown-fields",
                    "Invalid value: false: must be true or undefined",
                )
            ],
            id="preserve false",
        ),
    ],
)
def test_structural_errors(props: dict[str, Any], errors: list[tuple[str, str]]) -> None:
    assert structural_errors(props) == errors


def _crd(**changes: Any) -> dict[str, Any]:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _obj(properties={"size": {"type": "integer"}})},
                }
            ],
        },
    }
    for path, value in changes.items():
        target: Any = crd
        *parents, last = path.split("__")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return crd


VERSIONS_TEXT = (
    "[]apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion"
    '{Name:"v1", Served:true, Storage:false}}'
)


@pytest.mark.parametrize(
    ("crd", "errors"),
    [
        pytest.param(_crd(), [], id="valid"),
        pytest.param(
            _crd(metadata__name="widget.example.com"),
            [("metadata.name", 'Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group')],
            id="name not plural.group",
        ),
        pytest.param(
            _crd(metadata__name="widgets.example", spec__group="example"),
            [("spec.group", 'Invalid value: "example": should be a domain with at least one dot')],
            id="group without a dot",
        ),
        pytest.param(
            _crd(spec__scope="Global"),
            [("spec.scope", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"')],
            id="scope",
        ),
        pytest.param(
            _crd(spec__versions__0__storage=False),
            [
                (
                    "spec.versions",
                    f"Invalid value: {VERSIONS_TEXT}: must have exactly one version marked as storage version",
                ),
                ("status.storedVersions", "Invalid value: []string(nil): must have at least one stored version"),
            ],
            id="no storage version",
        ),
        pytest.param(
            _crd(spec__versions__0__schema={}),
            [("spec.versions[0].schema.openAPIV3Schema", "Required value")],
            id="schema required",
        ),
        pytest.param(
            _crd(spec__versions__0__schema={"openAPIV3Schema": _obj(properties={"size": {}})}),
            [
                (
                    "spec.validation.openAPIV3Schema.properties[spec].properties[size].type",
                    "Required value: must not be empty for specified object fields",
                )
            ],
            id="single version schema errors at the top level",
        ),
        pytest.param(
            _crd(spec__names={"plural": "widgets", "kind": "Widget", "shortNames": ["W"]}),
            [
                (
                    "spec.names.shortNames[0]",
                    "Invalid value: \"W\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                    "start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  "
                    "or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                )
            ],
            id="short name",
        ),
        pytest.param(
            _crd(spec__names={"plural": "widgets", "kind": "Widget", "listKind": "Widget"}),
            [("spec.names.listKind", 'Invalid value: "Widget": kind and listKind may not be the same')],
            id="listKind equals kind",
        ),
        pytest.param(
            _crd(spec__versions__0__additionalPrinterColumns=[{"name": "Size", "type": "int"}]),
            [
                (
                    "spec.additionalPrinterColumns[0].type",
                    'Invalid value: "int": must be one of boolean,date,integer,number,string',
                ),
                ("spec.additionalPrinterColumns[0].JSONPath", "Required value"),
            ],
            id="printer column",
        ),
        pytest.param(
            _crd(
                spec__versions__0__subresources={
                    "status": {},
                    "scale": {"specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.x"},
                }
            ),
            [
                (
                    "spec.subresources.scale.specReplicasPath",
                    'Invalid value: "spec.replicas": must be a simple json path starting with .',
                ),
                (
                    "spec.subresources.scale.statusReplicasPath",
                    'Invalid value: ".spec.x": should be a json path under .status',
                ),
            ],
            id="scale subresource",
        ),
        pytest.param(
            _crd(spec__conversion={"strategy": "Other"}),
            [("spec.conversion.strategy", 'Unsupported value: "Other": supported values: "None", "Webhook"')],
            id="conversion strategy",
        ),
        pytest.param(
            _crd(metadata__name="widgets.apps.k8s.io", spec__group="apps.k8s.io"),
            [
                (
                    "metadata.annotations[api-approved.kubernetes.io]",
                    'Required value: protected groups must have approval annotation "api-approved.kubernetes.io", '
                    "see https://github.com/kubernetes/enhancements/pull/1111",
                )
            ],
            id="protected group",
        ),
    ],
)
def test_validate_crd(crd: dict[str, Any], errors: list[tuple[str, str]]) -> None:
    assert validate_crd(crd) == errors


def test_per_version_schema_errors_keep_their_version_path() -> None:
    crd = copy.deepcopy(NRT_CRD)
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["zones"]["items"]["properties"]["name"] = {}
    assert validate_crd(crd) == [
        (
            "spec.versions[1].schema.openAPIV3Schema.properties[zones].items.properties[name].type",
            "Required value: must not be empty for specified object fields",
        )
    ]


VALUES_SCHEMA = schema_from_openapi_v3(
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                    "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
                    "note": {"type": "string", "nullable": True},
                    "when": {"type": "string", "format": "date-time"},
                    "port": {"x-kubernetes-int-or-string": True},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 1},
                },
            }
        },
    }
)


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        ({"name": "abc"}, []),
        ({}, [("spec.name", "Required value")]),
        (
            {"name": "abc", "replicas": "3"},
            [("spec.replicas", 'Invalid value: "string": spec.replicas in body must be of type integer: "string"')],
        ),
        ({"name": "abc", "replicas": 3.0}, []),
        (
            {"name": "abc", "replicas": 11},
            [("spec.replicas", "Invalid value: 11: spec.replicas in body should be less than or equal to 10")],
        ),
        (
            {"name": "abc", "replicas": 0},
            [("spec.replicas", "Invalid value: 0: spec.replicas in body should be greater than or equal to 1")],
        ),
        (
            {"name": "abc", "ratio": 0},
            [("spec.ratio", "Invalid value: 0: spec.ratio in body should be greater than 0")],
        ),
        ({"name": "ab"}, [("spec.name", 'Invalid value: "ab": spec.name in body should be at least 3 chars long')]),
        ({"name": "abcdef"}, [("spec.name", "Too long: may not be more than 5 bytes")]),
        ({"name": "AbC"}, [("spec.name", "Invalid value: \"AbC\": spec.name in body should match '^[a-z]+$'")]),
        ({"name": "abc", "mode": "c"}, [("spec.mode", 'Unsupported value: "c": supported values: "a", "b"')]),
        (
            {"name": "abc", "tags": []},
            [("spec.tags", "Invalid value: 0: spec.tags in body should have at least 1 items")],
        ),
        ({"name": "abc", "tags": ["a", "b", "c"]}, [("spec.tags", "Too many: 3: must have at most 2 items")]),
        (
            {"name": "abc", "tags": ["a", 1]},
            [("spec.tags[1]", 'Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"')],
        ),
        ({"name": "abc", "note": None}, []),
        (
            {"name": "abc", "mode": None},
            [
                ("spec.mode", 'Invalid value: "null": spec.mode in body must be of type string: "null"'),
                ("spec.mode", 'Unsupported value: "null": supported values: "a", "b"'),
            ],
        ),
        ({"name": "abc", "when": "2024-01-02T03:04:05Z"}, []),
        (
            {"name": "abc", "when": "yesterday"},
            [("spec.when", 'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"')],
        ),
        ({"name": "abc", "port": 80}, []),
        ({"name": "abc", "port": "http"}, []),
        (
            {"name": "abc", "port": [1]},
            [("spec.port", 'Invalid value: "array": spec.port in body must be of type integer,string: "array"')],
        ),
        (
            {"name": "abc", "labels": {"a": "1", "b": 2}},
            [
                ("spec.labels", "Too many: 2: must have at most 1 item"),
                ("spec.labels.b", 'Invalid value: "integer": spec.labels.b in body must be of type string: "integer"'),
            ],
        ),
    ],
)
def test_validate_values(spec: dict[str, Any], errors: list[tuple[str, str]]) -> None:
    assert (
        validate_values({"apiVersion": "x/v1", "kind": "K", "metadata": {}, "spec": spec}, VALUES_SCHEMA, Definitions())
        == errors
    )


def test_validate_values_prefixes_field_paths_only() -> None:
    errors = validate_values({"replicas": "x"}, VALUES_SCHEMA.properties["spec"], Definitions(), path="spec")
    assert errors == [
        ("spec.name", "Required value"),
        ("spec.replicas", 'Invalid value: "string": replicas in body must be of type integer: "string"'),
    ]


def test_defaults() -> None:
    schema = schema_from_openapi_v3(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "mode": {"type": "string", "default": "a", "nullable": True},
                        "strategy": {
                            "type": "object",
                            "default": {"type": "Rolling"},
                            "properties": {"type": {"type": "string"}, "max": {"type": "integer", "default": 25}},
                        },
                        "ports": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"protocol": {"type": "string", "default": "TCP"}},
                            },
                        },
                        "sizes": {"type": "object", "additionalProperties": {"type": "integer", "default": 7}},
                    },
                }
            },
        }
    )
    obj: dict[str, Any] = {
        "spec": {"replicas": None, "mode": None, "ports": [{}, {"protocol": "UDP"}], "sizes": {"a": None}}
    }
    before = copy.deepcopy(obj)
    assert defaults(obj, schema, Definitions()) == {
        "spec": {
            "replicas": 1,
            "mode": None,
            "strategy": {"type": "Rolling", "max": 25},
            "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}],
            "sizes": {"a": 7},
        }
    }
    assert obj == before
    assert defaults({}, schema, Definitions()) == {
        "spec": {"replicas": 1, "mode": "a", "strategy": {"type": "Rolling", "max": 25}}
    }


def test_v1_defaults_are_stored_as_kube_apiserver_stores_them() -> None:
    """SetDefaults_CustomResourceDefinitionSpec and SetDefaults_ServiceReference (apiextensions v1
    defaults.go): kube-apiserver answers `conversion: {strategy: None}` for a CRD created without one."""
    crd: dict[str, Any] = {"spec": {"names": {"kind": "Widget", "plural": "widgets"}}}
    crd_schema.set_defaults(crd)
    assert crd["spec"] == {"names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                                     "listKind": "WidgetList"}, "conversion": {"strategy": "None"}}
    hooked: dict[str, Any] = {"spec": {"names": {"kind": "W", "singular": "w1", "listKind": "Ws"}, "conversion": {
        "strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": "n", "name": "s"}}}}}}
    crd_schema.set_defaults(hooked)
    assert hooked["spec"]["names"] == {"kind": "W", "singular": "w1", "listKind": "Ws"}
    assert hooked["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443
