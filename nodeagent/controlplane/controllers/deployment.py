"""The Deployment controller (kube-controller-manager's `deployment`): rolls Deployments out
through ReplicaSets.

Why here: `kubectl create deployment`, `kubectl scale` and `kubectl rollout status` need it when
no kube-controller-manager runs. The decisions are workloads/deployment.py's (one upstream
syncDeployment); this manager reads the Deployment, the ReplicaSets of its namespace and the
pods of its ReplicaSets from the store and applies the resulting writes in one transaction,
with the ScalingReplicaSet events upstream's recorder writes. It creates no pods: the
ReplicaSet controller (embedded or the real one) does. Switched off with
controlPlane.controllers (`-deployment`), the real controller can run instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, obj_key, owner_key
from nodeagent.controlplane.events import EventRecorder
from nodeagent.controlplane.workloads import deployment
from nodeagent.controlplane.workloads import pods as P
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("Deployment", "ReplicaSet", "Pod")


class DeploymentController(KeyedController):
    name = "deployment-controller"

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.events = EventRecorder("deployment-controller")

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        kind = obj.get("kind")
        if kind == "Deployment":
            return [obj_key(obj)]
        if kind == "ReplicaSet":
            key = owner_key(obj, "Deployment")
            if key is not None:
                return [key]
            if event_type == "DELETED" or P.deleting(obj):
                return []
            return [obj_key(d) for d in self.store.scan("Deployment", P.namespace(obj))
                    if P.selector_matches((d.get("spec") or {}).get("selector"), P.labels(obj))]
        # a pod gone: a Recreate rollout waits for the old pods to go (upstream's deletePod)
        if event_type != "DELETED":
            return []
        rs_key = owner_key(obj, "ReplicaSet")
        rs = self.store.peek("ReplicaSet", *rs_key) if rs_key else None
        key = owner_key(rs, "Deployment") if rs is not None else None
        return [key] if key is not None else []

    def sync(self, key: Key) -> float | None:
        ns, name = key
        d = self.store.peek("Deployment", ns, name)
        if d is None:
            return None
        replica_sets = self.store.scan("ReplicaSet", ns)
        mine = {P.uid(rs) for rs in replica_sets if P.controlled_by(rs, d)}
        pods_of: dict[str, list[Mapping[str, Any]]] = {}
        if (((d.get("spec") or {}).get("strategy") or {}).get("type")) == "Recreate":
            for pod in self.store.scan("Pod", ns):
                ref = P.controller_ref(pod)
                if ref is not None and ref.get("uid") in mine:
                    pods_of.setdefault(str(ref["uid"]), []).append(pod)
        now = self.clock.now()
        sync = deployment.Sync(d, replica_sets, pods_of, now)
        try:
            ops = sync.run()
        except deployment.Collision as err:
            ops = sync.ops
            logger.info("replica set name taken by another template deployment=%s/%s name=%s", ns, name, err)
            self._apply(d, ops, now)
            return now
        self._apply(d, ops, now)
        return ops.recheck_at

    def _apply(self, d: Mapping[str, Any], ops: deployment.Ops, now: float) -> None:
        ns = P.namespace(d)
        with self.store.transaction(manager="kube-controller-manager") as tx:
            for rs in ops.adopt:
                tx.update(rs)
            for rs in ops.create:
                tx.create(rs)
            for name, rs in ops.update.items():
                if any(P.name(c) == name for c in ops.create):
                    continue
                cur = tx.get("ReplicaSet", ns, name)
                cur["spec"] = rs["spec"]
                cur["metadata"]["annotations"] = rs["metadata"].get("annotations") or {}
                tx.update(cur)
            for name in ops.delete:
                tx.delete("ReplicaSet", ns, name)
            # upstream writes the revision annotation with the status, through UpdateStatus (the
            # deployment status strategy keeps annotations): one write, managedFields' status entry
            if ops.annotations is not None or ops.status is not None:
                cur = tx.get("Deployment", ns, P.name(d))
                if ops.annotations is not None:
                    cur["metadata"]["annotations"] = ops.annotations
                if ops.status is not None:
                    cur["status"] = ops.status
                tx.update(cur, with_status=True, subresource="status")
            for type_, reason, message in ops.events:
                self.events.record(tx, d, type_, reason, message, now=now)
