"""The workload kinds' strategy: apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet,
ControllerRevision and batch/v1 Job, CronJob.

Why one class: their registry strategies (k8s.io/kubernetes pkg/registry/apps/* and batch/*)
differ only in which defaults and checks apply, and those are the object model's
(objects/workloads.py, by kind). What is the strategy's own: defaults run on create and on
every spec write (upstream decodes every body through the defaulting scheme), status dropped on
create and generation handled by the store, the status subresource checks the status counters,
and an update keeps the selector. Pure: no I/O; the clock is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from nodeagent.apiserver.strategies import Prepared, Strategy
from nodeagent.controlplane.workloads import cron
from nodeagent.errors import ValidationError
from nodeagent.objects import workloads
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta
from nodeagent.util.clock import Clock

Obj = dict[str, Any]


@dataclass(frozen=True)
class WorkloadStrategy(Strategy):
    """Defaults, then the kind's validation (objects/workloads.py)."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared | None:
        super().prepare_for_create(obj, clock)
        workloads.set_defaults(obj)
        empty = workloads.EMPTY_STATUS.get(self.kind)
        if empty is not None:
            obj["status"] = dict(empty)
        return None

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        workloads.set_defaults(new)

    def validate(self, obj: Obj, clock: Clock) -> None:
        if self.kind != "CronJob":
            workloads.validate(obj, clock)
            return
        # validateCronJobSpec's handwritten checks of the schedule and the time zone come first
        errs = Errors(cron_errors(obj.get("spec") or {}))
        errs.check(workloads.validate, obj, clock)
        errs.raise_all()

    def validate_update(self, new: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        workloads.validate_update(new, old)

    def validate_status(self, obj: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        """A status write keeps the stored spec (already valid): only the status counters."""
        workloads.validate_status(obj)


@dataclass(frozen=True)
class JobStrategy(WorkloadStrategy):
    """Jobs: unless spec.manualSelector, the selector is generated from the Job's uid and its
    template labelled to match (upstream's generateSelectorIfNeeded in PrepareForCreate), so the
    uid is chosen before the strategy runs."""

    uid_before_create: ClassVar[bool] = True
    defaults_apart: ClassVar[bool] = True

    def decode_defaults(self, obj: Obj) -> None:
        """SetDefaults_Job and the template's as decoding runs them: the create's managedFields are
        taken after these and before PrepareForCreate's generated selector and labels, which are
        nobody's (as kube-apiserver records them)."""
        workloads.job_decode_defaults(obj)

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared | None:
        """The selector, then the defaults (again: idempotent; a create by apply comes here without
        decode_defaults, and then a Job without labels takes its template's, generated ones included,
        as kube-apiserver 1.37 stores it)."""
        workloads.job_generate_selector(obj)
        return super().prepare_for_create(obj, clock)


_TIME_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
"""validTimeZoneCharacters of pkg/apis/batch/validation."""


def cron_errors(spec: Mapping[str, Any]) -> list[ValidationError]:
    """validateScheduleFormat and validateTimeZone of a CronJob's spec, with the texts of robfig/cron
    (the controller's parser, controlplane/workloads/cron.py, so what the API takes the controller
    runs) and of Go's time.LoadLocation. A schedule naming TZ is refused as on create (a stored one
    with TZ could only come from an API server that allowed it)."""
    out: list[ValidationError] = []
    schedule = spec.get("schedule")
    if isinstance(schedule, str) and schedule:
        try:
            cron.parse(schedule)
        except cron.ScheduleError as err:
            out.append(meta.invalid("spec.schedule", schedule, str(err)))
        if "TZ" in schedule:
            out.append(meta.invalid("spec.schedule", schedule,
                                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    zone = spec.get("timeZone")
    if isinstance(zone, str):
        out.extend(_time_zone_errors(zone))
    return out


def _time_zone_errors(zone: str) -> list[ValidationError]:
    path = "spec.timeZone"
    if not zone:
        return [meta.invalid(path, zone, "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [meta.invalid(path, zone, f"unknown time zone {zone}")]
    if zone.lower() == "local":
        return [meta.invalid(path, zone, "timeZone must be an explicit time zone as defined in "
                             "https://www.iana.org/time-zones")]
    try:
        cron.load_zone(zone)
    except cron.ScheduleError as err:
        return [meta.invalid(path, zone, str(err))]
    return []


TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
"""apps/v1's spelling of the internal DaemonSet.Spec.TemplateGeneration (the v1 conversion writes it)."""


def template_generation(obj: Mapping[str, Any]) -> int:
    """The annotation's value as the v1 conversion parses it (0 when absent or not a number)."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return int(str(text)) if text is not None else 0
    except ValueError:
        return 0


def _set_template_generation(obj: Obj, value: int) -> None:
    md = obj.setdefault("metadata", {})
    md["annotations"] = {**(md.get("annotations") or {}), TEMPLATE_GENERATION: str(value)}


@dataclass(frozen=True)
class DaemonSetStrategy(WorkloadStrategy):
    """DaemonSets: spec.templateGeneration (the `deprecated.daemonset.template.generation` annotation
    in apps/v1) is 1 on create and goes up with each template change, never set by a client's update
    (upstream's daemonSetStrategy.PrepareForCreate/PrepareForUpdate); the daemonset controllers label
    their pods `pod-template-generation` with it."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared | None:
        out = super().prepare_for_create(obj, clock)
        _set_template_generation(obj, max(template_generation(obj), 1))
        return out

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        super().prepare_for_update(new, old)
        generation = max(template_generation(old), 1)  # stored before the annotation was kept: as created
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
        _set_template_generation(new, generation)
