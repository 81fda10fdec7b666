"""The memory manager's state, as the kubelet's memorymanager/state: machine state and blocks.

Per NUMA node and memory type (memory, hugepages-<size>): total, systemReserved (from
reservedMemory), allocatable (total - systemReserved), reserved (held by containers) and
free (allocatable - reserved); the number of container blocks using the node and the group
of NUMA nodes ("cells") the node is allocated with. A Block is one container's share of one
memory type on a set of NUMA nodes. Plain data, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MEMORY = "memory"


@dataclass
class MemoryTable:
    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int


@dataclass
class NodeState:
    memory_map: dict[str, MemoryTable]
    cells: tuple[int, ...]
    number_of_assignments: int = 0


MachineState = dict[int, NodeState]


@dataclass(frozen=True)
class Block:
    numa_affinity: tuple[int, ...]
    type: str
    size: int

    def to_doc(self) -> dict[str, Any]:
        return {"numaAffinity": list(self.numa_affinity), "type": self.type, "size": self.size}

    @staticmethod
    def from_doc(doc: Mapping[str, Any]) -> Block:
        return Block(tuple(int(n) for n in doc["numaAffinity"]), str(doc["type"]), int(doc["size"]))


@dataclass
class Assignments:
    """container blocks per pod uid, in allocation order: uid -> container -> blocks."""

    pods: dict[str, dict[str, tuple[Block, ...]]] = field(default_factory=dict)
