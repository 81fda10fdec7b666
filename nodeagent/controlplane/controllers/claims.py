"""The ResourceClaim controller (upstream pkg/controller/resourceclaim): claims from templates, and
their release when pods end.

One responsibility: keep claims in step with pods.
- A pod whose spec.resourceClaims[] names a resourceClaimTemplateName gets a generated claim:
  generateName `<pod>-<claim>-`, owned by the pod (controller=true), annotated
  resource.kubernetes.io/pod-claim-name, recorded in pod.status.resourceClaimStatuses, all in
  one store transaction. ResourceQuota (devices per class, claim count; see quota.py) is checked
  first; a refusal is kept as the pod's creation error (the scheduler shows it), recorded as a
  FailedResourceClaimCreation Event and retried when quota or claims change. The charges of
  every claim in a namespace are kept in its quotas' status.hard/status.used, as the quota
  admission does.
- When a pod ends (Succeeded/Failed) or is deleted, it leaves the reservedFor of its claims; a
  claim left with no consumer is deallocated (classic claims get deallocationRequested), and a
  generated claim whose pod is done is deleted (the store's GC removes those of deleted pods).

Synchronous core (the async driver is loop.py): `handle(event_type, obj)` records and queues
work, `sync_pending()` does it.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodeagent.controlplane import events, quota
from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.metrics import ControlPlaneMetrics
from nodeagent.errors import NodeAgentError, NotFound
from nodeagent.store import ObjectStore, Transaction
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

KINDS = ("Pod", "ResourceClaim", "ResourceQuota")
COMPONENT = "resource_claim"
GENERATE_NAME_BASE_MAX = 57
FAILED_CREATION = "FailedResourceClaimCreation"
RETRY_BASE = 0.005  # seconds: workqueue.DefaultTypedControllerRateLimiter's per-item exponential backoff
RETRY_MAX = 1000.0

Key = tuple[str, str]


def _key(obj: Mapping[str, Any]) -> Key:
    md = obj["metadata"]
    return (md.get("namespace") or "default", md["name"])


def _rv(obj: Mapping[str, Any]) -> int:
    return int(obj["metadata"].get("resourceVersion") or 0)


def _controller_owner(obj: Mapping[str, Any]) -> str:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "Pod":
            return str(ref.get("uid") or "")
    return ""


def generate_name(pod_name: str, claim_name: str) -> str:
    base = f"{pod_name}-{claim_name}"
    return base[:GENERATE_NAME_BASE_MAX] + "-"


class ClaimController:
    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        metrics: ControlPlaneMetrics | None = None,
        on_error: Callable[[Key], None] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.on_error = on_error
        """Called with the pod's key when its claims cannot be created (the scheduler reports it)."""
        self._retry_delays = Backoff(RETRY_BASE, RETRY_MAX)
        self._reset()

    def _reset(self) -> None:
        self.pods: dict[Key, Mapping[str, Any]] = {}
        self.pods_by_uid: dict[str, Key] = {}
        self.claims: dict[Key, Mapping[str, Any]] = {}
        self._owned: dict[str, set[Key]] = {}  # pod uid -> generated claims it owns
        self._reserved: dict[str, set[Key]] = {}  # pod uid -> claims reserved for it
        self._charges: dict[Key, dict[str, int]] = {}
        self._ns_usage: dict[str, dict[str, int]] = {}
        self.quotas: dict[Key, Mapping[str, Any]] = {}
        self.errors: dict[str, str] = {}  # pod uid -> claim creation error
        self._work: deque[tuple[str, Key]] = deque()
        self._queued: set[tuple[str, Key]] = set()
        # a failed claim or quota sync: tried again after a backoff (monotonic time, failures so far)
        self._retries: dict[tuple[str, Key], tuple[float, int]] = {}

    # --- feeding ---

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        self._reset()
        for obj in objs:
            self.handle("ADDED", obj)
        for key in list(self.claims):
            self._enqueue("claim", key)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        deleted = event_type == "DELETED"
        if kind == "Pod":
            self._pod(obj, deleted)
        elif kind == "ResourceClaim":
            self._claim(obj, deleted)
        elif kind == "ResourceQuota":
            key = _key(obj)
            if deleted:
                self.quotas.pop(key, None)
            else:
                self.quotas[key] = obj
                self._enqueue("quota", key)
            self._retry_namespace(key[0])

    def _enqueue(self, what: str, key: Key) -> None:
        item = (what, key)
        if item not in self._queued:
            self._queued.add(item)
            self._work.append(item)

    def _pod(self, obj: Mapping[str, Any], deleted: bool) -> None:
        key = _key(obj)
        uid = convert.pod_uid(obj)
        old = self.pods.get(key)
        if deleted:
            if old is not None and convert.pod_uid(old) == uid:
                del self.pods[key]
            self.pods_by_uid.pop(uid, None)
            self.errors.pop(uid, None)
            for ckey in self._reserved.get(uid, set()) | self._owned.get(uid, set()):
                self._enqueue("claim", ckey)
            return
        if old is not None and convert.pod_uid(old) == uid and _rv(obj) <= _rv(old):
            return
        self.pods[key] = obj
        self.pods_by_uid[uid] = key
        if convert.is_terminal(obj) or convert.is_deleting(obj):
            for ckey in self._reserved.get(uid, set()) | self._owned.get(uid, set()):
                self._enqueue("claim", ckey)
        else:
            self._enqueue("pod", key)

    def _claim(self, obj: Mapping[str, Any], deleted: bool) -> None:
        key = _key(obj)
        old = self.claims.get(key)
        if not deleted and old is not None and _rv(obj) <= _rv(old):
            return
        if old is not None:
            for ref in convert.reserved_for(old):
                self._reserved.get(str(ref.get("uid")), set()).discard(key)
            owner = _controller_owner(old)
            if owner:
                self._owned.get(owner, set()).discard(key)
        if deleted:
            self.claims.pop(key, None)
            charge = self._charges.pop(key, None)
            if charge is not None:
                usage = self._ns_usage.setdefault(key[0], {})
                for name, n in charge.items():
                    usage[name] = usage.get(name, 0) - n
                self._usage_changed(key[0])
            self._retry_namespace(key[0])
            return
        self.claims[key] = obj
        if key not in self._charges:
            charge = quota.claim_charge(obj)
            self._charges[key] = charge
            usage = self._ns_usage.setdefault(key[0], {})
            for name, n in charge.items():
                usage[name] = usage.get(name, 0) + n
            self._usage_changed(key[0])
        for ref in convert.reserved_for(obj):
            self._reserved.setdefault(str(ref.get("uid")), set()).add(key)
        owner = _controller_owner(obj)
        if owner:
            self._owned.setdefault(owner, set()).add(key)
        if self._needs_cleanup(obj):
            self._enqueue("claim", key)

    def _usage_changed(self, namespace: str) -> None:
        for qkey in self.quotas:
            if qkey[0] == namespace:
                self._enqueue("quota", qkey)

    def _retry_namespace(self, namespace: str) -> None:
        for uid in list(self.errors):
            pkey = self.pods_by_uid.get(uid)
            if pkey is not None and pkey[0] == namespace:
                self._enqueue("pod", pkey)

    def _pod_done(self, uid: str) -> bool:
        key = self.pods_by_uid.get(uid)
        if key is None:
            return True
        pod = self.pods.get(key)
        return pod is None or convert.is_terminal(pod)

    def _needs_cleanup(self, claim: Mapping[str, Any]) -> bool:
        for ref in convert.reserved_for(claim):
            if ref.get("resource", "pods") == "pods" and not ref.get("apiGroup") and self._pod_done(
                    str(ref.get("uid"))):
                return True
        if convert.is_deleting(claim) and not convert.reserved_for(claim) and convert.CLAIM_FINALIZER in (
                claim["metadata"].get("finalizers") or ()):
            return True  # deleted and unused: its finalizer goes
        owner = _controller_owner(claim)
        return bool(owner) and self._pod_done(owner) and not convert.reserved_for(claim)

    # --- work ---

    def pending(self) -> int:
        return len(self._work)

    def creation_error(self, pod_uid: str) -> str | None:
        return self.errors.get(pod_uid)

    def next_retry(self) -> float | None:
        """When the earliest failed sync is due again (monotonic), None when none failed."""
        return min((at for at, _ in self._retries.values()), default=None)

    def _requeue_due(self) -> None:
        now = self.clock.monotonic()
        for item, (at, _) in list(self._retries.items()):
            if at <= now:
                self._enqueue(*item)

    def _failed(self, item: tuple[str, Key], err: NodeAgentError) -> None:
        """The workqueue's rate limiter: the item again after 5ms, 10ms, ... up to 1000s."""
        failures = self._retries.get(item, (0.0, 0))[1] + 1
        delay = self._retry_delays.delay(failures)
        self._retries[item] = (self.clock.monotonic() + delay, failures)
        logger.warning("claim controller: sync failed %s=%s/%s failures=%d retry_in=%.3fs err=%s",
                       item[0], item[1][0], item[1][1], failures, delay, err)

    def sync_pending(self, limit: int = 0) -> int:
        """Do queued work (at most `limit` items when > 0); the number of items done. Pods in a
        row share one store transaction (one commit for a burst of new pods), each pod's writes
        all-or-nothing inside it. A claim or quota sync that fails is queued again after a
        backoff (upstream's controller returns the error to its rate-limited workqueue)."""
        if self._retries:
            self._requeue_due()
        done = 0
        while self._work and (limit <= 0 or done < limit):
            if self._work[0][0] == "pod":
                keys: list[Key] = []
                while self._work and self._work[0][0] == "pod" and (limit <= 0 or done + len(keys) < limit):
                    item = self._work.popleft()
                    self._queued.discard(item)
                    keys.append(item[1])
                self._sync_pods(keys)
                done += len(keys)
                continue
            item = self._work.popleft()
            self._queued.discard(item)
            try:
                if item[0] == "quota":
                    self.sync_quota(item[1])
                else:
                    self.sync_claim(item[1])
            except NodeAgentError as err:
                self._failed(item, err)
            else:
                self._retries.pop(item, None)
            done += 1
        return done

    def _apply_written(self, objs: Sequence[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.handle("MODIFIED", obj)

    def _sync_pods(self, keys: Sequence[Key]) -> None:
        """Generate the missing claims of these pods in one transaction; a pod whose writes
        fail is rolled back alone and logged, the others commit."""
        outcomes: list[tuple[Key, str, str, list[Mapping[str, Any]]]] = []  # key, pod uid, error, written
        try:
            with self.store.transaction(savepoints=False, manager="kube-controller-manager") as tx:
                for key in keys:
                    written: list[Mapping[str, Any]] = []
                    try:
                        with tx.group():
                            found = self._sync_pod_in(tx, key, written)
                    except NodeAgentError as err:
                        logger.warning("claim controller: sync failed pod=%s/%s err=%s", key[0], key[1], err)
                        self._forget_created(written)
                        continue
                    if found is not None:
                        outcomes.append((key, found[0], found[1], written))
        except NodeAgentError as err:
            logger.warning("claim controller: sync of %d pods failed err=%s", len(keys), err)
            for _, _, _, written in outcomes:
                self._forget_created(written)
            return
        for key, uid, error, written in outcomes:
            if error:
                self.errors[uid] = error
                if self.on_error is not None:
                    self.on_error(key)
            else:
                self.errors.pop(uid, None)
            self._apply_written(written)

    def _forget_created(self, written: Sequence[Mapping[str, Any]]) -> None:
        """Claims created in a rolled-back write were counted at once (for the next claim's
        quota check): take them out again, or the pod would later name a claim that never was."""
        for obj in written:
            if obj.get("kind") == "ResourceClaim":
                self._claim(obj, True)

    def _sync_pod_in(
        self, tx: Transaction, key: Key, written: list[Mapping[str, Any]]
    ) -> tuple[str, str] | None:
        """The pod's missing claims and its resourceClaimStatuses, written in `tx`; (pod uid,
        creation error or "") when there was something to do, None when not."""
        pod = self.pods.get(key)
        if pod is None or convert.is_terminal(pod) or convert.is_deleting(pod):
            return None
        uid = convert.pod_uid(pod)
        missing = [
            (e.get("name", ""), e["resourceClaimTemplateName"])
            for e in (pod.get("spec") or {}).get("resourceClaims") or ()
            if e.get("resourceClaimTemplateName")
            and not any(s.get("name") == e.get("name")
                        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ())
        ]
        if not missing:
            self.errors.pop(uid, None)
            return None
        error = ""
        stored = tx.peek("Pod", key[0], key[1])
        if stored is None or convert.pod_uid(stored) != uid:
            return None
        cur = dict(stored)  # shared below the top level: only a new status is set on it
        status = dict(cur.get("status") or {})
        statuses = list(status.get("resourceClaimStatuses") or [])
        for pc, template_name in missing:
            if any(s.get("name") == pc for s in statuses):
                continue
            name, error = self._create_claim(tx, cur, pc, template_name, written)
            if not name:
                break
            statuses.append({"name": pc, "resourceClaimName": name})
        if len(statuses) != len(status.get("resourceClaimStatuses") or []):
            status["resourceClaimStatuses"] = statuses
            cur["status"] = status
            written.append(tx.update_status(cur, copy=False))
        if error:
            events.record(tx, cur, FAILED_CREATION, error, now=self.clock.now(), component=COMPONENT)
        return uid, error

    def _existing(self, pod: Mapping[str, Any], pod_claim: str) -> str:
        uid = convert.pod_uid(pod)
        for ckey in sorted(self._owned.get(uid, set())):
            claim = self.claims.get(ckey)
            annotations = (claim or {}).get("metadata", {}).get("annotations") or {}
            if claim is not None and annotations.get(convert.POD_CLAIM_ANNOTATION) == pod_claim:
                return ckey[1]
        return ""

    def _create_claim(
        self, tx: Transaction, pod: Mapping[str, Any], pod_claim: str, template_name: str,
        written: list[Mapping[str, Any]],
    ) -> tuple[str, str]:
        """(claim name, "") or ("", error)."""
        existing = self._existing(pod, pod_claim)
        if existing:
            return existing, ""
        md = pod["metadata"]
        ns = md.get("namespace") or "default"
        template = tx.peek("ResourceClaimTemplate", ns, template_name)  # read only
        if template is None:
            return "", f"PodResourceClaim {pod_claim}: resourceclaimtemplate \"{template_name}\" not found"
        tmd = (template.get("spec") or {}).get("metadata") or {}
        annotations = dict(tmd.get("annotations") or {})
        annotations[convert.POD_CLAIM_ANNOTATION] = pod_claim
        claim: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "generateName": generate_name(md["name"], pod_claim),
                "namespace": ns,
                "annotations": annotations,
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"],
                    "controller": True,  # no blockOwnerDeletion: upstream's handleClaim sets none
                }],
            },
            "spec": (template.get("spec") or {}).get("spec") or {},
        }
        if tmd.get("labels"):
            claim["metadata"]["labels"] = dict(tmd["labels"])
        quotas = [q for k, q in sorted(self.quotas.items()) if k[0] == ns]
        if quotas:
            refused = quota.check(quota.claim_charge(claim), self._ns_usage.get(ns, {}), quotas)
            if refused:
                if self.metrics is not None:
                    self.metrics.claim_create_failures.inc()
                return "", (f"PodResourceClaim {pod_claim}: resourceclaims.resource.k8s.io is forbidden: "
                            f"{refused}")
        if self.metrics is not None:
            self.metrics.claim_creates.inc()
        try:
            created = tx.create(claim, copy=False)  # kept read-only, as watch events are
        except NodeAgentError as err:
            if self.metrics is not None:
                self.metrics.claim_create_failures.inc()
            return "", f"PodResourceClaim {pod_claim}: {err}"
        written.append(created)
        self._claim(created, False)  # count it at once for the next claim's quota check
        return created["metadata"]["name"], ""

    def sync_claim(self, key: Key) -> None:
        written: list[Mapping[str, Any]] = []
        deleted: Mapping[str, Any] | None = None
        with self.store.transaction(savepoints=False, manager="kube-controller-manager") as tx:
            cur = tx.try_get("ResourceClaim", *key)
            if cur is None:
                return
            reserved = convert.reserved_for(cur)
            keep = [
                r for r in reserved
                if r.get("resource", "pods") != "pods" or r.get("apiGroup") or not self._pod_done(str(r.get("uid")))
            ]
            status = dict(cur.get("status") or {})
            protected = convert.CLAIM_FINALIZER in (cur["metadata"].get("finalizers") or [])
            if len(keep) < len(reserved):
                if keep:
                    status["reservedFor"] = keep
                else:
                    status.pop("reservedFor", None)
                    alloc = status.get("allocation") or {}
                    if alloc.get("controller"):
                        status["deallocationRequested"] = True
                    else:
                        status.pop("allocation", None)
                cur["status"] = status
                cur = tx.update_status(cur)
                written.append(cur)
                if protected and not (cur.get("status") or {}).get("allocation"):
                    cur = self._unprotect(tx, cur)  # deallocated: the finalizer goes too
                    written.append(cur)
            elif protected and convert.is_deleting(cur) and not keep:
                if status.get("allocation"):  # deleted while allocated and unused: deallocate first
                    status.pop("allocation")
                    cur["status"] = status
                    cur = tx.update_status(cur)
                    written.append(cur)
                cur = self._unprotect(tx, cur)  # whether allocated or not: unblock the removal
                written.append(cur)
            owner = _controller_owner(cur)
            if owner and self._pod_done(owner) and not convert.reserved_for(cur) and not convert.is_deleting(cur):
                with contextlib.suppress(NotFound):
                    deleted = tx.delete("ResourceClaim", *key, uid=cur["metadata"]["uid"])
        self._apply_written(written)
        if deleted is not None:
            self.handle("DELETED" if not deleted["metadata"].get("deletionTimestamp") else "MODIFIED", deleted)

    @staticmethod
    def _unprotect(tx: Transaction, claim: Mapping[str, Any]) -> dict[str, Any]:
        """The claim without CLAIM_FINALIZER, in a normal update (upstream's syncClaim)."""
        cur = dict(claim)
        md = {k: v for k, v in cur["metadata"].items() if k != "finalizers"}
        rest = [f for f in cur["metadata"].get("finalizers") or () if f != convert.CLAIM_FINALIZER]
        if rest:
            md["finalizers"] = rest
        cur["metadata"] = md
        return dict(tx.update(cur))

    def sync_quota(self, key: Key) -> None:
        """status.hard and status.used of a ResourceQuota, as the quota admission keeps them:
        what every claim in the namespace is charged (see quota.py)."""
        q = self.quotas.get(key)
        if q is None:
            return
        mine = quota.status_used(q, self._ns_usage.get(key[0], {}))
        if not mine["hard"]:
            return  # nothing this evaluator tracks (cpu, pods, ... are the resourcequota controller's)
        status = q.get("status") or {}
        # the device names' entries only: the rest of the status is the resourcequota controller's
        want = {part: {**(status.get(part) or {}), **mine[part]} for part in ("hard", "used")}
        if status == want:
            return
        with self.store.transaction(savepoints=False, manager="kube-controller-manager") as tx:
            cur = tx.try_get("ResourceQuota", *key)
            if cur is None:
                return
            cur["status"] = {part: {**((cur.get("status") or {}).get(part) or {}), **mine[part]}
                             for part in ("hard", "used")}
            written = tx.update_status(cur)
        self.handle("MODIFIED", written)

    # --- state for metrics ---

    def quota_usage(self, namespace: str) -> dict[str, int]:
        return dict(self._ns_usage.get(namespace, {}))
