"""The Deployment controller's helpers (upstream pkg/controller/deployment/util/deployment_util.go):
replica counts, maxSurge/maxUnavailable fenceposts, revisions, template equality ignoring the
pod-template-hash label, ReplicaSet names and the Deployment's conditions. Pure: no I/O.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from nodeagent.controlplane.workloads import podhash
from nodeagent.controlplane.workloads import pods as P
from nodeagent.kubeletstate.gohash import spew
from nodeagent.store.meta import rfc3339

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
SKIP_COPY = frozenset({"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY, DESIRED,
                       MAX_REPLICAS, "deprecated.deployment.rollback.to"})
MAX_REV_HISTORY_CHARS = 2000
MAX_INT32 = 2**31 - 1
PROGRESSING, AVAILABLE, REPLICA_FAILURE = "Progressing", "Available", "ReplicaFailure"


def replicas(obj: P.Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _status_int(obj: P.Obj, key: str) -> int:
    return int((obj.get("status") or {}).get(key) or 0)


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, int):
        return value
    text = str(value)
    pct = int(text.rstrip("%"))
    exact = pct * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def fenceposts(d: P.Obj) -> tuple[int, int]:
    """ResolveFenceposts(maxSurge, maxUnavailable, replicas): both 0 turns maxUnavailable 1."""
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    want = replicas(d)
    surge = scaled_value(ru.get("maxSurge", "25%"), want, True)
    unavailable = scaled_value(ru.get("maxUnavailable", "25%"), want, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def rolling(d: P.Obj) -> bool:
    return (((d.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate") == "RollingUpdate"


def max_surge(d: P.Obj) -> int:
    return fenceposts(d)[0] if rolling(d) else 0


def max_unavailable(d: P.Obj) -> int:
    if not rolling(d) or replicas(d) == 0:
        return 0
    return min(fenceposts(d)[1], replicas(d))


def template_key(template: Mapping[str, Any] | None) -> str:
    """The template as the Go value it is, without the pod-template-hash label (EqualIgnoreHash
    compares with reflect.DeepEqual): nil and empty lists alike, as the informer decodes them."""
    t = copy.deepcopy(dict(template or {}))
    lbls = (t.get("metadata") or {}).get("labels")
    if isinstance(lbls, dict):
        lbls.pop(HASH_LABEL, None)
    try:
        return spew(podhash.to_go(podhash.ROOT, t))
    except podhash.NotRepresentable:
        return repr(t)


def revision(rs: P.Obj) -> int:
    try:
        return int(((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _created_key(rs: P.Obj) -> tuple[float, str]:
    return P.parse_time((rs.get("metadata") or {}).get("creationTimestamp")) or 0.0, P.name(rs)


def has_progress_deadline(d: P.Obj) -> bool:
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return value is not None and int(value) != MAX_INT32


def new_condition(ctype: str, status: str, reason: str, message: str, now: float) -> dict[str, Any]:
    stamp = rfc3339(now)
    return {"type": ctype, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """util.SetDeploymentCondition: no change for the same status and reason; the transition
    time kept while the status stays."""
    conds = status.get("conditions") or []
    cur = next((c for c in conds if c.get("type") == cond["type"]), None)
    if cur is not None and cur.get("status") == cond["status"] and cur.get("reason") == cond["reason"]:
        return
    if cur is not None and cur.get("status") == cond["status"]:
        cond = {**cond, "lastTransitionTime": cur.get("lastTransitionTime")}
    status["conditions"] = [c for c in conds if c.get("type") != cond["type"]] + [cond]


def remove_condition(status: dict[str, Any], ctype: str) -> None:
    conds = [c for c in status.get("conditions") or [] if c.get("type") != ctype]
    if conds:
        status["conditions"] = conds
    else:
        status.pop("conditions", None)


def get_condition(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == ctype), None)


def replica_set_name(deployment: str, hash_: str) -> str:
    """generateReplicaSetName: the Deployment's name cut to leave room for `-<hash>` in 253."""
    room = 253 - 1 - len(hash_)
    return f"{deployment[:room]}-{hash_}"
