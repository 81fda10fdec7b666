"""Field sets and their FieldsV1 form, as structured-merge-diff encodes and prints them."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.apply.fieldset import (
    FieldSet,
    canonical_pe,
    field_pe,
    fieldset_from_fieldsv1,
    fieldset_to_fieldsv1,
    key_pe,
    path_text,
    value_pe,
)
from nodeagent.apiserver.apply.typedvalue import Typer
from nodeagent.apiserver.schema.model import Definitions, Schema

S = Schema
STR = S(type="string")
STRMAP = S(type="object", additional_properties=STR)

DEFS = Definitions(
    {
        "Meta": S(type="object", properties={"name": STR, "labels": STRMAP}),
        "Port": S(
            type="object", properties={"containerPort": S(type="integer"), "protocol": S(type="string", default="TCP")}
        ),
        "Container": S(
            type="object",
            properties={
                "name": STR,
                "image": STR,
                "args": S(type="array", items=STR),
                "ports": S(
                    type="array",
                    items=S(ref="Port"),
                    list_type="map",
                    list_map_keys=("containerPort", "protocol"),
                ),
                "resources": S(type="object", properties={"limits": STRMAP}),
            },
        ),
        "Pod": S(
            type="object",
            properties={
                "apiVersion": STR,
                "kind": STR,
                "metadata": S(ref="Meta"),
                "spec": S(
                    type="object",
                    properties={
                        "containers": S(
                            type="array", items=S(ref="Container"), patch_strategy="merge", patch_merge_key="name"
                        ),
                        "finalizers": S(type="array", items=STR, list_type="set"),
                        "nodeSelector": S(type="object", additional_properties=STR, map_type="atomic"),
                    },
                ),
            },
        ),
    }
)
POD = S(ref="Pod")

NGINX_KEY = 'k:{"name":"nginx"}'


@pytest.mark.parametrize(
    ("obj", "fieldsv1"),
    [
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "web"}}},
            {"f:apiVersion": {}, "f:kind": {}, "f:metadata": {"f:labels": {"f:app": {}}, "f:name": {}}},
        ),
        (
            {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "args": ["-g"], "resources": {}}]}},
            {
                "f:spec": {
                    "f:containers": {NGINX_KEY: {".": {}, "f:args": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}
                }
            },
        ),
        (
            {"spec": {"containers": [{"name": "nginx", "ports": [{"containerPort": 80}]}]}},
            {
                "f:spec": {
                    "f:containers": {
                        NGINX_KEY: {
                            ".": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}},
                            },
                        }
                    }
                }
            },
        ),
        (
            {"spec": {"finalizers": ["b", "a"], "nodeSelector": {"disk": "ssd"}}},
            {"f:spec": {"f:finalizers": {'v:"a"': {}, 'v:"b"': {}}, "f:nodeSelector": {}}},
        ),
    ],
    ids=["meta", "container-item", "port-key-default", "set-and-atomic-map"],
)
def test_field_set_encodes_as_upstream(obj: dict[str, Any], fieldsv1: dict[str, Any]) -> None:
    got = fieldset_to_fieldsv1(Typer(DEFS).field_set(obj, POD))
    assert got == fieldsv1
    assert list(got) == list(fieldsv1)


@pytest.mark.parametrize(
    "fieldsv1",
    [
        {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
        {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"a"}': {".": {}, "f:image": {}},
                    'k:{"name":"b"}': {".": {}, "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {}}},
                },
                "f:finalizers": {'v:"x"': {}},
                "f:replicas": {},
            }
        },
        {"f:a": {"i:0": {}, "i:1": {}}},
    ],
    ids=["member-with-children", "keys-and-values", "indices"],
)
def test_fieldsv1_round_trip(fieldsv1: dict[str, Any]) -> None:
    back = fieldset_to_fieldsv1(fieldset_from_fieldsv1(fieldsv1))
    assert back == fieldsv1


def test_canonical_key_sorts_key_fields_and_orders_numbers_numerically() -> None:
    assert canonical_pe('k:{"protocol":"TCP","containerPort":80}') == 'k:{"containerPort":80,"protocol":"TCP"}'
    fs = fieldset_from_fieldsv1(
        {"f:ports": {'k:{"containerPort":443}': {}, 'k:{"containerPort":80}': {}, 'k:{"containerPort":8080}': {}}}
    )
    assert list(fieldset_to_fieldsv1(fs)["f:ports"]) == [
        'k:{"containerPort":80}',
        'k:{"containerPort":443}',
        'k:{"containerPort":8080}',
    ]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ((field_pe("spec"), field_pe("replicas")), ".spec.replicas"),
        (
            (field_pe("spec"), field_pe("containers"), key_pe({"name": "nginx"}), field_pe("image")),
            '.spec.containers[name="nginx"].image',
        ),
        (
            (field_pe("ports"), key_pe({"protocol": "TCP", "containerPort": 80})),
            '.ports[containerPort=80,protocol="TCP"]',
        ),
        ((field_pe("finalizers"), value_pe("a/b")), '.finalizers[="a/b"]'),
        ((field_pe("args"), "i:2"), ".args[2]"),
    ],
)
def test_path_text(path: tuple[str, ...], text: str) -> None:
    assert path_text(path) == text


@pytest.mark.parametrize(
    "bad",
    [[], {"f:a": []}, {"x:a": {}}, {'k:{"name":': {}}, {"k:[1]": {}}],
    ids=["not-object", "not-object-below", "prefix", "bad-json", "key-not-object"],
)
def test_fieldsv1_malformed(bad: Any) -> None:
    with pytest.raises(ValueError):
        fieldset_from_fieldsv1(bad)


A = (field_pe("a"),)
AB = (field_pe("a"), field_pe("b"))
AC = (field_pe("a"), field_pe("c"))


@pytest.mark.parametrize(
    ("op", "left", "right", "want"),
    [
        ("union", FieldSet.of(AB), FieldSet.of(AC), FieldSet.of(AB, AC)),
        ("intersection", FieldSet.of(AB, AC), FieldSet.of(AC), FieldSet.of(AC)),
        ("difference", FieldSet.of(A, AB), FieldSet.of(A), FieldSet.of(AB)),
        ("difference", FieldSet.of(AB), FieldSet.of(AB, AC), FieldSet()),
        ("recursive_difference", FieldSet.of(A, AB), FieldSet.of(A), FieldSet()),
    ],
)
def test_set_operations(op: str, left: FieldSet, right: FieldSet, want: FieldSet) -> None:
    assert getattr(left, op)(right) == want


def test_ensure_named_adds_struct_fields_not_map_keys() -> None:
    typer = Typer(DEFS)
    labels = (field_pe("metadata"), field_pe("labels"), field_pe("app"))
    got = typer.ensure_named(FieldSet.of(labels), POD)
    assert set(got.paths()) == {(field_pe("metadata"),), labels[:2], labels}
