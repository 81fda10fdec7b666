"""The authorization matrix: each identity against the verbs it must and must not be allowed, through
the request attributes the HTTP edge derives (authz/attributes.py) and the Node,RBAC chain over a
store holding the bootstrap policy, two nodes' pods and what they reference, and a DRA driver's
ClusterRole as dra-example-driver's Helm chart writes it."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.authn.user import UserInfo, anonymous
from nodeagent.apiserver.authz import bootstrap
from nodeagent.apiserver.authz.attributes import forbidden_status_message, request_attributes
from nodeagent.apiserver.authz.chain import Authorizer
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock

AUTH = "system:authenticated"
ADMIN = UserInfo("kubernetes-admin", groups=("system:masters", AUTH))
NODE_A = UserInfo("system:node:node-a", groups=("system:nodes", AUTH))
NODE_B = UserInfo("system:node:node-b", groups=("system:nodes", AUTH))
SCHEDULER = UserInfo("system:kube-scheduler", groups=(AUTH,))
KCM = UserInfo("system:kube-controller-manager", groups=(AUTH,))
RS_CONTROLLER = UserInfo("system:serviceaccount:kube-system:replicaset-controller",
                         groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", AUTH))
DRIVER = UserInfo("system:serviceaccount:dra:gpu-driver",
                  groups=("system:serviceaccounts", "system:serviceaccounts:dra", AUTH))
STRANGER = UserInfo("jane", groups=(AUTH,))
ANONYMOUS = anonymous()

DRIVER_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "gpu-driver-role"},
    "rules": [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    ]}
DRIVER_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "gpu-driver"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-driver-role"},
    "subjects": [{"kind": "ServiceAccount", "name": "gpu-driver", "namespace": "dra"}]}


def _pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **spec}}


@pytest.fixture(scope="module")
def store() -> ObjectStore:
    store = ObjectStore.memory(admitted_kinds(), FakeClock())
    for obj in [*bootstrap.policy(), DRIVER_ROLE, DRIVER_BINDING]:
        store.create(obj)
    for ns in ("default", "dra"):
        store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for name in ("a-secret", "b-secret", "env-secret"):
        store.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "default"}})
    for name in ("a-config", "b-config"):
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    store.create(_pod("pa", "node-a", volumes=[{"name": "s", "secret": {"secretName": "a-secret"}},
                                               {"name": "c", "configMap": {"name": "a-config"}}],
                      containers=[{"name": "c", "image": "i", "env": [
                          {"name": "E", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}}]}],
                      resourceClaims=[{"name": "gpu", "resourceClaimName": "a-claim"}]))
    store.create(_pod("pb", "node-b", volumes=[{"name": "s", "secret": {"secretName": "b-secret"}},
                                               {"name": "c", "configMap": {"name": "b-config"}}]))
    return store


@pytest.fixture(scope="module")
def authz(store: ObjectStore) -> Authorizer:
    return Authorizer(store)


class _ScanOnly:
    """The store seen through the plain Reader protocol: the Node authorizer scans instead of its index."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    def scan(self, kind: str, namespace: str | None = None) -> list[Any]:
        return self._store.scan(kind, namespace)

    def peek(self, kind: str, namespace: str, name: str) -> Any:
        return self._store.peek(kind, namespace, name)


def _ask(authz: Authorizer, user: UserInfo, method: str, path: str, **query: str) -> tuple[bool, str]:
    attrs = request_attributes(user, method, path, query)
    decision = authz.authorize(attrs)
    return decision.allowed, "" if decision.allowed else forbidden_status_message(attrs, decision.reason)


CORE = "/api/v1"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
MATRIX: list[tuple[str, UserInfo, str, str, dict[str, str], bool]] = [
    # the administrator: anything
    ("admin deletes a node", ADMIN, "DELETE", f"{CORE}/nodes/node-b", {}, True),
    ("admin creates a cluster role", ADMIN, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {}, True),
    ("admin reads /metrics", ADMIN, "GET", "/metrics", {}, True),
    # a node: its own objects and what its pods need, nothing of another node's
    ("node reads its Node", NODE_A, "GET", f"{CORE}/nodes/node-a", {}, True),
    ("node reads another Node", NODE_A, "GET", f"{CORE}/nodes/node-b", {}, False),
    ("node lists all nodes", NODE_A, "GET", f"{CORE}/nodes", {}, False),
    ("node updates its Node status", NODE_A, "PATCH", f"{CORE}/nodes/node-a/status", {}, True),
    ("node lists its pods", NODE_A, "GET", f"{CORE}/pods", {"fieldSelector": "spec.nodeName=node-a"}, True),
    ("node watches its pods", NODE_A, "GET", f"{CORE}/pods", {"fieldSelector": "spec.nodeName=node-a",
                                                                  "watch": "true"}, True),
    ("node lists every pod", NODE_A, "GET", f"{CORE}/pods", {}, False),
    ("node lists another node's pods", NODE_A, "GET", f"{CORE}/pods", {"fieldSelector": "spec.nodeName=node-b"},
     False),
    ("node reads its pod", NODE_A, "GET", f"{CORE}/namespaces/default/pods/pa", {}, True),
    ("node reads another node's pod", NODE_A, "GET", f"{CORE}/namespaces/default/pods/pb", {}, False),
    ("node writes its pod's status", NODE_A, "PUT", f"{CORE}/namespaces/default/pods/pa/status", {}, True),
    ("node reads its pod's secret", NODE_A, "GET", f"{CORE}/namespaces/default/secrets/a-secret", {}, True),
    ("node reads its pod's env secret", NODE_A, "GET", f"{CORE}/namespaces/default/secrets/env-secret", {}, True),
    ("node reads another's secret", NODE_A, "GET", f"{CORE}/namespaces/default/secrets/b-secret", {}, False),
    ("node lists secrets", NODE_A, "GET", f"{CORE}/namespaces/default/secrets", {}, False),
    ("node deletes its pod's secret", NODE_A, "DELETE", f"{CORE}/namespaces/default/secrets/a-secret", {}, False),
    ("node reads its pod's config map", NODE_A, "GET", f"{CORE}/namespaces/default/configmaps/a-config", {}, True),
    ("node reads another's config map", NODE_A, "GET", f"{CORE}/namespaces/default/configmaps/b-config", {},
     False),
    ("node reads its pod's claim", NODE_A, "GET", f"{CLAIMS}/a-claim", {}, True),
    ("node reads another claim", NODE_B, "GET", f"{CLAIMS}/a-claim", {}, False),
    ("node lists claims", NODE_A, "GET", CLAIMS, {}, False),
    ("node renews its lease", NODE_A, "PUT", f"{LEASES}/node-a", {}, True),
    ("node renews another's lease", NODE_A, "PUT", f"{LEASES}/node-b", {}, False),
    ("node deletes another's lease", NODE_A, "DELETE", f"{LEASES}/node-b", {}, False),
    ("node lists its slices", NODE_A, "GET", SLICES, {"fieldSelector": "spec.nodeName=node-a"}, True),
    ("node lists every slice", NODE_A, "GET", SLICES, {}, False),
    ("node deletes its slices", NODE_A, "DELETE", SLICES, {"fieldSelector": "spec.nodeName=node-a"}, True),
    ("node creates a slice", NODE_A, "POST", SLICES, {}, True),
    ("node writes kube-system", NODE_A, "POST", f"{CORE}/namespaces/kube-system/configmaps", {}, False),
    ("node creates a namespace", NODE_A, "POST", f"{CORE}/namespaces", {}, False),
    ("node creates a CRD", NODE_A, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {}, False),
    ("node reads services", NODE_A, "GET", f"{CORE}/services", {}, True),
    ("node creates events", NODE_A, "POST", f"{CORE}/namespaces/default/events", {}, True),
    # the scheduler
    ("scheduler lists nodes", SCHEDULER, "GET", f"{CORE}/nodes", {}, True),
    ("scheduler binds a pod", SCHEDULER, "POST", f"{CORE}/namespaces/default/pods/pa/binding", {}, True),
    ("scheduler watches claims", SCHEDULER, "GET", "/apis/resource.k8s.io/v1/resourceclaims", {"watch": "1"}, True),
    ("scheduler writes claim status", SCHEDULER, "PUT", f"{CLAIMS}/a-claim/status", {}, True),
    ("scheduler reads its lease", SCHEDULER, "GET",
     "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", {}, True),
    ("scheduler reads secrets", SCHEDULER, "GET", f"{CORE}/namespaces/default/secrets/a-secret", {}, False),
    ("scheduler deletes a node", SCHEDULER, "DELETE", f"{CORE}/nodes/node-a", {}, False),
    # the controller manager and one of its controllers
    ("kcm lists anything", KCM, "GET", "/apis/apps/v1/deployments", {}, True),
    ("kcm creates a service account", KCM, "POST", f"{CORE}/namespaces/default/serviceaccounts", {}, True),
    ("kcm deletes a pod", KCM, "DELETE", f"{CORE}/namespaces/default/pods/pa", {}, False),
    ("replicaset controller creates pods", RS_CONTROLLER, "POST", f"{CORE}/namespaces/default/pods", {}, True),
    ("replicaset controller deletes nodes", RS_CONTROLLER, "DELETE", f"{CORE}/nodes/node-a", {}, False),
    # a DRA driver with dra-example-driver's ClusterRole
    ("driver publishes slices", DRIVER, "POST", SLICES, {}, True),
    ("driver lists slices", DRIVER, "GET", SLICES, {}, True),
    ("driver watches claims", DRIVER, "GET", CLAIMS, {"watch": "true"}, True),
    ("driver writes claim status", DRIVER, "PUT", f"{CLAIMS}/a-claim/status", {}, True),
    ("driver reads its node", DRIVER, "GET", f"{CORE}/nodes/node-a", {}, True),
    ("driver deletes claims", DRIVER, "DELETE", f"{CLAIMS}/a-claim", {}, False),
    ("driver reads secrets", DRIVER, "GET", f"{CORE}/namespaces/default/secrets/a-secret", {}, False),
    ("driver patches a node", DRIVER, "PATCH", f"{CORE}/nodes/node-a", {}, False),
    # anyone authenticated: discovery and their own reviews; nothing else
    ("user reads discovery", STRANGER, "GET", "/apis", {}, True),
    ("user asks a self review", STRANGER, "POST",
     "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {}, True),
    ("user lists pods", STRANGER, "GET", f"{CORE}/pods", {}, False),
    # anonymous (when allowed to reach authorization): health and version only
    ("anonymous reads /healthz", ANONYMOUS, "GET", "/healthz", {}, True),
    ("anonymous reads /version", ANONYMOUS, "GET", "/version", {}, True),
    ("anonymous reads discovery", ANONYMOUS, "GET", "/api", {}, False),
    ("anonymous deletes a pod", ANONYMOUS, "DELETE", f"{CORE}/namespaces/default/pods/pa", {}, False),
    ("anonymous deletes a node", ANONYMOUS, "DELETE", f"{CORE}/nodes/node-a", {}, False),
]


@pytest.mark.parametrize(("user", "method", "path", "query", "allowed"), [m[1:] for m in MATRIX],
                         ids=[m[0] for m in MATRIX])
def test_matrix(authz: Authorizer, user: UserInfo, method: str, path: str, query: dict[str, str],
                allowed: bool) -> None:
    assert _ask(authz, user, method, path, **query)[0] is allowed


def test_the_index_answers_as_the_scan(store: ObjectStore, authz: Authorizer) -> None:
    """The Node authorizer's index (kept by the store at each commit) and the scan of the pods give the
    same answers and texts, also after a pod moves to another node and is deleted."""
    scanning = Authorizer(_ScanOnly(store))
    nodes = [m for m in MATRIX if m[1] in (NODE_A, NODE_B)]

    def answers(a: Authorizer) -> list[tuple[bool, str]]:
        return [_ask(a, user, method, path, **query) for _, user, method, path, query, _ in nodes]

    assert answers(authz) == answers(scanning)
    secret = f"{CORE}/namespaces/default/secrets/b-secret"
    store.create(_pod("pmove", "node-b", volumes=[{"name": "s", "secret": {"secretName": "b-secret"}}]))
    moved = store.get("Pod", "default", "pmove")
    moved["spec"]["nodeName"] = "node-a"
    store.update(moved)
    assert _ask(authz, NODE_A, "GET", secret)[0] is _ask(scanning, NODE_A, "GET", secret)[0] is True
    store.delete("Pod", "default", "pmove")
    assert _ask(authz, NODE_A, "GET", secret)[0] is _ask(scanning, NODE_A, "GET", secret)[0] is False
    assert answers(authz) == answers(scanning)


def test_forbidden_texts(authz: Authorizer) -> None:
    """responsewriters.forbiddenMessage and each authorizer's reason, as kube-apiserver words them."""
    assert _ask(authz, NODE_A, "GET", f"{CORE}/namespaces/default/secrets/b-secret")[1] == (
        'secrets "b-secret" is forbidden: User "system:node:node-a" cannot get resource "secrets" in API group "" '
        "in the namespace \"default\": node: no relationship found between node 'node-a' and this object")
    assert _ask(authz, NODE_A, "GET", f"{CORE}/nodes/node-b")[1] == (
        'nodes "node-b" is forbidden: User "system:node:node-a" cannot get resource "nodes" in API group "" at '
        "the cluster scope: node: node 'node-a' cannot read 'node-b', only its own Node object")
    assert _ask(authz, STRANGER, "GET", f"{CORE}/pods")[1] == (
        'pods is forbidden: User "jane" cannot list resource "pods" in API group "" at the cluster scope')
    assert _ask(authz, ANONYMOUS, "GET", "/api")[1] == (
        'forbidden: User "system:anonymous" cannot get path "/api"')
    assert _ask(authz, DRIVER, "DELETE", f"{CLAIMS}/a-claim")[1] == (
        'resourceclaims.resource.k8s.io "a-claim" is forbidden: User "system:serviceaccount:dra:gpu-driver" '
        'cannot delete resource "resourceclaims" in API group "resource.k8s.io" in the namespace "default"')
    assert _ask(authz, SCHEDULER, "POST", f"{CORE}/namespaces/default/pods/pa/binding") == (True, "")


def test_allowed_reason_names_the_binding(authz: Authorizer) -> None:
    attrs = request_attributes(DRIVER, "GET", SLICES, {})
    assert authz.authorize(attrs).reason == ('RBAC: allowed by ClusterRoleBinding "gpu-driver" of ClusterRole '
                                             '"gpu-driver-role" to ServiceAccount "gpu-driver/dra"')


def test_attributes_as_request_info_derives_them() -> None:
    a = request_attributes(STRANGER, "GET", "/api/v1/namespaces/kube-system", {})
    assert (a.verb, a.resource, a.namespace, a.name) == ("get", "namespaces", "kube-system", "kube-system")
    a = request_attributes(STRANGER, "DELETE", "/apis/apps/v1/namespaces/x/deployments", {})
    assert (a.verb, a.api_group, a.resource, a.namespace) == ("deletecollection", "apps", "deployments", "x")
    a = request_attributes(STRANGER, "GET", "/api/v1/watch/namespaces/x/pods/p", {})
    assert (a.verb, a.name) == ("watch", "p")
    a = request_attributes(STRANGER, "GET", "/api/v1/pods", {"fieldSelector": "metadata.name=p"})
    assert (a.verb, a.name) == ("list", "p")
    a = request_attributes(STRANGER, "POST", "/api/v1/namespaces/x/finalize", {})
    assert not a.resource_request or (a.resource, a.subresource) == ("namespaces", "finalize")
    a = request_attributes(STRANGER, "PUT", "/api/v1/namespaces/x/finalize", {})
    assert (a.verb, a.resource, a.name, a.subresource) == ("update", "namespaces", "x", "finalize")
    a = request_attributes(STRANGER, "POST", "/logs", {})
    assert (a.resource_request, a.verb) == (False, "post")


def test_access_reviews_ask_the_authorizers(authz: Authorizer) -> None:
    from nodeagent.apiserver.authn.chain import Authenticator
    from nodeagent.apiserver.authn.tokens import TokenTable
    from nodeagent.apiserver.reviews import Reviews

    reviews = Reviews(Authenticator(TokenTable([]), anonymous=False), lambda: 0.0, authz)
    sar = {"spec": {"user": "system:kube-scheduler", "groups": ["system:authenticated"],
                    "resourceAttributes": {"verb": "create", "resource": "pods", "subresource": "binding",
                                           "namespace": "default"}}}
    assert reviews.create("SubjectAccessReview", sar)["status"] == {
        "allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole '
                                   '"system:kube-scheduler" to User "system:kube-scheduler"'}
    sar["spec"]["user"] = "jane"
    assert reviews.create("SubjectAccessReview", sar)["status"] == {"allowed": False}
    node = {"spec": {"resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "default",
                                            "name": "b-secret"}}}
    assert reviews.create("SelfSubjectAccessReview", node, NODE_A)["status"] == {
        "allowed": False, "reason": "node: no relationship found between node 'node-a' and this object"}
    local = {"metadata": {"namespace": "default"},
             "spec": {"user": "system:node:node-a", "groups": ["system:nodes"],
                      "resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "default",
                                             "name": "a-secret"}}}
    assert reviews.create("LocalSubjectAccessReview", local, ADMIN, "default")["status"] == {"allowed": True}
    rules = reviews.create("SelfSubjectRulesReview", {"spec": {"namespace": "default"}}, DRIVER)["status"]
    assert {"verbs": ["get", "list", "watch"], "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceclaims"]} in rules["resourceRules"]
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} \
        in rules["nonResourceRules"]
    assert rules["incomplete"] is False


def test_escalation_check(authz: Authorizer) -> None:
    """A role or binding grants only what its writer holds (pkg/registry/rbac), with upstream's text."""
    from nodeagent.apiserver.authz.escalation import check_write

    role = {"rules": [{"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "list"]}]}
    assert check_write(authz, ADMIN, "Role", "default", "r", role, None) == ""
    assert check_write(authz, STRANGER, "Role", "default", "r", role, None) == (
        'user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}')
    # the scheduler holds get/list on pods cluster-wide: it may grant that, not secrets
    pods = {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}
    assert check_write(authz, SCHEDULER, "Role", "default", "r", pods, None) == ""
    binding = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}}
    assert check_write(authz, KCM, "ClusterRoleBinding", "", "b", binding, None) == (
        'user "system:kube-controller-manager" (groups=["system:authenticated"]) is attempting to grant RBAC '
        'permissions not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}')
    aggregated = {"rules": [], "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}}
    assert check_write(authz, SCHEDULER, "ClusterRole", "", "agg", aggregated, None) == \
        "must have cluster-admin privileges to use the aggregationRule"
