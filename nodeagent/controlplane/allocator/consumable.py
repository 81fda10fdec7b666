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

from nodeagent.controlplane.allocator.model import Device, DeviceId, RequestPolicy
from nodeagent.util import quantity

Consumption = tuple[tuple[str, int], ...]
"""(fully qualified capacity name, amount) for every capacity of a shared device."""


def consumed_amount(requested: int | None, value: int, policy: RequestPolicy | None,
                    step_format: bool = True) -> int | None:
    """What one allocation consumes of a capacity `value`; None when the policy cannot satisfy it.

    Upstream's calculateConsumedCapacity, including where the result comes from, since that
    decides how consumedCapacity is written (quantity.Amount keeps the format): the request, the
    policy default, the capacity value or a validValues entry as they are; the validRange min
    when the request is below it; a step-rounded value is built in the step's format from 1.37
    (NewQuantity(v, validRange.Step.Format) in roundUpRange: 10G on a 1M step is "10G"), and
    up to 1.36 (`step_format` False) as BinarySI (NewQuantity(v, BinarySI): "9765625Ki").
    Not modelled: 1.37's milli-value path for fractional min/max/step (DRAFractionalCapacityRange):
    nodeagent's amounts are whole base units."""
    if requested is None:
        return policy.default if policy is not None and policy.default is not None else value
    if policy is None:
        return requested
    if policy.min is not None:
        if requested < policy.min:
            amount: int = policy.min
        elif policy.step:
            steps = -(-(requested - policy.min) // policy.step)
            fmt = getattr(policy.step, "fmt", quantity.DECIMAL_SI) if step_format else quantity.BINARY_SI
            amount = quantity.Amount(policy.min + steps * policy.step, fmt)
        else:
            amount = requested
        if policy.max is not None and amount > policy.max:
            return None
        return amount
    if policy.valid_values:
        for option in policy.valid_values:
            if option >= requested:
                return option
        return None
    return requested


def consumption(device: Device, requests: Mapping[str, int], step_format: bool = True) -> Consumption | None:
    """A request's consumption of a device, or None when the device cannot serve it (a requested
    capacity it does not have, a policy it violates, more than it has at all).

    A requested name matches a capacity only as the slice writes it, as upstream's
    requestsContainNonExistCapacity looks names up: `ingressBandwidth` in a claim does not match a
    slice's `net.example.com/ingressBandwidth`, nor the other way round (CEL alone sees both forms)."""
    wanted: dict[str, int] = {}
    if requests:
        written = {device.capacity_names.get(name, name): name for name in device.capacity}
        for name, value in requests.items():
            qualified = written.get(name)
            if qualified is None:
                return None
            wanted[qualified] = value
    if not device.allow_multiple_allocations:
        if all(v <= device.capacity[name] for name, v in wanted.items()):
            return ()
        return None
    out: list[tuple[str, int]] = []
    for name, value in device.capacity.items():
        fmt = device.capacity_formats.get(name)
        total = quantity.Amount(value, fmt) if fmt is not None else value
        amount = consumed_amount(wanted.get(name), total, device.request_policies.get(name), step_format)
        if amount is None or amount > value:
            return None
        out.append((name, amount))
    return tuple(out)


class CapacityState:
    """Capacity left on shared devices during one allocation attempt."""

    __slots__ = ("_base", "_devices", "_used")

    def __init__(self, devices: tuple[Device, ...], base: Mapping[DeviceId, Mapping[str, int]] | None) -> None:
        self._devices = devices
        self._base = base or {}
        self._used: dict[int, dict[str, int]] = {}

    def _load(self, d: int) -> dict[str, int]:
        used = self._used.get(d)
        if used is None:
            used = self._used[d] = dict(self._base.get(self._devices[d].id) or {})
        return used

    def fits(self, d: int, amounts: Consumption) -> bool:
        used = self._load(d)
        cap = self._devices[d].capacity
        return all(used.get(name, 0) + amount <= cap[name] for name, amount in amounts)

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
