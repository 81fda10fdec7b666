"""Server-side printers of the resource.k8s.io kinds: DeviceClass, ResourceClaim,
ResourceClaimTemplate, ResourceSlice, PodSchedulingContext.

Why apart from the core printers: the DRA kinds are served in several versions, and the cells
read only fields every served version has at the same path (status.allocation,
status.reservedFor, spec.nodeName/driver/pool.name), so one printer serves v1, v1beta2 and
v1beta1 without converting. Columns follow k8s.io/kubernetes pkg/printers/internalversion.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.tables.common import (
    AGE_COLUMN,
    NAME_COLUMN,
    Cells,
    Printer,
    age,
    column,
    get,
    items,
    name_of,
    text,
)


def claim_state(claim: Mapping[str, Any]) -> str:
    """Upstream's resourceClaimState: "pending", "allocated", "allocated,reserved", "deleted",
    "deleted,allocated,reserved"."""
    deleted = bool(get(claim, "metadata", "deletionTimestamp"))
    states = ["deleted"] if deleted else []
    if get(claim, "status", "allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if items(claim, "status", "reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _slice_cells(obj: Mapping[str, Any], now: float) -> Cells:
    return [
        name_of(obj), text(obj, "spec", "nodeName"), text(obj, "spec", "driver"), text(obj, "spec", "pool", "name"),
        age(obj, now),
    ]


def _name_age(obj: Mapping[str, Any], now: float) -> Cells:
    return [name_of(obj), age(obj, now)]


_NAME_AGE = (NAME_COLUMN, AGE_COLUMN)

PRINTERS: dict[str, Printer] = {
    "deviceclass": Printer(_NAME_AGE, _name_age),
    "resourceclaim": Printer(
        (
            NAME_COLUMN,
            column("State", "A summary of the current state (allocated, pending, reserved, etc.)."),
            AGE_COLUMN,
        ),
        lambda o, now: [name_of(o), claim_state(o), age(o, now)],
    ),
    "resourceclaimtemplate": Printer(_NAME_AGE, _name_age),
    "resourceslice": Printer(
        (
            NAME_COLUMN,
            column("Node", "NodeName identifies the node which provides the resources in this pool. A field "
                   "selector can be used to list only ResourceSlice objects belonging to a certain node."),
            column("Driver", "Driver identifies the DRA driver providing the capacity information. A field "
                   "selector can be used to list only ResourceSlice objects with a certain driver name."),
            column("Pool", "Name is used to identify the pool. For node-local devices, this is often the node "
                   "name, but this is not required."),
            AGE_COLUMN,
        ),
        _slice_cells,
    ),
    "podschedulingcontext": Printer(
        (
            NAME_COLUMN,
            column("SelectedNode", "SelectedNode is the node for which allocation of ResourceClaims that are "
                   'referenced by the Pod and that use "WaitForFirstConsumer" allocation is to be attempted.'),
            AGE_COLUMN,
        ),
        lambda o, now: [name_of(o), text(o, "spec", "selectedNode"), age(o, now)],
    ),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
