"""The StatefulSet controller (kube-controller-manager's `statefulset`): pods with stable names,
created in order.

Why here: a StatefulSet needs it when no kube-controller-manager runs. The decisions are
workloads/statefulset.py's; this manager reads the StatefulSet, the pods, ControllerRevisions and
PersistentVolumeClaims of its namespace from the store and writes the revision, the claims, the
pods, deletions and the status in one transaction, with upstream's events (SuccessfulCreate
"Create Pod web-0 in StatefulSet web successful", SuccessfulDelete...). Switched off with
controlPlane.controllers (`-statefulset`), the real controller can run instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.podcontrol import adopt_and_release, create_pod, delete_pod, write_status
from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, obj_key, owner_key
from nodeagent.controlplane.events import NORMAL, WARNING, EventRecorder
from nodeagent.controlplane.workloads import pods as P
from nodeagent.controlplane.workloads import statefulset
from nodeagent.errors import AlreadyExists, NodeAgentError
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("StatefulSet", "Pod", "ControllerRevision")


class StatefulSetController(KeyedController):
    name = "statefulset-controller"

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.events = EventRecorder("statefulset-controller")

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        if obj.get("kind") == "StatefulSet":
            return [obj_key(obj)]
        key = owner_key(obj, "StatefulSet")
        if key is not None:
            return [key]
        if obj.get("kind") != "Pod" or event_type == "DELETED" or not P.is_active(obj):
            return []
        return [obj_key(s) for s in self.store.scan("StatefulSet", P.namespace(obj))
                if P.selector_matches((s.get("spec") or {}).get("selector"), P.labels(obj))]

    def sync(self, key: Key) -> float | None:
        ns, name = key
        sts = self.store.peek("StatefulSet", ns, name)
        if sts is None:
            return None
        now = self.clock.now()
        claims = {P.name(c) for c in self.store.scan("PersistentVolumeClaim", ns)}
        plan = statefulset.plan(sts, self.store.scan("Pod", ns), self.store.scan("ControllerRevision", ns),
                                claims, now)
        self._apply(sts, plan, now)
        return plan.recheck_at

    def _apply(self, sts: Mapping[str, Any], plan: statefulset.Plan, now: float) -> None:
        name = P.name(sts)
        ref = P.owner_reference(sts, statefulset.API_VERSION, statefulset.KIND)
        with self.store.transaction(manager="kube-controller-manager") as tx:
            if plan.revision is not None:
                tx.create(plan.revision)
            adopt_and_release(tx, sts, ref, plan.adopt, plan.release)
            for claim in plan.claims:
                pod_name = f"{name}-{P.name(claim).rsplit('-', 1)[1]}"
                try:
                    tx.create(claim)
                except AlreadyExists:
                    continue
                except NodeAgentError as err:
                    self.events.record(tx, sts, WARNING, "FailedCreate", f"Create Claim {P.name(claim)} for Pod "
                                       f"{pod_name} in StatefulSet {name} failed error: {err}", now=now)
                    continue
                self.events.record(tx, sts, NORMAL, "SuccessfulCreate", f"Create Claim {P.name(claim)} Pod "
                                   f"{pod_name} in StatefulSet {name} success", now=now)
            for pod in plan.create:
                pod_name = pod["metadata"]["name"]
                try:
                    create_pod(tx, pod, self.clock)
                except NodeAgentError as err:
                    self.events.record(tx, sts, WARNING, "FailedCreate",
                                       f"Create Pod {pod_name} in StatefulSet {name} failed error: {err}", now=now)
                    break
                self.events.record(tx, sts, NORMAL, "SuccessfulCreate",
                                   f"Create Pod {pod_name} in StatefulSet {name} successful", now=now)
            for gone in plan.delete:
                try:
                    delete_pod(tx, gone, now)
                except NodeAgentError as err:
                    self.events.record(tx, sts, WARNING, "FailedDelete",
                                       f"Delete Pod {P.name(gone)} in StatefulSet {name} failed error: {err}", now=now)
                    continue
                self.events.record(tx, sts, NORMAL, "SuccessfulDelete",
                                   f"Delete Pod {P.name(gone)} in StatefulSet {name} successful", now=now)
            write_status(tx, "StatefulSet", sts, plan.status)
