"""The resourcequota controller (upstream pkg/controller/resourcequota): each ResourceQuota's
status.hard is its spec.hard and status.used what its namespace holds.

One responsibility: recount quotas (objects/resourcequota.py's CalculateUsage; DRA device charges
through ../quota.py, as the claim controller counts them). A quota is recounted when it is added
or its spec changes, when something it counts leaves its namespace (a pod, service, PVC,
configmap, secret, replication controller or claim deleted, a pod that ends or whose deletion
grace runs out: the admission charges creates, upstream's replenishment gives back), and every
quota at the full resync (kube-controller-manager's --resource-quota-sync-period, 5 minutes).
Written as kube-controller-manager's UpdateStatus, only when it changes. Synchronous; driven by
loop.py as a component.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodeagent.controlplane import quota as dra_quota
from nodeagent.errors import NodeAgentError
from nodeagent.objects import resourcequota
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("ResourceQuota", "Pod", "Service", "PersistentVolumeClaim", "ConfigMap", "Secret",
         "ReplicationController", "ResourceClaim")
"""What upstream's monitor replenishes on (its evaluators' kinds); other `count/` kinds at resync."""
SYNC_PERIOD = 300.0
"""--resource-quota-sync-period's default (5m)."""

Key = tuple[str, str]


class ResourceQuotaController:
    """Quotas by namespace -> their recount when their namespace loses something. A loop.py component."""

    def __init__(self, store: ObjectStore, clock: Clock, sync_period: float = SYNC_PERIOD) -> None:
        self.store = store
        self.clock = clock
        self.sync_period = sync_period
        self._quotas: dict[str, dict[str, Mapping[str, Any]]] = {}  # namespace -> name -> quota
        self._counted: dict[Key, bool] = {}  # pods in a namespace with quotas: charged?
        self._queue: dict[Key, None] = {}
        self._next_resync = clock.monotonic() + sync_period

    # --- Component ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self._quotas.clear()
        self._counted.clear()
        for obj in objs:
            if obj.get("kind") == "ResourceQuota":
                self.handle("ADDED", obj)
        for obj in objs:
            if obj.get("kind") != "ResourceQuota":
                self.handle("ADDED", obj)
        self._enqueue_all()

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        md = obj.get("metadata") or {}
        ns = str(md.get("namespace") or "")
        kind = obj.get("kind")
        if kind == "ResourceQuota":
            name = str(md.get("name") or "")
            if event_type == "DELETED":
                self._quotas.get(ns, {}).pop(name, None)
                self._queue.pop((ns, name), None)
                if not self._quotas.get(ns):
                    self._quotas.pop(ns, None)
                return
            if not self._quotas:  # the first quota: the resync period starts now
                self._next_resync = self.clock.monotonic() + self.sync_period
            old = self._quotas.setdefault(ns, {}).get(name)
            self._quotas[ns][name] = obj
            status = obj.get("status") or {}
            if old is None or old.get("spec") != obj.get("spec") or "used" not in status \
                    or status.get("hard") != resourcequota.render(resourcequota.parse_list(
                        (obj.get("spec") or {}).get("hard"))):
                self._queue[(ns, name)] = None
            return
        quotas = self._quotas.get(ns)
        if not quotas:  # the common case: a namespace without quotas costs this lookup
            return
        if kind == "Pod":
            key = (ns, str(md.get("name") or ""))
            if event_type == "DELETED":
                self._counted.pop(key, None)
                self._enqueue_ns(ns)
                return
            counted = resourcequota.pod_counted(obj, self.clock.now())
            if self._counted.get(key, counted) and not counted:
                self._enqueue_ns(ns)
            self._counted[key] = counted
            return
        if event_type == "DELETED":
            self._enqueue_ns(ns)

    def work(self, limit: int) -> int:
        if self._quotas and self.clock.monotonic() >= self._next_resync:
            self._next_resync = self.clock.monotonic() + self.sync_period
            self._enqueue_all()
        done = 0
        while self._queue and done < max(limit, 1):
            key = next(iter(self._queue))
            del self._queue[key]
            done += 1
            try:
                self.sync(key)
            except NodeAgentError as err:  # the next event or the resync brings it back
                logger.warning("resourcequota: could not sync quota=%s/%s err=%s", key[0], key[1], err)
        return done

    def deadline(self) -> float | None:
        """The next full resync; None while no quota exists (a deadline makes loop.py race every wait
        for an event against a timer: measurable per pod event, for nothing to resync)."""
        return self._next_resync if self._quotas else None

    def idle(self) -> bool:
        return not self._queue and (not self._quotas or self.clock.monotonic() < self._next_resync)

    # --- work ---

    def _enqueue_ns(self, ns: str) -> None:
        for name in self._quotas.get(ns, {}):
            self._queue[(ns, name)] = None

    def _enqueue_all(self) -> None:
        for ns in sorted(self._quotas):
            self._enqueue_ns(ns)

    def sync(self, key: Key) -> None:
        """syncResourceQuota: status.hard and a recounted status.used, written when they change."""
        ns, name = key
        with self.store.transaction(savepoints=False, manager="kube-controller-manager") as tx:
            q = tx.try_get("ResourceQuota", ns, name)
            if q is None:
                return
            kinds = {(info.resource.partition(".")[2], info.resource.partition(".")[0]): info.kind
                     for info in self.store.kinds if info.namespaced}

            def objects(group: str, plural: str) -> Iterable[Mapping[str, Any]]:
                kind = kinds.get((group, plural))
                return tx.list(kind, ns) if kind else ()

            want = resourcequota.calculate_status(q, objects, self.clock.now(), special=(dra_quota.EVALUATOR,))
            if q.get("status") == want:
                return
            q["status"] = want
            tx.update_status(q, copy=False)

