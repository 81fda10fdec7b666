"""ValidatingAdmissionPolicy's pure parts: CEL compile checks and static result types
(nodeagent/cel/admission.py), the kinds' defaults and validation (objects/admissionregistration.py),
and matching (apiserver/policy/matching.py); texts as kube-apiserver v1.37.2 writes them (the
integration test compares whole answers with the real one)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.policy import matching
from nodeagent.cel import admission as celadm
from nodeagent.errors import ValidationError
from nodeagent.objects import admissionregistration as adm

DECLS = celadm.Declarations()


@pytest.mark.parametrize(("expression", "returns", "detail"), [
    ("object.spec.replicas <= 5", "bool", None),
    ("object.x", "bool", "must evaluate to bool but got dyn"),
    ("1", "bool", "must evaluate to bool but got int"),
    ("'at most ' + params.data.max", "string", "compilation failed: ERROR: <input>:1:14: undeclared reference "
                                               "to 'params' (in container '')\n | 'at most ' + params.data.max\n"
                                               " | .............^"),
    ("foo > 1", "bool", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n"
                        " | foo > 1\n | ^"),
    ("object.a >", "bool", "compilation failed: ERROR: <input>:1:11: Syntax error: mismatched input '<EOF>' "
                           "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
                           "NUM_UINT, STRING, BYTES, IDENTIFIER}\n | object.a >\n | ..........^"),
    ("variables.later", "any", "compilation failed: ERROR: <input>:1:10: undefined field 'later'\n"
                               " | variables.later\n | .........^"),
    ("object.items.all(i, i.ok) ? 'yes' : 'no'", "string", None),
    ("has(object.data) ? size(object.data) : 0", "bool", "must evaluate to bool but got int"),
    ("authorizer.group('').resource('pods').check('get').allowed()", "bool", None),
])
def test_compile(expression: str, returns: str, detail: str | None) -> None:
    if detail is None:
        celadm.compile_expression(expression, DECLS, returns)
        return
    with pytest.raises(celadm.CompileError) as err:
        celadm.compile_expression(expression, DECLS, returns)
    assert err.value.detail == detail


def test_variables_have_their_expressions_types() -> None:
    decls = celadm.declarations(False, [("keys", "size(object.data)"), ("raw", "object.data")])
    with pytest.raises(celadm.CompileError, match="must evaluate to bool but got int"):
        celadm.compile_expression("variables.keys", decls, "bool")
    with pytest.raises(celadm.CompileError, match="must evaluate to bool but got dyn"):
        celadm.compile_expression("variables.raw", decls, "bool")
    compiled = celadm.compile_expression("variables.keys <= 2", decls, "bool")
    assert compiled.reads == ("keys",)
    assert compiled.evaluate({"variables": {"keys": 3}}) is False


def test_runtime_errors_in_cel_go_words() -> None:
    compiled = celadm.compile_expression("object.data.missing == 'x'", DECLS, "bool")
    with pytest.raises(celadm.EvalError, match=r"^no such key: missing$"):
        compiled.evaluate({"object": {"data": {}}})


def _policy(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": spec}


RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}


def _errors(fn: Any, obj: dict[str, Any]) -> list[str]:
    try:
        fn(obj)
    except ValidationError as err:
        several = getattr(err, "errors", None) or [err]
        return [f"{e.path}: {e.detail}" for e in several]
    return []


def test_policy_defaults() -> None:
    out = adm.validate_policy(_policy(matchConstraints={"resourceRules": [dict(RULE)]},
                                      validations=[{"expression": "true"}]))
    assert out["spec"]["failurePolicy"] == "Fail"
    constraints = out["spec"]["matchConstraints"]
    assert constraints["matchPolicy"] == "Equivalent"
    assert constraints["namespaceSelector"] == {} and constraints["objectSelector"] == {}
    assert constraints["resourceRules"][0]["scope"] == "*"


def test_policy_errors() -> None:
    assert _errors(adm.validate_policy, _policy(failurePolicy="Bad")) == [
        'spec.failurePolicy: Unsupported value: "Bad": supported values: "Fail", "Ignore"',
        "spec.matchConstraints: Required value",
        "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
        "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
    ]
    got = _errors(adm.validate_policy, _policy(
        matchConstraints={"resourceRules": [{**RULE, "operations": ["CREATE", "*"], "resources": []}]},
        validations=[{"expression": "object.x == 1", "message": "a\nb", "reason": "Teapot"}]))
    assert got == [
        "spec.matchConstraints.resourceRules[0].operations: Invalid value: [\"CREATE\",\"*\"]: if '*' is present, "
        "must not specify other operations",
        "spec.matchConstraints.resourceRules[0].resources: Required value",
        'spec.validations[0].message: Invalid value: "a\\nb": must not contain line breaks',
        'spec.validations[0].reason: Unsupported value: "Teapot": supported values: "Forbidden", "Invalid", '
        '"RequestEntityTooLarge"',
    ]


def test_binding_errors_declarative_last() -> None:
    got = _errors(adm.validate_binding, {"metadata": {"name": "b"}, "spec": {
        "validationActions": ["Deny", "Warn"], "paramRef": {"name": "a", "parameterNotFoundAction": "Maybe"}}})
    assert got == [
        'spec.paramRef.parameterNotFoundAction: Unsupported value: "Maybe": supported values: "Deny", "Allow"',
        'spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating the '
        "same validation failure information in the API response and headers serves no purpose)",
        "spec.policyName: Required value",
    ]
    assert _errors(adm.validate_binding, {"metadata": {"name": "b"}, "spec": {"policyName": "p"}}) == [
        "spec.validationActions: Required value"]


CONFIGMAPS = matching.GVR("", "v1", "configmaps", "ConfigMap")


def _req(op: str = "CREATE", ns: str = "team", name: str = "c", labels: dict[str, str] | None = None,
         resource: matching.GVR = CONFIGMAPS) -> matching.Request:
    obj = {"metadata": {"name": name, "labels": labels or {}}}
    return matching.Request(op, resource, "", ns, name, obj, None)


def _ns(labels: dict[str, dict[str, str]]) -> matching.NamespaceLabels:
    return lambda name: labels.get(name)


def _same(gvr: matching.GVR, _sub: str) -> list[matching.GVR]:
    return [gvr]


@pytest.mark.parametrize(("criteria", "req", "matched"), [
    ({"resourceRules": [RULE]}, _req(), True),
    ({"resourceRules": [RULE]}, _req("UPDATE"), False),
    ({"resourceRules": [{**RULE, "resourceNames": ["other"]}]}, _req(), False),
    ({"resourceRules": [{**RULE, "scope": "Cluster"}]}, _req(), False),
    ({"resourceRules": [RULE], "excludeResourceRules": [RULE]}, _req(), False),
    ({"resourceRules": [RULE], "objectSelector": {"matchLabels": {"a": "b"}}}, _req(labels={"a": "b"}), True),
    ({"resourceRules": [RULE], "objectSelector": {"matchLabels": {"a": "b"}}}, _req(), False),
    ({"resourceRules": [RULE], "namespaceSelector": {"matchLabels": {"env": "prod"}}}, _req(), True),
    ({"resourceRules": [RULE], "namespaceSelector": {"matchLabels": {"env": "dev"}}}, _req(), False),
])
def test_matching(criteria: dict[str, Any], req: matching.Request, matched: bool) -> None:
    found = matching.matches(criteria, req, _ns({"team": {"env": "prod"}}), _same)
    assert (found is not None) == matched


def test_equivalent_resources() -> None:
    v1beta1 = matching.GVR("resource.k8s.io", "v1beta1", "resourceclaims", "ResourceClaim")
    v1 = matching.GVR("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
    rule = {"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["*"]}
    req = _req(resource=v1beta1)
    assert matching.matches({"resourceRules": [rule], "matchPolicy": "Equivalent"}, req, _ns({}),
                            lambda gvr, _s: [gvr, v1]) == v1
    assert matching.matches({"resourceRules": [rule], "matchPolicy": "Exact"}, req, _ns({}),
                            lambda gvr, _s: [gvr, v1]) is None


def test_a_gone_namespace_is_a_match_error() -> None:
    criteria = {"resourceRules": [RULE], "namespaceSelector": {"matchLabels": {"env": "prod"}}}
    with pytest.raises(matching.MatchError, match='namespaces "gone" not found'):
        matching.matches(criteria, _req(ns="gone"), _ns({}), _same)


@pytest.mark.parametrize(("expression", "rewritten"), [
    ("m[?'k'][0].orValue('')", "((('k') in m) ? m['k'][0] : '')"),
    ('(a ? b : c).spec.?nodeName.orValue("")',
     '(has((a ? b : c).spec.nodeName) ? (a ? b : c).spec.nodeName : "")'),
    ("x.?y.hasValue()", "has(x.y)"),
    ("x.y == 1", None),
])
def test_optional_selection_rewritten(expression: str, rewritten: str | None) -> None:
    from nodeagent.cel import optional

    assert optional.rewrite(expression) == rewritten


def test_optional_selection_evaluates() -> None:
    compiled = celadm.compile_expression("request.userInfo.extra[?'node'][0].orValue('none')", DECLS, "any")
    assert compiled.evaluate({"request": {"userInfo": {"extra": {"node": ["n1"]}}}}) == "n1"
    assert compiled.evaluate({"request": {"userInfo": {"extra": {}}}}) == "none"
