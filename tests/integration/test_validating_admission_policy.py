"""ValidatingAdmissionPolicy enforcement through a running daemon's API, over HTTPS as any client
sends it: policies and bindings (Deny, Warn, params by name and selector, matchConditions,
variables, messageExpression, reason, failurePolicy on an evaluation error, DELETE with
oldObject), the texts and codes of the refusals and the Warning headers; invalid policies and
bindings refused with upstream's 422. When the kube-apiserver tier runs (NODEAGENT_KUBE_APISERVER=1)
the same sequence against the real kube-apiserver v1.37.2 gives the same answers.

Everything is scoped to one namespace per run (a namespaceSelector on its label), so the daemon's
other tests never meet these policies.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer

pytestmark = [pytest.mark.integration]

Answer = tuple[int, Any, list[str]]
Send = Callable[..., Answer]
API = "/apis/admissionregistration.k8s.io/v1"


def _sender(url: str, ctx: ssl.SSLContext, headers: dict[str, str]) -> Send:
    def send(method: str, path: str, body: Any, content_type: str = "application/json") -> Answer:
        req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                     method=method, headers={**headers, "Accept": "application/json",
                                                             "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return resp.status, json.loads(resp.read()), resp.headers.get_all("Warning") or []
        except urllib.error.HTTPError as err:
            with err:
                text = err.read()
            try:
                body = json.loads(text or b"{}")
            except ValueError:  # the real server's "404 page not found" before a new CRD is served
                body = {"message": text.decode(errors="replace")}
            return err.code, body, err.headers.get_all("Warning") or []

    return send


def daemon_send(d: Daemon) -> Send:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return _sender(cluster["server"], ctx, {"Authorization": f"Bearer {user['token']}"})


def _rules(ops: list[str]) -> dict[str, Any]:
    return {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ops,
                               "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"vap-test": "NS"}}}


def policies(ns: str) -> list[dict[str, Any]]:
    """The policies of one run (their names and selectors carry the namespace)."""
    def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        constraints = json.loads(json.dumps(spec.pop("match")).replace('"NS"', json.dumps(ns)))
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": f"{ns}-{name}"}, "spec": {"matchConstraints": constraints, **spec}}

    return [
        policy("size", {"match": _rules(["CREATE", "UPDATE"]),
                        "matchConditions": [{"name": "not-params",
                                             "expression": "!object.metadata.name.startsWith('p-')"}],
                        "variables": [{"name": "keys", "expression": "has(object.data) ? size(object.data) : 0"}],
                        "validations": [
                            {"expression": "variables.keys <= 2", "message": "too many keys"},
                            {"expression": "!has(object.data) || !('forbidden' in object.data)",
                             "messageExpression": "'key forbidden in ' + object.metadata.name",
                             "reason": "Forbidden"},
                            {"expression": "!object.metadata.name.startsWith('err-') || object.data.missing == 'x'"},
                        ]}),
        policy("warn", {"match": _rules(["CREATE"]), "failurePolicy": "Ignore",
                        "validations": [{"expression": "object.metadata.name.startsWith('ok-') || "
                                                       "object.metadata.name.startsWith('p-')"}]}),
        policy("params", {"match": _rules(["CREATE", "UPDATE"]),
                          "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                          "validations": [{"expression": "!has(object.data) || size(object.data) <= "
                                                         "int(params.data.max)",
                                           "messageExpression": "'at most ' + params.data.max + ' keys'"}]}),
        policy("authz", {"match": _rules(["CREATE"]),
                         "validations": [
                             {"expression": "authorizer.requestResource.check('create').allowed()",
                              "message": "the writer may not create it"},
                             {"expression": "authorizer.serviceAccount(request.namespace, 'nobody').group('')"
                                            ".resource('secrets').namespace(request.namespace).check('get')"
                                            ".allowed()",
                              "message": "nobody may not read secrets here"}]}),
        policy("delete", {"match": _rules(["DELETE"]),
                          "validations": [{"expression": "request.operation == 'DELETE' && oldObject != null && "
                                                         "object == null && !(has(oldObject.metadata.labels) && "
                                                         "'keep' in oldObject.metadata.labels)",
                                           "message": "kept"}]}),
    ]


def bindings(ns: str) -> list[dict[str, Any]]:
    def binding(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": f"{ns}-{name}-b"}, "spec": {"policyName": f"{ns}-{name}", **spec}}

    return [
        binding("size", {"validationActions": ["Deny"]}),
        binding("warn", {"validationActions": ["Warn", "Audit"]}),
        binding("params", {"validationActions": ["Deny"],
                           "paramRef": {"name": "p-limits", "namespace": ns, "parameterNotFoundAction": "Deny"},
                           "matchResources": {"objectSelector": {"matchLabels": {"limited": "yes"}}}}),
        binding("authz", {"validationActions": ["Deny"],
                          "matchResources": {"objectSelector": {"matchLabels": {"authz": "yes"}}}}),
        binding("delete", {"validationActions": ["Deny"]}),
    ]


def cm(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if labels:
        md["labels"] = labels
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
    if data is not None:
        out["data"] = data
    return out


def _answer(answer: Answer) -> Any:
    code, body, warnings = answer
    if code < 300:
        return code, sorted(warnings)
    return code, body.get("reason"), body.get("message"), body.get("details"), sorted(warnings)


def _wait(send: Send, ns: str) -> None:
    """Until every binding is enforced (the real kube-apiserver's policy informers lag a write)."""
    probes = [("POST", f"/api/v1/namespaces/{ns}/configmaps", cm("probe-size", {"a": "1", "b": "2", "c": "3"})),
              ("POST", f"/api/v1/namespaces/{ns}/configmaps", cm("probe-params", {"a": "1", "b": "2"},
                                                                  {"limited": "yes"}))]
    deadline = time.monotonic() + 30
    pending = list(probes)
    while pending:
        method, path, body = pending[0]
        code, _, _ = send(method, path, body)
        if code >= 400:
            pending.pop(0)
            continue
        send("DELETE", f"{path}/{body['metadata']['name']}", None)
        assert time.monotonic() < deadline, f"policy not enforced: {body['metadata']['name']}"
        time.sleep(0.2)
    deadline = time.monotonic() + 30
    while True:  # the Warn binding
        name = f"probe-warn-{int(time.monotonic() * 1000)}"
        code, _, warnings = send("POST", f"/api/v1/namespaces/{ns}/configmaps", cm(name))
        send("DELETE", f"/api/v1/namespaces/{ns}/configmaps/{name}", None)
        if warnings:
            return
        assert time.monotonic() < deadline, "warn binding not enforced"
        time.sleep(0.2)


def scenario(send: Send, ns: str) -> list[tuple[str, Any]]:
    """Set the policies up in a fresh namespace and send the requests; (step, answer) of each."""
    out: list[tuple[str, Any]] = []

    def step(label: str, method: str, path: str, body: Any, content_type: str = "application/json") -> Answer:
        answer = send(method, path, body, content_type)
        out.append((label, _answer(answer)))
        return answer

    base = f"/api/v1/namespaces/{ns}/configmaps"
    code, body, _ = send("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": ns, "labels": {"vap-test": ns}}})
    assert code == 201, body
    code, body, _ = send("POST", base, cm("p-limits", {"max": "1"}))
    assert code == 201, body
    for obj in policies(ns):
        code, body, _ = send("POST", f"{API}/validatingadmissionpolicies", obj)
        assert code == 201, body
    for obj in bindings(ns):
        code, body, _ = send("POST", f"{API}/validatingadmissionpolicybindings", obj)
        assert code == 201, body
    _wait(send, ns)
    step("allowed", "POST", base, cm("ok-small", {"a": "1"}))
    step("denied by message", "POST", base, cm("ok-big", {"a": "1", "b": "2", "c": "3"}))
    step("denied by messageExpression, reason Forbidden", "POST", base, cm("ok-forbidden", {"forbidden": "1"}))
    step("evaluation error, failurePolicy Fail", "POST", base, cm("err-x", {"a": "1"}))
    step("warned, allowed", "POST", base, cm("warned", {"a": "1"}))
    step("params deny", "POST", base, cm("ok-limited", {"a": "1", "b": "2"}, {"limited": "yes"}))
    step("params allow", "POST", base, cm("ok-limited2", {"a": "1"}, {"limited": "yes"}))
    step("update denied", "PUT", f"{base}/ok-small", cm("ok-small", {"a": "1", "b": "2", "c": "3"}))
    step("patch denied", "PATCH", f"{base}/ok-small", {"data": {"forbidden": "x"}}, "application/merge-patch+json")
    step("dry-run denied", "POST", f"{base}?dryRun=All", cm("ok-dry", {"a": "1", "b": "2", "c": "3"}))
    deadline = time.monotonic() + 30
    while True:  # the authorizer policy (its binding selects the label; the real one's informers lag)
        answer = send("POST", base, cm("ok-authz", {"a": "1"}, {"authz": "yes"}))
        if answer[0] >= 400 or time.monotonic() > deadline:
            out.append(("authorizer deny", _answer(answer)))
            break
        send("DELETE", f"{base}/ok-authz", None)
        time.sleep(0.2)
    step("kept on delete", "POST", base, cm("ok-kept", {"a": "1"}, {"keep": "1"}))
    deadline = time.monotonic() + 30
    while True:  # the delete binding (a fresh-clone CI run saw the real one's informers still lag here)
        answer = send("DELETE", f"{base}/ok-kept", None)
        if answer[0] >= 400 or time.monotonic() > deadline:
            out.append(("delete denied", _answer(answer)))
            break
        send("POST", base, cm("ok-kept", {"a": "1"}, {"keep": "1"}))
        time.sleep(0.2)
    step("delete allowed", "DELETE", f"{base}/ok-small", None)
    # the params are deleted: parameterNotFoundAction Deny refuses the binding's requests
    _delete(send, f"{API}/validatingadmissionpolicies/{ns}-delete")
    _wait_gone(send, f"{base}/ok-kept")
    send("DELETE", f"{base}/p-limits", None)
    deadline = time.monotonic() + 30
    while True:
        answer = send("POST", base, cm("ok-noparams", {"a": "1"}, {"limited": "yes"}))
        if answer[0] >= 400 or time.monotonic() > deadline:
            out.append(("no params, Deny", _answer(answer)))
            break
        send("DELETE", f"{base}/ok-noparams", None)
        time.sleep(0.2)
    return out


def _delete(send: Send, path: str) -> None:
    """Delete `path`, again if the answer is lost or refused (a busy server's 10 s timeout)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            code, body, _ = send("DELETE", path, None)
        except OSError as err:  # timed out: the delete may or may not have happened
            code, body = 0, str(err)
        if code in (200, 404):
            return
        assert time.monotonic() < deadline, f"delete {path}: {code} {body}"
        time.sleep(0.5)


def _wait_gone(send: Send, path: str) -> None:
    """Delete `path` until the delete policy no longer applies (the real server's informers lag a delete;
    a fresh-clone CI run saw more than 30 s once, with the policy's own DELETE unchecked)."""
    start = time.monotonic()
    while True:
        code, body, _ = send("DELETE", path, None)
        if code < 400 or code == 404:  # 404: an earlier DELETE of the loop already took it
            return
        assert time.monotonic() < start + 90, f"still refused after {time.monotonic() - start:.1f} s: {path}: {body}"
        time.sleep(0.2)


INVALID = [
    ("no validations", "validatingadmissionpolicies",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
      "metadata": {"name": "bad-empty"}, "spec": {"failurePolicy": "Bad"}}),
    ("rules and expressions", "validatingadmissionpolicies",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
      "metadata": {"name": "bad-rules"},
      "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                       "operations": ["CREATE", "*"], "resources": []}]},
               "matchConditions": [{"name": "c", "expression": "1"}],
               "variables": [{"name": "in", "expression": "variables.later"}],
               "validations": [{"expression": "foo > 1", "message": "a\nb"},
                               {"expression": "object.x", "messageExpression": "1", "reason": "Teapot"},
                               {"expression": "object.x == 1 && params.y"}]}}),
    ("syntax", "validatingadmissionpolicies",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
      "metadata": {"name": "bad-syntax"},
      "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                       "operations": ["CREATE"], "resources": ["pods"]}]},
               "validations": [{"expression": "object.spec.replicas >"}]}}),
    # what cel-go's checker finds with object and params dyn: typed request/namespaceObject fields, library
    # results (size() is an int whatever its receiver), the composited variables' types
    ("type errors", "validatingadmissionpolicies",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
      "metadata": {"name": "bad-types"},
      "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                       "operations": ["CREATE"], "resources": ["pods"]}]},
               "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
               "variables": [{"name": "n", "expression": "size(object.spec)"},
                             {"name": "names", "expression": "object.spec.containers.map(c, c.name)"}],
               "validations": [
                   {"expression": "object.spec.containers.all(c, c.image.size())"},
                   {"expression": "request.userInfo.username == 1 || namespaceObject.metadata.labels.size() > 'a'"},
                   {"expression": "variables.n + 'x' == 'y' && variables.names.exists(n, n > 1)",
                    "messageExpression": "'count: ' + size(params.data)"},
                   {"expression": "object.spec.containers.exists(c, c.name.startsWith('a')) && "
                                  "type(params) == map && request.dryRun != null"},
                   {"expression": "[1, 'a'].size() > 0 || object.?spec.orValue(1) + 1 > 'b'"},
                   {"expression": "{'a': 1, 'b': 'x'}.size() > 0 && '%s %s'.format([1, 'a']) != '' && "
                                  "type(object) == string"}]}}),
    ("binding", "validatingadmissionpolicybindings",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
      "metadata": {"name": "bad-binding"},
      "spec": {"validationActions": ["Deny", "Warn", "Deny", "Nope"],
               "paramRef": {"name": "a", "selector": {}, "parameterNotFoundAction": "Maybe"}}}),
    ("binding without actions", "validatingadmissionpolicybindings",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
      "metadata": {"name": "bad-binding2"}, "spec": {"policyName": "x", "paramRef": {}}}),
]


def invalid_answers(send: Send) -> list[tuple[str, Any]]:
    return [(label, _answer(send("POST", f"{API}/{plural}", obj))) for label, plural, obj in INVALID]


def test_policies_deny_warn_and_allow(api_daemon: Daemon) -> None:
    ns = f"vap-{int(time.time() * 1000) % 10**9}"
    answers = dict(scenario(daemon_send(api_daemon), ns))
    prefix = f'configmaps "ok-big" is forbidden: ValidatingAdmissionPolicy \'{ns}-size\' with binding \'{ns}-size-b\''
    assert answers["allowed"] == (201, [])
    code, reason, message, details, warnings = answers["denied by message"]
    assert (code, reason, message, warnings) == (422, "Invalid", f"{prefix} denied request: too many keys", [])
    assert details == {"name": "ok-big", "kind": "configmaps", "causes": [{"message": message.split(": ", 1)[1]}]}
    code, reason, message, _, _ = answers["denied by messageExpression, reason Forbidden"]
    assert (code, reason) == (403, "Forbidden") and message.endswith("denied request: key forbidden in ok-forbidden")
    code, reason, message, _, warnings = answers["evaluation error, failurePolicy Fail"]
    assert (code, reason) == (422, "Invalid") and len(warnings) == 1  # the Warn binding's, on the refusal too
    assert message.endswith("denied request: expression '!object.metadata.name.startsWith('err-') || "
                            "object.data.missing == 'x'' resulted in error: no such key: missing"), message
    assert answers["warned, allowed"] == (201, [
        f'299 - "Validation failed for ValidatingAdmissionPolicy \'{ns}-warn\' with binding \'{ns}-warn-b\': '
        "failed expression: object.metadata.name.startsWith('ok-') || object.metadata.name.startsWith('p-')\""])
    assert answers["params deny"][:3] == (422, "Invalid", f'configmaps "ok-limited" is forbidden: '
                                          f"ValidatingAdmissionPolicy '{ns}-params' with binding '{ns}-params-b' "
                                          "denied request: at most 1 keys")
    assert answers["params allow"] == (201, [])
    assert answers["update denied"][:2] == (422, "Invalid")
    assert answers["patch denied"][:2] == (403, "Forbidden")
    assert answers["dry-run denied"][:2] == (422, "Invalid")
    assert answers["delete denied"][2].endswith(f"with binding '{ns}-delete-b' denied request: kept")
    assert answers["delete allowed"][0] == 200
    assert answers["authorizer deny"][2].endswith("denied request: nobody may not read secrets here")
    assert answers["no params, Deny"][2].endswith("denied request: failed to configure binding: no params found for "
                                                  "policy binding with `Deny` parameterNotFoundAction")


def test_invalid_policies_refused(api_daemon: Daemon) -> None:
    answers = dict(invalid_answers(daemon_send(api_daemon)))
    for label, answer in answers.items():
        assert answer[:2] == (422, "Invalid"), (label, answer)
    causes = {c["field"]: c["message"] for c in answers["rules and expressions"][3]["causes"]}
    assert causes["spec.validations[0].expression"].startswith(
        "Invalid value: \"foo > 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo'")
    assert causes["spec.matchConditions[0].expression"] == 'Invalid value: "1": must evaluate to bool but got int'
    assert "spec.matchConstraints.resourceRules[0].resources" in causes


@pytest.mark.kube_apiserver
@pytest.mark.timeout(300)  # the real server's informers may take up to 90 s per wait under load
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ns = f"vap-cmp-{int(time.time() * 1000) % 10**9}"
    ours = scenario(daemon_send(api_daemon), ns)
    theirs = scenario(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}), ns)
    assert ours == theirs
    assert invalid_answers(daemon_send(api_daemon)) == invalid_answers(
        _sender(kube_apiserver.url, kube_apiserver._ssl(), {}))


# dra-example-driver's chart's policy (v0.4.0 templates/validatingadmissionpolicy.yaml, rendered for the
# service account dra-example-driver/dra-example-driver-service-account): optional selection, variables,
# matchConditions on request.userInfo, messageExpression
CHART_POLICY_SPEC: dict[str, Any] = {
    "failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": ["resource.k8s.io"],
                                            "apiVersions": ["v1beta1", "v1beta2", "v1"],
                                            "operations": ["CREATE", "UPDATE", "DELETE"],
                                            "resources": ["resourceslices"]}]},
    "matchConditions": [{"name": "isRestrictedUser", "expression": 'request.userInfo.username == "system:'
                         'serviceaccount:SANS:dra-example-driver-service-account"'}],
    "variables": [
        {"name": "userNodeName",
         "expression": "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')"},
        {"name": "objectNodeName",
         "expression": '(request.operation == "DELETE" ? oldObject : object).spec.?nodeName.orValue("")'},
    ],
    "validations": [
        {"expression": 'variables.userNodeName != ""',
         "message": "no node association found for user, this user must run in a pod on a node and "
                    "ServiceAccountTokenPodNodeInfo must be enabled"},
        {"expression": "variables.userNodeName == variables.objectNodeName",
         "messageExpression": "\"this user running on node '\"+variables.userNodeName+\"' may not modify \" + "
                              "(variables.objectNodeName == \"\" ?\"cluster resourceslices\" : \"resourceslices on "
                              "node '\"+variables.objectNodeName+\"'\")"},
    ],
}


def _slice(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": []}}


def chart_policy(send: Send, sa_ns: str, impersonating: Callable[[dict[str, str]], Send]) -> list[tuple[str, Any]]:
    """The chart's policy and binding, then ResourceSlice writes as the driver's service account
    (impersonated, with and without the node-name extra) and as the admin."""
    spec = json.loads(json.dumps(CHART_POLICY_SPEC).replace("SANS", sa_ns))
    name = f"resourceslices-policy-{sa_ns}"
    code, body, _ = send("POST", f"{API}/validatingadmissionpolicies", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec})
    assert code == 201, body
    code, body, _ = send("POST", f"{API}/validatingadmissionpolicybindings", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}})
    assert code == 201, body
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    code, body, _ = send("POST", f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["*"]}]})
    assert code == 201, body
    code, body, _ = send("POST", f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "dra-example-driver-service-account", "namespace": sa_ns}]})
    assert code == 201, body
    user = f"system:serviceaccount:{sa_ns}:dra-example-driver-service-account"
    as_sa = impersonating({"Impersonate-User": user})
    on_node = impersonating({"Impersonate-User": user,
                             "Impersonate-Extra-authentication.kubernetes.io%2fnode-name": f"{sa_ns}-n1"})
    base = "/apis/resource.k8s.io/v1/resourceslices"
    deadline = time.monotonic() + 30
    while True:  # until the policy is enforced (the real kube-apiserver's informers)
        answer = as_sa("POST", base, _slice(f"{sa_ns}-probe", f"{sa_ns}-n1"))
        if answer[0] == 422 or time.monotonic() > deadline:
            break
        send("DELETE", f"{base}/{sa_ns}-probe", None)
        time.sleep(0.2)
    out = [("no node-name extra", _answer(answer))]
    out.append(("other node", _answer(on_node("POST", base, _slice(f"{sa_ns}-s2", f"{sa_ns}-n2")))))
    out.append(("own node", _answer(on_node("POST", base, _slice(f"{sa_ns}-s1", f"{sa_ns}-n1")))))
    out.append(("admin, any node", _answer(send("POST", base, _slice(f"{sa_ns}-s3", f"{sa_ns}-n3")))))
    out.append(("delete other node's", _answer(on_node("DELETE", f"{base}/{sa_ns}-s3", None))))
    out.append(("delete own", _answer(on_node("DELETE", f"{base}/{sa_ns}-s1", None))))
    send("DELETE", f"{API}/validatingadmissionpolicybindings/{name}", None)
    send("DELETE", f"{API}/validatingadmissionpolicies/{name}", None)
    for n in ("s3", "probe"):
        send("DELETE", f"{base}/{sa_ns}-{n}", None)
    send("DELETE", f"{rbac}/clusterrolebindings/{name}", None)
    send("DELETE", f"{rbac}/clusterroles/{name}", None)
    return out


def _daemon_impersonating(d: Daemon) -> Callable[[dict[str, str]], Send]:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return lambda extra: _sender(cluster["server"], ctx, {"Authorization": f"Bearer {user['token']}", **extra})


def test_dra_example_driver_chart_policy(api_daemon: Daemon) -> None:
    sa_ns = f"chart{int(time.time() * 1000) % 10**6}"
    got = dict(chart_policy(daemon_send(api_daemon), sa_ns, _daemon_impersonating(api_daemon)))
    name = f"resourceslices-policy-{sa_ns}"
    # a user without extra: `request.userInfo.extra` is absent, as on the real kube-apiserver
    assert got["no node-name extra"][:3] == (
        422, "Invalid", f'resourceslices.resource.k8s.io "{sa_ns}-probe" is forbidden: ValidatingAdmissionPolicy '
        f"'{name}' with binding '{name}' denied request: expression 'variables.userNodeName != \"\"' resulted in "
        'error: composited variable "userNodeName" fails to evaluate: no such key: extra')
    assert got["other node"][2].endswith(f"denied request: this user running on node '{sa_ns}-n1' may not modify "
                                         f"resourceslices on node '{sa_ns}-n2'")
    assert got["own node"] == (201, [])
    assert got["admin, any node"] == (201, [])
    assert got["delete other node's"][:2] == (422, "Invalid")
    assert got["delete own"][0] == 200


@pytest.mark.kube_apiserver
def test_the_chart_policy_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    sa_ns = f"chartcmp{int(time.time() * 1000) % 10**6}"
    ours = chart_policy(daemon_send(api_daemon), sa_ns, _daemon_impersonating(api_daemon))
    real = _sender(kube_apiserver.url, kube_apiserver._ssl(), {})
    theirs = chart_policy(real, sa_ns, lambda extra: _sender(kube_apiserver.url, kube_apiserver._ssl(), extra))
    assert ours == theirs
