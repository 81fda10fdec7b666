"""Indexed Jobs and pod failure policies: upstream pkg/controller/job's indexed_job_utils.go and
pod_failure_policy.go over store JSON.

One responsibility: the completion index of a pod (batch.kubernetes.io/job-completion-index), the
status.completedIndexes interval text ("0-2,4,6,7" as orderedIntervals.String writes it), the lowest
pending indexes (firstPendingIndexes), the active pods an Indexed Job removes (unknown, out of range or
repeated indexes: appendDuplicatedIndexPodsForRemoval), the pod a given index gets (annotation and
label, hostname `<job>-<index>`, generateName `<job>-<index>-`, the JOB_COMPLETION_INDEX variable) and
which podFailurePolicy rule a failed pod matches (matchPodFailurePolicy: its FailJob message, whether
the failure counts), the backoffLimitPerIndex bookkeeping (the job-index-failure-count and
job-index-ignored-failure-count annotations, failed indexes: calculateFailedIndexes/isIndexFailed, the
failed pod whose replacement inherits its counts: getPodsWithDelayedDeletionPerIndex, the per-index
backoff: getRemainingTimePerIndex) and successPolicy (matchSuccessPolicy). Pure: no I/O.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodeagent.controlplane.workloads import pods as P

INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"
FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-failure-count"
IGNORED_FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-ignored-failure-count"
BACKOFF, MAX_BACKOFF = 10.0, 360.0
"""DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff."""
MAX_GENERATED_NAME = 58
"""names.MaxGeneratedNameLength: 63 less the five random characters."""


def completion_index(pod: P.Obj) -> int | None:
    """getCompletionIndex: the annotation as a non-negative integer, None when missing or unreadable."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(INDEX_KEY)
    if not isinstance(value, str) or not re.fullmatch(r"[+-]?[0-9]+", value):
        return None
    ix = int(value)
    return ix if ix >= 0 else None


def parse_indexes(text: str | None, completions: int) -> set[int]:
    """parseIndexesFromString: "1,3-5,7" below `completions` (a malformed part is skipped)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        bounds = part.split("-")
        try:
            first, last = (int(bounds[0]), int(bounds[-1])) if len(bounds) in (1, 2) else (0, -1)
        except ValueError:
            continue
        out.update(range(max(first, 0), min(last, completions - 1) + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """orderedIntervals.String: runs as "a-b", a run of two as "a,b"."""
    parts: list[str] = []
    run: list[int] = []
    for ix in sorted(set(indexes)):
        if run and ix == run[-1] + 1:
            run[1:] = [ix]
            continue
        if run:
            parts.append(_interval(run))
        run = [ix]
    if run:
        parts.append(_interval(run))
    return ",".join(parts)


def _interval(run: list[int]) -> str:
    first, last = run[0], run[-1]
    if last == first:
        return str(first)
    return f"{first},{last}" if last == first + 1 else f"{first}-{last}"


def succeeded_indexes(job: P.Obj, pods: Sequence[P.Obj], completions: int, only_failed: bool = False) -> set[int]:
    """calculateSucceededIndexes: the recorded ones and those of succeeded pods (not those pod_failed
    counts as failed)."""
    done = parse_indexes((job.get("status") or {}).get("completedIndexes"), completions)
    for pod in pods:
        ix = completion_index(pod)
        if pod_succeeded(pod, only_failed) and ix is not None and ix < completions:
            done.add(ix)
    return done


def first_pending(count: int, completions: int, taken: set[int]) -> list[int]:
    """firstPendingIndexes: the `count` lowest indexes below `completions` not in `taken`."""
    out: list[int] = []
    ix = 0
    while ix < completions and len(out) < count:
        if ix not in taken:
            out.append(ix)
        ix += 1
    return out


def surplus(active: Sequence[P.Obj], completions: int, now: float) -> list[P.Obj]:
    """appendDuplicatedIndexPodsForRemoval: pods without a usable index, past completions, and all but
    the best (the last in ActivePods order) of each repeated index."""
    rm: list[P.Obj] = []
    by_index: dict[int, list[P.Obj]] = {}
    for pod in active:
        ix = completion_index(pod)
        if ix is None or ix >= completions:
            rm.append(pod)
        else:
            by_index.setdefault(ix, []).append(pod)
    for same in by_index.values():
        if len(same) > 1:
            rm.extend(P.deletion_order(same, same, now)[: len(same) - 1])
    return rm


def indexed_pod(job: P.Obj, ref: Mapping[str, Any], index: int,
                failure_counts: tuple[int, int] | None = None) -> dict[str, Any]:
    """The pod for `index`: the template with JOB_COMPLETION_INDEX in every container, the index
    annotation and label, hostname `<job>-<index>`, generateName `<job>-<index>-`; with
    backoffLimitPerIndex, `failure_counts` (counted, ignored) as addIndexFailureCountAnnotation
    writes them (the counted one always, the ignored one when not 0)."""
    template = copy.deepcopy(dict((job.get("spec") or {}).get("template") or {}))
    spec = template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            env = container.setdefault("env", [])
            if not any(v.get("name") == INDEX_ENV for v in env):
                # apiVersion: the API server's default for a fieldRef (the pod is stored, not sent)
                env.append({"name": INDEX_ENV, "valueFrom": {"fieldRef": {
                    "apiVersion": "v1", "fieldPath": f"metadata.labels['{INDEX_KEY}']"}}})
    tmd = template.setdefault("metadata", {})
    tmd.setdefault("annotations", {})[INDEX_KEY] = str(index)
    tmd.setdefault("labels", {})[INDEX_KEY] = str(index)
    if failure_counts is not None:
        tmd["annotations"][FAILURE_COUNT_KEY] = str(failure_counts[0])
        if failure_counts[1] > 0:
            tmd["annotations"][IGNORED_FAILURE_COUNT_KEY] = str(failure_counts[1])
    spec["hostname"] = spec.get("hostname") or f"{P.name(job)}-{index}"
    suffix = f"-{index}-"
    prefix = P.name(job) + suffix
    if len(prefix) > MAX_GENERATED_NAME:
        prefix = prefix[: MAX_GENERATED_NAME - len(suffix)] + suffix
    return P.pod_from_template(template, job, ref, generate_name=prefix)


def match_failure_policy(policy: Mapping[str, Any] | None, pod: P.Obj) -> tuple[str | None, bool, str | None]:
    """matchPodFailurePolicy: (the FailJob message, whether the failure counts, the action)."""
    if not policy:
        return None, True, None
    ns, name = P.namespace(pod), P.name(pod)
    status = pod.get("status") or {}
    for index, rule in enumerate(policy.get("rules") or ()):
        action = str(rule.get("action") or "")
        on_codes = rule.get("onExitCodes")
        if on_codes is not None:
            container = _exit_code_match(status, on_codes)
            if container is None:
                continue
            code = container["state"]["terminated"].get("exitCode")
            message = (f"Container {container.get('name')} for pod {ns}/{name} failed with exit code {code} "
                       f"matching {action} rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            cond = next((c for c in status.get("conditions") or () for p in rule["onPodConditions"]
                         if c.get("type") == p.get("type") and c.get("status") == p.get("status")), None)
            if cond is None:
                continue
            message = f"Pod {ns}/{name} has condition {cond.get('type')} matching {action} rule at index {index}"
        else:
            continue
        if action == "Ignore":
            return None, False, action
        if action == "FailJob":
            return message, True, action
        if action in ("FailIndex", "Count"):
            return None, True, action
    return None, True, None


def _exit_code_match(status: Mapping[str, Any], req: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for key in ("containerStatuses", "initContainerStatuses"):
        cs: Mapping[str, Any]
        for cs in status.get(key) or ():
            terminated = (cs.get("state") or {}).get("terminated")
            if not terminated:
                continue
            if req.get("containerName") not in (None, cs.get("name")):
                continue
            code = int(terminated.get("exitCode") or 0)
            values = [int(v) for v in req.get("values") or ()]
            if code != 0 and (code in values if req.get("operator") == "In"
                              else code not in values if req.get("operator") == "NotIn" else False):
                return cs
    return None


def pod_failed(pod: P.Obj, only_failed: bool) -> bool:
    """isPodFailed: Failed, or (unless podReplacementPolicy is Failed) deleted before succeeding.

    Upstream sees the deleted pod while it still runs and counts it failed then (its finalizer
    keeps it from being counted again when the kubelet later ends it Succeeded); without the
    finalizer, a deleted pod that ended at or after its deletion was asked for counts as failed too."""
    if P.phase(pod) == P.FAILED:
        return True
    return not only_failed and P.deleting(pod) and (P.phase(pod) != P.SUCCEEDED or _ended_by_deletion(pod))


def _ended_by_deletion(pod: P.Obj) -> bool:
    meta = pod.get("metadata") or {}
    deleted = P.parse_time(meta.get("deletionTimestamp"))
    if deleted is None:
        return False
    asked = deleted - float(meta.get("deletionGracePeriodSeconds") or 0)
    times = [P.parse_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
             for c in (pod.get("status") or {}).get("containerStatuses") or ()]
    known = [t for t in times if t is not None]
    return not known or max(known) >= asked


def pod_succeeded(pod: P.Obj, only_failed: bool) -> bool:
    """Succeeded and not counted failed (pod_failed: ended by its deletion)."""
    return P.phase(pod) == P.SUCCEEDED and not pod_failed(pod, only_failed)


def _count(pod: P.Obj, key: str) -> int:
    """parseInt32 of an index failure count annotation: 0 when missing, unreadable or out of range."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        n = int(value) if isinstance(value, str) else 0
    except ValueError:
        return 0
    return n if 0 <= n <= 2**31 - 1 else 0


def failure_count(pod: P.Obj) -> int:
    """getIndexFailureCount: the failures of the pod's index before this pod, counted ones only."""
    return _count(pod, FAILURE_COUNT_KEY)


def absolute_failure_count(pod: P.Obj) -> int:
    """getIndexAbsoluteFailureCount: counted and ignored failures before this pod."""
    return _count(pod, FAILURE_COUNT_KEY) + _count(pod, IGNORED_FAILURE_COUNT_KEY)


def is_index_failed(spec: Mapping[str, Any], pod: P.Obj, only_failed: bool) -> bool:
    """isIndexFailed: a failed pod ends its index when a FailIndex rule matches it, or when it counts
    and its index had already failed backoffLimitPerIndex times."""
    if not pod_failed(pod, only_failed):
        return False
    counted = True
    if spec.get("podFailurePolicy"):
        _, counted, action = match_failure_policy(spec["podFailurePolicy"], pod)
        if action == "FailIndex":
            return True
    return counted and failure_count(pod) >= int(spec.get("backoffLimitPerIndex") or 0)


def failed_indexes(job: P.Obj, pods: Sequence[P.Obj], completions: int, only_failed: bool) -> set[int]:
    """calculateFailedIndexes: the recorded status.failedIndexes and those of pods ending their index."""
    spec = job.get("spec") or {}
    out = parse_indexes((job.get("status") or {}).get("failedIndexes"), completions)
    for pod in pods:
        ix = completion_index(pod)
        if ix is not None and ix < completions and is_index_failed(spec, pod, only_failed):
            out.add(ix)
    return out


def finished_at(pod: P.Obj) -> float:
    """getFinishedTime: the containers' latest finishedAt (all of them terminated), else the Ready=False
    transition, else the deletion time less its grace period, else the creation time."""
    times: list[float | None] = [P.parse_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
                                 for c in (pod.get("status") or {}).get("containerStatuses") or ()]
    if times and all(t is not None for t in times):
        return max(t for t in times if t is not None)
    ready = P.condition(pod, "Ready")
    if ready is not None and ready.get("status") == "False" and \
            (t := P.parse_time(ready.get("lastTransitionTime"))) is not None:
        return t
    meta = pod.get("metadata") or {}
    if (t := P.parse_time(meta.get("deletionTimestamp"))) is not None:
        return t - float(meta.get("deletionGracePeriodSeconds") or 0)
    return P.parse_time(meta.get("creationTimestamp")) or 0.0


def delayed_per_index(pods: Sequence[P.Obj], completions: int, not_pending: set[int],
                      only_failed: bool) -> dict[int, P.Obj]:
    """getPodsWithDelayedDeletionPerIndex: for each index neither succeeded, failed nor active, its
    failed pod with the most failures (the latest of equals): the one its replacement's counts and
    backoff come from."""
    out: dict[int, P.Obj] = {}
    for pod in pods:
        ix = completion_index(pod)
        if ix is None or ix >= completions or ix in not_pending or not pod_failed(pod, only_failed):
            continue
        last = out.get(ix)
        if last is None or (absolute_failure_count(last) <= absolute_failure_count(pod)
                            and finished_at(pod) >= finished_at(last)):
            out[ix] = pod
    return out


def replacement_counts(spec: Mapping[str, Any], replaced: P.Obj | None) -> tuple[int, int]:
    """getNewIndexFailureCounts: the replaced pod's counts plus its own failure, counted or (an
    Ignore rule matched) ignored."""
    if replaced is None:
        return 0, 0
    counted, ignored = failure_count(replaced), _count(replaced, IGNORED_FAILURE_COUNT_KEY)
    if not spec.get("podFailurePolicy") or match_failure_policy(spec["podFailurePolicy"], replaced)[1]:
        return counted + 1, ignored
    return counted, ignored + 1


def backoff_remaining(replaced: P.Obj | None, now: float) -> float:
    """getRemainingTimePerIndex: 10 s doubling per earlier failure of the index (6 min at most) from
    the replaced pod's finish; 0 when the index may start now."""
    if replaced is None:
        return 0.0
    failures = absolute_failure_count(replaced) + 1
    delay = BACKOFF
    for _ in range(1, failures):
        delay *= 2
        if delay >= MAX_BACKOFF:
            delay = MAX_BACKOFF
            break
    elapsed = now - finished_at(replaced)
    return 0.0 if delay < elapsed else delay - elapsed


def match_success_policy(policy: Mapping[str, Any] | None, completions: int, succeeded: set[int]) -> str | None:
    """matchSuccessPolicy: "Matched rules at index N" for the first rule the succeeded indexes meet
    (all its succeededIndexes, or succeededCount of them; succeededCount alone: that many at all)."""
    if not policy or not succeeded:
        return None
    for index, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(rule["succeededIndexes"], completions)
            if not required:
                continue
            contains = len(required & succeeded)
            if contains == len(required) or (count is not None and contains >= int(count)):
                return f"Matched rules at index {index}"
        elif count is not None and len(succeeded) >= int(count):
            return f"Matched rules at index {index}"
    return None
