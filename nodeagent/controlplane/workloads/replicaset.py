"""The ReplicaSet controller's decisions (upstream pkg/controller/replicaset): which pods to adopt,
release, create and delete, and the status to write.

Why pure: the same rules serve the embedded controller (controllers/replicaset.py, which reads
the store and writes what this returns) and the unit tests, which feed pods in any state.
Upstream keeps "expectations" because its informer cache lags its own writes; the embedded
store is read after every commit, so a sync always sees the pods the last one created. Pure:
no I/O; `now` in epoch seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.controlplane.workloads import pods as P
from nodeagent.store.meta import rfc3339

BURST_REPLICAS = 500
"""upstream's BurstReplicas: pods one sync creates or deletes at most."""
API_VERSION = "apps/v1"
KIND = "ReplicaSet"


@dataclass
class Plan:
    adopt: list[P.Obj] = field(default_factory=list)  # orphans to take (ownerReference added)
    release: list[P.Obj] = field(default_factory=list)  # owned pods the selector no longer matches
    create: list[dict[str, Any]] = field(default_factory=list)
    delete: list[P.Obj] = field(default_factory=list)
    status: dict[str, Any] | None = None  # None: unchanged
    recheck_at: float | None = None  # a ready pod becomes available then


def claim(owner: P.Obj, selector: Mapping[str, Any] | None, candidates: Sequence[P.Obj],
          ) -> tuple[list[P.Obj], list[P.Obj], list[P.Obj]]:
    """ControllerRefManager.ClaimObjects: (objects it controls and keeps, orphans to adopt, owned
    ones to release). An owner being deleted neither adopts nor releases."""
    owned, adopt, release = [], [], []
    owner_deleting = P.deleting(owner)
    for obj in candidates:
        ref = P.controller_ref(obj)
        matches = P.selector_matches(selector, P.labels(obj))
        if ref is not None:
            if ref.get("uid") != P.uid(owner):
                continue
            if matches or owner_deleting:
                owned.append(obj)
            elif not P.deleting(obj):
                release.append(obj)
            continue
        if owner_deleting or not matches or P.deleting(obj):
            continue
        adopt.append(obj)
        owned.append(obj)
    return owned, adopt, release


def desired(rs: P.Obj) -> int:
    value = (rs.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def plan(rs: P.Obj, namespace_pods: Sequence[P.Obj], related: Sequence[P.Obj], now: float,
         failure: str | None = None, kind: tuple[str, str] = (API_VERSION, KIND)) -> Plan:
    """One sync of `rs` over the pods of its namespace; `related`: the active pods of the
    ReplicaSets of the same owner (a Deployment's), which rank pods for deletion; `failure`:
    the error of the previous sync's pod writes (ReplicaFailure). `kind`: the owner's (apiVersion,
    kind) in the pods' ownerReferences; a ReplicationController comes as `replication_view` makes it."""
    spec = rs.get("spec") or {}
    out = Plan()
    owned, out.adopt, out.release = claim(rs, spec.get("selector"), namespace_pods)
    active = [p for p in owned if P.is_active(p)]
    terminating = [p for p in owned if P.is_terminating(p)]
    want = desired(rs)
    if not P.deleting(rs):
        diff = len(active) - want
        if diff < 0:
            template = spec.get("template") or {}
            ref = P.owner_reference(rs, *kind)
            out.create = [P.pod_from_template(template, rs, ref) for _ in range(min(-diff, BURST_REPLICAS))]
        elif diff > 0:
            diff = min(diff, BURST_REPLICAS)
            ranked = active if diff >= len(active) else P.deletion_order(active, related or active, now)
            out.delete = ranked[:diff]
    status = calculate_status(rs, active, terminating, now, failure)
    if status != (rs.get("status") or {}):
        out.status = status
    min_ready = int(spec.get("minReadySeconds") or 0)
    due = [t for p in active if (t := P.available_at(p, min_ready)) is not None and t > now]
    out.recheck_at = min(due) if due else None
    return out


def calculate_status(rs: P.Obj, active: Sequence[P.Obj], terminating: Sequence[P.Obj], now: float,
                     failure: str | None) -> dict[str, Any]:
    """calculateStatus, in the JSON the Go status marshals to (zero counters omitted but
    replicas; terminatingReplicas, a pointer, always present: DeploymentReplicaSetTerminatingReplicas
    is on by default since 1.35)."""
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds") or 0)
    fully = sum(1 for p in active if all(P.labels(p).get(k) == v for k, v in template_labels.items()))
    ready = sum(1 for p in active if P.is_ready(p))
    available = sum(1 for p in active if P.is_available(p, min_ready, now))
    old = rs.get("status") or {}
    conditions = [dict(c) for c in old.get("conditions") or ()]
    has_failure = any(c.get("type") == "ReplicaFailure" for c in conditions)
    if failure is not None and not has_failure:
        diff = len(active) - desired(rs)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append({"type": "ReplicaFailure", "status": "True", "lastTransitionTime": rfc3339(now),
                           "reason": reason, "message": failure})
    elif failure is None and has_failure:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    status: dict[str, Any] = {"replicas": len(active)}
    for key, value in (("fullyLabeledReplicas", fully), ("readyReplicas", ready), ("availableReplicas", available)):
        if value:
            status[key] = value
    status["terminatingReplicas"] = len(terminating)
    generation = int((rs.get("metadata") or {}).get("generation") or 0)
    if generation:
        status["observedGeneration"] = generation
    if conditions:
        status["conditions"] = conditions
    return status


RC_API_VERSION = "v1"
RC_KIND = "ReplicationController"


def replication_view(rc: P.Obj) -> dict[str, Any]:
    """A ReplicationController as the ReplicaSet its controller runs on (upstream's replication
    package converts each RC to a ReplicaSet and drives the ReplicaSet controller with it): its
    selector, a plain label map, as matchLabels (an empty one selects nothing here: the API server
    defaults it to the template's labels)."""
    spec = rc.get("spec") or {}
    selector = spec.get("selector")
    return {**rc, "spec": {**spec, "selector": {"matchLabels": dict(selector)} if selector else None}}


def replication_status(status: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ReplicaSet status as the RC's (v1 ReplicationControllerStatus has no terminatingReplicas)."""
    if status is None:
        return None
    return {k: v for k, v in status.items() if k != "terminatingReplicas"}
