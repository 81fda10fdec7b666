"""Schemas of core/v1 Volume and its sources.

Why apart: the volume union is wide. The sources pods on a node really use (emptyDir,
hostPath, configMap, secret, projected, downwardAPI, persistentVolumeClaim, csi, ephemeral,
image) are spelled out; the legacy in-tree cloud and network sources are kept as
objects that preserve their fields, so they round-trip without being checked.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    CORE,
    arr,
    b,
    core,
    i32,
    i64,
    loose,
    meta,
    metadata,
    obj,
    qmap,
    qty,
    s,
    smap,
    strs,
)
from nodeagent.apiserver.schema.model import Schema

# Legacy sources: (field name, definition name) kept loose.
_LEGACY = (
    ("awsElasticBlockStore", "AWSElasticBlockStoreVolumeSource"),
    ("azureDisk", "AzureDiskVolumeSource"),
    ("azureFile", "AzureFileVolumeSource"),
    ("cephfs", "CephFSVolumeSource"),
    ("cinder", "CinderVolumeSource"),
    ("fc", "FCVolumeSource"),
    ("flexVolume", "FlexVolumeSource"),
    ("flocker", "FlockerVolumeSource"),
    ("gcePersistentDisk", "GCEPersistentDiskVolumeSource"),
    ("gitRepo", "GitRepoVolumeSource"),
    ("glusterfs", "GlusterfsVolumeSource"),
    ("iscsi", "ISCSIVolumeSource"),
    ("nfs", "NFSVolumeSource"),
    ("photonPersistentDisk", "PhotonPersistentDiskVolumeSource"),
    ("portworxVolume", "PortworxVolumeSource"),
    ("quobyte", "QuobyteVolumeSource"),
    ("rbd", "RBDVolumeSource"),
    ("scaleIO", "ScaleIOVolumeSource"),
    ("storageos", "StorageOSVolumeSource"),
    ("vsphereVolume", "VsphereVirtualDiskVolumeSource"),
)


def _items(desc: str) -> Schema:
    return arr(core("KeyToPath"), desc, atomic=True)


def volume_definitions() -> dict[str, Schema]:
    c = CORE
    sources: dict[str, Schema] = {
        "emptyDir": core("EmptyDirVolumeSource", "A scratch directory that lives as long as the pod."),
        "hostPath": core("HostPathVolumeSource", "A file or directory of the node."),
        "configMap": core("ConfigMapVolumeSource", "The keys of a ConfigMap as files."),
        "secret": core("SecretVolumeSource", "The keys of a Secret as files."),
        "projected": core("ProjectedVolumeSource", "Several sources merged into one directory."),
        "downwardAPI": core("DownwardAPIVolumeSource", "Fields of the pod as files."),
        "persistentVolumeClaim": core("PersistentVolumeClaimVolumeSource", "A PVC in the pod's namespace."),
        "csi": core("CSIVolumeSource", "An inline volume of a CSI driver."),
        "ephemeral": core("EphemeralVolumeSource", "A PVC created for and deleted with the pod."),
        "image": core("ImageVolumeSource", "The content of an OCI image or artifact."),
    }
    for field, name in _LEGACY:
        sources[field] = core(name, f"Legacy {field} volume source (kept as written).")
    out: dict[str, Schema] = {
        c + "Volume": obj("A named volume pods' containers can mount; exactly one source is set.",
                          {"name": s("Volume name, a DNS label unique in the pod."), **sources}, ["name"]),
        c + "EmptyDirVolumeSource": obj("A scratch directory.", {
            "medium": s("Storage medium: empty for the node's disk, or Memory for tmpfs."),
            "sizeLimit": qty("Most space the directory may use."),
        }),
        c + "HostPathVolumeSource": obj("A path of the node.", {
            "path": s("Path on the node."),
            "type": s("Expected type: DirectoryOrCreate, Directory, File, Socket, ..."),
        }, ["path"]),
        c + "KeyToPath": obj("Maps one key to a file path.", {
            "key": s("The key to project."),
            "path": s("Relative file path to write the key to."),
            "mode": i32("File mode bits, 0000 to 0777."),
        }, ["key", "path"]),
        c + "ConfigMapVolumeSource": obj("A ConfigMap as files.", {
            "name": s("ConfigMap name."),
            "items": _items("Only these keys, at these paths; all keys when empty."),
            "defaultMode": i32("Mode bits of the files; 0644 by default."),
            "optional": b("Whether the ConfigMap may be missing."),
        }),
        c + "SecretVolumeSource": obj("A Secret as files.", {
            "secretName": s("Secret name."),
            "items": _items("Only these keys, at these paths; all keys when empty."),
            "defaultMode": i32("Mode bits of the files; 0644 by default."),
            "optional": b("Whether the Secret may be missing."),
        }),
        c + "DownwardAPIVolumeSource": obj("Pod fields as files.", {
            "items": arr(core("DownwardAPIVolumeFile"), "The files.", atomic=True),
            "defaultMode": i32("Mode bits of the files; 0644 by default."),
        }),
        c + "DownwardAPIVolumeFile": obj("One file of pod information.", {
            "path": s("Relative file path."),
            "fieldRef": core("ObjectFieldSelector", "A pod field (metadata, labels, annotations)."),
            "resourceFieldRef": core("ResourceFieldSelector", "A container resource limit or request."),
            "mode": i32("File mode bits."),
        }, ["path"]),
        c + "ProjectedVolumeSource": obj("Sources projected together.", {
            "sources": arr(core("VolumeProjection"), "The sources.", atomic=True),
            "defaultMode": i32("Mode bits of the files; 0644 by default."),
        }),
        c + "VolumeProjection": obj("One projected source; exactly one field is set.", {
            "secret": core("SecretProjection", "Keys of a Secret."),
            "downwardAPI": core("DownwardAPIProjection", "Pod fields."),
            "configMap": core("ConfigMapProjection", "Keys of a ConfigMap."),
            "serviceAccountToken": core("ServiceAccountTokenProjection", "A bound service account token."),
            "clusterTrustBundle": core("ClusterTrustBundleProjection", "Certificates of ClusterTrustBundles."),
            "podCertificate": loose("A key and certificate issued for the pod (PodCertificateProjection)."),
        }),
        c + "SecretProjection": obj("Keys of a Secret to project.", {
            "name": s("Secret name."),
            "items": _items("Only these keys, at these paths."),
            "optional": b("Whether the Secret may be missing."),
        }),
        c + "ConfigMapProjection": obj("Keys of a ConfigMap to project.", {
            "name": s("ConfigMap name."),
            "items": _items("Only these keys, at these paths."),
            "optional": b("Whether the ConfigMap may be missing."),
        }),
        c + "DownwardAPIProjection": obj("Pod fields to project.", {
            "items": arr(core("DownwardAPIVolumeFile"), "The files.", atomic=True),
        }),
        c + "ServiceAccountTokenProjection": obj("A token of the pod's service account.", {
            "audience": s("Intended audience of the token."),
            "expirationSeconds": i64("Requested lifetime; 1 hour by default."),
            "path": s("Relative file path."),
        }, ["path"]),
        c + "ClusterTrustBundleProjection": obj("Certificates of ClusterTrustBundle objects.", {
            "name": s("A bundle by name."),
            "signerName": s("Bundles of this signer."),
            "labelSelector": meta("LabelSelector", "Bundles of the signer matching these labels."),
            "optional": b("Whether no matching bundle is acceptable."),
            "path": s("Relative file path."),
        }, ["path"]),
        c + "PersistentVolumeClaimVolumeSource": obj("A reference to a PVC.", {
            "claimName": s("PVC name."),
            "readOnly": b("Mount read-only."),
        }, ["claimName"]),
        c + "CSIVolumeSource": obj("An inline CSI volume.", {
            "driver": s("CSI driver name."),
            "readOnly": b("Mount read-only."),
            "fsType": s("Filesystem type, e.g. ext4."),
            "volumeAttributes": smap("Driver-specific attributes."),
            "nodePublishSecretRef": core("LocalObjectReference", "Secret passed to NodePublishVolume."),
        }, ["driver"]),
        c + "ImageVolumeSource": obj("An OCI image mounted as a volume.", {
            "reference": s("Image or artifact reference."),
            "pullPolicy": s("Always, Never or IfNotPresent."),
        }),
        c + "EphemeralVolumeSource": obj("A per-pod PVC.", {
            "volumeClaimTemplate": core("PersistentVolumeClaimTemplate", "Template of the PVC to create."),
        }),
        c + "PersistentVolumeClaimTemplate": obj("A PVC template.", {
            "metadata": metadata("Labels and annotations copied to the PVC."),
            "spec": core("PersistentVolumeClaimSpec", "The PVC spec."),
        }, ["spec"]),
        c + "PersistentVolumeClaimSpec": obj("What storage a claim asks for.", {
            "accessModes": strs("ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod."),
            "selector": meta("LabelSelector", "Volumes to consider binding."),
            "resources": core("VolumeResourceRequirements", "Minimum storage size."),
            "volumeName": s("Bind to this PersistentVolume."),
            "storageClassName": s("StorageClass to provision from."),
            "volumeMode": s("Filesystem or Block."),
            "dataSource": loose("Object to populate the volume from (TypedLocalObjectReference)."),
            "dataSourceRef": loose("Object to populate the volume from (TypedObjectReference)."),
            "volumeAttributesClassName": s("VolumeAttributesClass to use."),
        }),
        c + "VolumeResourceRequirements": obj("Storage amounts.", {
            "limits": qmap("Most storage allowed."),
            "requests": qmap("Least storage needed."),
        }),
        c + "LocalObjectReference": obj("Names an object in the same namespace.", {
            "name": s("Name of the referent."),
        }, map_type="atomic"),
    }
    for _field, name in _LEGACY:
        out[c + name] = loose(f"{name}: a legacy volume source, kept as written.")
    return out
