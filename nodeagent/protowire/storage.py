"""storage.k8s.io/v1 kinds (k8s.io/api storage/v1 generated.proto), and the two core/v1 messages only
StorageClass uses (TopologySelectorTerm and its requirement, joined into the core package).

Why: the real kube-scheduler and CSI components read and write these through client-go's typed
clients, which send protobuf. Notation: nodeagent.protowire.notation. Left out, as the schema leaves
it out: CSINodeStatus.storageHealth (the alpha CSIVolumeHealth gate's, dropped on write as upstream
does with the gate off).
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

STORAGE_V1 = package({
    "CSINode": "1 metadata meta.ObjectMeta; 2 spec CSINodeSpec; 3 status CSINodeStatus",
    "CSINodeSpec": "1 drivers []CSINodeDriver",
    "CSINodeDriver": "1 name string!; 2 nodeID string!; 3 topologyKeys []string; 4 allocatable VolumeNodeResources*",
    "VolumeNodeResources": "1 count int32?",
    "CSINodeStatus": "",
    "CSIDriver": "1 metadata meta.ObjectMeta; 2 spec CSIDriverSpec",
    "CSIDriverSpec": """
        1 attachRequired bool?; 2 podInfoOnMount bool?; 3 volumeLifecycleModes []string; 4 storageCapacity bool?
        5 fsGroupPolicy string?; 6 tokenRequests []TokenRequest; 7 requiresRepublish bool?; 8 seLinuxMount bool?
        9 nodeAllocatableUpdatePeriodSeconds int64?; 10 serviceAccountTokenInSecrets bool?
        11 preventPodSchedulingIfMissing bool?""",
    "TokenRequest": "1 audience string!; 2 expirationSeconds int64?",
    "StorageClass": """
        1 metadata meta.ObjectMeta; 2 provisioner string!; 3 parameters {}string; 4 reclaimPolicy string?
        5 mountOptions []string; 6 allowVolumeExpansion bool?; 7 volumeBindingMode string?
        8 allowedTopologies []core.TopologySelectorTerm""",
    "CSIStorageCapacity": """
        1 metadata meta.ObjectMeta; 2 nodeTopology meta.LabelSelector*; 3 storageClassName string!
        4 capacity Quantity*; 5 maximumVolumeSize Quantity*""",
    "VolumeAttachment": "1 metadata meta.ObjectMeta; 2 spec VolumeAttachmentSpec; 3 status VolumeAttachmentStatus",
    "VolumeAttachmentSpec": "1 attacher string!; 2 source VolumeAttachmentSource; 3 nodeName string!",
    "VolumeAttachmentSource": "1 persistentVolumeName string?; 2 inlineVolumeSpec core.PersistentVolumeSpec*",
    "VolumeAttachmentStatus": """
        1 attached bool!; 2 attachmentMetadata {}string; 3 attachError VolumeError*; 4 detachError VolumeError*""",
    "VolumeError": "1 time Time; 2 message string; 3 errorCode int32?",
    "VolumeAttributesClass": "1 metadata meta.ObjectMeta; 2 driverName string!; 3 parameters {}string",
})

STORAGE_CORE = package({
    "TopologySelectorTerm": "1 matchLabelExpressions []TopologySelectorLabelRequirement",
    "TopologySelectorLabelRequirement": "1 key string!; 2 values []string",
})
"""core/v1 messages that only StorageClass references."""
