"""Schemas of the core/v1 kinds the real control-plane components read and write: Service,
Secret, PersistentVolume, PersistentVolumeClaim, ReplicationController,
Endpoints.

Why apart from core.py: these came with issue 23 (the real kube-scheduler and
kube-controller-manager against the embedded API server); written by hand from k8s.io/api
core/v1 types.go, with upstream's list types and merge keys (a Service's ports merge on `port`,
keyed by port and protocol), so strategic merge patch and apply behave as upstream's.
"""

from __future__ import annotations

from dataclasses import replace

from nodeagent.apiserver.schema.builtin.core import mapof_bytes
from nodeagent.apiserver.schema.builtin.dsl import (
    CORE,
    INT_OR_STRING,
    arr,
    b,
    core,
    i32,
    i64,
    kind,
    lmap,
    loose,
    meta,
    obj,
    qmap,
    ref,
    s,
    smap,
    strs,
    time,
)
from nodeagent.apiserver.schema.model import Schema


def corev1_definitions() -> dict[str, Schema]:
    return {**_service_definitions(), **_secret_definitions(), **_volume_definitions(),
            **_replication_definitions(), **_endpoints_definitions()}


def _endpoints_definitions() -> dict[str, Schema]:
    c = CORE
    return {
        c + "Endpoints": kind("The endpoints of a service (deprecated for discovery.k8s.io EndpointSlices).", {
            "subsets": arr(core("EndpointSubset"), "Sets of addresses and ports.", atomic=True),
        }),
        c + "EndpointSubset": obj("Addresses sharing a set of ports.", {
            "addresses": arr(core("EndpointAddress"), "Ready addresses.", atomic=True),
            "notReadyAddresses": arr(core("EndpointAddress"), "Addresses not ready yet.", atomic=True),
            "ports": arr(core("EndpointPort"), "The ports of the addresses.", atomic=True),
        }),
        c + "EndpointAddress": obj("One endpoint's address.", {
            "ip": s("The IP of the endpoint."),
            "hostname": s("The endpoint's hostname."),
            "nodeName": s("The node hosting the endpoint."),
            "targetRef": core("ObjectReference", "What provides the endpoint (a pod)."),
        }, ["ip"], map_type="atomic"),
        c + "EndpointPort": obj("A port of the endpoints.", {
            "name": s("Name of the port, the ServicePort's."),
            "port": i32("Port number."),
            "protocol": replace(s("TCP, UDP or SCTP; TCP by default.", enum=["SCTP", "TCP", "UDP"]), default="TCP"),
            "appProtocol": s("The application protocol of the port."),
        }, ["port"], map_type="atomic"),
    }


def _replication_definitions() -> dict[str, Schema]:
    c = CORE
    return {
        c + "ReplicationController": kind("Keeps a number of pods running (the core group's ReplicaSet).", {
            "spec": core("ReplicationControllerSpec", "The desired behavior of the controller."),
            "status": core("ReplicationControllerStatus", "The most recently observed status."),
        }),
        c + "ReplicationControllerSpec": obj("The desired behavior of a replication controller.", {
            "replicas": i32("The number of desired replicas; 1 by default."),
            "minReadySeconds": i32("Seconds a new pod must be ready to count as available."),
            "selector": smap("Labels the pods must have; the template's labels by default.", atomic=True),
            "template": core("PodTemplateSpec", "The pods it creates."),
        }),
        c + "ReplicationControllerStatus": obj("The observed state of a replication controller.", {
            "replicas": i32("The observed number of replicas."),
            "fullyLabeledReplicas": i32("Replicas whose labels match the template's."),
            "readyReplicas": i32("Ready replicas."),
            "availableReplicas": i32("Available replicas (ready for at least minReadySeconds)."),
            "observedGeneration": i64("The generation last observed by the controller."),
            "conditions": lmap(core("ReplicationControllerCondition"), "Current conditions.", "type"),
        }, ["replicas"]),
        c + "ReplicationControllerCondition": obj("A condition of a replication controller.", {
            "type": s("Condition type (ReplicaFailure)."),
            "status": s("True, False or Unknown."),
            "lastTransitionTime": time("When the status last changed."),
            "reason": s("CamelCase reason for the last change."),
            "message": s("Human-readable detail."),
        }, ["type", "status"]),
    }


def _service_definitions() -> dict[str, Schema]:
    c = CORE
    return {
        c + "Service": kind("A named abstraction of software service: a port the proxy listens on and a selector of "
                            "the pods that serve it.", {
            "spec": core("ServiceSpec", "The behavior of the service."),
            "status": core("ServiceStatus", "The most recently observed status of the service."),
        }),
        c + "ServiceSpec": obj("The attributes a user creates on a service.", {
            "ports": lmap(core("ServicePort"), "The ports exposed by this service.", "port", "protocol"),
            "selector": smap("Pods whose labels match this selector receive the service's traffic.", atomic=True),
            "clusterIP": s("The IP address of the service: assigned at random unless given; None for headless."),
            "clusterIPs": strs("The IP addresses of the service, the first one clusterIP."),
            "type": s("ClusterIP, NodePort, LoadBalancer or ExternalName.",
                      enum=["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]),
            "externalIPs": strs("IPs on which nodes also accept traffic for the service."),
            "sessionAffinity": s("ClientIP or None.", enum=["ClientIP", "None"]),
            "loadBalancerIP": s("Deprecated: the IP a load balancer should use."),
            "loadBalancerSourceRanges": strs("Client CIDRs a load balancer admits."),
            "externalName": s("The DNS name an ExternalName service aliases."),
            "externalTrafficPolicy": s("Cluster or Local: how external traffic is routed.", enum=["Cluster", "Local"]),
            "healthCheckNodePort": i32("The health check node port of a Local LoadBalancer service."),
            "publishNotReadyAddresses": b("Whether endpoints include addresses of pods that are not ready."),
            "sessionAffinityConfig": core("SessionAffinityConfig", "Session affinity settings."),
            "ipFamilies": strs("IPv4 and/or IPv6, the families of the cluster IPs."),
            "ipFamilyPolicy": s("SingleStack, PreferDualStack or RequireDualStack.",
                                enum=["PreferDualStack", "RequireDualStack", "SingleStack"]),
            "allocateLoadBalancerNodePorts": b("Whether a LoadBalancer service gets node ports."),
            "loadBalancerClass": s("The load balancer implementation this service belongs to."),
            "internalTrafficPolicy": s("Cluster or Local: how in-cluster traffic is routed.",
                                       enum=["Cluster", "Local"]),
            "trafficDistribution": s("Preferences for distributing traffic to endpoints."),
        }),
        c + "ServicePort": obj("One port of a service.", {
            "name": s("Name of the port, unique in the service; required when there are several."),
            # upstream's OpenAPI default: apply keys a port without protocol as TCP
            "protocol": replace(s("TCP, UDP or SCTP; TCP by default.", enum=["SCTP", "TCP", "UDP"]), default="TCP"),
            "appProtocol": s("The application protocol of the port."),
            "port": i32("The port the service exposes."),
            "targetPort": ref(INT_OR_STRING, "The port (number or name) on the pods; the port by default."),
            "nodePort": i32("The port on every node, for NodePort and LoadBalancer services."),
        }, ["port"]),
        c + "SessionAffinityConfig": obj("Session affinity settings.", {
            "clientIP": core("ClientIPConfig", "Settings of ClientIP affinity."),
        }),
        c + "ClientIPConfig": obj("Settings of ClientIP affinity.", {
            "timeoutSeconds": i32("Seconds a session sticks; 10800 by default."),
        }),
        c + "ServiceStatus": obj("The observed status of a service.", {
            "loadBalancer": core("LoadBalancerStatus", "The load balancer, if any."),
            "conditions": lmap(meta("Condition"), "Current conditions of the service.", "type"),
        }),
        c + "LoadBalancerStatus": obj("The status of a load balancer.", {
            "ingress": arr(core("LoadBalancerIngress"), "The ingress points of the load balancer.", atomic=True),
        }),
        c + "LoadBalancerIngress": obj("An ingress point of a load balancer.", {
            "ip": s("IP of the ingress point."),
            "hostname": s("DNS name of the ingress point."),
            "ipMode": s("VIP or Proxy: how the load balancer IP behaves."),
            "ports": arr(core("PortStatus"), "The ports of the ingress point.", atomic=True),
        }),
        c + "PortStatus": obj("The status of one port.", {
            "port": i32("Port number."),
            "protocol": s("TCP, UDP or SCTP.", enum=["SCTP", "TCP", "UDP"]),
            "error": s("Why the port is in error, CamelCase."),
        }, ["port", "protocol"]),
    }


def _secret_definitions() -> dict[str, Schema]:
    return {
        CORE + "Secret": kind("Secret data of a certain type, at most 1 MiB.", {
            "immutable": b("When true, data cannot change; only deletion."),
            "data": mapof_bytes(),
            "stringData": smap("Write-only string entries, merged into data on write."),
            "type": s("Type of the data, for programmatic handling (Opaque by default)."),
        }),
    }


# The persistent-volume sources only PersistentVolumes use, kept as written (as volume.py keeps the
# legacy sources pods share); csi and local are spelled out.
_PV_LEGACY = (
    ("glusterfs", "GlusterfsPersistentVolumeSource"),
    ("rbd", "RBDPersistentVolumeSource"),
    ("iscsi", "ISCSIPersistentVolumeSource"),
    ("cinder", "CinderPersistentVolumeSource"),
    ("cephfs", "CephFSPersistentVolumeSource"),
    ("flexVolume", "FlexPersistentVolumeSource"),
    ("azureFile", "AzureFilePersistentVolumeSource"),
    ("scaleIO", "ScaleIOPersistentVolumeSource"),
    ("storageos", "StorageOSPersistentVolumeSource"),
)
_POD_SHARED = (
    ("gcePersistentDisk", "GCEPersistentDiskVolumeSource"),
    ("awsElasticBlockStore", "AWSElasticBlockStoreVolumeSource"),
    ("hostPath", "HostPathVolumeSource"),
    ("nfs", "NFSVolumeSource"),
    ("fc", "FCVolumeSource"),
    ("flocker", "FlockerVolumeSource"),
    ("vsphereVolume", "VsphereVirtualDiskVolumeSource"),
    ("quobyte", "QuobyteVolumeSource"),
    ("azureDisk", "AzureDiskVolumeSource"),
    ("photonPersistentDisk", "PhotonPersistentDiskVolumeSource"),
    ("portworxVolume", "PortworxVolumeSource"),
)


def _volume_definitions() -> dict[str, Schema]:
    c = CORE
    sources = {field: core(name, f"A {field} volume.") for field, name in (*_POD_SHARED, *_PV_LEGACY)}
    out: dict[str, Schema] = {
        c + "PersistentVolume": kind("A piece of storage in the cluster, provisioned by an administrator or a "
                                     "storage class.", {
            "spec": core("PersistentVolumeSpec", "What the volume is and how it may be used."),
            "status": core("PersistentVolumeStatus", "The observed state of the volume."),
        }),
        c + "PersistentVolumeSpec": obj("A persistent volume: its capacity, access modes and exactly one source.", {
            "capacity": qmap("The volume's capacity (storage)."),
            **sources,
            "local": core("LocalVolumeSource", "A local disk of a node (needs node affinity)."),
            "csi": core("CSIPersistentVolumeSource", "A volume of a CSI driver."),
            "accessModes": strs("ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod."),
            "claimRef": core("ObjectReference", "The claim bound to this volume."),
            "persistentVolumeReclaimPolicy": s("Retain (the default), Delete or Recycle.",
                                               enum=["Delete", "Recycle", "Retain"]),
            "storageClassName": s("The StorageClass this volume belongs to."),
            "mountOptions": strs("Mount options, not validated."),
            "volumeMode": s("Filesystem (the default) or Block.", enum=["Block", "Filesystem"]),
            "nodeAffinity": core("VolumeNodeAffinity", "The nodes this volume can be reached from."),
            "volumeAttributesClassName": s("The VolumeAttributesClass of the volume."),
        }),
        c + "PersistentVolumeStatus": obj("The observed state of a persistent volume.", {
            "phase": s("Pending, Available, Bound, Released or Failed.",
                       enum=["Available", "Bound", "Failed", "Pending", "Released"]),
            "message": s("Why the volume is in this state."),
            "reason": s("CamelCase reason of a failure."),
            "lastPhaseTransitionTime": time("When the phase last changed."),
        }),
        c + "VolumeNodeAffinity": obj("The nodes a volume can be reached from.", {
            "required": core("NodeSelector", "Nodes that must match."),
        }),
        c + "LocalVolumeSource": obj("A local disk, partition or directory of a node.", {
            "path": s("Full path of the volume on the node."),
            "fsType": s("Filesystem type, for a block device."),
        }, ["path"]),
        c + "CSIPersistentVolumeSource": obj("A volume of an external CSI driver.", {
            "driver": s("The CSI driver's name."),
            "volumeHandle": s("The volume's id as the driver knows it."),
            "readOnly": b("Whether it is published read-only."),
            "fsType": s("Filesystem type to mount."),
            "volumeAttributes": smap("Attributes passed to the driver."),
            "controllerPublishSecretRef": core("SecretReference", "Secret for ControllerPublishVolume."),
            "nodeStageSecretRef": core("SecretReference", "Secret for NodeStageVolume."),
            "nodePublishSecretRef": core("SecretReference", "Secret for NodePublishVolume."),
            "controllerExpandSecretRef": core("SecretReference", "Secret for ControllerExpandVolume."),
            "nodeExpandSecretRef": core("SecretReference", "Secret for NodeExpandVolume."),
        }, ["driver", "volumeHandle"]),
        c + "SecretReference": obj("A Secret in any namespace.", {
            "name": s("Name of the secret."), "namespace": s("Namespace of the secret."),
        }, map_type="atomic"),
        c + "PersistentVolumeClaim": kind("A user's request for and claim to a persistent volume.", {
            "spec": core("PersistentVolumeClaimSpec", "What the claim asks for."),
            "status": core("PersistentVolumeClaimStatus", "The observed state of the claim."),
        }),
        c + "PersistentVolumeClaimStatus": obj("The observed state of a claim.", {
            "phase": s("Pending, Bound or Lost.", enum=["Bound", "Lost", "Pending"]),
            "accessModes": strs("The access modes of the bound volume."),
            "capacity": qmap("The capacity of the bound volume."),
            "conditions": lmap(core("PersistentVolumeClaimCondition"), "Current conditions (resizing...).", "type"),
            "allocatedResources": qmap("Resources assigned to the claim (resizing)."),
            "allocatedResourceStatuses": smap("Status of the resize of each resource."),
            "currentVolumeAttributesClassName": s("The VolumeAttributesClass in use."),
            "modifyVolumeStatus": core("ModifyVolumeStatus", "Status of a volume modification."),
        }),
        c + "PersistentVolumeClaimCondition": obj("A condition of a claim.", {
            "type": s("Condition type."),
            "status": s("True, False or Unknown."),
            "lastProbeTime": time("When the condition was last probed."),
            "lastTransitionTime": time("When the status last changed."),
            "reason": s("CamelCase reason for the last change."),
            "message": s("Human-readable detail."),
        }, ["type", "status"]),
        c + "ModifyVolumeStatus": obj("The status of a ControllerModifyVolume operation.", {
            "targetVolumeAttributesClassName": s("The class being reconciled to."),
            "status": s("Pending, InProgress or Infeasible."),
        }, ["status"]),
    }
    for _field, name in _PV_LEGACY:
        out[c + name] = loose(f"{name}: a legacy persistent volume source, kept as written.")
    return out
