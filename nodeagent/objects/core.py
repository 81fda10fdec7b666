"""Admission for ResourceQuota and Event: the essentials of upstream's ValidateResourceQuota and
ValidateEvent (pkg/apis/core/validation), as store hooks so every writer is checked.

Why: these kinds had no hooks, so anything was stored. A quota with `spec.hard: "x"` was
accepted and then broke the quota evaluator for every claim of its namespace, and a name
written as a number (`name: 12345` in YAML) was stored as a number, which later broke listing.
Errors name the field path with apimachinery's wording. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects.pod import node_allocatable_status, status_checks
from nodeagent.store import validation as meta
from nodeagent.util import quantity

JSON = dict[str, Any]

QUOTA_SCOPES = (
    "BestEffort",
    "CrossNamespacePodAffinity",
    "NotBestEffort",
    "NotTerminating",
    "PriorityClass",
    "Terminating",
    "VolumeAttributesClass",
)
EVENT_REASON_MAX = 128  # upstream's ReasonLengthLimit
EVENT_MESSAGE_MAX = 1024  # upstream's NoteLengthLimit for events.k8s.io; core events are cut at it too


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise meta.invalid(path, value, f"must be an object, not {meta.go_type(value)}")
    return value


def _string(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise meta.invalid(path, value, f"must be a string, not {meta.go_type(value)}")
    return value


def check_metadata_types(obj: Mapping[str, Any]) -> None:
    """metadata.name, generateName and namespace are strings (a YAML `12345` is a number)."""
    md = _object(obj.get("metadata"), "metadata")
    for attr in ("name", "generateName", "namespace"):
        _string(md.get(attr), f"metadata.{attr}")


def _resource_list(value: Any, path: str) -> None:
    """A ResourceList: qualified resource names mapped to non-negative quantities."""
    for name, raw in _object(value, path).items():
        meta.check_qualified_name(path, str(name))
        try:
            amount = quantity.parse(raw)
        except quantity.QuantityError:
            raise meta.invalid(f"{path}[{name}]", raw, "must be a valid quantity") from None
        if amount < 0:
            raise meta.invalid(f"{path}[{name}]", raw, "must be greater than or equal to 0")


def validate_resource_quota(obj: JSON) -> JSON:
    """ValidateResourceQuota: spec.hard, spec.scopes, spec.scopeSelector's shape, status."""
    check_metadata_types(obj)
    spec = _object(obj.get("spec"), "spec")
    _resource_list(spec.get("hard"), "spec.hard")
    scopes = spec.get("scopes")
    if scopes is not None and not isinstance(scopes, list):
        raise meta.invalid("spec.scopes", scopes, f"must be a list, not {meta.go_type(scopes)}")
    for i, scope in enumerate(scopes or ()):
        if scope not in QUOTA_SCOPES:
            raise meta.not_supported(f"spec.scopes[{i}]", scope, QUOTA_SCOPES)
    selector = _object(spec.get("scopeSelector"), "spec.scopeSelector")
    exprs = selector.get("matchExpressions")
    if exprs is not None and not isinstance(exprs, list):
        raise meta.invalid("spec.scopeSelector.matchExpressions", exprs, "must be a list")
    for i, expr in enumerate(exprs or ()):
        scope = _object(expr, f"spec.scopeSelector.matchExpressions[{i}]").get("scopeName")
        if scope not in QUOTA_SCOPES:
            raise meta.not_supported(f"spec.scopeSelector.matchExpressions[{i}].scopeName", scope, QUOTA_SCOPES)
    status = _object(obj.get("status"), "status")
    _resource_list(status.get("hard"), "status.hard")
    _resource_list(status.get("used"), "status.used")
    return obj


def validate_event(obj: JSON) -> JSON:
    """ValidateEvent essentials: typed fields, the involved object in the event's namespace, limits."""
    check_metadata_types(obj)
    involved = _object(obj.get("involvedObject", obj.get("regarding")), "involvedObject")
    for attr in ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath"):
        _string(involved.get(attr), f"involvedObject.{attr}")
    ns = (obj.get("metadata") or {}).get("namespace") or "default"
    involved_ns = involved.get("namespace") or ""
    if involved_ns and involved_ns != ns:
        raise meta.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    reason = _string(obj.get("reason"), "reason")
    if len(reason) > EVENT_REASON_MAX:
        raise meta.invalid("reason", reason, f"can have at most {EVENT_REASON_MAX} characters")
    for attr in ("message", "note", "type", "action", "reportingController", "reportingComponent"):
        _string(obj.get(attr), attr)
    count = obj.get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
        raise meta.invalid("count", count, "must be an integer")
    return obj


def hooks(gates: Mapping[str, bool] | None = None) -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks (see resource.hooks); the
    pod status hook follows DRANodeAllocatableResources."""
    node_allocatable = bool((gates or {}).get(node_allocatable_status.GATE, False))

    def pod_status(obj: dict[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
        return status_checks.admit_status(obj, old, node_allocatable=node_allocatable)

    return {
        "ResourceQuota": {"default": validate_resource_quota},
        "Event": {"default": validate_event},
        "Pod": {"default_status": pod_status},
    }

