"""core/v1 Events written by the control plane (FailedScheduling, FailedResourceClaimCreation, ...).

One responsibility: record an event about an object inside the caller's store transaction,
aggregated as the API server's event recorder does: one Event per (object, reason), whose
count, message and lastTimestamp are updated on a repeat. Events are owned by the object
they describe, so the store's garbage collector removes them with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from nodeagent.store import Transaction
from nodeagent.store.meta import rfc3339

NORMAL = "Normal"
WARNING = "Warning"
_MAX_NAME = 253


def event_name(obj: Mapping[str, Any], reason: str) -> str:
    name = f"{obj['metadata']['name']}.{reason.lower()}"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = name[: _MAX_NAME - 11] + "." + digest
    return name


def record(
    tx: Transaction,
    obj: Mapping[str, Any],
    reason: str,
    message: str,
    *,
    now: float,
    component: str,
    type_: str = WARNING,
    action: str = "",
) -> None:
    """Create or bump the Event for (obj, reason) in `tx`; `action` is what the component did
    (events.k8s.io's action, e.g. the scheduler's "Binding"), left out when empty."""
    md = obj["metadata"]
    namespace = md.get("namespace") or "default"
    name = event_name(obj, reason)
    stamp = rfc3339(now)
    cur = tx.try_get("Event", namespace, name)
    if cur is not None:
        if cur.get("message") == message and cur.get("lastTimestamp") == stamp:
            return
        cur["count"] = int(cur.get("count") or 1) + 1
        cur["message"] = message
        cur["lastTimestamp"] = stamp
        cur["type"] = type_
        tx.update(cur)
        return
    involved = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": md["name"],
        "uid": md.get("uid", ""),
    }
    if md.get("namespace"):
        involved["namespace"] = md["namespace"]
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": component},
        "reportingComponent": component,
    }
    if action:
        event["action"] = action
    if md.get("uid"):
        event["metadata"]["ownerReferences"] = [
            {"apiVersion": involved["apiVersion"], "kind": involved["kind"], "name": md["name"], "uid": md["uid"]}
        ]
    tx.create(event, copy=False)
