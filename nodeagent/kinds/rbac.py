"""The rbac.authorization.k8s.io kinds: Role, ClusterRole, RoleBinding, ClusterRoleBinding (v1).

Why served: the real kube-controller-manager and kube-scheduler list and watch them (the
clusterrole-aggregation controller, the RBAC authorizer's informers), a driver's Helm chart
creates them, and the API server's own RBAC authorizer (apiserver/authz) reads them. Their names
are path segments (`system:controller:job`), not DNS subdomains, as upstream's ValidateRBACName.
Facts from k8s.io/kubernetes pkg/registry/rbac. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import Kind

_V1 = ("rbac.authorization.k8s.io/v1",)
_DEFINITION = {"rbac.authorization.k8s.io": "io.k8s.api.rbac"}

ROLE = Kind("Role", "roles", namespaced=True, versions=_V1, definition=_DEFINITION, store_hooks="rbac",
            path_segment_names=True)
CLUSTER_ROLE = Kind("ClusterRole", "clusterroles", namespaced=False, versions=_V1, definition=_DEFINITION,
                    store_hooks="rbac", path_segment_names=True)
ROLE_BINDING = Kind("RoleBinding", "rolebindings", namespaced=True, versions=_V1, definition=_DEFINITION,
                    store_hooks="rbac", printer="rolebinding", path_segment_names=True)
CLUSTER_ROLE_BINDING = Kind("ClusterRoleBinding", "clusterrolebindings", namespaced=False, versions=_V1,
                            definition=_DEFINITION, store_hooks="rbac", printer="clusterrolebinding",
                            path_segment_names=True)

KINDS = (ROLE, CLUSTER_ROLE, ROLE_BINDING, CLUSTER_ROLE_BINDING)
