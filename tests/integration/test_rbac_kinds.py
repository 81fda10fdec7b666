"""The rbac.authorization.k8s.io/v1 kinds through kubectl and the Python kubernetes client against a
running daemon's API: create, get (table and JSON), list, watch, patch, server-side apply, delete,
discovery; refused writes with kube-apiserver's texts, identical to the real kube-apiserver's
answers when that tier runs (NODEAGENT_KUBE_APISERVER=1).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from typing import Any

import pytest
import yaml

from tests.integration import test_storage_kinds as kinds
from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender
from tests.integration.test_storage_kinds import Case, _with

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

G = "rbac.authorization.k8s.io/v1"
ROLE = {"apiVersion": G, "kind": "Role", "metadata": {"name": "rk:pod-reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]}
CLUSTER_ROLE = {"apiVersion": G, "kind": "ClusterRole", "metadata": {"name": "rk:node-reader"},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
                          {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}
BINDING = {"apiVersion": G, "kind": "RoleBinding", "metadata": {"name": "rk:read-pods", "namespace": "default"},
           "roleRef": {"kind": "Role", "name": "rk:pod-reader"},
           "subjects": [{"kind": "User", "name": "jane"}, {"kind": "Group", "name": "devs"},
                        {"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}
CLUSTER_BINDING = {"apiVersion": G, "kind": "ClusterRoleBinding", "metadata": {"name": "rk:read-nodes"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "rk:node-reader"},
                   "subjects": [{"kind": "Group", "name": "system:nodes"}]}

CASES = [
    Case(ROLE, "roles", ["NAME", "CREATED", "AT"], ["rk:pod-reader"],
         {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}, (("rules", 0, "verbs"), ["get"]),
         _with(ROLE, "rk:bad", rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": []}]),
         'Role.rbac.authorization.k8s.io "rk:bad" is invalid: rules[0].verbs: Required value',
         namespace="default"),
    Case(CLUSTER_ROLE, "clusterroles", ["NAME", "CREATED", "AT"], ["rk:node-reader"],
         {"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rk": "yes"}}]}},
         (("aggregationRule", "clusterRoleSelectors", 0, "matchLabels", "rk"), "yes"),
         _with(CLUSTER_ROLE, "rk:bad", rules=[{"nonResourceURLs": ["/healthz"], "resources": ["pods"],
                                                "verbs": ["get"]}]),
         'ClusterRole.rbac.authorization.k8s.io "rk:bad" is invalid: rules[0].nonResourceURLs: Invalid value: '
         '["/healthz"]: rules cannot apply to both regular resources and non-resource URLs'),
    Case(BINDING, "rolebindings", ["NAME", "ROLE", "AGE"], ["rk:read-pods", "Role/rk:pod-reader"],
         {"subjects": [{"kind": "User", "name": "joe", "apiGroup": "rbac.authorization.k8s.io"}]},
         (("subjects", 0, "name"), "joe"),
         _with(BINDING, "rk:bad", subjects=[{"kind": "Robot", "name": "x"}]),
         'RoleBinding.rbac.authorization.k8s.io "rk:bad" is invalid: subjects[0].kind: Unsupported value: '
         '"Robot": supported values: "ServiceAccount", "User", "Group"', namespace="default"),
    Case(CLUSTER_BINDING, "clusterrolebindings", ["NAME", "ROLE", "AGE"],
         ["rk:read-nodes", "ClusterRole/rk:node-reader"],
         {"subjects": [{"kind": "User", "name": "joe", "apiGroup": "rbac.authorization.k8s.io"}]},
         (("subjects", 0, "name"), "joe"),
         _with(CLUSTER_BINDING, "rk:bad", roleRef={"kind": "Role", "name": "x"}),
         'ClusterRoleBinding.rbac.authorization.k8s.io "rk:bad" is invalid: roleRef.kind: Unsupported value: '
         '"Role": supported values: "ClusterRole"'),
]
IDS = [c.kind for c in CASES]

EXTRA_REFUSALS = [
    replace(CASES[0], invalid=_with(ROLE, "rk:urls", rules=[{"nonResourceURLs": ["/a", "/b"], "verbs": ["get"]}])),
    replace(CASES[0], invalid=_with(ROLE, "rk/slash")),
    replace(CASES[0], invalid=_with(ROLE, "..")),
    replace(CASES[0], invalid=_with(ROLE, "rk:nogroups", rules=[{"resources": ["pods"], "verbs": ["get"]}])),
    replace(CASES[1], invalid=_with(CLUSTER_ROLE, "rk:agg", aggregationRule={"clusterRoleSelectors": []})),
    replace(CASES[2], invalid=_with(BINDING, "rk:sa", subjects=[{"kind": "ServiceAccount", "name": "Bad_Name"}])),
    replace(CASES[2], invalid=_with(BINDING, "rk:grp", roleRef={"apiGroup": "other", "kind": "Role", "name": "x"})),
    replace(CASES[2], invalid=_with(BINDING, "rk:noname", roleRef={"kind": "Role", "name": ""})),
    replace(CASES[3], invalid=_with(CLUSTER_BINDING, "rk:sa-ns", subjects=[{"kind": "ServiceAccount",
                                                                              "name": "robot"}])),
    replace(CASES[3], invalid=_with(CLUSTER_BINDING, "rk:usergrp", subjects=[{"kind": "User", "name": "u",
                                                                                "apiGroup": "x"}])),
]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_kubectl_create_get_patch_apply_delete(api_daemon: Daemon, case: Case) -> None:
    kinds.test_kubectl_create_get_patch_apply_delete(api_daemon, case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_python_client_create_list_watch_patch_delete(api_daemon: Daemon, case: Case) -> None:
    kinds.test_python_client_create_list_watch_patch_delete(api_daemon, case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_refused_as_kube_apiserver_refuses(api_daemon: Daemon, case: Case) -> None:
    kinds.test_refused_as_kube_apiserver_refuses(api_daemon, case)


def test_wide_binding_table_lists_subjects(api_daemon: Daemon) -> None:
    api_daemon.kubectl("create", "-f", "-", input=yaml.safe_dump(_with(BINDING, "rk:wide")))
    try:
        rows = api_daemon.kubectl("get", "rolebinding", "rk:wide", "-o", "wide").stdout.splitlines()
        assert rows[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
        cells = rows[1].split()
        assert cells[:2] == ["rk:wide", "Role/rk:pod-reader"] and cells[3:] == ["jane", "devs", "default/robot"]
    finally:
        api_daemon.kubectl("delete", "rolebinding", "rk:wide")


def test_defaults_and_immutable_role_ref(api_daemon: Daemon) -> None:
    send = daemon_sender(api_daemon)
    created = _created(send, CASES[2])
    assert created["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert [s.get("apiGroup") for s in created["subjects"]] == ["rbac.authorization.k8s.io",
                                                                "rbac.authorization.k8s.io", None]
    assert _role_ref_change(send) == (422, "Invalid", 'RoleBinding.rbac.authorization.k8s.io "rk:immutable" is '
                                      'invalid: roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io",'
                                      '"Kind":"ClusterRole","Name":"other"}: field is immutable')


def test_discovery_lists_the_kinds(api_daemon: Daemon) -> None:
    group = json.loads(api_daemon.kubectl("get", "--raw", "/apis/rbac.authorization.k8s.io/v1").stdout)
    got = {r["name"]: (r["namespaced"], r["kind"]) for r in group["resources"]}
    assert got == {"roles": (True, "Role"), "clusterroles": (False, "ClusterRole"),
                   "rolebindings": (True, "RoleBinding"), "clusterrolebindings": (False, "ClusterRoleBinding")}
    rows = api_daemon.kubectl("api-resources", "--api-group=rbac.authorization.k8s.io").stdout.splitlines()
    assert sorted(r.split()[0] for r in rows[1:]) == ["clusterrolebindings", "clusterroles", "rolebindings", "roles"]


def _created(send: Any, case: Case) -> Any:
    return kinds._created(send, case)


def _role_ref_change(send: Any) -> tuple[int, Any, Any]:
    obj = _with(BINDING, "rk:immutable")
    path = CASES[2].path()
    send("DELETE", f"{path}/rk:immutable", None)
    code, body = send("POST", path, obj)
    assert code == 201, body
    changed = {**body, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "other"}}
    code, body = send("PUT", f"{path}/rk:immutable", changed)
    send("DELETE", f"{path}/rk:immutable", None)
    return code, body.get("reason"), body.get("message")


@pytest.mark.kube_apiserver
def test_the_same_refusals_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    for case in CASES + EXTRA_REFUSALS:
        ours = kinds._refusal(daemon_sender(api_daemon), case)
        assert ours[0] == 422, ours
        assert ours == kinds._refusal(kube_sender(kube_apiserver), case), case.invalid["metadata"]["name"]
    assert _role_ref_change(daemon_sender(api_daemon)) == _role_ref_change(kube_sender(kube_apiserver))


@pytest.mark.kube_apiserver
def test_the_same_created_objects_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    for case in CASES:
        assert _created(daemon_sender(api_daemon), case) == _created(kube_sender(kube_apiserver), case), case.kind


@pytest.mark.kube_apiserver
def test_discovery_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    names = {c.plural for c in CASES}
    ours = kinds._discovered(daemon_sender(api_daemon), {G}, names)
    assert ours == kinds._discovered(kube_sender(kube_apiserver), {G}, names)
