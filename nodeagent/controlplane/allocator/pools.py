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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nodeagent.controlplane.allocator.model import (
    Device,
    DeviceClass,
    DeviceId,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ResourceSlice,
)
from nodeagent.controlplane.cel import CelError, CompiledSelector, compile_selector


@dataclass(frozen=True)
class Pool:
    driver: str
    name: str
    generation: int
    complete: bool
    """Every slice of the newest generation (resource_slice_count of them) is visible."""


@dataclass(frozen=True, eq=False)
class Entry:
    """One visible device with the slice and pool it came from."""

    device: Device
    slice: ResourceSlice
    pool: Pool


def gather(slices: Iterable[ResourceSlice], node: Node) -> list[Entry]:
    """The devices visible to `node`, pools in first-seen order, newest generation only."""
    newest: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        if not s.visible_to(node):
            continue
        key = (s.driver, s.pool)
        have = newest.get(key)
        if have is None or s.generation > have[0].generation:
            newest[key] = [s]
        elif s.generation == have[0].generation:
            have.append(s)
    entries: list[Entry] = []
    for (driver, name), group in newest.items():
        expected = max(s.resource_slice_count for s in group)
        seen = len({s.name for s in group})
        pool = Pool(driver, name, group[0].generation, seen >= expected)
        names: set[str] = set()
        for s in group:
            for d in s.devices:
                if d.name not in names:  # a duplicate name in one pool is ignored, first wins
                    names.add(d.name)
                    entries.append(Entry(d, s, pool))
    return entries


@dataclass(frozen=True)
class Match:
    """Devices of one (class, selectors) pair on one node."""

    in_class: int
    matching: tuple[int, ...]
    """Entry indices selected by the class and the request selectors."""
    cel_error: str = ""
    """The first runtime error, naming the device (such a device does not match)."""
    blocking: str = ""
    """A reason no device can match at all: missing class, selector that does not compile."""


MEMO_SIZE = 256


class Inventory:
    """The devices one node sees, prepared once. Reuse it while the node's slices stay the same."""

    def __init__(self, node: Node, slices: Iterable[ResourceSlice]) -> None:
        self.node = node
        self.entries: tuple[Entry, ...] = tuple(gather(slices, node))
        self.ids: tuple[DeviceId, ...] = tuple(e.device.id for e in self.entries)
        self.devices: tuple[Device, ...] = tuple(e.device for e in self.entries)
        self.incomplete: tuple[str, ...] = tuple(
            sorted({f"{e.pool.driver}/{e.pool.name}" for e in self.entries if not e.pool.complete}))
        self._memo: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Match] = {}

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
        error = ""
        for i, entry in enumerate(self.entries):
            ok, error = _all_match(class_sel, entry.device, error)
            if not ok:
                continue
            in_class += 1
            ok, error = _all_match(request_sel, entry.device, error)
            if ok:
                matching.append(i)
        return Match(in_class, tuple(matching), error)


def _all_match(selectors: list[CompiledSelector], device: Device, error: str) -> tuple[bool, str]:
    view = device.view
    for sel in selectors:
        outcome = sel.evaluate(view)
        if outcome is True:
            continue
        if isinstance(outcome, str) and not error:
            error = f"device {device.name}: {outcome}"
        return False, error
    return True, error


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
