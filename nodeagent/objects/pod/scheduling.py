"""Validation of scheduling constraints: a Pod's spec.nodeSelector, spec.affinity.nodeAffinity and
spec.tolerations, and a Node's taints, with the API server's field paths and messages
(corevalidation's ValidateNodeSelector, ValidatePreferredSchedulingTerms, ValidateTolerations
and validateNodeTaints).

Inter-pod affinity (podAffinity, podAntiAffinity) is accepted as any object and not checked:
the control plane's scheduler does not evaluate it (see nodeagent.controlplane.scheduler.placement).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects import common as rc
from nodeagent.store import validation as meta

NODE_AFFINITY = "spec.affinity.nodeAffinity"
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def check_scheduling(spec: Mapping[str, Any]) -> None:
    """Raise ValidationError naming the first bad field of the pod's scheduling constraints."""
    selector = spec.get("nodeSelector")
    if selector is not None:
        labels = rc.as_obj(selector, "spec.nodeSelector")
        for key, value in labels.items():
            if not isinstance(value, str):
                raise rc.type_error(f"spec.nodeSelector[{key}]", value, "string")
        meta.check_labels("spec.nodeSelector", dict(labels))
    affinity = rc.get_obj(spec, "affinity", "spec")
    if affinity is not None:
        rc.fields(affinity, "spec.affinity", ("nodeAffinity", "podAffinity", "podAntiAffinity"))
        node = rc.get_obj(affinity, "nodeAffinity", "spec.affinity")
        if node is not None:
            _check_node_affinity(node)
    for i, raw in enumerate(rc.get_list(spec, "tolerations", "spec")):
        check_toleration(f"spec.tolerations[{i}]", raw)


def _check_node_affinity(node: Mapping[str, Any]) -> None:
    rc.fields(node, NODE_AFFINITY, ("requiredDuringSchedulingIgnoredDuringExecution",
                                    "preferredDuringSchedulingIgnoredDuringExecution"))
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        rc.check_node_selector(f"{NODE_AFFINITY}.requiredDuringSchedulingIgnoredDuringExecution", required)
    preferred_path = f"{NODE_AFFINITY}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(rc.get_list(node, "preferredDuringSchedulingIgnoredDuringExecution", NODE_AFFINITY)):
        path = f"{preferred_path}[{i}]"
        term = rc.as_obj(raw, path)
        rc.fields(term, path, ("weight", "preference"))
        weight = rc.get_int(term, "weight", path)
        if weight is None or not 1 <= weight <= 100:
            got = weight if weight is not None else 0
            raise meta.invalid(rc.join(path, "weight"), got, "must be in the range 1-100")
        preference = rc.get_obj(term, "preference", path)
        if preference is None:
            raise meta.required(rc.join(path, "preference"))
        # one term, checked as a selector with that single term (same requirement rules)
        rc.check_node_selector(path, {"nodeSelectorTerms": [preference]})


def check_toleration(path: str, raw: object) -> None:
    tol = rc.as_obj(raw, path)
    rc.fields(tol, path, ("key", "operator", "value", "effect", "tolerationSeconds"))
    key = rc.get_str(tol, "key", path)
    operator = rc.get_str(tol, "operator", path)
    value = rc.get_str(tol, "value", path)
    effect = rc.get_str(tol, "effect", path)
    seconds = rc.get_int(tol, "tolerationSeconds", path)
    if key:
        meta.check_qualified_name(rc.join(path, "key"), key)
    if not key and operator != "Exists":
        raise meta.invalid(rc.join(path, "operator"), operator,
                           'operator must be Exists when `key` is empty, which means "match all values and all keys"')
    if seconds is not None and effect != "NoExecute":
        raise meta.invalid(rc.join(path, "effect"), effect,
                           "effect must be 'NoExecute' when `tolerationSeconds` is set")
    if operator in ("", "Equal"):
        if value:
            meta.check_label_value(rc.join(path, "value"), value)
    elif operator == "Exists":
        if value:
            raise meta.invalid(rc.join(path, "operator"), value, "value must be empty when `operator` is 'Exists'")
    else:
        raise meta.not_supported(rc.join(path, "operator"), operator, TOLERATION_OPERATORS)
    if effect and effect not in TAINT_EFFECTS:
        raise meta.not_supported(rc.join(path, "effect"), effect, TAINT_EFFECTS)


def check_taint(path: str, raw: object) -> dict[str, str]:
    """One node taint: key (qualified name), optional value (label value), effect; normalised."""
    taint = rc.as_obj(raw, path)
    rc.fields(taint, path, ("key", "value", "effect", "timeAdded"))
    key = rc.get_str(taint, "key", path)
    if not key:
        raise meta.required(rc.join(path, "key"))
    meta.check_qualified_name(rc.join(path, "key"), key)
    value = rc.get_str(taint, "value", path)
    if value:
        meta.check_label_value(rc.join(path, "value"), value)
    effect = rc.get_str(taint, "effect", path)
    if not effect:
        raise meta.required(rc.join(path, "effect"))
    if effect not in TAINT_EFFECTS:
        raise meta.not_supported(rc.join(path, "effect"), effect, TAINT_EFFECTS)
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out
