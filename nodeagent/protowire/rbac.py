"""rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding, ClusterRoleBinding (k8s.io/api
rbac/v1 generated.proto).

Why: the real kube-controller-manager (clusterrole-aggregation controller) and kube-scheduler read
and write these through client-go's typed clients, which send protobuf. Notation:
nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

RBAC_V1 = package({
    "Role": "1 metadata meta.ObjectMeta; 2 rules []PolicyRule",
    "ClusterRole": "1 metadata meta.ObjectMeta; 2 rules []PolicyRule; 3 aggregationRule AggregationRule*",
    "AggregationRule": "1 clusterRoleSelectors []meta.LabelSelector",
    "PolicyRule": """
        1 verbs []string; 2 apiGroups []string; 3 resources []string; 4 resourceNames []string
        5 nonResourceURLs []string""",
    "RoleBinding": "1 metadata meta.ObjectMeta; 2 subjects []Subject; 3 roleRef RoleRef",
    "ClusterRoleBinding": "1 metadata meta.ObjectMeta; 2 subjects []Subject; 3 roleRef RoleRef",
    "Subject": "1 kind string!; 2 apiGroup string; 3 name string!; 4 namespace string",
    "RoleRef": "1 apiGroup string!; 2 kind string!; 3 name string!",
})
