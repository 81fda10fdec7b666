"""Events about classic allocation, written into the object store for `describe` to show.

A failure is reported on each object involved (Pod, ResourceClaim, PodSchedulingContext) as
a core v1 Event. The same (object, reason, message) repeated bumps `count` and
lastTimestamp of one Event instead of creating more, like the kubelet's recorder, so a
controller retrying every few seconds does not flood the store. Events are owned by nothing
and kept until deleted (the store has no TTL); they are small and bounded by that dedup.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from nodeagent.clock import Clock
from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339

logger = logging.getLogger(__name__)

WARNING = "Warning"
NORMAL = "Normal"


class EventRecorder:
    def __init__(self, store: ObjectStore, clock: Clock, component: str) -> None:
        self._store = store
        self._clock = clock
        self.component = component

    def record(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record an event on `involved` (any stored object); never raises."""
        md = involved.get("metadata") or {}
        name = str(md.get("name") or "")
        namespace = str(md.get("namespace") or "default")
        kind = str(involved.get("kind") or "")
        digest = hashlib.sha1(
            f"{kind}/{namespace}/{name}/{md.get('uid')}/{reason}/{message}".encode(), usedforsecurity=False
        ).hexdigest()[:16]
        event_name = f"{name[:200].rstrip('-.')}.{digest}"
        now = rfc3339(self._clock.now())
        try:
            with self._store.transaction() as tx:
                cur = tx.try_get("Event", namespace, event_name)
                if cur is not None:
                    cur["count"] = int(cur.get("count") or 1) + 1
                    cur["lastTimestamp"] = now
                    tx.update(cur)
                    return
                tx.create(
                    {
                        "apiVersion": "v1",
                        "kind": "Event",
                        "metadata": {"name": event_name, "namespace": namespace},
                        "involvedObject": {
                            "apiVersion": involved.get("apiVersion", ""),
                            "kind": kind,
                            "name": name,
                            "namespace": namespace,
                            "uid": md.get("uid", ""),
                        },
                        "type": type_,
                        "reason": reason,
                        "message": message,
                        "count": 1,
                        "firstTimestamp": now,
                        "lastTimestamp": now,
                        "source": {"component": self.component},
                    }
                )
        except NodeAgentError as err:
            logger.warning("event not recorded kind=%s name=%s reason=%s err=%s", kind, name, reason, err)
