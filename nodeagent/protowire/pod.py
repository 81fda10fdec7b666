"""core/v1 Pod: PodSpec, what containers carry, and PodStatus (k8s.io/api core/v1 generated.proto).

Why: the Pods API answers with `(*v1.Pod).Marshal()` bytes, so nodeagent must write a Pod the
way k8s.io/api's generated code does (nodeagent/podsapi/podproto.py). The API server's request
decoder reads protobuf Pod bodies (client-go's typed Create/Update/UpdateStatus) through the same
tables. Lines transcribe the Go structs' protobuf tags and Go field types; a field
missing here is left out of the encoding (a Go decoder ignores what it does not know, so a partial
table loses data, never corrupts it). tests/unit/protowire checks every line against upstream's
types.go. Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

# Container and EphemeralContainerCommon carry the same fields under the same numbers (upstream keeps
# them identical on purpose, so an ephemeral container converts to a Container field for field).
_CONTAINER_FIELDS = """
        1 name string!; 2 image string; 3 command []string; 4 args []string; 5 workingDir string
        6 ports []ContainerPort; 19 envFrom []EnvFromSource; 7 env []EnvVar; 8 resources ResourceRequirements
        23 resizePolicy []ContainerResizePolicy; 24 restartPolicy string?
        25 restartPolicyRules []ContainerRestartRule; 9 volumeMounts []VolumeMount
        21 volumeDevices []VolumeDevice; 10 livenessProbe Probe*; 11 readinessProbe Probe*
        22 startupProbe Probe*; 12 lifecycle Lifecycle*; 13 terminationMessagePath string
        20 terminationMessagePolicy string; 14 imagePullPolicy string; 15 securityContext SecurityContext*
        16 stdin bool; 17 stdinOnce bool; 18 tty bool"""

POD = package({
    "Pod": "1 metadata meta.ObjectMeta; 2 spec PodSpec; 3 status PodStatus",
    "PodSpec": """
        1 volumes []Volume; 20 initContainers []Container; 2 containers []Container
        34 ephemeralContainers []EphemeralContainer; 3 restartPolicy string
        4 terminationGracePeriodSeconds int64?; 5 activeDeadlineSeconds int64?; 6 dnsPolicy string
        7 nodeSelector {}string; 8 serviceAccountName string; 9 serviceAccount string
        21 automountServiceAccountToken bool?; 10 nodeName string; 11 hostNetwork bool; 12 hostPID bool
        13 hostIPC bool; 27 shareProcessNamespace bool?; 14 securityContext PodSecurityContext*
        15 imagePullSecrets []LocalObjectReference; 16 hostname string; 17 subdomain string
        18 affinity Affinity*; 19 schedulerName string; 22 tolerations []Toleration; 23 hostAliases []HostAlias
        24 priorityClassName string; 25 priority int32?; 26 dnsConfig PodDNSConfig*
        28 readinessGates []PodReadinessGate; 29 runtimeClassName string?; 30 enableServiceLinks bool?
        31 preemptionPolicy string?; 32 overhead {}Quantity
        33 topologySpreadConstraints []TopologySpreadConstraint; 35 setHostnameAsFQDN bool?; 36 os PodOS*
        37 hostUsers bool?; 38 schedulingGates []PodSchedulingGate; 39 resourceClaims []PodResourceClaim
        40 resources ResourceRequirements*; 41 hostnameOverride string?""",
    "Container": _CONTAINER_FIELDS,
    "EphemeralContainer": "1 EphemeralContainerCommon ^EphemeralContainerCommon; 2 targetContainerName string",
    "PodSecurityContext": """
        1 seLinuxOptions SELinuxOptions*; 8 windowsOptions WindowsSecurityContextOptions*; 2 runAsUser int64?
        6 runAsGroup int64?; 3 runAsNonRoot bool?; 4 supplementalGroups []int64
        12 supplementalGroupsPolicy string?; 5 fsGroup int64?; 7 sysctls []Sysctl; 9 fsGroupChangePolicy string?
        10 seccompProfile SeccompProfile*; 11 appArmorProfile AppArmorProfile*; 13 seLinuxChangePolicy string?""",
    "Affinity": "1 nodeAffinity NodeAffinity*; 2 podAffinity PodAffinity*; 3 podAntiAffinity PodAntiAffinity*",
    "Toleration": "1 key string; 2 operator string; 3 value string; 4 effect string; 5 tolerationSeconds int64?",
    "HostAlias": "1 ip string!; 2 hostnames []string",
    "PodDNSConfig": "1 nameservers []string; 2 searches []string; 3 options []PodDNSConfigOption",
    "PodReadinessGate": "1 conditionType string!",
    "TopologySpreadConstraint": """
        1 maxSkew int32!; 2 topologyKey string!; 3 whenUnsatisfiable string!
        4 labelSelector meta.LabelSelector*; 5 minDomains int32?; 6 nodeAffinityPolicy string?
        7 nodeTaintsPolicy string?; 8 matchLabelKeys []string""",
    "PodOS": "1 name string!",
    "PodSchedulingGate": "1 name string!",
    "PodResourceClaim": "1 name string!; 3 resourceClaimName string?; 4 resourceClaimTemplateName string?",
    "ResourceRequirements": "1 limits {}Quantity; 2 requests {}Quantity; 3 claims []ResourceClaim",
    "ContainerPort": "1 name string; 2 hostPort int32; 3 containerPort int32!; 4 protocol string; 5 hostIP string",
    "EnvFromSource": "1 prefix string; 2 configMapRef ConfigMapEnvSource*; 3 secretRef SecretEnvSource*",
    "EnvVar": "1 name string!; 2 value string; 3 valueFrom EnvVarSource*",
    "ContainerResizePolicy": "1 resourceName string!; 2 restartPolicy string!",
    "ContainerRestartRule": "1 action string; 2 exitCodes ContainerRestartRuleOnExitCodes*",
    "VolumeMount": """
        1 name string!; 2 readOnly bool; 7 recursiveReadOnly string?; 3 mountPath string!; 4 subPath string
        5 mountPropagation string?; 6 subPathExpr string""",
    "VolumeDevice": "1 name string!; 2 devicePath string!",
    "Probe": """
        1 ProbeHandler ^ProbeHandler; 2 initialDelaySeconds int32; 3 timeoutSeconds int32; 4 periodSeconds int32
        5 successThreshold int32; 6 failureThreshold int32; 7 terminationGracePeriodSeconds int64?""",
    "Lifecycle": "1 postStart LifecycleHandler*; 2 preStop LifecycleHandler*; 3 stopSignal string?",
    "SecurityContext": """
        1 capabilities Capabilities*; 2 privileged bool?; 3 seLinuxOptions SELinuxOptions*
        10 windowsOptions WindowsSecurityContextOptions*; 4 runAsUser int64?; 8 runAsGroup int64?
        5 runAsNonRoot bool?; 6 readOnlyRootFilesystem bool?; 7 allowPrivilegeEscalation bool?
        9 procMount string?; 11 seccompProfile SeccompProfile*; 12 appArmorProfile AppArmorProfile*""",
    "EphemeralContainerCommon": _CONTAINER_FIELDS,
    "SELinuxOptions": "1 user string; 2 role string; 3 type string; 4 level string",
    "WindowsSecurityContextOptions": """
        1 gmsaCredentialSpecName string?; 2 gmsaCredentialSpec string?; 3 runAsUserName string?
        4 hostProcess bool?""",
    "Sysctl": "1 name string!; 2 value string!",
    "SeccompProfile": "1 type string!; 2 localhostProfile string?",
    "AppArmorProfile": "1 type string!; 2 localhostProfile string?",
    "NodeAffinity": """
        1 requiredDuringSchedulingIgnoredDuringExecution NodeSelector*
        2 preferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm""",
    "PodAffinity": """
        1 requiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm
        2 preferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm""",
    "PodAntiAffinity": """
        1 requiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm
        2 preferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm""",
    "PodDNSConfigOption": "1 name string; 2 value string?",
    "ResourceClaim": "1 name string!; 2 request string",
    "ConfigMapEnvSource": "1 LocalObjectReference ^LocalObjectReference; 2 optional bool?",
    "SecretEnvSource": "1 LocalObjectReference ^LocalObjectReference; 2 optional bool?",
    "EnvVarSource": """
        1 fieldRef ObjectFieldSelector*; 2 resourceFieldRef ResourceFieldSelector*
        3 configMapKeyRef ConfigMapKeySelector*; 4 secretKeyRef SecretKeySelector*
        5 fileKeyRef FileKeySelector*""",
    "ContainerRestartRuleOnExitCodes": "1 operator string; 2 values []int32",
    "ProbeHandler": "1 exec ExecAction*; 2 httpGet HTTPGetAction*; 3 tcpSocket TCPSocketAction*; 4 grpc GRPCAction*",
    "LifecycleHandler": """
        1 exec ExecAction*; 2 httpGet HTTPGetAction*; 3 tcpSocket TCPSocketAction*; 4 sleep SleepAction*""",
    "Capabilities": "1 add []string; 2 drop []string",
    "PreferredSchedulingTerm": "1 weight int32!; 2 preference NodeSelectorTerm",
    "PodAffinityTerm": """
        1 labelSelector meta.LabelSelector*; 2 namespaces []string; 3 topologyKey string!
        4 namespaceSelector meta.LabelSelector*; 5 matchLabelKeys []string; 6 mismatchLabelKeys []string""",
    "WeightedPodAffinityTerm": "1 weight int32!; 2 podAffinityTerm PodAffinityTerm",
    "ObjectFieldSelector": "1 apiVersion string; 2 fieldPath string!",
    "ResourceFieldSelector": "1 containerName string; 2 resource string!; 3 divisor Quantity",
    "ConfigMapKeySelector": "1 LocalObjectReference ^LocalObjectReference; 2 key string!; 3 optional bool?",
    "SecretKeySelector": "1 LocalObjectReference ^LocalObjectReference; 2 key string!; 3 optional bool?",
    "FileKeySelector": "1 volumeName string!; 2 path string!; 3 key string!; 4 optional bool?",
    "ExecAction": "1 command []string",
    "HTTPGetAction": "1 path string; 2 port IntOrString; 3 host string; 4 scheme string; 5 httpHeaders []HTTPHeader",
    "TCPSocketAction": "1 port IntOrString; 2 host string",
    "GRPCAction": "1 port int32!; 2 service string?",
    "SleepAction": "1 seconds int64!",
    "HTTPHeader": "1 name string!; 2 value string!",
    # PodStatus: what the node writes, and what the Pods API's watchers follow.
    "PodStatus": """
        17 observedGeneration int64; 1 phase string; 2 conditions []PodCondition; 3 message string
        4 reason string; 11 nominatedNodeName string; 5 hostIP string; 16 hostIPs []HostIP; 6 podIP string
        12 podIPs []PodIP; 7 startTime Time*; 10 initContainerStatuses []ContainerStatus
        8 containerStatuses []ContainerStatus; 9 qosClass string
        13 ephemeralContainerStatuses []ContainerStatus; 14 resize string
        15 resourceClaimStatuses []PodResourceClaimStatus
        18 extendedResourceClaimStatus PodExtendedResourceClaimStatus*; 19 allocatedResources {}Quantity
        20 resources ResourceRequirements*
        21 nodeAllocatableResourceClaimStatuses []NodeAllocatableResourceClaimStatus""",
    "NodeAllocatableResourceClaimStatus": """
        1 resourceClaimName string!; 2 containers []string; 4 mapping []NodeAllocatableMappedResources
        5 overhead []NodeAllocatableOverheadResources""",
    "NodeAllocatableMappedResources": "1 name string!; 2 quantity Quantity*",
    "NodeAllocatableOverheadResources": "1 name string!; 2 perPod Quantity*; 3 perContainer Quantity*",
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
    "ResourceHealth": "1 resourceID string!; 2 health string; 6 message string?",
})
