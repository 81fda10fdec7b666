"""The disruption controller (kube-controller-manager's `disruption`): each PodDisruptionBudget's
status, and the reset of stale DisruptionTarget conditions.

Why: the pods/eviction subresource (apiserver/eviction.py) lets an eviction through only while a
budget's status.disruptionsAllowed is above 0; without this controller every budget stayed at
zeros and `kubectl drain` could evict nothing a budget covered. The decisions are
workloads/disruption.py's; this manager reads the store and writes the status in one transaction
per budget, with upstream's events (NoPods, CalculateExpectedPodCountFailed, UnmanagedPods on the
budget, NotDeleted on a pod; source `controllermanager`). A failed calculation writes failSafe's
status (disruptionsAllowed 0, DisruptionAllowed False/SyncFailed with the error). A pod whose
DisruptionTarget condition (True, not the kubelet's) has had no deletion for 2 minutes gets it
set to False, as syncStalePodDisruption.
Keys: a budget's (namespace, name); a pod's stale-condition check is queued as (namespace,
"pod/NAME"), which no budget name can be. Intended difference: a pod event queues every budget
that selects it (upstream queues one, picked arbitrarily, and reports MultiplePodDisruptionBudgets
on the pod); the budgets are few and a sync is idempotent.
Switched off with controlPlane.controllers (`-disruption`), the real controller can run instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, obj_key
from nodeagent.controlplane.events import EventRecorder
from nodeagent.controlplane.workloads import disruption
from nodeagent.objects import disruption as D
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("PodDisruptionBudget", "Pod")
_POD = "pod/"


class DisruptionController(KeyedController):
    name = "disruption-controller"

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.events = EventRecorder("controllermanager")

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        if obj.get("kind") == "PodDisruptionBudget":
            return [obj_key(obj)]
        ns, name = obj_key(obj)
        labels = (obj.get("metadata") or {}).get("labels") or {}
        keys = [obj_key(pdb) for pdb in self.store.scan("PodDisruptionBudget", ns) if D.selects(pdb, labels)]
        if event_type != "DELETED":
            wait = disruption.stale_disruption_wait(obj, self.clock.now())
            if wait is not None:
                self.enqueue((ns, _POD + name), self.clock.monotonic() + wait)
        return keys

    def sync(self, key: Key) -> float | None:
        if key[1].startswith(_POD):
            return self._sync_stale(key[0], key[1][len(_POD):])
        ns, name = key
        pdb = self.store.peek("PodDisruptionBudget", ns, name)
        if pdb is None:
            return None
        pods = [p for p in self.store.scan("Pod", ns) if D.selects(pdb, (p.get("metadata") or {}).get("labels") or {})]
        now = self.clock.now()
        stamp = rfc3339(now)
        try:
            outcome = disruption.plan(pdb, pods, self.store.peek, now, stamp)
        except disruption.SyncError as err:
            logger.warning("disruption: failed to sync pdb=%s/%s err=%s", ns, name, err)
            with self.store.transaction(manager="kube-controller-manager") as tx:
                for type_, reason, message in err.events:
                    self.events.record(tx, pdb, type_, reason, message, now=now)
                cur = tx.try_get("PodDisruptionBudget", ns, name)
                if cur is not None:
                    cur["status"] = disruption.fail_safe(cur, str(err), stamp)
                    tx.update_status(cur)
            return None
        by_name = {p["metadata"]["name"]: p for p in pods}
        with self.store.transaction(manager="kube-controller-manager") as tx:
            for type_, reason, message in outcome.events:
                self.events.record(tx, pdb, type_, reason, message, now=now)
            for pod_name, type_, reason, message in outcome.pod_events:
                self.events.record(tx, by_name[pod_name], type_, reason, message, now=now)
            if outcome.status is not None:
                cur = tx.get("PodDisruptionBudget", ns, name)
                if cur["metadata"].get("resourceVersion") != pdb["metadata"].get("resourceVersion"):
                    return now  # written since it was read (an eviction): look again
                cur["status"] = outcome.status
                tx.update_status(cur)
        return outcome.recheck_at

    def _sync_stale(self, ns: str, name: str) -> float | None:
        """syncStalePodDisruption: DisruptionTarget to False once stale, or look again when it will be."""
        pod = self.store.peek("Pod", ns, name)
        if pod is None:
            return None
        now = self.clock.now()
        wait = disruption.stale_disruption_wait(pod, now)
        if wait is None:
            return None
        if wait > 0:
            return now + wait
        with self.store.transaction(manager="kube-controller-manager") as tx:
            cur = tx.try_get("Pod", ns, name)
            if cur is None or disruption.stale_disruption_wait(cur, now) != 0:
                return None
            status = cur.setdefault("status", {})
            conds = []
            for cond in status.get("conditions") or ():
                if cond.get("type") == D.DISRUPTION_TARGET:
                    # UpdatePodCondition with only the status set: reason and message go
                    cond = {"type": D.DISRUPTION_TARGET, "status": "False", "lastProbeTime": None,
                            "lastTransitionTime": rfc3339(now)}
                    if cur["metadata"].get("generation"):
                        cond = {"type": D.DISRUPTION_TARGET,
                                "observedGeneration": int(cur["metadata"]["generation"]), **cond}
                conds.append(cond)
            status["conditions"] = conds
            tx.update_status(cur)
        return None
