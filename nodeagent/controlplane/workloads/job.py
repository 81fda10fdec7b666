"""The Job controller's decisions (upstream pkg/controller/job/job_controller.go): pods up to
parallelism until completions succeed, NonIndexed and Indexed, backoffLimit, activeDeadlineSeconds,
suspend, podFailurePolicy, podReplacementPolicy and upstream's conditions.

One responsibility: from a Job and the pods of its namespace, what one sync writes: pods to
create (generateName `<job>-`, the template's labels: the API server's Job strategy put the
controller-uid and job-name labels there; an Indexed Job's pods for the lowest pending indexes, as
job_indexed.py makes them), active pods to delete (a finished or suspended Job, surplus over
parallelism, an Indexed Job's repeated or out-of-range indexes), and the status: active, ready,
terminating, succeeded (an Indexed Job's succeeded indexes, with completedIndexes), failed (failures a
podFailurePolicy Ignore rule matches do not count), failedIndexes (backoffLimitPerIndex), startTime,
completionTime and the conditions as 1.37 writes them: SuccessCriteriaMet then Complete
(CompletionsReached, "Reached expected number of succeeded pods"; SuccessPolicy, "Matched rules at
index N"), FailureTarget then Failed (PodFailurePolicy with the FailJob rule's message;
BackoffLimitExceeded, "Job has reached the specified backoff limit"; DeadlineExceeded, "Job was
active longer than specified deadline"; MaxFailedIndexesExceeded, "Job has exceeded the specified
maximal number of failed indexes"; FailedIndexes, "Job has failed indexes"), Suspended. With
podReplacementPolicy Failed a terminating pod is not replaced until it is gone. A failed pod's
replacement waits upstream's backoff (10 s doubling, at most 6 min, since the last failure); with
backoffLimitPerIndex each index backs off on its own and its replacement pod carries the index's
failure counts (job_indexed.py). Pure: no I/O.

Differences: pods carry no batch.kubernetes.io/job-tracking finalizer and status has no
uncountedTerminatedPods bookkeeping: succeeded and failed count the Job's terminal pods (never
going down when pods are removed; a pod deleted before it ended counts failed even when its node
then ends it Succeeded, as upstream counts it on seeing the deletion), failedIndexes the recorded
ones and those of the failed pods still present (upstream keeps a failed pod's finalizer until its
replacement exists, so the same pods are seen).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.workloads import job_indexed as JI
from nodeagent.controlplane.workloads import pods as P
from nodeagent.controlplane.workloads.replicaset import claim
from nodeagent.store.meta import rfc3339

API_VERSION, KIND = "batch/v1", "Job"
MAX_PER_SYNC = 500
BACKOFF, MAX_BACKOFF = JI.BACKOFF, JI.MAX_BACKOFF
COMPLETE_REASON, COMPLETE_MESSAGE = "CompletionsReached", "Reached expected number of succeeded pods"
BACKOFF_REASON, BACKOFF_MESSAGE = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
POLICY_REASON = "PodFailurePolicy"
DEADLINE_REASON, DEADLINE_MESSAGE = "DeadlineExceeded", "Job was active longer than specified deadline"
MAX_FAILED_REASON = "MaxFailedIndexesExceeded"
MAX_FAILED_MESSAGE = "Job has exceeded the specified maximal number of failed indexes"
FAILED_INDEXES_REASON, FAILED_INDEXES_MESSAGE = "FailedIndexes", "Job has failed indexes"
SUCCESS_POLICY_REASON = "SuccessPolicy"


@dataclass
class Plan:
    adopt: list[P.Obj] = field(default_factory=list)
    release: list[P.Obj] = field(default_factory=list)
    create: list[dict[str, Any]] = field(default_factory=list)
    delete: list[P.Obj] = field(default_factory=list)
    status: dict[str, Any] | None = None
    events: list[tuple[str, str, str]] = field(default_factory=list)
    recheck_at: float | None = None


def condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == ctype), None)


def finished(job: P.Obj) -> bool:
    status = job.get("status") or {}
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in status.get("conditions") or ())


def _new_condition(ctype: str, reason: str, message: str, now: float, status: str = "True") -> dict[str, Any]:
    stamp = rfc3339(now)
    return {"type": ctype, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def _finished_at(pod: P.Obj) -> float | None:
    times = [P.parse_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
             for c in (pod.get("status") or {}).get("containerStatuses") or ()]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _backoff_until(failed: Sequence[P.Obj], succeeded: Sequence[P.Obj]) -> float | None:
    """The backoff record: failures after the last success, 10 s doubling from the last one."""
    last_success = max((t for p in succeeded if (t := _finished_at(p)) is not None), default=None)
    after = [t for p in failed if (t := _finished_at(p)) is not None and (last_success is None or t > last_success)]
    if not after:
        return None
    delay: float = min(BACKOFF * 2 ** (len(after) - 1), MAX_BACKOFF)
    return max(after) + delay


def plan(job: P.Obj, namespace_pods: Sequence[P.Obj], now: float) -> Plan:
    out = Plan()
    spec = job.get("spec") or {}
    indexed = spec.get("completionMode") == "Indexed"
    per_index = indexed and spec.get("backoffLimitPerIndex") is not None
    policy = spec.get("podFailurePolicy")
    only_failed = spec.get("podReplacementPolicy") == "Failed"
    if finished(job):
        return out
    owned, out.adopt, out.release = claim(job, spec.get("selector"), namespace_pods)
    active = [p for p in owned if P.is_active(p)]
    terminating = sum(1 for p in owned if P.is_terminating(p))
    succeeded_pods = [p for p in owned if JI.pod_succeeded(p, only_failed)]
    failed_pods = [p for p in owned if JI.pod_failed(p, only_failed) and JI.match_failure_policy(policy, p)[1]]
    old = dict(job.get("status") or {})
    status: dict[str, Any] = {k: v for k, v in old.items()}
    status["conditions"] = [dict(c) for c in old.get("conditions") or ()]
    completions = spec.get("completions")
    done_indexes = JI.succeeded_indexes(job, owned, int(completions or 0), only_failed) if indexed else set()
    succeeded = len(done_indexes) if indexed else max(int(old.get("succeeded") or 0), len(succeeded_pods))
    failed = max(int(old.get("failed") or 0), len(failed_pods))
    suspended = bool(spec.get("suspend"))
    if not old.get("startTime") and not suspended:
        status["startTime"] = rfc3339(now)
    start = P.parse_time(status.get("startTime"))
    backoff_limit = int(spec["backoffLimit"]) if spec.get("backoffLimit") is not None else 6
    deadline = spec.get("activeDeadlineSeconds")
    finish: dict[str, Any] | None = None
    for ctype in ("SuccessCriteriaMet", "FailureTarget"):
        cur = condition(status, ctype)
        if cur is not None and cur.get("status") == "True":
            finish = cur
    if finish is None and (message := _fail_job_message(policy, owned, only_failed)) is not None:
        finish = _new_condition("FailureTarget", POLICY_REASON, message, now)
    if finish is None:
        if failed > backoff_limit or _past_backoff_on_failure(spec, active, backoff_limit):
            finish = _new_condition("FailureTarget", BACKOFF_REASON, BACKOFF_MESSAGE, now)
        elif deadline is not None and start is not None and not suspended and now - start >= int(deadline):
            finish = _new_condition("FailureTarget", DEADLINE_REASON, DEADLINE_MESSAGE, now)
        elif deadline is not None and start is not None and not suspended:
            out.recheck_at = start + int(deadline)
    lost: set[int] = set()  # the failed indexes (backoffLimitPerIndex)
    delayed: dict[int, P.Obj] = {}
    if per_index:
        lost = JI.failed_indexes(job, owned, int(completions or 0), only_failed)
        if finish is None:
            max_failed = spec.get("maxFailedIndexes")
            if max_failed is not None and len(lost) > int(max_failed):
                finish = _new_condition("FailureTarget", MAX_FAILED_REASON, MAX_FAILED_MESSAGE, now)
            elif lost and len(lost) + len(done_indexes) >= int(completions or 0):
                finish = _new_condition("FailureTarget", FAILED_INDEXES_REASON, FAILED_INDEXES_MESSAGE, now)
        delayed = JI.delayed_per_index(owned, int(completions or 0), done_indexes | lost | _indexes(active),
                                       only_failed)
    if indexed and finish is None and \
            (matched := JI.match_success_policy(spec.get("successPolicy"), int(completions or 0), done_indexes)):
        finish = _new_condition("SuccessCriteriaMet", SUCCESS_POLICY_REASON, matched, now)
    parallelism = int(spec["parallelism"]) if spec.get("parallelism") is not None else 1
    n_active = len(active)
    if finish is not None:
        out.delete = list(active)
        terminating += len(active)
        n_active = 0
    elif not P.deleting(job):
        if suspended:
            want = 0
        elif completions is None:
            want = n_active if succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - succeeded, parallelism))
        out.delete = _for_removal(active, max(0, n_active - want), int(completions or 0) if indexed else None, now)
        if out.delete:
            n_active -= len(out.delete)
            terminating += len(out.delete)
        elif (diff := want - n_active - (terminating if only_failed else 0)) > 0:
            until = None if per_index else _backoff_until(failed_pods, succeeded_pods)
            if until is not None and until > now:
                out.recheck_at = until if out.recheck_at is None else min(out.recheck_at, until)
            else:
                ref = P.owner_reference(job, API_VERSION, KIND)
                if indexed:
                    taken = done_indexes | _indexes(active) | lost
                    if only_failed:
                        taken |= _indexes([p for p in owned if P.is_terminating(p)])
                    pending = JI.first_pending(min(diff, MAX_PER_SYNC), int(completions or 0), taken)
                    if per_index:
                        pending = _past_index_backoff(pending, delayed, now, out)
                    out.create = [JI.indexed_pod(job, ref, ix, JI.replacement_counts(spec, delayed.get(ix))
                                                 if per_index else None) for ix in pending]
                else:
                    template = spec.get("template") or {}
                    out.create = [P.pod_from_template(template, job, ref) for _ in range(min(diff, MAX_PER_SYNC))]
                n_active += len(out.create)
        done = succeeded > 0 and n_active == 0 if completions is None else \
            succeeded >= int(completions) and n_active == 0
        if done:
            finish = _new_condition("SuccessCriteriaMet", COMPLETE_REASON, COMPLETE_MESSAGE, now)
        elif suspended:
            _ensure(status, "Suspended", "True", "JobSuspended", "Job suspended", now, out, "Suspended")
        elif condition(status, "Suspended") is not None and \
                _ensure(status, "Suspended", "False", "JobResumed", "Job resumed", now, out, "Resumed"):
            status["startTime"] = rfc3339(now)
    if finish is not None:
        if condition(status, finish["type"]) is None:
            status["conditions"].append(finish)
        if n_active == 0 and terminating == 0:  # all pods gone: the Job's final condition
            final = "Complete" if finish["type"] == "SuccessCriteriaMet" else "Failed"
            status["conditions"].append(_new_condition(final, finish["reason"], finish["message"], now))
            if final == "Complete":
                status["completionTime"] = rfc3339(now)
                out.events.append(("Normal", "Completed", "Job completed"))
            else:
                out.events.append(("Warning", finish["reason"], finish["message"]))
    ready = sum(1 for p in active if P.is_ready(p)) if finish is None else 0
    status.update(ready=ready, terminating=terminating, uncountedTerminatedPods={})
    if indexed and done_indexes:
        status["completedIndexes"] = JI.format_indexes(done_indexes)
    elif indexed:
        status.pop("completedIndexes", None)
    if per_index:  # a pointer upstream: "" until an index fails
        status["failedIndexes"] = JI.format_indexes(lost)
    for key, value in (("active", n_active), ("succeeded", succeeded), ("failed", failed)):
        if value:
            status[key] = value
        else:
            status.pop(key, None)
    if not status["conditions"]:
        status.pop("conditions")
    if status != old:
        out.status = status
    return out


def _indexes(pods: Sequence[P.Obj]) -> set[int]:
    return {ix for p in pods if (ix := JI.completion_index(p)) is not None}


def _past_index_backoff(pending: list[int], delayed: dict[int, P.Obj], now: float, out: Plan) -> list[int]:
    """getPodCreationInfoForIndependentIndexes: the pending indexes whose own backoff is over; when
    none is, a recheck at the soonest end."""
    waits = {ix: JI.backoff_remaining(delayed.get(ix), now) for ix in pending}
    ready = [ix for ix in pending if waits[ix] == 0]
    if not ready and waits:
        until = now + min(waits.values())
        out.recheck_at = until if out.recheck_at is None else min(out.recheck_at, until)
    return ready


def _for_removal(active: Sequence[P.Obj], at_least: int, completions: int | None, now: float) -> list[P.Obj]:
    """activePodsForRemoval: an Indexed Job's surplus indexes first, then the least advanced pods."""
    rm = JI.surplus(active, completions, now) if completions is not None else []
    if len(rm) < at_least:
        left = [p for p in active if all(p is not r for r in rm)]
        rm += P.deletion_order(left, left, now)[: at_least - len(rm)]
    return rm


def _fail_job_message(policy: P.Obj | None, pods: Sequence[P.Obj], only_failed: bool) -> str | None:
    """getFailJobMessage: the first failed pod (a deleted one counts unless podReplacementPolicy is
    Failed) matching a FailJob rule."""
    if not policy:
        return None
    for pod in pods:
        if JI.pod_failed(pod, only_failed) and (message := JI.match_failure_policy(policy, pod)[0]) is not None:
            return message
    return None


def _past_backoff_on_failure(spec: P.Obj, active: Sequence[P.Obj], limit: int) -> bool:
    """pastBackoffLimitOnFailure: with restartPolicy OnFailure, container restarts count."""
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(int(c.get("restartCount") or 0) for p in active
                   for c in [*((p.get("status") or {}).get("initContainerStatuses") or ()),
                             *((p.get("status") or {}).get("containerStatuses") or ())])
    return restarts > 0 and restarts >= limit if limit else restarts > 0


def _ensure(status: dict[str, Any], ctype: str, value: str, reason: str, message: str, now: float, out: Plan,
            event: str) -> bool:
    """ensureJobConditionStatus: set (or add, for True) the condition; an event when it changed."""
    cur = condition(status, ctype)
    if cur is None:
        if value != "True":
            return False
        status["conditions"].append(_new_condition(ctype, reason, message, now))
    elif cur.get("status") != value or cur.get("reason") != reason or cur.get("message") != message:
        stamp = rfc3339(now)
        cur.update(status=value, reason=reason, message=message, lastProbeTime=stamp,
                   lastTransitionTime=stamp if cur.get("status") != value else cur.get("lastTransitionTime"))
    else:
        return False
    out.events.append(("Normal", event, message))
    return True
