"""Pods and pod statuses <-> JSON documents for the state database.

The pod manager keeps its durable state as these documents (our model, never protobuf or
Kubernetes JSON). `version` guards the shape: a record of an unknown version is refused
so a newer layout is never misread. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod import (
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

VERSION = 1


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
    return {
        "name": cs.name,
        "state": cs.state,
        "reason": cs.reason,
        "exitCode": cs.exit_code,
        "startedAt": cs.started_at,
        "finishedAt": cs.finished_at,
        "allocatedResourcesStatus": _rs_to(cs.allocated_resources_status),
    }


def _cs_from(d: dict[str, Any]) -> ContainerStatus:
    return ContainerStatus(
        name=d["name"],
        state=d["state"],
        reason=d["reason"],
        exit_code=d["exitCode"],
        started_at=d["startedAt"],
        finished_at=d["finishedAt"],
        allocated_resources_status=_rs_from(d["allocatedResourcesStatus"]),
    )


def _rh_to(h: ResourceHealth) -> list[str]:
    return [h.resource_id, h.health, h.message] if h.message else [h.resource_id, h.health]


def _rs_to(statuses: tuple[ResourceStatus, ...]) -> list[Any]:
    """[[name, [[id, health(, message)], ...]], ...]: records written before messages have pairs."""
    return [[rs.name, [_rh_to(h) for h in rs.resources]] for rs in statuses]


def _rs_from(d: list[Any]) -> tuple[ResourceStatus, ...]:
    return tuple(ResourceStatus(name, tuple(ResourceHealth(*h) for h in res)) for name, res in d)


def status_to_record(s: PodStatus) -> dict[str, Any]:
    return {
        "phase": s.phase,
        "reason": s.reason,
        "message": s.message,
        "qosClass": s.qos_class,
        "startTime": s.start_time,
        "conditions": [
            [c.type, c.status, c.reason, c.message, c.last_transition_time] for c in s.conditions
        ],
        "containerStatuses": [_cs_to(cs) for cs in s.container_statuses],
        "initContainerStatuses": [_cs_to(cs) for cs in s.init_container_statuses],
        "allocatedResourcesStatus": _rs_to(s.allocated_resources_status),
    }


def status_from_record(d: dict[str, Any]) -> PodStatus:
    return PodStatus(
        phase=d["phase"],
        reason=d["reason"],
        message=d["message"],
        qos_class=d["qosClass"],
        start_time=d["startTime"],
        conditions=tuple(Condition(*c) for c in d["conditions"]),
        container_statuses=tuple(_cs_from(c) for c in d["containerStatuses"]),
        init_container_statuses=tuple(_cs_from(c) for c in d["initContainerStatuses"]),
        allocated_resources_status=_rs_from(d.get("allocatedResourcesStatus") or []),  # absent in older records
    )


def entry_to_record(pod: Pod, status: PodStatus, *, holds_resources: bool, finish_at: float | None
                    ) -> dict[str, Any]:
    return {
        "version": VERSION,
        "pod": pod_to_record(pod),
        "status": status_to_record(status),
        "holdsResources": holds_resources,
        "finishAt": finish_at,
    }


def check_version(d: dict[str, Any], key: str) -> None:
    if d.get("version") != VERSION:
        raise NodeAgentError(f"pod record {key}: unsupported version {d.get('version')!r}")
