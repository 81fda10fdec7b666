"""Service-account tokens compared with the real kube-apiserver (opt-in tier: NODEAGENT_KUBE_APISERVER=1).

Both servers get the same objects (a service account, a Node n1, a pod of the account on n1 asking for a
projected token, a pod of another account) and the same requests, as the administrator and as node n1:
a TokenRequest bound to the pod (the answer's shape and the token's header and claims, values that differ
by nature normalized), refusals (too short, unknown account, a pod of another account, a node's unbound
request, a node's request of an audience its pod does not ask for), the TokenReview of the pod's token
(user, groups, extra) and after the pod is gone, and `kubectl auth whoami` with the token; and a
plugin identity's slice writes (own node, another node, cluster-wide, a delete, an unbound token) under
dra-example-driver's ValidatingAdmissionPolicy on the real server and nodeagent's in-process rule.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon
from tests.integration.kubeapiserver import running_kube_apiserver
from tests.integration.test_kube_apiserver_authn import Side, raw, token_kubeconfig

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

SA = "/api/v1/namespaces/default/serviceaccounts"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "drv"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "other"}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
     "spec": {"serviceAccountName": "drv", "nodeName": "n1", "automountServiceAccountToken": False,
              "containers": [{"name": "c", "image": "x"}],
              "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
     "spec": {"serviceAccountName": "other", "nodeName": "n1", "automountServiceAccountToken": False,
              "containers": [{"name": "c", "image": "x"}]}},
]


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("kubectl")
    if tool is None:
        pytest.skip("kubectl is not installed")
    return subprocess.run([tool, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=60, check=False, input=stdin)


def _populate(side: Side) -> None:
    for obj in OBJECTS:
        path = "/api/v1/nodes" if obj["kind"] == "Node" else f"/api/v1/namespaces/default/{obj['kind'].lower()}s"
        code, _, body = raw(side, "POST", path, token=None, as_admin=True, body=obj)
        assert code == 201, body


@pytest.fixture(scope="module")
def real(kube_apiserver_binary: Path) -> Iterator[Side]:
    base = Path(tempfile.mkdtemp(prefix="na-kas-", dir="/tmp"))
    try:
        with running_kube_apiserver(kube_apiserver_binary, base) as k:
            side = Side(k.url, k.pki.ca_cert, k.kubeconfig, k.node_kubeconfig("n1"), k.kubeconfig,
                        (base / "pki" / "admin.crt", base / "pki" / "admin.key"))
            deadline = time.monotonic() + 30
            while raw(side, "GET", "/api/v1/namespaces/default/serviceaccounts/default", token=None,
                      as_admin=True)[0] != 200 and time.monotonic() < deadline:
                # no controller manager here: the ServiceAccount admission plugin wants `default`
                raw(side, "POST", SA, token=None, as_admin=True,
                    body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
            _populate(side)
            yield side
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def ours() -> Iterator[Side]:
    base = Path(tempfile.mkdtemp(prefix="na-", dir="/tmp"))
    try:
        with running_daemon(base) as d:
            node = base / "n1.kubeconfig"
            out = subprocess.run(["python", "-m", "nodeagent.cli", "kubeconfig", "--config", str(d.config),
                                  "--node", "n1", "-o", str(node)], capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            ca = base / "state" / "apiserver" / "ca.crt"
            server = yaml.safe_load(d.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            side = Side(server, ca, d.kubeconfig, node, d.kubeconfig)
            _populate(side)
            yield side
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _uid(side: Side, path: str) -> str:
    code, _, body = raw(side, "GET", path, token=None, as_admin=True)
    assert code == 200, body
    return str(body["metadata"]["uid"])


def _jwt(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    head, body, _sig = token.split(".")
    return (json.loads(base64.urlsafe_b64decode(head + "==")), json.loads(base64.urlsafe_b64decode(body + "==")))


def _normal(value: Any) -> Any:
    """Values that differ by nature (uids, times, keys, tokens) replaced by their kind."""
    text = json.dumps(value)
    text = UUID.sub("<uuid>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text)
    return json.loads(text)


def _pod_ref(side: Side, name: str) -> dict[str, str]:
    return {"apiVersion": "v1", "kind": "Pod", "name": name,
            "uid": _uid(side, f"/api/v1/namespaces/default/pods/{name}")}


def test_token_request_answer_and_claims(real: Side, ours: Side) -> None:
    shapes = []
    for side in (real, ours):
        code, _, body = raw(side, "POST", f"{SA}/drv/token", token=None, as_admin=True, body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600, "boundObjectRef": _pod_ref(side, "p")}})
        assert code == 201, body
        header, claims = _jwt(body["status"].pop("token"))
        assert body["metadata"]["uid"] == _uid(side, f"{SA}/drv")
        assert claims["exp"] - claims["iat"] == 600 and claims["nbf"] == claims["iat"]
        for key in ("exp", "iat", "nbf"):
            claims[key] = "<number>"
        header["kid"] = f"<{len(header['kid'])} characters>"
        # the fixture's key is ECDSA P-256 (ES256), nodeagent's RSA 2048 as kubeadm's sa.key (RS256): both
        # are what kube-apiserver signs with, by the key it is given
        assert header.pop("alg") in ("ES256", "RS256")
        shapes.append((_normal(body), header, _normal(claims), list(claims)))
    assert shapes[0] == shapes[1], json.dumps(shapes, indent=1)


@pytest.mark.parametrize(("who", "name", "spec"), [
    ("admin", "drv", {"expirationSeconds": 599}),
    ("admin", "nobody", {}),
    ("admin", "other", {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}),
    ("admin", "drv", {"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}),
    ("admin", "drv", {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "nope"}}),
    ("node", "drv", {}),
    ("node", "drv", {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}),
    ("node", "drv", {"audiences": ["vault"], "boundObjectRef": "p"}),
    ("node", "drv", {"boundObjectRef": "p"}),
    ("node", "other", {"boundObjectRef": "q"}),
])
def test_token_request_answers(real: Side, ours: Side, tmp_path: Path, who: str, name: str,
                               spec: dict[str, Any]) -> None:
    answers = []
    for side in (real, ours):
        body_spec = dict(spec)
        if isinstance(body_spec.get("boundObjectRef"), str):
            body_spec["boundObjectRef"] = _pod_ref(side, body_spec["boundObjectRef"])
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": body_spec}
        if who == "admin":
            code, _, answer = raw(side, "POST", f"{SA}/{name}/token", token=None, as_admin=True, body=body)
        else:
            out = kubectl(side.node, "create", "--raw", f"{SA}/{name}/token", "-f", "-", stdin=json.dumps(body))
            code = 201 if out.returncode == 0 else 0
            answer = json.loads(out.stdout) if out.returncode == 0 else {"stderr": out.stderr.strip()}
        if "status" in answer and isinstance(answer["status"], dict):
            answer["status"].pop("token", None)
        answers.append((code, _normal(answer)))
    assert answers[0] == answers[1], json.dumps(answers, indent=1)


def test_token_review_and_whoami(real: Side, ours: Side, tmp_path: Path) -> None:
    reviews, whoami = [], []
    for i, side in enumerate((real, ours)):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "short"},
               "spec": {"serviceAccountName": "drv", "nodeName": "n1", "automountServiceAccountToken": False,
                        "containers": [{"name": "c", "image": "x"}]}}
        assert raw(side, "POST", "/api/v1/namespaces/default/pods", token=None, as_admin=True, body=pod)[0] == 201
        code, _, answer = raw(side, "POST", f"{SA}/drv/token", token=None, as_admin=True, body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"boundObjectRef": _pod_ref(side, "short")}})
        assert code == 201, answer
        token = answer["status"]["token"]
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        found = [_normal(raw(side, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", token=None, as_admin=True,
                             body=review)[2]["status"])]
        kc = token_kubeconfig(tmp_path / f"sa{i}.kubeconfig", side.server, side.ca, token)
        out = kubectl(kc, "auth", "whoami", "-o", "json")
        assert out.returncode == 0, out.stderr
        whoami.append(_normal(json.loads(out.stdout)["status"]))
        code, _, _ = raw(side, "DELETE", "/api/v1/namespaces/default/pods/short?gracePeriodSeconds=0", token=None,
                         as_admin=True)
        assert code == 200
        deadline = time.monotonic() + 30
        while raw(side, "GET", "/api/v1/namespaces/default/pods/short", token=None, as_admin=True)[0] != 404:
            assert time.monotonic() < deadline, "pod not gone"
            time.sleep(0.5)
        # kube-apiserver caches a token's success for 10 s (its token authenticator cache); nodeagent checks
        # the bound objects at every request, so it refuses at once: compared after the cache has expired
        if side is real:
            time.sleep(11)
        found.append(_normal(raw(side, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", token=None,
                                 as_admin=True, body=review)[2]["status"]))
        out = kubectl(kc, "auth", "whoami")
        found.append((out.returncode, out.stderr.strip()))
        reviews.append(found)
    assert reviews[0] == reviews[1], json.dumps(reviews, indent=1)
    assert whoami[0] == whoami[1], json.dumps(whoami, indent=1)


PLUGIN_SA = "nodeagent-plugin-vap"
POLICY = "resourceslices-policy-nodeagent-plugin"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def _chart_policy() -> list[dict[str, Any]]:
    """dra-example-driver's ValidatingAdmissionPolicy for its kubelet plugin's service account, matching
    nodeagent's plugin accounts (the rule nodeagent applies in process: authz/pluginrestriction.py)."""
    return [{
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["*"],
                                                    "operations": ["CREATE", "UPDATE", "DELETE"],
                                                    "resources": ["resourceslices"]}]},
            "matchConditions": [{"name": "isRestrictedUser", "expression":
                                 "request.userInfo.username.startsWith("
                                 "'system:serviceaccount:kube-system:nodeagent-plugin-')"}],
            "variables": [
                {"name": "userNodeName", "expression":
                 "request.userInfo.extra[?'authentication.kubernetes.io/node-name'][0].orValue('')"},
                {"name": "objectNodeName", "expression":
                 "(request.operation == \"DELETE\" ? oldObject : object).spec.?nodeName.orValue(\"\")"}],
            "validations": [
                {"expression": "variables.userNodeName != \"\"", "message":
                 "no node association found for user, this user must run in a pod on a node and "
                 "ServiceAccountTokenPodNodeInfo must be enabled"},
                {"expression": "variables.userNodeName == variables.objectNodeName", "messageExpression":
                 "\"this user running on node '\"+variables.userNodeName+\"' may not modify \" + "
                 "(variables.objectNodeName == \"\" ?\"cluster resourceslices\" : \"resourceslices on node '\""
                 "+variables.objectNodeName+\"'\")"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": POLICY}, "spec": {"policyName": POLICY, "validationActions": ["Deny"]}}]


def _grant() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": PLUGIN_SA, "namespace": "kube-system"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "vap-slices"},
         "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "vap-slices"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "vap-slices"},
         "subjects": [{"kind": "ServiceAccount", "name": PLUGIN_SA, "namespace": "kube-system"}]}]


def _a_slice(name: str, node: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": "vap.example.com", "pool": {"name": name, "generation": 1,
                                                                   "resourceSliceCount": 1}}
    spec.update({"nodeName": node} if node else {"allNodes": True})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def test_plugin_slices_only_of_its_node(real: Side, ours: Side) -> None:
    """A plugin identity's slice writes: the chart's policy on the real kube-apiserver, nodeagent's own rule."""
    answers = []
    for side in (real, ours):
        items = _grant() + (_chart_policy() if side is real else [])
        out = kubectl(side.admin, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                        "items": items}))
        assert out.returncode == 0, out.stderr
        assert raw(side, "POST", "/api/v1/nodes", token=None, as_admin=True,
                   body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})[0] == 201
        assert raw(side, "POST", SLICES, token=None, as_admin=True, body=_a_slice("theirs", "n2"))[0] == 201
        tokens = {}
        for bound in (True, False):
            spec: dict[str, Any] = {"expirationSeconds": 600}
            if bound:
                spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Node", "name": "n1"}
            code, _, body = raw(side, "POST", f"/api/v1/namespaces/kube-system/serviceaccounts/{PLUGIN_SA}/token",
                                token=None, as_admin=True, body={"spec": spec})
            assert code == 201, body
            tokens[bound] = body["status"]["token"]
        deadline = time.monotonic() + 30
        while True:  # the policy is in force once the API server's policy source has synced
            code, _, body = raw(side, "POST", SLICES, token=tokens[True], body=_a_slice("probe", "n2"))
            if code == 422 or time.monotonic() > deadline:
                break
            raw(side, "DELETE", f"{SLICES}/probe", token=None, as_admin=True)
            time.sleep(1)
        found: list[Any] = []
        for token, method, path, body in (
                (tokens[True], "POST", SLICES, _a_slice("mine", "n1")),
                (tokens[True], "POST", SLICES, _a_slice("other", "n2")),
                (tokens[True], "POST", SLICES, _a_slice("everywhere", None)),
                (tokens[True], "DELETE", f"{SLICES}/theirs", None),
                (tokens[False], "POST", SLICES, _a_slice("unbound", "n1"))):
            code, _, answer = raw(side, method, path, token=token, body=body)
            found.append((code, answer.get("message"), answer.get("reason"), answer.get("details")))
        answers.append(found)
    assert answers[0] == answers[1], json.dumps(answers, indent=1)
    assert [a[0] for a in answers[1]] == [201, 422, 422, 422, 422]
    assert answers[1][3][1] == (
        "resourceslices.resource.k8s.io \"theirs\" is forbidden: ValidatingAdmissionPolicy "
        "'resourceslices-policy-nodeagent-plugin' with binding 'resourceslices-policy-nodeagent-plugin' denied "
        "request: this user running on node 'n1' may not modify resourceslices on node 'n2'")


def test_issuer_discovery(real: Side, ours: Side) -> None:
    """/.well-known/openid-configuration and /openid/v1/jwks: headers, documents (the key's type aside: the
    fixture's is ECDSA), the token's kid among the keys, and who may read them."""
    import ssl
    import urllib.request

    answers = []
    for side in (real, ours):
        code, _, body = raw(side, "POST", f"{SA}/drv/token", token=None, as_admin=True, body={"spec": {}})
        assert code == 201, body
        token = body["status"]["token"]
        found: list[Any] = []
        for path in ("/.well-known/openid-configuration", "/openid/v1/jwks"):
            req = urllib.request.Request(side.server + path, headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=str(side.ca)),
                                        timeout=10) as resp:
                doc = json.loads(resp.read())
                found.append((resp.status, resp.headers["Content-Type"], resp.headers["Cache-Control"]))
            if path.endswith("jwks"):
                assert _jwt(token)[0]["kid"] in [k["kid"] for k in doc["keys"]]
                found.append(sorted({k for key in doc["keys"] for k in key} - {"crv", "x", "y", "n", "e"}))
            else:
                assert doc["jwks_uri"] == side.server + "/openid/v1/jwks"
                doc["jwks_uri"] = "<server>/openid/v1/jwks"
                assert doc.pop("id_token_signing_alg_values_supported") in (["ES256"], ["RS256"])
                found.append(doc)
        out = kubectl(side.node, "get", "--raw", "/openid/v1/jwks")
        found.append((out.returncode, out.stderr.strip()))
        answers.append(found)
    assert answers[0] == answers[1], json.dumps(answers, indent=1)


def test_token_path_in_the_openapi(real: Side, ours: Side) -> None:
    """serviceaccounts/{name}/token in /openapi/v3/api/v1 and /openapi/v2: the operation, its parameters,
    body and answers, and the TokenRequest schema's properties."""
    path = "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    found = []
    for side in (real, ours):
        code, _, v3 = raw(side, "GET", "/openapi/v3/api/v1", token=None, as_admin=True)
        assert code == 200
        op = v3["paths"][path]["post"]
        params = sorted(p.get("name") or p["$ref"].rpartition("/")[2] for p in
                        [*v3["paths"][path].get("parameters", []), *op.get("parameters", [])])
        schemas = v3["components"]["schemas"]
        shape = {name: sorted(schemas[f"io.k8s.api.authentication.v1.{name}"]["properties"])
                 for name in ("TokenRequest", "TokenRequestSpec", "TokenRequestStatus", "BoundObjectReference")}
        code, _, v2 = raw(side, "GET", "/openapi/v2", token=None, as_admin=True)
        assert code == 200
        found.append((op["operationId"], op["x-kubernetes-action"], op["x-kubernetes-group-version-kind"], params,
                      op["requestBody"]["content"]["*/*"]["schema"], sorted(op["responses"]), shape,
                      v2["paths"][path]["post"]["operationId"]))
    assert found[0] == found[1], json.dumps(found, indent=1)
