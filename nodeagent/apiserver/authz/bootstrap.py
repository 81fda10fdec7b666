"""The RBAC bootstrap policy kube-apiserver v1.37.2 creates at start: ClusterRoles,
ClusterRoleBindings, and the Roles and RoleBindings of kube-system and kube-public.

Why: the real kube-scheduler, kube-controller-manager and kube-proxy authenticate as
system:kube-scheduler, system:kube-controller-manager and system:kube-proxy and are authorized only
through these roles (the controller manager's controllers each as the service account
kube-system/<controller>, bound to system:controller:<controller>); admin/edit/view aggregate the
system:aggregate-to-* roles. Written from k8s.io/kubernetes v1.37.2
plugin/pkg/auth/authorizer/rbac/bootstrappolicy (policy.go, controller_policy.go,
namespace_policy.go) with the feature gates at their v1.37.2 defaults (DynamicResourceAllocation,
DRAExtendedResource, DRADeviceTaintRules, DRAResourceClaimGranularStatusAuthorization,
KubeletFineGrainedAuthz, ClusterTrustBundle, PodCertificateRequest,
KubeletServiceAccountTokenForCredentialProviders, MultiCIDRServiceAllocator, ComponentFlagz and
ComponentStatusz on; GenericWorkload, CompositePodGroup, EvictionRequestAPI, CSIVolumeHealth off),
which is what the real kube-apiserver's listing shows (tests/integration/test_bootstrap_policy.py
compares them).

Notation: a rule is `verbs | apiGroups | resources` with `| resourceNames` optionally, each a
comma-separated list (`''` the core group), or `url: verbs | paths` for a non-resource rule.
Every list is sorted, as upstream's rule builder sorts them. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

JSON = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{GROUP}/v1"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
ANNOTATIONS = {AUTOUPDATE: "true"}

READ = "get,list,watch"
WRITE = "create,update,patch,delete,deletecollection"
READ_WRITE = f"{READ},{WRITE}"
READ_UPDATE = f"{READ},update,patch"
EVENTS = "create,update,patch | '',events.k8s.io | events"
"""eventsRule(): every controller and component may write events."""


def rule(text: str) -> JSON:
    """One PolicyRule from the notation above."""
    def items(part: str) -> list[str]:
        return sorted({"" if p == "''" else p for p in (x.strip() for x in part.split(",")) if p})

    if text.startswith("url:"):
        verbs, urls = text[4:].split("|")
        return {"verbs": items(verbs), "nonResourceURLs": items(urls)}
    parts = text.split("|")
    out: JSON = {"verbs": items(parts[0]), "apiGroups": items(parts[1]), "resources": items(parts[2])}
    if len(parts) > 3:
        out["resourceNames"] = items(parts[3])
    return out


def rules(texts: Iterable[str]) -> list[JSON]:
    return [rule(t) for t in texts]


VIEW = (
    f"{READ} | '' | pods,replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,services/status,"
    "endpoints,persistentvolumeclaims,persistentvolumeclaims/status,configmaps",
    f"{READ} | '' | limitranges,resourcequotas,bindings,pods/status,resourcequotas/status,namespaces/status,"
    "replicationcontrollers/status,pods/log",
    f"{READ} | '' | namespaces",
    f"{READ} | '',events.k8s.io | events",
    f"{READ} | discovery.k8s.io | endpointslices",
    f"{READ} | apps | controllerrevisions,statefulsets,statefulsets/status,statefulsets/scale,daemonsets,"
    "daemonsets/status,deployments,deployments/status,deployments/scale,replicasets,replicasets/status,replicasets/scale",
    f"{READ} | autoscaling | horizontalpodautoscalers,horizontalpodautoscalers/status",
    f"{READ} | batch | jobs,cronjobs,cronjobs/status,jobs/status",
    f"{READ} | extensions | daemonsets,daemonsets/status,deployments,deployments/scale,deployments/status,ingresses,"
    "ingresses/status,replicasets,replicasets/scale,replicasets/status,replicationcontrollers/scale,networkpolicies",
    f"{READ} | policy | poddisruptionbudgets,poddisruptionbudgets/status",
    f"{READ} | networking.k8s.io | networkpolicies,ingresses,ingresses/status",
    f"{READ} | resource.k8s.io | resourceclaims,resourceclaims/status,resourceclaimtemplates",
)
EDIT = (
    f"{READ} | '' | pods/attach,pods/proxy,pods/exec,pods/portforward,secrets,services/proxy",
    "impersonate | '' | serviceaccounts",
    f"{WRITE} | '' | pods,pods/attach,pods/proxy,pods/exec,pods/portforward",
    "create | '' | pods/eviction",
    f"{WRITE} | '' | replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,services/proxy,"
    "persistentvolumeclaims,configmaps,secrets",
    "create | '' | serviceaccounts/token",
    f"{WRITE} | '',events.k8s.io | events",
    f"{WRITE} | apps | statefulsets,statefulsets/scale,daemonsets,deployments,deployments/scale,deployments/rollback,"
    "replicasets,replicasets/scale",
    f"{WRITE} | autoscaling | horizontalpodautoscalers",
    f"{WRITE} | batch | jobs,cronjobs",
    f"{WRITE} | extensions | daemonsets,deployments,deployments/scale,deployments/rollback,ingresses,replicasets,"
    "replicasets/scale,replicationcontrollers/scale,networkpolicies",
    f"{WRITE} | policy | poddisruptionbudgets",
    f"{WRITE} | networking.k8s.io | networkpolicies,ingresses",
    f"{READ_WRITE} | coordination.k8s.io | leases",
    f"{WRITE} | resource.k8s.io | resourceclaims,resourceclaimtemplates",
)
NODE = (
    "create | authentication.k8s.io | tokenreviews",
    "create | authorization.k8s.io | subjectaccessreviews,localsubjectaccessreviews",
    f"{READ} | '' | services",
    "create,get,list,watch | '' | nodes",
    "update,patch | '' | nodes/status",
    "update,patch | '' | nodes",
    "create,update,patch | '',events.k8s.io | events",
    f"{READ} | '' | pods",
    "create,delete | '' | pods",
    "update,patch | '' | pods/status",
    "create | '' | pods/eviction",
    "get,list,watch | '' | secrets,configmaps",
    "get | '' | persistentvolumeclaims,persistentvolumes",
    "get | '' | endpoints",
    "create,get,list,watch | certificates.k8s.io | certificatesigningrequests",
    "get,create,update,patch,delete | coordination.k8s.io | leases",
    "get | storage.k8s.io | volumeattachments",
    "create | '' | serviceaccounts/token",
    "get,update,patch | '' | persistentvolumeclaims/status",
    "get,watch,list | storage.k8s.io | csidrivers",
    "get,create,update,patch,delete | storage.k8s.io | csinodes",
    "get,list,watch | node.k8s.io | runtimeclasses",
    "get | resource.k8s.io | resourceclaims",
    "deletecollection | resource.k8s.io | resourceslices",
    "get,list,watch | certificates.k8s.io | clustertrustbundles",
    "get | '' | serviceaccounts",
    "get,list,watch,create | certificates.k8s.io | podcertificaterequests",
)
KUBE_SCHEDULER = (
    EVENTS,
    "create | coordination.k8s.io | leases",
    "get,update,list,watch | coordination.k8s.io | leases | kube-scheduler",
    f"{READ_WRITE} | coordination.k8s.io | leasecandidates",
    f"{READ} | '' | nodes",
    "get,list,watch,delete | '' | pods",
    "create | '' | pods/binding,bindings",
    "patch,update | '' | pods/status",
    f"{READ} | '' | services,replicationcontrollers",
    f"{READ} | apps,extensions | replicasets",
    f"{READ} | apps | statefulsets",
    f"{READ} | policy | poddisruptionbudgets",
    f"{READ} | '' | persistentvolumeclaims,persistentvolumes",
    "create | authentication.k8s.io | tokenreviews",
    "create | authorization.k8s.io | subjectaccessreviews",
    f"{READ} | storage.k8s.io | csinodes",
    "get,list,watch | storage.k8s.io | volumeattachments",
    f"{READ} | '' | namespaces",
    f"{READ} | storage.k8s.io | csidrivers",
    f"{READ} | storage.k8s.io | csistoragecapacities",
    f"{READ} | resource.k8s.io | deviceclasses",
    f"{READ_UPDATE} | resource.k8s.io | resourceclaims",
    f"{READ_UPDATE} | resource.k8s.io | resourceclaims/status",
    "update | '' | pods/finalizers",
    f"{READ} | resource.k8s.io | resourceslices",
    "create,delete | resource.k8s.io | resourceclaims",
    f"{READ} | resource.k8s.io | devicetaintrules",
    "update,patch | resource.k8s.io | resourceclaims/binding",
)
KUBE_CONTROLLER_MANAGER = (
    EVENTS,
    "create | coordination.k8s.io | leases",
    "get,update | coordination.k8s.io | leases | kube-controller-manager",
    "create | '' | secrets,serviceaccounts",
    "delete | '' | secrets",
    "get | '' | namespaces,secrets,serviceaccounts,configmaps",
    "update | '' | secrets,serviceaccounts",
    "create | authentication.k8s.io | tokenreviews",
    "create | authorization.k8s.io | subjectaccessreviews",
    "list,watch | * | *",
    "create | '' | serviceaccounts/token",
)
MONITORING_URLS = "/metrics,/metrics/slis,/livez,/readyz,/healthz,/livez/*,/readyz/*,/healthz/*,/flagz,/statusz"
SIGNERS = ("kubernetes.io/kube-apiserver-client,kubernetes.io/kube-apiserver-client-kubelet,"
           "kubernetes.io/kubelet-serving")

CLUSTER_ROLES: tuple[tuple[str, Sequence[str]], ...] = (
    ("cluster-admin", ("* | * | *", "url: * | *")),
    ("system:discovery", ("url: get | /livez,/readyz,/healthz,/version,/version/,/openapi,/openapi/*,/api,/api/*,"
                          "/apis,/apis/*",)),
    ("system:monitoring", (f"url: get | {MONITORING_URLS}", "get | '' | nodes/metrics")),
    ("system:basic-user", ("create | authorization.k8s.io | selfsubjectaccessreviews,selfsubjectrulesreviews",
                           "create | authentication.k8s.io | selfsubjectreviews")),
    ("system:public-info-viewer", ("url: get | /livez,/readyz,/healthz,/version,/version/",)),
    ("system:aggregate-to-admin", ("create | authorization.k8s.io | localsubjectaccessreviews",
                                   f"{READ_WRITE} | rbac.authorization.k8s.io | roles,rolebindings")),
    ("system:aggregate-to-edit", EDIT),
    ("system:aggregate-to-view", VIEW),
    ("system:heapster", (f"{READ} | '' | events,pods,nodes,namespaces", f"{READ} | extensions | deployments")),
    ("system:node", NODE),
    ("system:node-problem-detector", ("get | '' | nodes", "patch | '' | nodes/status", EVENTS)),
    ("system:node-bootstrapper", ("create,get,list,watch | certificates.k8s.io | certificatesigningrequests",)),
    ("system:auth-delegator", ("create | authentication.k8s.io | tokenreviews",
                               "create | authorization.k8s.io | subjectaccessreviews")),
    ("system:kube-aggregator", (f"{READ} | '' | services,endpoints",)),
    ("system:kube-controller-manager", KUBE_CONTROLLER_MANAGER),
    ("system:kube-dns", ("list,watch | '' | endpoints,services",)),
    ("system:persistent-volume-provisioner", (
        "get,list,watch,create,delete | '' | persistentvolumes",
        "get,list,watch,update | '' | persistentvolumeclaims",
        f"{READ} | storage.k8s.io | storageclasses",
        "watch | '' | events",
        EVENTS)),
    ("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
     ("create | certificates.k8s.io | certificatesigningrequests/nodeclient",)),
    ("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
     ("create | certificates.k8s.io | certificatesigningrequests/selfnodeclient",)),
    ("system:volume-scheduler", (f"{READ_UPDATE} | '' | persistentvolumes", f"{READ} | storage.k8s.io | storageclasses",
                                 f"{READ_UPDATE} | '' | persistentvolumeclaims")),
    ("system:certificates.k8s.io:legacy-unknown-approver",
     ("approve | certificates.k8s.io | signers | kubernetes.io/legacy-unknown",)),
    ("system:certificates.k8s.io:kubelet-serving-approver",
     ("approve | certificates.k8s.io | signers | kubernetes.io/kubelet-serving",)),
    ("system:certificates.k8s.io:kube-apiserver-client-approver",
     ("approve | certificates.k8s.io | signers | kubernetes.io/kube-apiserver-client",)),
    ("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
     ("approve | certificates.k8s.io | signers | kubernetes.io/kube-apiserver-client-kubelet",)),
    ("system:service-account-issuer-discovery", (
        "url: get | /.well-known/openid-configuration,/.well-known/openid-configuration/,/openid/v1/jwks,"
        "/openid/v1/jwks/",)),
    ("system:kubelet-api-admin", ("get,list,watch | '' | nodes", "proxy | '' | nodes",
                                  "* | '' | nodes/proxy,nodes/metrics,nodes/stats,nodes/log",
                                  "* | '' | nodes/pods,nodes/healthz,nodes/configz")),
    ("system:node-proxier", ("list,watch | '' | services,endpoints", "get,list,watch | '' | nodes", EVENTS,
                             "list,watch | networking.k8s.io | servicecidrs",
                             "list,watch | discovery.k8s.io | endpointslices")),
    ("system:kube-scheduler", KUBE_SCHEDULER),
    ("system:cluster-trust-bundle-discovery", (f"{READ} | certificates.k8s.io | clustertrustbundles",)),
)
"""ClusterRoles() with rules, in upstream's order."""

AGGREGATED: tuple[tuple[str, str, str], ...] = (
    ("admin", "", "rbac.authorization.k8s.io/aggregate-to-admin"),
    ("edit", "rbac.authorization.k8s.io/aggregate-to-admin", "rbac.authorization.k8s.io/aggregate-to-edit"),
    ("view", "rbac.authorization.k8s.io/aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-view"),
)
"""The aggregated ClusterRoles: name, the aggregate-to label it carries ("" none), the label it selects."""
AGGREGATE_TO = {"system:aggregate-to-admin": "rbac.authorization.k8s.io/aggregate-to-admin",
                "system:aggregate-to-edit": "rbac.authorization.k8s.io/aggregate-to-edit",
                "system:aggregate-to-view": "rbac.authorization.k8s.io/aggregate-to-view"}

CONTROLLER_ROLES: tuple[tuple[str, Sequence[str]], ...] = (
    ("attachdetach-controller", (
        "list,watch | '' | persistentvolumes,persistentvolumeclaims", "get,list,watch | '' | nodes",
        "patch,update | '' | nodes/status", "list,watch | '' | pods", EVENTS,
        "get,create,delete,list,watch | storage.k8s.io | volumeattachments",
        "get,watch,list | storage.k8s.io | csidrivers", "get,watch,list | storage.k8s.io | csinodes")),
    ("clusterrole-aggregation-controller", (
        "escalate,get,list,watch,update,patch | rbac.authorization.k8s.io | clusterroles",)),
    ("cronjob-controller", (
        "get,list,watch,update | batch | cronjobs", "get,list,watch,create,update,delete,patch | batch | jobs",
        "update | batch | cronjobs/status", "update | batch | cronjobs/finalizers",
        "list,watch,delete | '' | pods", EVENTS)),
    ("daemon-set-controller", (
        "get,list,watch | apps,extensions | daemonsets", "update | apps,extensions | daemonsets/status",
        "update | apps,extensions | daemonsets/finalizers", "list,watch | '' | nodes",
        "list,watch,create,delete,patch | '' | pods", "create | '' | pods/binding",
        "get,list,watch,create,delete,update,patch | apps | controllerrevisions", EVENTS)),
    ("deployment-controller", (
        "get,list,watch,update | apps,extensions | deployments",
        "update | apps,extensions | deployments/status", "update | apps,extensions | deployments/finalizers",
        "get,list,watch,create,update,patch,delete | apps,extensions | replicasets",
        "get,list,watch,update | '' | pods", EVENTS)),
    ("disruption-controller", (
        f"{READ} | apps,extensions | deployments", f"{READ} | apps,extensions | replicasets",
        f"{READ} | '' | replicationcontrollers", f"{READ} | policy | poddisruptionbudgets",
        f"{READ} | apps | statefulsets", "update | policy | poddisruptionbudgets/status",
        "patch,update | '' | pods/status", "get | * | */scale", EVENTS)),
    ("endpoint-controller", (
        f"{READ} | '' | services,pods", "get,list,create,update,delete,watch | '' | endpoints",
        "create | '' | endpoints/restricted", EVENTS)),
    ("endpointslice-controller", (
        f"{READ} | '' | services,pods,nodes", "update | '' | services/finalizers",
        "get,list,create,update,delete,watch | discovery.k8s.io | endpointslices", EVENTS)),
    ("endpointslicemirroring-controller", (
        f"{READ} | '' | services,endpoints", "update | '' | services/finalizers", "update | '' | endpoints/finalizers",
        "get,list,create,update,delete,watch | discovery.k8s.io | endpointslices", EVENTS)),
    ("expand-controller", (
        "get,list,watch,update,patch | '' | persistentvolumes", "update,patch | '' | persistentvolumeclaims/status",
        f"{READ} | '' | persistentvolumeclaims", EVENTS)),
    ("ephemeral-volume-controller", (
        "get,list,watch | '' | pods", "update | '' | pods/finalizers",
        "get,list,watch,create | '' | persistentvolumeclaims", EVENTS)),
    ("generic-garbage-collector", ("get,list,watch,patch,update,delete | * | *", EVENTS)),
    ("horizontal-pod-autoscaler", (
        f"{READ} | autoscaling | horizontalpodautoscalers", "update | autoscaling | horizontalpodautoscalers/status",
        "get,update | * | */scale", "list,watch | '' | pods", "list,watch | metrics.k8s.io | pods",
        "get,list,watch | custom.metrics.k8s.io | *", "get,list,watch | external.metrics.k8s.io | *", EVENTS)),
    ("job-controller", (
        "get,list,watch,update,patch | batch | jobs", "update | batch | jobs/status",
        "update | batch | jobs/finalizers",
        "list,watch,create,delete,patch | '' | pods", EVENTS)),
    ("namespace-controller", (
        "get,list,watch,delete | '' | namespaces", "update | '' | namespaces/finalize,namespaces/status",
        "get,list,watch,delete,deletecollection | * | *")),
    ("node-controller", (
        "get,list,update,delete,patch,watch | '' | nodes", "patch,update | '' | nodes/status",
        "patch,update | '' | pods/status", "list,watch,get,delete | '' | pods",
        f"{READ} | coordination.k8s.io | leases", EVENTS)),
    ("persistent-volume-binder", (
        "get,list,watch,update,create,delete | '' | persistentvolumes", "update | '' | persistentvolumes/status",
        "get,list,watch,update | '' | persistentvolumeclaims", "update | '' | persistentvolumeclaims/status",
        "get,list,watch,create,delete | '' | pods", f"{READ} | storage.k8s.io | storageclasses",
        "list,watch | '' | nodes", EVENTS, "watch | '' | events")),
    ("pod-garbage-collector", ("list,watch,delete | '' | pods", "get,list,watch | '' | nodes",
                               "patch | '' | pods/status")),
    ("replicaset-controller", (
        "get,list,watch,update | apps,extensions | replicasets", "update | apps,extensions | replicasets/status",
        "update | apps,extensions | replicasets/finalizers", "list,watch,patch,create,delete | '' | pods", EVENTS)),
    ("replication-controller", (
        "get,list,watch,update | '' | replicationcontrollers", "update | '' | replicationcontrollers/status",
        "update | '' | replicationcontrollers/finalizers", "list,watch,patch,create,delete | '' | pods", EVENTS)),
    ("resourcequota-controller", ("list,watch | * | *", "update | '' | resourcequotas/status", EVENTS)),
    ("route-controller", ("list,watch | '' | nodes", "patch | '' | nodes/status", EVENTS)),
    ("service-account-controller", ("create | '' | serviceaccounts", EVENTS)),
    ("service-controller", (
        f"{READ} | '' | services", "patch,update | '' | services/status", "list,watch | '' | nodes", EVENTS)),
    ("statefulset-controller", (
        "list,watch | '' | pods", f"{READ} | apps | statefulsets", "update | apps | statefulsets/status",
        "update | apps | statefulsets/finalizers", "get,create,delete,update,patch | '' | pods",
        "get,list,watch,create,delete,update,patch | apps | controllerrevisions",
        "get,create,list,watch | '' | persistentvolumeclaims", "update,delete | '' | persistentvolumeclaims",
        "update | '' | pods/finalizers", EVENTS)),
    ("ttl-controller", ("update,patch,list,watch | '' | nodes", EVENTS)),
    ("certificate-controller", (
        "get,list,watch,delete | certificates.k8s.io | certificatesigningrequests",
        "update | certificates.k8s.io | certificatesigningrequests/status,certificatesigningrequests/approval",
        "approve | certificates.k8s.io | signers | kubernetes.io/kube-apiserver-client-kubelet",
        f"sign | certificates.k8s.io | signers | {SIGNERS},kubernetes.io/legacy-unknown",
        "create | authorization.k8s.io | subjectaccessreviews", EVENTS)),
    ("pvc-protection-controller", (
        "get,list,watch,update | '' | persistentvolumeclaims", "update | '' | persistentvolumeclaims/status",
        "get,list,watch | '' | pods", EVENTS)),
    ("pv-protection-controller", ("get,list,watch,update | '' | persistentvolumes", EVENTS)),
    ("ttl-after-finished-controller", ("get,list,watch,delete | batch | jobs", EVENTS)),
    ("root-ca-cert-publisher", ("create,update | '' | configmaps", EVENTS)),
    ("validatingadmissionpolicy-status-controller", (
        "get,list,watch | admissionregistration.k8s.io | validatingadmissionpolicies",
        "get,patch,update | admissionregistration.k8s.io | validatingadmissionpolicies/status", EVENTS)),
    ("legacy-service-account-token-cleaner", (
        "get | '' | configmaps | kube-apiserver-legacy-service-account-token-tracking", "delete,patch | '' | secrets")),
    ("resource-claim-controller", (
        "get,list,watch | '' | pods", "update | '' | pods/finalizers",
        "get,list,watch,create,delete | resource.k8s.io | resourceclaims",
        "update,patch | resource.k8s.io | resourceclaims,resourceclaims/status", "update,patch | '' | pods/status",
        EVENTS, "update,patch | resource.k8s.io | resourceclaims/binding")),
    ("device-taint-eviction-controller", (
        "get,list,watch,delete | '' | pods", "update,patch | '' | pods/status",
        f"{READ} | resource.k8s.io | resourceclaims", f"{READ} | resource.k8s.io | resourceslices",
        f"{READ} | resource.k8s.io | deviceclasses", EVENTS,
        "update,patch | resource.k8s.io | devicetaintrules/status", f"{READ} | resource.k8s.io | devicetaintrules")),
    ("service-cidrs-controller", (
        "get,list,watch,patch,update | networking.k8s.io | servicecidrs",
        "patch,update | networking.k8s.io | servicecidrs/finalizers",
        "patch,update | networking.k8s.io | servicecidrs/status",
        "get,list,watch | networking.k8s.io | ipaddresses", EVENTS)),
    ("storage-version-migrator-controller", (
        "list,patch | * | *", "get | apiextensions.k8s.io | customresourcedefinitions",
        "patch | apiextensions.k8s.io | customresourcedefinitions/status",
        "update | storagemigration.k8s.io | storageversionmigrations/status")),
    ("selinux-warning-controller", (
        EVENTS, f"{READ} | '' | persistentvolumes", f"{READ} | '' | persistentvolumeclaims", f"{READ} | '' | pods",
        f"{READ} | storage.k8s.io | csidrivers")),
    ("kube-apiserver-serving-clustertrustbundle-publisher", (
        "attest | certificates.k8s.io | signers | kubernetes.io/kube-apiserver-serving",
        "create,delete,list,watch,update | certificates.k8s.io | clustertrustbundles", EVENTS)),
    ("podcertificaterequestcleaner", ("get,list,watch,delete | certificates.k8s.io | podcertificaterequests",)),
    ("volumeattributesclass-protection-controller", (
        f"{READ} | '' | persistentvolumeclaims", f"{READ} | '' | persistentvolumes",
        "get,list,watch,update | storage.k8s.io | volumeattributesclasses", EVENTS)),
)
"""controller_policy.go: system:controller:<name>, bound to the service account kube-system/<name>."""

CONTROLLER_PREFIX = "system:controller:"
CLUSTER_BINDINGS: tuple[tuple[str, Sequence[tuple[str, str]]], ...] = (
    ("cluster-admin", (("Group", "system:masters"),)),
    ("system:monitoring", (("Group", "system:monitoring"),)),
    ("system:discovery", (("Group", "system:authenticated"),)),
    ("system:basic-user", (("Group", "system:authenticated"),)),
    ("system:public-info-viewer", (("Group", "system:authenticated"), ("Group", "system:unauthenticated"))),
    ("system:node-proxier", (("User", "system:kube-proxy"),)),
    ("system:kube-controller-manager", (("User", "system:kube-controller-manager"),)),
    ("system:kube-dns", (("ServiceAccount", "kube-system/kube-dns"),)),
    ("system:kube-scheduler", (("User", "system:kube-scheduler"),)),
    ("system:volume-scheduler", (("User", "system:kube-scheduler"),)),
    ("system:node", ()),
    ("system:service-account-issuer-discovery", (("Group", "system:serviceaccounts"),)),
    ("system:cluster-trust-bundle-discovery", (("Group", "system:serviceaccounts"),)),
)
"""ClusterRoleBindings(): each binds the ClusterRole of its name. system:node keeps no subject
(the Node authorizer took its place in 1.7; the binding stays so reconciliation can empty it)."""

LEADER_LOCKING = (
    "create,get,list,update,watch | coordination.k8s.io | leases",
    "create,get,list,update,watch | coordination.k8s.io | leasecandidates",
)
NAMESPACE_ROLES: tuple[tuple[str, str, Sequence[str]], ...] = (
    ("kube-system", "extension-apiserver-authentication-reader",
     (f"{READ} | '' | configmaps | extension-apiserver-authentication",)),
    ("kube-system", "system::leader-locking-kube-controller-manager", LEADER_LOCKING),
    ("kube-system", "system::leader-locking-kube-scheduler", LEADER_LOCKING),
    ("kube-system", "system:controller:bootstrap-signer", (f"{READ} | '' | secrets",)),
    ("kube-system", "system:controller:cloud-provider", ("create,get,list,watch | '' | configmaps",)),
    ("kube-system", "system:controller:token-cleaner", ("delete,get,list,watch | '' | secrets", EVENTS)),
    ("kube-public", "system:controller:bootstrap-signer", (
        f"{READ} | '' | configmaps", "update | '' | configmaps | cluster-info", EVENTS)),
)
"""namespace_policy.go: Roles in kube-system and kube-public."""

NAMESPACE_BINDINGS: tuple[tuple[str, str, str, Sequence[tuple[str, str]]], ...] = (
    ("kube-system", "system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
     (("User", "system:kube-controller-manager"), ("User", "system:kube-scheduler"))),
    ("kube-system", "system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
     (("User", "system:kube-controller-manager"), ("ServiceAccount", "kube-system/kube-controller-manager"),
      ("ServiceAccount", "kube-system/leader-election-controller"))),
    ("kube-system", "system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
     (("User", "system:kube-scheduler"), ("ServiceAccount", "kube-system/kube-scheduler"))),
    ("kube-system", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
     (("ServiceAccount", "kube-system/bootstrap-signer"),)),
    ("kube-system", "system:controller:cloud-provider", "system:controller:cloud-provider",
     (("ServiceAccount", "kube-system/cloud-provider"),)),
    ("kube-system", "system:controller:token-cleaner", "system:controller:token-cleaner",
     (("ServiceAccount", "kube-system/token-cleaner"),)),
    ("kube-public", "system:controller:bootstrap-signer", "system:controller:bootstrap-signer",
     (("ServiceAccount", "kube-system/bootstrap-signer"),)),
)
"""namespace_policy.go: RoleBindings (namespace, name, the Role bound, subjects)."""


def _metadata(name: str, namespace: str = "", labels: dict[str, str] | None = None) -> JSON:
    md: JSON = {"name": name, "labels": {**LABELS, **(labels or {})}, "annotations": dict(ANNOTATIONS)}
    if namespace:
        md = {"name": name, "namespace": namespace, **{k: v for k, v in md.items() if k != "name"}}
    return md


def _subject(kind: str, name: str) -> JSON:
    if kind == "ServiceAccount":
        namespace, _, sa = name.partition("/")
        return {"kind": kind, "name": sa, "namespace": namespace}
    return {"kind": kind, "apiGroup": GROUP, "name": name}


def cluster_roles() -> list[JSON]:
    """Every bootstrap ClusterRole as kube-apiserver creates it (admin/edit/view without rules:
    the clusterrole-aggregation controller fills them)."""
    out = []
    for name, texts in CLUSTER_ROLES:
        label = {AGGREGATE_TO[name]: "true"} if name in AGGREGATE_TO else None
        out.append({"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": _metadata(name, labels=label),
                    "rules": rules(texts)})
    for name, carries, selects in AGGREGATED:
        out.append({"apiVersion": API_VERSION, "kind": "ClusterRole",
                    "metadata": _metadata(name, labels={carries: "true"} if carries else None),
                    "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selects: "true"}}]}})
    for name, texts in CONTROLLER_ROLES:
        out.append({"apiVersion": API_VERSION, "kind": "ClusterRole",
                    "metadata": _metadata(CONTROLLER_PREFIX + name), "rules": rules(texts)})
    return out


def cluster_role_bindings() -> list[JSON]:
    """Every bootstrap ClusterRoleBinding, the controllers' included."""
    out = []
    for name, subjects in CLUSTER_BINDINGS:
        binding: JSON = {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding", "metadata": _metadata(name),
                         "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name}}
        if subjects:
            binding["subjects"] = [_subject(k, n) for k, n in subjects]
        out.append(binding)
    for name, _ in CONTROLLER_ROLES:
        role = CONTROLLER_PREFIX + name
        out.append({"apiVersion": API_VERSION, "kind": "ClusterRoleBinding", "metadata": _metadata(role),
                    "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
                    "subjects": [_subject("ServiceAccount", f"kube-system/{name}")]})
    return out


def namespace_roles() -> list[JSON]:
    return [{"apiVersion": API_VERSION, "kind": "Role", "metadata": _metadata(name, namespace), "rules": rules(texts)}
            for namespace, name, texts in NAMESPACE_ROLES]


def namespace_role_bindings() -> list[JSON]:
    return [{"apiVersion": API_VERSION, "kind": "RoleBinding", "metadata": _metadata(name, namespace),
             "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": role},
             "subjects": [_subject(k, n) for k, n in subjects]}
            for namespace, name, role, subjects in NAMESPACE_BINDINGS]


def policy() -> list[JSON]:
    """Everything, in the order kube-apiserver's rbac/bootstrap-roles post-start hook writes it."""
    return [*cluster_roles(), *cluster_role_bindings(), *namespace_roles(), *namespace_role_bindings()]


def _protected(existing: JSON) -> bool:
    """A role or binding whose autoupdate annotation is "false" is left as its owner wrote it."""
    return (existing.get("metadata", {}).get("annotations") or {}).get(AUTOUPDATE) == "false"


def reconcile(expected: JSON, existing: JSON) -> JSON | None:
    """The object to write back so that `existing` holds what the bootstrap policy needs, or None
    when it already does (pkg/registry/rbac/reconciliation with RemoveExtraPermissions and
    RemoveExtraSubjects off, as the post-start hook runs it): labels and annotations the policy sets
    are added, missing rules appended (a rule counts as present when an equal one is there; upstream
    asks whether the existing rules cover it), aggregation selectors added, missing subjects
    appended. A binding whose roleRef differs is not changed here (upstream deletes and recreates
    it). Protected objects (autoupdate "false") are left alone."""
    if _protected(existing):
        return None
    out = {**existing, "metadata": dict(existing.get("metadata") or {})}
    md = out["metadata"]
    changed = False
    for key in ("labels", "annotations"):
        want = expected["metadata"].get(key) or {}
        have = dict(md.get(key) or {})
        if any(have.get(k) != v for k, v in want.items() if k not in have):
            md[key] = {**want, **have}
            changed = True
    if expected["kind"] in ("ClusterRole", "Role"):
        if "aggregationRule" in expected:
            have_sel = list((existing.get("aggregationRule") or {}).get("clusterRoleSelectors") or [])
            missing_sel = [s for s in expected["aggregationRule"]["clusterRoleSelectors"] if s not in have_sel]
            if missing_sel:
                out["aggregationRule"] = {"clusterRoleSelectors": have_sel + missing_sel}
                changed = True
        else:
            have_rules = list(existing.get("rules") or [])
            missing = [r for r in expected.get("rules") or [] if r not in have_rules]
            if missing:
                out["rules"] = have_rules + missing
                changed = True
    else:
        have_subjects = list(existing.get("subjects") or [])
        missing_subjects = [s for s in expected.get("subjects") or [] if s not in have_subjects]
        if missing_subjects:
            out["subjects"] = have_subjects + missing_subjects
            changed = True
    return out if changed else None


def _selects(selector: JSON, labels: dict[str, str]) -> bool:
    """A LabelSelector's matchLabels and matchExpressions against a role's labels."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def aggregated_rules(role: JSON, roles: Iterable[JSON]) -> list[JSON] | None:
    """The rules the clusterrole-aggregation controller writes into an aggregated ClusterRole: the
    rules of every other ClusterRole one of its selectors matches, in name order, without
    duplicates, selector by selector (pkg/controller/clusterroleaggregation); None for a role
    without aggregationRule."""
    rule_ = role.get("aggregationRule")
    if not isinstance(rule_, dict):
        return None
    selectors = rule_.get("clusterRoleSelectors") or []
    name = role["metadata"]["name"]
    ordered = sorted(roles, key=lambda r: str(r["metadata"]["name"]))
    out: list[JSON] = []
    for selector in selectors:
        for other in ordered:
            if other["metadata"]["name"] == name or not _selects(selector, other["metadata"].get("labels") or {}):
                continue
            for r in other.get("rules") or []:
                if r not in out:
                    out.append(r)
    return out


PLUGIN_ROLE = "nodeagent:plugin"
PLUGIN_RULES = (
    f"{READ} | resource.k8s.io | resourceclaims",
    "update | resource.k8s.io | resourceclaims/status",
    "get | '' | nodes",
    f"{READ},create,update,patch,delete | resource.k8s.io | resourceslices",
)
"""What a spawned plugin (a DRA driver built on the kubeletplugin helper) needs: the rules of
dra-example-driver's Helm chart ClusterRole (deployments/helm/.../clusterrole.yaml) but its
resourceclaims/driver rule, which only the DRAResourceClaimGranularStatusAuthorization checks read.
nodeagent's own role (not upstream's bootstrap policy: no rbac-defaults label)."""


def plugin_grant(namespace: str, account: str) -> list[JSON]:
    """The ClusterRole every spawned plugin shares and one ClusterRoleBinding of it to the plugin's
    service account, as a driver's chart binds its role to its service account."""
    role: JSON = {"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": {"name": PLUGIN_ROLE},
                  "rules": rules(PLUGIN_RULES)}
    binding: JSON = {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding",
                     "metadata": {"name": f"{PLUGIN_ROLE}:{account}"},
                     "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": PLUGIN_ROLE},
                     "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}
    return [role, binding]
