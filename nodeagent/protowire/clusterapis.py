"""Protobuf tables of the kinds kube-controller-manager lists beyond the workload and storage ones:
autoscaling/v2, admissionregistration.k8s.io/v1 (ValidatingAdmissionPolicy and its binding),
certificates.k8s.io/v1, networking.k8s.io/v1 (ServiceCIDR, IPAddress, Ingress,
IngressClass, NetworkPolicy), storagemigration.k8s.io/v1, node.k8s.io/v1 (RuntimeClass)
(k8s.io/api <group>/<version>/generated.proto and types.go).

Why: client-go's typed clients send built-in kinds as protobuf (the real controllers' status writes,
a CSR's approval). Notation: nodeagent.protowire.notation. Named string types (MetricSourceType,
ResourceName, ConditionStatus...) are strings; `json:",inline"` members are embedded (`^`).
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

AUTOSCALING_V2 = package({
    "HorizontalPodAutoscaler": """
        1 metadata meta.ObjectMeta; 2 spec HorizontalPodAutoscalerSpec; 3 status HorizontalPodAutoscalerStatus""",
    "HorizontalPodAutoscalerSpec": """
        1 scaleTargetRef CrossVersionObjectReference; 2 minReplicas int32?; 3 maxReplicas int32!
        4 metrics []MetricSpec; 5 behavior HorizontalPodAutoscalerBehavior*""",
    "CrossVersionObjectReference": "1 kind string!; 2 name string!; 3 apiVersion string",
    "MetricSpec": """
        1 type string!; 2 object ObjectMetricSource*; 3 pods PodsMetricSource*; 4 resource ResourceMetricSource*
        7 containerResource ContainerResourceMetricSource*; 5 external ExternalMetricSource*""",
    "HorizontalPodAutoscalerBehavior": "1 scaleUp HPAScalingRules*; 2 scaleDown HPAScalingRules*",
    "HPAScalingRules": """
        3 stabilizationWindowSeconds int32?; 1 selectPolicy string?; 2 policies []HPAScalingPolicy
        4 tolerance Quantity*""",
    "HPAScalingPolicy": "1 type string!; 2 value int32!; 3 periodSeconds int32!",
    "ObjectMetricSource": """
        1 describedObject CrossVersionObjectReference; 2 target MetricTarget; 3 metric MetricIdentifier""",
    "PodsMetricSource": "1 metric MetricIdentifier; 2 target MetricTarget",
    "ResourceMetricSource": "1 name string!; 2 target MetricTarget",
    "ContainerResourceMetricSource": "1 name string!; 2 target MetricTarget; 3 container string!",
    "ExternalMetricSource": "1 metric MetricIdentifier; 2 target MetricTarget",
    "MetricIdentifier": "1 name string!; 2 selector meta.LabelSelector*",
    "MetricTarget": "1 type string!; 2 value Quantity*; 3 averageValue Quantity*; 4 averageUtilization int32?",
    "HorizontalPodAutoscalerStatus": """
        1 observedGeneration int64?; 2 lastScaleTime Time*; 3 currentReplicas int32; 4 desiredReplicas int32!
        5 currentMetrics []MetricStatus; 6 conditions []HorizontalPodAutoscalerCondition""",
    "HorizontalPodAutoscalerCondition": """
        1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string
        6 observedGeneration int64?""",
    "MetricStatus": """
        1 type string!; 2 object ObjectMetricStatus*; 3 pods PodsMetricStatus*; 4 resource ResourceMetricStatus*
        7 containerResource ContainerResourceMetricStatus*; 5 external ExternalMetricStatus*""",
    "ObjectMetricStatus": """
        1 metric MetricIdentifier; 2 current MetricValueStatus; 3 describedObject CrossVersionObjectReference""",
    "PodsMetricStatus": "1 metric MetricIdentifier; 2 current MetricValueStatus",
    "ResourceMetricStatus": "1 name string!; 2 current MetricValueStatus",
    "ContainerResourceMetricStatus": "1 name string!; 2 current MetricValueStatus; 3 container string!",
    "ExternalMetricStatus": "1 metric MetricIdentifier; 2 current MetricValueStatus",
    "MetricValueStatus": "1 value Quantity*; 2 averageValue Quantity*; 3 averageUtilization int32?",
})

ADMISSION_V1 = package({
    "ValidatingAdmissionPolicy": """
        1 metadata meta.ObjectMeta; 2 spec ValidatingAdmissionPolicySpec; 3 status ValidatingAdmissionPolicyStatus""",
    "ValidatingAdmissionPolicyStatus": """
        1 observedGeneration int64; 2 typeChecking TypeChecking*; 3 conditions []meta.Condition""",
    "TypeChecking": "1 expressionWarnings []ExpressionWarning",
    "ExpressionWarning": "2 fieldRef string!; 3 warning string!",
    "ValidatingAdmissionPolicySpec": """
        1 paramKind ParamKind*; 2 matchConstraints MatchResources*; 3 validations []Validation
        4 failurePolicy string?; 5 auditAnnotations []AuditAnnotation; 6 matchConditions []MatchCondition
        7 variables []Variable""",
    "ParamKind": "1 apiVersion string; 2 kind string",
    "Validation": "1 expression string!; 2 message string; 3 reason string?; 4 messageExpression string",
    "Variable": "1 name string!; 2 expression string!",
    "AuditAnnotation": "1 key string!; 2 valueExpression string!",
    "ValidatingAdmissionPolicyBinding": "1 metadata meta.ObjectMeta; 2 spec ValidatingAdmissionPolicyBindingSpec",
    "ValidatingAdmissionPolicyBindingSpec": """
        1 policyName string; 2 paramRef ParamRef*; 3 matchResources MatchResources*; 4 validationActions []string""",
    "ParamRef": "1 name string; 2 namespace string; 3 selector meta.LabelSelector*; 4 parameterNotFoundAction string?",
    "MatchResources": """
        1 namespaceSelector meta.LabelSelector*; 2 objectSelector meta.LabelSelector*
        3 resourceRules []NamedRuleWithOperations; 4 excludeResourceRules []NamedRuleWithOperations
        7 matchPolicy string?""",
    "NamedRuleWithOperations": "1 resourceNames []string; 2 RuleWithOperations ^RuleWithOperations",
    "RuleWithOperations": "1 operations []string; 2 Rule ^Rule",
    "Rule": "1 apiGroups []string; 2 apiVersions []string; 3 resources []string; 4 scope string?",
    "MatchCondition": "1 name string!; 2 expression string!",
})

CERTIFICATES_V1 = package({
    "CertificateSigningRequest": """
        1 metadata meta.ObjectMeta; 2 spec CertificateSigningRequestSpec; 3 status CertificateSigningRequestStatus""",
    "CertificateSigningRequestSpec": """
        1 request bytes!; 7 signerName string!; 8 expirationSeconds int32?; 5 usages []string; 2 username string
        3 uid string; 4 groups []string; 6 extra {}StringList""",
    "CertificateSigningRequestStatus": "1 conditions []CertificateSigningRequestCondition; 2 certificate bytes",
    "CertificateSigningRequestCondition": """
        1 type string!; 6 status string!; 2 reason string; 3 message string; 4 lastUpdateTime Time
        5 lastTransitionTime Time""",
    "PodCertificateRequest": """
        1 metadata meta.ObjectMeta; 2 spec PodCertificateRequestSpec; 3 status PodCertificateRequestStatus""",
    "PodCertificateRequestSpec": """
        1 signerName string!; 2 podName string!; 3 podUID string!; 4 serviceAccountName string!
        5 serviceAccountUID string!; 6 nodeName string!; 7 nodeUID string!; 8 maxExpirationSeconds int32?
        12 stubPKCS10Request bytes!; 11 unverifiedUserAnnotations {}string""",
    "PodCertificateRequestStatus": """
        1 conditions []meta.Condition; 2 certificateChain string; 4 notBefore Time*; 5 beginRefreshAt Time*
        6 notAfter Time*""",
})

NETWORKING_V1 = package({
    "ServiceCIDR": "1 metadata meta.ObjectMeta; 2 spec ServiceCIDRSpec; 3 status ServiceCIDRStatus",
    "ServiceCIDRSpec": "1 cidrs []string",
    "ServiceCIDRStatus": "1 conditions []meta.Condition",
    "IPAddress": "1 metadata meta.ObjectMeta; 2 spec IPAddressSpec",
    "IPAddressSpec": "1 parentRef ParentReference*",
    "ParentReference": "1 group string; 2 resource string; 3 namespace string; 4 name string",
    "Ingress": "1 metadata meta.ObjectMeta; 2 spec IngressSpec; 3 status IngressStatus",
    "IngressSpec": """
        4 ingressClassName string?; 1 defaultBackend IngressBackend*; 2 tls []IngressTLS; 3 rules []IngressRule""",
    "IngressBackend": "4 service IngressServiceBackend*; 3 resource core.TypedLocalObjectReference*",
    "IngressServiceBackend": "1 name string!; 2 port ServiceBackendPort",
    "ServiceBackendPort": "1 name string; 2 number int32",
    "IngressTLS": "1 hosts []string; 2 secretName string",
    "IngressRule": "1 host string; 2 IngressRuleValue ^IngressRuleValue",
    "IngressRuleValue": "1 http HTTPIngressRuleValue*",
    "HTTPIngressRuleValue": "1 paths []HTTPIngressPath",
    "HTTPIngressPath": "1 path string; 3 pathType string?; 2 backend IngressBackend",
    "IngressStatus": "1 loadBalancer IngressLoadBalancerStatus",
    "IngressLoadBalancerStatus": "1 ingress []IngressLoadBalancerIngress",
    "IngressLoadBalancerIngress": "1 ip string; 2 hostname string; 4 ports []IngressPortStatus",
    "IngressPortStatus": "1 port int32!; 2 protocol string!; 3 error string?",
    "IngressClass": "1 metadata meta.ObjectMeta; 2 spec IngressClassSpec",
    "IngressClassSpec": "1 controller string; 2 parameters IngressClassParametersReference*",
    "IngressClassParametersReference": """
        1 apiGroup string?; 2 kind string!; 3 name string!; 4 scope string?; 5 namespace string?""",
    "NetworkPolicy": "1 metadata meta.ObjectMeta; 2 spec NetworkPolicySpec",
    "NetworkPolicySpec": """
        1 podSelector meta.LabelSelector; 2 ingress []NetworkPolicyIngressRule; 3 egress []NetworkPolicyEgressRule
        4 policyTypes []string""",
    "NetworkPolicyIngressRule": "1 ports []NetworkPolicyPort; 2 from []NetworkPolicyPeer",
    "NetworkPolicyEgressRule": "1 ports []NetworkPolicyPort; 2 to []NetworkPolicyPeer",
    "NetworkPolicyPort": "1 protocol string?; 2 port IntOrString*; 3 endPort int32?",
    "NetworkPolicyPeer": """
        1 podSelector meta.LabelSelector*; 2 namespaceSelector meta.LabelSelector*; 3 ipBlock IPBlock*""",
    "IPBlock": "1 cidr string!; 2 except []string",
})

STORAGEMIGRATION_V1 = package({
    "StorageVersionMigration": """
        1 metadata meta.ObjectMeta; 2 spec StorageVersionMigrationSpec; 3 status StorageVersionMigrationStatus""",
    "StorageVersionMigrationSpec": "1 resource meta.GroupResource",
    "StorageVersionMigrationStatus": "1 conditions []meta.Condition; 2 resourceVersion string",
})

NODE_V1 = package({
    "RuntimeClass": "1 metadata meta.ObjectMeta; 2 handler string!; 3 overhead Overhead*; 4 scheduling Scheduling*",
    "Overhead": "1 podFixed {}Quantity",
    "Scheduling": "1 nodeSelector {}string; 2 tolerations []core.Toleration",
})
