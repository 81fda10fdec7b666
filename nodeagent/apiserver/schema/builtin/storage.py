"""Schemas of the storage.k8s.io/v1 kinds: CSINode, CSIDriver, StorageClass, CSIStorageCapacity,
VolumeAttachment, VolumeAttributesClass (k8s.io/api storage/v1 types.go), and storagemigration.k8s.io/v1
StorageVersionMigration (kube-controller-manager's storage-version-migrator lists these; nodeagent keeps
one storage version per kind, so a migration has nothing to rewrite here: they are data).

Why apart: one API group under its own package name; the scheduler's volume plugins read these,
nodeagent itself attaches no volumes, so they are served as data with upstream's validation.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    CORE,
    META,
    arr,
    b,
    i32,
    i64,
    kind,
    lmap,
    meta,
    obj,
    qty,
    ref,
    s,
    smap,
    sset,
    strs,
    time,
)
from nodeagent.apiserver.schema.model import Schema

SV1 = "io.k8s.api.storage.v1."
SVM1 = "io.k8s.api.storagemigration.v1."


def storage_definitions() -> dict[str, Schema]:
    return {
        SV1 + "CSINode": kind("The CSI drivers installed on one node; named as the node.", {
            "spec": ref(SV1 + "CSINodeSpec", "The drivers registered on the node."),
            "status": ref(SV1 + "CSINodeStatus", "Observed state (storage health, alpha)."),
        }, ["spec"]),
        SV1 + "CSINodeSpec": obj("The CSI drivers on a node.", {
            "drivers": lmap(ref(SV1 + "CSINodeDriver"), "Drivers registered on the node by the kubelet.", "name"),
        }, ["drivers"]),
        SV1 + "CSINodeDriver": obj("One CSI driver as registered on a node.", {
            "name": s("The driver's name, as in its CSIDriver object."),
            "nodeID": s("The node's identity as the driver knows it."),
            "topologyKeys": strs("Topology label keys the driver reports for the node."),
            "allocatable": ref(SV1 + "VolumeNodeResources", "Volume limits of the driver on this node."),
        }, ["name", "nodeID"]),
        SV1 + "VolumeNodeResources": obj("Volume limits of a CSI driver on a node.", {
            "count": i32("Maximum number of unique volumes the driver may attach on the node."),
        }),
        # storageHealth is the alpha CSIVolumeHealth gate's (off): upstream drops it on write
        SV1 + "CSINodeStatus": obj("Observed state of a CSINode.", {}),
        SV1 + "CSIDriver": kind("How Kubernetes treats one CSI volume driver; named as the driver.", {
            "spec": ref(SV1 + "CSIDriverSpec", "The driver's behaviour."),
        }, ["spec"]),
        SV1 + "CSIDriverSpec": obj("What a CSI driver needs from Kubernetes.", {
            "attachRequired": b("The driver needs ControllerPublishVolume (an attach); immutable."),
            "podInfoOnMount": b("Pass pod information as volume context on NodePublishVolume."),
            "volumeLifecycleModes": sset("Persistent and/or Ephemeral."),
            "storageCapacity": b("Scheduling considers the driver's CSIStorageCapacity objects."),
            "fsGroupPolicy": s("ReadWriteOnceWithFSType, File or None."),
            "tokenRequests": arr(ref(SV1 + "TokenRequest"), "Service account tokens passed on mount.", atomic=True),
            "requiresRepublish": b("NodePublishVolume is called periodically."),
            "seLinuxMount": b("The driver supports the -o context mount option."),
            "nodeAllocatableUpdatePeriodSeconds": i64("How often the kubelet refreshes the CSINode's allocatable."),
            "serviceAccountTokenInSecrets": b("Tokens go in the secrets field, not the volume context."),
            "preventPodSchedulingIfMissing": b("Pods using the driver are not scheduled to nodes without it."),
        }),
        SV1 + "TokenRequest": obj("A service account token a CSI driver asks for.", {
            "audience": s("Audience of the token."),
            "expirationSeconds": i64("Lifetime of the token."),
        }, ["audience"]),
        SV1 + "StorageClass": kind("A class of dynamically provisioned volumes.", {
            "provisioner": s("The provisioner's name."),
            "parameters": smap("Parameters for the provisioner."),
            "reclaimPolicy": s("Delete (default) or Retain, for the volumes it provisions."),
            "mountOptions": strs("Mount options of the volumes it provisions."),
            "allowVolumeExpansion": b("Volumes of the class may be expanded."),
            "volumeBindingMode": s("Immediate (default) or WaitForFirstConsumer."),
            "allowedTopologies": arr(ref(CORE + "TopologySelectorTerm"), "Where volumes may be provisioned.",
                                     atomic=True),
        }, ["provisioner"]),
        CORE + "TopologySelectorTerm": obj("A topology selector term; requirements are ANDed.", {
            "matchLabelExpressions": arr(ref(CORE + "TopologySelectorLabelRequirement"),
                                         "Requirements by label.", atomic=True),
        }, map_type="atomic"),
        CORE + "TopologySelectorLabelRequirement": obj("A topology label and the values it may take.", {
            "key": s("The label key."),
            "values": strs("Allowed values (ORed)."),
        }, ["key", "values"]),
        SV1 + "CSIStorageCapacity": kind("Capacity a CSI driver reports for one topology segment and class.", {
            "nodeTopology": meta("LabelSelector", "The nodes that can reach the storage."),
            "storageClassName": s("The StorageClass the capacity applies to; immutable."),
            "capacity": qty("Available capacity, unset when unknown."),
            "maximumVolumeSize": qty("The largest volume that can be created."),
        }, ["storageClassName"]),
        SV1 + "VolumeAttachment": kind("A request to attach a volume to a node, and its result.", {
            "spec": ref(SV1 + "VolumeAttachmentSpec", "The attachment wanted."),
            "status": ref(SV1 + "VolumeAttachmentStatus", "Written by the attacher."),
        }, ["spec"]),
        SV1 + "VolumeAttachmentSpec": obj("Which volume, by which driver, on which node.", {
            "attacher": s("The CSI driver that attaches."),
            "source": ref(SV1 + "VolumeAttachmentSource", "The volume."),
            "nodeName": s("The node to attach to."),
        }, ["attacher", "source", "nodeName"]),
        SV1 + "VolumeAttachmentSource": obj("The volume to attach: a PersistentVolume, or an inline one.", {
            "persistentVolumeName": s("The PersistentVolume's name."),
            "inlineVolumeSpec": ref(CORE + "PersistentVolumeSpec", "A pod's inline volume migrated to CSI."),
        }),
        SV1 + "VolumeAttachmentStatus": obj("The attacher's report.", {
            "attached": b("The volume is attached."),
            "attachmentMetadata": smap("Returned by a successful attach, passed to later mounts."),
            "attachError": ref(SV1 + "VolumeError", "The last attach error."),
            "detachError": ref(SV1 + "VolumeError", "The last detach error."),
        }, ["attached"]),
        SV1 + "VolumeError": obj("An attach or detach error.", {
            "time": time("When it happened."),
            "message": s("What went wrong."),
            "errorCode": i32("The CSI gRPC code."),
        }),
        SV1 + "VolumeAttributesClass": kind("Mutable parameters of volumes a CSI driver provisions.", {
            "driverName": s("The CSI driver; immutable."),
            "parameters": smap("Parameters for the driver; immutable."),
        }, ["driverName"]),
        SVM1 + "StorageVersionMigration": kind("A request to rewrite every object of a resource.", {
            "spec": ref(SVM1 + "StorageVersionMigrationSpec", "The resource."),
            "status": ref(SVM1 + "StorageVersionMigrationStatus", "Progress, written by the migrator."),
        }),
        SVM1 + "StorageVersionMigrationSpec": obj("What to migrate.", {
            "resource": ref(META + "GroupResource", "The resource to migrate; immutable."),
        }, ["resource"]),
        SVM1 + "StorageVersionMigrationStatus": obj("The migration's progress.", {
            "conditions": lmap(ref(META + "Condition"), "Running, Succeeded, Failed.", "type"),
            "resourceVersion": s("The resourceVersion the migration covers up to."),
        }),
        META + "GroupResource": obj("A resource of a group, no version.", {
            "group": s("The API group."), "resource": s("The resource."),
        }, ["group", "resource"]),
    }
