"""Which protobuf message each (apiVersion, kind) envelope carries: the kinds the API server reads in protobuf.

Why apart from the decoder and from the tables: the messages are upstream's (nodeagent.protowire,
shared with the Pods API); which of them a request body may carry is the API server's choice, and
adding a kind is an entry here, never a change to the wire code (decoder.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_RESOURCE_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
_STORAGE_KINDS = ("CSINode", "CSIDriver", "StorageClass", "CSIStorageCapacity", "VolumeAttachment",
                  "VolumeAttributesClass")

# (apiVersion, kind) -> (package, message).
KINDS: Mapping[tuple[str, str], tuple[str, str]] = MappingProxyType({
    **{("v1", kind): ("core", kind) for kind in (
        "Pod", "ConfigMap", "Secret", "Namespace", "ServiceAccount", "ResourceQuota", "Event", "Node", "Binding",
        "Service", "PersistentVolume", "PersistentVolumeClaim",
        "ReplicationController", "Endpoints")},
    ("coordination.k8s.io/v1", "Lease"): ("coordination", "Lease"),
    **{("apps/v1", kind): ("apps", kind) for kind in (
        "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision")},
    **{("batch/v1", kind): ("batch", kind) for kind in ("Job", "CronJob")},
    ("autoscaling/v1", "Scale"): ("autoscaling", "Scale"),
    ("autoscaling/v1", "HorizontalPodAutoscaler"): ("autoscaling", "HorizontalPodAutoscaler"),
    ("events.k8s.io/v1", "Event"): ("events", "Event"),
    **{("resource.k8s.io/v1", kind): ("resource.v1", kind) for kind in _RESOURCE_KINDS},
    **{("resource.k8s.io/v1beta2", kind): ("resource.v1", kind) for kind in _RESOURCE_KINDS},
    **{("resource.k8s.io/v1beta1", kind): ("resource.v1beta1", kind) for kind in _RESOURCE_KINDS},
    # classic DRA (served with NodeAgentConfiguration.classicDRA): 1.31's v1alpha3 claims and contexts
    **{("resource.k8s.io/v1alpha3", kind): ("resource.v1alpha3", kind) for kind in (
        "ResourceClaim", "ResourceClaimTemplate", "PodSchedulingContext")},
    **{(f"resource.k8s.io/{v}", "DeviceTaintRule"): ("resource.v1", "DeviceTaintRule")
       for v in ("v1", "v1beta2", "v1alpha3")},
    **{("storage.k8s.io/v1", kind): ("storage", kind) for kind in _STORAGE_KINDS},
    ("policy/v1", "PodDisruptionBudget"): ("policy", "PodDisruptionBudget"),
    **{(v, "Eviction"): ("policy", "Eviction") for v in ("policy/v1", "policy/v1beta1")},  # pods/eviction's body
    ("scheduling.k8s.io/v1", "PriorityClass"): ("scheduling", "PriorityClass"),
    ("discovery.k8s.io/v1", "EndpointSlice"): ("discovery", "EndpointSlice"),
    **{("rbac.authorization.k8s.io/v1", kind): ("rbac", kind) for kind in (
        "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")},
    **{("authorization.k8s.io/v1", kind): ("authorization", kind) for kind in (
        "SubjectAccessReview", "SelfSubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectRulesReview")},
    ("authentication.k8s.io/v1", "TokenRequest"): ("authentication", "TokenRequest"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"): ("autoscaling.v2", "HorizontalPodAutoscaler"),
    **{("admissionregistration.k8s.io/v1", kind): ("admissionregistration", kind) for kind in (
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")},
    **{("certificates.k8s.io/v1", kind): ("certificates", kind) for kind in (
        "CertificateSigningRequest", "PodCertificateRequest")},
    **{("networking.k8s.io/v1", kind): ("networking", kind) for kind in (
        "ServiceCIDR", "IPAddress", "Ingress", "IngressClass", "NetworkPolicy")},
    ("node.k8s.io/v1", "RuntimeClass"): ("node", "RuntimeClass"),
    ("storagemigration.k8s.io/v1", "StorageVersionMigration"): ("storagemigration", "StorageVersionMigration"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): ("apiextensions", "CustomResourceDefinition"),
    ("apiregistration.k8s.io/v1", "APIService"): ("apiregistration", "APIService"),
})

# The option kinds apimachinery registers in every group version (metav1.AddToGroupVersion):
# client-go encodes a typed Delete's DeleteOptions under the client's own group version.
_OPTIONS_KINDS = frozenset({"DeleteOptions"})


def kind_message(api_version: str, kind: str) -> tuple[str, str] | None:
    """The (package, message) an envelope's (apiVersion, kind) names, or None when not described."""
    if kind in _OPTIONS_KINDS and api_version:
        return "meta", kind
    return KINDS.get((api_version, kind))
