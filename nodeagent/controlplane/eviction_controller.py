"""The device taint eviction controller (KEP-5055; upstream pkg/controller/devicetainteviction).

One responsibility: evict. A device with a NoExecute taint evicts the pods that use it through
an allocated claim unless the claim's allocation result tolerates the taint (the tolerations
are copied into the result at allocation time). A toleration with tolerationSeconds delays the
eviction by that long after the controller saw the taint (the smallest such delay counts). An
evicted pod gets the DisruptionTarget condition (reason DeletionByDeviceTaintManager), a
DeviceTaintManagerEviction event and is deleted, as upstream does.

Cheap when nothing is tainted (the usual case): events only update indexes, and the pass over
the claims runs only while some device carries a NoExecute taint. Synchronous; the async driver
is loop.py (a component with load/handle/work/deadline/idle). Clock injected.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.clock import Clock
from nodeagent.controlplane import convert, events
from nodeagent.controlplane.allocator.taints import NO_EXECUTE, Taint, eviction_delay
from nodeagent.controlplane.convert_taints import results, taint, toleration
from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339

logger = logging.getLogger(__name__)

KINDS = ("ResourceSlice", "ResourceClaim", "Pod")
COMPONENT = "device-taint-eviction-controller"
REASON = "DeviceTaintManagerEviction"
MESSAGE = "Marking for deletion"
CONDITION_REASON = "DeletionByDeviceTaintManager"
CONDITION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"

DeviceKey = tuple[str, str, str]


class EvictionController:
    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._slice_taints: dict[str, dict[DeviceKey, tuple[Taint, ...]]] = {}
        self._tainted: dict[DeviceKey, tuple[Taint, ...]] = {}
        self._claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._pods: dict[str, tuple[str, str]] = {}  # uid -> (namespace, name)
        self._seen: dict[tuple[DeviceKey, str], float] = {}  # (device, taint key) -> first seen
        self._dirty = False
        self._due: float | None = None

    # --- feeding ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self._slice_taints.clear()
        self._claims.clear()
        self._pods.clear()
        for obj in objs:
            self.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        md = obj["metadata"]
        deleted = event_type == "DELETED"
        if kind == "ResourceSlice":
            self._slice(md["name"], None if deleted else obj)
        elif kind == "ResourceClaim":
            key = (md.get("namespace") or "default", md["name"])
            if deleted or not convert.is_allocated(obj):
                self._claims.pop(key, None)
            else:
                self._claims[key] = obj
                self._dirty = self._dirty or bool(self._tainted)
        elif kind == "Pod":
            uid = str(md.get("uid") or "")
            if deleted or convert.is_terminal(obj):
                self._pods.pop(uid, None)
            else:
                self._pods[uid] = (md.get("namespace") or "default", md["name"])

    def _slice(self, name: str, obj: Mapping[str, Any] | None) -> None:
        found: dict[DeviceKey, tuple[Taint, ...]] = {}
        if obj is not None:
            spec = obj.get("spec") or {}
            pool = (spec.get("pool") or {}).get("name", "")
            for dev in spec.get("devices") or ():
                taints = tuple(taint(t) for t in dev.get("taints") or () if t.get("effect") == NO_EXECUTE)
                if taints:
                    found[(spec.get("driver", ""), pool, dev["name"])] = taints
        old = self._slice_taints.pop(name, {})
        if found:
            self._slice_taints[name] = found
        if old or found:
            self._tainted = {k: v for s in self._slice_taints.values() for k, v in s.items()}
            self._dirty = True

    # --- work ---

    def deadline(self) -> float | None:
        return self.clock.monotonic() if self._dirty else self._due

    def idle(self) -> bool:
        due = self.deadline()
        return due is None or due > self.clock.monotonic()

    def work(self, limit: int) -> int:
        """One pass over the allocated claims when something changed or a delay ended."""
        now = self.clock.monotonic()
        if not self._dirty and (self._due is None or self._due > now):
            return 0
        self._dirty = False
        self._due = None
        if not self._tainted:
            self._seen.clear()
            return 0
        evict: dict[str, tuple[str, str]] = {}
        live: set[tuple[DeviceKey, str]] = set()
        for claim in self._claims.values():
            delay = self._claim_delay(claim, now, live)
            if delay is None:
                continue
            if delay > 0:
                self._due = now + delay if self._due is None else min(self._due, now + delay)
                continue
            for ref in convert.reserved_for(claim):
                uid = str(ref.get("uid") or "")
                if ref.get("resource") == "pods" and uid in self._pods:
                    evict[uid] = self._pods[uid]
        self._seen = {k: v for k, v in self._seen.items() if k in live}
        done = 0
        for uid, (ns, name) in evict.items():
            if done >= limit:
                self._dirty = True
                break
            self._evict(ns, name, uid)
            self._pods.pop(uid, None)
            done += 1
        return done

    def _claim_delay(self, claim: Mapping[str, Any], now: float, live: set[tuple[DeviceKey, str]]) -> float | None:
        """Seconds until the claim's consumers are evicted (0: now), or None (never)."""
        least: float | None = None
        for result in results(claim):
            dev = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            taints = self._tainted.get(dev)
            if not taints:
                continue
            tolerations = [toleration(t) for t in result.get("tolerations") or ()]
            delay = eviction_delay(taints, tolerations)
            if delay is None:
                continue
            seen_key = (dev, taints[0].key)
            live.add(seen_key)
            since = self._seen.setdefault(seen_key, now)
            left = max(0.0, since + delay - now)
            least = left if least is None else min(least, left)
        return least

    def _evict(self, ns: str, name: str, uid: str) -> None:
        try:
            with self.store.transaction(savepoints=False) as tx:
                pod = tx.try_get("Pod", ns, name)
                if pod is None or pod["metadata"].get("uid") != uid or convert.is_deleting(pod):
                    return
                status = dict(pod.get("status") or {})
                if convert.set_condition(status, {
                        "type": "DisruptionTarget", "status": "True", "reason": CONDITION_REASON,
                        "message": CONDITION_MESSAGE, "lastTransitionTime": rfc3339(self.clock.now())}):
                    pod["status"] = status
                    pod = tx.update_status(pod)
                events.record(tx, pod, REASON, MESSAGE, now=self.clock.now(), component=COMPONENT,
                              type_=events.NORMAL)
                event = tx.try_get("Event", ns, events.event_name(pod, REASON))
                if event is not None and event["metadata"].pop("ownerReferences", None):
                    tx.update(event)  # the event outlives the pod it reports, as upstream's do
                tx.delete("Pod", ns, name, uid=uid)
        except NodeAgentError as err:
            logger.warning("could not evict pod=%s/%s err=%s", ns, name, err)
            return
        logger.info("evicted pod=%s/%s for a NoExecute device taint", ns, name)
