"""Which cluster events may make an unschedulable pod schedulable: kube-scheduler's queueing hints,
as far as the embedded scheduler's event sources tell events apart. Pure.

Upstream (pkg/scheduler/backend/queue, v1.37.2) keeps a pod that failed as unschedulable with the
plugins that rejected it, and moves it back only on a cluster event one of those plugins registered
(EventsToRegister) and whose QueueingHint says it may help; a pod update that changes none of its
scheduling properties (a status write, the scheduler's own PodScheduled=False among them) moves
nothing. Here the rejecting plugin is read from the nodes' reasons (the same texts the FitError
message counts) and each maps to the event classes its plugin registers:

- NodeAffinity / NodeName: a Node added or changed (`NODE`);
- NodeUnschedulable, TaintToleration: `NODE`, and the pod's tolerations changing;
- NodeResourcesFit: `NODE`, an assigned pod deleted or ended, the pod's requests changing;
- NodePorts: `NODE`, an assigned pod deleted or ended;
- PodTopologySpread, InterPodAffinity: an assigned pod added (bound), relabelled, deleted or ended,
  `NODE`, the pod's own labels changing (PodTopologySpread: its tolerations too);
- DynamicResources: `NODE`, ResourceClaim, ResourceSlice, DeviceClass and DeviceTaintRule changes,
  and the pod's generated claims (status.resourceClaimStatuses) changing.

Intended differences: a class is coarser than upstream's hint functions (any relevant Node change
counts, not only one that now matches the pod's selector; the scheduler's cache already drops Node
updates that change nothing it looks at; any pod bound, relabelled or ending counts for inter-pod
affinity and spread, not only one their selectors match), and a reason nothing here maps (`None`) keeps the pod
moving on any event, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.allocator.allocator import DOES_NOT_FIT
from nodeagent.controlplane.scheduler import interpod, placement
from nodeagent.controlplane.scheduler.nodepass import CLAIM_NOT_AVAILABLE

Events = frozenset[str]

NODE = "Node"
ASSIGNED_POD_DELETE = "AssignedPod/Delete"
ASSIGNED_POD_ADD = "AssignedPod/Add"
ASSIGNED_POD_LABEL = "AssignedPod/UpdatePodLabel"
CLAIM = "ResourceClaim"
SLICE = "ResourceSlice"
DEVICE_CLASS = "DeviceClass"
TAINT_RULE = "DeviceTaintRule"
POD_TOLERATIONS = "Pod/UpdatePodToleration"
POD_REQUESTS = "Pod/UpdatePodRequests"
POD_CLAIMS = "Pod/UpdatePodGeneratedResourceClaim"
POD_LABELS = "Pod/UpdatePodLabel"

CANNOT_ALLOCATE = "cannot allocate all claims"  # DynamicResources Filter: the allocator found no devices
NODE_NOT_FOUND = "node not found"

DYNAMIC_RESOURCES: Events = frozenset({NODE, CLAIM, SLICE, DEVICE_CLASS, TAINT_RULE, POD_CLAIMS})
_TAINTS: Events = frozenset({NODE, POD_TOLERATIONS})
_FIT: Events = frozenset({NODE, ASSIGNED_POD_DELETE, POD_REQUESTS})
_INTER_POD: Events = frozenset({NODE, ASSIGNED_POD_ADD, ASSIGNED_POD_LABEL, ASSIGNED_POD_DELETE, POD_LABELS})
_SPREAD: Events = _INTER_POD | {POD_TOLERATIONS}
_BY_REASON: dict[str, Events] = {
    placement.AFFINITY_MISMATCH: frozenset({NODE}),
    NODE_NOT_FOUND: frozenset({NODE}),
    placement.CORDONED: _TAINTS,
    placement.UNTOLERATED_TAINT: _TAINTS,
    placement.NO_FREE_PORTS: frozenset({NODE, ASSIGNED_POD_DELETE}),  # NodePorts: a pod holding one goes
    interpod.SPREAD: _SPREAD,
    interpod.SPREAD_LABEL: _SPREAD,
    interpod.AFFINITY: _INTER_POD,
    interpod.ANTI_AFFINITY: _INTER_POD,
    interpod.EXISTING_ANTI_AFFINITY: _INTER_POD,
    CANNOT_ALLOCATE: DYNAMIC_RESOURCES,
    CLAIM_NOT_AVAILABLE: DYNAMIC_RESOURCES,
    DOES_NOT_FIT: DYNAMIC_RESOURCES,
}


def for_reasons(reasons: Iterable[str]) -> Events | None:
    """The events that may help a pod the nodes rejected for `reasons` (each node's reason, its
    NodeResourcesFit parts joined by ", "); None when a reason maps to no plugin here, or there is
    none (no nodes: upstream's ErrNoNodesAvailable has no rejecting plugin either)."""
    out: set[str] = set()
    for reason in reasons:
        for part in reason.split(", "):
            if part.startswith("Insufficient ") or part == "Too many pods":
                out |= _FIT
            elif part in _BY_REASON:
                out |= _BY_REASON[part]
            else:
                return None
    return frozenset(out) or None


def pod_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Events:
    """PodSchedulingPropertiesChange for the pod itself: which of its scheduling properties an
    update changed (nothing for a status write other than its generated claims)."""
    out: set[str] = set()
    if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
        out.add(POD_LABELS)
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec.get("tolerations") != new_spec.get("tolerations"):
        out.add(POD_TOLERATIONS)
    if _requests(old_spec) != _requests(new_spec):
        out.add(POD_REQUESTS)
    if (old.get("status") or {}).get("resourceClaimStatuses") != (new.get("status") or {}).get("resourceClaimStatuses"):
        out.add(POD_CLAIMS)
    return frozenset(out)


def _requests(spec: Mapping[str, Any]) -> list[Any]:
    return [(c.get("resources") or {}).get("requests") for key in ("initContainers", "containers")
            for c in spec.get(key) or ()] + [(spec.get("resources") or {}).get("requests")]
