"""List options: field selectors (fields.ParseSelector), label selectors, continue tokens, integers and
resourceVersions, with the API server's 400 texts."""

from __future__ import annotations

import base64
import json

import pytest

from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.selection import (
    Continue,
    FieldRequirement,
    decode_continue,
    encode_continue,
    parse_field_selector,
    parse_int,
    parse_label_selector,
    parse_resource_version,
    query_bool,
)
from nodeagent.apiserver.strategies import builtin_strategies

POD_FIELDS = builtin_strategies()["Pod"].field_getters()
POD = {"metadata": {"name": "p", "namespace": "ns"},
       "spec": {"nodeName": "n1", "hostNetwork": True, "restartPolicy": "Always"},
       "status": {"phase": "Running"}}


@pytest.mark.parametrize(
    ("text", "requirements"),
    [
        ("spec.nodeName=n1", [("spec.nodeName", "n1", True)]),
        ("spec.nodeName==n1", [("spec.nodeName", "n1", True)]),
        ("spec.nodeName!=n1", [("spec.nodeName", "n1", False)]),
        ("metadata.name=a,status.phase!=Failed", [("metadata.name", "a", True), ("status.phase", "Failed", False)]),
        (" metadata.name = a ", [("metadata.name", "a", True)]),
        ("metadata.name=a\\,b", [("metadata.name", "a,b", True)]),  # an escaped comma is part of the value
        ("metadata.name=a\\=b", [("metadata.name", "a=b", True)]),
        ("spec.nodeName=", [("spec.nodeName", "", True)]),  # unbound pods
        ("", []),
    ],
)
def test_parse_field_selector(text: str, requirements: list[tuple[str, str, bool]]) -> None:
    sel = parse_field_selector(text, POD_FIELDS, "Pod", "v1")
    assert sel.requirements == tuple(FieldRequirement(*r) for r in requirements)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("spec.foo=x", "field label not supported: spec.foo"),
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("metadata.name=b,c", "invalid selector: 'metadata.name=b,c'; can't understand 'c'"),
    ],
)
def test_bad_field_selectors_are_400(text: str, message: str) -> None:
    with pytest.raises(APIError) as err:
        parse_field_selector(text, POD_FIELDS, "Pod", "v1")
    assert (err.value.code, err.value.reason, err.value.message) == (400, "BadRequest", message)


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("spec.nodeName=n1", True),
        ("spec.nodeName=n2", False),
        ("spec.nodeName!=n2", True),
        ("spec.hostNetwork=true", True),
        ("status.phase=Running,metadata.namespace=ns", True),
        ("status.phase=Running,metadata.namespace=other", False),
        ("status.podIP=", True),  # a missing field reads as ""
    ],
)
def test_field_selector_matches(text: str, matches: bool) -> None:
    assert parse_field_selector(text, POD_FIELDS, "Pod", "v1").matches(POD, POD_FIELDS) is matches


def test_exact_pins_a_field() -> None:
    sel = parse_field_selector("spec.nodeName!=a,spec.nodeName=b", POD_FIELDS, "Pod", "v1")
    assert sel.exact("spec.nodeName") == "b" and sel.exact("metadata.name") is None


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("app=web", {"app": "web"}, True),
        ("app=web", {"app": "db"}, False),
        ("app in (web,db),!legacy", {"app": "db"}, True),
        ("app notin (web)", {}, True),
        ("tier", {"tier": ""}, True),
    ],
)
def test_label_selectors(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(text).matches(labels) is matches


def test_bad_label_selector_is_400() -> None:
    with pytest.raises(APIError) as err:
        parse_label_selector("app in (web")
    assert (err.value.code, err.value.reason) == (400, "BadRequest")
    assert err.value.message.startswith("unable to parse requirement: ")


@pytest.mark.parametrize("key", [("", "node-1"), ("default", "a"), ("ns", "with/slash")])
def test_continue_round_trip(key: tuple[str, str]) -> None:
    token = encode_continue(42, key)
    assert decode_continue(token) == Continue(42, key)
    doc = json.loads(base64.urlsafe_b64decode(token))
    assert doc["v"] == "meta.k8s.io/v1" and doc["rv"] == 42  # upstream's continueToken fields


@pytest.mark.parametrize("token", ["!!", "bm90IGpzb24", base64.urlsafe_b64encode(b'{"v":"x"}').decode(),
                                   base64.urlsafe_b64encode(b'{"rv":"x","start":"a"}').decode()])
def test_bad_continue_is_400(token: str) -> None:
    with pytest.raises(APIError) as err:
        decode_continue(token)
    assert (err.value.code, err.value.message) == (
        400, "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")


@pytest.mark.parametrize(("value", "parsed"), [(None, None), ("", None), ("0", 0), ("500", 500)])
def test_parse_int(value: str | None, parsed: int | None) -> None:
    assert parse_int(value, "limit") == parsed


@pytest.mark.parametrize(
    ("value", "message"),
    [("x", 'limit: Invalid value: "x": must be an integer'),
     ("-1", "limit: Invalid value: -1: must be greater than or equal to 0")],
)
def test_parse_int_errors(value: str, message: str) -> None:
    with pytest.raises(APIError) as err:
        parse_int(value, "limit")
    assert (err.value.code, err.value.message) == (400, message)


@pytest.mark.parametrize(("value", "parsed"), [(None, None), ("", None), ("0", 0), ("17", 17)])
def test_parse_resource_version(value: str | None, parsed: int | None) -> None:
    assert parse_resource_version(value) == parsed


@pytest.mark.parametrize("value", ["abc", "-3", "1.5"])
def test_bad_resource_version_is_400(value: str) -> None:
    with pytest.raises(APIError) as err:
        parse_resource_version(value)
    assert (err.value.code, err.value.reason, err.value.message) == (
        400, "BadRequest", f'invalid resource version "{value}"')


@pytest.mark.parametrize(("value", "want"), [
    (None, False), ("", False), ("0", False), ("false", False), ("False", False), ("FALSE", False),
    ("true", True), ("True", True), ("1", True), ("yes", True),
])
def test_query_booleans_convert_as_upstream(value: str | None, want: bool) -> None:
    assert query_bool(value) is want
