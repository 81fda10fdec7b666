"""The contract between the scheduler and the classic DRA flow (KEP-3063).

The scheduler owns pods and binding; this package owns the PodSchedulingContext negotiation
for claims that name a control-plane controller. The scheduler calls `step` for a pod whose
classic claims are not yet usable, on every relevant store change, and binds the pod to
`decision.node` once `decision.ready`; it calls `forget` when the pod is bound or deleted.
Kept in its own module so the scheduler imports only this. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ClassicDecision:
    ready: bool
    """Every classic claim of the pod is allocated for `node` and reserved for the pod."""
    node: str | None
    """That node, when ready."""
    message: str
    """Why the pod waits (shown in its PodScheduled=False condition)."""


class ClassicScheduling(Protocol):
    def step(
        self, pod: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], feasible_nodes: Sequence[str]
    ) -> ClassicDecision:
        """One idempotent step of the scheduler's side of the negotiation.

        `claims` are the pod's claims that have spec.controllerName; `feasible_nodes` are the
        nodes where everything else fits, in the scheduler's order of preference.
        """
        ...

    def forget(self, pod: Mapping[str, Any]) -> None:
        """The pod was bound or deleted: delete its PodSchedulingContext."""
        ...
