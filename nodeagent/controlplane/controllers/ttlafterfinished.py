"""The TTL-after-finished controller (kube-controller-manager's `ttl-after-finished`, upstream
pkg/controller/ttlafterfinished): a finished Job with `spec.ttlSecondsAfterFinished` is deleted that
many seconds after it finished.

Why: kube-controller-manager runs it by default, so on a real cluster such a Job (and, through the
foreground deletion, its pods) goes away; a twin run against the real control plane showed the
embedded one keeping it forever. As upstream: a Job counts as finished once its Complete or Failed
condition is True, from that condition's lastTransitionTime (jobFinishTime; a finished Job without
one is an error, retried); one being deleted is left alone; when the time has come the Job is read
again and, if it still expires, deleted with propagationPolicy Foreground and its uid as a
precondition (the garbage collector then removes its pods before it). Keyed by Job, driven by
loop.py as a component. Switched off with controlPlane.controllers (`-ttl-after-finished`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, obj_key
from nodeagent.controlplane.workloads import pods as P
from nodeagent.errors import NodeAgentError
from nodeagent.store.propagation import FOREGROUND_POLICY, deletion_finalizers

logger = logging.getLogger(__name__)

KINDS = ("Job",)


class TTLAfterFinishedController(KeyedController):
    name = "ttl-after-finished-controller"

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        # addJob/updateJob: only Jobs that need cleaning up are queued
        if event_type == "DELETED" or not needs_cleanup(obj):
            return []
        return [obj_key(obj)]

    def sync(self, key: Key) -> float | None:
        ns, name = key
        job = self.store.peek("Job", ns, name)
        if job is None or not needs_cleanup(job):
            return None
        expire_at = expires_at(job)  # raises for a finished Job without a finish time: retried
        if expire_at > self.clock.now():
            return expire_at
        with self.store.transaction(manager="kube-controller-manager") as tx:
            fresh = tx.try_get("Job", ns, name)  # processTTL looks at the Job again before deleting it
            if fresh is None or P.uid(fresh) != P.uid(job) or not needs_cleanup(fresh) \
                    or expires_at(fresh) > self.clock.now():
                return None
            logger.info("ttl-after-finished: cleaning up job=%s/%s", ns, name)
            wanted = deletion_finalizers("Job", "batch/v1", list(fresh["metadata"].get("finalizers") or ()),
                                         FOREGROUND_POLICY)
            if wanted is not None:
                tx.set_finalizers("Job", ns, name, wanted)
            tx.delete("Job", ns, name, uid=P.uid(fresh))
        return None


def needs_cleanup(job: Mapping[str, Any]) -> bool:
    """needsCleanup: a TTL, not being deleted, finished."""
    spec = job.get("spec") or {}
    return spec.get("ttlSecondsAfterFinished") is not None and not P.deleting(job) \
        and _finish_condition(job) is not None


def expires_at(job: Mapping[str, Any]) -> float:
    """The wall-clock second the Job expires: its finish time plus its TTL."""
    condition = _finish_condition(job)
    finished = P.parse_time((condition or {}).get("lastTransitionTime"))
    if finished is None:
        md = job.get("metadata") or {}
        raise NodeAgentError(f"unable to find the time when the Job {md.get('namespace')}/{md.get('name')} finished")
    return finished + int((job.get("spec") or {}).get("ttlSecondsAfterFinished") or 0)


def _finish_condition(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c
    return None
