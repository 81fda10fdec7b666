"""The storage.k8s.io kinds: CSINode, CSIDriver, StorageClass, CSIStorageCapacity, VolumeAttachment,
VolumeAttributesClass (kube-controller-manager's volume controllers list it).

Why served: the real kube-scheduler's default profile lists and watches all five (its volume
plugins read them), and never becomes ready without CSINodes. Facts from k8s.io/kubernetes
pkg/registry/storage/* (scope, short names, subresources, reset fields). Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import GENERATION_UPDATE, STATUS_RESET_META, Kind

STORAGE_V1 = "storage.k8s.io/v1"
STORAGE = {"storage.k8s.io": "io.k8s.api.storage"}

CSI_NODE = Kind(
    "CSINode", "csinodes", namespaced=False, unconditional_update=False, versions=(STORAGE_V1,), definition=STORAGE,
    # status (storageHealth) belongs to the alpha CSIVolumeHealth gate; the subresource exists regardless
    subresources=("status",), reset=STATUS_RESET_META, store_hooks="storage", printer="csinode", returns_deleted=True,
)

CSI_DRIVER = Kind(
    "CSIDriver", "csidrivers", namespaced=False, unconditional_update=False, versions=(STORAGE_V1,), definition=STORAGE,
    store_hooks="storage", printer="csidriver", returns_deleted=True,
    generation=GENERATION_UPDATE,
)
STORAGE_CLASS = Kind(
    "StorageClass", "storageclasses", namespaced=False, versions=(STORAGE_V1,), definition=STORAGE,
    short_names=("sc",), store_hooks="storage", printer="storageclass", returns_deleted=True,
)
CSI_STORAGE_CAPACITY = Kind(
    "CSIStorageCapacity", "csistoragecapacities", namespaced=True, versions=(STORAGE_V1,), definition=STORAGE,
    unconditional_update=False,
    store_hooks="storage", printer="csistoragecapacity",
)
VOLUME_ATTACHMENT = Kind(
    "VolumeAttachment", "volumeattachments", namespaced=False, versions=(STORAGE_V1,), definition=STORAGE,
    unconditional_update=False,
    subresources=("status",), reset=STATUS_RESET_META, store_hooks="storage", printer="volumeattachment",
    returns_deleted=True,
)

VOLUME_ATTRIBUTES_CLASS = Kind(
    "VolumeAttributesClass", "volumeattributesclasses", namespaced=False, versions=(STORAGE_V1,), definition=STORAGE,
    short_names=("vac",), store_hooks="storage", printer="volumeattributesclass", returns_deleted=True,
)

KINDS = (CSI_NODE, CSI_DRIVER, STORAGE_CLASS, CSI_STORAGE_CAPACITY, VOLUME_ATTACHMENT, VOLUME_ATTRIBUTES_CLASS)
