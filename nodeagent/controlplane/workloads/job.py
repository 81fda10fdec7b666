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

Pods are tracked with finalizers as upstream (trackJobStatusAndRemoveFinalizers): each pod is created
with the batch.kubernetes.io/job-tracking finalizer; a finished pod still holding it is new to the
counts, goes into status.uncountedTerminatedPods (its uid; an Indexed Job's succeeded pod by its index
into completedIndexes), its finalizer is removed, and the counters take it over from the uncounted
list. A pod without the finalizer was counted before, so succeeded and failed survive the deletion of
finished pods. Upstream writes the status with the uncounted uids, patches the pods, then writes the
counters; the controller writes the same three steps in one transaction (`interim`, `unfinalize`,
`status`), so a watcher sees the same sequence of objects.
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
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
MAX_UNCOUNTED = 500
"""MaxUncountedPods: the pods one sync moves through uncountedTerminatedPods at most."""


@dataclass
class Plan:
    adopt: list[P.Obj] = field(default_factory=list)
    release: list[P.Obj] = field(default_factory=list)
    create: list[dict[str, Any]] = field(default_factory=list)
    delete: list[P.Obj] = field(default_factory=list)
    status: dict[str, Any] | None = None
    events: list[tuple[str, str, str]] = field(default_factory=list)
    recheck_at: float | None = None
    interim: dict[str, Any] | None = None
    """The status with the new uncounted pods, written before their finalizers are removed."""
    unfinalize: list[P.Obj] = field(default_factory=list)
    """Pods whose job-tracking finalizer goes."""


def _with_tracking(pod: P.Obj, on: bool) -> P.Obj:
    """A copy of the pod with the tracking finalizer added (`on`) or removed."""
    md = dict(pod.get("metadata") or {})
    finalizers = [f for f in md.get("finalizers") or () if f != TRACKING_FINALIZER]
    if on:
        finalizers.append(TRACKING_FINALIZER)
    if finalizers:
        md["finalizers"] = finalizers
    else:
        md.pop("finalizers", None)
    return {**pod, "metadata": md}


def tracked(pod: P.Obj) -> bool:
    """hasJobTrackingFinalizer: the pod is not counted yet."""
    return TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


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
    if out.adopt or out.release:  # ClaimPods with the tracking finalizer: added on adoption, removed on release
        adopted = {id(p): _with_tracking(p, True) for p in out.adopt}
        out.adopt = list(adopted.values())
        owned = [adopted.get(id(p), p) for p in owned]
        out.release = [_with_tracking(p, False) for p in out.release]
    active = [p for p in owned if P.is_active(p)]
    terminating = sum(1 for p in owned if P.is_terminating(p))
    succeeded_pods = [p for p in owned if JI.pod_succeeded(p, only_failed)]
    failed_pods = [p for p in owned if JI.pod_failed(p, only_failed) and JI.match_failure_policy(policy, p)[1]]
    old = dict(job.get("status") or {})
    status: dict[str, Any] = {k: v for k, v in old.items()}
    status["conditions"] = [dict(c) for c in old.get("conditions") or ()]
    completions = spec.get("completions")
    done_indexes = JI.succeeded_indexes(job, owned, int(completions or 0), only_failed) if indexed else set()
    counts = _Counts.of(old, owned)
    new_succeeded = [p for p in succeeded_pods if tracked(p) and P.uid(p) not in counts.uncounted_succeeded]
    new_failed = [p for p in failed_pods if tracked(p) and P.uid(p) not in counts.uncounted_failed]
    succeeded = len(done_indexes) if indexed else \
        counts.succeeded + len(counts.uncounted_succeeded) + len(new_succeeded)
    failed = counts.failed + len(counts.uncounted_failed) + len(new_failed)
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
                for made in out.create:  # appendJobCompletionFinalizerIfNotFound
                    finalizers = made["metadata"].setdefault("finalizers", [])
                    if TRACKING_FINALIZER not in finalizers:
                        finalizers.append(TRACKING_FINALIZER)
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
    reached_max = _track(job, owned, counts, finish, delayed if per_index else {}, only_failed, out)
    if out.interim is not None:
        out.interim = {**status, **out.interim}
        if finish is not None and condition(out.interim, finish["type"]) is None:
            out.interim["conditions"] = [*status["conditions"], finish]
        for key in ("succeeded", "failed"):  # omitempty
            if not out.interim.get(key):
                out.interim.pop(key, None)
        if not out.interim["conditions"]:
            out.interim.pop("conditions")
    if finish is not None:
        if condition(status, finish["type"]) is None:
            status["conditions"].append(finish)
        if n_active == 0 and terminating == 0 and not reached_max:  # all pods gone: the final condition
            final = "Complete" if finish["type"] == "SuccessCriteriaMet" else "Failed"
            status["conditions"].append(_new_condition(final, finish["reason"], finish["message"], now))
            if final == "Complete":
                status["completionTime"] = rfc3339(now)
                out.events.append(("Normal", "Completed", "Job completed"))
            else:
                out.events.append(("Warning", finish["reason"], finish["message"]))
    ready = sum(1 for p in active if P.is_ready(p)) if finish is None else 0
    status.update(ready=ready, terminating=terminating, uncountedTerminatedPods=counts.left())
    if not indexed:
        succeeded = counts.succeeded
    failed = counts.failed
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


@dataclass
class _Counts:
    """The counters as status holds them (after cleanUncountedPodsWithoutFinalizers) and the uids
    waiting in uncountedTerminatedPods."""

    succeeded: int
    failed: int
    uncounted_succeeded: list[str]
    uncounted_failed: list[str]
    removed: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, status: P.Obj, pods: Sequence[P.Obj]) -> _Counts:
        """cleanUncountedPodsWithoutFinalizers: an uncounted uid whose pod no longer holds the
        finalizer (or is gone) is counted."""
        uncounted = status.get("uncountedTerminatedPods") or {}
        holding = {P.uid(p) for p in pods if tracked(p)}
        out = cls(int(status.get("succeeded") or 0), int(status.get("failed") or 0), [], [])
        for uid in uncounted.get("succeeded") or ():
            if uid in holding:
                out.uncounted_succeeded.append(uid)
            else:
                out.succeeded += 1
        for uid in uncounted.get("failed") or ():
            if uid in holding:
                out.uncounted_failed.append(uid)
            else:
                out.failed += 1
        return out

    def flush(self) -> None:
        """The pods whose finalizers are removed leave the uncounted lists for the counters."""
        for name in ("succeeded", "failed"):
            ids: list[str] = getattr(self, f"uncounted_{name}")
            kept = [u for u in ids if u not in self.removed]
            setattr(self, name, getattr(self, name) + len(ids) - len(kept))
            setattr(self, f"uncounted_{name}", kept)

    def left(self) -> dict[str, Any]:
        """status.uncountedTerminatedPods as upstream writes it (empty lists omitted)."""
        out: dict[str, Any] = {}
        if self.uncounted_succeeded:
            out["succeeded"] = list(self.uncounted_succeeded)
        if self.uncounted_failed:
            out["failed"] = list(self.uncounted_failed)
        return out


def _track(job: P.Obj, pods: Sequence[P.Obj], counts: _Counts, finish: P.Obj | None, delayed: dict[int, P.Obj],
           only_failed: bool, out: Plan) -> bool:
    """trackJobStatusAndRemoveFinalizers over the pods still holding the finalizer: those that may
    lose it (canRemoveFinalizer) go to `out.unfinalize`, the finished ones not counted yet into the
    uncounted lists (`out.interim` when any was added), then the counters take them over. Whether
    MaxUncountedPods stopped the pass (the Job is not finished in this sync then)."""
    spec = job.get("spec") or {}
    indexed = spec.get("completionMode") == "Indexed"
    completions = int(spec.get("completions") or 0)
    policy = spec.get("podFailurePolicy")
    failing = finish is not None and finish.get("type") != "SuccessCriteriaMet"
    added = False
    reached_max = False
    ordered = sorted(pods, key=lambda p: (JI.completion_index(p) is None, JI.completion_index(p) or 0)) \
        if indexed else pods
    new_indexes = 0
    for pod in ordered:
        if not tracked(pod):
            continue
        uid = P.uid(pod)
        considered_failed = JI.pod_failed(pod, only_failed)
        if not _can_remove(job, pod, finish, considered_failed, delayed):
            continue
        out.unfinalize.append(pod)
        counts.removed.add(uid)
        if P.phase(pod) == P.SUCCEEDED and uid not in counts.uncounted_failed:
            if indexed:
                new_indexes += 1  # counted through completedIndexes, no uid kept
            elif uid not in counts.uncounted_succeeded:
                counts.uncounted_succeeded.append(uid)
                added = True
        elif considered_failed or failing:
            ix = JI.completion_index(pod)
            countable = uid not in counts.uncounted_failed and (not indexed or (ix is not None and ix < completions))
            if countable and (not policy or JI.match_failure_policy(policy, pod)[1]):
                counts.uncounted_failed.append(uid)
                added = True
        if new_indexes + len(counts.uncounted_succeeded) + len(counts.uncounted_failed) >= MAX_UNCOUNTED:
            reached_max = True
            break
    if added:
        out.interim = {"failed": counts.failed, "uncountedTerminatedPods": counts.left()}
        if not indexed:
            out.interim["succeeded"] = counts.succeeded
    counts.flush()
    return reached_max


def _can_remove(job: P.Obj, pod: P.Obj, finish: P.Obj | None, considered_failed: bool,
                delayed: dict[int, P.Obj]) -> bool:
    """canRemoveFinalizer: the Job is deleted or finished, the pod succeeded, or it failed and is not
    the failed pod whose index waits for its replacement (backoffLimitPerIndex)."""
    if P.deleting(job) or finish is not None or P.phase(pod) == P.SUCCEEDED:
        return True
    if not considered_failed:
        return False
    ix = JI.completion_index(pod)
    return ix is None or (kept := delayed.get(ix)) is None or P.uid(kept) != P.uid(pod)


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
