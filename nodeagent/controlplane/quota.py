"""ResourceQuota for DRA devices: what a claim is charged and whether a namespace can afford it.

One responsibility: the quota evaluator of upstream pkg/quota/v1/evaluator/core/resource_claims.go.
A claim is charged, per device class, `<class>.deviceclass.resource.k8s.io/devices`:
ExactCount requests their count, All requests the most a claim can hold (32), and a
firstAvailable request is charged for its subrequests, the largest count per class among
them (KEP-4816: "charged for all subrequests"), so alternatives cannot get around quota. Every
claim also counts 1 towards `count/resourceclaims.resource.k8s.io`. The claim controller checks
before it creates a claim. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodeagent.objects import resourcequota
from nodeagent.objects.resource import views

# resource.k8s.io AllocationResultsMaxSize (the allocator's MAX_DEVICES_PER_CLAIM), from objects rather
# than the allocator: the admin API imports quota, and a node that joins a cluster has no allocator to load
from nodeagent.objects.resource.shared import ALLOCATION_RESULTS_MAX as MAX_DEVICES_PER_CLAIM
from nodeagent.util import quantity

DEVICES_SUFFIX = ".deviceclass.resource.k8s.io/devices"
CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"


def devices_resource(device_class: str) -> str:
    return device_class + DEVICES_SUFFIX


def _count(alt: views.ExactRequest) -> int:
    if alt.allocation_mode == views.ALL:
        return MAX_DEVICES_PER_CLAIM
    if alt.allocation_mode == views.EXACT_COUNT:
        return alt.count
    return 0


def claim_charge(claim: Mapping[str, Any]) -> dict[str, int]:
    """What one claim (ResourceClaim, template, or bare spec) uses of quota."""
    usage: dict[str, int] = {CLAIM_COUNT: 1}
    for req in views.claim_requests(claim):
        per_class: dict[str, int] = {}
        for alt in req.alternatives:
            name = devices_resource(alt.device_class_name)
            per_class[name] = max(per_class.get(name, 0), _count(alt))
        for name, n in per_class.items():
            usage[name] = usage.get(name, 0) + n
    return usage


def usage_of(claims: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in claims:
        for name, n in claim_charge(c).items():
            total[name] = total.get(name, 0) + n
    return total


def hard_limits(quota_obj: Mapping[str, Any]) -> dict[str, int]:
    """spec.hard entries this evaluator tracks, as integers (invalid quantities are ignored)."""
    out: dict[str, int] = {}
    spec = quota_obj.get("spec")
    hard = spec.get("hard") if isinstance(spec, Mapping) else None
    if not isinstance(hard, Mapping):  # admission refuses it; a quota stored before that must not break claims
        return out
    for name, raw in hard.items():
        if isinstance(name, str) and (name == CLAIM_COUNT or name.endswith(DEVICES_SUFFIX)):
            try:
                out[name] = quantity.canonical(name, raw)
            except quantity.QuantityError:
                continue
    return out


def check(
    charge: Mapping[str, int], used: Mapping[str, int], quotas: Sequence[Mapping[str, Any]]
) -> str | None:
    """None when the charge fits every quota; else the API server's "exceeded quota" text."""
    for q in quotas:
        hard = hard_limits(q)
        over = sorted(name for name, n in charge.items() if name in hard and used.get(name, 0) + n > hard[name])
        if over:
            name = str((q.get("metadata") or {}).get("name", ""))
            requested = ",".join(f"{r}={charge[r]}" for r in over)
            usedtxt = ",".join(f"{r}={used.get(r, 0)}" for r in over)
            limited = ",".join(f"{r}={hard[r]}" for r in over)
            return f"exceeded quota: {name}, requested: {requested}, used: {usedtxt}, limited: {limited}"
    return None


def status_used(quota_obj: Mapping[str, Any], used: Mapping[str, int]) -> dict[str, Any]:
    """status for a ResourceQuota: the hard limits it tracks and their use."""
    hard = hard_limits(quota_obj)
    return {
        "hard": {k: str(v) for k, v in sorted(hard.items())},
        "used": {k: str(used.get(k, 0)) for k in sorted(hard)},
    }


def _matching(names: Iterable[str]) -> list[str]:
    return [n for n in names if n == CLAIM_COUNT or n.endswith(DEVICES_SUFFIX)]


def _usage(claim: Mapping[str, Any], now: float) -> resourcequota.Usage:
    return {name: quantity.Amount(n) for name, n in claim_charge(claim).items()}


EVALUATOR = resourcequota.Evaluator("resource.k8s.io", "resourceclaims", _matching, _usage)
"""The ResourceClaim evaluator for the quota admission and the resourcequota controller
(objects/resourcequota.py): a claim's charge above, creates only (a claim's spec is immutable)."""
