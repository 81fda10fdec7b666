"""The policy type check (apiserver/policy/typecheck.py) over the built-in catalog and definitions: which kinds
are checked (upstream's typesToCheck), the warning texts per kind, params and variables typed."""

from __future__ import annotations

from typing import Any

from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.policy.typecheck import MAX_TYPES, TypeChecker
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.schema.celtypes import escape

CHECKER = TypeChecker(Catalog(builtin_resources()), builtin_definitions)


def policy(rules: list[dict[str, Any]], validations: list[dict[str, str]], **spec: Any) -> dict[str, Any]:
    return {"spec": {"matchConstraints": {"resourceRules": rules}, "validations": validations, **spec}}


def rule(groups: list[str], resources: list[str], versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    return {"apiGroups": groups, "apiVersions": list(versions), "operations": ["*"], "resources": resources}


def test_kinds_leave_out_wildcards_and_subresources_and_sort() -> None:
    got = CHECKER.kinds(policy([rule(["apps", ""], ["replicasets", "deployments/status", "*", "pods", "deployments"]),
                                rule(["*"], ["deployments"]), rule(["apps"], ["deployments"], ("*",))], []))
    assert [(r.group, r.version, r.kind) for r in got] == [("", "v1", "Pod"), ("apps", "v1", "Deployment"),
                                                           ("apps", "v1", "ReplicaSet")]


def test_kinds_stop_at_ten() -> None:
    resources = ["pods", "configmaps", "secrets", "services", "namespaces", "nodes", "endpoints", "events",
                 "serviceaccounts", "persistentvolumes", "persistentvolumeclaims", "replicationcontrollers"]
    assert len(CHECKER.kinds(policy([rule([""], resources)], []))) == MAX_TYPES


def test_warnings_per_kind_as_upstream_writes_them() -> None:
    warnings = CHECKER.check(policy(
        [rule(["apps"], ["deployments", "replicasets"])],
        [{"expression": "object.spec.replicas > '1'", "messageExpression": "'n: ' + variables.r"},
         {"expression": "object.spec.template.spec.containers.all(c, c.resources.limits['cpu'] == '1')"},
         {"expression": "object.metadata.namespace == 'a' && object.spec.strategy.rollingUpdate.maxSurge == 1"}],
        variables=[{"name": "r", "expression": "object.spec.replicas"}]))
    assert [w.field_ref for w in warnings] == [
        "spec.validations[0].expression", "spec.validations[0].messageExpression", "spec.validations[1].expression",
        "spec.validations[2].expression"]
    one = ("ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n"
           " | object.spec.replicas > '1'\n | .....................^\n")
    assert warnings[0].warning == f"apps/v1, Kind=Deployment: {one}\napps/v1, Kind=ReplicaSet: {one}"
    assert "found no matching overload for '_+_' applied to '(string, int)'" in warnings[1].warning
    assert "undefined field 'limits'" in warnings[2].warning  # a quantity has no type upstream
    # metadata.namespace is found (a reserved word's field) and an int-or-string is dyn: only the ReplicaSet,
    # which has no strategy, is warned about
    assert warnings[3].warning.startswith("apps/v1, Kind=ReplicaSet: ERROR: <input>:1:48: undefined field 'strategy'")
    assert "Kind=Deployment" not in warnings[3].warning


def test_params_typed_by_the_param_kind() -> None:
    warnings = CHECKER.check(policy([rule([""], ["pods"])], [{"expression": "params.data.max > 1"},
                                                              {"expression": "params.nope == 1"}],
                                    paramKind={"apiVersion": "v1", "kind": "ConfigMap"}))
    assert [w.warning.split(": ", 1)[1].split("\n")[0] for w in warnings] == [
        "ERROR: <input>:1:17: found no matching overload for '_>_' applied to '(string, int)'",
        "ERROR: <input>:1:7: undefined field 'nope'"]


def test_no_kinds_no_warnings() -> None:
    assert CHECKER.check(policy([rule(["*"], ["*"])], [{"expression": "object.x > 'y'"}])) == []


def test_escape() -> None:
    assert [escape(n) for n in ("namespace", "a-b", "a.b/c", "x__y", "1a", "ok_1")] == [
        "__namespace__", "a__dash__b", "a__dot__b__slash__c", "x__underscores__y", None, "ok_1"]
