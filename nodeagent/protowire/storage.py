"""storage.k8s.io/v1 kinds (k8s.io/api storage/v1 generated.proto).

Why: the real kube-scheduler and CSI components read and write these through client-go's typed
clients, which send protobuf. Notation: nodeagent.protowire.notation. CSINodeStatus leaves out
storageHealth (the alpha CSIVolumeHealth gate's, dropped on write as upstream does with the gate off).
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

STORAGE_V1 = package({
    "CSINode": "1 metadata meta.ObjectMeta; 2 spec CSINodeSpec; 3 status CSINodeStatus",
    "CSINodeSpec": "1 drivers []CSINodeDriver",
    "CSINodeDriver": "1 name string!; 2 nodeID string!; 3 topologyKeys []string; 4 allocatable VolumeNodeResources*",
    "VolumeNodeResources": "1 count int32?",
    "CSINodeStatus": "",
})
