"""Why a pod's claims do not fit on a node, in words a user can act on.

One responsibility: after a failed search, name per claim and request the reason, e.g.
`claim gpu: big-gpu: no device in class; mid-gpu: 0 of 2 free`. Claims are first searched
alone, so a claim that fits alone is not blamed; within a failing claim, requests that cannot
be satisfied even counted alone are named; if every request could, the constraints are named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nodeagent.controlplane.allocator.model import MAX_DEVICES_PER_CLAIM, Claim
from nodeagent.controlplane.allocator.search import Alternative, Slot, TimedOut


def explain(claims: Sequence[Claim], slots: Sequence[Slot], fits_alone: Callable[[list[Slot]], bool]) -> str:
    """The failure message. `fits_alone` searches a subset of slots (it may raise TimedOut)."""
    by_claim: list[list[Slot]] = [[] for _ in claims]
    for slot in slots:
        by_claim[slot.claim_index].append(slot)
    failing: list[int] = []
    for i, claim_slots in enumerate(by_claim):
        try:
            if fits_alone(claim_slots):
                continue
        except TimedOut:
            pass  # no time to tell: explain it anyway
        failing.append(i)
    if not failing:
        names = ", ".join(c.name for c in claims)
        return f"claims {names}: each fits alone, not all together (not enough distinct devices)"
    return "; ".join(_claim(claims[i], by_claim[i]) for i in failing)


def _claim(claim: Claim, slots: Sequence[Slot]) -> str:
    single = len(slots) == 1
    blocked = [s for s in slots if all(a.reason is not None for a in s.alternatives)]
    parts: list[str] = []
    if blocked:
        for slot in blocked:
            parts.extend(_alternatives(claim, slot, single))
    else:
        for slot in slots:
            if any(a.constraints for a in slot.alternatives):
                parts.extend(_alternatives(claim, slot, single))
    if not parts:
        least = sum(min((a.needed for a in s.alternatives if a.reason is None), default=0) for s in slots)
        if least > MAX_DEVICES_PER_CLAIM:
            parts.append(f"needs at least {least} devices, a claim may have at most {MAX_DEVICES_PER_CLAIM}")
    if not parts:
        names = ", ".join(s.request.name for s in slots)
        parts.append(f"{names}: not enough distinct devices for all requests together")
    return f"claim {claim.name}: " + "; ".join(parts)


def _alternatives(claim: Claim, slot: Slot, single: bool) -> list[str]:
    out = []
    for alt in slot.alternatives:
        reason = alt.reason or _constraints(claim, alt) or "does not fit together with the other requests"
        out.append(f"{_label(alt, single)}: {reason}")
    return out


def _label(alt: Alternative, single: bool) -> str:
    if alt.sub is None:
        return alt.request.name
    return alt.sub.name if single else alt.full_name


def _constraints(claim: Claim, alt: Alternative) -> str:
    names: list[str] = []
    for ci in alt.constraints:
        c = claim.constraints[ci]
        if c.match_attribute:
            names.append(f"matchAttribute {c.match_attribute}")
        elif c.distinct_attribute:
            names.append(f"distinctAttribute {c.distinct_attribute}")
    return "constraint " + ", ".join(names) + " not satisfiable" if names else ""
