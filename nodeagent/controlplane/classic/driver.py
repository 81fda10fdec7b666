"""The plug-in interface of a classic DRA driver controller (KEP-3063's driver side).

controller.py runs the generic loop (watch PodSchedulingContexts and claims, write
unsuitableNodes, allocate for selectedNode, deallocate on request, keep the finalizer); a
`DriverController` supplies only the driver's decisions. A driver reads the cluster through
a `ClusterReader` given to it at construction, so its state (which device is allocated to
which claim) can be derived from claims' status and survives restarts. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from nodeagent.errors import NodeAgentError


class AllocationError(NodeAgentError):
    """The driver cannot allocate a claim for a node; `reason` is a short CamelCase word for events."""

    def __init__(self, message: str, reason: str = "AllocationFailed") -> None:
        super().__init__(message)
        self.reason = reason


class ClusterReader(Protocol):
    """What a driver may read: current claims, node labels, device classes (read-only objects)."""

    def claims(self) -> Iterable[Mapping[str, Any]]: ...

    def node_labels(self, name: str) -> Mapping[str, str]: ...

    def device_class(self, name: str) -> Mapping[str, Any] | None: ...


class DriverController(Protocol):
    """One driver's control-plane controller, as the generic loop calls it.

    Calls come from one asyncio task, one at a time; an allocation is written to the store
    before the next call, so a driver that derives its state from the claims sees it.
    """

    @property
    def name(self) -> str:
        """The controllerName this driver serves (spec.controllerName of its claims)."""
        ...

    def unsuitable_nodes(self, claim: Mapping[str, Any], nodes: Sequence[str]) -> set[str]:
        """The nodes among `nodes` for which the pending claim could not be allocated now."""
        ...

    def allocate(self, claim: Mapping[str, Any], node: str) -> dict[str, Any]:
        """status.allocation for the claim on the node (devices, config, nodeSelector);
        raises AllocationError with a reason. The loop adds `controller` and the timestamp."""
        ...

    def deallocate(self, claim: Mapping[str, Any]) -> None:
        """Release whatever the driver holds for the claim; the loop then clears status.allocation."""
        ...
