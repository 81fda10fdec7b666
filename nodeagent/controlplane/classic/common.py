"""Shared reading of the objects the classic flow touches: claims, pods, PodSchedulingContexts.

Both sides of the negotiation (scheduling.py for the scheduler, controller.py for the driver
controller) need the same small facts: which claims a pod uses and under which pod claim
name, whether a claim is allocated, deallocating, reserved, being deleted, usable on a node,
and the finalizer a controller puts on claims it allocated. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.controlplane.events import EventRecorder
from nodeagent.objects.common import node_selector_matches
from nodeagent.objects.resource.validation import NODE_LIST_MAX, V1ALPHA3

CLAIM = "ResourceClaim"
PSC = "PodSchedulingContext"
POD = "Pod"
NODE = "Node"
DEVICE_CLASS = "DeviceClass"
PSC_API_VERSION = V1ALPHA3
MAX_NODES = NODE_LIST_MAX
"""At most this many entries in potentialNodes and unsuitableNodes (the API's limit)."""


def finalizer(controller_name: str) -> str:
    """The finalizer a driver controller keeps on a claim while it is allocated."""
    return f"{controller_name}/deletion-protection"


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "default")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def controller_of(claim: Mapping[str, Any]) -> str:
    return str((claim.get("spec") or {}).get("controllerName") or "")


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("status") or {}


def allocation(claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    alloc = status(claim).get("allocation")
    return alloc if isinstance(alloc, Mapping) else None


def deallocation_requested(claim: Mapping[str, Any]) -> bool:
    return bool(status(claim).get("deallocationRequested"))


def reserved_for(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(status(claim).get("reservedFor") or ())


def reserved_uids(claim: Mapping[str, Any]) -> set[str]:
    return {str(r.get("uid") or "") for r in reserved_for(claim)}


def pod_ref(pod: Mapping[str, Any]) -> dict[str, str]:
    """A reservedFor entry for a pod (core group: no apiGroup)."""
    return {"resource": "pods", "name": name_of(pod), "uid": uid_of(pod)}


def pending(claim: Mapping[str, Any]) -> bool:
    """Not allocated, so its controller still has to allocate it."""
    return allocation(claim) is None


def usable_on(claim: Mapping[str, Any], node: str, labels: Mapping[str, str]) -> bool:
    """Whether an allocated claim's devices can be used on the node (allocation.nodeSelector)."""
    alloc = allocation(claim)
    if alloc is None:
        return False
    selector = alloc.get("nodeSelector")
    if not selector:
        return True
    return node_selector_matches(selector, node, labels)


def pod_claims(pod: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(pod claim name, ResourceClaim name) for each entry of pod.spec.resourceClaims.

    A claim from a template has its generated name in status.resourceClaimStatuses; it is
    None until the claim controller recorded it.
    """
    generated = {
        str(s.get("name") or ""): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out: list[tuple[str, str | None]] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        pod_name = str(entry.get("name") or "")
        direct = entry.get("resourceClaimName")
        if direct:
            out.append((pod_name, str(direct)))
        else:
            found = generated.get(pod_name)
            out.append((pod_name, str(found) if found else None))
    return out


def pod_claim_name(pod: Mapping[str, Any], claim_name: str) -> str:
    """The pod's name for one of its claims (status.resourceClaims[].name in the KEP); the
    claim's own name when the pod does not list it."""
    for pod_name, resolved in pod_claims(pod):
        if resolved == claim_name:
            return pod_name
    return claim_name


CONTROLLER_MANAGER = "nodeagent"
"""The field manager of a classic driver controller's Events. Upstream each driver's controller
(k8s.io/dynamic-resource-allocation/controller, 1.26-1.31) is a binary of its own posting them
through client-go's event sink, a create without fieldManager: kube-apiserver records the first
part of its User-Agent, the binary's name. Here the drivers' controllers run in the daemon, whose
binary is `nodeagent`."""

SCHEDULER_MANAGER = "kube-scheduler"
"""The field manager of the classic scheduling side's Events (kube-scheduler's DynamicResources plugin)."""


def controller_events(driver: str) -> EventRecorder:
    """The Events of the driver controller of `driver`, as its binary posts them."""
    return EventRecorder(f"{driver}-controller", manager=CONTROLLER_MANAGER)


def scheduler_events() -> EventRecorder:
    """The Events of classic DRA's scheduling side, as kube-scheduler posts them."""
    return EventRecorder("scheduler", manager=SCHEDULER_MANAGER)
