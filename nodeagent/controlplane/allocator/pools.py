"""Which devices a node can see: ResourceSlices gathered into pools, newest generation only.

One responsibility: turn the slices handed to the allocator into the ordered device table for
one node (visibility by nodeName, allNodes or nodeSelector; only the newest generation of each
pool; completeness of each pool), match that table against class and request selectors, and
build the node selector of an allocation result from the slices its devices came from, as the
upstream allocator's createNodeSelector does.

An Inventory is immutable once built, so the scheduler may keep one per node while that node's
slices do not change: selector matches are then memoized on it and a call costs microseconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodeagent.cel.selectors import CelError, CompiledSelector, compile_selector
from nodeagent.controlplane.allocator import counters
from nodeagent.controlplane.allocator.consumable import Consumption, consumption
from nodeagent.controlplane.allocator.model import (
    Device,
    DeviceClass,
    DeviceId,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Num,
    ResourceSlice,
)


@dataclass(frozen=True)
class Pool:
    driver: str
    name: str
    generation: int
    complete: bool
    """The newest generation has resource_slice_count slices (counted across all nodes)."""
    invalid: str = ""
    """Why the pool is invalid ("duplicate device name X"), or empty."""

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def usable(self) -> bool:
        """Upstream allocates nothing from an incomplete or invalid pool."""
        return self.complete and not self.invalid


@dataclass(frozen=True, eq=False)
class Entry:
    """One visible device with the slice and pool it came from."""

    device: Device
    slice: ResourceSlice
    pool: Pool


def _newest(slices: Iterable[ResourceSlice]) -> dict[tuple[str, str], list[ResourceSlice]]:
    newest: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        key = (s.driver, s.pool)
        have = newest.get(key)
        if have is None or s.generation > have[0].generation:
            newest[key] = [s]
        elif s.generation == have[0].generation:
            have.append(s)
    return newest


def gather(
    slices: Iterable[ResourceSlice], node: Node, pool_members: Iterable[ResourceSlice] = ()
) -> tuple[list[Entry], list[Pool]]:
    """The devices visible to `node` (pools in first-seen order, newest generation only) and the pools.

    As upstream's GatherPools: a pool counts when one of its slices is visible to the node; its
    newest generation is complete when that generation has resource_slice_count slices, counted
    over every slice of the pool (so a pool spanning several nodes is complete); a duplicate device
    name makes it invalid. `pool_members` are further slices of the same pools that are not
    visible here (the scheduler passes them so completeness sees the whole pool).
    """
    given = list(slices)
    visible = {id(s) for s in given if s.per_device_node_selection or s.visible_to(node)}
    newest = _newest([*given, *pool_members])
    entries: list[Entry] = []
    pools: list[Pool] = []
    for (driver, name), group in newest.items():
        shown = [s for s in group if id(s) in visible]
        if not shown:
            continue
        complete = len(group) == group[0].resource_slice_count
        invalid = ""
        names: set[str] = set()
        for s in group:
            for d in s.devices:
                if d.name in names and not invalid:
                    invalid = f"duplicate device name {d.name}"
                names.add(d.name)
        pool = Pool(driver, name, group[0].generation, complete, invalid)
        pools.append(pool)
        for s in shown:
            if s.per_device_node_selection:
                entries.extend(_placed(s, pool, node))
            else:
                entries.extend(Entry(d, s, pool) for d in s.devices)
    return entries, pools


def _placed(s: ResourceSlice, pool: Pool, node: Node) -> Iterable[Entry]:
    """perDeviceNodeSelection (KEP-4815): each device's nodeName/nodeSelector/allNodes decides; its
    entry carries a copy of the slice with that selection, so results get the device's selector."""
    for d in s.devices:
        placed = dataclasses.replace(s, node_name=d.node_name, all_nodes=d.all_nodes, node_selector=d.node_selector,
                                     per_device_node_selection=False, devices=())
        if placed.visible_to(node):
            yield Entry(d, placed, pool)


@dataclass(frozen=True)
class Match:
    """Devices of one (class, selectors) pair on one node."""

    in_class: int
    matching: tuple[int, ...]
    """Entry indices of usable pools selected by the class and the request selectors."""
    failing: tuple[tuple[int, str], ...] = ()
    """(entry index, "class X: selector #i" or "selector #i", error) for devices whose evaluation
    failed; upstream aborts the allocation when the search reaches such a device."""
    blocking: str = ""
    """A reason no device can match at all: missing class, selector that does not compile."""

    @property
    def cel_error(self) -> str:
        """The first runtime error, naming the device (for explanations)."""
        return self.failing[0][1] if self.failing else ""


MEMO_SIZE = 256


class Inventory:
    """The devices one node sees, prepared once. Reuse it while the node's slices stay the same."""

    def __init__(
        self, node: Node, slices: Iterable[ResourceSlice], pool_members: Iterable[ResourceSlice] = ()
    ) -> None:
        self.node = node
        slices, pool_members = list(slices), list(pool_members)
        entries, self.pools = gather(slices, node, pool_members)
        self.entries: tuple[Entry, ...] = tuple(entries)
        self.ids: tuple[DeviceId, ...] = tuple(e.device.id for e in self.entries)
        self.devices: tuple[Device, ...] = tuple(e.device for e in self.entries)
        self.counters = counters.for_entries(self.entries, self.pools, [*slices, *pool_members]) if any(
            d.consumes_counters for d in self.devices) else counters.EMPTY
        """Shared counters of partitionable devices (KEP-4815), built once per Inventory."""
        self.shared: tuple[int, ...] = tuple(i for i, d in enumerate(self.devices) if d.allow_multiple_allocations)
        """Entries of devices that allow multiple allocations (KEP-5075)."""
        self.untainted = not any(d.taints or d.binding_conditions for d in self.devices)
        """No device has taints or binding conditions: every match is usable as is (a fast path)."""
        self.incomplete: tuple[str, ...] = tuple(p.id for p in self.pools if not p.complete)
        self.invalid: tuple[str, ...] = tuple(p.id for p in self.pools if p.invalid)
        self._memo: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Match] = {}
        self._consumption: dict[tuple[int, bool, bool, tuple[tuple[str, Num, str], ...]], Consumption | None] = {}

    def consumption(self, i: int, requests: Mapping[str, Num], step_format: bool = True,
                    fractional: bool = False) -> Consumption | None:
        """consumable.consumption of entry `i` (memoized: devices and requests are immutable, and
        every pod of a workload asks the same amounts of the same devices)."""
        # the formats are part of the key: they decide how the consumed amount is written
        key = (i, step_format, fractional,
               tuple((k, v, getattr(v, "fmt", "")) for k, v in requests.items()) if requests else ())
        try:
            return self._consumption[key]
        except KeyError:
            pass
        found = consumption(self.devices[i], requests, step_format, fractional)
        if len(self._consumption) >= MEMO_SIZE:
            self._consumption.clear()
        self._consumption[key] = found
        return found

    def match(self, class_name: str, cls: DeviceClass | None, selectors: tuple[str, ...]) -> Match:
        """Which entries the class and the request selectors select (memoized: both are immutable)."""
        key = (class_name, cls.selectors if cls is not None else ("\0missing",), selectors)
        found = self._memo.get(key)
        if found is None:
            found = self._match(class_name, cls, selectors)
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = found
        return found

    def _match(self, class_name: str, cls: DeviceClass | None, selectors: tuple[str, ...]) -> Match:
        if cls is None:
            return Match(0, (), blocking=f"device class {class_name} not found")
        try:
            class_sel = [compile_selector(e) for e in cls.selectors]
            request_sel = [compile_selector(e) for e in selectors]
        except CelError as err:
            return Match(0, (), blocking=f"CEL error: {err.detail}")
        in_class = 0
        matching: list[int] = []
        failing: list[tuple[int, str]] = []
        for i, entry in enumerate(self.entries):
            if not entry.pool.usable:
                continue
            ok, error = _all_match(class_sel, entry, f"class {class_name}: ")
            if error:
                failing.append((i, error))
                continue
            if not ok:
                continue
            in_class += 1
            if not request_sel:
                matching.append(i)
                continue
            ok, error = _all_match(request_sel, entry, "")
            if error:
                failing.append((i, error))
            elif ok:
                matching.append(i)
        return Match(in_class, tuple(matching), tuple(failing))


def _all_match(selectors: list[CompiledSelector], entry: Entry, role: str) -> tuple[bool, str]:
    """(all selectors are true, upstream's runtime error text without the claim name or "")."""
    device = entry.device
    view = device.view
    for index, sel in enumerate(selectors):
        outcome = sel.evaluate(view)
        if outcome is True:
            continue
        if isinstance(outcome, str):
            where = f"{device.driver}/{device.pool}/{device.name}"
            return False, f"{role}selector #{index} on device {where}: CEL runtime error: {outcome}"
        return False, ""
    return True, ""


def node_selector(slices: Sequence[ResourceSlice], node: Node) -> NodeSelector | None:
    """Where an allocation from these slices can be used: the node, a combined selector, or anywhere."""
    expressions: list[NodeSelectorRequirement] = []
    fields: list[NodeSelectorRequirement] = []
    for s in slices:
        if s.node_name is not None:
            return NodeSelector.for_node(s.node_name)
        if s.node_selector is not None:
            if len(s.node_selector.terms) != 1:
                # Several terms cannot be ANDed into one term; pin to the node that was checked.
                return NodeSelector.for_node(node.name)
            term = s.node_selector.terms[0]
            expressions.extend(term.match_expressions)
            fields.extend(term.match_fields)
    if not expressions and not fields:
        return None
    return NodeSelector((NodeSelectorTerm(tuple(expressions), tuple(fields)),))
