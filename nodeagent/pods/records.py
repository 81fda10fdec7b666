"""Pods and pod statuses <-> JSON documents for the state database.

The pod manager keeps its durable state as these documents (our model, never protobuf or
Kubernetes JSON). `version` guards the shape: a record of an unknown version is refused
so a newer layout is never misread. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import (
    ClaimRef,
    Condition,
    Container,
    ContainerStatus,
    Pod,
    PodResourceClaim,
    PodStatus,
    ResourceHealth,
    ResourceStatus,
)

VERSION = 2
"""Version 2 leaves out the times and exit codes that are unset (startTime, startedAt, exitCode,
finishedAt, finishAt) instead of
writing null: a document without null is stored without the exactness check of
state.db.encode (a round trip of the whole record on every admission). Version 1 records
(with the nulls) read the same."""
READABLE = (1, VERSION)


def _container_to(c: Container) -> dict[str, Any]:
    return {
        "name": c.name,
        "image": c.image,
        "requests": dict(c.requests),
        "limits": dict(c.limits),
        "restartPolicy": c.restart_policy,
        "claims": [[r.name, r.request] for r in c.claims],
    }


def _container_from(d: dict[str, Any]) -> Container:
    return Container(
        name=d["name"],
        image=d["image"],
        requests=dict(d["requests"]),
        limits=dict(d["limits"]),
        restart_policy=d["restartPolicy"],
        claims=tuple(ClaimRef(n, r) for n, r in d["claims"]),
    )


def pod_to_record(pod: Pod) -> dict[str, Any]:
    return {
        "uid": pod.uid,
        "name": pod.name,
        "namespace": pod.namespace,
        "labels": dict(pod.labels),
        "annotations": dict(pod.annotations),
        "containers": [_container_to(c) for c in pod.containers],
        "initContainers": [_container_to(c) for c in pod.init_containers],
        "priority": pod.priority,
        "priorityClassName": pod.priority_class_name,
        "nodeName": pod.node_name,
        "restartPolicy": pod.restart_policy,
        "resourceClaims": [
            [c.name, c.resource_claim_name, c.resource_claim_template_name] for c in pod.resource_claims
        ],
        "podRequests": dict(pod.pod_requests),
        "podLimits": dict(pod.pod_limits),
        "source": pod.source,
        "creationTimestamp": pod.creation_timestamp,
        "manifest": dict(pod.manifest),
    }


def pod_from_record(d: dict[str, Any]) -> Pod:
    return Pod(
        uid=d["uid"],
        name=d["name"],
        namespace=d["namespace"],
        labels=dict(d["labels"]),
        annotations=dict(d["annotations"]),
        containers=tuple(_container_from(c) for c in d["containers"]),
        init_containers=tuple(_container_from(c) for c in d["initContainers"]),
        priority=d["priority"],
        priority_class_name=d["priorityClassName"],
        node_name=d["nodeName"],
        restart_policy=d["restartPolicy"],
        resource_claims=tuple(PodResourceClaim(*c) for c in d["resourceClaims"]),
        pod_requests=dict(d["podRequests"]),
        pod_limits=dict(d["podLimits"]),
        source=d["source"],
        creation_timestamp=d["creationTimestamp"],
        manifest=dict(d["manifest"]),
    )


def _cs_to(cs: ContainerStatus) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": cs.name,
        "state": cs.state,
        "reason": cs.reason,
        "allocatedResourcesStatus": _rs_to(cs.allocated_resources_status),
    }
    if cs.started_at is not None:
        d["startedAt"] = cs.started_at
    if cs.exit_code is not None:
        d["exitCode"] = cs.exit_code
    if cs.finished_at is not None:
        d["finishedAt"] = cs.finished_at
    if cs.message:
        d["message"] = cs.message
    return d


def _cs_from(d: dict[str, Any]) -> ContainerStatus:
    return ContainerStatus(
        name=d["name"],
        state=d["state"],
        reason=d["reason"],
        exit_code=d.get("exitCode"),  # absent (version 2) or null (version 1) while unset
        started_at=d.get("startedAt"),
        finished_at=d.get("finishedAt"),
        allocated_resources_status=_rs_from(d["allocatedResourcesStatus"]),
        message=d.get("message", ""),  # absent: none, and in records written before it was kept
    )


def _rh_to(h: ResourceHealth) -> list[str]:
    return [h.resource_id, h.health, h.message] if h.message else [h.resource_id, h.health]


def _rs_to(statuses: tuple[ResourceStatus, ...]) -> list[Any]:
    """[[name, [[id, health(, message)], ...]], ...]: records written before messages have pairs."""
    return [[rs.name, [_rh_to(h) for h in rs.resources]] for rs in statuses]


def _rs_from(d: list[Any]) -> tuple[ResourceStatus, ...]:
    return tuple(ResourceStatus(name, tuple(ResourceHealth(*h) for h in res)) for name, res in d)


def status_to_record(s: PodStatus) -> dict[str, Any]:
    d: dict[str, Any] = {
        "phase": s.phase,
        "reason": s.reason,
        "message": s.message,
        "qosClass": s.qos_class,
        "conditions": [
            [c.type, c.status, c.reason, c.message, c.last_transition_time] for c in s.conditions
        ],
        "containerStatuses": [_cs_to(cs) for cs in s.container_statuses],
        "initContainerStatuses": [_cs_to(cs) for cs in s.init_container_statuses],
        "allocatedResourcesStatus": _rs_to(s.allocated_resources_status),
    }
    if s.start_time is not None:
        d["startTime"] = s.start_time
    return d


def status_from_record(d: dict[str, Any]) -> PodStatus:
    return PodStatus(
        phase=d["phase"],
        reason=d["reason"],
        message=d["message"],
        qos_class=d["qosClass"],
        start_time=d.get("startTime"),
        conditions=tuple(Condition(*c) for c in d["conditions"]),
        container_statuses=tuple(_cs_from(c) for c in d["containerStatuses"]),
        init_container_statuses=tuple(_cs_from(c) for c in d["initContainerStatuses"]),
        allocated_resources_status=_rs_from(d.get("allocatedResourcesStatus") or []),  # absent in older records
    )


def entry_to_record(pod: Pod, status: PodStatus, *, holds_resources: bool, finish_at: float | None
                    ) -> dict[str, Any]:
    d: dict[str, Any] = {
        "version": VERSION,
        "pod": pod_to_record(pod),
        "status": status_to_record(status),
        "holdsResources": holds_resources,
    }
    if finish_at is not None:  # read back with doc.get("finishAt")
        d["finishAt"] = finish_at
    return d


def check_version(d: dict[str, Any], key: str) -> None:
    if d.get("version") not in READABLE:
        raise NodeAgentError(f"pod record {key}: unsupported version {d.get('version')!r}")
