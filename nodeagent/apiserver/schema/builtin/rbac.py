"""Schemas of rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding
(k8s.io/api rbac/v1 types.go).

Why: served for the real control-plane components and drivers' charts, and read by the embedded
API server's RBAC authorizer; kubectl explain and server-side apply read these shapes (every list
here is +listType=atomic, RoleRef and Subject are +structType=atomic, as upstream).
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import arr, kind, meta, obj, ref, s, strs
from nodeagent.apiserver.schema.model import Schema

RBAC = "io.k8s.api.rbac.v1."


def rbac_definitions() -> dict[str, Schema]:
    rules = arr(ref(RBAC + "PolicyRule"), "The rules this role grants.", atomic=True)
    subjects = arr(ref(RBAC + "Subject"), "Who the role is granted to.", atomic=True)
    role_ref = ref(RBAC + "RoleRef", "The role granted; immutable (delete and recreate the binding to change it).")
    return {
        RBAC + "Role": kind("A namespaced set of permissions.", {"rules": rules}),
        RBAC + "ClusterRole": kind("A cluster-wide set of permissions, or the union of labelled ones.", {
            "rules": rules,
            "aggregationRule": ref(RBAC + "AggregationRule",
                                   "Selects the ClusterRoles whose rules the controller writes into this one."),
        }),
        RBAC + "AggregationRule": obj("How an aggregated ClusterRole is composed.", {
            "clusterRoleSelectors": arr(meta("LabelSelector"), "ClusterRoles matching any selector are aggregated.",
                                        atomic=True),
        }),
        RBAC + "PolicyRule": obj("Verbs allowed on resources or non-resource URLs.", {
            "verbs": strs("Verbs allowed, `*` for all."),
            "apiGroups": strs("API groups of the resources, \"\" the core group, `*` all."),
            "resources": strs("Resources (`pods`, `pods/status`), `*` for all."),
            "resourceNames": strs("Names the rule is limited to; empty allows every name."),
            "nonResourceURLs": strs("Paths such as /healthz, a trailing `*` a prefix; cluster roles only."),
        }, ["verbs"]),
        RBAC + "RoleBinding": kind("Grants a Role or ClusterRole to subjects in one namespace.", {
            "subjects": subjects, "roleRef": role_ref,
        }, ["roleRef"]),
        RBAC + "ClusterRoleBinding": kind("Grants a ClusterRole to subjects cluster-wide.", {
            "subjects": subjects, "roleRef": role_ref,
        }, ["roleRef"]),
        RBAC + "RoleRef": obj("The role a binding grants.", {
            "apiGroup": s("rbac.authorization.k8s.io (the default)."),
            "kind": s("Role or ClusterRole."),
            "name": s("The role's name."),
        }, ["kind", "name"], map_type="atomic"),
        RBAC + "Subject": obj("A user, group or service account.", {
            "kind": s("User, Group or ServiceAccount."),
            "apiGroup": s("\"\" for ServiceAccount, rbac.authorization.k8s.io for User and Group (the defaults)."),
            "name": s("The subject's name."),
            "namespace": s("A service account's namespace."),
        }, ["kind", "name"], map_type="atomic"),
    }
