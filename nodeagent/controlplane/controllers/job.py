"""The Job controller (kube-controller-manager's `job`): runs a Job's pods to completion.

Why here: a Job needs it when no kube-controller-manager runs. The decisions are
workloads/job.py's; this manager reads the Job and the pods of its namespace from the store and
writes pods, deletions, the status and upstream's events (SuccessfulCreate, SuccessfulDelete,
Completed, BackoffLimitExceeded...) in one transaction. Pods end on their node: a virtual node
ends a pod after its nodeagent.dev/finish-after-seconds annotation (Succeeded, or Failed with
nodeagent.dev/exit-code), so a Job's template carries those to complete or fail. Switched off
with controlPlane.controllers (`-job`), the real controller can run instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.podcontrol import adopt_and_release, create_and_delete, write_status
from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, own_or_owner_key
from nodeagent.controlplane.events import EventRecorder
from nodeagent.controlplane.workloads import job
from nodeagent.controlplane.workloads import pods as P
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("Job", "Pod")


class JobController(KeyedController):
    name = "job-controller"

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.events = EventRecorder("job-controller")

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        return own_or_owner_key(obj, "Job")

    def sync(self, key: Key) -> float | None:
        ns, name = key
        obj = self.store.peek("Job", ns, name)
        if obj is None:
            return None
        now = self.clock.now()
        plan = job.plan(obj, self.store.scan("Pod", ns), now)
        self._apply(obj, plan, now)
        return plan.recheck_at

    def _apply(self, obj: Mapping[str, Any], plan: job.Plan, now: float) -> None:
        ref = P.owner_reference(obj, job.API_VERSION, job.KIND)
        with self.store.transaction(manager="kube-controller-manager") as tx:
            adopt_and_release(tx, obj, ref, plan.adopt, plan.release)
            create_and_delete(tx, obj, plan.create, plan.delete, self.clock, self.events, now)
            # as trackJobStatusAndRemoveFinalizers: the uncounted pods into status, their finalizers
            # removed, then the counters (plan.status)
            write_status(tx, "Job", obj, plan.interim)
            for pod in plan.unfinalize:
                md = pod["metadata"]
                cur = tx.peek("Pod", md["namespace"], md["name"])
                if cur is None or cur["metadata"].get("uid") != md.get("uid"):
                    continue  # gone: as a patch answered NotFound, the finalizer counts as removed
                kept = [f for f in cur["metadata"].get("finalizers") or () if f != job.TRACKING_FINALIZER]
                tx.set_finalizers("Pod", md["namespace"], md["name"], kept)
            for type_, reason, message in plan.events:
                self.events.record(tx, obj, type_, reason, message, now=now)
            write_status(tx, "Job", obj, plan.status)
