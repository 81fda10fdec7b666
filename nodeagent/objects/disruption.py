"""PodDisruptionBudget rules shared by the disruption controller (controlplane/controllers/disruption.py)
and the pods/eviction subresource (apiserver/eviction.py): which pods a budget selects, the
DisruptionAllowed condition, and a pod's readiness as both count it.

Why one module: upstream shares them through k8s.io/component-helpers/apps/poddisruptionbudget
(UpdateDisruptionAllowedCondition, ConditionsAreUpToDate) and podutil.IsPodReady; the eviction
handler and the controller must agree on them or an eviction could pass a budget the controller
has already closed. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects.common import label_selector_matches

CONDITION = "DisruptionAllowed"
SUFFICIENT, INSUFFICIENT, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"
DISRUPTION_TARGET = "DisruptionTarget"


def selects(pdb: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """The budget's spec.selector over a pod's labels: a missing selector selects nothing, an empty one
    (`{}`) every pod of the namespace (policy/v1's meaning)."""
    return label_selector_matches((pdb.get("spec") or {}).get("selector"), labels)


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def find_condition(status: Mapping[str, Any], ctype: str = CONDITION) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == ctype), None)


def set_condition(status: dict[str, Any], cond: Mapping[str, Any], now: str) -> None:
    """apimeta.SetStatusCondition: the condition replaces the one of its type, keeping that one's
    lastTransitionTime unless the status changes (then `now`); a new one gets `now`."""
    conds = [dict(c) for c in status.get("conditions") or ()]
    for cur in conds:
        if cur.get("type") == cond["type"]:
            if cur.get("status") != cond["status"]:
                cur["status"] = cond["status"]
                cur["lastTransitionTime"] = now
            cur["reason"], cur["message"] = cond["reason"], cond.get("message", "")
            cur["observedGeneration"] = cond.get("observedGeneration", 0)
            if not cur["observedGeneration"]:
                del cur["observedGeneration"]
            break
    else:
        new = {"type": cond["type"], "status": cond["status"],
               **({"observedGeneration": cond["observedGeneration"]} if cond.get("observedGeneration") else {}),
               "lastTransitionTime": now, "reason": cond["reason"], "message": cond.get("message", "")}
        conds.append(new)
    status["conditions"] = conds


def update_disruption_allowed(status: dict[str, Any], now: str) -> None:
    """UpdateDisruptionAllowedCondition: True/SufficientPods while disruptionsAllowed > 0, else
    False/InsufficientPods, at the status' observedGeneration."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    set_condition(status, {"type": CONDITION, "status": "True" if allowed else "False",
                           "reason": SUFFICIENT if allowed else INSUFFICIENT, "message": "",
                           "observedGeneration": int(status.get("observedGeneration") or 0)}, now)


def conditions_up_to_date(pdb: Mapping[str, Any]) -> bool:
    """ConditionsAreUpToDate: the condition is there, the status observed the current generation,
    and the condition's status and reason follow disruptionsAllowed."""
    status = pdb.get("status") or {}
    cond = find_condition(status)
    if cond is None:
        return False
    if int(status.get("observedGeneration") or 0) != int((pdb.get("metadata") or {}).get("generation") or 0):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return cond.get("status") == "True" and cond.get("reason") == SUFFICIENT
    return cond.get("status") == "False" and cond.get("reason") == INSUFFICIENT
