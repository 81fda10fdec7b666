"""The review kinds (TokenReview, SelfSubjectReview, SubjectAccessReview, LocalSubjectAccessReview,
SelfSubjectAccessReview, SelfSubjectRulesReview) in discovery and the OpenAPI documents as kube-apiserver
lists them (create-only, no storageVersionHash), `kubectl api-resources`, `kubectl auth can-i` (also
--list) and `kubectl auth whoami` through the installed kubectl, and the methods a review path refuses;
compared with the real kube-apiserver when that tier runs (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import Send, daemon_sender, kube_sender

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

JSON = "application/json"
GROUPS = ("authentication.k8s.io/v1", "authorization.k8s.io/v1")
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _discovery(send: Send) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for gv in GROUPS:
        code, doc = send("GET", f"/apis/{gv}", None, JSON)
        assert code == 200, doc
        out[gv] = doc
        code, doc = send("GET", f"/apis/{gv.split('/')[0]}", None, JSON)
        out[gv.split("/")[0]] = (code, doc)
    return out


def _refusals(send: Send) -> list[Any]:
    """What a review path answers to what it does not serve (codes and reasons)."""
    out = []
    for method, path in (("GET", "/apis/authorization.k8s.io/v1/subjectaccessreviews"),
                         ("GET", "/apis/authorization.k8s.io/v1/subjectaccessreviews/x"),
                         ("DELETE", "/apis/authentication.k8s.io/v1/tokenreviews"),
                         ("GET", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews")):
        code, doc = send(method, path, None, JSON)
        out.append((method, path, code, doc.get("reason"), doc.get("message")))
    return out


def _openapi_paths(send: Send) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for gv in GROUPS:
        code, doc = send("GET", f"/openapi/v3/apis/{gv}", None, JSON)
        assert code == 200, doc
        out[gv] = {p: sorted(k for k in ops if k != "parameters") for p, ops in doc["paths"].items()}
        schemas = doc["components"]["schemas"]
        out[gv + " kinds"] = sorted(n for n, sch in schemas.items() if sch.get("x-kubernetes-group-version-kind"))
    return out


def test_discovery_lists_the_reviews_create_only(api_daemon: Daemon) -> None:
    found = _discovery(daemon_sender(api_daemon))
    entries = {r["name"]: (r["kind"], r["namespaced"], r["verbs"], "storageVersionHash" in r)
               for gv in GROUPS for r in found[gv]["resources"]}
    assert entries == {
        "selfsubjectreviews": ("SelfSubjectReview", False, ["create"], False),
        "tokenreviews": ("TokenReview", False, ["create"], False),
        "localsubjectaccessreviews": ("LocalSubjectAccessReview", True, ["create"], False),
        "selfsubjectaccessreviews": ("SelfSubjectAccessReview", False, ["create"], False),
        "selfsubjectrulesreviews": ("SelfSubjectRulesReview", False, ["create"], False),
        "subjectaccessreviews": ("SubjectAccessReview", False, ["create"], False),
    }
    rows = {line.split()[0]: line.split() for line in
            api_daemon.kubectl("api-resources", "-o", "wide").stdout.splitlines()[1:]}
    assert rows["selfsubjectaccessreviews"][-1] == "create"
    assert rows["tokenreviews"][1:3] == ["authentication.k8s.io/v1", "false"]
    assert [r[0] for r in _refusals(daemon_sender(api_daemon))] == ["GET", "GET", "DELETE", "GET"]
    assert [r[2] for r in _refusals(daemon_sender(api_daemon))] == [405, 404, 405, 405]
    paths = _openapi_paths(daemon_sender(api_daemon))
    assert paths["authorization.k8s.io/v1"]["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"] == ["post"]


def test_kubectl_auth_can_i_and_whoami(api_daemon: Daemon) -> None:
    assert api_daemon.kubectl("auth", "can-i", "create", "deployments.apps").stdout.strip() == "yes"
    assert api_daemon.kubectl("auth", "can-i", "get", "pods", "-n", "kube-system").stdout.strip() == "yes"
    listed = api_daemon.kubectl("auth", "can-i", "--list").stdout.splitlines()
    assert listed[0].split()[:3] == ["Resources", "Non-Resource", "URLs"] and any("*.*" in r for r in listed)
    who = json.loads(api_daemon.kubectl("auth", "whoami", "-o", "json").stdout)
    assert who["kind"] == "SelfSubjectReview" and "system:masters" in who["status"]["userInfo"]["groups"]
    assert api_daemon.kubectl("explain", "selfsubjectaccessreview.spec.resourceAttributes.verb").stdout


@pytest.mark.kube_apiserver
def test_reviews_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours, theirs = daemon_sender(api_daemon), kube_sender(kube_apiserver)
    assert _discovery(ours) == _discovery(theirs)
    assert _refusals(ours) == _refusals(theirs)
    assert _openapi_paths(ours) == _openapi_paths(theirs)
