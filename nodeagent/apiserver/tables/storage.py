"""Server-side printers of the storage.k8s.io/v1 kinds: CSINode, CSIDriver, StorageClass,
CSIStorageCapacity, VolumeAttachment.

Columns, cells and the column descriptions follow k8s.io/kubernetes pkg/printers/internalversion
(printCSINode, printCSIDriver, printStorageClass, printCSIStorageCapacity, printVolumeAttachment),
fed the object as stored, which is the internal type's shape for these single-version kinds.
A list of StorageClasses marks its effective default `(default)` as printStorageClassList does.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodeagent.apiserver.tables.common import (
    AGE_COLUMN,
    NAME_COLUMN,
    Cells,
    Printer,
    age,
    column,
    get,
    items,
    name_of,
    parse_time,
    text,
)

_CSIDRIVER_DOCS = {
    'AttachRequired': ('boolean',
        'attachRequired indicates this CSI volume driver requires an attach operation (because it '
        'implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach '
        'controller should call the attach volume interface which checks the volumeattachment status '
        'and waits until the volume is attached before proceeding to mounting. The CSI '
        'external-attacher coordinates with CSI volume driver and updates the volumeattachment '
        'status when the attach operation is complete. If the value is specified to false, the '
        'attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis '
        'field is immutable.'),
    'PodInfoOnMount': ('boolean',
        'podInfoOnMount indicates this CSI volume driver requires additional pod information (like '
        'podName, podUID, etc.) during mount operations, if set to true. If set to false, pod '
        'information will not be passed on mount. Default is false.\n\nThe CSI driver specifies '
        'podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as '
        'VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for '
        'parsing and validating the information passed in as VolumeContext.\n\nThe following '
        'VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but '
        'the prefix will be used. "csi.storage.k8s.io/pod.name": pod.Name '
        '"csi.storage.k8s.io/pod.namespace": pod.Namespace "csi.storage.k8s.io/pod.uid": '
        'string(pod.UID) "csi.storage.k8s.io/ephemeral": "true" if the volume is an ephemeral inline '
        'volume\n                                defined by a CSIVolumeSource, otherwise '
        '"false"\n\n"csi.storage.k8s.io/ephemeral" is a new feature in Kubernetes 1.16. It is only '
        'required for drivers which support both the "Persistent" and "Ephemeral" '
        'VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As '
        "Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed "
        'on such a cluster and the deployment determines which mode that is, for example via a '
        'command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and '
        'now is mutable.'),
    'StorageCapacity': ('boolean',
        'storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the '
        'storage capacity that the driver deployment will report by creating CSIStorageCapacity '
        'objects with capacity information, if set to true.\n\nThe check can be enabled immediately '
        'when deploying a driver. In that case, provisioning new volumes with late binding will '
        'pause until the driver deployment has published some suitable CSIStorageCapacity '
        'object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can '
        'be flipped later when storage capacity information has been published.\n\nThis field was '
        'immutable in Kubernetes <= 1.22 and now is mutable.'),
    'TokenRequests': ('string',
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting "
        'volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in '
        'the CSI NodePublishVolume calls. The CSI driver should parse and validate the following '
        'VolumeContext: "csi.storage.k8s.io/serviceAccount.tokens": {\n  "<audience>": {\n    "token": '
        '<token>,\n    "expirationTimestamp": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: '
        'Audience in each TokenRequest should be different and at most one token is empty string. To '
        'receive a new token after expiry, RequiresRepublish can be used to trigger '
        'NodePublishVolume periodically.'),
    'RequiresRepublish': ('boolean',
        'requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically '
        'called to reflect any possible change in the mounted volume. This field defaults to '
        'false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to '
        'NodePublishVolume should only update the contents of the volume. New mount points will not '
        'be seen by a running container.'),
    'Modes': ('string',
        'volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The '
        'default if the list is empty is "Persistent", which is the usage defined by the CSI '
        'specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode '
        'is "Ephemeral". In this mode, volumes are defined inline inside the pod spec with '
        'CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to '
        'be aware of this because it is only going to get a NodePublishVolume call for such a '
        'volume.\n\nFor more information about implementing this mode, see '
        'https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one '
        'or more of these modes and more modes may be added in the future.\n\nThis field is beta. This '
        'field is immutable.'),
}
_STORAGECLASS_DOCS = {
    'Provisioner': ('string', 'provisioner indicates the type of the provisioner.'),
    'ReclaimPolicy': ('string',
        'reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of '
        'this storage class. Defaults to Delete.'),
    'VolumeBindingMode': ('string',
        'volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  '
        'When unset, VolumeBindingImmediate is used. This field is only honored by servers that '
        'enable the VolumeScheduling feature.'),
    'AllowVolumeExpansion': ('string', 'allowVolumeExpansion shows whether the storage class allow volume expand.'),
}
_CAPACITY_DOCS = {
    'StorageClassName': ('string',
        'storageClassName represents the name of the StorageClass that the reported capacity applies '
        'to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS '
        'subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and '
        'should be removed by its creator. This field is immutable.'),
    'Capacity': ('string',
        'capacity is the value reported by the CSI driver in its GetCapacityResponse for a '
        'GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe '
        'semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the '
        'storage that can be used to provision volumes. If not set, that information is currently '
        'unavailable.'),
}
_ATTACHMENT_DOCS = {
    'Attacher': ('string',
        'attacher indicates the name of the volume driver that MUST handle this request. This is the '
        'name returned by GetPluginName().'),
    'PV': ('string', 'persistentVolumeName represents the name of the persistent volume to attach.'),
    'Node': ('string', 'nodeName represents the node that the volume should be attached to.'),
    'Attached': ('boolean',
        'attached indicates the volume is successfully attached. This field must only be set by the '
        'entity completing the attach operation, i.e. the external-attacher.'),
}

_CSINODE_COLUMNS = (
    NAME_COLUMN,
    column("Drivers", "Drivers indicates the number of CSI drivers registered on the node", type_="integer"),
    AGE_COLUMN,
)


def _csinode_cells(o: Mapping[str, Any], now: float) -> Cells:
    return [name_of(o), len(items(o, "spec", "drivers")), age(o, now)]


def _columns(docs: Mapping[str, tuple[str, str]], *, with_age: bool = True) -> tuple[dict[str, Any], ...]:
    cols = [column(name, desc, type_=typ) for name, (typ, desc) in docs.items()]
    return (NAME_COLUMN, *cols, *((AGE_COLUMN,) if with_age else ()))


def _flag(o: Mapping[str, Any], key: str, default: bool) -> bool:
    value = get(o, "spec", key)
    return default if value is None else bool(value)


def _csidriver_cells(o: Mapping[str, Any], now: float) -> Cells:
    tokens = get(o, "spec", "tokenRequests")
    audiences = "<unset>" if tokens is None else ",".join(str(t.get("audience") or "") for t in tokens)
    modes = ",".join(str(m) for m in items(o, "spec", "volumeLifecycleModes")) or "<none>"
    return [name_of(o), _flag(o, "attachRequired", True), _flag(o, "podInfoOnMount", False),
            _flag(o, "storageCapacity", False), audiences, _flag(o, "requiresRepublish", False), modes, age(o, now)]


DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")


def effective_default_class(classes: Sequence[Mapping[str, Any]]) -> str:
    """getEffectiveDefaultStorageClass: of the classes annotated default, the newest; on a tie the
    first by name. "" when none is."""
    best: tuple[float, str] | None = None
    for sc in classes:
        annotations = get(sc, "metadata", "annotations") or {}
        if not any(annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS):
            continue
        created, name = parse_time(get(sc, "metadata", "creationTimestamp")) or 0.0, name_of(sc)
        if best is None or created > best[0] or (created == best[0] and name < best[1]):
            best = (created, name)
    return best[1] if best else ""


def _storageclass_list(classes: Sequence[Mapping[str, Any]]) -> Callable[[Mapping[str, Any], float], Cells]:
    default = effective_default_class(classes)

    def cells(o: Mapping[str, Any], now: float) -> Cells:
        row = _storageclass_cells(o, now)
        if default and name_of(o) == default:
            row[0] = f"{row[0]} (default)"
        return row

    return cells


def _storageclass_cells(o: Mapping[str, Any], now: float) -> Cells:
    return [name_of(o), text(o, "provisioner"), text(o, "reclaimPolicy") or "Delete",
            text(o, "volumeBindingMode") or "Immediate", bool(get(o, "allowVolumeExpansion")), age(o, now)]


def _capacity_cells(o: Mapping[str, Any], now: float) -> Cells:
    capacity = get(o, "capacity")
    return [name_of(o), text(o, "storageClassName"), "<unset>" if capacity is None else str(capacity)]


def _attachment_cells(o: Mapping[str, Any], now: float) -> Cells:
    return [name_of(o), text(o, "spec", "attacher"), text(o, "spec", "source", "persistentVolumeName"),
            text(o, "spec", "nodeName"), bool(get(o, "status", "attached")), age(o, now)]


_VAC_COLUMNS = (
    NAME_COLUMN,
    column("DriverName", "driverName is the name of the CSI driver This field is immutable."),
    AGE_COLUMN,
)


def _vac_cells(o: Mapping[str, Any], now: float) -> Cells:
    return [name_of(o), text(o, "driverName"), age(o, now)]


PRINTERS: dict[str, Printer] = {
    "volumeattributesclass": Printer(_VAC_COLUMNS, _vac_cells),
    "csidriver": Printer(_columns(_CSIDRIVER_DOCS), _csidriver_cells),
    "storageclass": Printer(_columns(_STORAGECLASS_DOCS), _storageclass_cells, for_list=_storageclass_list),
    "csistoragecapacity": Printer(_columns(_CAPACITY_DOCS, with_age=False), _capacity_cells),
    "volumeattachment": Printer(_columns(_ATTACHMENT_DOCS), _attachment_cells),
    "csinode": Printer(_CSINODE_COLUMNS, _csinode_cells),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
