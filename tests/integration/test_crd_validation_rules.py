"""CRD validation rules (x-kubernetes-validations) on custom resource writes, compared with the real
kube-apiserver's answers: a rule on spec, on list-map items and on map values, transition rules (an
immutable field: `self == oldSelf`, not evaluated without an old value; `optionalOldSelf`),
messageExpression, reason and fieldPath, a rule that fails at runtime (no such key), a status-subresource
write, ratcheting (an unchanged field's failing rule is a warning on update), and a CRD whose rule does
not compile. Each answer's code, Status message and causes (and the warnings) must be the same. The
daemon's half always runs; the comparison in the kube-apiserver tier (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from tests.integration import test_validating_admission_policy as vap
from tests.integration.crd_served import wait_served
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration]

GROUP = "rules.example.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
JSON, MERGE, APPLY = "application/json", "application/merge-patch+json", "application/apply-patch+yaml"

_SHOW = {"rule": "false", "messageExpression": "string(self)"}
SPEC = {"type": "object", "properties": {
    "n": {"type": "integer"},
    "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self <= 1.0", "message": "ratio above one"}]},
    "name": {"type": "string", "maxLength": 20,
             "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
    "level": {"type": "integer", "x-kubernetes-validations": [
        {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True,
         "message": "level may not go down"}]},
    "at": {"type": "string", "format": "date-time", "maxLength": 40,
           "x-kubernetes-validations": [{"rule": "self > timestamp('2020-01-01T00:00:00Z')", "message": "too early"}]},
    "every": {"type": "string", "format": "duration", "maxLength": 20,
              "x-kubernetes-validations": [{"rule": "self <= duration('1h')", "message": "too long"}]},
    "calc": {"type": "object", "properties": {"l": {"type": "array", "maxItems": 4, "items": {"type": "integer"}},
                                              "d": {"type": "integer"}, "big": {"type": "integer"}},
             "x-kubernetes-validations": [{"rule": "self.l[2] >= 0"}, {"rule": "!has(self.d) || 10 / self.d > 1"},
                                          {"rule": "!has(self.big) || self.big * 2 > 0", "message": "big"}]},
    "min": {"type": "integer"},
    "max": {"type": "integer"},
    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
              "maxItems": 8,
              "items": {"type": "object", "required": ["name"], "properties": {
                  "name": {"type": "string", "maxLength": 20}, "port": {"type": "integer"}},
                  "x-kubernetes-validations": [
                      {"rule": "self.port > 0",
                       "messageExpression": "'port of ' + self.name + ' must be positive'"},
                      {"rule": "!has(oldSelf.port) || self.port == oldSelf.port", "message": "port is fixed",
                       "reason": "FieldValueForbidden"}]}},
    "labels": {"type": "object", "maxProperties": 8, "additionalProperties": {
        "type": "string", "maxLength": 20, "x-kubernetes-validations": [
            {"rule": "self.size() <= 5", "message": "label too long", "reason": "FieldValueForbidden"}]}},
    "opt": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 20},
                                              "b": {"type": "string", "maxLength": 20}},
            "x-kubernetes-validations": [{"rule": "self.a == 'x'"},
                                         {"rule": "self.b != 'dup'", "reason": "FieldValueDuplicate"}]},
    # string() of each type, one rule each (concatenated, kube-apiserver's cost estimate refuses the CRD)
    "show": {"type": "object", "properties": {
        "at": {"type": "string", "format": "date-time", "maxLength": 40, "x-kubernetes-validations": [_SHOW]},
        "every": {"type": "string", "format": "duration", "maxLength": 20, "x-kubernetes-validations": [_SHOW]},
        "ratio": {"type": "number", "x-kubernetes-validations": [_SHOW]},
        "raw": {"type": "string", "maxLength": 8,
                "x-kubernetes-validations": [{"rule": "false", "messageExpression": "string(bytes(self))"}]},
        "third": {"type": "integer",
                  "x-kubernetes-validations": [{"rule": "false", "messageExpression": "string(2.0 / 3.0)"}]}}},
    "tags": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 20},
             "x-kubernetes-validations": [{"rule": "self.all(t, t.startsWith('t'))", "message": "tags start with t",
                                           "reason": "FieldValueRequired"}]},
}, "x-kubernetes-validations": [
    {"rule": "!has(self.n) || self.n < 5", "message": "n too big"},
    {"rule": "!has(self.min) || !has(self.max) || self.min <= self.max", "fieldPath": ".min",
     "messageExpression": "'min above max for ' + self.name"},
    {"rule": "!has(self.n) || self.n != 4", "messageExpression": "''"},
]}
STATUS = {"type": "object", "properties": {"phase": {"type": "string", "maxLength": 20}, "count": {"type": "integer"}},
          "x-kubernetes-validations": [{"rule": "!has(self.phase) || self.phase in ['Ready', 'Pending']",
                                        "message": "unknown phase"},
                                       {"rule": "!has(self.count) || !has(oldSelf.count) || "
                                                "self.count >= oldSelf.count", "message": "count only grows"}]}
SCHEMA = {"type": "object", "properties": {"spec": SPEC, "status": STATUS},
          "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('r')",
                                        "message": "name must start with r"}]}


def _crd(plural: str, schema: Any = SCHEMA) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": "Rule", "listKind": "RuleList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": schema}}]}}


def _obj(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Rule", "metadata": {"name": name}, "spec": spec}


CREATES: list[dict[str, Any]] = [
    {"n": 1}, {"n": 7}, {"n": 4}, {"ratio": 1.5}, {"ratio": 1}, {"name": "a"}, {"level": 3},
    {"min": 5, "max": 2}, {"min": 5, "max": 2, "name": "m"}, {"min": 1, "max": 2},
    {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": -2}, {"name": "c", "port": 0}]},
    {"labels": {"k": "short", "long": "longer-than-five"}},
    {"opt": {"b": "y"}}, {"opt": {"a": "x", "b": "dup"}}, {"opt": {"a": "y"}},
    {"tags": ["ta", "b"]}, {"n": "x"}, {"n": 9, "ratio": 2.0},
    {"calc": {"l": [1]}}, {"calc": {"l": [1, 2, 3], "d": 0}}, {"calc": {"l": [1, 2, 3], "big": 9000000000000000000}},
    # one failing property each: kube-apiserver reports sibling properties in Go's (random) map order
    {"show": {"at": "2021-05-01T10:00:00.50+02:00"}}, {"show": {"at": "2021-05-01T10:00:00Z"}},
    {"show": {"at": "2021-05-01T10:00:00.123456Z"}}, {"show": {"every": "90s"}}, {"show": {"every": "-1.5s"}},
    {"show": {"every": "1h30m0.25s"}}, {"show": {"ratio": 1e20}}, {"show": {"ratio": 0.00001}},
    {"show": {"ratio": 1234567.0}}, {"show": {"raw": "é"}}, {"show": {"raw": ""}}, {"show": {"third": 1}},
    {"at": "2019-05-01T00:00:00Z"}, {"at": "2021-05-01T10:00:00+02:00"}, {"every": "2h"}, {"every": "30m"},
]
"""Each is created as its own object (r<i>); one more is created with a name the root rule refuses."""

UPDATES: list[tuple[str, dict[str, Any]]] = [
    ("merge", {"spec": {"name": "b"}}),
    ("merge", {"spec": {"name": "a", "n": 2}}),
    ("merge", {"spec": {"level": 2}}),
    ("merge", {"spec": {"level": 5}}),
    ("merge", {"spec": {"ports": [{"name": "a", "port": 2}, {"name": "b", "port": 3}]}}),
    ("merge", {"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 3}]}}),
    ("merge", {"spec": {"ports": [{"name": "b", "port": 3}, {"name": "a", "port": 1}]}}),
    ("status", {"status": {"phase": "Gone"}}),
    ("status", {"status": {"phase": "Ready", "count": 3}}),
    ("status", {"status": {"count": 2}}),
    ("status", {"status": {"count": 4}}),
    ("put", {"spec": {"name": "a", "level": 5, "n": 8}}),
    ("apply", {"spec": {"name": "c"}}),
    ("apply", {"spec": {"name": "a", "tags": ["tx"]}}),
]
"""Applied in turn to one object created with BASE (merge patch, status merge patch, a full update of spec, or
a server-side apply)."""

BASE = {"name": "a", "level": 4, "ports": [{"name": "a", "port": 1}], "labels": {"x": "toolongvalue"}}


def _answer(code: int, body: Any, warnings: list[str]) -> tuple[int, Any, list[str]]:
    if code < 300:
        return code, {"spec": body.get("spec"), "status": body.get("status")}, warnings
    return code, (body.get("message"), body.get("details", {}).get("causes")), warnings


def answers(send: vap.Send, plural: str) -> list[tuple[str, Any]]:
    code, body, _ = send("POST", CRDS, _crd(plural), JSON)
    assert code == 201, body
    base = f"/apis/{GROUP}/v1/namespaces/default/{plural}"
    wait_served(lambda: send("GET", base, None, JSON)[0])
    out: list[tuple[str, Any]] = []
    try:
        for i, spec in enumerate(CREATES):
            out.append((f"create {json.dumps(spec)}", _answer(*send("POST", base, _obj(f"r{i}", spec), JSON))))
        out.append(("create x", _answer(*send("POST", base, _obj("x", {"n": 1}), JSON))))
        code, body, _ = send("POST", base, _obj("rt", {**BASE, "labels": {"x": "ok"}}), JSON)
        assert code == 201, body
        for how, change in UPDATES:
            if how == "merge":
                got = send("PATCH", f"{base}/rt", change, MERGE)
            elif how == "status":
                got = send("PATCH", f"{base}/rt/status", change, MERGE)
            elif how == "apply":
                got = send("PATCH", f"{base}/rt?fieldManager=rules-test&force=true",
                           {"apiVersion": f"{GROUP}/v1", "kind": "Rule", "metadata": {"name": "rt"}, **change}, APPLY)
            else:
                code, current, _ = send("GET", f"{base}/rt", None, JSON)
                current = copy.deepcopy(current)
                current["spec"] = {**current["spec"], **change["spec"]}
                got = send("PUT", f"{base}/rt", current, JSON)
            out.append((f"{how} {json.dumps(change)}", _answer(*got)))
    finally:
        send("DELETE", f"{CRDS}/{plural}.{GROUP}", None, JSON)
    return out


BAD_RULES: list[dict[str, Any]] = [
    {"rule": "self.n <"},
    {"rule": "self.m > 1"},
    {"rule": "self.n + 'a' == 'b'"},
    {"rule": "self.n"},
    {"rule": "self.n > 1", "messageExpression": "self.n"},
    {"rule": "self.n > 1", "messageExpression": "self.q + 'x'"},
    {"rule": "self.n > 1", "optionalOldSelf": False},
    {"rule": "self.q > 1", "optionalOldSelf": True},
]
"""Rules on spec ({n: integer}) that refuse the CRD."""
BAD_SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"l": {"type": "array", "maxItems": 4, "items": {
        "type": "object", "properties": {"v": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.v == oldSelf.v"}]}}}},
    {"type": "object", "properties": {"s": {"type": "array", "maxItems": 4, "x-kubernetes-list-type": "set",
                                            "items": {"type": "integer",
                                                      "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}},
     "x-kubernetes-validations": [{"rule": "self.z == 1"}]},
]
"""Spec schemas that refuse the CRD: oldSelf under an atomic list, under a set (and the order of a
child's error and its parent's)."""


def crd_answers(send: vap.Send, plural: str) -> list[tuple[str, Any]]:
    """Creates of CRDs whose spec rule does not compile (none is stored)."""
    specs = [{"type": "object", "properties": {"n": {"type": "integer"}}, "x-kubernetes-validations": [rule]}
             for rule in BAD_RULES] + BAD_SCHEMAS
    out: list[tuple[str, Any]] = []
    for i, spec in enumerate(specs):
        schema = {"type": "object", "properties": {"spec": spec}}
        name = f"{plural[:-1]}{i}s"
        code, body, _ = send("POST", CRDS, _crd(name, schema), JSON)
        if code < 300:
            send("DELETE", f"{CRDS}/{name}.{GROUP}", None, JSON)
        out.append((json.dumps(spec), _answer(code, body, [])[:2] if code >= 300 else code))
    return out


LATER_SPEC = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 10}, "b": {"type": "integer"},
                                               "v": {"x-kubernetes-int-or-string": True}}}
LATER_RULES = {"a": [{"rule": "!self.startsWith('bad')", "message": "a is bad"}],
               "v": [{"rule": "self > 1"}]}


def ratchet_answers(send: vap.Send, plural: str) -> list[tuple[str, Any]]:
    """A custom resource stored before a rule was added to its CRD: an update that leaves the failing
    field as it was is a warning; one that changes it, an error. And a rule that meets a value of
    another type at runtime (an int-or-string)."""
    schema = {"type": "object", "properties": {"spec": copy.deepcopy(LATER_SPEC)}}
    code, body, _ = send("POST", CRDS, _crd(plural, schema), JSON)
    assert code == 201, body
    base = f"/apis/{GROUP}/v1/namespaces/default/{plural}"
    out: list[tuple[str, Any]] = []
    try:
        wait_served(lambda: send("GET", base, None, JSON)[0])
        code, body, _ = send("POST", base, _obj("rr", {"a": "bad", "b": 1, "v": 5}), JSON)
        assert code == 201, body
        code, crd, _ = send("GET", f"{CRDS}/{plural}.{GROUP}", None, JSON)
        props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        for key, rules in LATER_RULES.items():
            props[key]["x-kubernetes-validations"] = rules
        code, body, _ = send("PUT", f"{CRDS}/{plural}.{GROUP}", crd, JSON)
        assert code == 200, body
        deadline = time.monotonic() + 60
        while send("POST", f"{base}?dryRun=All", _obj("probe", {"a": "bad"}), JSON)[0] != 422:
            assert time.monotonic() < deadline, "the rule was never enforced"
            time.sleep(0.2)
        for change in ({"b": 2}, {"a": "bad2"}, {"v": "x"}, {"v": 0}, {"a": "good", "v": 3}):
            out.append((f"merge {json.dumps(change)}", _answer(*send("PATCH", f"{base}/rr", {"spec": change},
                                                                         MERGE))))
    finally:
        send("DELETE", f"{CRDS}/{plural}.{GROUP}", None, JSON)
    return out


def test_rules_are_enforced(api_daemon: Daemon) -> None:
    got = dict(answers(vap.daemon_send(api_daemon), f"ra{time.time_ns() % 10**8}s"))
    code, (message, causes), _ = got['create {"n": 7}']
    assert code == 422 and causes == [{"reason": "FieldValueInvalid", "message": "Invalid value: n too big",
                                       "field": "spec"}], message
    assert got['create {"n": 1}'][0] == 201
    assert got['merge {"spec": {"name": "b"}}'][0] == 422


def test_a_rule_added_later_ratchets(api_daemon: Daemon) -> None:
    got = dict(ratchet_answers(vap.daemon_send(api_daemon), f"rd{time.time_ns() % 10**8}s"))
    code, _, warnings = got['merge {"b": 2}']
    assert code == 200 and warnings == ['299 - "spec.a: Invalid value: \\"bad\\": a is bad"'], warnings
    assert got['merge {"a": "bad2"}'][0] == 422


def test_uncompilable_rules_are_refused(api_daemon: Daemon) -> None:
    got = [answer for _, answer in crd_answers(vap.daemon_send(api_daemon), f"rb{time.time_ns() % 10**8}s")]
    code, (message, _causes) = got[0]  # self.n <
    assert code == 422 and "compilation failed: ERROR: <input>:1:9: Syntax error" in message
    code, (message, causes) = got[len(BAD_RULES)]  # oldSelf under an atomic list's items
    assert code == 422 and causes[0]["message"].endswith(
        "oldSelf cannot be used on the uncorrelatable portion of the schema within "
        "spec.validation.openAPIV3Schema.properties[spec].properties[l]"), causes


@pytest.mark.kube_apiserver
@pytest.mark.timeout(300)
def test_rules_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    plural = f"rc{time.time_ns() % 10**8}s"
    theirs = answers(vap._sender(kube_apiserver.url, kube_apiserver._ssl(), {}), plural)
    ours = answers(vap.daemon_send(api_daemon), plural)
    theirs += crd_answers(vap._sender(kube_apiserver.url, kube_apiserver._ssl(), {}), plural)
    ours += crd_answers(vap.daemon_send(api_daemon), plural)
    theirs += ratchet_answers(vap._sender(kube_apiserver.url, kube_apiserver._ssl(), {}), "x" + plural)
    ours += ratchet_answers(vap.daemon_send(api_daemon), "x" + plural)
    differ = [(a, b) for a, b in zip(ours, theirs, strict=True) if a != b]
    assert not differ, "\n".join(f"nodeagent:      {a}\nkube-apiserver: {b}" for a, b in differ)
