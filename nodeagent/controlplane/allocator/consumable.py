"""Consumable capacity (KEP-5075): how much of a shared device one request consumes, and what is left.

One responsibility: the capacity arithmetic of devices with allowMultipleAllocations. Such a
device is not taken whole; each allocation consumes, per capacity, the amount the request asks
for rounded up by the capacity's requestPolicy (the smallest validValues entry not below it, or
validRange min plus whole steps; the policy default, or the whole capacity, when the request does
not name it), and the device stays allocatable while the sum over its allocations fits. For a
device that allows one allocation only, capacity requests are a filter (each named capacity must
exist and be large enough). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from nodeagent.controlplane.allocator.model import Device, DeviceId, Num, RequestPolicy
from nodeagent.util import quantity

Consumption = tuple[tuple[str, Num], ...]
"""(fully qualified capacity name, amount) for every capacity of a shared device."""

MAX_INT64 = 2**63 - 1


def consumed_amount(requested: Num | None, value: Num, policy: RequestPolicy | None,
                    step_format: bool = True, fractional: bool = False) -> Num | None:
    """What one allocation consumes of a capacity `value`; None when the policy cannot satisfy it.

    Upstream's calculateConsumedCapacity followed by violatesPolicy (dynamic-resource-allocation
    v0.37.2 structured/internal/.../consumable_capacity.go), including where the result comes
    from, since that decides how consumedCapacity is written (quantity.Amount/Fractional keep the
    format): the request, the policy default, the capacity value or a validValues entry as they
    are, exactly (250m stays 250m); the validRange min when the request is below it; a
    step-rounded value is built in the step's format from 1.37 (NewQuantity(v,
    validRange.Step.Format) in roundUpRange: 10G on a 1M step is "10G"), and up to 1.36
    (`step_format` False) as BinarySI (NewQuantity(v, BinarySI): "9765625Ki").

    Step rounding reads whole numbers (Quantity.Value(), rounded up: a 500m step counts as 1)
    unless `fractional` (DRAFractionalCapacityRange, Beta but off by default at 1.37) and the
    range is exact in thousandths: then it rounds in milli-units (0.25 on min 0.2, step 0.1 is
    300m). Intended difference: a request the arithmetic cannot represent (past MaxInt64, or
    not a whole number of thousandths on the milli path) aborts upstream's whole allocation
    (errCapacityRequestNotRepresentable); here the device is skipped, as for a policy mismatch."""
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    amount: Num | None
    if policy.min is not None:
        amount = _round_up_range(requested, policy, step_format, fractional)
    elif policy.valid_values:
        amount = next((option for option in policy.valid_values if option >= requested), requested)
    else:
        amount = requested
    if amount is None or _violates(amount, policy, fractional):
        return None
    return amount


def use_milli(policy: RequestPolicy, fractional: bool) -> bool:
    """useMilli: the gate on, min, max and step each a whole number of thousandths that fits
    int64 in milli-units, and the step at least 1m."""
    if not fractional:
        return False
    for value in (policy.min, policy.max, policy.step):
        if value is not None and not (quantity.is_milli(value) and quantity.milli_value(value) <= MAX_INT64):
            return False
    return policy.step is None or quantity.milli_value(policy.step) >= 1


def _round_up_range(requested: Num, policy: RequestPolicy, step_format: bool, fractional: bool) -> Num | None:
    """roundUpRange: below min -> min; no step -> the request; else min plus whole steps."""
    low = policy.min
    assert low is not None
    if requested < low:
        return low
    step = policy.step
    if not step:
        return requested
    fmt = getattr(step, "fmt", quantity.DECIMAL_SI) if step_format else quantity.BINARY_SI
    if use_milli(policy, fractional):
        if not quantity.is_milli(requested) or quantity.milli_value(requested) > MAX_INT64:
            return None
        step_m, low_m = quantity.milli_value(step), quantity.milli_value(low)
        steps = -(-(quantity.milli_value(requested) - low_m) // step_m)
        if steps > (MAX_INT64 - low_m) // step_m:
            return None
        return quantity.exact_value(Fraction(low_m + step_m * steps, 1000), fmt)
    if requested > MAX_INT64:
        return None
    step_i, low_i = quantity.ceil_value(step), quantity.ceil_value(low)
    steps = -(-(quantity.ceil_value(requested) - low_i) // step_i)
    if low_i >= 0 and steps > (MAX_INT64 - low_i) // step_i:
        return None
    return quantity.Amount(low_i + step_i * steps, fmt)


def _violates(amount: Num, policy: RequestPolicy, fractional: bool) -> bool:
    """violatesPolicy: above max, off the step grid (in the arithmetic the rounding used), or
    not one of validValues; the default never violates."""
    if policy.default is not None and amount == policy.default:
        return False
    if policy.min is not None:
        if policy.max is not None and amount > policy.max:
            return True
        if policy.step:
            if use_milli(policy, fractional):
                if not quantity.is_milli(amount):
                    return True
                base, step = quantity.milli_value(policy.min), quantity.milli_value(policy.step)
                return (quantity.milli_value(amount) - base) % step != 0
            base, step = quantity.ceil_value(policy.min), quantity.ceil_value(policy.step)
            return (quantity.ceil_value(amount) - base) % step != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def consumption(device: Device, requests: Mapping[str, Num], step_format: bool = True,
                fractional: bool = False) -> Consumption | None:
    """A request's consumption of a device, or None when the device cannot serve it (a requested
    capacity it does not have, a policy it violates, more than it has at all).

    A requested name matches a capacity only as the slice writes it, as upstream's
    requestsContainNonExistCapacity looks names up: `ingressBandwidth` in a claim does not match a
    slice's `net.example.com/ingressBandwidth`, nor the other way round (CEL alone sees both forms)."""
    wanted: dict[str, Num] = {}
    if requests:
        written = {device.capacity_names.get(name, name): name for name in device.capacity}
        for name, value in requests.items():
            qualified = written.get(name)
            if qualified is None:
                return None
            wanted[qualified] = value
    if not device.allow_multiple_allocations:
        if all(v <= device.capacity_of(name) for name, v in wanted.items()):
            return ()
        return None
    out: list[tuple[str, Num]] = []
    for name in device.capacity:
        value = device.capacity_of(name)
        fmt = device.capacity_formats.get(name)
        total = quantity.exact_value(value, fmt) if fmt is not None else value
        amount = consumed_amount(wanted.get(name), total, device.request_policies.get(name), step_format,
                                 fractional)
        if amount is None or amount > value:
            return None
        out.append((name, amount))
    return tuple(out)


class CapacityState:
    """Capacity left on shared devices during one allocation attempt."""

    __slots__ = ("_base", "_devices", "_used")

    def __init__(self, devices: tuple[Device, ...], base: Mapping[DeviceId, Mapping[str, Num]] | None) -> None:
        self._devices = devices
        self._base = base or {}
        self._used: dict[int, dict[str, Num]] = {}

    def _load(self, d: int) -> dict[str, Num]:
        used = self._used.get(d)
        if used is None:
            used = self._used[d] = dict(self._base.get(self._devices[d].id) or {})
        return used

    def fits(self, d: int, amounts: Consumption) -> bool:
        used = self._load(d)
        device = self._devices[d]
        return all(used.get(name, 0) + amount <= device.capacity_of(name) for name, amount in amounts)

    def take(self, d: int, amounts: Consumption) -> bool:
        if not self.fits(d, amounts):
            return False
        used = self._used[d]
        for name, amount in amounts:
            used[name] = used.get(name, 0) + amount
        return True

    def release(self, d: int, amounts: Consumption) -> None:
        used = self._used[d]
        for name, amount in amounts:
            used[name] -= amount
