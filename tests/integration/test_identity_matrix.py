"""The authorization matrix over the wire: each identity x what it must and must not do, as HTTPS requests.

Identities, each with its own credential: the administrator (the daemon's kubeconfig, a token of
system:masters), the node (`nodeagent kubeconfig --node test-node`, a client certificate of
system:node:test-node), another node (system:node:other-node), a spawned plugin (the kubeconfig the
daemon hands it: a token of its service account, bound to test-node), a service account's token
from `kubectl create token` bound to a pod, and anonymous (no credential; anonymous is off, so 401).
The expected codes are kube-apiserver's with --authorization-mode=Node,RBAC, NodeRestriction, and for
the plugin the DRA example driver chart's RBAC and ValidatingAdmissionPolicy.
"""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.integration.daemon_helpers import Daemon, running_daemon, wait_for

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]

PROBE = ("import os, pathlib, time; p = pathlib.Path(os.environ['NODEAGENT_KUBECONFIG']); "
         "pathlib.Path(os.environ['OUT']).write_text(str(p)); time.sleep(600)")
NODE = "test-node"
OTHER = "other-node"
IDENTITIES = ("admin", "node", "other", "plugin", "sa", "anonymous")


class Caller:
    """HTTPS requests to the daemon's API with one kubeconfig's credential (none: anonymous)."""

    def __init__(self, server: str, ca_pem: bytes, user: dict[str, Any], scratch: Path) -> None:
        url = urlsplit(server)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 443
        self.context = ssl.create_default_context(cadata=ca_pem.decode())
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if "token" in user:
            self.headers["Authorization"] = f"Bearer {user['token']}"
        if "client-certificate-data" in user:
            cert, key = scratch / "c.pem", scratch / "k.pem"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            self.context.load_cert_chain(cert, key)

    def __call__(self, method: str, path: str, body: Any = None,
                 content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=30)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={**self.headers, "Content-Type": content_type})
            answer = conn.getresponse()
            data = answer.read()
        finally:
            conn.close()
        return answer.status, json.loads(data) if data else {}


def _slice(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "matrix.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": []}}


def _pod_ref(d: Daemon, name: str) -> dict[str, Any]:
    uid = d.kubectl_json("get", "pod", name)["metadata"]["uid"]
    return {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}


Body = Callable[[str], Any]
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
TOKEN = "/api/v1/namespaces/default/serviceaccounts/drv/token"

# (what, method, path, body by identity, expected code by identity)
MATRIX: list[tuple[str, str, str, Body | None, dict[str, int]]] = [
    ("list pods", "GET", "/api/v1/pods", None,
     {"admin": 200, "node": 403, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("list its node's pods", "GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE}", None,
     {"admin": 200, "node": 200, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("get a secret its pod mounts", "GET", "/api/v1/namespaces/default/secrets/mine", None,
     {"admin": 200, "node": 200, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("get a secret no pod of it mounts", "GET", "/api/v1/namespaces/default/secrets/theirs", None,
     {"admin": 200, "node": 403, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("get its node", "GET", f"/api/v1/nodes/{NODE}", None,
     {"admin": 200, "node": 200, "other": 403, "plugin": 200, "sa": 403, "anonymous": 401}),
    ("label the node", "PATCH", f"/api/v1/nodes/{NODE}", lambda who: {"metadata": {"labels": {"by": who}}},
     {"admin": 200, "node": 200, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("read the node's lease", "GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}", None,
     {"admin": 200, "node": 200, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("publish a slice of test-node", "POST", SLICES, lambda who: _slice(f"{who}-mine", NODE),
     {"admin": 201, "node": 201, "other": 403, "plugin": 201, "sa": 403, "anonymous": 401}),
    ("publish a slice of other-node", "POST", SLICES, lambda who: _slice(f"{who}-other", OTHER),
     {"admin": 201, "node": 403, "other": 201, "plugin": 422, "sa": 403, "anonymous": 401}),
    ("list claims", "GET", "/apis/resource.k8s.io/v1/resourceclaims", None,
     {"admin": 200, "node": 403, "other": 403, "plugin": 200, "sa": 403, "anonymous": 401}),
    ("create a namespace", "POST", "/api/v1/namespaces",
     lambda who: {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{who}"}},
     {"admin": 201, "node": 403, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("bind itself to cluster-admin", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
     lambda who: {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                  "metadata": {"name": f"grab-{who}"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                  "subjects": [{"kind": "User", "name": who, "apiGroup": "rbac.authorization.k8s.io"}]},
     {"admin": 201, "node": 403, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
    ("token unbound", "POST", TOKEN, lambda who: {"spec": {}},
     {"admin": 201, "node": 403, "other": 403, "plugin": 403, "sa": 403, "anonymous": 401}),
]


def _issue_node_kubeconfig(d: Daemon, node: str, out: Path) -> None:
    issued = subprocess.run([sys.executable, "-m", "nodeagent.cli", "kubeconfig", "--config", str(d.config),
                             "--node", node, "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert issued.returncode == 0, issued.stderr


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Daemon, dict[str, Caller]]]:
    base = Path(tempfile.mkdtemp(prefix="na-"))
    out = base / "probe.out"
    agent = {"plugins": [{"name": "probe", "command": [sys.executable, "-c", PROBE], "env": {"OUT": str(out)},
                          "restart": False}]}
    with running_daemon(base, agent=agent) as d:
        wait_for(lambda: d.kubectl("get", "node", NODE, check=False).returncode == 0, timeout=30, what="node")
        objects = [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": OTHER}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "drv", "namespace": "default"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mine", "namespace": "default"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "theirs", "namespace": "default"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
             "spec": {"serviceAccountName": "drv", "nodeName": NODE, "containers": [{"name": "c", "image": "x"}],
                      "volumes": [{"name": "s", "secret": {"secretName": "mine"}},
                                  {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "default"},
             "spec": {"serviceAccountName": "drv", "nodeName": OTHER, "containers": [{"name": "c", "image": "x"}]}},
        ]
        d.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        admin = yaml.safe_load(d.kubeconfig.read_text())
        server = admin["clusters"][0]["cluster"]["server"]
        ca = base64.b64decode(admin["clusters"][0]["cluster"]["certificate-authority-data"])
        wait_for(out.exists, timeout=30, what="the plugin's kubeconfig")
        users: dict[str, dict[str, Any]] = {"admin": admin["users"][0]["user"], "anonymous": {}}
        for who, node in (("node", NODE), ("other", OTHER)):
            _issue_node_kubeconfig(d, node, base / f"{who}.kubeconfig")
            users[who] = yaml.safe_load((base / f"{who}.kubeconfig").read_text())["users"][0]["user"]
        users["plugin"] = yaml.safe_load(Path(out.read_text()).read_text())["users"][0]["user"]
        created = d.kubectl("create", "token", "drv", "--bound-object-kind", "Pod", "--bound-object-name", "p")
        users["sa"] = {"token": created.stdout.strip()}
        callers = {}
        for who, user in users.items():
            scratch = base / f"tls-{who}"
            scratch.mkdir()
            callers[who] = Caller(server, ca, user, scratch)
        yield d, callers


@pytest.mark.parametrize(("what", "method", "path", "body", "expected"), MATRIX, ids=[row[0] for row in MATRIX])
def test_matrix(world: tuple[Daemon, dict[str, Caller]], what: str, method: str, path: str, body: Body | None,
                expected: dict[str, int]) -> None:
    _d, callers = world
    got = {}
    for who in IDENTITIES:
        content = "application/merge-patch+json" if method == "PATCH" else "application/json"
        code, _answer = callers[who](method, path, None if body is None else body(who), content)
        got[who] = code
    assert got == expected, what


def test_refusal_texts(world: tuple[Daemon, dict[str, Caller]]) -> None:
    """A handful of the answers word for word (kube-apiserver's texts)."""
    _d, callers = world
    code, answer = callers["other"]("GET", "/api/v1/namespaces/default/secrets/mine")
    assert (code, answer["message"]) == (403, 'secrets "mine" is forbidden: User "system:node:other-node" cannot get '
                                              'resource "secrets" in API group "" in the namespace "default": node: '
                                              "no relationship found between node 'other-node' and this object")
    code, answer = callers["anonymous"]("GET", "/api/v1/pods")
    assert (code, answer["reason"], answer["message"]) == (401, "Unauthorized", "Unauthorized")
    code, answer = callers["node"]("POST", TOKEN, {"spec": {}})
    assert (code, answer["message"]) == (403, 'serviceaccounts "drv" is forbidden: node requested token not bound to '
                                              "a pod")
    code, answer = callers["plugin"]("POST", SLICES, _slice("plugin-texts", OTHER))
    assert (code, answer["reason"]) == (422, "Invalid")
    assert answer["message"] == (
        "resourceslices.resource.k8s.io \"plugin-texts\" is forbidden: ValidatingAdmissionPolicy "
        "'resourceslices-policy-nodeagent-plugin' with binding 'resourceslices-policy-nodeagent-plugin' denied "
        "request: this user running on node 'test-node' may not modify resourceslices on node 'other-node'")
    code, answer = callers["plugin"]("GET", "/api/v1/namespaces/default/secrets/mine")
    assert answer["message"] == ('secrets "mine" is forbidden: User "system:serviceaccount:kube-system:'
                                 'nodeagent-plugin-probe" cannot get resource "secrets" in API group "" in the '
                                 'namespace "default"')


def test_node_tokens_follow_its_pods(world: tuple[Daemon, dict[str, Caller]]) -> None:
    """A node creates tokens only for service accounts of its own pods, bound to them (NodeRestriction)."""
    d, callers = world
    own = {"spec": {"boundObjectRef": _pod_ref(d, "p")}}
    code, answer = callers["node"]("POST", TOKEN, own)
    assert code == 201, answer["message"]
    assert answer["status"]["token"] and answer["spec"]["boundObjectRef"]["name"] == "p"
    code, answer = callers["other"]("POST", TOKEN, own)
    assert (code, answer["message"]) == (403, 'serviceaccounts "drv" is forbidden: node requested token bound to a '
                                              "pod scheduled on a different node")
    code, answer = callers["node"]("POST", TOKEN, {"spec": {"boundObjectRef": _pod_ref(d, "q")}})
    assert code == 403 and "scheduled on a different node" in answer["message"]
    code, answer = callers["node"]("POST", TOKEN, {"spec": {"boundObjectRef": _pod_ref(d, "p"), "audiences": ["x"]}})
    assert (code, answer["message"]) == (403, 'serviceaccounts "drv" is forbidden: system:node:test-node is not '
                                              'authorized to request tokens for audience "x"')
    code, answer = callers["node"]("POST", "/api/v1/namespaces/kube-system/serviceaccounts/default/token", own)
    assert (code, answer["message"]) == (403, 'serviceaccounts "default" is forbidden: User "system:node:test-node" '
                                              'cannot create resource "serviceaccounts/token" in API group "" in the '
                                              "namespace \"kube-system\": node: no relationship found between node "
                                              "'test-node' and this object")


def test_a_pod_bound_token_dies_with_its_pod(world: tuple[Daemon, dict[str, Caller]]) -> None:
    d, callers = world
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "short", "namespace": "default"},
           "spec": {"serviceAccountName": "drv", "nodeName": NODE, "containers": [{"name": "c", "image": "x"}]}}
    d.kubectl("apply", "-f", "-", input=json.dumps(pod))
    token = d.kubectl("create", "token", "drv", "--bound-object-kind", "Pod", "--bound-object-name", "short").stdout
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token.strip()}}
    code, answer = callers["admin"]("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert code == 201 and answer["status"]["authenticated"] is True
    assert answer["status"]["user"]["extra"]["authentication.kubernetes.io/pod-name"] == ["short"]
    d.kubectl("delete", "pod", "short", "--grace-period=0", "--force", "--wait=true")
    wait_for(lambda: d.kubectl("get", "pod", "short", check=False).returncode != 0, timeout=30, what="pod gone")
    code, answer = callers["admin"]("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert code == 201 and answer["status"] == {
        "user": {}, "error": "[invalid bearer token, service account token has been invalidated]"}


def test_a_node_evicts_only_its_own_pods(world: tuple[Daemon, dict[str, Caller]]) -> None:
    """NodeRestriction's admitPodEviction: the pod's spec.nodeName must be the node (dry runs: nothing goes)."""
    _d, callers = world
    path = "/api/v1/namespaces/default/pods/q/eviction?dryRun=All"
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "q", "namespace": "default"}}
    code, answer = callers["node"]("POST", path, body)
    assert (code, answer["message"]) == (403, 'pods "q" is forbidden: node "test-node" can only evict pods with '
                                              "spec.nodeName set to itself")
    code, answer = callers["other"]("POST", path, body)
    assert (code, answer.get("status")) == (201, "Success")
