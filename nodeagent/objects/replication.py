"""ReplicationControllers: upstream's defaulting (SetObjectDefaults_ReplicationController: the
selector and the labels from the template's labels, one replica, the pod template's defaults)
and ValidateReplicationController(Update/StatusUpdate) (pkg/apis/core/validation).

Why next to objects/workloads.py and built on its template checks: an RC is the core group's
ReplicaSet with a map selector; its template is checked by the same pod parser (errors re-rooted
under spec.template) and upstream's RC rules differ only in the selector (a non-empty map, not
immutable) and the Required `spec.replicas`. Pure: no I/O; the clock is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects import workloads
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta
from nodeagent.store.selectors import from_label_selector
from nodeagent.util.clock import Clock

JSON = dict[str, Any]

EMPTY_STATUS: JSON = {"replicas": 0}
"""PrepareForCreate's zero status as upstream writes it (replicas is not omitempty)."""
STATUS_COUNTERS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration")


def set_defaults(obj: JSON) -> None:
    """SetObjectDefaults_ReplicationController, in place."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    template = spec.get("template")
    labels = ((template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None) or None
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        md = obj.setdefault("metadata", {})
        if not md.get("labels"):
            md["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        workloads.pod_spec_defaults(template["spec"])


def validate(obj: Mapping[str, Any], clock: Clock) -> None:
    """ValidateReplicationControllerSpec's checks, in the order kube-apiserver reports them."""
    errs = Errors()
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    selector = spec.get("selector")
    if not isinstance(selector, Mapping) or not selector:
        errs.append(meta.required("spec.selector"))
        parsed = None
    else:
        errs.check(meta.check_labels, "spec.selector", selector)
        parsed = from_label_selector({"matchLabels": dict(selector)}, "spec.selector")
    workloads.check_template(errs, obj, spec.get("template"), "spec.template", clock, parsed,
                             owner="ReplicationController", deadline=True)
    # kube-apiserver 1.37 reports these from declarative validation, after the hand-written
    # checks, in the struct's field order (replicas, then minReadySeconds)
    if spec.get("replicas") is None:
        errs.append(meta.required("spec.replicas"))
    else:
        workloads.check_nonnegative(errs, spec.get("replicas"), "spec.replicas")
    workloads.check_nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
    errs.raise_all()


def validate_status(obj: Mapping[str, Any]) -> None:
    """ValidateReplicationControllerStatus: non-negative counters, each at most the one before."""
    errs = Errors()
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return
    for key in STATUS_COUNTERS:
        workloads.check_nonnegative(errs, status.get(key), f"status.{key}")
    counts = {k: int(status.get(k) or 0) for k in STATUS_COUNTERS}
    msg = "cannot be greater than status.replicas"
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if counts[key] > counts["replicas"]:
            errs.append(meta.invalid(f"status.{key}", counts[key], msg))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(meta.invalid("status.availableReplicas", counts["availableReplicas"],
                                 "cannot be greater than readyReplicas"))
    errs.raise_all()
