"""Defaults and validation of the workload kinds: apps/v1 Deployment, ReplicaSet, StatefulSet,
DaemonSet, ControllerRevision and batch/v1 Job, CronJob.

Why here: a workload's pod template is a pod, and upstream validates it as one
(ValidatePodTemplateSpec); the object model's pod parser (objects/pod/manifest.py) is what the
API server and the node already use for pods, so a template is checked by the very same parser
and its errors are re-rooted under the template's path. What is the workload's own follows
k8s.io/kubernetes pkg/apis/apps/validation and pkg/apis/batch/validation (field paths and
messages), and the defaults pkg/apis/apps/v1 and batch/v1 defaults.go, plus the part of
core/v1's SetDefaults_PodSpec and SetDefaults_Container that a template shows (restartPolicy,
dnsPolicy, schedulerName, terminationGracePeriodSeconds, securityContext, the container's
termination message and pull policy, port protocols); probe, volume and resource defaults are
not written (pods stored here are not defaulted either). Pure: no I/O; the clock is passed in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects import jobspec
from nodeagent.objects.common import PERCENT_MSG, Errors
from nodeagent.objects.pod import defaults as pod_defaults
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.store import validation as meta
from nodeagent.store.selectors import from_label_selector
from nodeagent.util.clock import Clock

JSON = dict[str, Any]

_POD_TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


# --- defaults ------------------------------------------------------------------------------------

EMPTY_STATUS: dict[str, JSON] = {
    "Deployment": {},
    "ReplicaSet": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "DaemonSet": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                  "numberReady": 0},
    "Job": {},
    "CronJob": {},
}
"""The status a create leaves (PrepareForCreate's zero status), as upstream writes it: the status
is a struct, never omitted, with its non-omitempty counters at 0."""


def set_defaults(obj: JSON) -> None:
    """SetDefaults_<Kind> of apps/v1 and batch/v1, and the pod template's, in place."""
    kind = obj.get("kind")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "Deployment":
        spec.setdefault("replicas", 1)
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    rolling.setdefault("maxUnavailable", "25%")
                    rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
    elif kind == "ReplicaSet":
        spec.setdefault("replicas", 1)
    elif kind == "StatefulSet":
        _stateful_set_defaults(spec)
    elif kind == "DaemonSet":
        strategy = spec.setdefault("updateStrategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    rolling.setdefault("maxUnavailable", 1)
                    rolling.setdefault("maxSurge", 0)
        spec.setdefault("revisionHistoryLimit", 10)
    elif kind == "Job":
        _job_defaults(obj, spec)
    elif kind == "CronJob":
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        job = spec.get("jobTemplate")  # SetObjectDefaults_CronJob: not SetDefaults_Job (the Job's create does it)
        if isinstance(job, dict) and isinstance(job.get("spec"), dict):
            _pod_failure_policy_defaults(job["spec"])
    template = _template(obj)
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pod_spec_defaults(template["spec"])


JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def _template_meta(job: JSON) -> Any:
    template = (job.get("spec") or {}).get("template") if isinstance(job.get("spec"), dict) else None
    return template.get("metadata") if isinstance(template, dict) else None


def job_decode_defaults(job: JSON) -> None:
    """SetDefaults_Job (and the rest of set_defaults) as a request's decoding runs it, before the
    create's managedFields: a Job without labels takes its template's as the same dict, as the Go
    code makes them one map (job_generate_selector relies on it)."""
    md = job.get("metadata")
    had = isinstance(md, dict) and bool(md.get("labels"))
    set_defaults(job)
    tmd = _template_meta(job)
    if isinstance(md, dict) and not had and md.get("labels") and isinstance(tmd, dict) \
            and isinstance(tmd.get("labels"), dict):
        md["labels"] = tmd["labels"]


def job_generate_selector(job: JSON) -> None:
    """The Job strategy's PrepareForCreate after job_decode_defaults: generate_job_selector, whose
    labels show in the Job's own too when those are the template's map (kube-apiserver 1.37 stores
    them so); two dicts again from here on."""
    md = job.get("metadata")
    tmd = _template_meta(job)
    shared = isinstance(md, dict) and isinstance(tmd, dict) and md.get("labels") is not None \
        and md.get("labels") is tmd.get("labels")
    generate_job_selector(job)
    tmd = _template_meta(job)
    if shared and isinstance(md, dict) and isinstance(tmd, dict):
        md["labels"] = dict(tmd.get("labels") or {})


def generate_job_selector(job: JSON) -> None:
    """generateSelectorIfNeeded: unless spec.manualSelector, label the template with the job's
    name and uid (labels the user set are kept: a conflict fails validation) and select on
    batch.kubernetes.io/controller-uid. Copy on write below the top level: the nested values may be
    shared with a stored object (a CronJob's jobTemplate, the store's interned empty maps)."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector"):
        return
    md = job.get("metadata") or {}
    template = spec.get("template")
    if not isinstance(template, dict):
        return
    spec = job["spec"] = dict(spec)
    template = spec["template"] = dict(template)
    tmd = template.get("metadata")
    tmd = template["metadata"] = dict(tmd) if isinstance(tmd, dict) else {}
    labels = tmd.get("labels")
    labels = tmd["labels"] = dict(labels) if isinstance(labels, dict) else {}
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, str(md.get("name") or ""))
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, str(md.get("uid") or ""))
    selector = spec.get("selector")
    selector = spec["selector"] = dict(selector) if isinstance(selector, dict) else {}
    match = selector.get("matchLabels")
    match = selector["matchLabels"] = dict(match) if isinstance(match, dict) else {}
    match.setdefault(CONTROLLER_UID_LABELS[1], str(md.get("uid") or ""))


def _stateful_set_defaults(spec: JSON) -> None:
    spec.setdefault("serviceName", "")  # a Go string without omitempty: always written
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            strategy.setdefault("rollingUpdate", {})
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
            rolling.setdefault("partition", 0)
            rolling.setdefault("maxUnavailable", 1)  # MaxUnavailableStatefulSet: beta, on by default in 1.37
    policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(policy, dict):
        for key in ("whenDeleted", "whenScaled"):
            if not policy.get(key):
                policy[key] = "Retain"
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)


def _job_defaults(obj: JSON | None, spec: JSON) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    template = spec.get("template")
    labels = template.get("metadata", {}).get("labels") if isinstance(template, dict) else None
    if obj is not None and labels is not None:
        md = obj.setdefault("metadata", {})
        if not md.get("labels"):
            md["labels"] = dict(labels)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
    spec.setdefault("manualSelector", False)
    _pod_failure_policy_defaults(spec)


def _pod_failure_policy_defaults(spec: JSON) -> None:
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        for pattern in rule.get("onPodConditions") or [] if isinstance(rule, dict) else []:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"


def pod_spec_defaults(spec: JSON) -> None:
    """A template's PodSpec as kube-apiserver decodes it (objects/pod/defaults.py)."""
    pod_defaults.pod_spec_defaults(spec)


def _template(obj: Mapping[str, Any]) -> Any:
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    return spec.get("template") if obj.get("kind") in _POD_TEMPLATE_KINDS else None


# --- validation ----------------------------------------------------------------------------------


def go_value(value: Any) -> str:
    """A value as field.Error prints an object or a map: its JSON, keys sorted (kube-apiserver
    1.37 renders `Invalid value: {"app":"web"}`); strings quoted, numbers as they are."""
    if isinstance(value, (Mapping, list)) or value is None:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return meta.quote(value)


NOTHING: Any = object()
"""The selector of a missing spec.selector (labels.Nothing()): matches no labels."""


def _nonnegative(errs: Errors, value: Any, path: str) -> None:
    """ValidateNonnegativeField."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        errs.append(ValidationError(path, f"Invalid value: {value}: must be greater than or equal to 0"))


def _check_selector(errs: Errors, selector: Any, path: str, kind_word: str, *, required: bool = True) -> Any:
    """ValidateLabelSelector plus the non-empty rule; answers the parsed selector (None if invalid)."""
    if selector is None:
        if required:
            errs.append(meta.required(path))
            return NOTHING  # LabelSelectorAsSelector(nil): labels.Nothing(), which no template matches
        return None
    if not isinstance(selector, Mapping):
        errs.append(meta.invalid(path, selector, "invalid label selector"))
        return None
    labels = selector.get("matchLabels") or {}
    if isinstance(labels, Mapping):
        errs.check(meta.check_labels, f"{path}.matchLabels", labels)
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expr, Mapping):
            continue
        where = f"{path}.matchExpressions[{i}]"
        op, values = expr.get("operator"), expr.get("values") or []
        if op in ("In", "NotIn") and not values:
            errs.append(meta.required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            errs.append(meta.forbidden(f"{where}.values",
                                       "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errs.append(meta.not_supported(f"{where}.operator", op, ("In", "NotIn", "Exists", "DoesNotExist")))
        errs.check(meta.check_qualified_name, f"{where}.key", str(expr.get("key") or ""))
    if kind_word and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errs.append(ValidationError(path, f"Invalid value: {go_value(selector)}: empty selector is invalid "
                                    f"for {kind_word}"))
    try:
        return from_label_selector(selector, path)
    except ValidationError:
        return None


def _check_template(errs: Errors, obj: Mapping[str, Any], template: Any, path: str, clock: Clock,
                    selector: Any = None, *, restart: tuple[str, ...] = ("Always",), owner: str = "ReplicaSet",
                    deadline: bool = False) -> None:
    """ValidatePodTemplateSpecForReplicaSet (and the DaemonSet's and StatefulSet's like it): the
    selector matches the template's labels, the template is a valid pod (the pod parser, its
    errors under `path`), its restartPolicy is one the kind allows."""
    if not isinstance(template, Mapping):
        errs.append(meta.required(path))
        return
    md = template.get("metadata") or {}
    labels = md.get("labels") if isinstance(md, Mapping) else None
    if selector is NOTHING or (selector is not None and not selector.empty and not selector.matches(labels or {})):
        errs.append(ValidationError(f"{path}.metadata.labels", f"Invalid value: {go_value(labels)}: `selector` "
                                    "does not match template `labels`"))
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    pod_md: JSON = {"name": "template", "namespace": str((obj.get("metadata") or {}).get("namespace") or "default")}
    if isinstance(md, Mapping):
        pod_md.update({k: md[k] for k in ("labels", "annotations") if k in md})
    try:
        pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": pod_md, "spec": dict(spec)}, clock=clock)
    except ValidationError as err:
        for one in getattr(err, "errors", None) or [err]:
            errs.append(ValidationError(_reroot(one.path, path), one.detail))
    policy = spec.get("restartPolicy") or "Always"
    if owner == "Job" and policy == "Always":
        errs.append(meta.required(f"{path}.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    elif policy not in restart:
        errs.append(meta.not_supported(f"{path}.spec.restartPolicy", policy, restart))
    if deadline and spec.get("activeDeadlineSeconds") is not None:
        errs.append(meta.forbidden(f"{path}.spec.activeDeadlineSeconds",
                                   f"activeDeadlineSeconds in {owner} is not Supported"))


def _reroot(pod_path: str, template_path: str) -> str:
    """A pod's field path as the template's: `spec.x` -> `<template>.spec.x`."""
    if pod_path.startswith(("spec", "metadata")):
        return f"{template_path}.{pod_path}"
    return template_path + ("." + pod_path if pod_path else "")


def _check_int_or_percent(errs: Errors, value: Any, path: str) -> None:
    """ValidatePositiveIntOrPercent."""
    if isinstance(value, str):
        digits = value[:-1]
        if not (value.endswith("%") and digits.isdigit()):
            errs.append(meta.invalid(path, value, PERCENT_MSG))
    elif isinstance(value, int) and not isinstance(value, bool):
        _nonnegative(errs, value, path)


def _int_or_percent(value: Any) -> int:
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return int(value[:-1])
    return value if isinstance(value, int) else 0


def _check_deployment_strategy(errs: Errors, strategy: Any, path: str) -> None:
    """ValidateDeploymentStrategy (on the defaulted strategy)."""
    if not isinstance(strategy, Mapping):
        return
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            errs.append(meta.forbidden(f"{path}.rollingUpdate",
                                       "may not be specified when strategy `type` is 'Recreate'"))
    elif kind == "RollingUpdate":
        if not isinstance(rolling, Mapping):
            errs.append(meta.required(f"{path}.rollingUpdate", "this should be defaulted and never be nil"))
            return
        where = f"{path}.rollingUpdate"
        _check_int_or_percent(errs, rolling.get("maxUnavailable"), f"{where}.maxUnavailable")
        _check_int_or_percent(errs, rolling.get("maxSurge"), f"{where}.maxSurge")
        if _int_or_percent(rolling.get("maxUnavailable")) == 0 and _int_or_percent(rolling.get("maxSurge")) == 0:
            errs.append(meta.invalid(f"{where}.maxUnavailable", rolling.get("maxUnavailable"),
                                     "may not be 0 when `maxSurge` is 0"))
        unavailable = rolling.get("maxUnavailable")
        if isinstance(unavailable, str) and _int_or_percent(unavailable) > 100:
            errs.append(meta.invalid(f"{where}.maxUnavailable", unavailable, "must not be greater than 100%"))
    else:
        errs.append(ValidationError(path, f"Unsupported value: {meta.quote(kind)}: supported values: \"Recreate\", "
                                    "\"RollingUpdate\""))


def _check_update_strategy(errs: Errors, strategy: Any, path: str, kinds: tuple[str, ...]) -> None:
    if isinstance(strategy, Mapping) and strategy.get("type") not in kinds:
        errs.append(meta.not_supported(f"{path}.type", strategy.get("type"), kinds))


def validate(obj: Mapping[str, Any], clock: Clock) -> None:
    """Validate<Kind>'s spec checks (the store checks the object metadata); raises ValidationError
    (ManyErrors for several) with upstream's paths and messages."""
    errs = Errors()
    kind = obj.get("kind")
    spec = obj.get("spec")
    if kind == "ControllerRevision":
        if obj.get("data") is None:
            errs.append(meta.required("data", "data is mandatory"))
        _nonnegative(errs, obj.get("revision"), "revision")
        errs.raise_all()
        return
    if not isinstance(spec, Mapping):
        spec = {}
    if kind in ("Deployment", "ReplicaSet"):
        _nonnegative(errs, spec.get("replicas"), "spec.replicas")
        if kind == "ReplicaSet":
            _nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
        selector = _check_selector(errs, spec.get("selector"), "spec.selector", "deployment")
        if selector is not None:
            _check_template(errs, obj, spec.get("template"), "spec.template", clock, selector, deadline=True)
        if kind == "Deployment":
            _check_deployment_strategy(errs, spec.get("strategy"), "spec.strategy")
            _nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
            _nonnegative(errs, spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
            deadline = spec.get("progressDeadlineSeconds")
            if isinstance(deadline, int):
                _nonnegative(errs, deadline, "spec.progressDeadlineSeconds")
                if deadline <= int(spec.get("minReadySeconds") or 0):
                    errs.append(meta.invalid("spec.progressDeadlineSeconds", deadline,
                                             "must be greater than minReadySeconds"))
    elif kind == "DaemonSet":
        selector = _check_selector(errs, spec.get("selector"), "spec.selector", "daemonset")
        _check_template(errs, obj, spec.get("template"), "spec.template", clock, selector, owner="DaemonSet",
                        deadline=True)
        _nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
        _check_update_strategy(errs, spec.get("updateStrategy"), "spec.updateStrategy", ("OnDelete", "RollingUpdate"))
        _nonnegative(errs, spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    elif kind == "StatefulSet":
        _nonnegative(errs, spec.get("replicas"), "spec.replicas")
        _nonnegative(errs, spec.get("minReadySeconds"), "spec.minReadySeconds")
        policy = spec.get("podManagementPolicy")
        if policy not in ("OrderedReady", "Parallel"):
            errs.append(meta.invalid("spec.podManagementPolicy", policy,
                                     "must be 'OrderedReady' or 'Parallel'"))
        _check_update_strategy(errs, spec.get("updateStrategy"), "spec.updateStrategy", ("OnDelete", "RollingUpdate"))
        selector = _check_selector(errs, spec.get("selector"), "spec.selector", "statefulset")
        _check_template(errs, obj, spec.get("template"), "spec.template", clock, selector, owner="StatefulSet",
                        deadline=True)
    elif kind == "Job":
        _check_job_spec(errs, obj, spec, "spec", clock)
    elif kind == "CronJob":
        if spec.get("concurrencyPolicy") not in ("Allow", "Forbid", "Replace"):
            errs.append(meta.not_supported("spec.concurrencyPolicy", spec.get("concurrencyPolicy"),
                                           ("Allow", "Forbid", "Replace")))
        _nonnegative(errs, spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
        _nonnegative(errs, spec.get("successfulJobsHistoryLimit"), "spec.successfulJobsHistoryLimit")
        _nonnegative(errs, spec.get("failedJobsHistoryLimit"), "spec.failedJobsHistoryLimit")
        job = spec.get("jobTemplate")
        job_spec = job.get("spec") if isinstance(job, Mapping) else None
        _check_job_spec(errs, obj, job_spec if isinstance(job_spec, Mapping) else {}, "spec.jobTemplate.spec",
                        clock, selector_required=False)
        if not spec.get("schedule"):  # declarative validation's error: kube-apiserver lists it last
            errs.append(meta.required("spec.schedule"))
    errs.raise_all()


def _check_job_spec(errs: Errors, obj: Mapping[str, Any], spec: Mapping[str, Any], path: str, clock: Clock, *,
                    selector_required: bool = True) -> None:
    """ValidateJobSpec in its order: validateJobSpec's counts and template (restartPolicy OnFailure
    or Never), then a Job's selector (generated by the strategy unless manualSelector) and whether
    it matches the template; a CronJob's jobTemplate has only the first part."""
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        _nonnegative(errs, spec.get(key), f"{path}.{key}")
    if isinstance(spec.get("activeDeadlineSeconds"), int) and spec["activeDeadlineSeconds"] <= 0:
        errs.append(meta.invalid(f"{path}.activeDeadlineSeconds", spec["activeDeadlineSeconds"],
                                 "must be greater than 0"))
    late = jobspec.check_indexed(errs, spec, path)
    template = spec.get("template")
    _check_template(errs, obj, template, f"{path}.template", clock, None, restart=("OnFailure", "Never"),
                    owner="Job")
    if not selector_required:
        errs.extend(late)
        return
    selector = _check_selector(errs, spec.get("selector"), f"{path}.selector", "")
    md = template.get("metadata") if isinstance(template, Mapping) else None
    labels = md.get("labels") if isinstance(md, Mapping) else None
    if selector is NOTHING or (selector is not None and not selector.matches(labels or {})):
        errs.append(ValidationError(f"{path}.template.metadata.labels", f"Invalid value: {go_value(labels)}: "
                                    "`selector` does not match template `labels`"))
    errs.extend(late)


def validate_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """ValidateXUpdate's immutable fields: the selector of the apps kinds and of a Job, a
    StatefulSet's volumeClaimTemplates, serviceName and podManagementPolicy too, a
    ControllerRevision's data. (A Job's other immutable fields, its template among them, are
    not checked yet.)"""
    kind = new.get("kind")
    if kind == "ControllerRevision":
        if new.get("data") != old.get("data"):
            raise meta.invalid("data", new.get("data"), "field is immutable")
        return
    immutable = ("selector", "volumeClaimTemplates", "serviceName", "podManagementPolicy") \
        if kind == "StatefulSet" else ("selector",)
    if kind not in ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job"):
        return
    errs = Errors()
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for key in immutable:
        value, was = new_spec.get(key), old_spec.get(key)
        if key == "serviceName":  # a string in Go: unset is ""
            value, was = value or "", was or ""
        if value != was:
            errs.append(ValidationError(f"spec.{key}", f"Invalid value: {go_value(value)}: field is immutable"))
    errs.raise_all()


def validate_status(obj: Mapping[str, Any]) -> None:
    """Validate<Kind>StatusUpdate's counters: non-negative (ReplicaSet's, Deployment's,
    StatefulSet's, DaemonSet's, Job's)."""
    errs = Errors()
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return
    for key, value in status.items():
        if key in ("observedGeneration", "replicas", "readyReplicas", "availableReplicas", "updatedReplicas",
                   "unavailableReplicas", "fullyLabeledReplicas", "terminatingReplicas", "currentReplicas",
                   "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                   "updatedNumberScheduled", "numberAvailable", "numberUnavailable", "collisionCount", "active",
                   "succeeded", "failed", "ready", "terminating"):
            _nonnegative(errs, value, f"status.{key}")
    errs.raise_all()


def selector_string(selector: Any) -> str:
    """labels.Selector's String() of a metav1.LabelSelector (LabelSelectorAsSelector): requirements
    sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; "" for none or an empty one.
    The printers' Selector column and the scale subresource's status.selector both show it."""
    if not isinstance(selector, Mapping):
        return ""
    reqs: list[tuple[str, str]] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        reqs.append((str(key), f"{key}={value}"))
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, Mapping):
            continue
        key, op = str(expr.get("key") or ""), expr.get("operator")
        values = ",".join(sorted(set(map(str, expr.get("values") or []))))
        if op == "In":
            reqs.append((key, f"{key} in ({values})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({values})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
    return ",".join(r for _k, r in sorted(reqs, key=lambda r: r[0]))


check_nonnegative = _nonnegative
"""ValidateNonnegativeField, for the core group's ReplicationController (objects/replication.py)."""
check_template = _check_template
"""The pod template's checks, for the core group's ReplicationController (objects/replication.py)."""
