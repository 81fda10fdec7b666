"""The topology manager's port: NUMA hints and the providers that give them.

The kubelet's topologymanager.TopologyHint and HintProvider. The CPU manager, the memory
manager (both in nodeagent.cm) and the device manager (nodeagent.devices) are hint
providers; the topology manager (nodeagent.cm.topologymanager) merges their hints under
its policy and then asks each provider, in the kubelet's order (CPU, memory, devices), to
allocate for the container within the merged affinity. The subsystems may not import one
another (import contracts), so they meet here, as they do at pods/ports.py.

Why here and not under cm/topologymanager/ (where the kubelet keeps these types): the device
manager is a hint provider, and nodeagent.devices may not import nodeagent.cm (the independence
contract of cm, devices and podresources, and the node stack's layers, where cm, devices and dra
are siblings). These types are the port between them, so they sit in the layer below both, with
the other ports; the topology manager's own code (policy, merge, admission) is in
cm/topologymanager/.

A NUMA affinity is a bitmask (bit i set = NUMA node i), as the kubelet's bitmask.BitMask;
`None` means the provider has no preference (the kubelet's nil affinity).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from nodeagent.objects.pod.model import Container, Pod


@dataclass(frozen=True)
class TopologyHint:
    """One way a resource could be placed: the NUMA nodes it would use, and whether that
    placement is as narrow as the resource allows (the kubelet's Preferred)."""

    numa_affinity: int | None  # bitmask of NUMA node ids; None: any
    preferred: bool


# resource name -> its hints. The kubelet's conventions: a provider that does not care
# about the container returns an empty mapping (or None for the resource: "any"); an
# empty hint list for a resource means it cannot be satisfied at all.
Hints = Mapping[str, Sequence[TopologyHint] | None]


class AdmissionFailure(Exception):
    """A provider's refusal at allocate time: the kubelet's admission error with its
    reason (UnexpectedAdmissionError, SMTAlignmentError, TopologyAffinityError, ...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class HintProvider(Protocol):
    """A resource manager that takes part in topology alignment."""

    def get_topology_hints(self, pod: Pod, container: Container) -> Hints:
        """Hints for one container (container scope)."""
        ...

    def get_pod_topology_hints(self, pod: Pod) -> Hints:
        """Hints for the whole pod (pod scope)."""
        ...

    async def allocate(self, pod: Pod, container: Container, affinity: TopologyHint) -> None:
        """Allocate for `container` within `affinity`, durably before returning; raise
        AdmissionFailure to refuse (the topology manager then calls `remove` on every
        provider, so nothing of the pod stays held)."""
        ...

    async def remove(self, pod: Pod) -> None:
        """Release whatever `pod` holds (rollback after a refusal, or pod removal)."""
        ...


T = TypeVar("T")


class HintMemo(Generic[T]):
    """Answers of a pure hint computation by its inputs (the key), for one manager.

    Admission asks the same questions pod after pod (the same request against free counts that
    only matter up to the request), so hint generation and the topology manager's merge answer
    from here; the answers must be immutable. Bounded: emptied when `limit` keys are held.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._answers: dict[Hashable, T] = {}
        self._limit = limit

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        try:
            return self._answers[key]
        except KeyError:
            pass
        value = compute()
        if len(self._answers) >= self._limit:
            self._answers.clear()
        self._answers[key] = value
        return value


def hints_key(providers: Sequence[Hints]) -> tuple[Hashable, ...]:
    """The providers' hints as a memo key, in their order (the merge's tie-breaks follow it)."""
    return tuple(
        tuple((resource, None if hints is None else tuple(hints)) for resource, hints in p.items())
        for p in providers
    )


# ---------------------------------------------------------------- bitmask helpers
# The kubelet's topologymanager/bitmask on a plain int: bit i set = NUMA node i.


def mask_of(nodes: Iterable[int]) -> int:
    """The bitmask with the given NUMA node ids set."""
    mask = 0
    for n in nodes:
        mask |= 1 << n
    return mask


def mask_bits(mask: int) -> tuple[int, ...]:
    """The NUMA node ids set in `mask`, ascending (GetBits)."""
    out: list[int] = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return tuple(out)


def mask_count(mask: int) -> int:
    return mask.bit_count()


def mask_is_less_than(a: int, b: int) -> bool:
    """IsLessThan: `a` has more lower-numbered bits set (its bits compare lower, lowest first)."""
    return mask_bits(a) < mask_bits(b)


def mask_is_narrower_than(a: int, b: int) -> bool:
    """IsNarrowerThan: fewer bits set; with as many, the one with lower-numbered bits."""
    if a.bit_count() == b.bit_count():
        return mask_is_less_than(a, b)
    return a.bit_count() < b.bit_count()


def iterate_masks(nodes: Sequence[int]) -> Iterator[int]:
    """Every non-empty combination of `nodes`, by size then in combination order (IterateBitMasks)."""
    for size in range(1, len(nodes) + 1):
        for combo in itertools.combinations(nodes, size):
            yield mask_of(combo)


def format_mask(mask: int | None) -> str:
    """The kubelet's rendering of a hint's affinity: "01" style bits, node 0 rightmost."""
    if mask is None:
        return "<nil>"
    return format(mask, "b").zfill(2)
