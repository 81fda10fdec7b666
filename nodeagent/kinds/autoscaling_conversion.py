"""autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscaler, as a Conversion pair for its declaration.

Why this shape: upstream converts both versions through the internal type
(k8s.io/kubernetes pkg/apis/autoscaling/v1/conversion.go); here the hub is the storage version
v2, whose shape is the internal one. autoscaling/v1 can say only a CPU utilization target, so
everything else a v2 object holds travels in annotations on the v1 view and comes back from
them on a v1 write, exactly as upstream writes them (the JSON texts included, since clients see
and send them back):

- `autoscaling.alpha.kubernetes.io/metrics`: the non-CPU-utilization metrics as v1 MetricSpecs;
- `autoscaling.alpha.kubernetes.io/current-metrics`: every status metric as v1 MetricStatuses;
- `autoscaling.alpha.kubernetes.io/behavior`: spec.behavior, marshalled from the internal type
  (Go field names: `{"ScaleUp":{"StabilizationWindowSeconds":0,...}}`), as upstream does;
- `autoscaling.alpha.kubernetes.io/conditions`: status.conditions as v1 conditions.

Any of those (and the two tolerance annotations) a client sends is dropped on the way in, after
use; an annotation that does not decode is ignored, as upstream ignores its json.Unmarshal
error. A v1 object with no metrics at all gets the 80% CPU target here, in conversion, as
upstream does (it needs the annotation to know). Pure: no I/O, no imports beyond kinds.model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.kinds.model import Conversion, Obj

PREFIX = "autoscaling.alpha.kubernetes.io/"
METRIC_SPECS = PREFIX + "metrics"
METRIC_STATUSES = PREFIX + "current-metrics"
CONDITIONS = PREFIX + "conditions"
BEHAVIOR = PREFIX + "behavior"
ROUND_TRIP = (METRIC_SPECS, BEHAVIOR, PREFIX + "scale-down-tolerance", PREFIX + "scale-up-tolerance",
              METRIC_STATUSES, CONDITIONS)
DEFAULT_CPU_UTILIZATION = 80
_ZERO = "0"  # a non-pointer resource.Quantity that was never set marshals as "0"


# --- Go's encoding/json, for the annotation texts ------------------------------------------------


def go_json(value: Any) -> str:
    """json.Marshal's text of `value` (dicts already in struct field order): compact, non-ASCII
    kept, and <, >, &, U+2028, U+2029 escaped as Go's HTML-safe encoder does."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def _present(pairs: list[tuple[str, Any]]) -> Obj:
    """A struct's JSON object: the pairs in order, those whose value is None left out (omitempty)."""
    return {k: v for k, v in pairs if v is not None}


def _selector(raw: Any) -> Obj | None:
    """A metav1.LabelSelector re-marshalled: matchLabels (keys sorted), matchExpressions."""
    if not isinstance(raw, Mapping):
        return None
    labels = raw.get("matchLabels")
    exprs = raw.get("matchExpressions")
    return _present([
        ("matchLabels", dict(sorted(labels.items())) if isinstance(labels, Mapping) and labels else None),
        ("matchExpressions", [_present([("key", e.get("key", "")), ("operator", e.get("operator", "")),
                                        ("values", e.get("values") or None)])
                              for e in exprs if isinstance(e, Mapping)] if isinstance(exprs, list) and exprs else None),
    ])


def _ref(raw: Any) -> Obj:
    """A CrossVersionObjectReference (kind, name, apiVersion omitempty)."""
    ref = raw if isinstance(raw, Mapping) else {}
    return _present([("kind", ref.get("kind", "")), ("name", ref.get("name", "")),
                     ("apiVersion", ref.get("apiVersion") or None)])


def _get(raw: Any, key: str) -> Any:
    """A member of a decoded Go struct: encoding/json matches field names case-insensitively."""
    if not isinstance(raw, Mapping):
        return None
    if key in raw:
        return raw[key]
    lowered = key.lower()
    for k, v in raw.items():
        if isinstance(k, str) and k.lower() == lowered:
            return v
    return None


def _m(raw: Any) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {}


# --- hub (v2) -> v1 ------------------------------------------------------------------------------

_MEMBERS = ("object", "pods", "resource", "containerResource", "external")


def _is_cpu_utilization(metric: Mapping[str, Any]) -> bool:
    res = _m(metric.get("resource"))
    return (metric.get("type") == "Resource" and bool(res) and res.get("name") == "cpu"
            and _m(res.get("target")).get("averageUtilization") is not None)


def _metric_spec_to_v1(metric: Mapping[str, Any]) -> Obj:
    """Convert_autoscaling_MetricSpec_To_v1_MetricSpec (each member's own conversion)."""
    out: list[tuple[str, Any]] = [("type", metric.get("type", ""))]
    for member in _MEMBERS:
        src = metric.get(member)
        if not isinstance(src, Mapping):
            continue
        target, ident = _m(src.get("target")), _m(src.get("metric"))
        if member == "object":
            value = _present([("target", _ref(src.get("describedObject"))), ("metricName", ident.get("name", "")),
                              ("targetValue", target.get("value") or _ZERO),
                              ("selector", _selector(ident.get("selector"))),
                              ("averageValue", target.get("averageValue"))])
        elif member == "pods":
            value = _present([("metricName", ident.get("name", "")),
                              ("targetAverageValue", target.get("averageValue") or _ZERO),
                              ("selector", _selector(ident.get("selector")))])
        elif member in ("resource", "containerResource"):
            value = _present([("name", src.get("name", "")),
                              ("targetAverageUtilization", target.get("averageUtilization")),
                              ("targetAverageValue", target.get("averageValue"))])
            if member == "containerResource":
                value["container"] = src.get("container", "")
        else:
            value = _present([("metricName", ident.get("name", "")),
                              ("metricSelector", _selector(ident.get("selector"))),
                              ("targetValue", target.get("value")), ("targetAverageValue", target.get("averageValue"))])
        out.append((member, value))
    return dict(out)


def _metric_status_to_v1(metric: Mapping[str, Any]) -> Obj:
    """Convert_autoscaling_MetricStatus_To_v1_MetricStatus."""
    out: list[tuple[str, Any]] = [("type", metric.get("type", ""))]
    for member in _MEMBERS:
        src = metric.get(member)
        if not isinstance(src, Mapping):
            continue
        current, ident = _m(src.get("current")), _m(src.get("metric"))
        if member == "object":
            value = _present([("target", _ref(src.get("describedObject"))), ("metricName", ident.get("name", "")),
                              ("currentValue", current.get("value") or _ZERO),
                              ("selector", _selector(ident.get("selector"))),
                              ("averageValue", current.get("averageValue"))])
        elif member == "pods":
            value = _present([("metricName", ident.get("name", "")),
                              ("currentAverageValue", current.get("averageValue") or _ZERO),
                              ("selector", _selector(ident.get("selector")))])
        elif member in ("resource", "containerResource"):
            value = _present([("name", src.get("name", "")),
                              ("currentAverageUtilization", current.get("averageUtilization")),
                              ("currentAverageValue", current.get("averageValue") or _ZERO)])
            if member == "containerResource":
                value["container"] = src.get("container", "")
        else:
            value = _present([("metricName", ident.get("name", "")),
                              ("metricSelector", _selector(ident.get("selector"))),
                              ("currentValue", current.get("value") or _ZERO),
                              ("currentAverageValue", current.get("averageValue"))])
        out.append((member, value))
    return dict(out)


def _condition_to_v1(cond: Mapping[str, Any]) -> Obj:
    """A v1 HorizontalPodAutoscalerCondition as json.Marshal writes it: lastTransitionTime is a
    struct, which omitempty never drops (a zero time is null)."""
    out: Obj = {"type": cond.get("type", ""), "status": cond.get("status", ""),
                "lastTransitionTime": cond.get("lastTransitionTime") or None}
    return out | _present([("reason", cond.get("reason") or None), ("message", cond.get("message") or None),
                           ("observedGeneration", cond.get("observedGeneration"))])


def _internal_rules(raw: Any) -> Obj | None:
    """An internal HPAScalingRules as json.Marshal writes it (no json tags: Go field names, every
    field, nil pointers as null)."""
    if not isinstance(raw, Mapping):
        return None
    policies = raw.get("policies")
    return {"StabilizationWindowSeconds": raw.get("stabilizationWindowSeconds"),
            "SelectPolicy": raw.get("selectPolicy"),
            "Policies": [{"Type": p.get("type", ""), "Value": p.get("value", 0),
                "PeriodSeconds": p.get("periodSeconds", 0)}
                         for p in policies if isinstance(p, Mapping)] if isinstance(policies, list) else None,
            "Tolerance": raw.get("tolerance")}


def _ordered_v1(obj: Mapping[str, Any], spec: Obj, status: Obj) -> Obj:
    out: Obj = {}
    for key, value in obj.items():
        if key == "spec":
            out["spec"] = spec
        elif key != "status":
            out[key] = value
    out.setdefault("spec", spec)
    out["status"] = status
    return out


def hub_to_v1(obj: Mapping[str, Any]) -> Obj:
    """Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler."""
    spec, status = _m(obj.get("spec")), obj.get("status")
    metrics = [m for m in spec.get("metrics") or () if isinstance(m, Mapping)]
    v1_spec: Obj = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    annotations = {k: v for k, v in _m(_m(obj.get("metadata")).get("annotations")).items() if k not in ROUND_TRIP}
    others = [_metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRIC_SPECS] = go_json(others)
    # v1's status is a struct (never omitted) whose replica counts have no omitempty
    given = _m(status)
    v1_status = {k: given[k] for k in ("observedGeneration", "lastScaleTime") if k in given}
    v1_status |= {k: given.get(k) or 0 for k in ("currentReplicas", "desiredReplicas")}
    if isinstance(status, Mapping):
        current = [m for m in status.get("currentMetrics") or () if isinstance(m, Mapping)]
        for m in current:  # the last CPU utilization wins, as upstream's loop does not break
            res = _m(m.get("resource"))
            if m.get("type") == "Resource" and res and res.get("name") == "cpu" \
                    and _m(res.get("current")).get("averageUtilization") is not None:
                v1_status["currentCPUUtilizationPercentage"] = res["current"]["averageUtilization"]
        if current:
            annotations[METRIC_STATUSES] = go_json([_metric_status_to_v1(m) for m in current])
    behavior = spec.get("behavior")
    if isinstance(behavior, Mapping):
        annotations[BEHAVIOR] = go_json({"ScaleUp": _internal_rules(behavior.get("scaleUp")),
                                         "ScaleDown": _internal_rules(behavior.get("scaleDown"))})
    conditions = [c for c in (_m(status).get("conditions") or ()) if isinstance(c, Mapping)]
    if conditions:
        annotations[CONDITIONS] = go_json([_condition_to_v1(c) for c in conditions])
    out = _ordered_v1(obj, v1_spec, v1_status)
    out["metadata"] = _with_annotations(obj.get("metadata"), annotations)
    return out


def _with_annotations(metadata: Any, annotations: Obj) -> Obj:
    md = dict(metadata) if isinstance(metadata, Mapping) else {}
    if annotations:
        md["annotations"] = annotations
    else:
        md.pop("annotations", None)
    return md


# --- v1 -> hub (v2) ------------------------------------------------------------------------------


def _v1_target(util: Any, value: Any, average: Any) -> Obj:
    kind = "Utilization" if util is not None else "AverageValue"
    return _present([("type", kind), ("value", value), ("averageValue", average), ("averageUtilization", util)])


def _metric_spec_from_v1(metric: Mapping[str, Any]) -> Obj:
    """Convert_v1_MetricSpec_To_autoscaling_MetricSpec."""
    out: Obj = {"type": _get(metric, "type") or ""}
    for member in _MEMBERS:
        src = _get(metric, member)
        if not isinstance(src, Mapping):
            continue
        ident = _present([("name", _get(src, "metricName") or ""),
                          ("selector", _get(src, "metricSelector" if member == "external" else "selector"))])
        if member == "object":
            average, value = _get(src, "averageValue"), _get(src, "targetValue") or _ZERO
            target = _present([("type", "Value" if average is None else "AverageValue"),
                               ("value", value if average is None or value != _ZERO else None),
                               ("averageValue", average)])
            out[member] = {"describedObject": _ref(_get(src, "target")), "target": target, "metric": ident}
        elif member == "pods":
            out[member] = {"metric": ident, "target": {"type": "AverageValue",
                                                       "averageValue": _get(src, "targetAverageValue") or _ZERO}}
        elif member in ("resource", "containerResource"):
            value = {"name": _get(src, "name") or "", "target": _v1_target(
                _get(src, "targetAverageUtilization"), None, _get(src, "targetAverageValue"))}
            if member == "containerResource":
                value["container"] = _get(src, "container") or ""
            out[member] = value
        else:
            value_q, average_q = _get(src, "targetValue"), _get(src, "targetAverageValue")
            out[member] = {"metric": ident, "target": _present([
                ("type", "AverageValue" if value_q is None else "Value"), ("value", value_q),
                ("averageValue", average_q)])}
    return out


def _metric_status_from_v1(metric: Mapping[str, Any]) -> Obj:
    """Convert_v1_MetricStatus_To_autoscaling_MetricStatus."""
    out: Obj = {"type": _get(metric, "type") or ""}
    for member in _MEMBERS:
        src = _get(metric, member)
        if not isinstance(src, Mapping):
            continue
        ident = _present([("name", _get(src, "metricName") or ""),
                          ("selector", _get(src, "metricSelector" if member == "external" else "selector"))])
        if member == "object":
            out[member] = {"metric": ident, "current": _present([("value", _get(src, "currentValue") or _ZERO),
                                                                 ("averageValue", _get(src, "averageValue"))]),
                           "describedObject": _ref(_get(src, "target"))}
        elif member == "pods":
            out[member] = {"metric": ident, "current": {"averageValue": _get(src, "currentAverageValue") or _ZERO}}
        elif member in ("resource", "containerResource"):
            value = {"name": _get(src, "name") or "", "current": _present([
                ("averageValue", _get(src, "currentAverageValue") or _ZERO),
                ("averageUtilization", _get(src, "currentAverageUtilization"))])}
            if member == "containerResource":
                value["container"] = _get(src, "container") or ""
            out[member] = value
        else:
            out[member] = {"metric": ident, "current": _present([("value", _get(src, "currentValue") or _ZERO),
                                                                 ("averageValue", _get(src, "currentAverageValue"))])}
    return out


def _condition_from_v1(cond: Mapping[str, Any]) -> Obj:
    return {"type": _get(cond, "type") or "", "status": _get(cond, "status") or ""} | _present(
        [(k, _get(cond, k) or None) for k in ("lastTransitionTime", "reason", "message")]
        + [("observedGeneration", _get(cond, "observedGeneration"))])


def _rules_from_internal(raw: Any) -> Obj | None:
    if not isinstance(raw, Mapping):
        return None
    policies = _get(raw, "Policies")
    return _present([
        ("stabilizationWindowSeconds", _get(raw, "StabilizationWindowSeconds")),
        ("selectPolicy", _get(raw, "SelectPolicy")),
        ("policies", [{"type": _get(p, "Type") or "", "value": _get(p, "Value") or 0,
                       "periodSeconds": _get(p, "PeriodSeconds") or 0}
                      for p in policies if isinstance(p, Mapping)] if isinstance(policies, list) else None),
        ("tolerance", _get(raw, "Tolerance")),
    ])


def _decoded_list(text: Any, convert: Callable[[Mapping[str, Any]], Obj]) -> list[Obj] | None:
    """An annotation holding a JSON list of structs, converted; None when it does not decode (the
    whole annotation is then ignored, as upstream ignores json.Unmarshal's error)."""
    if not isinstance(text, str):
        return None
    try:
        items = json.loads(text)
    except ValueError:
        return None
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        return None
    return [convert(i) for i in items]


def v1_to_hub(obj: Mapping[str, Any]) -> Obj:
    """Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler."""
    spec, status = _m(obj.get("spec")), obj.get("status")
    annotations = _m(_m(obj.get("metadata")).get("annotations"))
    hub_spec: Obj = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    metrics: list[Obj] = []
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                 "averageUtilization": cpu}}}]
    if METRIC_SPECS in annotations:
        others = _decoded_list(annotations[METRIC_SPECS], _metric_spec_from_v1)
        if others is not None:
            metrics = [*others, *metrics[:1]]
    if BEHAVIOR in annotations:
        behavior = _decoded_behavior(annotations[BEHAVIOR])
        if behavior:
            hub_spec["behavior"] = behavior
    if not metrics:
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    hub_spec["metrics"] = metrics
    hub_status: Obj | None = None
    if isinstance(status, Mapping):
        hub_status = {k: status[k] for k in ("observedGeneration", "lastScaleTime", "currentReplicas",
            "desiredReplicas")
                      if k in status}
        current = status.get("currentCPUUtilizationPercentage")
        if current is not None:
            hub_status["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {
                "averageUtilization": current}}}]
    if METRIC_STATUSES in annotations or CONDITIONS in annotations:
        hub_status = hub_status if hub_status is not None else {}
        current_metrics = _decoded_list(annotations.get(METRIC_STATUSES), _metric_status_from_v1)
        if current_metrics is not None:
            hub_status["currentMetrics"] = current_metrics
        conditions = _decoded_list(annotations.get(CONDITIONS), _condition_from_v1)
        if conditions is not None:
            hub_status["conditions"] = conditions
    out: Obj = {}
    for key, value in obj.items():
        if key == "spec":
            out["spec"] = hub_spec
        elif key == "status":
            if hub_status is not None:
                out["status"] = hub_status
        else:
            out[key] = value
    out.setdefault("spec", hub_spec)
    if hub_status is not None:
        out.setdefault("status", hub_status)
    out["metadata"] = _with_annotations(obj.get("metadata"), {
        k: v for k, v in annotations.items() if k not in ROUND_TRIP})
    return out


def _decoded_behavior(text: Any) -> Obj | None:
    if not isinstance(text, str):
        return None
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, Mapping):
        return None
    up, down = _rules_from_internal(_get(raw, "ScaleUp")), _rules_from_internal(_get(raw, "ScaleDown"))
    if up is None and down is None:
        return None  # behavior == HorizontalPodAutoscalerBehavior{}: no behavior
    return _present([("scaleUp", up), ("scaleDown", down)])


def without_round_trip_annotations(obj: Mapping[str, Any]) -> Obj:
    """DropRoundTripHorizontalPodAutoscalerAnnotations, which the v2 conversion also runs: an
    object written as v2 keeps none of the annotations only conversion may write."""
    annotations = _m(_m(obj.get("metadata")).get("annotations"))
    if not any(k in annotations for k in ROUND_TRIP):
        return dict(obj)
    out = dict(obj)
    out["metadata"] = _with_annotations(obj.get("metadata"), {k: v for k, v in annotations.items()
                                                               if k not in ROUND_TRIP})
    return out


V1 = Conversion(v1_to_hub, hub_to_v1)
"""The autoscaling/v1 version's shape change (the hub is autoscaling/v2)."""
