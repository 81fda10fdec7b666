"""Device taints and request tolerations (KEP-5055) as the allocator and the eviction controller
read them.

Why a module of its own: the matching rule is shared by the allocator (a tainted device is a
candidate only if every NoSchedule or NoExecute taint is tolerated by the request) and the
control plane's eviction controller (a NoExecute taint not tolerated by every request that got
the device evicts the pods using it, after the smallest tolerationSeconds). The rule is
upstream's resourceclaim.ToleratesTaint, the same as for pods and node taints: an empty
toleration key with Exists matches every key, an empty effect every effect, Exists ignores the
value, Equal (the default) compares it. A taint with effect None is informational. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
EFFECT_NONE = "None"
EQUAL = "Equal"
EXISTS = "Exists"


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""
    time_added: str = ""


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """resourceclaim.ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", EQUAL):
        return toleration.value == taint.value
    return toleration.operator == EXISTS


def tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def schedulable(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """May a request with these tolerations get a device with these taints?"""
    return all(t.effect == EFFECT_NONE or tolerated(t, tolerations) for t in taints)


def eviction_delay(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> float | None:
    """Seconds until a consumer of the device must be evicted: None when every NoExecute taint is
    tolerated forever (or there is none), 0 when one is not tolerated at all, else the smallest
    tolerationSeconds among the tolerations that match (upstream's getMinTolerationTime; a
    negative value counts as 0)."""
    delay: float | None = None
    for taint in taints:
        if taint.effect != NO_EXECUTE:
            continue
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0.0
        bounded = [max(0, t.toleration_seconds) for t in matching if t.toleration_seconds is not None]
        if bounded:  # tolerations without tolerationSeconds count only when no other has one
            least = float(min(bounded))
            delay = least if delay is None else min(delay, least)
    return delay


class _Tainted(Protocol):
    @property
    def taints(self) -> tuple[Taint, ...]: ...

    @property
    def binding_conditions(self) -> tuple[str, ...]: ...


def usable(candidates: Sequence[int], devices: Sequence[_Tainted], tolerations: Sequence[Toleration], *,
           taints: bool, binding: bool) -> tuple[int, ...]:
    """The candidates a request may get: with DRADeviceTaints every taint tolerated (upstream's
    allTaintsTolerated); without DRADeviceBindingConditions no device that has binding
    conditions. Returns `candidates` itself when nothing is dropped."""
    def ok(i: int) -> bool:
        device = devices[i]
        if taints and device.taints and not schedulable(device.taints, tolerations):
            return False
        return binding or not device.binding_conditions

    kept = tuple(i for i in candidates if ok(i))
    return kept if len(kept) != len(candidates) else tuple(candidates)
