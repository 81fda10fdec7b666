"""Indexed Jobs and pod failure policies: upstream pkg/controller/job's indexed_job_utils.go and
pod_failure_policy.go over store JSON.

One responsibility: the completion index of a pod (batch.kubernetes.io/job-completion-index), the
status.completedIndexes interval text ("0-2,4,6,7" as orderedIntervals.String writes it), the lowest
pending indexes (firstPendingIndexes), the active pods an Indexed Job removes (unknown, out of range or
repeated indexes: appendDuplicatedIndexPodsForRemoval), the pod a given index gets (annotation and
label, hostname `<job>-<index>`, generateName `<job>-<index>-`, the JOB_COMPLETION_INDEX variable) and
which podFailurePolicy rule a failed pod matches (matchPodFailurePolicy: its FailJob message, whether
the failure counts). Pure: no I/O.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodeagent.controlplane.workloads import pods as P

INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"
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


def succeeded_indexes(job: P.Obj, pods: Sequence[P.Obj], completions: int) -> set[int]:
    """calculateSucceededIndexes: the recorded ones and those of succeeded pods."""
    done = parse_indexes((job.get("status") or {}).get("completedIndexes"), completions)
    for pod in pods:
        ix = completion_index(pod)
        if P.phase(pod) == P.SUCCEEDED and ix is not None and ix < completions:
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


def indexed_pod(job: P.Obj, ref: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The pod for `index`: the template with JOB_COMPLETION_INDEX in every container, the index
    annotation and label, hostname `<job>-<index>`, generateName `<job>-<index>-`."""
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
