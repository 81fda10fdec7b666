"""The node lifecycle controller's health part (upstream pkg/controller/nodelifecycle).

One responsibility: a node that stopped renewing its Lease is not Ready. The controller keeps,
per node, a probe time: when it last saw the node's Lease renewed (kube-node-lease/<node>
spec.renewTime changed) or its Ready condition's lastHeartbeatTime move. When the probe is
older than nodeMonitorGracePeriod (50 s upstream since 1.32; configurable for tests), Ready,
MemoryPressure, DiskPressure and PIDPressure turn Unknown with upstream's reason and message
("NodeStatusUnknown", "Kubelet stopped posting node status."; a condition the node never
posted: "NodeStatusNeverUpdated", "Kubelet never posted node status."). From the Ready
condition the node's taints follow, as upstream's tainting passes do: Ready Unknown ->
node.kubernetes.io/unreachable, Ready False -> node.kubernetes.io/not-ready, each with effect
NoSchedule and NoExecute (timeAdded set); a Ready node loses them. No pod is evicted: upstream
evicts through the taint eviction controller only after the pods' default toleration of 300 s.

Only nodes that have (or, under that name, once had) a Lease are watched (divergence: upstream
watches every Node): nodes the control plane simulates itself (virtualNodes) and Node objects
written by hand never heartbeat and stay as they are. Synchronous; driven by loop.py as a component. Clock injected.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore, clone
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("Node", "Lease")
LEASE_NAMESPACE = "kube-node-lease"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"
MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
UNKNOWN_REASON, UNKNOWN_MESSAGE = "NodeStatusUnknown", "Kubelet stopped posting node status."
NEVER_REASON, NEVER_MESSAGE = "NodeStatusNeverUpdated", "Kubelet never posted node status."


@dataclass
class _Health:
    probe: float  # monotonic time of the last sign of life
    renew: str = ""  # the Lease's renewTime as last seen
    heartbeat: str = ""  # the Ready condition's lastHeartbeatTime as last seen
    leased: bool = False


def _ready(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond
    return None


def unknown_conditions(conditions: Sequence[Mapping[str, Any]], stamp: str) -> list[dict[str, Any]]:
    """The node's conditions with the monitored ones Unknown (missing ones added as never posted)."""
    out: list[dict[str, Any]] = []
    seen = set()
    for cond in conditions:
        c = dict(cond)
        if c.get("type") in MONITORED:
            seen.add(c["type"])
            if c.get("status") != "Unknown":
                c.update(status="Unknown", reason=UNKNOWN_REASON, message=UNKNOWN_MESSAGE, lastTransitionTime=stamp)
        out.append(c)
    for kind in MONITORED:
        if kind not in seen:
            out.append({"type": kind, "status": "Unknown", "reason": NEVER_REASON, "message": NEVER_MESSAGE,
                        "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
    return out


def wanted_taints(node: Mapping[str, Any], stamp: str) -> list[dict[str, Any]]:
    """The node's taints with the readiness taints the Ready condition calls for (and no others)."""
    ready = _ready(node)
    status = (ready or {}).get("status")
    key = UNREACHABLE if status == "Unknown" else NOT_READY if status == "False" else None
    current = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
    kept = [dict(t) for t in current if t.get("key") not in (UNREACHABLE, NOT_READY) or t.get("key") == key]
    if key is not None:
        have = {(t.get("key"), t.get("effect")) for t in kept}
        if (key, NO_SCHEDULE) not in have:
            kept.append({"key": key, "effect": NO_SCHEDULE})
        if (key, NO_EXECUTE) not in have:
            kept.append({"key": key, "effect": NO_EXECUTE, "timeAdded": stamp})
    return kept


class NodeLifecycleController:
    """Lease/heartbeat -> Ready Unknown and readiness taints. A loop.py component."""

    def __init__(self, store: ObjectStore, clock: Clock, grace_period: float) -> None:
        self.store = store
        self.clock = clock
        self.grace = grace_period
        self._health: dict[str, _Health] = {}
        self._dirty: set[str] = set()  # nodes whose taints may not match their Ready condition
        self._leased: set[str] = set()  # names of the nodes that ever had a Lease

    # --- Component ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        now = self.clock.monotonic()
        if obj.get("kind") == "Lease":
            if meta.get("namespace") != LEASE_NAMESPACE or event_type == "DELETED":
                return
            health = self._health.setdefault(name, _Health(now))
            renew = str((obj.get("spec") or {}).get("renewTime") or "")
            self._leased.add(name)
            if renew != health.renew or not health.leased:
                health.renew, health.probe, health.leased = renew, now, True
                self._dirty.add(name)
            return
        if event_type == "DELETED":
            self._health.pop(name, None)
            self._dirty.discard(name)
            return
        # a node of that name had a Lease once (deleted and registered again): watched from now on,
        # even if it dies before its new Lease exists
        health = self._health.setdefault(name, _Health(now, leased=name in self._leased))
        heartbeat = str((_ready(obj) or {}).get("lastHeartbeatTime") or "")
        if heartbeat and heartbeat != health.heartbeat:
            health.heartbeat, health.probe = heartbeat, now
        self._dirty.add(name)

    def work(self, limit: int) -> int:
        done = 0
        now = self.clock.monotonic()
        for name, health in list(self._health.items()):
            if done >= limit:
                break
            if health.leased and now - health.probe > self.grace:
                done += self._mark_unknown(name)
        for name in list(self._dirty)[: max(0, limit - done)]:
            self._dirty.discard(name)
            done += self._taint(name)
        return done

    def deadline(self) -> float | None:
        if self._dirty:  # more than one batch of nodes to re-taint: come back at once, not at the next event
            return self.clock.monotonic()
        due = [h.probe + self.grace for n, h in self._health.items() if h.leased and not self._unknown(n)]
        return min(due) + 0.001 if due else None

    def idle(self) -> bool:
        due = self.deadline()
        return not self._dirty and (due is None or due > self.clock.monotonic())

    # --- internals ---

    def _unknown(self, name: str) -> bool:
        node = self.store.peek("Node", "", name)
        return node is None or (_ready(node) or {}).get("status") == "Unknown"

    def _mark_unknown(self, name: str) -> int:
        node = self.store.peek("Node", "", name)
        if node is None or (_ready(node) or {}).get("status") == "Unknown":
            return 0
        stamp = rfc3339(self.clock.now())
        status = dict(node.get("status") or {})
        status["conditions"] = unknown_conditions(status.get("conditions") or [], stamp)
        try:
            self.store.update_status({**clone(node), "status": status}, manager="kube-controller-manager")
        except NodeAgentError as err:
            logger.info("node status not updated node=%s err=%s", name, err)
            return 0
        logger.warning("node stopped posting status node=%s grace=%ss: Ready=Unknown", name, self.grace)
        self._dirty.add(name)
        return 1

    def _taint(self, name: str) -> int:
        node = self.store.peek("Node", "", name)
        if node is None or name not in self._health or not self._health[name].leased:
            return 0
        taints = wanted_taints(node, rfc3339(self.clock.now()))
        if taints == list((node.get("spec") or {}).get("taints") or []):
            return 0
        updated = clone(node)
        spec = updated.setdefault("spec", {})
        if taints:
            spec["taints"] = taints
        else:
            spec.pop("taints", None)
        try:
            self.store.update(updated, manager="kube-controller-manager")
        except NodeAgentError as err:
            logger.info("node taints not updated node=%s err=%s", name, err)
            self._dirty.add(name)
            return 0
        return 1
