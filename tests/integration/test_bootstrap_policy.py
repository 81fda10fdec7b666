"""The RBAC bootstrap policy the API server creates at start: names, rules, subjects, role
references, labels and annotations of every ClusterRole, ClusterRoleBinding, Role and RoleBinding,
identical to what the real kube-apiserver v1.37.2 creates (NODEAGENT_KUBE_APISERVER=1), and the
aggregated admin/edit/view filled as the clusterrole-aggregation controller fills them.
"""

from __future__ import annotations

import json
import shutil
import time
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon, wait_for
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

RBAC = "/apis/rbac.authorization.k8s.io/v1"
AGGREGATED = ("admin", "edit", "view")


def _policy(send: Any) -> dict[str, dict[tuple[str, str], Any]]:
    """Every bootstrap object (label kubernetes.io/bootstrapping=rbac-defaults), normalised: what the
    policy sets, less what each server sets its own way (uid, versions, times, managedFields)."""
    out: dict[str, dict[tuple[str, str], Any]] = {}
    for plural in ("clusterroles", "clusterrolebindings", "roles", "rolebindings"):
        code, body = send("GET", f"{RBAC}/{plural}?labelSelector=kubernetes.io%2Fbootstrapping%3Drbac-defaults", None)
        assert code == 200, body
        out[plural] = {}
        for item in body["items"]:
            md = item["metadata"]
            key = (md.get("namespace", ""), md["name"])
            out[plural][key] = {"labels": md.get("labels"), "annotations": md.get("annotations"),
                                **{k: item.get(k) for k in ("rules", "aggregationRule", "roleRef", "subjects")}}
    return out


def test_policy_exists_at_start(api_daemon: Daemon) -> None:
    policy = _policy(daemon_sender(api_daemon))
    assert len(policy["clusterroles"]) == 73 and len(policy["clusterrolebindings"]) == 54
    assert len(policy["roles"]) == 7 and len(policy["rolebindings"]) == 7
    admin = policy["clusterrolebindings"][("", "cluster-admin")]
    assert admin["subjects"] == [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:masters"}]
    view = policy["clusterroles"][("", "view")]["rules"]
    assert view == policy["clusterroles"][("", "system:aggregate-to-view")]["rules"]
    edit = policy["clusterroles"][("", "edit")]["rules"]
    assert all(r in edit for r in view)
    out = api_daemon.kubectl("get", "clusterrolebinding", "system:kube-scheduler", "-o", "wide").stdout.splitlines()
    assert out[1].split()[:2] == ["system:kube-scheduler", "ClusterRole/system:kube-scheduler"]
    assert out[1].split()[-1] == "system:kube-scheduler"


def test_a_labelled_role_is_aggregated_into_view(api_daemon: Daemon) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "bp:widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}]}
    api_daemon.kubectl("create", "-f", "-", input=json.dumps(role))
    try:
        view = json.loads(api_daemon.kubectl("get", "clusterrole", "view", "-o", "json").stdout)["rules"]
        assert role["rules"][0] in view
        admin = json.loads(api_daemon.kubectl("get", "clusterrole", "admin", "-o", "json").stdout)["rules"]
        assert role["rules"][0] in admin
    finally:
        api_daemon.kubectl("delete", "clusterrole", "bp:widgets-view")
    view = json.loads(api_daemon.kubectl("get", "clusterrole", "view", "-o", "json").stdout)["rules"]
    assert role["rules"][0] not in view


@pytest.mark.kube_apiserver
def test_the_same_policy_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    # the session's kube-controller-manager aggregates the real server's admin/edit/view a moment after it
    # starts (clusterrole-aggregation controller): compare once it has, rules included
    # it writes admin/edit/view more than once as their aggregated roles come (a fresh-clone CI run compared
    # a partial admin): compare once two reads 2 s apart are the same
    seen: list[tuple[float, dict[str, dict[tuple[str, str], Any]]]] = []

    def aggregated() -> dict[str, dict[tuple[str, str], Any]] | None:
        policy = _policy(kube_sender(kube_apiserver))
        if not all(policy["clusterroles"][("", name)]["rules"] is not None for name in AGGREGATED):
            return None
        now = time.monotonic()
        if seen and seen[-1][1] == policy:
            return policy if now - seen[-1][0] >= 2.0 else None
        seen.append((now, policy))
        return None

    theirs = wait_for(aggregated, timeout=90, what="kube-controller-manager's aggregated admin/edit/view rules")
    ours = _policy(daemon_sender(api_daemon))
    for plural in theirs:
        assert sorted(ours[plural]) == sorted(theirs[plural]), plural
        for key, obj in theirs[plural].items():
            assert ours[plural][key] == obj, (plural, key)
