"""The device taint eviction controller (KEP-5055; upstream pkg/controller/devicetainteviction).

One responsibility: evict, and say so in the DeviceTaintRules. A NoExecute taint on an allocated
device, published in its ResourceSlice or put there by a DeviceTaintRule that selects it,
evicts the pods the claim is reserved for unless a NoExecute toleration of the allocation
result tolerates it forever (the tolerations are copied into the result at allocation time).
With tolerationSeconds the eviction happens that long after the taint's timeAdded (the API
server stamps it; a taint without one counts from when the controller first saw it); the
smallest such time of a claim's taints counts. An evicted pod gets the DisruptionTarget
condition (reason DeletionByDeviceTaintManager), a DeviceTaintManagerEviction event and is
deleted, as upstream does.

Rule status, as upstream's maybeUpdateRuleStatus: each rule gets the EvictionInProgress
condition at once when created or when its spec changes, and again (at most every 10 s, the
ruleStatusPeriod) while its pods are pending eviction or after it evicted some: True with
"N pods need to be evicted in M namespaces." while pods wait, False with reason Completed or
NotStarted otherwise; an effect None rule gets a one-off preview of what NoExecute would do
(NoEffect), NoSchedule gets OtherEffect; the count of pods evicted since the controller
started is appended.

Cheap when nothing is tainted (the usual case): events only update indexes, and the pass over
the claims runs only while some device or rule carries a NoExecute taint. Synchronous; the async
driver is loop.py (a component with load/handle/work/deadline/idle). Clock injected.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodeagent.controlplane import events
from nodeagent.controlplane.allocator.taints import NO_EXECUTE, Taint, taint_eviction_delay
from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.convert.taints import results, taint, toleration
from nodeagent.controlplane.taint_rules import KIND as RULE_KIND
from nodeagent.controlplane.taint_rules import Rule, rule
from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("ResourceSlice", "ResourceClaim", "Pod", RULE_KIND)
COMPONENT = "device-taint-eviction-controller"
REASON = "DeviceTaintManagerEviction"
MESSAGE = "Marking for deletion"
CONDITION_REASON = "DeletionByDeviceTaintManager"
CONDITION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"
EVICTION_IN_PROGRESS = "EvictionInProgress"
STATUS_PERIOD = 10.0
"""upstream's ruleStatusPeriod: the shortest time between two status updates of one rule."""

DeviceKey = tuple[str, str, str]


@dataclass
class _Verdict:
    """What one pass found for a claim: when its pods go (monotonic, None: never) and which
    rules (by name) are among the reasons."""

    due: float | None = None
    rules: set[str] = field(default_factory=set)


def _parse_time(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many.format(n=n)


class EvictionController:
    def __init__(self, store: ObjectStore, clock: Clock, *, rules: bool = True) -> None:
        self.store = store
        self.clock = clock
        self.rules_enabled = rules  # DRADeviceTaintRules: without it rules are neither applied nor reported
        self._slice_taints: dict[str, dict[DeviceKey, tuple[Taint, ...]]] = {}
        self._slice_devices: dict[str, tuple[DeviceKey, ...]] = {}
        self._tainted: dict[DeviceKey, tuple[Taint, ...]] = {}
        self._claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._pods: dict[str, tuple[str, str]] = {}  # uid -> (namespace, name)
        self._seen: dict[tuple[DeviceKey, str, str], float] = {}  # (device, taint key, rule) -> first seen
        self._rules: dict[str, Mapping[str, Any]] = {}
        self._parsed: dict[str, Rule] = {}
        self._evicted: dict[str, int] = {}  # rule uid -> pods evicted for it since start
        self._status_due: dict[str, float] = {}  # rule name -> monotonic time of its next status check
        self._dirty = False
        self._due: float | None = None

    # --- feeding ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self._slice_taints.clear()
        self._slice_devices.clear()
        self._tainted.clear()
        self._claims.clear()
        self._pods.clear()
        self._rules.clear()
        self._parsed.clear()
        for obj in objs:
            self.handle("ADDED", obj)
        self._dirty = True

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
                self._dirty = self._dirty or bool(self._tainted) or bool(self._evicting())
        elif kind == "Pod":
            uid = str(md.get("uid") or "")
            if deleted or convert.is_terminal(obj):
                self._pods.pop(uid, None)
            else:
                self._pods[uid] = (md.get("namespace") or "default", md["name"])
        elif kind == RULE_KIND and self.rules_enabled:
            self._rule(md["name"], None if deleted else obj)

    def _slice(self, name: str, obj: Mapping[str, Any] | None) -> None:
        found: dict[DeviceKey, tuple[Taint, ...]] = {}
        devices: list[DeviceKey] = []
        if obj is not None:
            spec = obj.get("spec") or {}
            driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
            for dev in spec.get("devices") or ():
                devices.append((driver, pool, dev["name"]))
                taints = tuple(taint(t) for t in dev.get("taints") or () if t.get("effect") == NO_EXECUTE)
                if taints:
                    found[(driver, pool, dev["name"])] = taints
        self._slice_devices.pop(name, None)
        if devices:
            self._slice_devices[name] = tuple(devices)
        old = self._slice_taints.pop(name, {})
        if found:
            self._slice_taints[name] = found
        if old or found:
            self._tainted = {k: v for s in self._slice_taints.values() for k, v in s.items()}
            self._dirty = True

    def _rule(self, name: str, obj: Mapping[str, Any] | None) -> None:
        old = self._rules.get(name)
        if obj is None:
            self._rules.pop(name, None)
            self._parsed.pop(name, None)
            self._status_due.pop(name, None)
            if old is not None:
                self._evicted.pop(str(old["metadata"].get("uid") or ""), None)
                self._dirty = True
            return
        self._rules[name] = obj
        self._parsed[name] = rule(obj)
        if old is None or old["metadata"].get("uid") != obj["metadata"].get("uid") or \
                old.get("spec") != obj.get("spec"):
            self._status_due[name] = self.clock.monotonic()  # feedback at once, before evicting
            self._dirty = True

    def _evicting(self) -> list[Rule]:
        return [r for r in self._parsed.values() if r.taint.effect == NO_EXECUTE]

    # --- work ---

    def deadline(self) -> float | None:
        if self._dirty:
            return self.clock.monotonic()
        dues = [d for d in (self._due, *self._status_due.values()) if d is not None]
        return min(dues) if dues else None

    def idle(self) -> bool:
        due = self.deadline()
        return due is None or due > self.clock.monotonic()

    def work(self, limit: int) -> int:
        """Due rule status updates, then one pass over the allocated claims when something changed
        or a delay ended; returns the pods evicted."""
        now = self.clock.monotonic()
        for name in [n for n, due in self._status_due.items() if due <= now]:
            self._update_status(name, now)
        if not self._dirty and (self._due is None or self._due > now):
            return 0
        self._dirty = False
        self._due = None
        evicting = self._evicting()
        if not self._tainted and not evicting:
            self._seen.clear()
            return 0
        evict: dict[str, tuple[tuple[str, str], set[str]]] = {}
        live: set[tuple[DeviceKey, str, str]] = set()
        for claim in self._claims.values():
            verdict = self._verdict(claim, self._tainted, evicting, live, now)
            if verdict.due is None:
                continue
            if verdict.due > now:
                self._due = verdict.due if self._due is None else min(self._due, verdict.due)
            for uid in self._consumers(claim):
                if verdict.due <= now:
                    entry = evict.setdefault(uid, (self._pods[uid], set()))
                    entry[1].update(verdict.rules)
                for name in verdict.rules:  # pods pending eviction: report progress later
                    self._status_due.setdefault(name, now + STATUS_PERIOD)
        self._seen = {k: v for k, v in self._seen.items() if k in live}
        done = 0
        for uid, ((ns, name), reasons) in evict.items():
            if done >= limit:
                self._dirty = True
                break
            if self._evict(ns, name, uid):
                for rname in reasons:
                    ruid = str(self._rules[rname]["metadata"].get("uid") or "") if rname in self._rules else ""
                    self._evicted[ruid] = self._evicted.get(ruid, 0) + 1
                    self._status_due[rname] = min(self._status_due.get(rname, now + STATUS_PERIOD),
                                                  now + STATUS_PERIOD)
            self._pods.pop(uid, None)
            done += 1
        return done

    def _consumers(self, claim: Mapping[str, Any]) -> list[str]:
        return [str(ref.get("uid")) for ref in convert.reserved_for(claim)
                if ref.get("resource") == "pods" and str(ref.get("uid") or "") in self._pods]

    def _verdict(self, claim: Mapping[str, Any], tainted: Mapping[DeviceKey, tuple[Taint, ...]],
                 evicting: Sequence[Rule], live: set[tuple[DeviceKey, str, str]], mono: float) -> _Verdict:
        """upstream's claimEvictionTime: the earliest eviction time of the claim's NoExecute
        taints that no NoExecute toleration of its result tolerates forever; `mono` is the
        monotonic time of the pass (one reading, so an overdue eviction compares <= it)."""
        out = _Verdict()
        wall = self.clock.now()
        for result in results(claim):
            dev = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            found = [(t, "") for t in tainted.get(dev, ())]
            found += [(r.taint, r.name) for r in evicting if r.matches(*dev)]
            if not found:
                continue
            tolerations = [toleration(t) for t in result.get("tolerations") or ()]
            for t, rule_name in found:
                delay = taint_eviction_delay(t, tolerations)
                if delay is None:
                    continue
                seen_key = (dev, t.key, rule_name)
                live.add(seen_key)
                added = _parse_time(t.time_added) if t.time_added else None
                if added is None:
                    added = self._seen.setdefault(seen_key, wall)
                due = mono + max(0.0, added + delay - wall)
                out.due = due if out.due is None else min(out.due, due)
                if rule_name:
                    out.rules.add(rule_name)
        return out

    def _evict(self, ns: str, name: str, uid: str) -> bool:
        try:
            with self.store.transaction(savepoints=False, manager="kube-controller-manager") as tx:
                pod = tx.try_get("Pod", ns, name)
                if pod is None or pod["metadata"].get("uid") != uid or convert.is_deleting(pod):
                    return False
                status = dict(pod.get("status") or {})
                if convert.set_condition(status, {
                        "type": "DisruptionTarget", "status": "True", "reason": CONDITION_REASON,
                        "message": CONDITION_MESSAGE, "lastTransitionTime": rfc3339(self.clock.now())}):
                    pod["status"] = status
                    pod = tx.update_status(pod)
                events.record(tx, pod, REASON, MESSAGE, now=self.clock.now(), component=COMPONENT,
                              type_=events.NORMAL)
                tx.delete("Pod", ns, name, uid=uid)
        except NodeAgentError as err:
            logger.warning("could not evict pod=%s/%s err=%s", ns, name, err)
            return False
        logger.info("evicted pod=%s/%s for a NoExecute device taint", ns, name)
        return True

    # --- rule status ---

    def _pending(self, r: Rule) -> tuple[int, int]:
        """(pods, namespaces) that `r` (as NoExecute) makes wait for eviction or evicts now."""
        evicting = [r] if r.taint.effect == NO_EXECUTE else [Rule(r.name, Taint(
            r.taint.key, NO_EXECUTE, r.taint.value, r.taint.time_added), r.driver, r.pool, r.device, r.selects)]
        pods: set[str] = set()
        namespaces: set[str] = set()
        for claim in self._claims.values():
            if r.name not in self._verdict(claim, {}, evicting, set(), self.clock.monotonic()).rules:
                continue
            for uid in self._consumers(claim):
                pods.add(uid)
                namespaces.add(self._pods[uid][0])
        return len(pods), len(namespaces)

    def condition(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """The EvictionInProgress condition for a rule now (lastTransitionTime left out)."""
        r = rule(obj)
        effect = r.taint.effect
        cond: dict[str, Any] = {"type": EVICTION_IN_PROGRESS, "status": "False", "reason": "OtherEffect",
                                "message": "Eviction only happens for the NoExecute effect.",
                                "observedGeneration": int(obj["metadata"].get("generation") or 1)}
        evicted = self._evicted.get(str(obj["metadata"].get("uid") or ""), 0)
        if effect == NO_EXECUTE:
            pods, namespaces = self._pending(r)
            cond["message"] = ""
            if pods:
                cond["status"], cond["reason"] = "True", "PodsPendingEviction"
                cond["message"] = (_plural(pods, "1 pod needs", "{n} pods need") + " to be evicted in "
                                   + _plural(namespaces, "1 namespace.", "{n} different namespaces."))
            else:
                cond["reason"] = "Completed" if evicted else "NotStarted"
        elif effect == "None":
            pods, namespaces = self._pending(r)
            published = sum(1 for devs in self._slice_devices.values() for d in devs if r.matches(*d))
            allocated = sum(1 for c in self._claims.values() for res in results(c)
                            if r.matches(str(res.get("driver")), str(res.get("pool")), str(res.get("device"))))
            cond["reason"] = "NoEffect"
            cond["message"] = (
                _plural(published, "1 published device selected. ", "{n} published devices selected. ")
                + _plural(allocated, "1 allocated device selected. ", "{n} allocated devices selected. ")
                + _plural(pods, "1 pod would be evicted in ", "{n} pods would be evicted in ")
                + _plural(namespaces, "1 namespace ", "{n} different namespaces ")
                + "if the effect was NoExecute. This information will not be updated again. Recreate the "
                  "DeviceTaintRule to trigger an update.")
        if evicted:
            cond["message"] += (" " if cond["message"] else "") + _plural(
                evicted, "1 pod ", "{n} pods ") + "evicted since starting the controller."
        return cond

    def _update_status(self, name: str, now: float) -> None:
        del self._status_due[name]
        obj = self._rules.get(name)
        if obj is None:
            return
        existing = next((c for c in (obj.get("status") or {}).get("conditions") or ()
                         if c.get("type") == EVICTION_IN_PROGRESS), None)
        generation = int(obj["metadata"].get("generation") or 1)
        if existing is not None and int(existing.get("observedGeneration") or 0) == generation:
            since = self.clock.now() - (_parse_time(str(existing.get("lastTransitionTime") or "")) or 0.0)
            if since < STATUS_PERIOD:
                self._status_due[name] = now + STATUS_PERIOD - since
                return
        cond = self.condition(obj)
        if existing is not None and {k: existing.get(k) for k in cond} == cond:
            return
        cond["lastTransitionTime"] = rfc3339(self.clock.now())
        try:
            with self.store.transaction(savepoints=False, manager="kube-controller-manager") as tx:
                cur = tx.try_get(RULE_KIND, "", name)
                if cur is None or cur["metadata"].get("uid") != obj["metadata"].get("uid"):
                    return
                status = dict(cur.get("status") or {})
                others = [c for c in status.get("conditions") or () if c.get("type") != EVICTION_IN_PROGRESS]
                status["conditions"] = [*others, cond]
                cur["status"] = status
                self._rules[name] = tx.update_status(cur)
        except NodeAgentError as err:
            logger.warning("could not update status of devicetaintrule=%s err=%s", name, err)
            self._status_due[name] = now + STATUS_PERIOD
