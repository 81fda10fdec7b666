"""The node lifecycle controller (upstream pkg/controller/nodelifecycle), over every Node.

One responsibility: keep each Node's health conditions and condition taints as
kube-controller-manager's does, whatever wrote the Node (a kubelet, a node process, kubectl).
Its three parts, as upstream's:
- the NoSchedule pass (doNoScheduleTaintingPass), on every Node event: the taints the node's
  conditions call for (Ready False -> node.kubernetes.io/not-ready, Unknown -> unreachable,
  memory/disk/PID pressure, network-unavailable) and spec.unschedulable, each NoSchedule with
  timeAdded; those no longer called for go (the not-ready taint kube-apiserver's
  TaintNodesByCondition admission puts on every new Node goes once the node posts Ready).
- the health monitor (monitorNodeHealth), every nodeMonitorPeriod: a node whose Ready heartbeat
  and Lease (kube-node-lease/<node> renewTime) did not move for nodeMonitorGracePeriod (one that
  never posted a Ready condition: nodeStartupGracePeriod from its creation) gets Ready,
  MemoryPressure, DiskPressure and PIDPressure Unknown (nodetaints.unknown_conditions). From each
  Ready condition the NoExecute taints follow: Ready False -> not-ready, Unknown -> unreachable
  (the other one swapped at once), queued per zone and added at the zone's rate
  (--node-eviction-rate 0.1/s, burst 1; 0 in a small zone half down; none at all while every
  node of every zone is not Ready: the "master disruption mode", which also removes them); a
  Ready node loses both.
- No pod is evicted here (the taint eviction controller's job, after the pods' tolerations) and
  pods are not marked NotReady (upstream's MarkPodsNotReady: not done, a difference).

Intended difference: the control plane's own virtual nodes (`alive`) are run by this process,
which writes their status once and renews no Lease for them: the monitor takes them as
heartbeating while the process runs (upstream has no such nodes; a real kube-controller-manager
on this API server marks them Unknown after its grace period). Synchronous; a loop.py component;
clock injected.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodeagent.controlplane.controllers import nodetaints as rules
from nodeagent.controlplane.controllers.nodetaints import (
    NEVER_REASON,
    NO_EXECUTE,
    NOT_READY,
    UNKNOWN_MESSAGE,
    UNKNOWN_REASON,
    UNREACHABLE,
    unknown_conditions,
)
from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore, clone
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

__all__ = ["KINDS", "NEVER_REASON", "NOT_READY", "UNKNOWN_MESSAGE", "UNKNOWN_REASON", "UNREACHABLE",
           "NodeLifecycleController", "unknown_conditions"]

KINDS = ("Node",)  # Leases are read when the monitor runs, as upstream's lister
LEASE_NAMESPACE = "kube-node-lease"
MANAGER = "kube-controller-manager"
RETRY = 0.05  # a queued node without a Ready condition is tried again after this (upstream's 50 ms)


@dataclass
class _Health:
    """nodeHealthData: the last sign of life (monotonic), the Ready condition and Lease renewal seen."""

    probe: float
    ready: Mapping[str, Any] | None = None
    renew: str = ""


@dataclass
class _Zone:
    """A zone's NoExecute tainter: its rate limiter and queue (name -> when to process; processed
    names stay in `seen` until removed, as the UniqueQueue keeps its set)."""

    bucket: rules.Bucket
    queue: dict[str, float] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)


def _epoch(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class NodeLifecycleController:
    """Node conditions -> condition taints; heartbeats -> Unknown and NoExecute taints. A loop.py component."""

    def __init__(self, store: ObjectStore, clock: Clock, grace_period: float, *, startup_grace: float = 60.0,
                 period: float = 5.0, alive: Collection[str] = ()) -> None:
        self.store = store
        self.clock = clock
        self.grace = grace_period
        self.startup_grace = startup_grace
        self.period = max(period, 0.01)
        self.alive = frozenset(alive)
        self._health: dict[str, _Health] = {}
        self._dirty: set[str] = set()  # nodes for the NoSchedule pass
        self._known: set[str] = set()  # knownNodeSet
        self._zones: dict[str, _Zone] = {}  # zoneNoExecuteTainter
        self._states: dict[str, str] = {}  # zoneStates
        self._next = clock.monotonic()  # the next monitor pass

    # --- Component ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.handle("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        if obj.get("kind") != "Node":
            return
        name = str((obj.get("metadata") or {}).get("name") or "")
        if event_type == "DELETED":
            self._dirty.discard(name)
        else:
            self._dirty.add(name)

    def work(self, limit: int) -> int:
        done = 0
        now = self.clock.monotonic()
        if now >= self._next:
            self._next = now + self.period
            done += self._monitor(now)
        # the NoSchedule pass right after the status writes it follows (upstream's node workers
        # take the update event at once), the NoExecute queue after it (upstream's 100 ms pass)
        for name in list(self._dirty)[:limit]:
            self._dirty.discard(name)
            done += self._noschedule(name)
        return done + self._noexecute(self.clock.monotonic())

    def deadline(self) -> float | None:
        now = self.clock.monotonic()
        if self._dirty:
            return now
        due = [self._next] if self._known or self.store.count("Node") else []
        for zone in self._zones.values():
            if zone.queue:
                token = zone.bucket.next_token(now)
                if token is not None:
                    due.append(max(token, min(zone.queue.values())))
        return min(due) if due else None

    def idle(self) -> bool:
        due = self.deadline()
        return due is None or due > self.clock.monotonic()

    # --- the NoSchedule pass ---

    def _noschedule(self, name: str) -> int:
        node = self.store.peek("Node", "", name)
        if node is None:
            return 0
        taints = rules.noschedule_taints(node, rfc3339(self.clock.now()))
        return 0 if taints is None else self._write_taints(node, taints)

    def _write_taints(self, node: Mapping[str, Any], taints: list[dict[str, Any]]) -> int:
        updated = clone(node)
        spec = updated.setdefault("spec", {})
        if taints:
            spec["taints"] = taints
        else:
            spec.pop("taints", None)
        name = updated["metadata"]["name"]
        try:
            self.store.update(updated, manager=MANAGER)
        except NodeAgentError as err:
            logger.info("node taints not updated node=%s err=%s", name, err)
            self._dirty.add(name)
            return 0
        return 1

    def _swap(self, node: Mapping[str, Any], add: Sequence[tuple[str, str]], remove: Sequence[tuple[str, str]]) -> int:
        taints = rules.swapped(rules.taints_of(node), add, remove, rfc3339(self.clock.now()))
        return 0 if taints == rules.taints_of(node) else self._write_taints(node, taints)

    # --- the health monitor ---

    def _monitor(self, now: float) -> int:
        nodes = list(self.store.scan("Node"))
        names = {str(n["metadata"]["name"]) for n in nodes}
        done = 0
        for node in nodes:
            name = str(node["metadata"]["name"])
            zone = rules.zone_of(node)
            if zone not in self._zones:
                self._zones[zone] = _Zone(rules.Bucket(rules.EVICTION_QPS, now))
            self._states.setdefault(zone, rules.INITIAL)
            if name not in self._known:
                self._known.add(name)
                done += self._reachable(node)
        for name in self._known - names:
            self._known.discard(name)
            self._health.pop(name, None)
        by_zone: dict[str, list[str | None]] = {}
        for name in sorted(names):
            current = self.store.peek("Node", "", name)  # as the writes above left it
            if current is None:
                continue
            written, node_now = self._check_health(current, now)
            done += written
            ready = rules.condition(node_now, "Ready")
            status = None if ready is None else str(ready.get("status"))
            if rules.EXCLUDE_DISRUPTION not in ((node_now.get("metadata") or {}).get("labels") or {}):
                by_zone.setdefault(rules.zone_of(node_now), []).append(status)
            if status is not None:
                done += self._evict_by_taint(node_now, status, now)
        return done + self._disruption(by_zone, now)

    def _check_health(self, node: Mapping[str, Any], now: float) -> tuple[int, Mapping[str, Any]]:
        """tryUpdateNodeHealth: (writes, the node as it is now)."""
        name = str(node["metadata"]["name"])
        ready = rules.condition(node, "Ready")
        health = self._health.get(name)
        if ready is None:
            grace = self.startup_grace
            if health is None:
                created = _epoch((node.get("metadata") or {}).get("creationTimestamp"))
                since = self.clock.now() - created if created is not None else 0.0
                health = self._health[name] = _Health(now - max(since, 0.0))
            health.ready = None
        else:
            grace = self.grace
            if health is None or health.ready is None:
                health = self._health[name] = _Health(now, ready, health.renew if health else "")
            elif health.ready.get("lastHeartbeatTime") != ready.get("lastHeartbeatTime"):
                health.probe, health.ready = now, ready
        lease = self.store.peek("Lease", LEASE_NAMESPACE, name)
        renew = str(((lease or {}).get("spec") or {}).get("renewTime") or "")
        if lease is not None and (not health.renew or _later(renew, health.renew)):
            health.renew, health.probe = renew, now
        if name in self.alive:
            health.probe = now
        if now <= health.probe + grace:
            return 0, node
        stamp = rfc3339(self.clock.now())
        status = dict(node.get("status") or {})
        status["conditions"] = unknown_conditions(node, stamp)
        new = {**node, "status": status}
        if rules.condition(new, "Ready") == ready:
            return 0, node
        try:
            written = self.store.update_status({**clone(node), "status": status}, manager=MANAGER)
        except NodeAgentError as err:
            logger.info("node status not updated node=%s err=%s", name, err)
            return 0, node
        logger.warning("node stopped posting status node=%s grace=%ss: Ready=Unknown", name, grace)
        health.ready = rules.condition(written, "Ready")
        self._dirty.add(name)
        return 1, written

    def _evict_by_taint(self, node: Mapping[str, Any], status: str, now: float) -> int:
        """processTaintBaseEviction."""
        if status == "False":
            if rules.has_taint(node, UNREACHABLE, NO_EXECUTE):
                return self._swap(node, [(NOT_READY, NO_EXECUTE)], [(UNREACHABLE, NO_EXECUTE)])
            self._mark_for_tainting(node, NOT_READY, now)
        elif status == "Unknown":
            if rules.has_taint(node, NOT_READY, NO_EXECUTE):
                return self._swap(node, [(UNREACHABLE, NO_EXECUTE)], [(NOT_READY, NO_EXECUTE)])
            self._mark_for_tainting(node, UNREACHABLE, now)
        elif status == "True":
            return self._reachable(node)
        return 0

    def _mark_for_tainting(self, node: Mapping[str, Any], key: str, now: float) -> None:
        name = str(node["metadata"]["name"])
        zone = self._zones[rules.zone_of(node)]
        if not rules.has_taint(node, key, NO_EXECUTE):
            zone.queue.pop(name, None)
            zone.seen.discard(name)
        if name not in zone.seen:
            zone.seen.add(name)
            zone.queue[name] = now

    def _reachable(self, node: Mapping[str, Any]) -> int:
        """markNodeAsReachable: no NoExecute readiness taint, out of its zone's queue."""
        zone = self._zones.get(rules.zone_of(node))
        if zone is not None:
            name = str(node["metadata"]["name"])
            zone.queue.pop(name, None)
            zone.seen.discard(name)
        return self._swap(node, [], [(UNREACHABLE, NO_EXECUTE), (NOT_READY, NO_EXECUTE)])

    def _disruption(self, by_zone: Mapping[str, Sequence[str | None]], now: float) -> int:
        """handleDisruption: the zones' states, the tainting rates, the master disruption mode."""
        new = {zone: rules.zone_state(ready) for zone, ready in by_zone.items()}
        all_down = all(s == rules.FULL for s in new.values())
        for zone in new:
            self._states.setdefault(zone, rules.INITIAL)
        all_were_down = True
        for zone in list(self._states):
            if zone not in by_zone:
                del self._states[zone]
            elif self._states[zone] != rules.FULL:
                all_were_down = False
                break
        if all_down and all_were_down:
            return 0
        done = 0
        if all_down:
            logger.info("every node not Ready: NoExecute tainting stopped (master disruption mode)")
            for node in self.store.scan("Node"):
                done += self._reachable(node)
            for zone in self._states:
                self._zones[zone].bucket = self._zones[zone].bucket.swapped(0.0, now)
                self._states[zone] = rules.FULL
            return done
        if all_were_down:
            logger.info("some nodes Ready again: NoExecute tainting resumed")
            for health in self._health.values():
                health.probe = now
            for zone in self._states:
                self._set_rate(zone, len(by_zone[zone]), new[zone], now)
            return done
        for zone, state in self._states.items():
            if state != new[zone]:
                self._set_rate(zone, len(by_zone[zone]), new[zone], now)
        return done

    def _set_rate(self, zone: str, size: int, state: str, now: float) -> None:
        self._zones[zone].bucket = self._zones[zone].bucket.swapped(rules.zone_qps(size, state), now)
        self._states[zone] = state

    # --- the NoExecute pass ---

    def _noexecute(self, now: float) -> int:
        """doNoExecuteTaintingPass: each zone's queue at its rate."""
        done = 0
        for zone in self._zones.values():
            while zone.queue:
                if not zone.bucket.try_accept(now):
                    break
                name, at = min(zone.queue.items(), key=lambda kv: kv[1])
                if now < at:
                    break
                node = self.store.peek("Node", "", name)
                ready = None if node is None else rules.condition(node, "Ready")
                if node is not None and ready is None:
                    zone.queue[name] = now + RETRY
                    continue
                del zone.queue[name]
                status = None if ready is None else ready.get("status")
                if node is not None and status == "False":
                    done += self._swap(node, [(NOT_READY, NO_EXECUTE)], [(UNREACHABLE, NO_EXECUTE)])
                elif node is not None and status == "Unknown":
                    done += self._swap(node, [(UNREACHABLE, NO_EXECUTE)], [(NOT_READY, NO_EXECUTE)])
        return done


def _later(new: str, old: str) -> bool:
    """Whether renewTime `new` is after `old` (Lease MicroTime; text as written when unparsable)."""
    a, b = _epoch(new), _epoch(old)
    return new != old if a is None or b is None else a > b
