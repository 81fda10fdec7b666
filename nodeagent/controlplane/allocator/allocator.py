"""The structured DRA allocator: all claims of one pod on one node, together, or a reason why not.

One responsibility: decide. It is pure (no I/O, no asyncio, no clock of its own: `now` is
injected) so the scheduler can call it for every candidate node and tests can drive it
directly. Steps: gather the node's devices (pools.py); for every request and firstAvailable
subrequest compute the candidate devices (class selectors, request selectors, other claims'
allocations, All-mode rules); search (search.py); build one AllocationResult per claim with
its devices, config and node selector; or explain the failure (explain.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence, Set

from nodeagent.controlplane.allocator import pools
from nodeagent.controlplane.allocator.explain import explain
from nodeagent.controlplane.allocator.model import (
    ALL,
    EXACT_COUNT,
    FROM_CLAIM,
    FROM_CLASS,
    MAX_DEVICES_PER_CLAIM,
    AllocatedDevice,
    AllocationConfig,
    AllocationOutcome,
    AllocationResult,
    Claim,
    Constraint,
    DeviceClass,
    DeviceId,
    Node,
    Request,
    ResourceSlice,
    SubRequest,
)
from nodeagent.controlplane.allocator.search import Alternative, Choice, Search, Slot, TimedOut

TIMED_OUT = "allocation timed out"
DOES_NOT_FIT = "does not fit"


def allocate(
    claims: Sequence[Claim],
    node: Node,
    slices: Iterable[ResourceSlice] | pools.Inventory,
    classes: Mapping[str, DeviceClass],
    allocated: Set[DeviceId],
    *,
    deadline: float | None = None,
    now: Callable[[], float] = lambda: -math.inf,
    explain_failure: bool = True,
) -> AllocationOutcome:
    """Allocate every claim of one pod on `node`, or say why not.

    `slices` may hold slices of any node (invisible ones are skipped), or be an Inventory built
    for `node` (`Inventory(node, slices)`), which the caller may keep while the node's slices
    do not change: selector matches are memoized on it. `allocated` holds the devices other
    claims have. The search stops with `timed_out` once `now() >= deadline`. With
    `explain_failure=False` a failure carries the message "does not fit" and skips the
    diagnosis (the scheduler can ask again for the words once no node fits).
    """
    if deadline is not None and now() >= deadline:
        return AllocationOutcome(None, message=TIMED_OUT, timed_out=True)
    inventory = slices if isinstance(slices, pools.Inventory) else pools.Inventory(node, slices)
    if inventory.node.name != node.name:
        raise ValueError(f"inventory is for node {inventory.node.name}, not {node.name}")
    entries = inventory.entries
    slots = _prepare(claims, inventory, classes, allocated)
    devices = inventory.devices
    constraints = [c.constraints for c in claims]

    def search(subset: Sequence[Slot]) -> list[Choice] | None:
        return Search(devices, constraints, deadline, now).run(subset)

    try:
        chosen = search(slots)
        if chosen is None:
            if not explain_failure:
                return AllocationOutcome(None, message=DOES_NOT_FIT)
            return AllocationOutcome(None, message=explain(claims, slots, lambda s: search(s) is not None))
    except TimedOut:
        return AllocationOutcome(None, message=TIMED_OUT, timed_out=True)
    results = tuple(_result(i, claim, chosen, entries, classes, node) for i, claim in enumerate(claims))
    return AllocationOutcome(results, score=sum(alt.index for alt, _ in chosen))


# --- preparation --------------------------------------------------------------------------------


def _prepare(
    claims: Sequence[Claim],
    inventory: pools.Inventory,
    classes: Mapping[str, DeviceClass],
    allocated: Set[DeviceId],
) -> list[Slot]:
    slots = []
    for ci, claim in enumerate(claims):
        for request in claim.requests:
            slot = Slot(ci, request)
            subs: Sequence[SubRequest | None] = request.first_available or (None,)
            for index, sub in enumerate(subs):
                alt = _alternative(ci, request, sub, index)
                alt.constraints = _applying(claim.constraints, alt)
                _candidates(alt, inventory, classes, allocated)
                slot.alternatives.append(alt)
            slots.append(slot)
    return slots


def _alternative(ci: int, request: Request, sub: SubRequest | None, index: int) -> Alternative:
    if sub is None:
        return Alternative(ci, request, None, 0, request.allocation_mode, request.count, request.admin_access)
    return Alternative(ci, request, sub, index, sub.allocation_mode, sub.count, request.admin_access)


def _applying(constraints: Sequence[Constraint], alt: Alternative) -> tuple[int, ...]:
    names = (alt.request.name, alt.full_name)
    return tuple(i for i, c in enumerate(constraints) if not c.requests or any(n in c.requests for n in names))


def _candidates(
    alt: Alternative, inventory: pools.Inventory, classes: Mapping[str, DeviceClass], allocated: Set[DeviceId]
) -> None:
    selectors = alt.request.selectors if alt.sub is None else alt.sub.selectors
    match = inventory.match(alt.class_name, classes.get(alt.class_name), selectors)
    matching = match.matching
    alt.in_class, alt.matching, alt.cel_error = match.in_class, len(matching), match.cel_error
    if match.blocking:
        alt.reason = match.blocking
        return
    ids = inventory.ids
    candidates = matching if alt.admin_access or not allocated else tuple(
        i for i in matching if ids[i] not in allocated)
    alt.candidates, alt.free = candidates, len(candidates)
    if alt.mode == ALL:
        alt.needed = len(matching)
    elif alt.mode != EXACT_COUNT:
        alt.reason = f"unknown allocationMode {alt.mode}"
        return
    alt.reason = _count_reason(alt, inventory.incomplete)


def _count_reason(alt: Alternative, incomplete: Sequence[str]) -> str | None:
    suffix = f" ({alt.cel_error})" if alt.cel_error else ""
    if alt.matching == 0:
        if alt.cel_error:
            return f"CEL error: {alt.cel_error}"
        if alt.in_class == 0:
            return "no device in class"
        return f"no device matches the selectors ({alt.in_class} in class)"
    if alt.mode == ALL and incomplete:
        return f"asks for all devices, but pool {', '.join(incomplete)} is incomplete"
    if alt.needed > MAX_DEVICES_PER_CLAIM:
        return f"needs {alt.needed} devices, a claim may have at most {MAX_DEVICES_PER_CLAIM}"
    if alt.free < alt.needed:
        need = f", need {alt.needed}" if alt.needed > 1 or alt.mode == ALL else ""
        return f"{alt.free} of {alt.matching} free{need}{suffix}"
    return None


# --- results ------------------------------------------------------------------------------------


def _result(
    ci: int,
    claim: Claim,
    chosen: Sequence[Choice],
    entries: Sequence[pools.Entry],
    classes: Mapping[str, DeviceClass],
    node: Node,
) -> AllocationResult:
    mine = [(alt, picked) for alt, picked in chosen if alt.claim_index == ci]
    devices = tuple(
        AllocatedDevice(alt.full_name, entries[d].device.driver, entries[d].device.pool, entries[d].device.name,
                        alt.admin_access, entries[d].slice.skip_node_operations)
        for alt, picked in mine
        for d in picked
    )
    config = [
        AllocationConfig(FROM_CLASS, (alt.full_name,), opaque)
        for alt, _ in mine
        for opaque in classes[alt.class_name].config
    ]
    names = {alt.request.name for alt, _ in mine} | {alt.full_name for alt, _ in mine}
    for dc in claim.config:
        requests = tuple(r for r in dc.requests if r in names)
        if not dc.requests or requests:
            config.append(AllocationConfig(FROM_CLAIM, requests, dc.opaque))
    used = [entries[d].slice for _, picked in mine for d in picked]
    return AllocationResult(devices, tuple(config), pools.node_selector(used, node))
