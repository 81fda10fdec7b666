"""The disruption controller's decisions (upstream pkg/controller/disruption, v1.37.2): a
PodDisruptionBudget's status from the pods it selects and their controllers' scale.

- expectedPods: the selected pods' count for an integer minAvailable; else (maxUnavailable, or a
  percentage minAvailable) the sum of the scale of the pods' controllers (getExpectedScale: a
  Deployment through its ReplicaSet, a ReplicaSet no Deployment controls, a StatefulSet, a
  ReplicationController); a pod without a controller is "unmanaged" (an event, not an error), a
  pod whose controller is not found fails the sync (`found no controllers for pod "NAME"`).
- desiredHealthy: minAvailable (scaled, rounding up), or expectedPods - maxUnavailable (>= 0).
- currentHealthy: the Ready pods not being deleted and not in disruptedPods (an eviction's
  record) for less than DELETION_TIMEOUT.
- disruptionsAllowed: currentHealthy - desiredHealthy, 0 when negative or when expectedPods is 0.
- disruptedPods: the eviction handler's entries, dropped when the pod is gone, being deleted, or
  its entry is older than DELETION_TIMEOUT (then a NotDeleted event on the pod).
Intended difference: a controller kind other than those four is not looked up through the scale
subresource (upstream's getScaleController over discovery and the scale client): a known kind
without scale gets upstream's "does not implement the scale subresource" error, any other one
"found no controllers". Pure: no I/O; the store is reached through `lookup`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.objects import disruption as D

Obj = Mapping[str, Any]
Lookup = Callable[[str, str, str], Obj | None]
"""(kind, namespace, name) -> the stored object or None."""

DELETION_TIMEOUT = 120.0
"""DeletionTimeout: how long an eviction's disruptedPods entry holds before the pod must be deleting."""
STALE_DISRUPTION_TIMEOUT = 120.0
"""stalePodDisruptionTimeout: a DisruptionTarget condition with no deletion after it is reset to False."""

_NO_SCALE = {("batch", "Job"): "jobs.batch", ("apps", "DaemonSet"): "daemonsets.apps",
             ("batch", "CronJob"): "cronjobs.batch", ("", "Pod"): "pods", ("", "Node"): "nodes"}
"""Built-in kinds that can control pods but serve no scale subresource (getScaleController's error)."""


class SyncError(Exception):
    """A failed calculation; its text is the condition's message, `events` those recorded before it."""

    def __init__(self, message: str, events: tuple[tuple[str, str, str], ...] = ()) -> None:
        super().__init__(message)
        self.events = events


@dataclass(frozen=True)
class Outcome:
    status: dict[str, Any] | None
    """The status to write (None: already current)."""
    events: tuple[tuple[str, str, str], ...] = ()
    """(type, reason, message) on the budget."""
    pod_events: tuple[tuple[str, str, str, str], ...] = ()
    """(pod name, type, reason, message)."""
    recheck_at: float | None = None
    unmanaged: tuple[str, ...] = field(default=())


def _ref(obj: Obj) -> Mapping[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _scale_of(ref: Mapping[str, Any], namespace: str, lookup: Lookup) -> tuple[str, int] | None:
    """The finders in upstream's order: (controller uid, scale), None when none knows the controller."""
    kind, group, name, uid = ref.get("kind"), _group(str(ref.get("apiVersion") or "")), ref.get("name"), ref.get("uid")
    if kind == "ReplicationController" and group == "":
        rc = lookup("ReplicationController", namespace, str(name))
        return (str(uid), _replicas(rc)) if rc is not None and rc["metadata"].get("uid") == uid else None
    if kind == "ReplicaSet" and group in ("apps", "extensions"):
        rs = lookup("ReplicaSet", namespace, str(name))
        if rs is None or rs["metadata"].get("uid") != uid:
            return None
        owner = _ref(rs)
        if owner is not None and owner.get("kind") == "Deployment":
            if _group(str(owner.get("apiVersion") or "")) not in ("apps", "extensions"):
                return None
            dep = lookup("Deployment", namespace, str(owner.get("name")))
            if dep is None or dep["metadata"].get("uid") != owner.get("uid"):
                return None
            return str(owner.get("uid")), _replicas(dep)
        return str(uid), _replicas(rs)
    if kind == "StatefulSet" and group == "apps":
        ss = lookup("StatefulSet", namespace, str(name))
        return (str(uid), _replicas(ss)) if ss is not None and ss["metadata"].get("uid") == uid else None
    plural = _NO_SCALE.get((group, str(kind)))
    if plural is not None:
        raise SyncError(f"{plural} does not implement the scale subresource")
    return None


def expected_scale(pods: Sequence[Obj], lookup: Lookup) -> tuple[int, list[str]]:
    """getExpectedScale: the sum of the pods' controllers' scale, and the unmanaged pods' names."""
    scales: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        ref = _ref(pod)
        if ref is None:
            unmanaged.append(str(pod["metadata"]["name"]))
            continue
        if ref.get("uid") in scales:
            continue
        found = _scale_of(ref, str(pod["metadata"].get("namespace") or ""), lookup)
        if found is None:
            raise SyncError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
        scales[found[0]] = found[1]
    return sum(scales.values()), unmanaged


def scaled(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent rounding up."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise SyncError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = int(text[:-1])
    except ValueError:
        raise SyncError(f'invalid value "{text}": strconv.Atoi: parsing "{text[:-1]}": invalid syntax') from None
    return math.ceil(percent * total / 100)


def expected_count(pdb: Obj, pods: Sequence[Obj], lookup: Lookup) -> tuple[int, int, list[str]]:
    """getExpectedPodCount: (expectedPods, desiredHealthy, unmanaged pods)."""
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        expected, unmanaged = expected_scale(pods, lookup)
        return expected, max(0, expected - scaled(spec["maxUnavailable"], expected)), unmanaged
    min_available = spec.get("minAvailable")
    if isinstance(min_available, int):
        return len(pods), min_available, []
    if min_available is not None:
        expected, unmanaged = expected_scale(pods, lookup)
        return expected, scaled(min_available, expected), unmanaged
    return 0, 0, []


def _stamp(text: Any) -> float:
    from datetime import datetime
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def plan(pdb: Obj, pods: Sequence[Obj], lookup: Lookup, now: float, now_text: str) -> Outcome:
    """trySync: the status to write, the events, and when to look again (an entry's expiry).
    SyncError when the expected count cannot be calculated (the caller's failSafe)."""
    md, old = pdb["metadata"], pdb.get("status") or {}
    events: list[tuple[str, str, str]] = []
    if not pods:
        events.append(("Normal", "NoPods", "No matching pods found"))
    try:
        expected, desired, unmanaged = expected_count(pdb, pods, lookup)
    except SyncError as err:
        events.append(("Warning", "CalculateExpectedPodCountFailed",
                       f"Failed to calculate the number of expected pods: {err}"))
        raise SyncError(str(err), tuple(events)) from None
    if unmanaged:
        events.append(("Warning", "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: "
                       f"{go_selector((pdb.get('spec') or {}).get('selector'))}) were found to be unmanaged. As a "
                       "result, the status of the PDB cannot be calculated correctly, which may result in undefined "
                       'behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an '
                       "integer value."))
    disrupted: dict[str, str] = {}
    pod_events: list[tuple[str, str, str, str]] = []
    recheck: float | None = None
    recorded = old.get("disruptedPods") or {}
    for pod in pods:
        pmd = pod["metadata"]
        if pmd.get("deletionTimestamp") or pmd["name"] not in recorded:
            continue
        expires = _stamp(recorded[pmd["name"]]) + DELETION_TIMEOUT
        if expires < now:
            # upstream's text names the budget's namespace twice (pdb.Namespace, pdb.Namespace)
            pod_events.append((pmd["name"], "Warning", "NotDeleted", "Pod was expected by PDB "
                               f"{md.get('namespace')}/{md.get('namespace')} to be deleted but it wasn't"))
        else:
            recheck = expires if recheck is None else min(recheck, expires)
            disrupted[pmd["name"]] = recorded[pmd["name"]]
    healthy = 0
    for pod in pods:
        pmd = pod["metadata"]
        if pmd.get("deletionTimestamp"):
            continue
        if pmd["name"] in disrupted and _stamp(disrupted[pmd["name"]]) + DELETION_TIMEOUT > now:
            continue
        healthy += D.pod_ready(pod)
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    generation = int(md.get("generation") or 0)
    if (old.get("currentHealthy") == healthy and old.get("desiredHealthy") == desired
            and old.get("expectedPods") == expected and old.get("disruptionsAllowed") == allowed
            and (old.get("disruptedPods") or {}) == disrupted and int(old.get("observedGeneration") or 0) == generation
            and D.conditions_up_to_date(pdb)):
        return Outcome(None, tuple(events), tuple(pod_events), recheck, tuple(unmanaged))
    status: dict[str, Any] = {
        **({"disruptedPods": disrupted} if disrupted else {}),
        "disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired,
        "expectedPods": expected, "observedGeneration": generation,
        **({"conditions": old["conditions"]} if old.get("conditions") else {}),
    }
    if not generation:
        del status["observedGeneration"]
    D.update_disruption_allowed(status, now_text)
    return Outcome(status, tuple(events), tuple(pod_events), recheck, tuple(unmanaged))


def fail_safe(pdb: Obj, message: str, now_text: str) -> dict[str, Any]:
    """failSafe: the old status with disruptionsAllowed 0 and DisruptionAllowed False/SyncFailed."""
    status = dict(pdb.get("status") or {})
    status["disruptionsAllowed"] = 0
    D.set_condition(status, {"type": D.CONDITION, "status": "False", "reason": D.SYNC_FAILED, "message": message,
                             "observedGeneration": int(status.get("observedGeneration") or 0)}, now_text)
    return status


def stale_disruption_wait(pod: Obj, now: float) -> float | None:
    """nonTerminatingPodHasStaleDisruptionCondition: None when the pod has no stale-able
    DisruptionTarget (being deleted, terminal, absent, not True, or the kubelet's), else the
    seconds until it is stale (0: now)."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    status = pod.get("status") or {}
    cond = D.find_condition(status, D.DISRUPTION_TARGET)
    if cond is None or cond.get("status") != "True" or cond.get("reason") == "TerminationByKubelet" \
            or status.get("phase") in ("Succeeded", "Failed"):
        return None
    since = _stamp(cond["lastTransitionTime"]) if cond.get("lastTransitionTime") else 0.0
    return max(0.0, STALE_DISRUPTION_TIMEOUT - (now - since))


def go_selector(selector: Mapping[str, Any] | None) -> str:
    """`%v` of a *metav1.LabelSelector (its generated String method)."""
    if selector is None:
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    reqs = "".join(f"LabelSelectorRequirement{{Key:{r.get('key', '')},Operator:{r.get('operator', '')},"
                   f"Values:[{' '.join(r.get('values') or ())}],}},"
                   for r in selector.get("matchExpressions") or ())
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{reqs}}},}}")
