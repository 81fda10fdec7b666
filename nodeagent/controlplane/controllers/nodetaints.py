"""The node lifecycle controller's pure rules (upstream pkg/controller/nodelifecycle): which taints a
Node's conditions call for, the Unknown conditions of a node that stopped posting status, the zone
states of the disruption handling, and the rate limiter of the NoExecute tainting.

One responsibility: decide. No store, no clock: callers pass the time. The controller
(nodelifecycle.py) reads the world, calls these and writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
PID_PRESSURE = "node.kubernetes.io/pid-pressure"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"

# nodeConditionToTaintKeyStatusMap: condition type -> status -> taint key (NoSchedule)
CONDITION_TAINTS: Mapping[str, Mapping[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": MEMORY_PRESSURE},
    "DiskPressure": {"True": DISK_PRESSURE},
    "NetworkUnavailable": {"True": NETWORK_UNAVAILABLE},
    "PIDPressure": {"True": PID_PRESSURE},
}
_CONDITION_KEYS = frozenset(k for m in CONDITION_TAINTS.values() for k in m.values())

# the conditions a node that stopped posting status gets Unknown (NetworkUnavailable is the
# control plane's, left as it is)
MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
UNKNOWN_REASON, UNKNOWN_MESSAGE = "NodeStatusUnknown", "Kubelet stopped posting node status."
NEVER_REASON, NEVER_MESSAGE = "NodeStatusNeverUpdated", "Kubelet never posted node status."

EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
INITIAL, NORMAL, FULL, PARTIAL = "Initial", "Normal", "FullDisruption", "PartialDisruption"
# kube-controller-manager's defaults: --node-eviction-rate, --secondary-node-eviction-rate,
# --large-cluster-size-threshold, --unhealthy-zone-threshold
EVICTION_QPS, SECONDARY_EVICTION_QPS, LARGE_CLUSTER, UNHEALTHY_ZONE = 0.1, 0.01, 50, 0.55

Taint = dict[str, Any]


def condition(node: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def taints_of(node: Mapping[str, Any]) -> list[Taint]:
    return [dict(t) for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]


def _matches(t: Mapping[str, Any], key: str, effect: str) -> bool:
    """Taint.MatchTaint: the key and the effect."""
    return t.get("key") == key and t.get("effect") == effect


def has_taint(node: Mapping[str, Any], key: str, effect: str) -> bool:
    return any(_matches(t, key, effect) for t in taints_of(node))


def swapped(taints: Sequence[Mapping[str, Any]], add: Iterable[tuple[str, str]],
            remove: Iterable[tuple[str, str]], stamp: str) -> list[Taint]:
    """SwapNodeControllerTaint: AddOrUpdateTaint of each taint to add (timeAdded `stamp`; a taint of
    the same key and effect is replaced in place, a new one appended), then RemoveTaint of each to
    remove."""
    out = [dict(t) for t in taints]
    for key, effect in add:
        new = {"key": key, "effect": effect, "timeAdded": stamp}
        at = next((i for i, t in enumerate(out) if _matches(t, key, effect)), None)
        if at is None:
            out.append(new)
        elif out[at] != new:
            out[at] = new
    gone = set(remove)
    return [t for t in out if (t.get("key"), t.get("effect")) not in gone]


def noschedule_taints(node: Mapping[str, Any], stamp: str) -> list[Taint] | None:
    """doNoScheduleTaintingPass: the node's taints with the NoSchedule taints its conditions (and
    spec.unschedulable) call for, those no longer called for removed; None when nothing changes."""
    wanted: list[tuple[str, str]] = []
    for cond in (node.get("status") or {}).get("conditions") or []:
        if not isinstance(cond, Mapping):
            continue
        key = CONDITION_TAINTS.get(str(cond.get("type")), {}).get(str(cond.get("status")))
        if key is not None and (key, NO_SCHEDULE) not in wanted:
            wanted.append((key, NO_SCHEDULE))
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.append((UNSCHEDULABLE, NO_SCHEDULE))
    current = taints_of(node)
    have = {(t.get("key"), t.get("effect")) for t in current
            if t.get("effect") == NO_SCHEDULE and (t.get("key") == UNSCHEDULABLE or t.get("key") in _CONDITION_KEYS)}
    add = [w for w in wanted if w not in have]
    remove = [h for h in have if h not in wanted]
    if not add and not remove:
        return None
    return swapped(current, add, remove, stamp)  # type: ignore[arg-type]


def unknown_conditions(node: Mapping[str, Any], stamp: str) -> list[dict[str, Any]]:
    """The node's conditions once it stopped posting status (tryUpdateNodeHealth past its grace
    period): the monitored ones Unknown; one it never posted is added with its heartbeat at the
    node's creation."""
    created = (node.get("metadata") or {}).get("creationTimestamp")
    out: list[dict[str, Any]] = []
    seen = set()
    for cond in (node.get("status") or {}).get("conditions") or []:
        c = dict(cond)
        if c.get("type") in MONITORED:
            seen.add(c["type"])
            if c.get("status") != "Unknown":
                c.update(status="Unknown", reason=UNKNOWN_REASON, message=UNKNOWN_MESSAGE, lastTransitionTime=stamp)
        out.append(c)
    for kind in MONITORED:
        if kind not in seen:
            out.append({"type": kind, "status": "Unknown", "lastHeartbeatTime": created, "lastTransitionTime": stamp,
                        "reason": NEVER_REASON, "message": NEVER_MESSAGE})
    return out


def zone_of(node: Mapping[str, Any]) -> str:
    """nodetopology.GetZoneKey: region and zone (the beta labels first), "" with neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    return "" if not region and not zone else f"{region}:\x00:{zone}"


def zone_state(ready: Sequence[str | None]) -> str:
    """ComputeZoneState over the Ready statuses of a zone's nodes (None: no Ready condition)."""
    good = sum(1 for s in ready if s == "True")
    bad = len(ready) - good
    if good == 0 and bad > 0:
        return FULL
    if bad > 2 and bad / (bad + good) >= UNHEALTHY_ZONE:
        return PARTIAL
    return NORMAL


def zone_qps(size: int, state: str) -> float:
    """setLimiterInZone: the NoExecute tainting rate of a zone in `state`."""
    if state == PARTIAL:
        return SECONDARY_EVICTION_QPS if size > LARGE_CLUSTER else 0.0
    return EVICTION_QPS


@dataclass
class Bucket:
    """flowcontrol's token bucket with burst 1 (EvictionRateLimiterBurst); qps 0 never accepts."""

    qps: float
    at: float  # when `tokens` was counted
    tokens: float = 1.0

    def try_accept(self, now: float) -> bool:
        if self.qps <= 0:
            return False
        self.tokens = min(1.0, self.tokens + (now - self.at) * self.qps)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def next_token(self, now: float) -> float | None:
        if self.qps <= 0:
            return None
        tokens = min(1.0, self.tokens + (now - self.at) * self.qps)
        return now if tokens >= 1.0 else now + (1.0 - tokens) / self.qps

    def swapped(self, qps: float, now: float) -> Bucket:
        """RateLimitedTimedQueue.SwapLimiter: a new bucket at `qps`, drained when this one was empty."""
        if qps == self.qps:
            return self
        if qps <= 0:
            return Bucket(0.0, now, 0.0)
        new = Bucket(qps, now)
        if not self.try_accept(now):
            new.try_accept(now)
        return new
