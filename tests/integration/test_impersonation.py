"""Impersonation through the API server's HTTPS edge (Impersonate-User/-Group/-Uid/-Extra-*, kubectl
--as/--as-group): who may act as whom (legacy `impersonate` and v1.37's constrained modes), the user
a request continues as (SelfSubjectReview), the 400/403 Status texts; the same sequence answered
the same way by the real kube-apiserver v1.37.2 when that tier runs (NODEAGENT_KUBE_APISERVER=1).
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent.apiserver import certs
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer, fixture_binary, running_kube_apiserver

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

Send = Callable[[str, str, Mapping[str, str], Any], tuple[int, Any]]
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SSR_BODY = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
PODS = "/api/v1/namespaces/default/pods"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _cert_sender(url: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> Send:
    tmp = Path(tempfile.mkdtemp(prefix="im-"))
    (tmp / "c.pem").write_bytes(cert_pem)
    (tmp / "k.pem").write_bytes(key_pem)
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    ctx.load_cert_chain(tmp / "c.pem", tmp / "k.pem")

    def send(method: str, path: str, headers: Mapping[str, str], body: Any = None) -> tuple[int, Any]:
        req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                     method=method, headers={**headers, "Accept": "application/json",
                                                             "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    return send


def ours_as(d: Daemon) -> Callable[[str, Sequence[str]], Send]:
    cfg = yaml.safe_load(d.kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]

    def as_(user: str, groups: Sequence[str]) -> Send:
        cert, key = certs.issue_client_cert(d.base / "state" / "apiserver", user=user, groups=list(groups),
                                            clock_now=time.time())
        return _cert_sender(cluster["server"], base64.b64decode(cluster["certificate-authority-data"]), cert, key)

    return as_


def theirs_as(k: KubeAPIServer) -> Callable[[str, Sequence[str]], Send]:
    def as_(user: str, groups: Sequence[str]) -> Send:
        cfg = yaml.safe_load(k.kubeconfig_for(user, groups).read_text())
        cluster, creds = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
        return _cert_sender(k.url, base64.b64decode(cluster["certificate-authority-data"]),
                            base64.b64decode(creds["client-certificate-data"]),
                            base64.b64decode(creds["client-key-data"]))

    return as_


def _grant(admin: Send, name: str, user: str, rules: list[dict[str, Any]]) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": rules}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    for path, obj in ((f"{RBAC}/clusterroles", role), (f"{RBAC}/clusterrolebindings", binding)):
        code, doc = admin("POST", path, {}, obj)
        assert code in (201, 409), doc


def _seed(admin: Send) -> None:
    # legacy: impersonate the user im-bob and the group im-dev (core group)
    _grant(admin, "im-legacy", "im-legacy", [
        {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["im-bob"]},
        {"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"], "resourceNames": ["im-dev"]}])
    # constrained (user-info): act as im-bob only to list pods
    _grant(admin, "im-constrained", "im-constrained", [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["users"], "verbs": ["impersonate:user-info"],
         "resourceNames": ["im-bob"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate-on:user-info:list"]}])


ADMIN = ("im-admin", ("system:masters",))
JANE, LEGACY, CONSTRAINED = ("im-jane", ()), ("im-legacy", ()), ("im-constrained", ())
SA = "system:serviceaccount:kube-system:im-sa"
CASES: list[tuple[tuple[str, tuple[str, ...]], dict[str, str], str, str]] = [
    (JANE, {"Impersonate-User": "im-bob"}, "GET", PODS),
    (JANE, {"Impersonate-Group": "im-dev"}, "GET", PODS),
    (JANE, {"Impersonate-User": "im-bob"}, "POST", SSR),
    (LEGACY, {"Impersonate-User": "im-bob"}, "GET", PODS),
    (LEGACY, {"Impersonate-User": "im-bob"}, "POST", SSR),
    (LEGACY, {"Impersonate-User": "im-bob", "Impersonate-Group": "im-dev"}, "POST", SSR),
    (LEGACY, {"Impersonate-User": "im-bob", "Impersonate-Group": "im-ops"}, "POST", SSR),
    (LEGACY, {"Impersonate-User": "im-alice"}, "GET", PODS),
    (LEGACY, {"Impersonate-User": "im-bob", "Impersonate-Uid": "u-1"}, "POST", SSR),
    (CONSTRAINED, {"Impersonate-User": "im-bob"}, "GET", PODS),
    (CONSTRAINED, {"Impersonate-User": "im-bob"}, "GET", PODS + "/im-x"),
    (CONSTRAINED, {"Impersonate-User": "im-alice"}, "GET", PODS),
    (CONSTRAINED, {"Impersonate-User": SA}, "GET", PODS),
    (CONSTRAINED, {"Impersonate-User": "system:node:im-n1"}, "GET", PODS),
    (ADMIN, {"Impersonate-User": SA}, "POST", SSR),
    (ADMIN, {"Impersonate-User": "system:node:im-n1"}, "POST", SSR),
    (ADMIN, {"Impersonate-User": "system:anonymous"}, "GET", PODS),
    (ADMIN, {"Impersonate-User": "im-x", "Impersonate-Group": "system:masters"}, "POST", SSR),
    (ADMIN, {"Impersonate-User": "im-x", "Impersonate-Uid": "u-2", "Impersonate-Extra-Scopes": "a",
             "Impersonate-Extra-acme.io%2Fteam": "b"}, "POST", SSR),
]


def _answers(as_: Callable[[str, Sequence[str]], Send]) -> list[Any]:
    _seed(as_(*ADMIN))
    out: list[Any] = []
    for (user, groups), headers, method, path in CASES:
        code, doc = as_(user, groups)(method, path, headers, SSR_BODY if method == "POST" else None)
        if code < 400:
            out.append((code, doc.get("status", {}).get("userInfo") if path == SSR else None))
        else:
            out.append((code, doc.get("reason"), doc.get("message"), doc.get("details")))
    return out


def test_impersonation(api_daemon: Daemon) -> None:
    got = dict(zip([f"{u[0]} {h} {m} {p}" for u, h, m, p in CASES], _answers(ours_as(api_daemon)), strict=True))
    answers = list(got.values())
    assert answers[0] == (403, "Forbidden", 'pods is forbidden: User "im-jane" cannot impersonate-on:user-info:list '
                          'resource "pods" in API group "" in the namespace "default"', {"kind": "pods"})
    assert answers[1][:2] == (400, "BadRequest")
    assert answers[1][2] == ('requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"im-dev"}, '
                             "Extra:map[string][]string(nil)} without impersonating a user name")
    assert answers[3][2] == ('pods is forbidden: User "im-bob" cannot list resource "pods" in API group "" in the '
                             'namespace "default"')
    assert answers[4] == (201, {"username": "im-bob", "groups": ["system:authenticated"]})
    assert answers[5] == (201, {"username": "im-bob", "groups": ["im-dev", "system:authenticated"]})
    # the mode that last worked for im-legacy (legacy) is tried first, so its refusal is the one told
    assert answers[6][2] == ('groups "im-ops" is forbidden: User "im-legacy" cannot impersonate resource "groups" '
                             'in API group "" at the cluster scope')
    assert answers[9][2] == answers[3][2]
    assert answers[10][2] == ('pods "im-x" is forbidden: User "im-constrained" cannot impersonate-on:user-info:get '
                              'resource "pods" in API group "" in the namespace "default"')
    assert answers[14] == (201, {"username": SA, "groups": ["system:serviceaccounts",
                                                            "system:serviceaccounts:kube-system",
                                                            "system:authenticated"]})
    assert answers[15] == (201, {"username": "system:node:im-n1", "groups": ["system:nodes", "system:authenticated"]})
    assert answers[16][2] == ('pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" '
                              'in the namespace "default"')
    assert answers[17] == (201, {"username": "im-x", "groups": ["system:masters", "system:authenticated"]})
    assert answers[18] == (201, {"username": "im-x", "uid": "u-2", "groups": ["system:authenticated"],
                                 "extra": {"scopes": ["a"], "acme.io/team": ["b"]}})


def test_kubectl_as(api_daemon: Daemon) -> None:
    out = api_daemon.kubectl("--as", SA, "--as-group", "im-dev", "auth", "whoami", "-o", "json")
    info = json.loads(out.stdout)["status"]["userInfo"]
    assert info == {"username": SA, "groups": ["im-dev", "system:authenticated"]}
    denied = api_daemon.kubectl("--as", "im-nobody", "get", "pods", check=False)
    assert denied.returncode != 0
    assert ('pods is forbidden: User "im-nobody" cannot list resource "pods" in API group "" in the namespace '
            '"default"') in denied.stderr


@pytest.fixture(scope="module")
def real_apiserver() -> Iterator[KubeAPIServer]:
    """A real kube-apiserver alone (no scheduler or controller manager: impersonation needs neither)."""
    with running_kube_apiserver(fixture_binary()) as server:
        yield server


@pytest.mark.kube_apiserver
def test_the_same_impersonation_as_kube_apiserver(api_daemon: Daemon, real_apiserver: KubeAPIServer) -> None:
    ours = _answers(ours_as(api_daemon))
    theirs = _answers(theirs_as(real_apiserver))
    differ = {f"{u[0]} {h} {m} {p}": (a, b) for (u, h, m, p), a, b in zip(CASES, ours, theirs, strict=True)
              if a != b}
    assert differ == {}
