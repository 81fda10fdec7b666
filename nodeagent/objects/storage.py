"""Admission for the storage.k8s.io/v1 kinds: upstream's defaults (pkg/apis/storage/v1/defaults.go)
and the checks of pkg/apis/storage/validation (CSINode, CSIDriver, StorageClass,
CSIStorageCapacity, VolumeAttachment, VolumeAttributesClass and their updates), with its field paths
and wording, as store hooks so every writer is checked.

Why: the real kube-scheduler and CSI drivers read these objects (a CSINode's drivers give each
node's volume limits and topology keys); a malformed one the real kube-apiserver refuses would
reach them here. Differences from upstream, on purpose: the first error is reported, not the
whole list (as for every kind the store checks); Go's zero values that encoding/json writes
without omitempty are written where a client reads them (a CSINode's `status: {}`, a
VolumeAttachment's `status.attached: false`), not where they are null (`topologyKeys: null`); of a
VolumeAttachment's inlineVolumeSpec only the inline rules are checked (claimRef, capacity, csi,
access modes, reclaim policy), not the rest of ValidatePersistentVolumeSpec.
Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta
from nodeagent.util import quantity

JSON = dict[str, Any]

CSI_DRIVER_NAME_MAX = 63
CSI_NODE_ID_MAX = 256  # upstream's csiNodeIDMaxLength
NEGATIVE = "must be greater than or equal to 0"
IMMUTABLE = "field is immutable"


def too_long(path: str, limit: int) -> ValidationError:
    """field.TooLong: the value is omitted, the limit in bytes."""
    return ValidationError(path, f"Too long: may not be more than {limit} bytes")


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise meta.invalid(path, value, f"must be an object, not {meta.go_type(value)}")
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise meta.invalid(path, value, f"must be a list, not {meta.go_type(value)}")
    return value


def _string(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise meta.invalid(path, value, f"must be a string, not {meta.go_type(value)}")
    return value


def check_csi_driver_name(path: str, name: str) -> None:
    """ValidateCSIDriverName: required, at most 63 bytes, a DNS subdomain once lower-cased."""
    if not name:
        raise meta.required(path)
    if len(name) > CSI_DRIVER_NAME_MAX:
        raise too_long(path, CSI_DRIVER_NAME_MAX)
    try:
        meta.check_dns_subdomain(path, name.lower())
    except ValidationError as err:
        # the value in the message is the one written, not the lower-cased one
        raise ValidationError(path, err.detail.replace(meta.quote(name.lower()), meta.quote(name), 1)) from None


def _go_driver(driver: Mapping[str, Any]) -> str:
    """A CSINodeDriver as field.Invalid prints the internal Go struct: encoding/json of a type
    without json tags (Go field names, nil as null)."""
    allocatable = driver.get("allocatable")
    go = {
        "Name": driver.get("name") or "",
        "NodeID": driver.get("nodeID") or "",
        "TopologyKeys": driver.get("topologyKeys") or None,
        "Allocatable": None if allocatable is None else {"Count": allocatable.get("count")},
    }
    return json.dumps(go, separators=(",", ":"))


# --- CSINode -----------------------------------------------------------------------------------


def validate_csi_node(obj: JSON) -> JSON:
    """ValidateCSINode: every driver of spec.drivers (name, nodeID, allocatable, topology keys)."""
    if obj.get("status") is None:
        obj["status"] = {}  # a Go struct: encoding/json writes it, empty, even with omitempty
    spec = _object(obj.get("spec"), "spec")
    seen: set[str] = set()
    for i, raw in enumerate(_list(spec.get("drivers"), "spec.drivers")):
        path = f"spec.drivers[{i}]"
        driver = _object(raw, path)
        name = _string(driver.get("name"), f"{path}.name")
        check_csi_driver_name(f"{path}.name", name)
        node_id = _string(driver.get("nodeID"), f"{path}.nodeID")
        if not node_id:
            raise meta.required(f"{path}.nodeID")
        if len(node_id) > CSI_NODE_ID_MAX:
            raise meta.invalid(f"{path}.nodeID", node_id, f"must be {CSI_NODE_ID_MAX} characters or less")
        count = _object(driver.get("allocatable"), f"{path}.allocatable").get("count")
        if isinstance(count, int) and count < 0:
            raise meta.invalid(f"{path}.allocatable.count", count, NEGATIVE)
        if name in seen:
            raise meta.duplicate(f"{path}.name", name)
        seen.add(name)
        keys: set[str] = set()
        for key in _list(driver.get("topologyKeys"), f"{path}.topologyKeys"):
            key = _string(key, f"{path}.topologyKeys")
            if not key:
                raise meta.required(path)
            if key in keys:
                raise meta.duplicate(path, key)
            keys.add(key)
            meta.check_qualified_name(path, key)
    return obj


def validate_csi_node_update(new: JSON, old: JSON) -> None:
    """ValidateCSINodeUpdate: a driver already registered keeps all but its allocatable count
    (MutableCSINodeAllocatableCount is GA and locked on in v1.37)."""
    old_drivers = _list(_object(old.get("spec"), "spec").get("drivers"), "spec.drivers")
    new_drivers = _list(_object(new.get("spec"), "spec").get("drivers"), "spec.drivers")
    for before in old_drivers:
        for after in new_drivers:
            if before.get("name") != after.get("name"):
                continue
            a = {k: v for k, v in after.items() if k != "allocatable" and v not in (None, [])}
            b = {k: v for k, v in before.items() if k != "allocatable" and v not in (None, [])}
            if a != b:
                raise ValidationError("spec.drivers", f"Invalid value: {_go_driver({**after, 'allocatable': None})}: "
                                                      f"{IMMUTABLE}")


def _go(value: Any) -> str:
    """A value as field.Invalid prints a non-scalar: its JSON."""
    return json.dumps(value, separators=(",", ":"))


def check_label_selector(path: str, raw: Any) -> None:
    """metav1 ValidateLabelSelector: matchLabels, and each matchExpressions requirement."""
    selector = _object(raw, path)
    for key, value in _object(selector.get("matchLabels"), f"{path}.matchLabels").items():
        meta.check_qualified_name(f"{path}.matchLabels", str(key))
        meta.check_label_value(f"{path}.matchLabels", _string(value, f"{path}.matchLabels"))
    for i, req_raw in enumerate(_list(selector.get("matchExpressions"), f"{path}.matchExpressions")):
        rpath = f"{path}.matchExpressions[{i}]"
        req = _object(req_raw, rpath)
        op, values = req.get("operator"), _list(req.get("values"), f"{rpath}.values")
        if op in ("In", "NotIn"):
            if not values:
                raise meta.required(f"{rpath}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise meta.forbidden(f"{rpath}.values",
                                     "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        else:
            raise meta.invalid(f"{rpath}.operator", op or "", "not a valid selector operator")
        meta.check_qualified_name(f"{rpath}.key", _string(req.get("key"), f"{rpath}.key"))
        for j, value in enumerate(values):
            meta.check_label_value(f"{rpath}.values[{j}]", _string(value, f"{rpath}.values[{j}]"))


# --- CSIDriver ---------------------------------------------------------------------------------

FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Persistent", "Ephemeral")
TOKEN_MIN_SECONDS = 600
TOKEN_MAX_SECONDS = 1 << 32


def default_csi_driver(obj: JSON) -> JSON:
    """SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod and VolumeLimitScaling are on in v1.37)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                       ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                       ("seLinuxMount", False), ("preventPodSchedulingIfMissing", False)):
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    return obj


def validate_csi_driver(obj: JSON) -> JSON:
    """Defaults, then ValidateCSIDriver: the name is a CSI driver name, validateCSIDriverSpec."""
    obj = default_csi_driver(obj)
    name = _string(_object(obj.get("metadata"), "metadata").get("name"), "metadata.name")
    check_csi_driver_name("metadata.name", name)
    spec = _object(obj.get("spec"), "spec")
    # upstream's paths: "attachedRequired" (sic) for attachRequired
    for key, path in (("attachRequired", "spec.attachedRequired"), ("podInfoOnMount", "spec.podInfoOnMount"),
                      ("storageCapacity", "spec.storageCapacity")):
        if spec.get(key) is None:
            raise meta.required(path)
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        raise meta.not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES)
    audiences: set[str] = set()
    tokens = _list(spec.get("tokenRequests"), "spec.tokenRequests")
    for i, raw in enumerate(tokens):
        path = f"spec.tokenRequests[{i}]"
        token = _object(raw, path)
        audience = _string(token.get("audience"), f"{path}.audience")
        if audience in audiences:
            raise meta.duplicate(f"{path}.audience", audience)
        audiences.add(audience)
        seconds = token.get("expirationSeconds")
        if isinstance(seconds, int) and seconds < TOKEN_MIN_SECONDS:
            raise meta.invalid(f"{path}.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
        if isinstance(seconds, int) and seconds > TOKEN_MAX_SECONDS:
            raise meta.invalid(f"{path}.expirationSeconds", seconds,
                               "may not specify a duration larger than 2^32 seconds")
    for mode in _list(spec.get("volumeLifecycleModes"), "spec.volumeLifecycleModes"):
        if mode not in LIFECYCLE_MODES:
            raise ValidationError("spec.volumeLifecycleModes", f"Unsupported value: {meta.quote(mode)}: "
                                  "supported values: " + ", ".join(meta.quote(m) for m in LIFECYCLE_MODES))
    if spec.get("seLinuxMount") is None:
        raise meta.required("spec.seLinuxMount")
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if isinstance(period, int) and period < 10:
        raise meta.invalid("spec.nodeAllocatableUpdatePeriodSeconds", period,
                           "must be greater than or equal to 10 seconds")
    in_secrets = spec.get("serviceAccountTokenInSecrets")
    if in_secrets is not None and not tokens:
        raise meta.invalid("spec.serviceAccountTokenInSecrets", in_secrets,
                           "serviceAccountTokenInSecrets is set but no tokenRequests are specified")
    if spec.get("preventPodSchedulingIfMissing") is None:
        raise meta.required("spec.preventPodSchedulingIfMissing")
    return obj


def validate_csi_driver_update(new: JSON, old: JSON) -> None:
    """ValidateCSIDriverUpdate: attachRequired (path `spec.attachedRequired`, sic) and
    volumeLifecycleModes are immutable."""
    spec, before = _object(new.get("spec"), "spec"), _object(old.get("spec"), "spec")
    if spec.get("attachRequired") != before.get("attachRequired"):
        raise meta.invalid("spec.attachedRequired", spec.get("attachRequired"), IMMUTABLE)
    if (spec.get("volumeLifecycleModes") or None) != (before.get("volumeLifecycleModes") or None):
        raise ValidationError("spec.volumeLifecycleModes",
                              f"Invalid value: {_go(spec.get('volumeLifecycleModes') or None)}: {IMMUTABLE}")


# --- StorageClass ------------------------------------------------------------------------------

RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * 1024


def validate_storage_class(obj: JSON) -> JSON:
    """SetDefaults_StorageClass, then ValidateStorageClass: provisioner, parameters, reclaim policy,
    binding mode, allowed topologies' shape (keys, values, no duplicate key or term)."""
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")
    if obj["reclaimPolicy"] is None:
        obj["reclaimPolicy"] = "Delete"
    if obj["volumeBindingMode"] is None:
        obj["volumeBindingMode"] = "Immediate"
    # every error listed, as ValidateStorageClass appends them; provisioner's Required is covered by
    # v1.37's declarative validation, whose errors come after the hand-written ones
    errs, declarative = Errors(), Errors()
    provisioner = _string(obj.get("provisioner"), "provisioner")
    if not provisioner:
        declarative.append(meta.required("provisioner"))
    else:
        errs.check(meta.check_qualified_name, "provisioner", provisioner.lower())
    errs.check(lambda: _check_parameters(obj, allow_empty=True))
    policy = obj.get("reclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(meta.not_supported("reclaimPolicy", policy, RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode not in BINDING_MODES:
        errs.append(meta.not_supported("volumeBindingMode", mode, BINDING_MODES))
    errs.check(_check_topologies, obj)
    errs.extend(declarative)
    errs.raise_all()
    return obj


def _check_topologies(obj: Mapping[str, Any]) -> None:
    """validateAllowedTopologies: each term's keys qualified names, values given, no duplicate."""
    terms: list[dict[str, frozenset[str]]] = []
    for i, raw in enumerate(_list(obj.get("allowedTopologies"), "allowedTopologies")):
        path = f"allowedTopologies[{i}]"
        exprs: dict[str, frozenset[str]] = {}
        for j, req_raw in enumerate(_list(_object(raw, path).get("matchLabelExpressions"),
                                          f"{path}.matchLabelExpressions")):
            rpath = f"{path}.matchLabelExpressions[{j}]"
            req = _object(req_raw, rpath)
            values = [_string(v, f"{rpath}.values") for v in _list(req.get("values"), f"{rpath}.values")]
            if not values:
                raise meta.required(f"{rpath}.values")
            for k, value in enumerate(values):
                if value in values[:k]:
                    raise meta.duplicate(f"{rpath}.values[{k}]", value)
            key = _string(req.get("key"), f"{rpath}.key")
            meta.check_qualified_name(f"{rpath}.key", key)
            if key in exprs:
                raise meta.duplicate(f"{rpath}.key", key)
            exprs[key] = frozenset(values)
        if exprs in terms:
            raise meta.duplicate(f"{path}.matchLabelExpressions", "")
        terms.append(exprs)


def _check_provisioner(obj: Mapping[str, Any], path: str) -> None:
    """validateProvisioner: required, and a qualified name once lower-cased (the error quotes the
    lower-cased value, as kube-apiserver's: `Invalid value: "bad_driver!"` for `Bad_Driver!`)."""
    provisioner = _string(obj.get(path), path)
    if not provisioner:
        raise meta.required(path)
    meta.check_qualified_name(path, provisioner.lower())


def _check_parameters(obj: Mapping[str, Any], *, allow_empty: bool) -> None:
    """validateParameters: at most 512 entries, no empty key, 256 KiB in all; at least one unless `allow_empty`."""
    params = _object(obj.get("parameters"), "parameters")
    if len(params) > MAX_PARAMETERS:
        raise too_long("parameters", MAX_PARAMETERS)
    if any(not k for k in params):
        raise meta.invalid("parameters", "", "field can not be empty.")
    if sum(len(k) + len(str(v)) for k, v in params.items()) > MAX_PARAMETERS_SIZE:
        raise too_long("parameters", MAX_PARAMETERS_SIZE)
    if not allow_empty and not params:
        raise meta.required("parameters", "must contain at least one key/value pair")


def validate_storage_class_update(new: JSON, old: JSON) -> None:
    """ValidateStorageClassUpdate: parameters, provisioner, reclaimPolicy, volumeBindingMode are immutable."""
    if (new.get("parameters") or None) != (old.get("parameters") or None):
        raise ValidationError("parameters", f"Invalid value: {_go(new.get('parameters') or None)}: {IMMUTABLE}")
    for key in ("provisioner", "reclaimPolicy", "volumeBindingMode"):
        if new.get(key) != old.get(key):
            raise meta.invalid(key, new.get(key), IMMUTABLE)


# --- CSIStorageCapacity ------------------------------------------------------------------------


def validate_csi_storage_capacity(obj: JSON) -> JSON:
    """ValidateCSIStorageCapacity: nodeTopology is a label selector, storageClassName a class name
    (DNS subdomain), capacity not negative."""
    check_label_selector("nodeTopology", obj.get("nodeTopology"))
    meta.check_dns_subdomain("storageClassName", _string(obj.get("storageClassName"), "storageClassName"))
    raw = obj.get("capacity")
    if raw is not None:
        try:
            amount = quantity.parse(raw)
        except quantity.QuantityError:
            raise meta.invalid("capacity", raw, "must be a valid quantity") from None
        if amount < 0:
            raise meta.invalid("capacity", raw, NEGATIVE)
    return obj


def validate_csi_storage_capacity_update(new: JSON, old: JSON) -> None:
    """ValidateCSIStorageCapacityUpdate: nodeTopology and storageClassName are immutable."""
    if (new.get("nodeTopology") or None) != (old.get("nodeTopology") or None):
        raise ValidationError("nodeTopology", f"Invalid value: {_go(new.get('nodeTopology'))}: {IMMUTABLE}")
    if new.get("storageClassName") != old.get("storageClassName"):
        raise meta.invalid("storageClassName", new.get("storageClassName"), IMMUTABLE)


# --- VolumeAttachment --------------------------------------------------------------------------

MAX_ATTACHMENT_METADATA = 256 * 1024
MAX_VOLUME_ERROR_MESSAGE = 1024
EXACTLY_ONE_SOURCE = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"


def validate_volume_attachment(obj: JSON) -> JSON:
    """ValidateVolumeAttachment: attacher is a CSI driver name, exactly one source, nodeName a
    node name, and the status' metadata size and errors."""
    spec = _object(obj.get("spec"), "spec")
    check_csi_driver_name("spec.attacher", _string(spec.get("attacher"), "spec.attacher"))
    source = _object(spec.get("source"), "spec.source")
    pv, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
    if pv is None and inline is None:
        raise meta.required("spec.source", EXACTLY_ONE_SOURCE)
    if pv is not None and inline is not None:
        raise meta.forbidden("spec.source", EXACTLY_ONE_SOURCE)
    if pv is not None and not _string(pv, "spec.source.persistentVolumeName"):
        raise meta.required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName")
    if inline is not None:
        _inline_volume_spec(_object(inline, "spec.source.inlineVolumeSpec"), "spec.source.inlineVolumeSpec")
    meta.check_dns_subdomain("spec.nodeName", _string(spec.get("nodeName"), "spec.nodeName"))
    status = _object(obj.get("status"), "status")
    if status.get("attached") is None:
        # `attached` has no omitempty: upstream always writes it, false until the attacher says so
        obj["status"] = status = {**status, "attached": False}
    md = _object(status.get("attachmentMetadata"), "status.attachmentMetadata")
    if sum(len(k) + len(str(v)) for k, v in md.items()) > MAX_ATTACHMENT_METADATA:
        raise too_long("status.attachmentMetadata", MAX_ATTACHMENT_METADATA)
    for which in ("attachError", "detachError"):
        err = _object(status.get(which), f"status.{which}")
        if len(_string(err.get("message"), f"status.{which}.message")) > MAX_VOLUME_ERROR_MESSAGE:
            raise too_long(f"status.{which}.message", MAX_VOLUME_ERROR_MESSAGE)
        code = err.get("errorCode")
        if isinstance(code, int) and code < 0:
            raise meta.invalid(f"status.{which}.errorCode", code, "must be between 0 and 2147483647, inclusive")
    if pv is not None:
        meta.check_dns_subdomain("spec.source.persistentVolumeName", str(pv))
    return obj


INLINE_ONLY = "may not be specified in the context of inline volumes"


def _inline_volume_spec(spec: Mapping[str, Any], path: str) -> None:
    """ValidatePersistentVolumeSpec's rules for an inline spec (validateInlinePersistentVolumeSpec):
    no claimRef, no capacity, a csi source, access modes, a reclaim policy of Retain when set."""
    if spec.get("claimRef") is not None:
        raise meta.forbidden(f"{path}.claimRef", INLINE_ONLY)
    if spec.get("capacity"):
        raise meta.forbidden(f"{path}.capacity", INLINE_ONLY)
    if spec.get("csi") is None:
        raise meta.required(f"{path}.csi", "has to be specified in the context of inline volumes")
    if not spec.get("accessModes"):
        raise meta.required(f"{path}.accessModes")
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy != "Retain":
        raise meta.forbidden(f"{path}.persistentVolumeReclaimPolicy",
                             "may only be Retain in the context of inline volumes")


def validate_volume_attachment_update(new: JSON, old: JSON) -> None:
    """ValidateVolumeAttachmentUpdate: the spec is immutable."""
    if new.get("spec") != old.get("spec"):
        raise ValidationError("spec", f"Invalid value: {_go_attachment_spec(new.get('spec') or {})}: {IMMUTABLE}")


def _go_attachment_spec(spec: Mapping[str, Any]) -> str:
    """The internal VolumeAttachmentSpec as encoding/json prints it (no json tags: Go names)."""
    source = spec.get("source") or {}
    # an inline spec is printed as its JSON (the internal type's Go names differ: a known gap in the text)
    return _go({"Attacher": spec.get("attacher") or "",
                "Source": {"PersistentVolumeName": source.get("persistentVolumeName"),
                           "InlineVolumeSpec": source.get("inlineVolumeSpec")},
                "NodeName": spec.get("nodeName") or ""})


# --- VolumeAttributesClass ---------------------------------------------------------------------


def validate_volume_attributes_class(obj: JSON) -> JSON:
    """ValidateVolumeAttributesClass: driverName as a StorageClass's provisioner, at least one parameter."""
    _check_provisioner(obj, "driverName")
    _check_parameters(obj, allow_empty=False)
    return obj


def validate_volume_attributes_class_update(new: JSON, old: JSON) -> None:
    """ValidateVolumeAttributesClassUpdate: driverName and parameters are immutable."""
    if new.get("driverName") != old.get("driverName"):
        raise meta.forbidden("driverName", "updates to driverName are forbidden.")
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        raise meta.forbidden("parameters", "updates to parameters are forbidden.")


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {
        "CSINode": {"default": validate_csi_node, "validate_update": validate_csi_node_update},
        "CSIDriver": {"default": validate_csi_driver, "validate_update": validate_csi_driver_update},
        "StorageClass": {"default": validate_storage_class, "validate_update": validate_storage_class_update},
        "CSIStorageCapacity": {"default": validate_csi_storage_capacity,
                               "validate_update": validate_csi_storage_capacity_update},
        "VolumeAttachment": {"default": validate_volume_attachment,
                             "validate_update": validate_volume_attachment_update},
        "VolumeAttributesClass": {"default": validate_volume_attributes_class,
                                  "validate_update": validate_volume_attributes_class_update},
    }
