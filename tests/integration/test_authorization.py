"""Authorization through the API server's HTTPS edge: identities by client certificate from the
embedded CA (a node, the scheduler, a user), each allowed what its role or the Node authorizer
gives and refused the rest with kube-apiserver's 403 Status; the same requests answered the same
way (code, reason, message, details) by the real kube-apiserver (--authorization-mode=Node,RBAC)
when that tier runs (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent.apiserver import certs
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

Send = Callable[..., tuple[int, Any]]
NODE_A, NODE_B = ("system:node:az-node-a", ("system:nodes",)), ("system:node:az-node-b", ("system:nodes",))
SCHEDULER, JANE = ("system:kube-scheduler", ()), ("jane", ())


def _cert_sender(url: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> Send:
    tmp = Path(tempfile.mkdtemp(prefix="az-"))
    (tmp / "c.pem").write_bytes(cert_pem)
    (tmp / "k.pem").write_bytes(key_pem)
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    ctx.load_cert_chain(tmp / "c.pem", tmp / "k.pem")

    def send(method: str, path: str, body: Any = None, ctype: str = "application/json") -> tuple[int, Any]:
        req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                     method=method, headers={"Accept": "application/json", "Content-Type": ctype})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                return err.code, json.loads(raw)
            except ValueError:
                return err.code, raw.decode()

    return send


def daemon_as(d: Daemon, user: str, groups: Sequence[str]) -> Send:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    cert, key = certs.issue_client_cert(d.base / "state" / "apiserver", user=user, groups=list(groups),
                                        clock_now=time.time())
    return _cert_sender(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]), cert, key)


def kube_as(k: KubeAPIServer, user: str, groups: Sequence[str]) -> Send:
    cfg = yaml.safe_load(k.kubeconfig_for(user, groups).read_text())
    cluster, creds = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    return _cert_sender(k.url, base64.b64decode(cluster["certificate-authority-data"]),
                        base64.b64decode(creds["client-certificate-data"]), base64.b64decode(creds["client-key-data"]))


def _pod(name: str, node: str, secret: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/app:1"}],
                     "volumes": [{"name": "s", "secret": {"secretName": secret}}]}}


def _seed(admin: Send) -> None:
    for node in ("az-node-a", "az-node-b"):
        admin("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}},
              "application/json")
    for name in ("az-a", "az-b"):
        admin("POST", "/api/v1/namespaces/default/secrets",
              {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"k": "dg=="}})
    admin("POST", "/api/v1/namespaces/default/pods", _pod("az-pa", "az-node-a", "az-a"))
    admin("POST", "/api/v1/namespaces/default/pods", _pod("az-pb", "az-node-b", "az-b"))


REQUESTS: list[tuple[tuple[str, tuple[str, ...]], str, str]] = [
    (NODE_A, "GET", "/api/v1/namespaces/default/secrets/az-a"),
    (NODE_A, "GET", "/api/v1/namespaces/default/secrets/az-b"),
    (NODE_A, "GET", "/api/v1/namespaces/default/secrets"),
    (NODE_A, "GET", "/api/v1/nodes/az-node-b"),
    (NODE_A, "GET", "/api/v1/nodes"),
    (NODE_A, "GET", "/api/v1/pods"),
    (NODE_A, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Daz-node-a"),
    (NODE_A, "GET", "/api/v1/namespaces/default/pods/az-pb"),
    (NODE_A, "DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/az-node-b"),
    (NODE_A, "GET", "/apis/resource.k8s.io/v1/resourceslices"),
    (NODE_A, "POST", "/api/v1/namespaces"),
    (NODE_B, "GET", "/api/v1/namespaces/default/pods/az-pb"),
    (SCHEDULER, "GET", "/api/v1/namespaces/default/secrets/az-a"),
    (SCHEDULER, "DELETE", "/api/v1/nodes/az-node-a"),
    (SCHEDULER, "GET", "/api/v1/nodes"),
    (JANE, "GET", "/api/v1/namespaces/default/pods"),
    (JANE, "DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin"),
    (JANE, "GET", "/metrics"),
    (JANE, "GET", "/version"),
]


def _answers(as_: Callable[[str, Sequence[str]], Send]) -> list[tuple[int, Any, Any, Any]]:
    out = []
    for (user, groups), method, path in REQUESTS:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "az-x"}} if method == "POST" else None
        code, doc = as_(user, groups)(method, path, body)
        doc = doc if isinstance(doc, dict) else {}
        out.append((code, doc.get("reason") if code >= 400 else None, doc.get("message") if code >= 400 else None,
                    doc.get("details") if code >= 400 else None))
    return out


def test_each_identity_as_its_role_allows(api_daemon: Daemon) -> None:
    _seed(daemon_sender(api_daemon))
    got = dict(zip([f"{u[0]} {m} {p}" for u, m, p in REQUESTS],
                   _answers(lambda u, g: daemon_as(api_daemon, u, g)), strict=True))
    ok = {k for k, v in got.items() if v[0] < 400}
    assert ok == {
        "system:node:az-node-a GET /api/v1/namespaces/default/secrets/az-a",
        "system:node:az-node-a GET /api/v1/pods?fieldSelector=spec.nodeName%3Daz-node-a",
        "system:node:az-node-b GET /api/v1/namespaces/default/pods/az-pb",
        "system:kube-scheduler GET /api/v1/nodes",
        "jane GET /version",
    }, got
    assert got["system:node:az-node-a GET /api/v1/namespaces/default/secrets/az-b"] == (
        403, "Forbidden", 'secrets "az-b" is forbidden: User "system:node:az-node-a" cannot get resource "secrets" '
        "in API group \"\" in the namespace \"default\": node: no relationship found between node 'az-node-a' and "
        "this object", {"name": "az-b", "kind": "secrets"})
    assert got["jane GET /metrics"][:3] == (403, "Forbidden", 'forbidden: User "jane" cannot get path "/metrics"')


def _sar(d: Daemon, user: str, verb: str, resource: str, subresource: str = "") -> Any:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": user, "groups": ["system:authenticated"], "resourceAttributes": {
                  "verb": verb, "resource": resource, "subresource": subresource, "namespace": "default"}}}
    code, doc = daemon_sender(d)("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review,
                                 "application/json")
    assert code == 201, doc
    return doc["status"]


def test_kubectl_auth_can_i_and_access_reviews(api_daemon: Daemon) -> None:
    """kubectl's SelfSubjectAccessReview (protobuf) as the admin, and SubjectAccessReviews answered by
    the authorizers (impersonation, kubectl's --as: test_impersonation.py)."""
    out = api_daemon.kubectl("auth", "can-i", "delete", "nodes", check=False)
    assert out.stdout.strip() == "yes"
    assert _sar(api_daemon, "system:kube-scheduler", "create", "pods", "binding") == {
        "allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole '
                                   '"system:kube-scheduler" to User "system:kube-scheduler"'}
    assert _sar(api_daemon, "system:kube-scheduler", "get", "secrets") == {"allowed": False}
    jane = daemon_as(api_daemon, "jane", ())
    code, doc = jane("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                     {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                      "spec": {"namespace": "default"}})
    assert code == 201 and doc["status"]["incomplete"] is False
    assert {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in doc["status"]["resourceRules"]


MERGE = "application/merge-patch+json"
SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "az-slice"},
         "spec": {"driver": "gpu.example.com", "nodeName": "az-node-b",
                  "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": []}}
WRITES: list[tuple[tuple[str, tuple[str, ...]], str, str, Any, str]] = [
    (NODE_A, "PATCH", "/api/v1/nodes/az-node-b", {"metadata": {"labels": {"x": "y"}}}, MERGE),
    (NODE_A, "PATCH", "/api/v1/nodes/az-node-a",
     {"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}, MERGE),
    (NODE_A, "PATCH", "/api/v1/nodes/az-node-a",
     {"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}}, MERGE),
    (NODE_A, "PATCH", "/api/v1/nodes/az-node-a", {"metadata": {"labels": {"example.com/ok": "yes"}}}, MERGE),
    (NODE_A, "DELETE", "/api/v1/namespaces/default/pods/az-pb", None, "application/json"),
    (NODE_A, "PATCH", "/api/v1/namespaces/default/pods/az-pb/status",
     {"status": {"message": "hello"}}, MERGE),
    (NODE_A, "PATCH", "/api/v1/namespaces/default/pods/az-pa/status", {"status": {"message": "hello"}}, MERGE),
    (NODE_A, "POST", "/apis/resource.k8s.io/v1/resourceslices", SLICE, "application/json"),
    (NODE_A, "POST", "/api/v1/namespaces/default/pods", _pod("az-pc", "az-node-a", "az-a"), "application/json"),
]


def _written(as_: Callable[[str, Sequence[str]], Send]) -> list[tuple[int, Any, Any]]:
    out = []
    for (user, groups), method, path, body, ctype in WRITES:
        code, doc = as_(user, groups)(method, path, body, ctype)
        doc = doc if isinstance(doc, dict) else {}
        out.append((code, doc.get("message") if code >= 400 else None, doc.get("details") if code >= 400 else None))
    return out


def test_node_restriction(api_daemon: Daemon) -> None:
    _seed(daemon_sender(api_daemon))
    got = _written(lambda u, g: daemon_as(api_daemon, u, g))
    assert [c for c, _, _ in got] == [403, 403, 403, 200, 403, 403, 200, 403, 403], got
    assert got[0][1] == 'nodes "az-node-b" is forbidden: node "az-node-a" is not allowed to modify node "az-node-b"'
    assert got[1][1] == 'nodes "az-node-a" is forbidden: node "az-node-a" is not allowed to modify taints'
    assert got[4][1] == ('pods "az-pb" is forbidden: node "az-node-a" can only delete pods with spec.nodeName set '
                         "to itself")
    assert got[7][1] == ('resourceslices.resource.k8s.io "az-slice" is forbidden: can only create ResourceSlice '
                         "with the same NodeName as the requesting node")


JANE_ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "az-jane"},
             "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
                        "verbs": ["create"]},
                       {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}
JANE_ADMIN = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
              "metadata": {"name": "az-jane-admin", "namespace": "default"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "az-jane"},
              "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]}
ESCALATIONS: list[tuple[str, Any]] = [
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "az-ok"},
      "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "az-nodes"},
      "rules": [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "delete"]}]}),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "az-root"},
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
      "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}]}),
]


def _escalations(admin: Send, as_: Callable[[str, Sequence[str]], Send]) -> list[tuple[int, Any]]:
    admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", JANE_ROLE, "application/json")
    admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", JANE_ADMIN,
          "application/json")
    out = []
    for path, body in ESCALATIONS:
        code, doc = as_("jane", ())("POST", path, body)
        out.append((code, doc.get("message") if code >= 400 and isinstance(doc, dict) else None))
    return out


def test_escalation(api_daemon: Daemon) -> None:
    got = _escalations(daemon_sender(api_daemon), lambda u, g: daemon_as(api_daemon, u, g))
    assert [c for c, _ in got] == [201, 403, 403], got
    assert got[1][1] == (
        'roles.rbac.authorization.k8s.io "az-nodes" is forbidden: user "jane" (groups=["system:authenticated"]) is '
        'attempting to grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["nodes"], '
        'Verbs:["get" "delete"]}\n{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}')


@pytest.mark.kube_apiserver
def test_the_same_escalation_check_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = _escalations(daemon_sender(api_daemon), lambda u, g: daemon_as(api_daemon, u, g))
    theirs = _escalations(kube_sender(kube_apiserver), lambda u, g: kube_as(kube_apiserver, u, g))
    assert ours == theirs


@pytest.mark.kube_apiserver
def test_the_same_node_restriction_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    _seed(daemon_sender(api_daemon))
    _seed(kube_sender(kube_apiserver))
    ours = _written(lambda u, g: daemon_as(api_daemon, u, g))
    theirs = _written(lambda u, g: kube_as(kube_apiserver, u, g))
    differ = {f"{w[1]} {w[2]} {w[3]}": (a, b) for w, a, b in zip(WRITES, ours, theirs, strict=True) if a != b}
    assert differ == {}


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    _seed(daemon_sender(api_daemon))
    _seed(kube_sender(kube_apiserver))
    ours = _answers(lambda u, g: daemon_as(api_daemon, u, g))
    theirs = _answers(lambda u, g: kube_as(kube_apiserver, u, g))
    differ = {f"{u[0]} {m} {p}": (a, b) for (u, m, p), a, b in zip(REQUESTS, ours, theirs, strict=True) if a != b}
    assert differ == {}
