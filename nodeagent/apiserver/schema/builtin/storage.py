"""Schemas of the storage.k8s.io/v1 kinds: CSINode, CSIDriver, StorageClass, CSIStorageCapacity,
VolumeAttachment (k8s.io/api storage/v1 types.go).

Why apart: one API group under its own package name; the scheduler's volume plugins read these,
nodeagent itself attaches no volumes, so they are served as data with upstream's validation.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    i32,
    kind,
    lmap,
    obj,
    ref,
    s,
    strs,
)
from nodeagent.apiserver.schema.model import Schema

SV1 = "io.k8s.api.storage.v1."


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
    }
