"""The Pod model -> v1 Pod JSON: the manifest and status as the API server would show them.

Why a module of its own: output is the reverse direction of parsing and shares none of its
validation; the node sync, the admin API and the tests render pods and statuses through these
functions so every consumer sees the same Kubernetes shape (RFC 3339 times, container states,
allocatedResourcesStatus). Pure: no I/O.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.objects.pod.model import ContainerStatus, Pod, PodStatus, ResourceHealth, ResourceStatus

# What of a pod's status its node writes (the kubelet's status manager patch): these fields, and the
# condition types it owns (kubetypes.PodConditionsByKubelet, PodScheduled included: the kubelet writes
# it True for every pod it runs, keeping the scheduler's lastTransitionTime; DisruptionTarget is shared);
# the rest belong to the control plane. Shared by the node's status manager (nodesync) and the virtual
# nodes (controlplane/controllers/virtual_nodes.py).
NODE_CONDITIONS = frozenset(
    {"PodScheduled", "Initialized", "ContainersReady", "Ready", "PodReadyToStartContainers", "DisruptionTarget"}
)
SCHEDULED = "PodScheduled"
"""Kept as the API has it when the node's status has none: a pod the node rejected at admission (rejectPod's
status carries no condition). The kubelet's two-way patch of mergePodStatus's result may delete a scheduled
pod's PodScheduled there; not seen on a real kubelet (its tier's pods are bound by spec.nodeName), so the
scheduler's condition stays, as a strategic merge patch without the condition keeps it (nodeapi/remote.py)."""
DISRUPTION_TARGET = "DisruptionTarget"
KEPT_UNLESS_GIVEN = frozenset({SCHEDULED, DISRUPTION_TARGET})
"""Conditions the API's status keeps when the node's has none of the type: PodScheduled (above) and
DisruptionTarget, which the kubelet shares (kubetypes.PodConditionSharedByKubelet: mergePodStatus keeps the
old one, the eviction API's or the taint manager's, unless the kubelet sets its own)."""
NODE_STATUS_FIELDS = ("phase", "reason", "message", "qosClass", "startTime", "containerStatuses",
                      "initContainerStatuses", "hostIP", "hostIPs", "resources", "allocatedResources")


def merged_status(current: Mapping[str, Any], node_status: Mapping[str, Any],
                  node_owned: frozenset[str] = frozenset(NODE_STATUS_FIELDS),
                  node_conditions: frozenset[str] = NODE_CONDITIONS) -> dict[str, Any]:
    """What the status manager's patch makes of `current`: the node's fields and conditions laid over it."""
    out = {k: v for k, v in current.items() if k not in node_owned and k != "conditions"}
    out.update({k: v for k, v in node_status.items() if k != "conditions"})
    mine = [c for c in node_status.get("conditions") or [] if c.get("type") in node_conditions]
    given = {c.get("type") for c in mine}
    conditions = [c for c in current.get("conditions") or [] if c.get("type") not in node_conditions
                  or (c.get("type") in KEPT_UNLESS_GIVEN and c.get("type") not in given)]
    conditions += kept_transition_times(current.get("conditions") or (), mine)
    if conditions:
        out["conditions"] = conditions
    return out


def kept_transition_times(old: Sequence[Mapping[str, Any]], new: list[Any]) -> list[Any]:
    """`new` with each condition's lastTransitionTime taken from `old`'s condition of the same type
    when its status did not change (the status manager's updateLastTransitionTime, for every condition
    the kubelet owns): PodScheduled keeps the time the binding set, a container restart keeps
    Initialized's. The conditions changed are copies; `new` and `old` are left as they are."""
    if not old or not new:
        return new
    times = {c.get("type"): (c.get("status"), c.get("lastTransitionTime")) for c in old if isinstance(c, Mapping)}
    out = []
    for cond in new:
        was = times.get(cond.get("type")) if isinstance(cond, Mapping) else None
        if (was is not None and was[0] == cond.get("status") and was[1] is not None
                and was[1] != cond.get("lastTransitionTime")):
            cond = {**cond, "lastTransitionTime": was[1]}
        out.append(cond)
    return out


def rfc3339(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _container_status_json(cs: ContainerStatus, image: str, *, init: bool = False) -> dict[str, Any]:
    """One container status; `init`: an ordinary (not restartable) init container, which is ready
    once it exited 0 (prober_manager's UpdatePodStatus) where the others are ready while running."""
    state: dict[str, Any]
    if cs.state == "running":
        state = {"running": {"startedAt": rfc3339(cs.started_at)}}
    elif cs.state == "terminated":
        term: dict[str, Any] = {"exitCode": cs.exit_code if cs.exit_code is not None else 0}
        if cs.reason:
            term["reason"] = cs.reason
        if cs.started_at is not None:
            term["startedAt"] = rfc3339(cs.started_at)
        term["finishedAt"] = rfc3339(cs.finished_at)
        state = {"terminated": term}
    else:
        waiting: dict[str, Any] = {"reason": cs.reason} if cs.reason else {}
        if cs.message:
            waiting["message"] = cs.message
        state = {"waiting": waiting}
    out: dict[str, Any] = {
        "name": cs.name,
        "image": image,
        "imageID": "",
        "ready": (cs.state == "terminated" and cs.exit_code == 0) if init else cs.state == "running",
        "restartCount": 0,
        "started": cs.state == "running",
        "state": state,
    }
    if cs.allocated_resources_status:
        out["allocatedResourcesStatus"] = _resource_status_json(cs.allocated_resources_status)
    return out


def _resource_status_json(statuses: Sequence[ResourceStatus]) -> list[dict[str, Any]]:
    return [{"name": rs.name, "resources": [_resource_health_json(h) for h in rs.resources]} for rs in statuses]


def _resource_health_json(h: ResourceHealth) -> dict[str, Any]:
    out: dict[str, Any] = {"resourceID": h.resource_id, "health": h.health}
    if h.message:
        out["message"] = h.message
    return out


def status_to_json(pod: Pod, status: PodStatus) -> dict[str, Any]:
    images = {c.name: c.image for c in pod.all_containers()}
    out: dict[str, Any] = {"phase": status.phase}
    if status.reason:
        out["reason"] = status.reason
    if status.message:
        out["message"] = status.message
    if status.qos_class:
        out["qosClass"] = status.qos_class
    if status.start_time is not None:
        out["startTime"] = rfc3339(status.start_time)
    if status.conditions:
        out["conditions"] = []
        for cond in status.conditions:
            entry: dict[str, Any] = {"type": cond.type, "status": cond.status}
            entry["lastProbeTime"] = None
            entry["lastTransitionTime"] = rfc3339(cond.last_transition_time)
            if cond.reason:
                entry["reason"] = cond.reason
            if cond.message:
                entry["message"] = cond.message
            out["conditions"].append(entry)
    if status.init_container_statuses:
        ordinary = {c.name for c in pod.init_containers if not c.is_sidecar}
        out["initContainerStatuses"] = [
            _container_status_json(cs, images.get(cs.name, ""), init=cs.name in ordinary)
            for cs in status.init_container_statuses
        ]
    if status.container_statuses:
        out["containerStatuses"] = [
            _container_status_json(cs, images.get(cs.name, "")) for cs in status.container_statuses
        ]
    # status.allocated_resources_status (DRA claims no container references) is nodeagent's own:
    # the v1 PodStatus has no such field and the kubelet reports those claims nowhere.
    return out


def pod_to_manifest(pod: Pod, status: PodStatus | None = None) -> dict[str, Any]:
    """The pod as the API server would show it: the given spec, full metadata, and status."""
    doc: dict[str, Any] = copy.deepcopy(dict(pod.manifest)) if pod.manifest else {}
    doc["apiVersion"] = "v1"
    doc["kind"] = "Pod"
    md: dict[str, Any] = dict(doc.get("metadata") or {})
    md.update(name=pod.name, namespace=pod.namespace, uid=pod.uid)
    md["creationTimestamp"] = rfc3339(pod.creation_timestamp)
    if pod.labels:
        md["labels"] = dict(pod.labels)
    else:
        md.pop("labels", None)
    if pod.annotations:
        md["annotations"] = dict(pod.annotations)
    else:
        md.pop("annotations", None)
    doc["metadata"] = md
    spec: dict[str, Any] = dict(doc.get("spec") or {})
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    spec.setdefault("restartPolicy", pod.restart_policy)
    spec.setdefault("priority", pod.priority)
    doc["spec"] = spec
    if status is not None:
        doc["status"] = status_to_json(pod, status)
    return doc
