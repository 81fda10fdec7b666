"""The topology manager's port: NUMA hints and the providers that give them.

The kubelet's topologymanager.TopologyHint and HintProvider. The CPU manager, the memory
manager (both in nodeagent.cm) and the device manager (nodeagent.devices) are hint
providers; the topology manager (nodeagent.cm.topologymanager) merges their hints under
its policy and then asks each provider, in the kubelet's order (CPU, memory, devices), to
allocate for the container within the merged affinity. The subsystems may not import one
another (import contracts), so they meet here, as they do at pods/ports.py.

A NUMA affinity is a bitmask (bit i set = NUMA node i), as the kubelet's bitmask.BitMask;
`None` means the provider has no preference (the kubelet's nil affinity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from nodeagent.objects.pod import Container, Pod


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
