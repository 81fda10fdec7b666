"""Admission for autoscaling/v2 HorizontalPodAutoscaler: upstream's defaults
(pkg/apis/autoscaling/v2 defaults.go) and the checks of pkg/apis/autoscaling/validation with the
options its registry strategy passes (minReplicas at least 1: HPAScaleToZero is alpha, off; the
scale target's apiVersion needs a group, an object metric's need not), as store hooks.

Why: kube-controller-manager's horizontal-pod-autoscaler controller reads these objects, so one the
real kube-apiserver refuses (maxReplicas 0, a metric without a target) must be refused here with
the same 422, and a stored one has the defaults it reads (minReplicas, the CPU metric, the
behavior's rules). v1.37's beta declarative validation answers for minReplicas' and maxReplicas'
bounds: those errors come after the rest, as kube-apiserver orders them. Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.kinds.autoscaling_conversion import without_round_trip_annotations
from nodeagent.objects.common import Errors
from nodeagent.objects.storage import _list, _object, _string
from nodeagent.store import validation as meta
from nodeagent.util import quantity

JSON = dict[str, Any]

MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
DEFAULT_CPU_UTILIZATION = 80
METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_MEMBERS = (("Object", "object"), ("External", "external"), ("Pods", "pods"), ("Resource", "resource"),
            ("ContainerResource", "containerResource"))


# --- defaults ----------------------------------------------------------------------------------


def _scale_up_rules() -> JSON:
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scale_down_rules() -> JSON:
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _rules(given: Any, defaults: JSON) -> JSON:
    """copyHPAScalingRules: the given rule's set fields over the defaults."""
    if not isinstance(given, Mapping):
        return defaults
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if given.get(key) is not None:
            defaults[key] = given[key]
    return defaults


def default_hpa(obj: Mapping[str, Any]) -> JSON:
    """SetDefaults_HorizontalPodAutoscaler: minReplicas 1, an 80% CPU utilization metric when none
    is given, and the behavior's rules filled in when a behavior is given; the annotations only
    v1 conversion writes are dropped, as upstream's v2 conversion drops them."""
    out = copy.deepcopy(without_round_trip_annotations(obj))
    # the status is a Go struct: kube-apiserver always writes it, with its two fields that have no
    # omitempty (desiredReplicas 0, currentMetrics null) even before the autoscaler's first write
    status = out.get("status")
    if status is None or isinstance(status, dict):
        out["status"] = {"desiredReplicas": 0, "currentMetrics": None, **(status or {})}
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), _scale_up_rules())
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), _scale_down_rules())
    return out


# --- validation --------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _path_segment(errs: Errors, path: str, value: str) -> None:
    if value in (".", ".."):
        errs.append(meta.invalid(path, value, f"may not be '{value}'"))
        return
    for bad in ("/", "%"):
        if bad in value:
            errs.append(meta.invalid(path, value, f"may not contain '{bad}'"))


def _cross_version_ref(raw: Any, path: str, errs: Errors, *, allow_empty_group: bool) -> None:
    """ValidateCrossVersionObjectReference (+ ValidateAPIVersion)."""
    ref = _object(raw, path)
    for key in ("kind", "name"):
        value = _string(ref.get(key), f"{path}.{key}")
        if not value:
            errs.append(meta.required(f"{path}.{key}"))
        else:
            _path_segment(errs, f"{path}.{key}", value)
    api_version = _string(ref.get("apiVersion"), f"{path}.apiVersion")
    slashes = api_version.count("/")
    if slashes > 1:
        errs.append(meta.invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    elif not allow_empty_group and not (api_version.partition("/")[0] if slashes else ""):
        errs.append(meta.invalid(f"{path}.apiVersion", api_version, "apiVersion must specify API group"))


def _positive_quantity(value: Any) -> bool:
    try:
        return quantity.parse(str(value)) > 0
    except quantity.QuantityError:
        return True  # the typed decoder refuses a bad quantity before validation


def _metric_target(raw: Any, path: str, errs: Errors) -> Mapping[str, Any]:
    target = _object(raw, path)
    kind = _string(target.get("type"), f"{path}.type")
    if not kind:
        errs.append(meta.required(f"{path}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(meta.invalid(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None and not _positive_quantity(target[key]):
            errs.append(meta.invalid(f"{path}.{key}", str(target[key]), "must be positive"))
    util = _int(target.get("averageUtilization"))
    if util is not None and util < 1:
        errs.append(meta.invalid(f"{path}.averageUtilization", util, "must be greater than 0"))
    return target


def _metric_identifier(raw: Any, path: str, errs: Errors) -> None:
    ident = _object(raw, path)
    name = _string(ident.get("name"), f"{path}.name")
    if not name:
        errs.append(meta.required(f"{path}.name", "must specify a metric name"))
    else:
        _path_segment(errs, f"{path}.name", name)


def _source(member: str, raw: Any, path: str, errs: Errors) -> None:
    src = _object(raw, path)
    if member == "object":
        _cross_version_ref(src.get("describedObject"), f"{path}.describedObject", errs, allow_empty_group=True)
    if member in ("object", "external", "pods"):
        _metric_identifier(src.get("metric"), f"{path}.metric", errs)
    if member in ("resource", "containerResource"):
        name = _string(src.get("name"), f"{path}.name")
        if not name:
            errs.append(meta.required(f"{path}.name", "must specify a resource name"))
    if member == "containerResource":
        container = _string(src.get("container"), f"{path}.container")
        if not container:
            errs.append(meta.required(f"{path}.container", "must specify a container"))
        else:
            errs.check(meta.check_dns_label, f"{path}.container", container)
    target = _metric_target(src.get("target"), f"{path}.target", errs)
    has_value, has_average = target.get("value") is not None, target.get("averageValue") is not None
    has_util = target.get("averageUtilization") is not None
    if member == "object" and not has_value and not has_average:
        errs.append(meta.required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    if member == "external":
        if not has_value and not has_average:
            errs.append(meta.required(f"{path}.target.averageValue",
                                      "must set either a target value for metric or a per-pod target"))
        if has_value and has_average:
            errs.append(meta.forbidden(f"{path}.target.value",
                                       "may not set both a target value for metric and a per-pod target"))
    if member == "pods" and not has_average:
        errs.append(meta.required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    if member in ("resource", "containerResource"):
        if not has_util and not has_average:
            errs.append(meta.required(f"{path}.target.averageUtilization",
                                      "must set either a target raw value or a target utilization"))
        if has_util and has_average:
            errs.append(meta.forbidden(f"{path}.target.averageValue",
                                       "may not set both a target raw value and a target utilization"))


def _metric_spec(raw: Any, path: str, errs: Errors) -> str:
    """validateMetricSpec; answers the metric's type."""
    spec = _object(raw, path)
    kind = _string(spec.get("type"), f"{path}.type")
    if not kind:
        errs.append(meta.required(f"{path}.type", "must specify a metric source type"))
    if kind not in METRIC_TYPES:
        errs.append(meta.not_supported(f"{path}.type", kind, METRIC_TYPES))
    present: list[str] = []
    for _type, member in _MEMBERS:
        if spec.get(member) is not None:
            present.append(member)
            if len(present) == 1:
                _source(member, spec[member], f"{path}.{member}", errs)
    expected = dict(_MEMBERS).get(kind)
    if expected is None:
        errs.append(meta.not_supported(f"{path}.type", kind, METRIC_TYPES))
    elif spec.get(expected) is None:
        errs.append(meta.required(f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        for member in sorted(m for m in present if m != expected):  # upstream ranges over a set
            errs.append(meta.forbidden(f"{path}.{member}", "must populate the given metric source only"))
    return kind


def _scaling_rules(raw: Any, path: str, errs: Errors) -> None:
    if raw is None:
        return
    rules = _object(raw, path)
    window = _int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        errs.append(meta.invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(meta.invalid(f"{path}.stabilizationWindowSeconds", window,
                                 f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in ("Disabled", "Max", "Min"):
        errs.append(meta.not_supported(f"{path}.selectPolicy", select, ("Disabled", "Max", "Min")))
    policies = _list(rules.get("policies"), f"{path}.policies")
    if not policies:
        errs.append(meta.required(f"{path}.policies", "must specify at least one Policy"))
    for i, item in enumerate(policies):
        ppath = f"{path}.policies[{i}]"
        policy = _object(item, ppath)
        kind = _string(policy.get("type"), f"{ppath}.type")
        if kind not in ("Pods", "Percent"):
            errs.append(meta.not_supported(f"{ppath}.type", kind, ("Percent", "Pods")))
        value, period = _int(policy.get("value")) or 0, _int(policy.get("periodSeconds")) or 0
        if value <= 0:
            errs.append(meta.invalid(f"{ppath}.value", value, "must be greater than zero"))
        if period <= 0:
            errs.append(meta.invalid(f"{ppath}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errs.append(meta.invalid(f"{ppath}.periodSeconds", period,
                                     f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    tolerance = rules.get("tolerance")
    if tolerance is not None:
        try:
            negative = quantity.parse(str(tolerance)) < 0
        except quantity.QuantityError:
            negative = False
        if negative:
            errs.append(meta.invalid(f"{path}.tolerance", str(tolerance), "must be greater than or equal to 0"))


def validate_spec(spec_raw: Any, errs: Errors, declarative: Errors) -> None:
    """validateHorizontalPodAutoscalerSpec with the strategy's options."""
    spec = _object(spec_raw, "spec")
    min_replicas = _int(spec.get("minReplicas"))
    max_replicas = _int(spec.get("maxReplicas")) or 0
    if min_replicas is not None and min_replicas < 0:
        # kube-apiserver v1.37.2's declarative minimum answers (the hand-written `>= 1` is covered by it)
        # and it is 0, as with HPAScaleToZero: minReplicas 0 is refused only by the scaling-to-zero
        # metrics check below (both seen on the real kube-apiserver)
        declarative.append(meta.invalid("spec.minReplicas", min_replicas, "must be greater than or equal to 0"))
    if max_replicas == 0:
        declarative.append(meta.required("spec.maxReplicas"))
    elif max_replicas < 0:
        declarative.append(meta.invalid("spec.maxReplicas", max_replicas, "must be greater than or equal to 1"))
    if min_replicas is not None and max_replicas < min_replicas:
        errs.append(meta.invalid("spec.maxReplicas", max_replicas, "must be greater than or equal to `minReplicas`"))
    _cross_version_ref(spec.get("scaleTargetRef"), "spec.scaleTargetRef", errs, allow_empty_group=False)
    kinds = [_metric_spec(m, f"spec.metrics[{i}]", errs)
             for i, m in enumerate(_list(spec.get("metrics"), "spec.metrics"))]
    if min_replicas == 0 and not {"Object", "External"} & set(kinds):
        errs.append(meta.forbidden("spec.metrics", "must specify at least one Object or External metric to support "
                                   "scaling to zero replicas"))
    behavior = spec.get("behavior")
    if behavior is not None:
        behavior = _object(behavior, "spec.behavior")
        _scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp", errs)
        _scaling_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown", errs)


def validate_hpa(obj: Mapping[str, Any]) -> JSON:
    """The `default` hook: defaults, then every check (the declarative ones last)."""
    out = default_hpa(obj)
    errs, declarative = Errors(), Errors()
    validate_spec(out.get("spec"), errs, declarative)
    errs.extend(declarative)
    # a status write through the API reaches this hook with the stored spec; a spec write or a
    # create carries the stored (or no) status: checking it always is the status strategy's check
    _check_status(out.get("status"), errs)
    unique: dict[tuple[str, str], ValidationError] = {}
    for err in errs:  # kube-apiserver answers an error listed twice (an unsupported metric type) once
        unique.setdefault((err.path, err.detail), err)
    Errors(unique.values()).raise_all()
    return out


def validate_status(new: Mapping[str, Any], old: Mapping[str, Any]) -> JSON:
    """The status strategy (ValidateHorizontalPodAutoscalerStatusUpdate): the stored spec, the
    writer's status, whose counts and conditions' observedGeneration are not negative."""
    out = copy.deepcopy(dict(new))
    if "spec" in old:
        out["spec"] = copy.deepcopy(old["spec"])
    errs = Errors()
    _check_status(out.get("status"), errs)
    errs.raise_all()
    return out


def _check_status(raw: Any, errs: Errors) -> None:
    status = _object(raw, "status")
    for i, item in enumerate(_list(status.get("conditions"), "status.conditions")):
        gen = _int(_object(item, f"status.conditions[{i}]").get("observedGeneration"))
        if gen is not None and gen < 0:
            errs.append(_negative(f"status.conditions[{i}].observedGeneration", gen))
    for key in ("currentReplicas", "desiredReplicas"):
        value = _int(status.get(key))
        if value is not None and value < 0:
            errs.append(_negative(f"status.{key}", value))


def _negative(path: str, value: int) -> ValidationError:
    return meta.invalid(path, value, "must be greater than or equal to 0")


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {"HorizontalPodAutoscaler": {"default": validate_hpa, "default_status": validate_status}}
