"""Protobuf tables of core/v1 PodStatus and of meta.k8s.io/v1 ObjectMeta (k8s.io/api generated.proto).

Why together: they are what the node writes and what every object carries, the part of a Pod
the Pods API's watchers follow (phase, conditions, container statuses, allocatedResourcesStatus,
resource claim statuses). Field numbers and Go pointer-ness transcribed from k8s.io/api and
k8s.io/apimachinery v0.34. Notation: nodeagent.protonotation.
"""

from __future__ import annotations

from nodeagent.protonotation import package

STATUS = package({
    "PodStatus": """
        17 observedGeneration int64; 1 phase string; 2 conditions []PodCondition; 3 message string
        4 reason string; 11 nominatedNodeName string; 5 hostIP string; 16 hostIPs []HostIP; 6 podIP string
        12 podIPs []PodIP; 7 startTime Time*; 10 initContainerStatuses []ContainerStatus
        8 containerStatuses []ContainerStatus; 9 qosClass string
        13 ephemeralContainerStatuses []ContainerStatus; 14 resize string
        15 resourceClaimStatuses []PodResourceClaimStatus
        18 extendedResourceClaimStatus PodExtendedResourceClaimStatus*""",
    "PodCondition": """
        1 type string!; 7 observedGeneration int64; 2 status string!; 3 lastProbeTime Time
        4 lastTransitionTime Time; 5 reason string; 6 message string""",
    "HostIP": "1 ip string!",
    "PodIP": "1 ip string!",
    "ContainerStatus": """
        1 name string!; 2 state ContainerState; 3 lastState ContainerState; 4 ready bool!; 5 restartCount int32!
        6 image string!; 7 imageID string!; 8 containerID string; 9 started bool?
        10 allocatedResources {}Quantity; 11 resources ResourceRequirements*
        12 volumeMounts []VolumeMountStatus; 13 user ContainerUser*
        14 allocatedResourcesStatus []ResourceStatus; 15 stopSignal string?""",
    "PodResourceClaimStatus": "1 name string!; 2 resourceClaimName string?",
    "PodExtendedResourceClaimStatus": """
        1 requestMappings []ContainerExtendedResourceRequest; 2 resourceClaimName string!""",
    "ContainerState": """
        1 waiting ContainerStateWaiting*; 2 running ContainerStateRunning*
        3 terminated ContainerStateTerminated*""",
    "VolumeMountStatus": "1 name string!; 2 mountPath string!; 3 readOnly bool; 4 recursiveReadOnly string?",
    "ContainerUser": "1 linux LinuxContainerUser*",
    "ResourceStatus": "1 name string!; 2 resources []ResourceHealth",
    "ContainerExtendedResourceRequest": "1 containerName string!; 2 resourceName string!; 3 requestName string!",
    "ContainerStateWaiting": "1 reason string; 2 message string",
    "ContainerStateRunning": "1 startedAt Time",
    "ContainerStateTerminated": """
        1 exitCode int32!; 2 signal int32; 3 reason string; 4 message string; 5 startedAt Time
        6 finishedAt Time; 7 containerID string""",
    "LinuxContainerUser": "1 uid int64!; 2 gid int64!; 3 supplementalGroups []int64",
    "ResourceHealth": "1 resourceID string!; 2 health string",})

META = package({
    "ObjectMeta": """
        1 name string; 2 generateName string; 3 namespace string; 4 selfLink string; 5 uid string
        6 resourceVersion string; 7 generation int64; 8 creationTimestamp Time; 9 deletionTimestamp Time*
        10 deletionGracePeriodSeconds int64?; 11 labels {}string; 12 annotations {}string
        13 ownerReferences []OwnerReference; 14 finalizers []string; 17 managedFields []ManagedFieldsEntry""",
    "OwnerReference": """
        5 apiVersion string!; 1 kind string!; 3 name string!; 4 uid string!; 6 controller bool?
        7 blockOwnerDeletion bool?""",
    "ManagedFieldsEntry": """
        1 manager string; 2 operation string; 3 apiVersion string; 4 time Time*; 6 fieldsType string
        7 fieldsV1 FieldsV1*; 8 subresource string""",
    "LabelSelector": "1 matchLabels {}string; 2 matchExpressions []LabelSelectorRequirement",
    "LabelSelectorRequirement": "1 key string!; 2 operator string!; 3 values []string",})
