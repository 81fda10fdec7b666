"""Backtracking search over a pod's requests on one node (the upstream structured allocator's shape).

One responsibility: given prepared alternatives (each with its candidate devices already
filtered by class and request selectors and by other claims' allocations), find one choice of
alternative and devices per request so that devices are distinct across the pod (adminAccess
excepted), every claim's constraints hold and no claim exceeds 32 devices.

One depth-first search in upstream's order: requests in claim order, and for each request its
firstAvailable alternatives in order and, within an alternative, its devices in table order;
the rest of the pod is searched under every such choice before the next is tried, so the same
inputs give upstream's devices. Devices of one request are chosen as combinations in candidate
order, never permutations: constraints do not depend on order (All mode needs every candidate:
one combination). A device is never twice in one claim; an adminAccess request may take a device
another claim has (upstream's "in use in same claim" rule), an ordinary request only a free one.
A device whose selector failed at runtime aborts the search when reached (upstream's CEL runtime
error), as does a constraint that rejects a device an All request must take.
The search is bounded by a deadline read from `now`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nodeagent.cel.selectors import AttributeValue
from nodeagent.controlplane.allocator.consumable import CapacityState, Consumption
from nodeagent.controlplane.allocator.counters import CounterState
from nodeagent.controlplane.allocator.model import (
    ALL,
    MAX_DEVICES_PER_CLAIM,
    Constraint,
    Device,
    Request,
    SubRequest,
)

CHECK_EVERY = 16
"""Search steps between two reads of the clock."""


class TimedOut(Exception):
    """The deadline passed; internal to the allocator, turned into a failed outcome."""


class Abort(Exception):
    """Upstream returns an error here: the scheduling attempt for the pod stops with this message."""

    def __init__(self, message: str, claim_index: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.claim_index = claim_index
        """Set when the message still needs upstream's "claim NS/NAME, " prefix."""


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
    errors: dict[int, str] = field(default_factory=dict)
    """Entry index -> the runtime error upstream reports when the search reaches that device."""
    consumption: dict[int, Consumption] = field(default_factory=dict)
    """Entry index of a device that allows multiple allocations -> what this alternative consumes
    of it (KEP-5075); such a device is shared, not taken."""

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


Key = tuple[str, AttributeValue]


def _keys(value: AttributeValue | None) -> frozenset[Key] | None:
    """The attribute as a set of typed values: a scalar is a singleton, a list-type attribute
    (KEP-5491) its items. Typed so that True and 1 never count as the same attribute value."""
    if value is None:
        return None
    if isinstance(value, tuple):
        return frozenset((type(v).__name__, v) for v in value)
    return frozenset(((type(value).__name__, value),))


class _Match:
    """matchAttribute: the devices' value sets must have a non-empty intersection (for scalars:
    one equal value)."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.stack: list[frozenset[Key]] = []
        """The intersection after each device added, undone in reverse order."""

    def add(self, device: Device) -> bool:
        values = _keys(device.attribute(self.attribute))
        if values is None:
            return False
        common = values & self.stack[-1] if self.stack else values
        if not common:
            return False
        self.stack.append(common)
        return True

    def remove(self, device: Device) -> None:
        self.stack.pop()


class _Distinct:
    """distinctAttribute: the devices' value sets must be pairwise disjoint."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.seen: set[Key] = set()

    def add(self, device: Device) -> bool:
        values = _keys(device.attribute(self.attribute))
        if values is None or not values.isdisjoint(self.seen):
            return False
        self.seen.update(values)
        return True

    def remove(self, device: Device) -> None:
        values = _keys(device.attribute(self.attribute))
        if values is not None:
            self.seen.difference_update(values)


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
        counters: CounterState | None = None,
        capacity: CapacityState | None = None,
    ) -> None:
        self._devices = devices
        self._counters = counters
        self._capacity = capacity
        self._states = [[_state(c) for c in cs] for cs in constraints]
        self._deadline = deadline
        self._now = now
        self._users: dict[int, list[int]] = {}
        """Entry index -> claims of this pod that take it (admin requests included)."""
        self._claim_devices = [0] * len(constraints)
        self._slots: Sequence[Slot] = ()
        self._rest: list[int] = []
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
        self._chosen = [None] * len(slots)
        if not self._slot(0):
            return None
        return [c for c in self._chosen if c is not None]

    def _tick(self) -> None:
        self.steps += 1
        if self._deadline is not None and self.steps % CHECK_EVERY == 0 and self._now() >= self._deadline:
            raise TimedOut

    def _slot(self, s: int) -> bool:
        """Alternatives of slot s in order; under each, its devices and then the later slots."""
        if s == len(self._slots):
            return True
        for alt in self._slots[s].alternatives:
            if alt.reason is not None:
                continue
            c = alt.claim_index
            if self._claim_devices[c] + alt.needed + self._rest[s] > MAX_DEVICES_PER_CLAIM:
                continue
            self._tick()
            self._claim_devices[c] += alt.needed
            ok = self._pick(s, alt, [], 0)
            self._claim_devices[c] -= alt.needed
            if ok:
                return True
        return False

    def _pick(self, s: int, alt: Alternative, picked: list[int], start: int) -> bool:
        self._tick()
        need = alt.needed - len(picked)
        if need == 0:
            self._chosen[s] = (alt, tuple(picked))
            return self._slot(s + 1)
        candidates = alt.candidates
        for p in range(start, len(candidates) - need + 1):
            d = candidates[p]
            failure = alt.errors.get(d)
            if failure is not None:
                raise Abort(failure)
            if self._add(alt, d):
                picked.append(d)
                if self._pick(s, alt, picked, p + 1):
                    return True
                picked.pop()
                self._remove(alt, d)
        return False

    def _add(self, alt: Alternative, d: int) -> bool:
        users = self._users.get(d)
        if users and d not in alt.consumption and (alt.claim_index in users or not alt.admin_access):
            return False
        if not self._hold(alt, d):
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
                self._unhold(alt, d)
                if alt.mode == ALL:
                    raise Abort(f"request {alt.request.name if alt.sub is None else alt.sub.name}: cannot add "
                                f"device {device.driver}/{device.pool}/{device.name} because a claim constraint "
                                "would not be satisfied", alt.claim_index)
                return False
        self._users.setdefault(d, []).append(alt.claim_index)
        return True

    def _remove(self, alt: Alternative, d: int) -> None:
        device = self._devices[d]
        states = self._states[alt.claim_index]
        for ci in alt.constraints:
            state = states[ci]
            if state is not None:
                state.remove(device)
        users = self._users[d]
        users.remove(alt.claim_index)
        if not users:
            del self._users[d]
        self._unhold(alt, d)

    def _hold(self, alt: Alternative, d: int) -> bool:
        """Take d's shared counters (KEP-4815) and, for a shared device, its capacity (KEP-5075)."""
        if self._counters is not None and not self._counters.take(d):
            return False
        amounts = alt.consumption.get(d)
        if amounts is not None and self._capacity is not None and not self._capacity.take(d, amounts):
            if self._counters is not None:
                self._counters.release(d)
            return False
        return True

    def _unhold(self, alt: Alternative, d: int) -> None:
        if self._counters is not None:
            self._counters.release(d)
        amounts = alt.consumption.get(d)
        if amounts is not None and self._capacity is not None:
            self._capacity.release(d, amounts)
