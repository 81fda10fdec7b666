"""The allocator's own input and output model: frozen dataclasses, independent of the API objects.

One responsibility: describe what the structured allocator reads (devices, slices, classes,
claims, a node) and what it returns (allocation results, an outcome with a score or a reason).
The scheduler converts store objects (resource.k8s.io shapes) into these at its edge, so the
allocator never depends on the API object model or the store. Capacities are ints in base
units (bytes, counts), as nodeagent.cel.selectors expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Any

from nodeagent.cel.selectors import AttributeValue, DeviceView, qualified, shared_view
from nodeagent.controlplane.allocator.taints import Taint, Toleration
from nodeagent.objects.resource.shared import ALLOCATION_RESULTS_MAX

EXACT_COUNT = "ExactCount"
ALL = "All"
FROM_CLASS = "FromClass"
FROM_CLAIM = "FromClaim"
MAX_DEVICES_PER_CLAIM = ALLOCATION_RESULTS_MAX
"""resource.k8s.io AllocationResultsMaxSize: devices in one claim's allocation."""

DeviceId = tuple[str, str, str]
Num = int | Fraction
"""A quantity in base units, exactly: an int (quantity.Amount) when whole, else a Fraction
(quantity.Fractional); consumable capacity adds and compares these as Quantity does."""
"""(driver, pool, device): how allocations name a device."""


@dataclass(frozen=True, eq=False)
class Device:
    """One device of a ResourceSlice. Attribute names are "domain/name" or bare (driver's domain)."""

    driver: str
    pool: str
    name: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, int] = field(default_factory=dict)
    # Partitionable devices (KEP-4815): (counter set, {counter: amount}) this device consumes, and
    # its own node selection when its slice sets perDeviceNodeSelection.
    consumes_counters: tuple[tuple[str, Mapping[str, int]], ...] = ()
    node_name: str | None = None
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    # Consumable capacity (KEP-5075): shared by several allocations until its capacity is used up.
    allow_multiple_allocations: bool = False
    request_policies: Mapping[str, RequestPolicy] = field(default_factory=dict)
    capacity_formats: Mapping[str, str] = field(default_factory=dict)
    """Qualified capacity name -> the quantity Format of its value (a consumed amount that is
    the whole capacity is written in it)."""
    fractional_capacity: Mapping[str, Fraction] = field(default_factory=dict)
    """Qualified capacity name -> its value exactly, for a shared device's capacity that is not a
    whole number (`capacity` holds it rounded up, as CEL reads it; consumption sums exactly)."""
    capacity_names: Mapping[str, str] = field(default_factory=dict)
    """Qualified capacity name -> the name as the slice writes it, where they differ (a bare name of the
    driver's domain): capacity requests match the slice's names exactly and consumedCapacity is keyed
    by them, as upstream's allocator does (only CEL sees the qualified form)."""
    # Device taints (KEP-5055; the slice's own and those of matching DeviceTaintRules) and binding
    # conditions (KEP-5007), copied into the allocation result.
    taints: tuple[Taint, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    node_allocatable: Mapping[str, Any] | None = None
    """nodeAllocatableResources as stored (KEP-5517): not read by the allocator, only by the
    scheduler's accounting of node resources (scheduler/nodealloc.py)."""

    @property
    def id(self) -> DeviceId:
        return (self.driver, self.pool, self.name)

    def capacity_of(self, name: str) -> Num:
        """A capacity's value exactly (consumable capacity compares sums with Quantity.Cmp)."""
        exact = self.fractional_capacity.get(name)
        return self.capacity[name] if exact is None else exact

    @property
    def view(self) -> DeviceView:
        """The CEL view, shared by every device of the same content (see cel.shared_view).
        Remembered in the instance dict by hand: 3.11's cached_property takes a lock on every
        first read, a third of the cost of a node's first allocation."""
        found: DeviceView | None = self.__dict__.get("_view")
        if found is None:
            found = self.__dict__["_view"] = shared_view(self.driver, self.attributes, self.capacity,
                                                         self.allow_multiple_allocations)
        return found

    @cached_property
    def qualified_attributes(self) -> Mapping[str, AttributeValue]:
        return {qualified(self.driver, k): v for k, v in self.attributes.items()}

    def attribute(self, name: str) -> AttributeValue | None:
        """Value of a fully qualified attribute ("gpu.example.com/model"), or None."""
        return self.qualified_attributes.get(name)


@dataclass(frozen=True)
class RequestPolicy:
    """capacity[name].requestPolicy in base units, exactly: default, validValues, or validRange (min,
    max, step)."""

    default: Num | None = None
    valid_values: tuple[Num, ...] = ()
    min: Num | None = None
    max: Num | None = None
    step: Num | None = None


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """key, operator (In, NotIn, Exists, DoesNotExist, Gt, Lt), values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        op = self.operator
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op in ("Gt", "Lt") and value is not None and len(self.values) == 1:
            try:
                have, want = int(value), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


@dataclass(frozen=True)
class NodeSelectorTerm:
    """All requirements must hold. match_fields supports metadata.name. An empty term matches nothing."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    def matches(self, node: Node) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        fields = {"metadata.name": node.name}
        return all(r.matches(node.labels) for r in self.match_expressions) and all(
            r.matches(fields) for r in self.match_fields
        )


@dataclass(frozen=True)
class NodeSelector:
    """v1.NodeSelector: any term matches."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, node: Node) -> bool:
        return any(t.matches(node) for t in self.terms)

    @staticmethod
    def from_labels(labels: Mapping[str, str]) -> NodeSelector:
        """matchLabels shorthand: one term with an In requirement per label."""
        reqs = tuple(NodeSelectorRequirement(k, "In", (v,)) for k, v in sorted(labels.items()))
        return NodeSelector((NodeSelectorTerm(match_expressions=reqs),))

    @staticmethod
    @lru_cache(maxsize=4096)  # immutable result, asked for on every allocation of node-local devices
    def for_node(name: str) -> NodeSelector:
        req = NodeSelectorRequirement("metadata.name", "In", (name,))
        return NodeSelector((NodeSelectorTerm(match_fields=(req,)),))


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ResourceSlice:
    """One slice of a pool. Exactly one of node_name, all_nodes, node_selector says who sees it."""

    name: str
    driver: str
    pool: str
    devices: tuple[Device, ...] = ()
    generation: int = 1
    resource_slice_count: int = 1
    node_name: str | None = None
    all_nodes: bool = False
    node_selector: NodeSelector | None = None
    skip_node_operations: tuple[str, ...] = ()  # spec.skipNodeOperations, copied into results
    per_device_node_selection: bool = False
    shared_counters: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Counter sets of the pool (KEP-4815), by name: counter -> available amount."""

    def visible_to(self, node: Node) -> bool:
        if self.node_name is not None:
            return self.node_name == node.name
        if self.all_nodes:
            return True
        return self.node_selector is not None and self.node_selector.matches(node)


@dataclass(frozen=True)
class OpaqueConfig:
    driver: str
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()
    config: tuple[OpaqueConfig, ...] = ()


@dataclass(frozen=True)
class SubRequest:
    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    capacity: Mapping[str, Num] = field(default_factory=dict, hash=False, compare=False)
    """capacity.requests (KEP-5075), fully qualified names in base units."""
    tolerations: tuple[Toleration, ...] = ()
    """Device taints this request tolerates (KEP-5055)."""


@dataclass(frozen=True)
class Request:
    """Either device_class_name (an exact request) or first_available (alternatives, in order)."""

    name: str
    device_class_name: str = ""
    selectors: tuple[str, ...] = ()
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    first_available: tuple[SubRequest, ...] = ()
    capacity: Mapping[str, Num] = field(default_factory=dict, hash=False, compare=False)
    """capacity.requests (KEP-5075), fully qualified names in base units."""
    tolerations: tuple[Toleration, ...] = ()
    """Device taints this request tolerates (KEP-5055)."""


@dataclass(frozen=True)
class Constraint:
    """requests name "req" (whichever alternative is chosen) or "req/sub"; empty means all."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True)
class DeviceConfig:
    """Claim config; requests name "req" or "req/sub"; empty means every request."""

    opaque: OpaqueConfig
    requests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    uid: str
    requests: tuple[Request, ...]
    constraints: tuple[Constraint, ...] = ()
    config: tuple[DeviceConfig, ...] = ()


@dataclass(frozen=True)
class AllocatedDevice:
    request: str
    """"req", or "req/sub" when a firstAvailable alternative was chosen."""
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    skip_node_operations: tuple[str, ...] = ()
    share_id: str = ""
    """Set when the device allows multiple allocations (KEP-5075): this allocation's share."""
    consumed_capacity: tuple[tuple[str, Num], ...] = ()
    """(capacity name as the slice has it, amount in base units) for a shared device."""
    tolerations: tuple[Toleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()

    @property
    def id(self) -> DeviceId:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True)
class AllocationConfig:
    source: str
    """FromClass or FromClaim."""
    requests: tuple[str, ...]
    opaque: OpaqueConfig


@dataclass(frozen=True)
class AllocationResult:
    devices: tuple[AllocatedDevice, ...]
    config: tuple[AllocationConfig, ...] = ()
    node_selector: NodeSelector | None = None


@dataclass(frozen=True)
class AllocationOutcome:
    """results: one per claim, in input order, or None when nothing fits (message says why)."""

    results: tuple[AllocationResult, ...] | None
    score: int = 0
    """Sum over requests of the chosen firstAvailable index: lower means better alternatives fit."""
    message: str = ""
    timed_out: bool = False
    error: bool = False
    """Upstream returns an error (not "does not fit"): the pod's scheduling attempt stops."""

    @property
    def ok(self) -> bool:
        return self.results is not None
