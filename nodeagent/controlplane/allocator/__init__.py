"""The structured-parameters DRA allocator (pure): its model and `allocate`.

The scheduler converts store objects into `model` dataclasses and calls `allocate` per node;
see allocator.py for the steps and search.py for the search.
"""

from nodeagent.controlplane.allocator.allocator import DOES_NOT_FIT, TIMED_OUT, allocate
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
    DeviceConfig,
    DeviceId,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OpaqueConfig,
    Request,
    ResourceSlice,
    SubRequest,
)
from nodeagent.controlplane.allocator.pools import Inventory

__all__ = [
    "ALL",
    "DOES_NOT_FIT",
    "EXACT_COUNT",
    "FROM_CLAIM",
    "FROM_CLASS",
    "MAX_DEVICES_PER_CLAIM",
    "TIMED_OUT",
    "AllocatedDevice",
    "AllocationConfig",
    "AllocationOutcome",
    "AllocationResult",
    "Claim",
    "Constraint",
    "Device",
    "DeviceClass",
    "DeviceConfig",
    "DeviceId",
    "Inventory",
    "Node",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "OpaqueConfig",
    "Request",
    "ResourceSlice",
    "SubRequest",
    "allocate",
]
