"""A custom resource's numeric and string checks compared with the real kube-apiserver's answers.

kube-openapi's validators decide them (apiextensions-apiserver's ValidateCustomResource): the number
validator first checks that the value and each bound fit the schema's type and format (an integer field's
`maximum: 10.5` is reported on every value, as `<nil>: Invalid value: "": Maximum boundary value must be of
type integer (default format) in spec.n`), then multipleOf (as floats: 0.3 is a multiple of 0.1), minimum,
maximum; the string validator stops at the first of maxLength, minLength, pattern that fails; a float
beyond 2^53 is no integer. The daemon's half always runs; the comparison in the kube-apiserver tier
(NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.integration.crd_served import wait_served
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_custom_resource_managed_fields import CRDS, JSON, Send, daemon_send, kube_send

pytestmark = [pytest.mark.integration]

GROUP = "checks.example.com"
SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "n": {"type": "integer", "maximum": 10.5, "minimum": 0.5, "multipleOf": 2.5},
    "m": {"type": "number", "maximum": 3, "exclusiveMaximum": True},
    "f": {"type": "number", "multipleOf": 0.1},
    "i32": {"type": "integer", "format": "int32", "maximum": 3000000000},
    "fl": {"type": "number", "format": "float"},
    "s": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
    "s2": {"type": "string", "minLength": 2, "pattern": "^[0-9]+$"},
    "l": {"type": "array", "maxItems": 1, "items": {"type": "integer"}},
}}}}
CASES: list[dict[str, Any]] = [
    {"n": 11}, {"n": 0}, {"n": 3}, {"n": 5}, {"n": 7.0}, {"n": "x"}, {"n": 1e20},
    {"m": 3}, {"m": 3.0}, {"m": 2.5},
    {"f": 0.3}, {"f": 0.7}, {"f": -0.3}, {"f": 0.35},
    {"i32": 5}, {"i32": 3000000001},
    {"fl": 1e39}, {"fl": 1.5},
    {"s": "ABCD"}, {"s": "AB"}, {"s2": "a"}, {"s2": "ab"}, {"s2": "12"},
    {"l": [1, 2]},
]


def _crd(plural: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": "Check", "listKind": "CheckList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": SCHEMA}}]}}


def answers(send: Send, plural: str) -> list[tuple[str, int, Any]]:
    code, body = send("POST", CRDS, _crd(plural), JSON)
    assert code == 201, body
    base = f"/apis/{GROUP}/v1/namespaces/default/{plural}"
    wait_served(lambda: send("GET", base, None, JSON)[0])
    out = []
    try:
        for i, spec in enumerate(CASES):
            code, body = send("POST", base, {"apiVersion": f"{GROUP}/v1", "kind": "Check",
                                             "metadata": {"name": f"c{i}"}, "spec": spec}, JSON)
            got = body.get("spec") if code < 300 else (body.get("message"), body.get("details", {}).get("causes"))
            out.append((json.dumps(spec), code, got))
    finally:
        send("DELETE", f"{CRDS}/{plural}.{GROUP}", None, JSON)
    return out


def test_numeric_bounds_of_another_type_are_reported(api_daemon: Daemon) -> None:
    got = {spec: (code, body) for spec, code, body in answers(daemon_send(api_daemon), f"ca{time.time_ns() % 10**8}s")}
    code, (message, causes) = got['{"n": 5}']
    assert code == 422 and "Maximum boundary value must be of type integer (default format) in spec.n" in message
    detail = 'Invalid value: "": MultipleOf value must be of type integer (default format) in spec.n'
    assert {"reason": "FieldValueInvalid", "field": "<nil>", "message": detail} in causes
    assert got['{"f": 0.3}'] == (201, {"f": 0.3})
    assert got['{"s": "ABCD"}'][1][0].endswith("spec.s: Too long: may not be more than 3 bytes")


@pytest.mark.kube_apiserver
@pytest.mark.timeout(240)
def test_value_checks_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    plural = f"cb{time.time_ns() % 10**8}s"
    ours = answers(daemon_send(api_daemon), plural)
    theirs = answers(kube_send(kube_apiserver), plural)
    differ = [(a, b) for a, b in zip(ours, theirs, strict=True) if a != b]
    assert not differ, "\n".join(f"nodeagent:      {a}\nkube-apiserver: {b}" for a, b in differ)
