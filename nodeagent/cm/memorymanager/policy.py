"""The memory manager's Static policy decisions (memorymanager/policy_static.go). Pure.

Only Guaranteed pods get blocks. Hints: every NUMA mask whose allocatable memory can hold
the container's request of each memory type and whose free memory (plus what the pod's
init containers left to reuse on that mask) can hold it now, skipping masks that would
mix a node allocated alone with a group, or split a group; preferred = the mask has the
minimal number of nodes any mask could hold it with. Allocation takes the topology
manager's affinity (or, with none, the best hint: preferred first, then narrowest),
widened to a hint that satisfies the request when it does not, and takes the memory from
the mask's nodes in order; regular init containers' blocks are reused by later
containers on the same mask. Removal gives memory back node by node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

from nodeagent.cm.memorymanager.model import MEMORY, Block, MachineState, MemoryTable, NodeState
from nodeagent.errors import ConfigError, Exhausted
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.hints import TopologyHint
from nodeagent.pods.resources import has_pod_level_resources, is_guaranteed
from nodeagent.util.quantity import format_bytes

NONE = "None"
STATIC = "Static"
POLICIES = (NONE, STATIC)

# pod-local reuse: mask -> memory type -> bytes an app container may take from init containers
Reusable = dict[int, dict[str, int]]


def is_memory_type(resource: str) -> bool:
    return resource == MEMORY or resource.startswith("hugepages-")


def bits(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(mask.bit_length()) if mask >> i & 1)


def mask_of(nodes: Iterable[int]) -> int:
    out = 0
    for n in nodes:
        out |= 1 << n
    return out


def masks(numa_ids: Sequence[int]) -> list[int]:
    """bitmask.IterateBitMasks: every non-empty set of nodes, smaller sets first."""
    ids = sorted(numa_ids)
    return [mask_of(c) for k in range(1, len(ids) + 1) for c in combinations(ids, k)]


def machine_state(totals: Mapping[int, Mapping[str, int]],
                  reserved: Mapping[int, Mapping[str, int]]) -> MachineState:
    """The initial machine state: allocatable = total - systemReserved, all free."""
    out: MachineState = {}
    for node, types in sorted(totals.items()):
        table: dict[str, MemoryTable] = {}
        for name, total in types.items():
            system = reserved.get(node, {}).get(name, 0)
            allocatable = max(0, total - system)
            table[name] = MemoryTable(total, system, allocatable, 0, allocatable)
        out[node] = NodeState(memory_map=table, cells=(node,))
    return out


def _quantity_text(value: int) -> str:
    return format_bytes(value) if value else "0"


def validate_reserved(numa_ids: Iterable[int], node_reservation: Mapping[str, int],
                      reserved_memory: Mapping[int, Mapping[str, int]]) -> None:
    """validateReservedMemory: per memory type, sum(reservedMemory) == kube+system reserved + hard eviction."""
    ids = set(numa_ids)
    totals: dict[str, int] = {}
    for node, limits in sorted(reserved_memory.items()):
        if node not in ids:
            raise ConfigError(
                f"the reserved memory configuration references a NUMA node {node} that does not exist on this machine")
        for name, value in limits.items():
            totals[name] = totals.get(name, 0) + value
    kinds = set(totals) | {r for r in node_reservation if is_memory_type(r)}
    for name in sorted(kinds):
        want, have = node_reservation.get(name, 0), totals.get(name, 0)
        if want != have:
            raise ConfigError(
                f'the total amount "{_quantity_text(have)}" of type "{name}" is not equal to the value '
                f'"{_quantity_text(want)}" determined by Node Allocatable feature')


def check_static(reserved_memory: Mapping[int, Mapping[str, int]]) -> None:
    """NewPolicyStatic: some memory must be reserved for the system."""
    if sum(limits.get(MEMORY, 0) for limits in reserved_memory.values()) <= 0:
        raise ConfigError("[memorymanager] you should specify the system reserved memory")


def requested(pod: Pod, container: Container) -> dict[str, int]:
    """getRequestedResources: memory and hugepages of a Guaranteed pod's container (limits = requests).

    A pod with pod-level resources (spec.resources) gets no blocks: "Allocation skipped, pod is
    using pod-level resources which are not supported by the static Memory manager policy"
    (PodLevelResources on, PodLevelResourceManagers off, as upstream's defaults).
    """
    if not is_guaranteed(pod) or has_pod_level_resources(pod):
        return {}
    values = {**container.limits, **container.requests}
    return {n: v for n, v in values.items() if is_memory_type(n) and v > 0}


def _usable(state: MachineState, mask: int) -> bool:
    nodes = bits(mask)
    single = len(nodes) == 1
    for n in nodes:
        node = state[n]
        if single and len(node.cells) > 1:
            return False  # a node allocated in a group cannot take a single-node block
        if not single and node.number_of_assignments > 0 and (len(node.cells) == 1 or set(node.cells) != set(nodes)):
            return False  # used alone, or with another group
    return True


def calculate_hints(state: MachineState, reusable: Reusable, req: Mapping[str, int]) -> dict[str, list[TopologyHint]]:
    """calculateHints: every mask that holds the request now; preferred = minimal size among those that could."""
    found: list[int] = []
    min_size = len(state) + 1
    for mask in masks(list(state)):
        if not _usable(state, mask):
            continue
        nodes = bits(mask)
        if any(sum(state[n].memory_map[r].allocatable if r in state[n].memory_map else 0 for n in nodes) < size
               for r, size in req.items()):
            continue
        min_size = min(min_size, len(nodes))
        if any(sum(state[n].memory_map[r].free if r in state[n].memory_map else 0 for n in nodes)
               + reusable.get(mask, {}).get(r, 0) < size for r, size in req.items()):
            continue
        found.append(mask)
    return {r: [TopologyHint(m, len(bits(m)) == min_size) for m in found] for r in req}


def best_hint(hints: Sequence[TopologyHint]) -> TopologyHint | None:
    """findBestHint: preferred over not, then the narrowest (fewest nodes, then lowest ids)."""
    best: TopologyHint | None = None
    for h in hints:
        if best is None or (h.preferred and not best.preferred) or (
                h.preferred == best.preferred and _narrower(h.numa_affinity or 0, best.numa_affinity or 0)):
            best = h
    return best


def _narrower(a: int, b: int) -> bool:
    """BitMask.IsNarrowerThan: fewer bits, or as many and a lower value."""
    ca, cb = bin(a).count("1"), bin(b).count("1")
    return ca < cb or (ca == cb and a < b)


def _satisfies(state: MachineState, mask: int, req: Mapping[str, int]) -> bool:
    return all(sum(state[n].memory_map[r].free if r in state[n].memory_map else 0 for n in bits(mask)) >= size
               for r, size in req.items())


def allocate(state: MachineState, reusable: Reusable, pod: Pod, container: Container,
             affinity: TopologyHint | None, pod_blocks: dict[str, tuple[Block, ...]]) -> tuple[Block, ...]:
    """Allocate the container's blocks in `state` (mutated); raise Exhausted with upstream's text.

    `pod_blocks` holds the pod's containers allocated so far (container -> blocks); the blocks
    of its regular init containers shrink by what this container reuses
    (updateInitContainersMemoryBlocks), so the blocks always add up to what is reserved.
    """
    req = requested(pod, container)
    if not req:
        return ()
    hint = affinity if affinity is not None and affinity.numa_affinity is not None else None
    if hint is None:
        default = best_hint(calculate_hints(state, reusable, req).get(MEMORY) or
                            next(iter(calculate_hints(state, reusable, req).values())))
        if default is None:
            raise Exhausted("[memorymanager] failed to get the default NUMA affinity, "
                            "no NUMA nodes with enough memory is available")
        if not default.preferred and affinity is not None and affinity.preferred:
            raise Exhausted("[memorymanager] failed to find the default preferred hint")
        hint = default
    mask = hint.numa_affinity or 0
    if not _satisfies(state, mask, req) and not _reusable_covers(reusable, mask, req):
        hints = calculate_hints(state, reusable, req)
        wider = [h for h in hints.get(MEMORY) or next(iter(hints.values())) if (h.numa_affinity or 0) & mask == mask]
        extended = best_hint(wider)
        if extended is None:
            raise Exhausted("failed to find NUMA nodes to extend the current topology hint")
        if not extended.preferred and hint.preferred:
            raise Exhausted("[memorymanager] failed to find the extended preferred hint")
        mask = extended.numa_affinity or 0
    nodes = bits(mask)
    blocks: list[Block] = []
    for name, size in sorted(req.items()):
        blocks.append(Block(nodes, name, size))
        reuse = reusable.get(mask, {}).get(name, 0)
        _take(state, nodes, name, max(0, size - reuse))
        for n in nodes:
            state[n].number_of_assignments += 1
            state[n].cells = nodes
    _update_reusable(reusable, pod, container, blocks)
    _shrink_init_blocks(pod, container, blocks, pod_blocks)
    return tuple(blocks)


def _shrink_init_blocks(pod: Pod, container: Container, blocks: Sequence[Block],
                        pod_blocks: dict[str, tuple[Block, ...]]) -> None:
    for block in blocks:
        left = block.size
        for init in pod.init_containers:
            if init.name == container.name or left == 0:
                break
            if init.is_sidecar or init.name not in pod_blocks:
                continue
            shrunk: list[Block] = []
            for b in pod_blocks[init.name]:
                if b.size and b.type == block.type and b.numa_affinity == block.numa_affinity and left:
                    cut = min(b.size, left)
                    left -= cut
                    b = Block(b.numa_affinity, b.type, b.size - cut)
                shrunk.append(b)
            pod_blocks[init.name] = tuple(shrunk)


def _reusable_covers(reusable: Reusable, mask: int, req: Mapping[str, int]) -> bool:
    return bool(reusable.get(mask)) and all(reusable[mask].get(r, 0) >= size for r, size in req.items())


def _take(state: MachineState, nodes: Sequence[int], name: str, size: int) -> None:
    left = size
    for n in nodes:
        table = state[n].memory_map.get(name)
        if table is None or left == 0:
            continue
        got = min(table.free, left)
        table.free -= got
        table.reserved += got
        left -= got


def _is_regular_init(pod: Pod, container: Container) -> bool:
    return any(c.name == container.name for c in pod.init_containers) and not container.is_sidecar


def _update_reusable(reusable: Reusable, pod: Pod, container: Container, blocks: Sequence[Block]) -> None:
    """updatePodReusableMemory: init containers leave their largest block; app containers use it up."""
    for b in blocks:
        per_type = reusable.setdefault(mask_of(b.numa_affinity), {})
        if _is_regular_init(pod, container):
            per_type[b.type] = max(per_type.get(b.type, 0), b.size)
        elif per_type.get(b.type, 0):
            per_type[b.type] = max(0, per_type[b.type] - b.size)


def remove(state: MachineState, blocks: Iterable[Block]) -> None:
    """RemoveContainer: release each block node by node, and ungroup nodes left unused."""
    for b in blocks:
        released = b.size
        for n in b.numa_affinity:
            node = state.get(n)
            if node is None:
                continue
            node.number_of_assignments = max(0, node.number_of_assignments - 1)
            if node.number_of_assignments == 0:
                node.cells = (n,)
            table = node.memory_map.get(b.type)
            if table is None or released == 0 or table.reserved == 0:
                continue
            back = min(table.reserved, released)
            table.reserved -= back
            table.free += back
            released -= back
