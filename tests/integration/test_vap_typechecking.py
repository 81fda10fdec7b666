"""ValidatingAdmissionPolicy status.typeChecking as the validatingadmissionpolicy-status controller writes it:
the embedded control plane's (apiserver/policy/status.py) through a running daemon's API, and, when the
kube-apiserver tier runs (NODEAGENT_KUBE_APISERVER=1), the same policies on the real kube-apiserver +
kube-controller-manager v1.37.2 give the same status (type names' clock digits normalised: upstream names
a kind's root type after the nanoseconds of its clock).

Policies are named after a per-run prefix and match nothing the daemon's other tests write (no binding).
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_validating_admission_policy import Send, _sender, daemon_send

pytestmark = [pytest.mark.integration]

API = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"


def _rule(groups: list[str], resources: list[str], versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    return {"apiGroups": groups, "apiVersions": list(versions), "operations": ["CREATE", "UPDATE"],
            "resources": resources}


CASES: dict[str, dict[str, Any]] = {
    "well-typed": {"rules": [_rule([""], ["configmaps"])], "validations": [
        {"expression": "!has(object.data) || (object.data.size() <= 3 && object.metadata.name != '')",
         "messageExpression": "'too many keys in ' + object.metadata.name"}]},
    "fields-and-overloads": {"rules": [_rule(["apps"], ["deployments"])], "validations": [
        {"expression": "object.spec.replicas > '1' && object.spec.nonExisting == 1"},
        {"expression": "has(object.spec.nope) || object.spec.template.spec.containers.all(c, c.imagex != '')"},
        {"expression": "object.spec.replicas <= 5", "messageExpression": "'replicas: ' + object.spec.replicas"}]},
    "two-kinds": {"rules": [_rule(["apps"], ["replicasets", "deployments"])], "validations": [
        {"expression": "object.spec.replicas == null || object.spec.minReadySeconds.startsWith('1')"}]},
    "params": {"rules": [_rule(["apps"], ["deployments"])], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
               "validations": [{"expression": "object.spec.replicas <= params.data.max"},
                               {"expression": "params.spec.x == 1"}]},
    "variables": {"rules": [_rule(["apps"], ["deployments"])],
                  "variables": [{"name": "r", "expression": "object.spec.replicas"},
                                {"name": "names", "expression": "object.spec.template.spec.containers.map(c, c.name)"}],
                  "validations": [{"expression": "variables.r + 'x' == 'y'"},
                                  {"expression": "variables.names.exists(n, n == 1)"}]},
    "wildcard": {"rules": [_rule(["*"], ["deployments"])], "validations": [
        {"expression": "object.spec.replicas > 'x'"}]},
    "request-and-namespace": {"rules": [_rule([""], ["pods"])], "validations": [
        {"expression": "request.userInfo.username == 'a' || object.spec.containers[0].ports[0].containerPort > 'a'"},
        {"expression": "object.spec.containers.exists(c, c.name == object.spec.nodeName)"}]},
    "schema-types": {"rules": [_rule(["apps"], ["deployments"])], "validations": [
        {"expression": "object.spec.template.spec.containers.all(c, !has(c.resources.limits) || "
                       "c.resources.limits['cpu'] == '1')"},
        {"expression": "!has(object.spec.strategy.rollingUpdate) || object.spec.strategy.rollingUpdate.maxSurge == 1"},
        {"expression": "object.metadata.creationTimestamp > 'x' || object.metadata.labels.foo == 1"},
        {"expression": "object.metadata.annotations['a'] + 1 == 2 || object.spec.selector.matchLabels.all(k, k == 1)"},
        {"expression": "object.status.conditions.exists(c, c.type == 'Available' && "
                       "c.lastUpdateTime > timestamp('2020-01-01T00:00:00Z'))"},
        {"expression": "object.spec.?replicas.orValue('x') == 'x' || object.spec.paused.size() > 0"},
        {"expression": "object.spec.template.metadata.namespace == 'a' && object.spec.template.spec.nodeName == 1"},
        {"expression": "object.spec.template.spec.containers.map(c, c.ports)[0][0].containerPort > 'a'"}]},
    "metadata": {"rules": [_rule([""], ["configmaps"])], "validations": [
        {"expression": "object.metadata.name.startsWith('a') && object.metadata.namespace == 'b'"}]},
}


def _policy(prefix: str, name: str, case: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"matchConstraints": {"resourceRules": case["rules"]}, "validations": case["validations"]}
    for key in ("paramKind", "variables"):
        if key in case:
            spec[key] = case[key]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": f"{prefix}-{name}"}, "spec": spec}


_CLOCK_DIGITS = re.compile(r"\b(Deployment|ReplicaSet|ConfigMap|Pod)\d+\b")


def _normalised(status: Any) -> Any:
    return _CLOCK_DIGITS.sub(r"\1#", repr(status))


def statuses(send: Send, prefix: str, deadline: float) -> dict[str, Any]:
    """Create every case's policy, wait for each status.observedGeneration to reach its generation, then bump
    one policy's generation (a changed expression) and wait again: {case: (status, status managers)}."""
    for name, case in CASES.items():
        code, body, _ = send("POST", API, _policy(prefix, name, case))
        assert code == 201, (name, body.get("message"))
    out: dict[str, Any] = {}
    for name in CASES:
        out[name] = _observed(send, f"{API}/{prefix}-{name}", 1, deadline)
    code, body, _ = send("PATCH", f"{API}/{prefix}-well-typed",
                         {"spec": {"validations": [{"expression": "object.data.x == 1"}]}},
                         "application/merge-patch+json")
    assert code == 200, body
    out["well-typed-updated"] = _observed(send, f"{API}/{prefix}-well-typed", 2, deadline)
    for name in CASES:
        send("DELETE", f"{API}/{prefix}-{name}", None)
    return out


def _observed(send: Send, path: str, generation: int, deadline: float) -> Any:
    end = time.monotonic() + deadline
    while True:
        code, body, _ = send("GET", path, None)
        assert code == 200, body
        status = body.get("status") or {}
        if status.get("observedGeneration") == generation:
            managers = sorted((m["manager"], m["operation"], m.get("subresource", ""))
                              for m in body["metadata"].get("managedFields") or [] if m.get("subresource"))
            return _normalised(status), managers
        assert time.monotonic() < end, f"{path}: status not written for generation {generation}: {body}"
        time.sleep(0.2)


def test_type_checking_written(api_daemon: Daemon) -> None:
    prefix = f"vaptc-{int(time.time() * 1000) % 10**9}"
    got = statuses(daemon_send(api_daemon), prefix, 30)
    assert got["wildcard"][0] == repr({"observedGeneration": 1, "typeChecking": {}})
    assert got["well-typed"][0] == repr({"observedGeneration": 1, "typeChecking": {}})
    assert got["well-typed"][1] == [("validatingadmissionpolicy-status", "Apply", "status")]
    fields = got["fields-and-overloads"][0]
    assert "undefined field 'nonExisting'" in fields
    assert "found no matching overload for '_>_' applied to '(int, string)'" in fields
    assert "spec.validations[2].messageExpression" in fields
    assert "apps/v1, Kind=Deployment: ERROR: <input>:1:22:" in fields
    assert "apps/v1, Kind=ReplicaSet" in got["two-kinds"][0]
    assert "'_==_' applied to '(string, int)'" in got["well-typed-updated"][0]


@pytest.mark.kube_apiserver
def test_the_same_type_checking_as_kube_controller_manager(api_daemon: Daemon,
                                                          kube_apiserver: KubeAPIServer) -> None:
    prefix = f"vaptc-cmp-{int(time.time() * 1000) % 10**9}"
    ours = statuses(daemon_send(api_daemon), prefix, 30)
    theirs = statuses(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}), prefix, 90)
    differing = "\n".join(f"{name}:\n ours   {ours[name]}\n theirs {theirs.get(name)}"
                          for name in ours if ours[name] != theirs.get(name))
    assert ours == theirs, differing


def _crd(group: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}, "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "q": {"x-kubernetes-int-or-string": True}, "when": {"type": "string", "format": "date-time"}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def crd_statuses(send: Send, group: str, deadline: float) -> Any:
    """A policy over a custom resource (its schema from the CRD): the status once written. The policy is created
    once the kind's schema is in the server's OpenAPI v3 document: the real controller type-checks a kind whose
    schema it cannot fetch yet as no kind at all (an empty typeChecking), kube-apiserver publishes it a moment
    after the CRD is established."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    code, body, _ = send("POST", crds, _crd(group))
    assert code == 201, body
    end = time.monotonic() + deadline
    def established() -> bool:
        crd = send("GET", f"{crds}/widgets.{group}", None)[1]
        return any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in (crd.get("status") or {}).get("conditions") or [])

    def published() -> bool:  # kube-controller-manager resolves a custom kind's schema from /openapi/v3
        try:
            code, doc, _ = send("GET", f"/openapi/v3/apis/{group}/v1", None)
        except ValueError:  # kube-apiserver's 404 before the document exists is not JSON
            return False
        return code == 200 and any(name.endswith(".Widget") for name in (doc.get("components") or {}).get(
            "schemas") or {})

    while not (established() and published()):
        assert time.monotonic() < end, "CRD not established and published"
        time.sleep(0.2)
    name = group.split(".")[0]
    policy = _policy(name, "crd", {"rules": [_rule([group], ["widgets"])], "validations": [
        {"expression": "object.spec.size > 'a' || object.spec.nope == 1"},
        {"expression": "object.spec.tags.exists(t, t == 1) || object.spec.name > 1"},
        {"expression": "object.spec.q == 1 || object.spec.when > 'x'"},
        {"expression": "object.metadata.name == 'a' && object.kind == 'Widget'"}]})
    code, body, _ = send("POST", API, policy)
    assert code == 201, body
    got = _observed(send, f"{API}/{name}-crd", 1, deadline)
    send("DELETE", f"{API}/{name}-crd", None)
    send("DELETE", f"{crds}/widgets.{group}", None)
    return got


def test_type_checking_of_a_custom_resource(api_daemon: Daemon) -> None:
    group = f"vaptc{int(time.time() * 1000) % 10**9}.example.com"
    status, _ = crd_statuses(daemon_send(api_daemon), group, 30)
    assert "undefined field 'nope'" in status and "'_>_' applied to '(int, string)'" in status
    assert f"{group}/v1, Kind=Widget" in status


@pytest.mark.kube_apiserver
def test_the_same_custom_resource_type_checking_as_kube_controller_manager(api_daemon: Daemon,
                                                                          kube_apiserver: KubeAPIServer) -> None:
    group = f"vaptccmp{int(time.time() * 1000) % 10**9}.example.com"
    ours = crd_statuses(daemon_send(api_daemon), group, 30)
    theirs = crd_statuses(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}), group, 90)
    assert ours == theirs, f"\n ours   {ours}\n theirs {theirs}"
