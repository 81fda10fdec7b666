"""PersistentVolumes and PersistentVolumeClaims: upstream's defaulting (SetDefaults_PersistentVolume,
SetDefaults_PersistentVolumeClaim(Spec), SetDefaults_HostPathVolumeSource) and the essentials of
ValidatePersistentVolume / ValidatePersistentVolumeClaim(Update) (pkg/apis/core/validation), as
store hooks so every writer is checked.

Why these checks: the real kube-scheduler's volume plugins and kube-controller-manager's
persistent-volume binder read these objects; a volume without a source or a claim without a
storage request would break them, as upstream refuses them. What is checked: access modes,
capacity (storage only, positive), reclaim policy, volume mode, exactly one volume source, local
volumes' node affinity, storage class names; a claim's access modes, storage request, volume
mode, storage class; immutability of a claim's spec (but a first volumeName, and storage
requests of a bound claim) and of a volume's source. Not checked (difference from upstream):
the per-source field rules of the legacy in-tree sources (kept as written), and the immutable
spec's error carries no Go diff of the two specs. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta
from nodeagent.util import quantity

JSON = dict[str, Any]

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
VOLUME_MODES = ("Block", "Filesystem")
SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
           "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
           "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi")
"""The volume sources, in the order upstream's ValidatePersistentVolumeSpec counts them."""
_SOURCE_PATH = {"cephfs": "cephFS"}  # upstream's field path names this one differently
NOT_POSITIVE = "must be greater than zero"


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def default_volume(obj: JSON) -> JSON:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        if not spec.get("persistentVolumeReclaimPolicy"):
            spec["persistentVolumeReclaimPolicy"] = "Retain"
        if spec.get("volumeMode") is None:
            spec["volumeMode"] = "Filesystem"
        host = spec.get("hostPath")
        if isinstance(host, dict) and host.get("type") is None:
            host["type"] = ""
    status = obj.setdefault("status", {})
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Pending"
    return obj


def default_claim(obj: JSON) -> JSON:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    status = obj.setdefault("status", {})
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Pending"
    return obj


def _access_modes(errs: Errors, modes: Any, path: str, required_detail: str) -> None:
    if not modes:
        errs.append(meta.required(path, required_detail))
        return
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(meta.not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errs.append(meta.forbidden(path, "may not use ReadWriteOncePod with other access modes"))


def _positive(errs: Errors, path: str, raw: Any) -> None:
    try:
        amount = quantity.parse(raw)
    except quantity.QuantityError:
        errs.append(meta.invalid(path, raw, "must be a valid quantity"))
        return
    if amount <= 0:
        errs.append(meta.invalid(path, str(raw), NOT_POSITIVE))


def validate_volume(obj: JSON) -> None:
    """ValidatePersistentVolume (not inline): the checks named in the module docstring."""
    errs = Errors()
    md = _dict(obj.get("metadata"))
    errs.check(meta.check_dns_subdomain, "metadata.name", str(md.get("name") or ""))
    spec = _dict(obj.get("spec"))
    _access_modes(errs, spec.get("accessModes"), "spec.accessModes", "")
    capacity = _dict(spec.get("capacity"))
    if not capacity:
        errs.append(meta.required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        # a capacity left out is Go's nil map, which field.NotSupported prints as null
        shown = "null" if spec.get("capacity") is None else _go_map(capacity)
        errs.append(ValidationError("spec.capacity", f"Unsupported value: {shown}: supported "
                                         'values: "storage"'))
    for name, raw in capacity.items():
        _positive(errs, f"spec.capacity[{name}]", raw)
    policy = spec.get("persistentVolumeReclaimPolicy") or ""
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(meta.not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    count = 0
    for source in SOURCES:
        if spec.get(source) is None:
            continue
        if count:
            errs.append(meta.forbidden(f"spec.{_SOURCE_PATH.get(source, source)}",
                                       "may not specify more than 1 volume type"))
            continue
        count += 1
        if source == "local":
            _local(errs, _dict(spec["local"]), spec)
        elif source == "hostPath":
            path = _dict(spec["hostPath"]).get("path")
            if not path:
                errs.append(meta.required("spec.hostPath.path"))
        elif source == "csi":
            csi = _dict(spec["csi"])
            if not csi.get("driver"):
                errs.append(meta.required("spec.csi.driver"))
            if not csi.get("volumeHandle"):
                errs.append(meta.required("spec.csi.volumeHandle"))
    if count == 0:
        errs.append(meta.required("spec", "must specify a volume type"))
    if spec.get("persistentVolumeReclaimPolicy") == "Recycle" and _dict(spec.get("hostPath")).get("path") == "/":
        errs.append(meta.forbidden("spec.persistentVolumeReclaimPolicy", "may not be 'recycle' for a hostPath "
                                   "mount of '/'"))
    _storage_class(errs, spec.get("storageClassName"), "spec.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(meta.not_supported("spec.volumeMode", mode, VOLUME_MODES))
    errs.raise_all()


def _go_map(values: Mapping[str, Any]) -> str:
    """A ResourceList as field.NotSupported prints it (encoding/json: keys sorted, quantities as strings)."""
    inner = ",".join(f'"{k}":"{values[k]}"' for k in sorted(values))
    return "{" + inner + "}"


def _local(errs: Errors, local: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    path = local.get("path")
    if not path:
        errs.append(meta.required("spec.local.path"))
    if spec.get("nodeAffinity") is None:
        errs.append(meta.required("spec.nodeAffinity", "Local volume requires node affinity"))


def _storage_class(errs: Errors, name: Any, path: str) -> None:
    if name:
        errs.check(meta.check_dns_subdomain, path, str(name))


def validate_volume_update(new: JSON, old: JSON) -> None:
    """ValidatePersistentVolumeUpdate: the source is immutable, and so is the volume mode."""
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    errs = Errors()
    if {k: spec.get(k) for k in SOURCES} != {k: old_spec.get(k) for k in SOURCES}:
        errs.append(meta.forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after "
                                   "creation"))
    if spec.get("volumeMode") != old_spec.get("volumeMode"):
        errs.append(meta.invalid("spec.volumeMode", spec.get("volumeMode"), "field is immutable"))
    errs.raise_all()


def validate_claim(obj: JSON) -> None:
    """ValidatePersistentVolumeClaim: the checks named in the module docstring."""
    errs = Errors()
    md = _dict(obj.get("metadata"))
    errs.check(meta.check_dns_subdomain, "metadata.name", str(md.get("name") or ""))
    spec = _dict(obj.get("spec"))
    _access_modes(errs, spec.get("accessModes"), "spec.accessModes", "at least 1 access mode is required")
    requests = _dict(_dict(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        errs.append(meta.required("spec.resources[storage]"))
    else:
        _positive(errs, "spec.resources[storage]", requests["storage"])
    _storage_class(errs, spec.get("storageClassName"), "spec.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(meta.not_supported("spec.volumeMode", mode, VOLUME_MODES))
    errs.raise_all()


def validate_claim_update(new: JSON, old: JSON) -> None:
    """ValidatePersistentVolumeClaimUpdate: the spec is immutable but a first volumeName and, on a
    bound claim, the storage request (which may not shrink) and volumeAttributesClassName."""
    spec, old_spec = dict(_dict(new.get("spec"))), dict(_dict(old.get("spec")))
    if not old_spec.get("volumeName") and "volumeName" in spec:  # binding: a first volumeName may be set
        old_spec["volumeName"] = spec["volumeName"]
    bound = _dict(new.get("status")).get("phase") == "Bound"
    errs = Errors()
    if bound:
        for s in (spec, old_spec):
            s.pop("volumeAttributesClassName", None)
        new_size = _dict(_dict(spec.get("resources")).get("requests")).get("storage")
        old_size = _dict(_dict(old_spec.get("resources")).get("requests")).get("storage")
        spec["resources"] = old_spec.get("resources")
        if new_size is not None and old_size is not None and quantity.parse(new_size) < quantity.parse(old_size):
            errs.append(meta.forbidden("spec.resources.requests.storage", "field can not be less than previous value"))
    if spec != old_spec:
        errs.append(meta.forbidden("spec", "spec is immutable after creation except resources.requests and "
                                   "volumeAttributesClassName for bound claims"))
    errs.raise_all()


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {
        "PersistentVolume": {"default": default_volume, "validate": validate_volume,
                             "validate_update": validate_volume_update},
        "PersistentVolumeClaim": {"default": default_claim, "validate": validate_claim,
                                  "validate_update": validate_claim_update},
    }
