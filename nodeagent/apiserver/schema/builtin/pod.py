"""Schemas of core/v1 Pod: PodSpec (scheduling, security, DNS, claims) and PodStatus.

Why apart: the pod is the kind users write and patch most; its lists carry upstream's merge
keys (containers and volumes by name, hostAliases by ip, conditions by type) so strategic
merge patch and server-side apply treat them as kubectl expects.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    CORE,
    arr,
    b,
    core,
    i32,
    i64,
    kind,
    lmap,
    meta,
    obj,
    qmap,
    qty,
    s,
    smap,
    strs,
    time,
)
from nodeagent.apiserver.schema.model import Schema


def _containers(desc: str) -> Schema:
    return lmap(core("Container"), desc, "name")


def pod_definitions() -> dict[str, Schema]:
    c = CORE
    return {
        c + "Pod": kind("A group of containers scheduled together on one node.", {
            "spec": core("PodSpec", "Desired behaviour of the pod."),
            "status": core("PodStatus", "Most recently observed state of the pod; written by the node."),
        }),
        c + "PodSpec": obj("Desired state of a pod.", {
            "volumes": lmap(core("Volume"), "Volumes the containers may mount.", "name",
                            strategy="merge,retainKeys"),
            "initContainers": _containers("Containers run in order before the app containers; sidecars stay."),
            "containers": _containers("The app containers; at least one."),
            "ephemeralContainers": lmap(core("EphemeralContainer"), "Debug containers added to a running pod.",
                                        "name"),
            "restartPolicy": s("Always, OnFailure or Never.", enum=["Always", "Never", "OnFailure"]),
            "terminationGracePeriodSeconds": i64("Seconds between SIGTERM and SIGKILL on deletion; 30 by default."),
            "activeDeadlineSeconds": i64("Seconds the pod may run before it is failed."),
            "dnsPolicy": s("ClusterFirst, ClusterFirstWithHostNet, Default or None."),
            "nodeSelector": smap("Node labels the node must have.", atomic=True),
            "serviceAccountName": s("Service account the pod runs as."),
            "serviceAccount": s("Deprecated alias of serviceAccountName."),
            "automountServiceAccountToken": b("Whether to mount the service account token."),
            "nodeName": s("Node the pod is bound to; set by the scheduler or by hand."),
            "hostNetwork": b("Use the node's network namespace."),
            "hostPID": b("Use the node's PID namespace."),
            "hostIPC": b("Use the node's IPC namespace."),
            "shareProcessNamespace": b("Share one PID namespace between the pod's containers."),
            "securityContext": core("PodSecurityContext", "Pod-wide security attributes."),
            "imagePullSecrets": lmap(core("LocalObjectReference"), "Secrets used to pull images.", "name"),
            "hostname": s("Hostname of the pod; the pod name by default."),
            "subdomain": s("Subdomain, making the FQDN hostname.subdomain.namespace.svc."),
            "affinity": core("Affinity", "Node affinity and pod (anti-)affinity rules."),
            "schedulerName": s("Scheduler that places the pod."),
            "tolerations": arr(core("Toleration"), "Taints the pod tolerates.", atomic=True),
            "hostAliases": lmap(core("HostAlias"), "Extra /etc/hosts entries.", "ip"),
            "priorityClassName": s("PriorityClass of the pod."),
            "priority": i32("Priority value, resolved from priorityClassName."),
            "dnsConfig": core("PodDNSConfig", "DNS settings merged into the dnsPolicy's."),
            "readinessGates": arr(core("PodReadinessGate"), "Extra conditions needed for readiness.", atomic=True),
            "runtimeClassName": s("RuntimeClass to run the pod with."),
            "enableServiceLinks": b("Inject service environment variables; true by default."),
            "preemptionPolicy": s("Never or PreemptLowerPriority."),
            "overhead": qmap("Resources the pod's sandbox uses besides its containers."),
            "topologySpreadConstraints": lmap(core("TopologySpreadConstraint"),
                                              "How to spread matching pods over topology domains.",
                                              "topologyKey", "whenUnsatisfiable"),
            "setHostnameAsFQDN": b("Set the hostname to the FQDN."),
            "os": core("PodOS", "Operating system the pod needs."),
            "hostUsers": b("Use the host user namespace; false gives the pod its own."),
            "schedulingGates": lmap(core("PodSchedulingGate"), "Gates that hold the pod back from scheduling.",
                                    "name"),
            "resourceClaims": lmap(core("PodResourceClaim"), "DRA ResourceClaims the pod uses.", "name",
                                   strategy="merge,retainKeys"),
            "resources": core("ResourceRequirements", "Pod-level resources shared by the containers."),
            "hostnameOverride": s("Hostname to set instead of the generated one."),
        }, ["containers"]),
        c + "Affinity": obj("Scheduling constraints.", {
            "nodeAffinity": core("NodeAffinity", "Rules on node labels."),
            "podAffinity": core("PodAffinity", "Co-locate with matching pods."),
            "podAntiAffinity": core("PodAntiAffinity", "Keep away from matching pods."),
        }),
        c + "NodeAffinity": obj("Node affinity rules.", {
            "requiredDuringSchedulingIgnoredDuringExecution": core("NodeSelector", "Hard rule."),
            "preferredDuringSchedulingIgnoredDuringExecution": arr(
                core("PreferredSchedulingTerm"), "Soft rules with weights.", atomic=True),
        }),
        c + "PreferredSchedulingTerm": obj("A weighted node selector term.", {
            "weight": i32("Weight, 1 to 100."),
            "preference": core("NodeSelectorTerm", "The term."),
        }, ["weight", "preference"]),
        c + "PodAffinity": obj("Inter-pod affinity rules.", _pod_affinity_fields()),
        c + "PodAntiAffinity": obj("Inter-pod anti-affinity rules.", _pod_affinity_fields()),
        c + "PodAffinityTerm": obj("Pods to be near (or away from) in a topology domain.", {
            "labelSelector": meta("LabelSelector", "Pods to match."),
            "namespaces": strs("Namespaces to look in; the pod's own when empty."),
            "topologyKey": s("Node label that defines the domain, e.g. kubernetes.io/hostname."),
            "namespaceSelector": meta("LabelSelector", "Namespaces to look in, by label."),
            "matchLabelKeys": strs("Label keys whose values from this pod are added to the selector."),
            "mismatchLabelKeys": strs("Label keys whose values from this pod must differ."),
        }, ["topologyKey"]),
        c + "WeightedPodAffinityTerm": obj("A weighted pod affinity term.", {
            "weight": i32("Weight, 1 to 100."),
            "podAffinityTerm": core("PodAffinityTerm", "The term."),
        }, ["weight", "podAffinityTerm"]),
        c + "TopologySpreadConstraint": obj("Spreads matching pods over topology domains.", {
            "maxSkew": i32("Largest allowed difference in matching pods between domains."),
            "topologyKey": s("Node label that defines the domains."),
            "whenUnsatisfiable": s("DoNotSchedule or ScheduleAnyway.", enum=["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": meta("LabelSelector", "Pods counted."),
            "minDomains": i32("Least number of eligible domains."),
            "nodeAffinityPolicy": s("Honor or Ignore the pod's node affinity when counting."),
            "nodeTaintsPolicy": s("Honor or Ignore node taints when counting."),
            "matchLabelKeys": strs("Label keys whose values from this pod are added to the selector."),
        }, ["maxSkew", "topologyKey", "whenUnsatisfiable"]),
        c + "Toleration": obj("Lets the pod tolerate a matching taint.", {
            "key": s("Taint key; empty with Exists matches all taints."),
            "operator": s("Exists or Equal (the default).", enum=["Equal", "Exists"]),
            "value": s("Taint value to match with Equal."),
            "effect": s("Effect to match; all effects when empty.",
                        enum=["NoExecute", "NoSchedule", "PreferNoSchedule"]),
            "tolerationSeconds": i64("For NoExecute: seconds the pod stays bound after the taint appears."),
        }),
        c + "PodSecurityContext": obj("Security attributes of the whole pod.", {
            "seLinuxOptions": core("SELinuxOptions", "SELinux context of all containers."),
            "windowsOptions": core("WindowsSecurityContextOptions", "Windows-specific options."),
            "runAsUser": i64("UID to run entrypoints as."),
            "runAsGroup": i64("GID to run entrypoints as."),
            "runAsNonRoot": b("Refuse to start containers that would run as UID 0."),
            "supplementalGroups": arr(i64(), "Extra GIDs of the first process.", atomic=True),
            "supplementalGroupsPolicy": s("Merge or Strict."),
            "fsGroup": i64("GID owning volumes and added to every process."),
            "sysctls": arr(core("Sysctl"), "Namespaced sysctls to set.", atomic=True),
            "fsGroupChangePolicy": s("OnRootMismatch or Always."),
            "seccompProfile": core("SeccompProfile", "Seccomp profile of all containers."),
            "appArmorProfile": core("AppArmorProfile", "AppArmor profile of all containers."),
            "seLinuxChangePolicy": s("MountOption or Recursive relabelling of volumes."),
        }),
        c + "Sysctl": obj("A kernel parameter.", {"name": s("Parameter name."), "value": s("Value.")},
                          ["name", "value"]),
        c + "PodDNSConfig": obj("DNS options of a pod.", {
            "nameservers": strs("DNS server IPs."),
            "searches": strs("Search domains."),
            "options": arr(core("PodDNSConfigOption"), "resolver options.", atomic=True),
        }),
        c + "PodDNSConfigOption": obj("A resolver option.", {"name": s("Option name."), "value": s("Value.")}),
        c + "HostAlias": obj("An /etc/hosts entry.", {
            "ip": s("IP address."),
            "hostnames": strs("Host names for the IP."),
        }, ["ip"]),
        c + "PodReadinessGate": obj("A condition needed for readiness.", {
            "conditionType": s("A type in the pod's conditions."),
        }, ["conditionType"]),
        c + "PodOS": obj("The OS of a pod.", {"name": s("linux or windows.")}, ["name"]),
        c + "PodSchedulingGate": obj("A gate on scheduling.", {"name": s("Gate name, unique in the pod.")},
                                     ["name"]),
        c + "PodResourceClaim": obj("A ResourceClaim the pod uses, by name or from a template.", {
            "name": s("Name of this entry, used by containers' resources.claims."),
            "resourceClaimName": s("An existing ResourceClaim in the pod's namespace."),
            "resourceClaimTemplateName": s("A ResourceClaimTemplate to make a claim for this pod from."),
        }, ["name"]),
        **_status_definitions(),
    }


def _pod_affinity_fields() -> dict[str, Schema]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": arr(core("PodAffinityTerm"), "Hard rules.", atomic=True),
        "preferredDuringSchedulingIgnoredDuringExecution": arr(
            core("WeightedPodAffinityTerm"), "Soft rules with weights.", atomic=True),
    }


def _status_definitions() -> dict[str, Schema]:
    c = CORE
    statuses = "Status of each {} container, in spec order."
    return {
        c + "PodStatus": obj("Observed state of a pod.", {
            "observedGeneration": i64("metadata.generation this status reflects."),
            "phase": s("Pending, Running, Succeeded, Failed or Unknown.",
                       enum=["Failed", "Pending", "Running", "Succeeded", "Unknown"]),
            "conditions": lmap(core("PodCondition"), "Current conditions (PodScheduled, Ready, ...).", "type"),
            "message": s("Why the pod is in this state."),
            "reason": s("Brief CamelCase reason, e.g. Evicted."),
            "nominatedNodeName": s("Node the pod may go to after preemption."),
            "hostIP": s("IP of the node the pod runs on."),
            "hostIPs": Schema(type="array", items=core("HostIP"), description="IPs of the node.",
                              list_type="atomic", patch_strategy="merge", patch_merge_key="ip"),
            "podIP": s("Primary IP of the pod."),
            "podIPs": lmap(core("PodIP"), "IPs of the pod, one per family.", "ip"),
            "startTime": time("When the node acknowledged the pod."),
            "initContainerStatuses": arr(core("ContainerStatus"), statuses.format("init"), atomic=True),
            "containerStatuses": arr(core("ContainerStatus"), statuses.format("app"), atomic=True),
            "qosClass": s("Guaranteed, Burstable or BestEffort.", enum=["BestEffort", "Burstable", "Guaranteed"]),
            "ephemeralContainerStatuses": arr(core("ContainerStatus"), statuses.format("ephemeral"), atomic=True),
            "resize": s("Deprecated state of an in-place resize."),
            "resourceClaimStatuses": lmap(core("PodResourceClaimStatus"),
                                          "Names of the ResourceClaims made for the pod's claim templates.",
                                          "name", strategy="merge,retainKeys"),
            "allocatedResources": qmap("Pod-level resources allocated by the node."),
            "resources": core("ResourceRequirements", "Pod-level resources actually applied."),
            "extendedResourceClaimStatus": core("PodExtendedResourceClaimStatus",
                                                "The claim made for extended resources backed by DRA."),
            "nodeAllocatableResourceClaimStatuses": lmap(
                core("NodeAllocatableResourceClaimStatus"),
                "Node allocatable resources allocated through the pod's claims (DRANodeAllocatableResources).",
                "resourceClaimName", strategy="merge"),
        }),
        c + "NodeAllocatableResourceClaimStatus": obj("Node allocatable resources of one claim of the pod.", {
            "resourceClaimName": s("The claim that brought the resources."),
            "containers": Schema(type="array", items=s(), description="Containers referencing the claim.",
                                 list_type="set"),
            "mapping": lmap(core("NodeAllocatableMappedResources"), "Resources the claim's devices stand for.",
                            "name", strategy="merge"),
            "overhead": lmap(core("NodeAllocatableOverheadResources"), "Overhead of using the claim's devices.",
                             "name", strategy="merge"),
        }, ["resourceClaimName"]),
        c + "NodeAllocatableMappedResources": obj("A mapped node allocatable resource.", {
            "name": s("cpu, memory or hugepages-<size>."),
            "quantity": qty("The quantity allocated for the claim."),
        }, ["name", "quantity"]),
        c + "NodeAllocatableOverheadResources": obj("An overhead on a node allocatable resource.", {
            "name": s("cpu, memory or hugepages-<size>."),
            "perPod": qty("Overhead once per pod."),
            "perContainer": qty("Overhead per referencing container."),
        }, ["name"]),
        c + "PodCondition": obj("One condition of a pod.", {
            "type": s("PodScheduled, Initialized, ContainersReady, Ready, ..."),
            "observedGeneration": i64("metadata.generation the condition reflects."),
            "status": s("True, False or Unknown."),
            "lastProbeTime": time("When the condition was last probed."),
            "lastTransitionTime": time("When the status last changed."),
            "reason": s("CamelCase reason for the last change."),
            "message": s("Human-readable detail."),
        }, ["type", "status"]),
        c + "HostIP": obj("An IP of the node.", {"ip": s("The IP.")}, ["ip"]),
        c + "PodIP": obj("An IP of the pod.", {"ip": s("The IP.")}, ["ip"]),
        c + "PodResourceClaimStatus": obj("The claim made for one pod.spec.resourceClaims entry.", {
            "name": s("Name of the entry in pod.spec.resourceClaims."),
            "resourceClaimName": s("Name of the generated ResourceClaim; empty when none was needed."),
        }, ["name"]),
        c + "PodExtendedResourceClaimStatus": obj("The claim made for extended resources.", {
            "requestMappings": arr(core("ContainerExtendedResourceRequest"),
                                   "Which claim request serves which container resource.", atomic=True),
            "resourceClaimName": s("Name of the generated claim."),
        }, ["requestMappings", "resourceClaimName"]),
        c + "ContainerExtendedResourceRequest": obj("Maps a container's extended resource to a request.", {
            "containerName": s("Container name."),
            "resourceName": s("Extended resource name."),
            "requestName": s("Request of the claim serving it."),
        }, ["containerName", "resourceName", "requestName"]),
        c + "ContainerStatus": obj("Observed state of one container.", {
            "name": s("Container name."),
            "state": core("ContainerState", "Current state."),
            "lastState": core("ContainerState", "State of the previous run."),
            "ready": b("Whether the readiness probe passes."),
            "restartCount": i32("Times the container has restarted."),
            "image": s("Image the container runs."),
            "imageID": s("Digest of that image."),
            "containerID": s("<runtime>://<id> of the container."),
            "started": b("Whether the startup probe has passed."),
            "allocatedResources": qmap("Resources the node allocated to the container."),
            "resources": core("ResourceRequirements", "Resources actually applied."),
            "volumeMounts": arr(core("VolumeMountStatus"), "Status of the mounts.", atomic=True),
            "user": core("ContainerUser", "Identity the first process runs as."),
            "allocatedResourcesStatus": lmap(core("ResourceStatus"), "Health of allocated devices, per resource.",
                                             "name"),
            "stopSignal": s("Signal used to stop the container."),
        }, ["name", "ready", "restartCount", "image", "imageID"]),
        c + "ContainerState": obj("One of waiting, running or terminated.", {
            "waiting": core("ContainerStateWaiting", "Not yet running."),
            "running": core("ContainerStateRunning", "Running."),
            "terminated": core("ContainerStateTerminated", "Finished."),
        }),
        c + "ContainerStateWaiting": obj("A waiting container.", {
            "reason": s("Why, e.g. ContainerCreating or CrashLoopBackOff."), "message": s("Detail."),
        }),
        c + "ContainerStateRunning": obj("A running container.", {"startedAt": time("When it started.")}),
        c + "ContainerStateTerminated": obj("A terminated container.", {
            "exitCode": i32("Exit code."),
            "signal": i32("Signal that killed it."),
            "reason": s("Why, e.g. Completed or OOMKilled."),
            "message": s("Detail."),
            "startedAt": time("When it started."),
            "finishedAt": time("When it ended."),
            "containerID": s("<runtime>://<id> of the container."),
        }, ["exitCode"]),
        c + "VolumeMountStatus": obj("Status of one mount.", {
            "name": s("Volume name."),
            "mountPath": s("Mount path."),
            "readOnly": b("Mounted read-only."),
            "recursiveReadOnly": s("Disabled or Enabled."),
        }, ["name", "mountPath"]),
        c + "ContainerUser": obj("Identity of a container's process.", {
            "linux": core("LinuxContainerUser", "Linux UID and GIDs."),
        }),
        c + "LinuxContainerUser": obj("Linux identity.", {
            "uid": i64("UID."), "gid": i64("Primary GID."),
            "supplementalGroups": arr(i64(), "Supplementary GIDs.", atomic=True),
        }, ["uid", "gid"]),
        c + "ResourceStatus": obj("Health of the devices behind one resource.", {
            "name": s("Resource name, e.g. claim:<claim>/<request> or an extended resource."),
            "resources": lmap(core("ResourceHealth"), "Health per device.", "resourceID", strategy=""),
        }, ["name"]),
        c + "ResourceHealth": obj("Health of one device.", {
            "resourceID": s("Device id (DRA: <driver>/<pool>/<device>)."),
            "health": s("Healthy, Unhealthy or Unknown."),
            "message": s("Detail about the health."),
        }, ["resourceID"]),
    }
