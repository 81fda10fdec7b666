"""Shared counters of partitionable devices (KEP-4815): which devices still fit the counters.

One responsibility: bookkeeping of counter consumption. A pool publishes counter sets
(ResourceSlice spec.sharedCounters, in slices of their own); each partition device names the
counters it consumes (consumesCounters). A device can be allocated only while every counter it
consumes has enough left after the devices already allocated (by other claims, and earlier in
this search) took theirs.

Why incremental: upstream's allocator once recomputed the consumption of every allocated device
for every candidate device on every node, and partitionable workloads fell from ~100 to ~3
pods/s (kubernetes#138917). Here the table is built once per Inventory (counters flattened into
an int array, each device's use a tuple of (slot, amount)); an allocation attempt starts from
the node's allocated partitions only (`CounterState`), and the search adds and removes single
devices in O(counters of that device). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.controlplane.allocator.model import Device, DeviceId, ResourceSlice

Use = tuple[tuple[int, int], ...]
"""(counter slot, amount) pairs a device consumes."""


@dataclass(frozen=True)
class CounterTable:
    """The counters one node's inventory sees, built once per Inventory."""

    capacity: tuple[int, ...]
    """Available amount per counter slot."""
    uses: dict[int, Use]
    """Entry index -> its consumption, for devices that consume counters."""
    errors: dict[int, str]
    """Entry index -> why the device cannot be allocated (a counter set or counter that its pool
    does not define)."""
    names: tuple[str, ...]
    """Counter slot -> "driver/pool/set/counter", for messages."""

    @property
    def empty(self) -> bool:
        return not self.uses and not self.errors


EMPTY = CounterTable((), {}, {}, ())


CounterSets = dict[tuple[str, str], dict[str, Mapping[str, int]]]
"""(driver, pool) -> counter set name -> counter -> available amount."""


def for_entries(entries: Sequence[Any], pools: Sequence[Any], slices: Iterable[ResourceSlice]) -> CounterTable:
    """The table of an Inventory: counter sets come from the slices of each pool's newest
    generation (visible or not: 1.35+ publishes them in slices of their own)."""
    newest = {(p.driver, p.name): p.generation for p in pools}
    sets: CounterSets = {}
    for s in slices:
        if s.shared_counters and newest.get((s.driver, s.pool)) == s.generation:
            pool_sets = sets.setdefault((s.driver, s.pool), {})
            for name, values in s.shared_counters.items():
                pool_sets.setdefault(name, values)
    return build([e.device for e in entries], lambda i: (entries[i].pool.driver, entries[i].pool.name), sets)


def build(devices: Sequence[Device], pool_of: Callable[[int], tuple[str, str]], sets: CounterSets) -> CounterTable:
    """`sets` maps (driver, pool) to its counter sets; `pool_of(i)` names entry i's pool."""
    if not any(d.consumes_counters for d in devices):
        return EMPTY
    slots: dict[tuple[str, str, str, str], int] = {}
    capacity: list[int] = []
    names: list[str] = []
    uses: dict[int, Use] = {}
    errors: dict[int, str] = {}
    for i, device in enumerate(devices):
        if not device.consumes_counters:
            continue
        driver, pool = pool_of(i)
        pool_sets = sets.get((driver, pool), {})
        use: list[tuple[int, int]] = []
        for set_name, counters in device.consumes_counters:
            available = pool_sets.get(set_name)
            if available is None:
                errors[i] = f"counter set {set_name} not found in pool {driver}/{pool}"
                break
            for counter, amount in counters.items():
                if counter not in available:
                    errors[i] = f"counter {counter} not found in counter set {set_name} of pool {driver}/{pool}"
                    break
                key = (driver, pool, set_name, counter)
                slot = slots.get(key)
                if slot is None:
                    slot = slots[key] = len(capacity)
                    capacity.append(available[counter])
                    names.append("/".join(key))
                use.append((slot, amount))
            if i in errors:
                break
        if i not in errors:
            uses[i] = tuple(use)
    return CounterTable(tuple(capacity), uses, errors, tuple(names))


class CounterState:
    """Counter use during one allocation attempt: starts from the devices other claims hold."""

    __slots__ = ("_refs", "_table", "_used")

    def __init__(self, table: CounterTable, ids: Sequence[DeviceId], taken: Callable[[DeviceId], bool]) -> None:
        self._table = table
        used = [0] * len(table.capacity)
        refs: dict[int, int] = {}
        for i, use in table.uses.items():
            if taken(ids[i]):
                for slot, amount in use:
                    used[slot] += amount
                refs[i] = 1  # a shared device other claims hold: its counters are paid once
        self._used = used
        self._refs = refs

    def copy(self) -> CounterState:
        """A fresh state from the same starting point (one per search)."""
        new = CounterState.__new__(CounterState)
        new._table, new._used, new._refs = self._table, list(self._used), dict(self._refs)
        return new

    def fits(self, d: int) -> bool:
        """Whether entry d could still be added (alone)."""
        if d in self._table.errors:
            return False
        use = self._table.uses.get(d)
        if use is None or d in self._refs:
            return True
        used, cap = self._used, self._table.capacity
        return all(used[slot] + amount <= cap[slot] for slot, amount in use)

    def take(self, d: int) -> bool:
        """Consume entry d's counters (once per device, however often a shared device is picked)."""
        use = self._table.uses.get(d)
        if use is None:
            return d not in self._table.errors
        refs = self._refs.get(d, 0)
        if refs == 0:
            if not self.fits(d):
                return False
            for slot, amount in use:
                self._used[slot] += amount
        self._refs[d] = refs + 1
        return True

    def release(self, d: int) -> None:
        use = self._table.uses.get(d)
        if use is None:
            return
        refs = self._refs[d] - 1
        if refs:
            self._refs[d] = refs
            return
        del self._refs[d]
        for slot, amount in use:
            self._used[slot] -= amount
