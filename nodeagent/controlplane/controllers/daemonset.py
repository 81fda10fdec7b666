"""The DaemonSet controller (kube-controller-manager's `daemonset`): a pod per node that should run
one, virtual nodes included.

Why here: a driver's Helm chart (a DaemonSet for the kubelet plugin, a Deployment for its
controller) needs it when no kube-controller-manager runs. The decisions are
workloads/daemonset.py's; this manager reads the DaemonSet, the Nodes, the pods of its namespace
and its ControllerRevisions from the store and writes the revision, the pods (pinned to their
node by node affinity: the scheduler, embedded or real, binds them), deletions and the status in
one transaction, with upstream's events. It holds the failedPodsBackoff entries (in memory, as
upstream; collected every minute on the injected clock). Switched off with controlPlane.controllers
(`-daemonset`), the real controller can run instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from nodeagent.controlplane.controllers.podcontrol import adopt_and_release, create_and_delete, write_status
from nodeagent.controlplane.controllers.workqueue import Key, KeyedController, obj_key, owner_key
from nodeagent.controlplane.events import EventRecorder
from nodeagent.controlplane.workloads import daemonset
from nodeagent.controlplane.workloads import pods as P
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("DaemonSet", "Node", "Pod", "ControllerRevision")
BACKOFF_GC_INTERVAL = 60.0
"""BackoffGCInterval."""


class DaemonSetController(KeyedController):
    name = "daemonset-controller"

    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        super().__init__(store, clock)
        self.events = EventRecorder("daemonset-controller")
        self.failed_pods_backoff = daemonset.new_failed_pods_backoff()
        self._backoff_gc_at = clock.now() + BACKOFF_GC_INTERVAL

    def keys_for(self, event_type: str, obj: Mapping[str, Any]) -> Iterable[Key]:
        kind = obj.get("kind")
        if kind == "DaemonSet":
            return [obj_key(obj)]
        if kind == "Node":
            return [obj_key(ds) for ds in self.store.scan("DaemonSet")]
        key = owner_key(obj, "DaemonSet")
        if key is not None:
            return [key]
        if kind != "Pod" or event_type == "DELETED" or not P.is_active(obj):
            return []
        return [obj_key(ds) for ds in self.store.scan("DaemonSet", P.namespace(obj))
                if P.selector_matches((ds.get("spec") or {}).get("selector"), P.labels(obj))]

    def sync(self, key: Key) -> float | None:
        ns, name = key
        ds = self.store.peek("DaemonSet", ns, name)
        if ds is None:
            return None
        now = self.clock.now()
        if now >= self._backoff_gc_at:
            self.failed_pods_backoff.gc(now)
            self._backoff_gc_at = now + BACKOFF_GC_INTERVAL
        plan = daemonset.plan(ds, self.store.scan("Node"), self.store.scan("Pod", ns),
                              self.store.scan("ControllerRevision", ns), now, self.failed_pods_backoff)
        self._apply(ds, plan, now)
        return plan.recheck_at

    def _apply(self, ds: Mapping[str, Any], plan: daemonset.Plan, now: float) -> None:
        ns = P.namespace(ds)
        ref = P.owner_reference(ds, daemonset.API_VERSION, daemonset.KIND)
        with self.store.transaction(manager="kube-controller-manager") as tx:
            if plan.revision is not None:
                tx.create(plan.revision)
            for name in plan.delete_revisions:
                tx.delete("ControllerRevision", ns, name)
            adopt_and_release(tx, ds, ref, plan.adopt, plan.release)
            create_and_delete(tx, ds, plan.create, plan.delete, self.clock, self.events, now)
            for type_, reason, message in plan.events:
                self.events.record(tx, ds, type_, reason, message, now=now)
            write_status(tx, "DaemonSet", ds, plan.status)
