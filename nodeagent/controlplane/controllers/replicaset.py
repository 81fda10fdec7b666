"""The ReplicaSet controller (kube-controller-manager's `replicaset`): keeps each ReplicaSet's
count of pods and writes its status.

Why here: with no kube-controller-manager, `kubectl create deployment` would leave ReplicaSets
without pods. The decisions are workloads/replicaset.py's; this manager reads the store, writes
adoptions, pod creations (generateName `<replicaset>-`: the store appends five characters of
upstream's alphabet) and deletions, and the status, in one transaction per ReplicaSet, with
core/v1 events as upstream's recorder writes them (SuccessfulCreate, SuccessfulDelete,
FailedCreate); pod writes as podcontrol.py carries them out.
Switched off with controlPlane.controllers (`-replicaset`), the real controller can run instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.podcontrol import adopt_and_release, create_and_delete, write_status
from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, obj_key, owner_key
from nodeagent.controlplane.events import EventRecorder
from nodeagent.controlplane.workloads import pods as P
from nodeagent.controlplane.workloads import replicaset
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("ReplicaSet", "Pod")
RC_KINDS = ("ReplicationController", "Pod")


class ReplicaSetController(KeyedController):
    name = "replicaset-controller"
    kind = replicaset.KIND
    api_version = replicaset.API_VERSION
    component = "replicaset-controller"  # its recorder's source

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.events = EventRecorder(self.component)
        self._failures_text: dict[Key, str] = {}

    def view(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """The object as the ReplicaSet the decisions run on."""
        return obj

    def status(self, status: dict[str, Any] | None) -> dict[str, Any] | None:
        """The planned status as this kind writes it."""
        return status

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        if obj.get("kind") == self.kind:
            return [obj_key(obj)]
        key = owner_key(obj, self.kind)
        if key is not None:
            return [key]
        if event_type == "DELETED" or not P.is_active(obj):
            return []
        ns = P.namespace(obj)  # an orphan: the controllers that may adopt it
        return [obj_key(rs) for rs in self.store.scan(self.kind, ns)
                if P.selector_matches((self.view(rs).get("spec") or {}).get("selector"), P.labels(obj))]

    def sync(self, key: Key) -> float | None:
        ns, name = key
        stored = self.store.peek(self.kind, ns, name)
        if stored is None:
            self._failures_text.pop(key, None)
            return None
        rs = self.view(stored)
        pods = self.store.scan("Pod", ns)
        owner = P.controller_ref(rs)
        related: list[Mapping[str, Any]] = []
        if owner is not None:  # the pods of the owner's other ReplicaSets rank "doubled up" pods
            siblings = {P.uid(s) for s in self.store.scan(self.kind, ns)
                        if (P.controller_ref(s) or {}).get("uid") == owner.get("uid")}
            related = [p for p in pods if (P.controller_ref(p) or {}).get("uid") in siblings]
        now = self.clock.now()
        plan = replicaset.plan(rs, pods, related, now, self._failures_text.get(key), (self.api_version, self.kind))
        failure = self._apply(rs, plan)
        if failure != self._failures_text.get(key):
            if failure is None:
                self._failures_text.pop(key, None)
            else:
                self._failures_text[key] = failure
            return now  # the status's ReplicaFailure condition follows at once
        return plan.recheck_at

    def _apply(self, rs: Mapping[str, Any], plan: replicaset.Plan) -> str | None:
        now = self.clock.now()
        ref = P.owner_reference(rs, self.api_version, self.kind)
        with self.store.transaction(manager="kube-controller-manager") as tx:
            adopt_and_release(tx, rs, ref, plan.adopt, plan.release)
            failure = create_and_delete(tx, rs, plan.create, plan.delete, self.clock, self.events, now)
            status = self.status(plan.status)
            write_status(tx, self.kind, rs, None if status == rs.get("status") else status)
        return failure


class ReplicationManager(ReplicaSetController):
    """kube-controller-manager's `replicationcontroller` (pkg/controller/replication): the ReplicaSet
    controller run over ReplicationControllers, each seen as a ReplicaSet (replicaset.replication_view),
    its pods owned by `v1 ReplicationController`, its events from `replication-controller`."""

    name = "replicationcontroller-controller"
    kind = replicaset.RC_KIND
    api_version = replicaset.RC_API_VERSION
    component = "replication-controller"

    def view(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        return replicaset.replication_view(obj)

    def status(self, status: dict[str, Any] | None) -> dict[str, Any] | None:
        return replicaset.replication_status(status)
