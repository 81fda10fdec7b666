"""Impersonation's pure core (authz/impersonation.py): the headers read as Go reads them, the modes
tried in upstream's order (the last mode that worked first), the constrained checks and the groups
an impersonated user ends with; over a store holding the bootstrap policy and a few grants."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.authn.user import UserInfo
from nodeagent.apiserver.authz import bootstrap
from nodeagent.apiserver.authz.attributes import request_attributes
from nodeagent.apiserver.authz.chain import Authorizer
from nodeagent.apiserver.authz.impersonation import Impersonator, Wanted, wanted_from_headers
from nodeagent.apiserver.errors import APIError
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock

AUTH = "system:authenticated"


def _grant(name: str, rules: list[dict[str, Any]], user: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
             "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}]


@pytest.fixture()
def authz() -> Authorizer:
    store = ObjectStore.memory(admitted_kinds(), FakeClock())
    grants = [
        *_grant("legacy", [{"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"],
                            "verbs": ["impersonate"]},
                           {"apiGroups": ["authentication.k8s.io"], "resources": ["uids", "userextras/*"],
                            "verbs": ["impersonate"]}], "legacy"),
        *_grant("nodes", [{"apiGroups": ["authentication.k8s.io"], "resources": ["nodes"],
                           "verbs": ["impersonate:arbitrary-node"]},
                          {"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate-on:arbitrary-node:list"]}],
                "node-agent"),
        *_grant("groups", [{"apiGroups": ["authentication.k8s.io"], "resources": ["users", "groups"],
                            "verbs": ["impersonate:user-info"]},
                           {"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate-on:user-info:get"]}],
                "info"),
    ]
    for obj in [*bootstrap.policy(), *grants]:
        store.create(obj)
    return Authorizer(store)


def _as(authz: Authorizer, requestor: str, wanted: Wanted, path: str = "/api/v1/namespaces/default/pods",
        imp: Impersonator | None = None) -> tuple[UserInfo, str]:
    attrs = request_attributes(UserInfo(requestor, groups=(AUTH,)), "GET", path, {})
    return (imp or Impersonator(authz)).impersonate(wanted, attrs)


def test_headers() -> None:
    assert wanted_from_headers([("Accept", "x")]) is None
    got = wanted_from_headers([("impersonate-user", "bob"), ("Impersonate-User", "ignored"), ("Impersonate-Group", "a"),
                               ("Impersonate-Group", "b"), ("Impersonate-Extra-Acme.io%2FTeam", "x"),
                               ("Impersonate-Extra-acme.io%2fteam", "y"), ("Impersonate-Uid", "u")])
    assert got == Wanted("bob", "u", ("a", "b"), {"acme.io/team": ("x", "y")})
    with pytest.raises(APIError) as err:
        wanted_from_headers([("Impersonate-Uid", "u"), ("Impersonate-Extra-K", "v")])
    assert (err.value.code, err.value.message) == (400, 'requested &user.DefaultInfo{Name:"", UID:"u", '
                                                        'Groups:[]string(nil), Extra:map[string][]string{"k":'
                                                        '[]string{"v"}}} without impersonating a user name')


def test_legacy(authz: Authorizer) -> None:
    assert _as(authz, "legacy", Wanted("bob", groups=("dev",))) == (UserInfo("bob", "", ("dev", AUTH)), "")
    sa = _as(authz, "legacy", Wanted("system:serviceaccount:ns1:app"))
    assert sa[0].groups == ("system:serviceaccounts", "system:serviceaccounts:ns1", AUTH)
    anon = _as(authz, "legacy", Wanted("system:anonymous"))
    assert anon[0].groups == ("system:unauthenticated",)
    # legacy impersonation of a node's name is a plain user: no system:nodes (the constrained modes add it)
    assert _as(authz, "legacy", Wanted("system:node:n1"))[0].groups == (AUTH,)


def test_constrained_node_gets_system_nodes(authz: Authorizer) -> None:
    user, constraint = _as(authz, "node-agent", Wanted("system:node:n1"))
    assert (user.groups, constraint) == (("system:nodes", AUTH), "impersonate:arbitrary-node")
    with pytest.raises(APIError) as err:  # only for listing pods
        _as(authz, "node-agent", Wanted("system:node:n1"), "/api/v1/namespaces/default/pods/p")
    assert err.value.message == ('pods "p" is forbidden: User "node-agent" cannot impersonate-on:arbitrary-node:get '
                                 'resource "pods" in API group "" in the namespace "default"')


def test_constrained_refuses_system_masters_and_the_refusal_follows_the_last_mode(authz: Authorizer) -> None:
    imp = Impersonator(authz)
    with pytest.raises(APIError) as err:
        _as(authz, "info", Wanted("bob", groups=("system:masters",)), "/api/v1/namespaces/default/pods/p", imp)
    assert err.value.message == ('groups.authentication.k8s.io "system:masters" is forbidden: User "info" cannot '
                                 'impersonate:user-info resource "groups" in API group "authentication.k8s.io" at '
                                 "the cluster scope: impersonating the system:masters group is not allowed")
    assert _as(authz, "info", Wanted("bob"), "/api/v1/namespaces/default/pods/p", imp)[1] == "impersonate:user-info"
    with pytest.raises(APIError) as err:  # legacy is refused too, but user-info worked last: its refusal is told
        _as(authz, "info", Wanted("bob"), "/api/v1/namespaces/default/pods", imp)
    assert "cannot impersonate-on:user-info:list" in err.value.message


def test_extra_keys_are_validated_in_constrained_modes(authz: Authorizer) -> None:
    imp = Impersonator(authz)
    _as(authz, "info", Wanted("bob"), "/api/v1/namespaces/default/pods/p", imp)
    with pytest.raises(APIError) as err:
        _as(authz, "info", Wanted("bob", extra={"scopes": ("a",)}), "/api/v1/namespaces/default/pods/p", imp)
    assert err.value.message.endswith('impersonating an invalid key in extra is not allowed: extra.key: Invalid '
                                      'value: "scopes": must be a domain-prefixed path (such as "acme.io/foo")')
