"""The storage.k8s.io kinds: CSINode, CSIDriver, StorageClass, CSIStorageCapacity, VolumeAttachment.

Why served: the real kube-scheduler's default profile lists and watches all five (its volume
plugins read them), and never becomes ready without CSINodes. Facts from k8s.io/kubernetes
pkg/registry/storage/* (scope, short names, subresources, reset fields). Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import STATUS_RESET, Kind

STORAGE_V1 = "storage.k8s.io/v1"
STORAGE = {"storage.k8s.io": "io.k8s.api.storage"}

CSI_NODE = Kind(
    "CSINode", "csinodes", namespaced=False, versions=(STORAGE_V1,), definition=STORAGE,
    # status (storageHealth) belongs to the alpha CSIVolumeHealth gate; the subresource exists regardless
    subresources=("status",), reset=STATUS_RESET, store_hooks="storage", printer="csinode",
)

KINDS = (CSI_NODE,)
