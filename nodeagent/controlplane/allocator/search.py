"""Backtracking search over a pod's requests on one node (the upstream structured allocator's shape).

One responsibility: given prepared alternatives (each with its candidate devices already
filtered by class and request selectors and by other claims' allocations), find one choice of
alternative and devices per request so that devices are distinct across the pod (adminAccess
excepted), every claim's constraints hold and no claim exceeds 32 devices.

Two phases: first a vector of alternatives (one per request, requests in order, firstAvailable
subrequests in order), then the devices for that vector; the next vector is tried only when no
devices fit. So the result uses the lexicographically first vector that fits: a later request's
better alternative never loses to an earlier request's device choice. (Upstream nests device
choices of earlier requests outside the alternatives of later ones, which can settle for a worse
alternative; this order is what the node score assumes.) Devices of one request are chosen as
combinations in candidate order, never permutations: constraints do not depend on order (All
mode needs every candidate: one combination).
The search is bounded by a deadline read from `now`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nodeagent.controlplane.allocator.model import (
    MAX_DEVICES_PER_CLAIM,
    Constraint,
    Device,
    Request,
    SubRequest,
)
from nodeagent.controlplane.cel import AttributeValue

CHECK_EVERY = 16
"""Search steps between two reads of the clock."""


class TimedOut(Exception):
    """The deadline passed; internal to the allocator, turned into a failed outcome."""


@dataclass(eq=False, slots=True)
class Alternative:
    """One way to satisfy a request: the request itself or one of its firstAvailable subrequests."""

    claim_index: int
    request: Request
    sub: SubRequest | None
    index: int
    """Position in firstAvailable (0 for a plain request): the node score adds it."""
    mode: str
    needed: int
    admin_access: bool
    candidates: tuple[int, ...] = ()
    """Entry indices this alternative may take, in table order."""
    constraints: tuple[int, ...] = ()
    """Indices into the claim's constraints that apply to this alternative."""
    reason: str | None = None
    """Why it cannot be used at all (counted alone); None when the counts allow it."""
    matching: int = 0
    free: int = 0
    in_class: int = 0
    cel_error: str = ""

    @property
    def full_name(self) -> str:
        return self.request.name if self.sub is None else f"{self.request.name}/{self.sub.name}"

    @property
    def class_name(self) -> str:
        return self.request.device_class_name if self.sub is None else self.sub.device_class_name


@dataclass(eq=False, slots=True)
class Slot:
    """One request of one claim with its alternatives in preference order."""

    claim_index: int
    request: Request
    alternatives: list[Alternative] = field(default_factory=list)


def _key(value: AttributeValue | None) -> tuple[str, AttributeValue] | None:
    # Typed so that True and 1 never count as the same attribute value.
    return None if value is None else (type(value).__name__, value)


class _Match:
    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.value: tuple[str, AttributeValue] | None = None
        self.refs = 0

    def add(self, device: Device) -> bool:
        value = _key(device.attribute(self.attribute))
        if value is None or (self.refs and value != self.value):
            return False
        self.value = value
        self.refs += 1
        return True

    def remove(self, device: Device) -> None:
        self.refs -= 1


class _Distinct:
    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.seen: set[tuple[str, AttributeValue]] = set()

    def add(self, device: Device) -> bool:
        value = _key(device.attribute(self.attribute))
        if value is None or value in self.seen:
            return False
        self.seen.add(value)
        return True

    def remove(self, device: Device) -> None:
        value = _key(device.attribute(self.attribute))
        if value is not None:
            self.seen.discard(value)


def _state(c: Constraint) -> _Match | _Distinct | None:
    if c.match_attribute:
        return _Match(c.match_attribute)
    if c.distinct_attribute:
        return _Distinct(c.distinct_attribute)
    return None


Choice = tuple[Alternative, tuple[int, ...]]


class Search:
    """One search over `slots`; `run` returns the chosen alternative and entries per slot, or None."""

    def __init__(
        self,
        devices: Sequence[Device],
        constraints: Sequence[Sequence[Constraint]],
        deadline: float | None,
        now: Callable[[], float],
    ) -> None:
        self._devices = devices
        self._states = [[_state(c) for c in cs] for cs in constraints]
        self._deadline = deadline
        self._now = now
        self._in_use: set[int] = set()
        self._claim_devices = [0] * len(constraints)
        self._slots: Sequence[Slot] = ()
        self._rest: list[int] = []
        self._fixed: list[Alternative | None] = []
        self._chosen: list[Choice | None] = []
        self.steps = 0

    def run(self, slots: Sequence[Slot]) -> list[Choice] | None:
        least = [min((a.needed for a in s.alternatives if a.reason is None), default=-1) for s in slots]
        if -1 in least:
            return None  # a request with no usable alternative: nothing to search
        # _rest[s]: devices the claim of slot s needs at least in its later slots (prunes the cap early).
        self._rest = [0] * len(slots)
        per_claim = [0] * len(self._claim_devices)
        for s in range(len(slots) - 1, -1, -1):
            c = slots[s].claim_index
            self._rest[s] = per_claim[c]
            per_claim[c] += least[s]
        self._slots = slots
        self._fixed = [None] * len(slots)
        self._chosen = [None] * len(slots)
        if not self._choose(0):
            return None
        return [c for c in self._chosen if c is not None]

    def _tick(self) -> None:
        self.steps += 1
        if self._deadline is not None and self.steps % CHECK_EVERY == 0 and self._now() >= self._deadline:
            raise TimedOut

    def _choose(self, s: int) -> bool:
        """Phase 1: alternatives for every slot, in lexicographic order; phase 2 finds devices."""
        if s == len(self._slots):
            return self._slot(0)
        for alt in self._slots[s].alternatives:
            if alt.reason is not None:
                continue
            c = alt.claim_index
            if self._claim_devices[c] + alt.needed + self._rest[s] > MAX_DEVICES_PER_CLAIM:
                continue
            self._tick()
            self._claim_devices[c] += alt.needed
            self._fixed[s] = alt
            ok = self._choose(s + 1)
            self._claim_devices[c] -= alt.needed
            if ok:
                return True
        return False

    def _slot(self, s: int) -> bool:
        if s == len(self._slots):
            return True
        alt = self._fixed[s]
        assert alt is not None
        return self._pick(s, alt, [], 0)

    def _pick(self, s: int, alt: Alternative, picked: list[int], start: int) -> bool:
        self._tick()
        need = alt.needed - len(picked)
        if need == 0:
            self._chosen[s] = (alt, tuple(picked))
            return self._slot(s + 1)
        candidates = alt.candidates
        for p in range(start, len(candidates) - need + 1):
            d = candidates[p]
            if self._add(alt, d):
                picked.append(d)
                if self._pick(s, alt, picked, p + 1):
                    return True
                picked.pop()
                self._remove(alt, d)
        return False

    def _add(self, alt: Alternative, d: int) -> bool:
        if not alt.admin_access and d in self._in_use:
            return False
        device = self._devices[d]
        states = self._states[alt.claim_index]
        for done, ci in enumerate(alt.constraints):
            state = states[ci]
            if state is not None and not state.add(device):
                for cj in alt.constraints[:done]:
                    undo = states[cj]
                    if undo is not None:
                        undo.remove(device)
                return False
        if not alt.admin_access:
            self._in_use.add(d)
        return True

    def _remove(self, alt: Alternative, d: int) -> None:
        device = self._devices[d]
        states = self._states[alt.claim_index]
        for ci in alt.constraints:
            state = states[ci]
            if state is not None:
                state.remove(device)
        if not alt.admin_access:
            self._in_use.discard(d)
