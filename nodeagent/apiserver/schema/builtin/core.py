"""Schemas of the other core/v1 kinds: Node, Namespace, Event, ResourceQuota, ConfigMap,
ServiceAccount, Binding, and the shared references, taints and node selectors.

Why apart: these are small kinds the control plane serves besides Pod; node status lists keep
upstream's merge keys (addresses and conditions by type) because the node agent patches them.
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
    s,
    smap,
    sset,
    strs,
    time,
)
from nodeagent.apiserver.schema.model import Schema


def core_definitions() -> dict[str, Schema]:
    c = CORE
    return {
        **_node_definitions(),
        c + "NodeSelector": obj("Terms ORed together; each term's requirements are ANDed.", {
            "nodeSelectorTerms": arr(core("NodeSelectorTerm"), "The terms.", atomic=True),
        }, ["nodeSelectorTerms"], map_type="atomic"),
        c + "NodeSelectorTerm": obj("Requirements on a node's labels and fields, ANDed.", {
            "matchExpressions": arr(core("NodeSelectorRequirement"), "Requirements on labels.", atomic=True),
            "matchFields": arr(core("NodeSelectorRequirement"), "Requirements on fields (metadata.name).",
                               atomic=True),
        }, map_type="atomic"),
        c + "NodeSelectorRequirement": obj("A key, an operator and values.", {
            "key": s("Label or field key."),
            "operator": s("In, NotIn, Exists, DoesNotExist, Gt or Lt.",
                          enum=["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"]),
            "values": strs("Values; one integer for Gt and Lt, none for Exists."),
        }, ["key", "operator"]),
        c + "Taint": obj("Repels pods that do not tolerate it.", {
            "key": s("Taint key."),
            "value": s("Taint value."),
            "effect": s("NoSchedule, PreferNoSchedule or NoExecute.",
                        enum=["NoExecute", "NoSchedule", "PreferNoSchedule"]),
            "timeAdded": time("When a NoExecute taint was added."),
        }, ["key", "effect"]),
        c + "ObjectReference": obj("A reference to any object.", {
            "kind": s("Kind of the referent."),
            "namespace": s("Namespace of the referent."),
            "name": s("Name of the referent."),
            "uid": s("UID of the referent."),
            "apiVersion": s("API version of the referent."),
            "resourceVersion": s("Specific version referred to."),
            "fieldPath": s("A part of the object, e.g. spec.containers{name}."),
        }, map_type="atomic"),
        c + "Binding": kind("Binds a pod to a node (the pods/binding subresource).", {
            "target": core("ObjectReference", "The node to bind to."),
        }, ["target"]),
        c + "Namespace": kind("A scope for names.", {
            "spec": core("NamespaceSpec", "Desired state of the namespace."),
            "status": core("NamespaceStatus", "Observed state of the namespace."),
        }),
        c + "NamespaceSpec": obj("Desired state of a namespace.", {
            "finalizers": strs("Must be empty before the namespace is removed.", atomic=True),
        }),
        c + "NamespaceStatus": obj("Observed state of a namespace.", {
            "phase": s("Active or Terminating.", enum=["Active", "Terminating"]),
            "conditions": lmap(core("NamespaceCondition"), "Current conditions.", "type"),
        }),
        c + "NamespaceCondition": obj("A condition of a namespace.", _condition_fields(), ["type", "status"]),
        c + "Event": kind("A report of something that happened to an object (core/v1).", {
            "involvedObject": core("ObjectReference", "The object the event is about."),
            "reason": s("Short CamelCase reason."),
            "message": s("Human-readable description."),
            "source": core("EventSource", "Component reporting the event."),
            "firstTimestamp": time("When the event was first recorded."),
            "lastTimestamp": time("When the event last recurred."),
            "count": i32("How many times it happened."),
            "type": s("Normal or Warning."),
            "eventTime": meta("MicroTime", "When the event was first observed."),
            "series": core("EventSeries", "Data about a series of recurring events."),
            "action": s("What was done, or failed."),
            "related": core("ObjectReference", "A second object involved."),
            "reportingComponent": s("Controller that emitted the event, e.g. kubernetes.io/kubelet."),
            "reportingInstance": s("Instance of that controller, e.g. the node name."),
        }, ["metadata", "involvedObject"]),
        c + "EventSource": obj("Who reported an event.", {
            "component": s("Component name."), "host": s("Node name."),
        }),
        c + "EventSeries": obj("A series of repeated events.", {
            "count": i32("Occurrences so far."),
            "lastObservedTime": meta("MicroTime", "Time of the last occurrence."),
        }),
        c + "ResourceQuota": kind("Limits the total resources used per namespace.", {
            "spec": core("ResourceQuotaSpec", "The limits."),
            "status": core("ResourceQuotaStatus", "The limits enforced and current usage."),
        }),
        c + "ResourceQuotaSpec": obj("Quota limits.", {
            "hard": qmap("Hard limit per named resource."),
            "scopes": strs("Scopes objects must match to be counted."),
            "scopeSelector": core("ScopeSelector", "Scope expressions objects must match."),
        }),
        c + "ScopeSelector": obj("Scope requirements, ANDed.", {
            "matchExpressions": arr(core("ScopedResourceSelectorRequirement"), "The requirements.", atomic=True),
        }, map_type="atomic"),
        c + "ScopedResourceSelectorRequirement": obj("A scope, an operator and values.", {
            "scopeName": s("The scope, e.g. PriorityClass or Terminating."),
            "operator": s("In, NotIn, Exists or DoesNotExist."),
            "values": strs("Values for In and NotIn."),
        }, ["scopeName", "operator"]),
        c + "ResourceQuotaStatus": obj("Quota enforcement.", {
            "hard": qmap("Enforced hard limits."),
            "used": qmap("Current usage."),
        }),
        c + "ConfigMap": kind("Non-secret configuration data.", {
            "immutable": b("When true, data cannot change; only deletion."),
            "data": smap("UTF-8 entries."),
            "binaryData": mapof_bytes(),
        }),
        c + "ServiceAccount": kind("An identity for processes in pods.", {
            "secrets": lmap(core("ObjectReference"), "Deprecated: Secrets of the account.", "name"),
            "imagePullSecrets": arr(core("LocalObjectReference"), "Secrets used to pull images for its pods.",
                                    atomic=True),
            "automountServiceAccountToken": b("Whether pods mount a token by default."),
        }),
    }


def mapof_bytes() -> Schema:
    return Schema(type="object", additional_properties=s(fmt="byte"),
                  description="Binary entries, base64-encoded.")


def _condition_fields() -> dict[str, Schema]:
    return {
        "type": s("Condition type."),
        "status": s("True, False or Unknown."),
        "lastTransitionTime": time("When the status last changed."),
        "reason": s("CamelCase reason for the last change."),
        "message": s("Human-readable detail."),
    }


def _node_definitions() -> dict[str, Schema]:
    c = CORE
    return {
        c + "Node": kind("A worker machine.", {
            "spec": core("NodeSpec", "Desired configuration of the node."),
            "status": core("NodeStatus", "Observed state, reported by the node."),
        }),
        c + "NodeSpec": obj("Desired configuration of a node.", {
            "podCIDR": s("Pod IP range of the node."),
            "podCIDRs": sset("Pod IP ranges, one per family.", merge=True),
            "providerID": s("Cloud provider's id of the node."),
            "unschedulable": b("Keep new pods off the node (cordon)."),
            "taints": arr(core("Taint"), "Taints of the node.", atomic=True),
            "configSource": obj("Deprecated dynamic kubelet config source.", {
                "configMap": obj("A ConfigMap with kubelet config.", {
                    "namespace": s("Namespace."), "name": s("Name."), "uid": s("UID."),
                    "resourceVersion": s("Version."), "kubeletConfigKey": s("Key of the config."),
                }),
            }),
            "externalID": s("Deprecated."),
        }),
        c + "NodeStatus": obj("Observed state of a node.", {
            "capacity": qmap("Total resources of the node."),
            "allocatable": qmap("Resources available to pods."),
            "phase": s("Deprecated."),
            "conditions": lmap(core("NodeCondition"), "Current conditions (Ready, MemoryPressure, ...).", "type"),
            "addresses": lmap(core("NodeAddress"), "Addresses of the node.", "type"),
            "daemonEndpoints": core("NodeDaemonEndpoints", "Ports of the node's daemons."),
            "nodeInfo": core("NodeSystemInfo", "Versions and ids of the node."),
            "images": arr(core("ContainerImage"), "Images on the node.", atomic=True),
            "volumesInUse": strs("Attached volumes in use."),
            "volumesAttached": arr(core("AttachedVolume"), "Attached volumes.", atomic=True),
            "config": obj("Deprecated dynamic config status.", {}, preserve_unknown_fields=True),
            "runtimeHandlers": arr(core("NodeRuntimeHandler"), "Runtime handlers available.", atomic=True),
            "features": core("NodeFeatures", "Features the node supports."),
            "declaredFeatures": strs("Feature names the node declares."),
        }),
        c + "NodeCondition": obj("A condition of a node.", {
            **_condition_fields(),
            "lastHeartbeatTime": time("When the condition was last reported."),
        }, ["type", "status"]),
        c + "NodeAddress": obj("An address of a node.", {
            "type": s("Hostname, InternalIP, ExternalIP, InternalDNS or ExternalDNS."),
            "address": s("The address."),
        }, ["type", "address"]),
        c + "NodeDaemonEndpoints": obj("Ports of the node's daemons.", {
            "kubeletEndpoint": core("DaemonEndpoint", "The kubelet's port."),
        }),
        c + "DaemonEndpoint": obj("A daemon's port.", {"Port": i32("Port number.")}, ["Port"]),
        c + "NodeSystemInfo": obj("Ids and versions of a node.", {
            "machineID": s("Machine id."),
            "systemUUID": s("System UUID."),
            "bootID": s("Boot id."),
            "kernelVersion": s("Kernel version."),
            "osImage": s("OS image, from /etc/os-release."),
            "containerRuntimeVersion": s("Runtime and version, e.g. containerd://2.0.0."),
            "kubeletVersion": s("Kubelet version."),
            "kubeProxyVersion": s("Deprecated kube-proxy version."),
            "operatingSystem": s("linux or windows."),
            "architecture": s("CPU architecture."),
            "swap": obj("Swap of the node.", {"capacity": i64("Swap bytes.")}),
            "runningInUserNamespace": b("Whether the node runs in a user namespace."),
        }, ["machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
            "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture"]),
        c + "ContainerImage": obj("An image on a node.", {
            "names": strs("Names of the image."), "sizeBytes": i64("Size in bytes."),
        }),
        c + "AttachedVolume": obj("A volume attached to a node.", {
            "name": s("Volume name."), "devicePath": s("Device path."),
        }, ["name", "devicePath"]),
        c + "NodeRuntimeHandler": obj("A runtime handler.", {
            "name": s("Handler name; empty for the default."),
            "features": obj("Features of the handler.", {
                "recursiveReadOnlyMounts": b("Supports recursive read-only mounts."),
                "userNamespaces": b("Supports user namespaces."),
            }),
        }),
        c + "NodeFeatures": obj("Features of a node.", {
            "supplementalGroupsPolicy": b("Supports supplementalGroupsPolicy."),
        }),
    }
