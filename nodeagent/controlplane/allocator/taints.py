"""Device taints and request tolerations (KEP-5055) as the allocator and the eviction controller
read them.

Why a module of its own: the matching rule is shared by the allocator (a tainted device is a
candidate only if every NoSchedule or NoExecute taint is tolerated by the request) and the
control plane's eviction controller (a NoExecute taint evicts the pods using the device unless a
NoExecute toleration of the allocation result tolerates it forever; tolerationSeconds counts
from the taint's timeAdded). The rule is
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


def taint_eviction_delay(taint: Taint, tolerations: Sequence[Toleration]) -> float | None:
    """Seconds after the taint's timeAdded at which its consumers are evicted (upstream's
    claimEvictionTime for one taint): None when the taint does not evict (not NoExecute) or a
    matching toleration has no tolerationSeconds (tolerated forever); else the smallest
    tolerationSeconds of the matching tolerations (negative counts as 0), 0 without any. Only
    tolerations with effect NoExecute count here; one with an empty effect lets the device be
    allocated but does not keep the pod from being evicted."""
    if taint.effect != NO_EXECUTE:
        return None
    least: int | None = None
    for t in tolerations:
        if t.effect != NO_EXECUTE or not tolerates(t, taint):
            continue
        if t.toleration_seconds is None:
            return None
        seconds = max(0, t.toleration_seconds)
        least = seconds if least is None else min(least, seconds)
    return float(least or 0)


def eviction_delay(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> float | None:
    """The smallest taint_eviction_delay of these taints (all added at the same time), None when
    none of them evicts."""
    delays = [d for t in taints if (d := taint_eviction_delay(t, tolerations)) is not None]
    return min(delays) if delays else None


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
