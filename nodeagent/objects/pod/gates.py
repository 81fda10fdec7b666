"""Pod scheduling gates (KEP-3521, GA): what the API server does with spec.schedulingGates.

Why: a gated pod must wait, and say so. kube-apiserver v1.37.2 (pkg/registry/core/pod strategy.go,
pkg/apis/core/validation validation.go) adds the PodScheduled=False SchedulingGated condition when
a gated pod is created, refuses a gate name that is not a qualified name or appears twice, a gated
pod created with a nodeName, and an update that adds or renames a gate (only deletions), while a
gated pod's nodeSelector and required node affinity may gain terms (no mutations or deletions).
The schedulers hold a gated pod back (the SchedulingGates PreEnqueue plugin), and a binding of one
is refused (registry.py). Pure: JSON objects in, ValidationErrors out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta

GATED_REASON = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
_SELECTOR_MSG = "only additions to spec.nodeSelector are allowed (no mutations or deletions)"


def gates_of(spec: Mapping[str, Any]) -> list[str]:
    """The gate names, in order (malformed entries as empty names)."""
    gates = spec.get("schedulingGates")
    if not isinstance(gates, list):
        return []
    return [str(g.get("name") or "") if isinstance(g, Mapping) else "" for g in gates]


def is_gated(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec")
    return isinstance(spec, Mapping) and bool(spec.get("schedulingGates"))


def add_gated_condition(pod: dict[str, Any]) -> None:
    """applySchedulingGatedCondition: a create's status of a gated pod says why it waits."""
    if not is_gated(pod):
        return
    status = pod.setdefault("status", {})
    conditions = status.get("conditions") or []
    if any(isinstance(c, Mapping) and c.get("type") == "PodScheduled" for c in conditions):
        return
    status["conditions"] = [*conditions, {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                          "lastTransitionTime": None, "reason": GATED_REASON,
                                          "message": GATED_MESSAGE}]


def create_errors(spec: Mapping[str, Any]) -> Errors:
    """gate_errors and ValidatePodCreate's nodeName rule."""
    errs = gate_errors(spec)
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(meta.forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errs


def gate_errors(spec: Mapping[str, Any]) -> Errors:
    """validateSchedulingGates: each a qualified name, none twice."""
    errs = Errors()
    seen: set[str] = set()
    for i, name in enumerate(gates_of(spec)):
        path = f"spec.schedulingGates[{i}]"
        errs.check(meta.check_qualified_name, path, name)
        if name in seen:
            errs.append(meta.duplicate(path, name))
        seen.add(name)
    return errs


def update_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> Errors:
    """validateOnlyDeletedSchedulingGates, and for a gated pod the nodeSelector and required node
    affinity rules (validateNodeSelectorMutation, validateNodeAffinityMutation)."""
    errs = gate_errors(new)
    new_gates = gates_of(new)
    if new_gates:
        added = {name: i for i, name in enumerate(new_gates)}
        for name in gates_of(old):
            added.pop(name, None)
        for name, i in added.items():
            errs.append(meta.forbidden(f"spec.schedulingGates[{i}].name",
                                       f"only deletion is allowed, but found new scheduling gate '{name}'"))
    if gates_of(old):
        new_sel, old_sel = _mapping(new.get("nodeSelector")), _mapping(old.get("nodeSelector"))
        if any(k not in new_sel or new_sel[k] != v for k, v in old_sel.items()):
            errs.append(ValidationError("spec.nodeSelector",
                                        f"Invalid value: {_go_json(new.get('nodeSelector'))}: {_SELECTOR_MSG}"))
        errs.extend(_affinity_errors(_required_terms(new), _required_terms(old)))
    return errs


def comparable(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """`new` with what ValidatePodUpdate munges before its whole-spec comparison: the gates (checked
    above), and for a gated pod its nodeSelector and node affinity (checked above) as `old` has them."""
    out = dict(new)
    _set(out, "schedulingGates", old)
    if gates_of(old):
        _set(out, "nodeSelector", old)
        new_aff, old_aff = _mapping(out.get("affinity")), _mapping(old.get("affinity"))
        if new_aff.get("nodeAffinity") != old_aff.get("nodeAffinity"):
            if "affinity" not in old and not (set(new_aff) - {"nodeAffinity"}):
                out.pop("affinity", None)
            else:
                merged = {k: v for k, v in new_aff.items() if k != "nodeAffinity"}
                if "nodeAffinity" in old_aff:
                    merged["nodeAffinity"] = old_aff["nodeAffinity"]
                out["affinity"] = merged
    return out


def _set(out: dict[str, Any], key: str, old: Mapping[str, Any]) -> None:
    if key in old:
        out[key] = old[key]
    else:
        out.pop(key, None)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _required_terms(spec: Mapping[str, Any]) -> list[Any] | None:
    """The required node affinity's terms (None: no required node affinity)."""
    node_affinity = _mapping(_mapping(spec.get("affinity")).get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return None
    terms = required.get("nodeSelectorTerms")
    return list(terms) if isinstance(terms, list) else []


def _affinity_errors(new_terms: list[Any] | None, old_terms: list[Any] | None) -> list[ValidationError]:
    """validateNodeAffinityMutation over the required terms (None: no required affinity)."""
    if not old_terms:
        return []
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    terms = new_terms or []
    if len(terms) != len(old_terms):
        return [ValidationError(path, f"Invalid value: {_go_json(terms)}: no additions/deletions to non-empty "
                                      "NodeSelectorTerms list are allowed")]
    return [ValidationError(f"{path}[{i}]", f"Invalid value: {_go_json(new)}: only additions are allowed (no "
                                            "mutations or deletions)")
            for i, (new, old) in enumerate(zip(terms, old_terms, strict=True)) if not _only_additions(new, old)]


def _only_additions(new: Any, old: Any) -> bool:
    """validateNodeSelectorTermHasOnlyAdditions: the old term's expressions and fields are each a
    prefix of the new term's, and an empty old term stays empty."""
    new_m, old_m = _mapping(new), _mapping(old)
    old_e, old_f = old_m.get("matchExpressions") or [], old_m.get("matchFields") or []
    new_e, new_f = new_m.get("matchExpressions") or [], new_m.get("matchFields") or []
    if not old_e and not old_f and (new_e or new_f):
        return False
    return all(not o or (len(n) >= len(o) and list(n[:len(o)]) == list(o)) for o, n in ((old_e, new_e), (old_f, new_f)))


def _go_json(value: Any) -> str:
    """A value as field.Invalid prints a map or list (its JSON, Go's key order); null for none."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
