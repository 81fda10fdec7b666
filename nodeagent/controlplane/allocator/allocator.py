"""The structured DRA allocator: all claims of one pod on one node, together, or a reason why not.

One responsibility: decide. It is pure (no I/O, no asyncio, no clock of its own: `now` is
injected) so the scheduler can call it for every candidate node and tests can drive it
directly. Steps: gather the node's devices (pools.py); for every request and firstAvailable
subrequest compute the candidate devices (class selectors, request selectors, other claims'
allocations, All-mode rules); search (search.py); build one AllocationResult per claim with
its devices, config and node selector; or explain the failure (explain.py).

Upstream distinguishes "does not fit on this node" from an error that stops the scheduling attempt
for the pod (a CEL runtime error on a device the search reaches, allocationMode All over an
incomplete or invalid pool, a constraint that rejects a device All must take): the latter comes
back with `error=True` and upstream's message. Incomplete and invalid pools give no devices.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from nodeagent.controlplane.allocator import pools, taints
from nodeagent.controlplane.allocator.consumable import CapacityState
from nodeagent.controlplane.allocator.counters import CounterState
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
    Device,
    DeviceClass,
    DeviceId,
    Node,
    NodeSelector,
    Num,
    OpaqueConfig,
    Request,
    ResourceSlice,
    SubRequest,
)
from nodeagent.controlplane.allocator.search import Abort, Alternative, Choice, Search, Slot, TimedOut

TIMED_OUT = "allocation timed out"
DOES_NOT_FIT = "does not fit"
INVALID_POOLS = "invalid resource pools were encountered"


@dataclass(frozen=True)
class Features:
    """Feature gates and version-dependent formats the allocator follows (upstream's Features)."""

    admin_access: bool = True
    """DRAAdminAccess."""
    prioritized_list: bool = True
    """DRAPrioritizedList."""
    config_covering_all_is_empty: bool = True
    """1.37 and later: a config that applies to every request of the claim lists no requests."""
    claim_config_once: bool = True
    """1.37 and later: a claim config is copied once; up to 1.36 once per request it names."""
    partitionable_devices: bool = True
    """DRAPartitionableDevices: devices that consume shared counters are allocatable."""
    consumable_capacity: bool = True
    """DRAConsumableCapacity: devices that allow multiple allocations are allocatable."""
    device_taints: bool = True
    """DRADeviceTaints: a tainted device only for requests that tolerate its taints (taints.py)."""
    device_binding: bool = True
    """DRADeviceBindingConditions: devices with binding conditions are allocatable, their conditions
    copied into the result, bindsToNode pins the allocation to the node."""
    step_format: bool = True
    """1.37 and later: a consumed capacity rounded up to a validRange step is written in the step's
    format; up to 1.36 in BinarySI (consumable.consumed_amount)."""
    fractional_capacity_range: bool = False
    """DRAFractionalCapacityRange (Beta, off by default at 1.37): a validRange exact in thousandths
    rounds requests in milli-units (consumable.consumed_amount)."""


DEFAULT_FEATURES = Features()


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
    features: Features = DEFAULT_FEATURES,
    consumed: Mapping[DeviceId, Mapping[str, Num]] | None = None,
) -> AllocationOutcome:
    """Allocate every claim of one pod on `node`, or say why not.

    `slices` may hold slices of any node (invisible ones are skipped), or be an Inventory built
    for `node` (`Inventory(node, slices)`), which the caller may keep while the node's slices
    do not change: selector matches are memoized on it. `allocated` holds the devices other
    claims have. The search stops with `timed_out` once `now() >= deadline`. With
    `explain_failure=False` a failure carries the message "does not fit" and skips the
    diagnosis (the scheduler can ask again for the words once no node fits). `consumed` holds,
    per shared device (allowMultipleAllocations), the capacity other claims consume of it.
    """
    if deadline is not None and now() >= deadline:
        return AllocationOutcome(None, message=TIMED_OUT, timed_out=True)
    inventory = slices if isinstance(slices, pools.Inventory) else pools.Inventory(node, slices)
    if inventory.node.name != node.name:
        raise ValueError(f"inventory is for node {inventory.node.name}, not {node.name}")
    entries = inventory.entries
    devices = inventory.devices
    constraints = [c.constraints for c in claims]
    held = _Held(inventory, allocated, consumed)

    def search(subset: Sequence[Slot]) -> list[Choice] | None:
        return Search(devices, constraints, deadline, now, held.counters(), held.capacity()).run(subset)

    try:
        slots = _prepare(claims, inventory, classes, allocated, features)
        for slot in slots:
            for alt in slot.alternatives:
                if alt.reason is None and (held.active or _capacity_requests(alt)):
                    _hold_filter(alt, inventory, held, features)
        chosen = search(slots)
        if chosen is None:
            if inventory.invalid:
                return AllocationOutcome(None, message=INVALID_POOLS)
            if not explain_failure:
                return AllocationOutcome(None, message=DOES_NOT_FIT)
            return AllocationOutcome(None, message=explain(claims, slots, lambda s: search(s) is not None))
    except TimedOut:
        return AllocationOutcome(None, message=TIMED_OUT, timed_out=True)
    except Abort as err:
        message = err.message if err.claim_index is None else f"claim {ref(claims[err.claim_index])}, {err.message}"
        return AllocationOutcome(None, message=message, error=True)
    results = tuple(_result(i, claim, chosen, entries, classes, node, features)
                    for i, claim in enumerate(claims))
    return AllocationOutcome(results, score=sum(alt.index for alt, _ in chosen))


# --- preparation --------------------------------------------------------------------------------


def ref(claim: Claim) -> str:
    """klog.KObj: "namespace/name", or the bare name."""
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


def _prepare(
    claims: Sequence[Claim],
    inventory: pools.Inventory,
    classes: Mapping[str, DeviceClass],
    allocated: Set[DeviceId],
    features: Features,
) -> list[Slot]:
    """Every request's alternatives with their candidates; raises Abort where upstream's
    validateDeviceRequest returns an error."""
    slots = []
    for ci, claim in enumerate(claims):
        for request in claim.requests:
            where = f"claim {ref(claim)}, request {request.name}"
            if request.first_available and not features.prioritized_list:
                raise Abort(f"{where}: has subrequests, but the DRAPrioritizedList feature is disabled")
            if request.admin_access and not features.admin_access:
                raise Abort(f"{where}: admin access is requested, but the feature is disabled")
            slot = Slot(ci, request)
            subs: Sequence[SubRequest | None] = request.first_available or (None,)
            for index, sub in enumerate(subs):
                alt = _alternative(ci, request, sub, index)
                alt.constraints = _applying(claim.constraints, alt)
                _candidates(claim, alt, inventory, classes, allocated, features)
                slot.alternatives.append(alt)
            slots.append(slot)
        least = sum(min(a.needed for a in slot.alternatives) for slot in slots if slot.claim_index == ci)
        if least > MAX_DEVICES_PER_CLAIM:
            raise Abort(f"claim {ref(claim)}: number of requested devices {least} exceeds the claim limit of "
                        f"{MAX_DEVICES_PER_CLAIM}")
    return slots


def _alternative(ci: int, request: Request, sub: SubRequest | None, index: int) -> Alternative:
    if sub is None:
        return Alternative(ci, request, None, 0, request.allocation_mode, request.count, request.admin_access)
    return Alternative(ci, request, sub, index, sub.allocation_mode, sub.count, request.admin_access)


def _applying(constraints: Sequence[Constraint], alt: Alternative) -> tuple[int, ...]:
    names = (alt.request.name, alt.full_name)
    return tuple(i for i, c in enumerate(constraints) if not c.requests or any(n in c.requests for n in names))


def _candidates(
    claim: Claim,
    alt: Alternative,
    inventory: pools.Inventory,
    classes: Mapping[str, DeviceClass],
    allocated: Set[DeviceId],
    features: Features = DEFAULT_FEATURES,
) -> None:
    selectors = alt.request.selectors if alt.sub is None else alt.sub.selectors
    match = inventory.match(alt.class_name, classes.get(alt.class_name), selectors)
    matching = match.matching if inventory.untainted else taints.usable(
        match.matching, inventory.devices, _tolerations(alt), taints=features.device_taints,
        binding=features.device_binding)
    alt.in_class, alt.matching, alt.cel_error = match.in_class, len(matching), match.cel_error
    if match.blocking:
        alt.reason = match.blocking
        return
    name = alt.request.name if alt.sub is None else alt.sub.name
    errors = {i: _runtime_error(claim, text) for i, text in match.failing} if match.failing else _NO_ERRORS
    if alt.mode == ALL:
        # upstream validates "all" eagerly: every pool must be usable, every device evaluable
        for pool in inventory.pools:
            if not pool.complete:
                raise Abort(f"claim {ref(claim)}, request {name}: asks for all devices, but resource pool "
                            f"{pool.id} is currently being updated")
            if pool.invalid:
                raise Abort(f"claim {ref(claim)}, request {name}: asks for all devices, but resource pool "
                            f"{pool.id} is currently invalid")
        if errors:
            raise Abort(errors[min(errors)])
    elif alt.mode != EXACT_COUNT:
        raise Abort(f"claim {ref(claim)}, request {name}: unsupported count mode {alt.mode}")
    ids = inventory.ids
    if errors:
        matching = tuple(sorted((*matching, *errors)))
        alt.errors = dict(errors)
    candidates = matching if alt.admin_access or not allocated else tuple(
        i for i in matching if ids[i] not in allocated)
    alt.candidates = candidates
    alt.free = len(candidates) - sum(1 for i in candidates if i in errors) if errors else len(candidates)
    if alt.mode == ALL:
        alt.needed = len(matching)
    alt.reason = _count_reason(alt)
    if alt.reason is not None and errors and any(i in errors for i in candidates):
        alt.reason = None  # the search reaches the failing device and reports it, as upstream


_NO_ERRORS: Mapping[int, str] = {}


def _runtime_error(claim: Claim, text: str) -> str:
    return text if text.startswith("class ") else f"claim {ref(claim)}: {text}"


def _count_reason(alt: Alternative) -> str | None:
    if alt.matching == 0:
        if alt.in_class == 0:
            return "no device in class"
        return f"no device matches the selectors ({alt.in_class} in class)"
    if alt.needed > MAX_DEVICES_PER_CLAIM:
        return f"needs {alt.needed} devices, a claim may have at most {MAX_DEVICES_PER_CLAIM}"
    if alt.free < alt.needed:
        need = f", need {alt.needed}" if alt.needed > 1 or alt.mode == ALL else ""
        return f"{alt.free} of {alt.matching} free{need}"
    return None


# --- results ------------------------------------------------------------------------------------


def _result(
    ci: int,
    claim: Claim,
    chosen: Sequence[Choice],
    entries: Sequence[pools.Entry],
    classes: Mapping[str, DeviceClass],
    node: Node,
    features: Features,
) -> AllocationResult:
    mine = [(alt, picked) for alt, picked in chosen if alt.claim_index == ci]
    devices = tuple(
        AllocatedDevice(alt.full_name, entries[d].device.driver, entries[d].device.pool, entries[d].device.name,
                        alt.admin_access, entries[d].slice.skip_node_operations,
                        *_share(claim, alt, d, entries[d].device),
                        **_copied(alt, entries[d].device, features))
        for alt, picked in mine
        for d in picked
    )
    used = [entries[d].slice for _, picked in mine for d in picked]
    config = _config(claim, {alt.request.name: alt for alt, _ in mine}, classes, features)
    selector = pools.node_selector(used, node)
    if features.device_binding and any(entries[d].device.binds_to_node for _, picked in mine for d in picked):
        selector = NodeSelector.for_node(node.name)  # bindsToNode: the allocation is for this node only
    return AllocationResult(devices, config, selector)


def _tolerations(alt: Alternative) -> tuple[taints.Toleration, ...]:
    return alt.request.tolerations if alt.sub is None else alt.sub.tolerations


def _copied(alt: Alternative, device: Device, features: Features) -> dict[str, Any]:
    """What a result records beyond the device: the request's tolerations (DRADeviceTaints) and
    the device's binding conditions (DRADeviceBindingConditions)."""
    out: dict[str, Any] = {}
    if features.device_taints and _tolerations(alt):
        out["tolerations"] = _tolerations(alt)
    if features.device_binding and device.binding_conditions:
        out["binding_conditions"] = device.binding_conditions
        out["binding_failure_conditions"] = device.binding_failure_conditions
    return out


def _share(claim: Claim, alt: Alternative, d: int, device: Device) -> tuple[str, tuple[tuple[str, Num], ...]]:
    """(shareID, consumedCapacity) of a result on a shared device (KEP-5075), else ("", ()); the
    capacities named as the slice names them (GetConsumedCapacityFromRequest keys them by the
    device's own map). The shareID is a name-based UUID of claim, request and device: unique per
    allocation, and the allocator stays deterministic."""
    amounts = alt.consumption.get(d)
    if amounts is None:
        return "", ()
    share = uuid.uuid5(uuid.NAMESPACE_OID, "/".join((claim.uid or ref(claim), alt.full_name, *device.id)))
    names = device.capacity_names
    return str(share), tuple((names.get(name, name), amount) for name, amount in amounts)


# --- partitionable devices and consumable capacity ----------------------------------------------


class _Held:
    """What other claims hold of the node's shared counters and shared devices."""

    def __init__(self, inventory: pools.Inventory, allocated: Set[DeviceId],
                 consumed: Mapping[DeviceId, Mapping[str, Num]] | None) -> None:
        self.inventory, self.consumed = inventory, consumed
        self.active = not inventory.counters.empty or bool(inventory.shared)
        self.base = CounterState(inventory.counters, inventory.ids, lambda i: i in allocated or (
            consumed is not None and i in consumed)) if not inventory.counters.empty else None
        self.shared_base = CapacityState(inventory.devices, consumed) if inventory.shared else None

    def counters(self) -> CounterState | None:
        return self.base.copy() if self.base is not None else None

    def capacity(self) -> CapacityState | None:
        return CapacityState(self.inventory.devices, self.consumed) if self.inventory.shared else None


def _capacity_requests(alt: Alternative) -> Mapping[str, Num]:
    return alt.request.capacity if alt.sub is None else alt.sub.capacity


def _hold_filter(alt: Alternative, inventory: pools.Inventory, held: _Held, features: Features) -> None:
    """Drop candidates whose counters or capacity no longer fit, note what a shared device's
    allocation consumes, and recount; the reason names what ran out."""
    requests = _capacity_requests(alt)
    devices = inventory.devices
    kept: list[int] = []
    counters = capacity = 0
    for i in alt.candidates:
        device = devices[i]
        if device.consumes_counters and (not features.partitionable_devices or (
                held.base is not None and not held.base.fits(i))):
            counters += 1
            continue
        if device.allow_multiple_allocations and not features.consumable_capacity:
            continue
        if requests or device.allow_multiple_allocations:
            amounts = inventory.consumption(i, requests, features.step_format, features.fractional_capacity_range)
            if amounts is None:
                capacity += 1
                continue
            if device.allow_multiple_allocations:
                if held.shared_base is not None and not held.shared_base.fits(i, amounts):
                    capacity += 1
                    continue
                alt.consumption[i] = amounts
        kept.append(i)
    if len(kept) == len(alt.candidates):
        return
    alt.candidates, alt.free = tuple(kept), len(kept) - sum(1 for i in kept if i in alt.errors)
    alt.reason = _count_reason(alt)
    if alt.reason is not None and alt.errors and any(i in alt.errors for i in kept):
        alt.reason = None
    if alt.reason is not None:
        notes = [f"{counters} without enough shared counters left"] if counters else []
        notes += [f"{capacity} without the requested capacity left"] if capacity else []
        if notes:
            alt.reason += f" ({', '.join(notes)})"


def _config(
    claim: Claim, chosen: Mapping[str, Alternative], classes: Mapping[str, DeviceClass], features: Features
) -> tuple[AllocationConfig, ...]:
    """Upstream's config list: each class's configs once, naming every request that uses the class
    (claim order), then each claim config (its full `requests` kept, as upstream records it): up
    to 1.36 once per request it names, from 1.37 once (kubernetes#139732); from 1.37 a config
    covering every request lists none (#139731, #139814)."""
    out: list[tuple[str, list[str], OpaqueConfig]] = []
    per_class: dict[str, range] = {}
    for request in claim.requests:
        alt = chosen.get(request.name)
        cls = classes.get(alt.class_name) if alt is not None else None
        if alt is None or cls is None:
            continue
        have = per_class.get(cls.name)
        if have is not None:
            for i in have:
                out[i][1].append(alt.full_name)
            continue
        start = len(out)
        out.extend((FROM_CLASS, [alt.full_name], opaque) for opaque in cls.config)
        per_class[cls.name] = range(start, len(out))
    for dc in claim.config:
        if not dc.requests:
            out.append((FROM_CLAIM, [], dc.opaque))
            continue
        for request in claim.requests:
            alt = chosen.get(request.name)
            if request.name in dc.requests or (
                    alt is not None and alt.sub is not None and alt.full_name in dc.requests):
                out.append((FROM_CLAIM, list(dc.requests), dc.opaque))
                if features.claim_config_once:
                    break
    if features.config_covering_all_is_empty:
        names = [(r.name, chosen[r.name].full_name if r.name in chosen else r.name) for r in claim.requests]
        for _, requests, _ in out:
            if requests and all(n in requests or full in requests for n, full in names):
                requests.clear()
    return tuple(AllocationConfig(source, tuple(requests), opaque) for source, requests, opaque in out)
