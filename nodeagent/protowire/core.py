"""core/v1 messages other than the Pod's (k8s.io/api core/v1 generated.proto).

Why these: they are what kubectl's `create` generators, a node agent's client (Node status,
Events, Bindings) and a DRA driver's helper (node selectors) write with client-go's protobuf
default, plus the references a Pod shares with them (LocalObjectReference, NodeSelector). The
Pod's own messages are in pod.py and volume.py; packages.py joins the three into one core/v1
package and refuses a message written twice. Field order is the Go struct's; presence marks
follow the struct tags (notation: nodeagent.protowire.notation).
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

CORE = package({
    "ConfigMap": "1 metadata meta.ObjectMeta; 4 immutable bool?; 2 data {}string; 3 binaryData {}bytes",
    "Secret": """
        1 metadata meta.ObjectMeta; 5 immutable bool?; 2 data {}bytes; 4 stringData {}string; 3 type string""",
    "Service": "1 metadata meta.ObjectMeta; 2 spec ServiceSpec; 3 status ServiceStatus",
    "ServiceSpec": """
        1 ports []ServicePort; 2 selector {}string; 3 clusterIP string; 18 clusterIPs []string; 4 type string
        5 externalIPs []string; 7 sessionAffinity string; 8 loadBalancerIP string
        9 loadBalancerSourceRanges []string; 10 externalName string; 11 externalTrafficPolicy string
        12 healthCheckNodePort int32; 13 publishNotReadyAddresses bool
        14 sessionAffinityConfig SessionAffinityConfig*; 19 ipFamilies []string; 17 ipFamilyPolicy string?
        20 allocateLoadBalancerNodePorts bool?; 21 loadBalancerClass string?; 22 internalTrafficPolicy string?
        23 trafficDistribution string?""",
    "ServicePort": """
        1 name string; 2 protocol string; 6 appProtocol string?; 3 port int32!; 4 targetPort IntOrString
        5 nodePort int32""",
    "SessionAffinityConfig": "1 clientIP ClientIPConfig*",
    "ClientIPConfig": "1 timeoutSeconds int32?",
    "ServiceStatus": "1 loadBalancer LoadBalancerStatus; 2 conditions []meta.Condition",
    "LoadBalancerStatus": "1 ingress []LoadBalancerIngress",
    "LoadBalancerIngress": "1 ip string; 2 hostname string; 3 ipMode string?; 4 ports []PortStatus",
    "PortStatus": "1 port int32!; 2 protocol string!; 3 error string?",
    "Namespace": "1 metadata meta.ObjectMeta; 2 spec NamespaceSpec; 3 status NamespaceStatus",
    "NamespaceSpec": "1 finalizers []string",
    "NamespaceStatus": "1 phase string; 2 conditions []NamespaceCondition",
    "NamespaceCondition": """
        1 type string!; 2 status string!; 4 lastTransitionTime Time; 5 reason string; 6 message string""",
    "ServiceAccount": """
        1 metadata meta.ObjectMeta; 2 secrets []ObjectReference; 3 imagePullSecrets []LocalObjectReference
        4 automountServiceAccountToken bool?""",
    "ObjectReference": """
        1 kind string; 2 namespace string; 3 name string; 4 uid string; 5 apiVersion string
        6 resourceVersion string; 7 fieldPath string""",
    "LocalObjectReference": "1 name string",
    "ResourceQuota": "1 metadata meta.ObjectMeta; 2 spec ResourceQuotaSpec; 3 status ResourceQuotaStatus",
    "ResourceQuotaSpec": "1 hard {}Quantity; 2 scopes []string; 3 scopeSelector ScopeSelector*",
    "ScopeSelector": "1 matchExpressions []ScopedResourceSelectorRequirement",
    "ScopedResourceSelectorRequirement": "1 scopeName string!; 2 operator string!; 3 values []string",
    "ResourceQuotaStatus": "1 hard {}Quantity; 2 used {}Quantity",
    "Event": """
        1 metadata meta.ObjectMeta; 2 involvedObject ObjectReference; 3 reason string; 4 message string
        5 source EventSource; 6 firstTimestamp Time; 7 lastTimestamp Time; 8 count int32; 9 type string
        10 eventTime MicroTime; 11 series EventSeries*; 12 action string; 13 related ObjectReference*
        14 reportingComponent string!; 15 reportingInstance string!""",
    "EventSource": "1 component string; 2 host string",
    "EventSeries": "1 count int32; 2 lastObservedTime MicroTime",
    "Binding": "1 metadata meta.ObjectMeta; 2 target ObjectReference",
    "NodeSelector": "1 nodeSelectorTerms []NodeSelectorTerm",
    "NodeSelectorTerm": "1 matchExpressions []NodeSelectorRequirement; 2 matchFields []NodeSelectorRequirement",
    "NodeSelectorRequirement": "1 key string!; 2 operator string!; 3 values []string",
    "Taint": "1 key string!; 2 value string; 3 effect string!; 4 timeAdded Time*",
    "Node": "1 metadata meta.ObjectMeta; 2 spec NodeSpec; 3 status NodeStatus",
    "NodeSpec": """
        1 podCIDR string; 7 podCIDRs []string; 3 providerID string; 4 unschedulable bool; 5 taints []Taint
        6 configSource NodeConfigSource*; 2 externalID string""",
    "NodeConfigSource": "2 configMap ConfigMapNodeConfigSource*",
    "ConfigMapNodeConfigSource": """
        1 namespace string!; 2 name string!; 3 uid string; 4 resourceVersion string; 5 kubeletConfigKey string!""",
    "NodeStatus": """
        1 capacity {}Quantity; 2 allocatable {}Quantity; 3 phase string; 4 conditions []NodeCondition
        5 addresses []NodeAddress; 6 daemonEndpoints NodeDaemonEndpoints; 7 nodeInfo NodeSystemInfo
        8 images []ContainerImage; 9 volumesInUse []string; 10 volumesAttached []AttachedVolume
        11 config NodeConfigStatus*; 12 runtimeHandlers []NodeRuntimeHandler; 13 features NodeFeatures*
        14 declaredFeatures []string""",
    "NodeCondition": """
        1 type string!; 2 status string!; 3 lastHeartbeatTime Time; 4 lastTransitionTime Time; 5 reason string
        6 message string""",
    "NodeAddress": "1 type string!; 2 address string!",
    "NodeDaemonEndpoints": "1 kubeletEndpoint DaemonEndpoint",
    "DaemonEndpoint": "1 Port int32!",
    "NodeSystemInfo": """
        1 machineID string!; 2 systemUUID string!; 3 bootID string!; 4 kernelVersion string!; 5 osImage string!
        6 containerRuntimeVersion string!; 7 kubeletVersion string!; 8 kubeProxyVersion string!
        9 operatingSystem string!; 10 architecture string!; 11 swap NodeSwapStatus*
        12 runningInUserNamespace bool?""",
    "NodeSwapStatus": "1 capacity int64?",
    "ContainerImage": "1 names []string; 2 sizeBytes int64",
    "AttachedVolume": "1 name string!; 2 devicePath string!",
    "NodeConfigStatus": """
        1 assigned NodeConfigSource*; 2 active NodeConfigSource*; 3 lastKnownGood NodeConfigSource*; 4 error string""",
    "NodeRuntimeHandler": "1 name string!; 2 features NodeRuntimeHandlerFeatures*",
    "NodeRuntimeHandlerFeatures": "1 recursiveReadOnlyMounts bool?; 2 userNamespaces bool?",
    "NodeFeatures": "1 supplementalGroupsPolicy bool?",
})
