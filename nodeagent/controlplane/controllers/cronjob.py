"""The CronJob controller (kube-controller-manager's `cronjob`): starts a CronJob's Jobs on its schedule.

Why here: a CronJob needs it when no kube-controller-manager runs. The decisions are
workloads/cronjob.py's; this manager reads the CronJob and the Jobs it controls from the store and writes,
in one transaction, the Job deletions (background: the garbage collector takes their pods), the new Job
as the API server would store a Job created through it (the Job strategy's generated selector and
defaults, an empty status), upstream's events (SuccessfulCreate "Created job <name>", SuccessfulDelete,
SawCompletedJob, MissSchedule...) and the status. The key is looked at again at the next scheduled time
on the injected clock, so tests drive schedules with the fake clock. A Job create the store refuses is
reported (FailedCreate) and retried with the work queue's backoff, as upstream returns the error.
Switched off with controlPlane.controllers (`-cronjob`), the real controller can run instead.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, own_or_owner_key
from nodeagent.controlplane.events import NORMAL, WARNING, EventRecorder
from nodeagent.controlplane.workloads import cronjob
from nodeagent.controlplane.workloads import pods as P
from nodeagent.errors import AlreadyExists, NodeAgentError, NotFound
from nodeagent.objects import workloads
from nodeagent.store import ObjectStore, Transaction
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("CronJob", "Job")


class JobCreateFailed(RuntimeError):
    """The store refused the Job a schedule asked for: the key is retried with backoff."""


class CronJobController(KeyedController):
    name = "cronjob-controller"

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.events = EventRecorder("cronjob-controller")

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        return own_or_owner_key(obj, "CronJob")

    def sync(self, key: Key) -> float | None:
        ns, name = key
        cj = self.store.peek("CronJob", ns, name)
        if cj is None:
            return None
        jobs = [j for j in self.store.scan("Job", ns) if P.controlled_by(j, cj)]
        now = self.clock.now()
        plan = cronjob.plan(cj, jobs, now)
        failure = self._apply(cj, plan, now)
        if failure is not None:
            raise JobCreateFailed(failure)
        return plan.requeue_at

    def _apply(self, cj: Mapping[str, Any], plan: cronjob.Plan, now: float) -> str | None:
        ns = P.namespace(cj)
        failure: str | None = None
        with self.store.transaction(manager="kube-controller-manager") as tx:
            for job in plan.delete:
                with contextlib.suppress(NotFound):  # gone already: nothing left to delete
                    tx.delete("Job", ns, P.name(job), uid=P.uid(job))
            for type_, reason, message in plan.events:
                self.events.record(tx, cj, type_, reason, message, now=now)
            status: dict[str, Any] | None = plan.status if plan.write_status else None
            if plan.create is not None:
                try:
                    made = create_job(tx, plan.create)
                except AlreadyExists:
                    found = tx.get("Job", ns, P.name(plan.create))
                    mine = P.controlled_by(found, cj)
                    if mine and not any(r.get("uid") == P.uid(found) for r in plan.status.get("active") or ()):
                        status = cronjob.started(plan, found)
                        logger.info("job already exists cronjob=%s/%s job=%s", ns, P.name(cj), P.name(found))
                except NodeAgentError as err:
                    failure = str(err)
                    self.events.record(tx, cj, WARNING, "FailedCreate", f"Error creating job: {err}", now=now)
                else:
                    self.events.record(tx, cj, NORMAL, "SuccessfulCreate", f"Created job {P.name(made)}", now=now)
                    status = cronjob.started(plan, made)
            if status is not None and status != (cj.get("status") or {}):
                cur = tx.get("CronJob", ns, P.name(cj))
                cur["status"] = status
                tx.update_status(cur)
        return failure


def create_job(tx: Transaction, job: Mapping[str, Any]) -> dict[str, Any]:
    """Store a Job as a create through the API server leaves it: a uid chosen first, the selector and
    template labels the Job strategy generates from it, the defaults, an empty status."""
    obj = copy.deepcopy(dict(job))
    uid = str(uuid.uuid4())
    obj["metadata"]["uid"] = uid
    workloads.job_decode_defaults(obj)
    obj = tx.record_fields(None, obj)  # the create's managedFields: before the generated selector
    workloads.job_generate_selector(obj)
    workloads.set_defaults(obj)
    obj["status"] = dict(workloads.EMPTY_STATUS["Job"])
    return tx.create(obj, uid=uid)
