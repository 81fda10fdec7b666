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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from nodeagent.apiserver.strategies import Prepared, Strategy
from nodeagent.objects import workloads
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
        workloads.validate(obj, clock)

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

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared | None:
        """The selector first, then the defaults: a Job without labels takes its template's,
        generated ones included (as kube-apiserver 1.37 stores it)."""
        workloads.generate_job_selector(obj)
        return super().prepare_for_create(obj, clock)
