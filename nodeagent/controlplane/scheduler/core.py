"""The scheduler: one pending pod at a time, onto a Ready node where its requests and claims fit.

One responsibility: decide and bind. For a pod (from the queue) it resolves its claims,
filters the nodes (readiness, allocatable minus the bound pods' requests, the node selectors of
claims already allocated, the structured allocator for the unallocated claims), lets the
classic-DRA port weigh in for claims with a controllerName, scores the feasible nodes (best
firstAvailable rank first, then least allocated, then name), and binds in one store
transaction: every claim's allocation and reservedFor, the pod's spec.nodeName and its
PodScheduled condition. When nothing fits the pod gets PodScheduled=False/Unschedulable with a
per-node explanation and a FailedScheduling Event, and waits in the queue for a change.

Synchronous on purpose (the async driver is loop.py): `handle(event_type, obj)` feeds the
cache and the queue, `schedule_next()` runs one attempt. Allocation outcomes are memoized per
(node, device state, claim shapes), so the hundredth identical pod costs dict lookups on the
nodes nothing changed on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from nodeagent.clock import Clock
from nodeagent.controlplane import allocator as model
from nodeagent.controlplane import convert, events
from nodeagent.controlplane.metrics import ERROR, SCHEDULED, UNSCHEDULABLE, ControlPlaneMetrics
from nodeagent.controlplane.scheduler import placement
from nodeagent.controlplane.scheduler.cache import PODS, ClusterCache, NodeEntry
from nodeagent.controlplane.scheduler.queue import SchedulingQueue
from nodeagent.errors import Conflict, NodeAgentError, NotFound, ValidationError
from nodeagent.objects.resource import validate_pod_claim_references
from nodeagent.objects.resource_common import node_selector_matches
from nodeagent.store import ObjectStore, Transaction
from nodeagent.store.meta import rfc3339

logger = logging.getLogger(__name__)

COMPONENT = "default-scheduler"
SCHEDULER_NAME = "default-scheduler"
SKIPPED = "skipped"
GATED = "gated"
MAX_EXPLAINED_NODES = 50
MAX_REASON_GROUPS = 10


class ClassicDecision(Protocol):
    """What the classic-DRA module answers (nodeagent.controlplane.classic.api.ClassicDecision)."""

    @property
    def ready(self) -> bool: ...

    @property
    def node(self) -> str | None: ...

    @property
    def message(self) -> str: ...


class ClassicPort(Protocol):
    """The classic-DRA (KEP-3063) negotiation, as the scheduler uses it."""

    def step(
        self, pod: Mapping[str, Any], claims: Sequence[Mapping[str, Any]], feasible_nodes: Sequence[str]
    ) -> ClassicDecision: ...

    def forget(self, pod: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class SchedulerOptions:
    nodes_to_score: int = 100
    allocation_timeout: float = 10.0
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    prioritized_list: bool = True  # the DRAPrioritizedList feature gate
    scheduler_name: str = SCHEDULER_NAME


@dataclass(frozen=True)
class Attempt:
    key: tuple[str, str]
    result: str  # scheduled | unschedulable | error | gated | skipped
    node: str = ""
    message: str = ""


class _Candidate(NamedTuple):
    """A feasible node, ranked by best firstAvailable rank, then preferred node affinity (higher
    weight first), then least allocated, then name."""

    score: int
    preference: int
    utilization: float
    name: str
    outcome: model.AllocationOutcome | None


@dataclass
class _Resolved:
    objs: list[Mapping[str, Any]]  # ResourceClaim objects, in pod order
    pod_names: list[str]  # pod claim names, parallel to objs
    gate: str = ""  # waiting for a claim to exist
    error: str = ""  # cannot be scheduled as is


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def failure_message(total: int, reasons: Mapping[str, str]) -> str:
    """`0/3 nodes are available: node-1: Insufficient cpu; node-3: claim gpu: ...` with nodes that
    share a reason grouped, so a large cluster still gives a readable line."""
    groups: dict[str, list[str]] = {}
    for node, reason in sorted(reasons.items()):
        groups.setdefault(reason, []).append(node)
    parts = []
    for reason, nodes in sorted(groups.items(), key=lambda g: (-len(g[1]), g[1][0]))[:MAX_REASON_GROUPS]:
        shown = ", ".join(nodes[:3]) + (f" (+{len(nodes) - 3} more)" if len(nodes) > 3 else "")
        parts.append(f"{shown}: {reason}")
    if len(groups) > MAX_REASON_GROUPS:
        parts.append(f"{len(groups) - MAX_REASON_GROUPS} more reasons")
    head = f"0/{_plural(total, 'node')} are available" if total != 1 else "0/1 nodes are available"
    return f"{head}: " + "; ".join(parts) + "." if parts else f"{head}."


def _rotation(bits: int, start: int, n: int) -> Iterator[int]:
    """The indexes of the set bits of `bits` (< n), from `start` round to `start - 1`."""
    high = bits >> start << start
    for part in (high, bits & ((1 << start) - 1)):
        while part:
            low = part & -part
            yield low.bit_length() - 1
            part ^= low


@dataclass
class _SkipSet:
    """Per pod shape: the nodes (bits by index in the sorted node list) known not to fit at their
    current version, so a pass over the nodes steps over them instead of probing each one's
    cached result. Cleared per node from the cache's change log; reset when the node list or
    the log moved on."""

    mask: int = 0
    seen: int = 0  # position in the cache's change log
    epoch: int = -1  # the node list it indexes

    def open(self, n: int) -> int:
        """Bits of the nodes to look at."""
        return ((1 << n) - 1) & ~self.mask


class Scheduler:
    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        metrics: ControlPlaneMetrics | None = None,
        options: SchedulerOptions | None = None,
        *,
        classic: ClassicPort | None = None,
        claim_errors: Callable[[str], str | None] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.options = options or SchedulerOptions()
        self.classic = classic
        self.claim_errors = claim_errors
        self.cache = ClusterCache(clock)
        self.cache.listeners.append(self._changed)
        self.queue = SchedulingQueue(self.options.initial_backoff, self.options.max_backoff)
        self._node_names: list[str] | None = None
        self._next_start = 0
        self._waiting_on: dict[tuple[str, str], set[tuple[str, str]]] = {}  # claim key -> pod keys
        self._signatures: dict[str, tuple[int, str]] = {}
        # Pod shapes interned to small ints: the per-node equivalence cache is probed ~100 times
        # per pod, and hashing the nested shape tuple on every probe was the loop's main cost.
        self._shape_ids: dict[Any, int] = {}
        self._skips: dict[int, _SkipSet] = {}
        self._node_epoch = 0  # bumped whenever the node list is rebuilt
        self._node_index: dict[str, int] = {}

    # --- feeding ---------------------------------------------------------------------------------

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        """Initial list (or a relist after RESYNC): rebuild the cache, queue every pod that needs work."""
        self.cache.reset()
        self._skips.clear()  # the cache's change log starts again
        self.cache.listeners.append(self._changed)
        self._node_names = None
        for obj in objs:
            self.cache.apply("ADDED", obj)

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        if obj.get("kind") == "PodSchedulingContext":
            # classic DRA: the driver controllers answered; the pod of the same name may go on
            key = (obj["metadata"].get("namespace") or "default", obj["metadata"]["name"])
            entry = self.cache.pods.get(key)
            if entry is not None and self._wants(entry.obj):
                self.queue.add(key, self.clock.monotonic())
            return
        self.cache.apply(event_type, obj)

    def _changed(
        self, kind: str, name: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
    ) -> None:
        now = self.clock.monotonic()
        if kind == "Pod":
            obj = new or old
            assert obj is not None
            key = convert.pod_key(obj)
            if new is not None and self._wants(new):
                self._index_waits(key, new)
                if self._ungenerated(new):
                    self.queue.gate(key, now)  # the claim controller's status update brings it back
                else:
                    self.queue.add(key, now, int((new.get("spec") or {}).get("priority") or 0))
                return
            if key in self.queue:
                self.queue.done(key)
            if new is None and old is not None:
                for _, cname in convert.pod_claim_names(old):
                    waiting = self._waiting_on.get((key[0], cname or ""))
                    if waiting is not None:
                        waiting.discard(key)
                        if not waiting:
                            del self._waiting_on[(key[0], cname or "")]
                if self.classic is not None:
                    self.classic.forget(old)
            was_active = old is not None and convert.node_name_of(old) and not convert.is_terminal(old)
            if was_active and (new is None or convert.is_terminal(new)):
                self.queue.move_unschedulable(now)  # resources were freed
            return
        if kind == "ResourceClaim":
            obj = new or old
            assert obj is not None
            ckey = (obj["metadata"].get("namespace") or "default", name)
            waiting = self._waiting_on.get(ckey)
            if waiting:
                for pkey in list(waiting):
                    entry = self.cache.pods.get(pkey)
                    if entry is not None and self._wants(entry.obj):
                        self.queue.add(pkey, now)
            freed = new is None or (
                old is not None
                and (
                    (convert.is_allocated(old) and not convert.is_allocated(new))
                    or len(convert.reserved_for(new)) < len(convert.reserved_for(old))
                )
            )
            if freed:
                self.queue.move_unschedulable(now)
            return
        if kind == "Node":
            if old is not None and new is not None and not _node_changed(old, new):
                return
            self._node_names = None
        self.queue.move_unschedulable(now)

    def retry(self, key: tuple[str, str]) -> None:
        """Something outside the store changed for this pod (its claims cannot be created): try again."""
        entry = self.cache.pods.get(key)
        if entry is not None and self._wants(entry.obj):
            self.queue.add(key, self.clock.monotonic())

    def _ungenerated(self, pod: Mapping[str, Any]) -> bool:
        """A template claim not generated yet, and no creation error to report."""
        if any(cname is None for _, cname in convert.pod_claim_names(pod)):
            return not (self.claim_errors is not None and self.claim_errors(convert.pod_uid(pod)))
        return False

    def _index_waits(self, key: tuple[str, str], pod: Mapping[str, Any]) -> None:
        for _pc, cname in convert.pod_claim_names(pod):
            if cname:
                self._waiting_on.setdefault((key[0], cname), set()).add(key)

    # --- which pods need work ----------------------------------------------------------------------

    def _wants(self, pod: Mapping[str, Any]) -> bool:
        """Not deleting, not terminal, and unbound or with a claim not yet reserved for it."""
        if convert.is_deleting(pod) or convert.is_terminal(pod):
            return False
        spec = pod.get("spec") or {}
        if spec.get("schedulerName", SCHEDULER_NAME) != self.options.scheduler_name:
            return False
        if not spec.get("nodeName"):
            return True
        uid = convert.pod_uid(pod)
        ns = pod["metadata"].get("namespace") or "default"
        for _, cname in convert.pod_claim_names(pod):
            if cname is None:
                return True
            claim = self.cache.claims.get((ns, cname))
            if claim is None or not convert.is_reserved_for(claim, uid):
                return True
        return False

    # --- one attempt -------------------------------------------------------------------------------

    def schedule_next(self) -> Attempt | None:
        """Try the next pod the queue offers now; None when there is none."""
        now = self.clock.monotonic()
        key = self.queue.pop(now)
        if key is None:
            self.queue.flush_unschedulable(now)
            return None
        return self.schedule(key)

    def schedule(self, key: tuple[str, str]) -> Attempt:
        start = self.clock.monotonic()
        entry = self.cache.pods.get(key)
        if entry is None or not self._wants(entry.obj):
            self.queue.done(key)
            return Attempt(key, SKIPPED)
        try:
            attempt = self._attempt(key, entry.obj)
        except Conflict as err:
            logger.debug("scheduler conflict pod=%s/%s err=%s", key[0], key[1], err)
            self._refresh(key)
            self.queue.requeue(key, self.clock.monotonic())
            attempt = Attempt(key, ERROR, message=str(err))
        except NodeAgentError as err:
            logger.warning("scheduling failed pod=%s/%s err=%s", key[0], key[1], err)
            self.queue.failed(key, self.clock.monotonic(), retry=True)
            attempt = Attempt(key, ERROR, message=str(err))
        if self.metrics is not None and attempt.result in (SCHEDULED, UNSCHEDULABLE, ERROR):
            self.metrics.attempts.labels(attempt.result).inc()
            self.metrics.attempt_duration.labels(attempt.result).observe(self.clock.monotonic() - start)
        return attempt

    def _refresh(self, key: tuple[str, str]) -> None:
        """After a conflict: reload the pod and its claims from the store into the cache."""
        pod = self.store.peek("Pod", *key)
        if pod is not None:
            self.cache.apply("MODIFIED", pod)
            for _, cname in convert.pod_claim_names(pod):
                if cname:
                    claim = self.store.peek("ResourceClaim", key[0], cname)
                    if claim is not None:
                        self.cache.apply("MODIFIED", claim)

    def _resolve(self, pod: Mapping[str, Any]) -> _Resolved:
        ns = pod["metadata"].get("namespace") or "default"
        uid = convert.pod_uid(pod)
        out = _Resolved([], [])
        templates = {
            e.get("name"): bool(e.get("resourceClaimTemplateName"))
            for e in (pod.get("spec") or {}).get("resourceClaims") or ()
        }
        for pc, cname in convert.pod_claim_names(pod):
            if cname is None:
                err = self.claim_errors(uid) if self.claim_errors is not None else None
                if err:
                    out.error = f"claim {pc}: cannot be created: {err}"
                else:
                    out.gate = f"waiting for claim {pc} to be created from its template"
                return out
            claim = self.cache.claims.get((ns, cname))
            if claim is None:
                out.gate = f"resourceclaim \"{cname}\" not found"
                return out
            if convert.is_deleting(claim):
                out.gate = f"resourceclaim \"{cname}\" is being deleted"
                return out
            if templates.get(pc) and not any(
                r.get("uid") == uid for r in claim["metadata"].get("ownerReferences") or ()
            ):
                out.error = f"resourceclaim \"{cname}\" was not created for this pod"
                return out
            reserved = convert.reserved_for(claim)
            if len(reserved) >= 256 and not convert.is_reserved_for(claim, uid):
                out.error = f"resourceclaim \"{cname}\" is reserved for the maximum number of consumers"
                return out
            if (
                not self.options.prioritized_list
                and not convert.is_allocated(claim)
                and any(r.get("firstAvailable") for r in ((claim.get("spec") or {}).get("devices") or {}).get(
                    "requests") or ())
            ):
                out.error = (f"claim {pc}: uses firstAvailable, but the DRAPrioritizedList feature gate is "
                             "disabled")
                return out
            out.objs.append(claim)
            out.pod_names.append(pc)
        try:
            validate_pod_claim_references(pod, dict(zip(out.pod_names, out.objs, strict=True)))
        except ValidationError as err:
            out.error = str(err)
        return out

    def _signature(self, claim: Mapping[str, Any]) -> str:
        uid = str(claim["metadata"].get("uid") or "")
        gen = int(claim["metadata"].get("generation") or 0)
        hit = self._signatures.get(uid)
        if hit is not None and hit[0] == gen:
            return hit[1]
        sig = json.dumps(claim.get("spec") or {}, sort_keys=True, separators=(",", ":"))
        if len(self._signatures) > 100_000:
            self._signatures.clear()
        self._signatures[uid] = (gen, sig)
        return sig

    def _nodes(self) -> list[str]:
        if self._node_names is None:
            self._node_names = sorted(n for n, e in self.cache.nodes.items() if e.obj)
            self._node_index = {name: i for i, name in enumerate(self._node_names)}
            self._node_epoch += 1
        return self._node_names

    def _skip_set(self, shape: int) -> _SkipSet:
        """The shape's skip set, brought up to date with the nodes changed since it was last used."""
        self._nodes()
        skip = self._skips.get(shape)
        if skip is None:
            skip = self._skips[shape] = _SkipSet()
        changed = self.cache.changes_since(skip.seen) if skip.epoch == self._node_epoch else None
        if changed is None:
            skip.mask = 0
        elif skip.mask:
            index = self._node_index
            for name in changed:
                i = index.get(name)
                if i is not None:
                    skip.mask &= ~(1 << i)
        skip.seen = self.cache.change_seq
        skip.epoch = self._node_epoch
        return skip

    def _attempt(self, key: tuple[str, str], pod: Mapping[str, Any]) -> Attempt:
        now = self.clock.monotonic()
        entry = self.cache.pods[key]
        if entry.error:
            return self._unschedulable(key, pod, entry.error)
        resolved = self._resolve(pod)
        if resolved.gate:
            self.queue.gate(key, now)
            return Attempt(key, GATED, message=resolved.gate)
        if resolved.error:
            return self._unschedulable(key, pod, resolved.error)
        uid = convert.pod_uid(pod)
        allocated: list[tuple[str, Mapping[str, Any]]] = []
        classic: list[Mapping[str, Any]] = []
        structured: list[tuple[str, Mapping[str, Any]]] = []
        for pc, claim in zip(resolved.pod_names, resolved.objs, strict=True):
            if convert.controller_name(claim) and not convert.is_reserved_for(claim, uid):
                classic.append(claim)
            elif convert.is_allocated(claim):
                allocated.append((pc, claim))
            else:
                structured.append((pc, claim))
        if classic and self.classic is None:
            drivers = ", ".join(sorted({convert.controller_name(c) for c in classic}))
            return self._unschedulable(
                key, pod, f"claims need the DRA controller {drivers}, but classic DRA (DRAControlPlaneController) "
                "is not enabled")
        models = [dataclasses.replace(self.cache.claim_model(c), name=pc) for pc, c in structured]
        sig = (tuple(self._signature(c) for _, c in structured), self.cache.global_version)
        deadline = now + self.options.allocation_timeout
        bound_to = convert.node_name_of(pod)

        # The equivalence cache: pods of one shape (requests, claim specs) get the same answer on
        # a node whose version did not change. Not for claims already allocated (their node
        # selectors differ per claim) nor for a pod bound by its author.
        place = entry.placement
        shape = None if allocated or classic or bound_to else self._shape_id(
            (sig, tuple(sorted(entry.requests.items())), place.key))
        alloc_start = self.clock.monotonic()
        feasible: list[_Candidate] = []
        reasons: dict[str, str] = {}
        failed_alloc: list[str] = []
        names = [bound_to] if bound_to else self._nodes()
        n = len(names)
        start = self._next_start % n if n and not bound_to else 0
        limit = self.options.nodes_to_score if not classic else n + 1
        nodes = self.cache.nodes
        requests = entry.requests
        timed_out = False
        last = start - 1  # the last node index looked at, in rotation order (unrolled past n)
        skip = self._skip_set(shape) if shape is not None and not bound_to else None

        def evaluate(node: NodeEntry) -> tuple[str | None, Any]:
            """The filters and the allocator on one node, remembered for the shape: (reason, the
            failed allocation outcome or None) for a misfit, (None, candidate) when it fits, and
            (None, outcome) for an allocation that timed out."""
            reason = None
            if not bound_to and (place is not placement.NONE or node.taints or node.cordoned):
                reason = place.reason(node.node.name, node.node.labels, node.taints, node.cordoned)
            if reason is None and not bound_to:
                reason = self._fit(node, requests)
            if reason is None:
                reason = self._claims_fit(node, allocated)
            if reason is not None:
                self._remember(node, shape, reason, None)
                return reason, None
            outcome = None
            if models:
                outcome = self._allocate(node, models, sig, deadline, explain=False)
                if outcome.timed_out:
                    return None, outcome
                if not outcome.ok:
                    self._remember(node, shape, outcome.message, outcome)
                    return outcome.message, outcome
            cand = _Candidate(outcome.score if outcome else 0, place.preference(node.node.name, node.node.labels),
                              round(self._utilization(node, requests), 6), node.node.name, outcome)
            self._remember(node, shape, None, cand)
            return None, cand

        for i in _rotation(skip.open(n) if skip is not None else (1 << n) - 1, start, n):
            last = i if i >= start else i + n
            name = names[i]
            node = nodes.get(name)
            if node is None or not node.obj:
                reasons[name] = "node not found"
                continue
            if shape is not None:
                hit = node.results.get(shape)
                if hit is not None and hit[0] == node.version:
                    if hit[1] is not None:
                        reasons[name] = hit[1]
                        if hit[2] is not None:
                            failed_alloc.append(name)
                        if skip is not None:
                            skip.mask |= 1 << i
                        continue
                    feasible.append(hit[2])
                    if len(feasible) >= limit:
                        break
                    continue
            reason, found = evaluate(node)
            if reason is not None:
                reasons[name] = reason
                if found is not None:
                    failed_alloc.append(name)
                if skip is not None:
                    skip.mask |= 1 << i
                continue
            if not isinstance(found, _Candidate):
                timed_out = True
                break
            feasible.append(found)
            if len(feasible) >= limit:
                break
        processed = last - start + 1 if len(feasible) >= limit or timed_out else n
        if not feasible and skip is not None and not timed_out and not classic:
            # the failure message names every node: those skipped as known misfits too
            for i in _rotation(skip.mask, 0, n):
                node = nodes[names[i]]
                hit = node.results.get(shape)
                if hit is not None and hit[0] == node.version and hit[1] is not None:
                    reason, failed = hit[1], hit[2]
                else:  # the result was evicted from the node's cache: check again
                    reason, failed = evaluate(node)
                    if reason is None:  # cannot happen (the node did not change); look again next time
                        skip.mask &= ~(1 << i)
                        continue
                reasons[names[i]] = reason
                if failed is not None:
                    failed_alloc.append(names[i])
        if not bound_to:
            self._next_start = (start + processed) % max(n, 1)
        if self.metrics is not None and models:
            self.metrics.allocator_duration.observe(self.clock.monotonic() - alloc_start)
        if timed_out:
            msg = f"allocating claims timed out after {self.options.allocation_timeout:g}s"
            self._record_failure(pod, msg, condition=not bound_to)
            self.queue.failed(key, self.clock.monotonic(), retry=True)
            return Attempt(key, ERROR, message=msg)

        chosen: _Candidate | None = None
        if classic:
            assert self.classic is not None
            decision = self.classic.step(pod, classic, [c.name for c in feasible])
            if not decision.ready or not decision.node:
                msg = decision.message or "waiting for the DRA controller"
                return self._unschedulable(key, pod, msg, condition=not bound_to)
            chosen = next((c for c in feasible if c.name == decision.node), None)
            if chosen is None:
                msg = f"classic claims were allocated for node {decision.node}, where the pod does not fit"
                if decision.node in reasons:
                    msg += f": {reasons[decision.node]}"
                return self._unschedulable(key, pod, msg, condition=not bound_to)
        elif feasible:
            chosen = min(feasible, key=lambda c: (c.score, -c.preference, c.utilization, c.name))
        if chosen is None:
            for name in failed_alloc[:MAX_EXPLAINED_NODES]:
                node = self.cache.nodes[name]
                reasons[name] = self._allocate(node, models, sig, None, explain=True).message
            total = len(names)
            msg = failure_message(total, reasons)
            return self._unschedulable(key, pod, msg, condition=not bound_to)
        info = self.queue.info(key)
        first_seen = info.first_seen if info is not None else now
        self._bind(pod, chosen, allocated, classic, structured, uid)
        self.queue.done(key)
        if self.metrics is not None:
            self.metrics.e2e_duration.observe(max(0.0, self.clock.monotonic() - first_seen))
            self._observe_first_available(structured, chosen.outcome)
        if self.classic is not None:
            self.classic.forget(pod)
        return Attempt(key, SCHEDULED, node=chosen.name)

    # --- filters -----------------------------------------------------------------------------------

    def _fit(self, node: NodeEntry, requests: Mapping[str, int]) -> str | None:
        if not node.ready:
            return "node is not ready"
        alloc = node.allocatable
        missing = []
        if PODS in alloc and node.pods + 1 > alloc[PODS]:
            missing.append("Too many pods")
        for name, want in sorted(requests.items(), key=_resource_order):
            if want > 0 and want > alloc.get(name, 0) - node.requested.get(name, 0):
                missing.append(f"Insufficient {name}")
        return ", ".join(missing) if missing else None

    def _claims_fit(self, node: NodeEntry, allocated: Sequence[tuple[str, Mapping[str, Any]]]) -> str | None:
        for pc, claim in allocated:
            sel = ((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector")
            if sel and not node_selector_matches(sel, node.node.name, node.node.labels):
                return f"claim {pc}: allocated for another node"
        return None

    def _allocate(
        self, node: NodeEntry, models: Sequence[model.Claim], sig: Any, deadline: float | None, *, explain: bool
    ) -> model.AllocationOutcome:
        memo_key = (sig, node.device_version)
        if not explain:
            hit = node.memo.get(memo_key)
            if hit is not None:
                return hit
        outcome = model.allocate(
            models,
            node.node,
            self.cache.inventory(node),
            self.cache.classes,
            self.cache.device_owner.keys(),
            deadline=deadline,
            now=self.clock.monotonic,
            explain_failure=explain,
        )
        if not explain and not outcome.timed_out:
            if len(node.memo) > 64:
                node.memo.clear()
            node.memo[memo_key] = outcome
        return outcome

    def _shape_id(self, shape: Any) -> int:
        """A small int standing for `shape`. Shapes include the cache's global version, so old
        ones pile up: past a bound the ids and every node's results are dropped together (an id
        is never reused for another shape while a node still holds results under it)."""
        found = self._shape_ids.get(shape)
        if found is not None:
            return found
        if len(self._shape_ids) >= 4096:
            self._shape_ids.clear()
            self._skips.clear()
            for node in self.cache.nodes.values():
                node.results.clear()
        new = self._shape_ids[shape] = len(self._shape_ids)
        return new

    @staticmethod
    def _remember(node: NodeEntry, shape: Any, reason: str | None, value: Any) -> None:
        """Keep (version, reason, failed outcome | candidate) for pods of the same shape."""
        if shape is None:
            return
        if len(node.results) > 64:
            node.results.clear()
        node.results[shape] = (node.version, reason, value)

    @staticmethod
    def _utilization(node: NodeEntry, requests: Mapping[str, int]) -> float:
        fractions = []
        for name in ("cpu", "memory"):
            cap = node.allocatable.get(name, 0)
            if cap > 0:
                fractions.append((node.requested.get(name, 0) + requests.get(name, 0)) / cap)
        return sum(fractions) / len(fractions) if fractions else 0.0

    # --- writes ------------------------------------------------------------------------------------

    def _bind(
        self,
        pod: Mapping[str, Any],
        chosen: _Candidate,
        allocated: Sequence[tuple[str, Mapping[str, Any]]],
        classic: Sequence[Mapping[str, Any]],
        structured: Sequence[tuple[str, Mapping[str, Any]]],
        uid: str,
    ) -> None:
        ref = convert.pod_ref(pod)
        stamp = rfc3339(self.clock.now())
        results = chosen.outcome.results if chosen.outcome is not None else ()
        assert results is not None
        written: list[Mapping[str, Any]] = []
        with self.store.transaction(savepoints=False) as tx:
            for (_, claim), result in zip(structured, results, strict=True):
                cur = self._fresh_claim(tx, claim)
                if cur.get("status", {}).get("allocation") or cur["metadata"]["resourceVersion"] != claim[
                        "metadata"]["resourceVersion"]:
                    raise Conflict(f"resourceclaim {cur['metadata']['name']} changed while scheduling")
                for d in result.devices:
                    if not d.admin_access and d.id in self.cache.device_owner:
                        raise Conflict(f"device {'/'.join(d.id)} was allocated meanwhile")
                status = dict(cur.get("status") or {})
                status["allocation"] = convert.allocation_json(result, stamp)
                status["reservedFor"] = [ref]
                cur["status"] = status
                written.append(tx.update_status(cur))
            for claim in [c for _, c in allocated] + list(classic):
                cur = self._fresh_claim(tx, claim)
                if not convert.is_allocated(cur):
                    raise Conflict(f"resourceclaim {cur['metadata']['name']} was deallocated meanwhile")
                if convert.is_reserved_for(cur, uid):
                    continue
                status = dict(cur.get("status") or {})
                status["reservedFor"] = [*convert.reserved_for(cur), ref]
                cur["status"] = status
                written.append(tx.update_status(cur))
            md = pod["metadata"]
            cur_pod = tx.get("Pod", md.get("namespace") or "default", md["name"])
            if cur_pod["metadata"].get("uid") != uid:
                raise Conflict(f"pod {md['name']} was replaced meanwhile")
            bound = convert.node_name_of(cur_pod)
            if bound and bound != chosen.name:
                raise Conflict(f"pod {md['name']} was bound to {bound} meanwhile")
            if not bound:
                # one write, as the pods/binding subresource does: nodeName and PodScheduled
                cur_pod.setdefault("spec", {})["nodeName"] = chosen.name
                status = dict(cur_pod.get("status") or {})
                status.setdefault("phase", "Pending")
                convert.set_condition(status, {"type": "PodScheduled", "status": "True",
                                               "lastTransitionTime": stamp})
                cur_pod["status"] = status
                written.append(tx.update(cur_pod, with_status=True))
        for obj in written:
            self.cache.apply("MODIFIED", obj)
        logger.debug("bound pod=%s/%s node=%s", md.get("namespace"), md["name"], chosen.name)

    def _fresh_claim(self, tx: Transaction, claim: Mapping[str, Any]) -> dict[str, Any]:
        md = claim["metadata"]
        try:
            cur = tx.get("ResourceClaim", md.get("namespace") or "default", md["name"])
        except NotFound:
            raise Conflict(f"resourceclaim {md['name']} was deleted meanwhile") from None
        if cur["metadata"].get("uid") != md.get("uid"):
            raise Conflict(f"resourceclaim {md['name']} was replaced meanwhile")
        return cur

    def _unschedulable(self, key: tuple[str, str], pod: Mapping[str, Any], message: str, *,
                       condition: bool = True) -> Attempt:
        self._record_failure(pod, message, condition=condition)
        self.queue.failed(key, self.clock.monotonic())
        return Attempt(key, UNSCHEDULABLE, message=message)

    def _record_failure(self, pod: Mapping[str, Any], message: str, *, condition: bool) -> None:
        md = pod["metadata"]
        ns = md.get("namespace") or "default"
        written: Mapping[str, Any] | None = None
        try:
            with self.store.transaction(savepoints=False) as tx:
                cur = tx.try_get("Pod", ns, md["name"])
                if cur is None or cur["metadata"].get("uid") != md.get("uid"):
                    return
                if condition:
                    status = dict(cur.get("status") or {})
                    status.setdefault("phase", "Pending")
                    changed = convert.set_condition(status, {
                        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": message, "lastTransitionTime": rfc3339(self.clock.now()),
                    })
                    if changed:
                        cur["status"] = status
                        written = tx.update_status(cur)
                    else:
                        written = None
                events.record(tx, cur, "FailedScheduling", message, now=self.clock.now(), component=COMPONENT)
        except NodeAgentError as err:
            logger.warning("could not record scheduling failure pod=%s/%s err=%s", ns, md["name"], err)
            return
        if written is not None:
            self.cache.apply("MODIFIED", written)

    def _observe_first_available(
        self, structured: Sequence[tuple[str, Mapping[str, Any]]], outcome: model.AllocationOutcome | None
    ) -> None:
        if outcome is None or outcome.results is None or self.metrics is None:
            return
        for (_, claim), result in zip(structured, outcome.results, strict=True):
            subs: dict[str, list[str]] = {
                r["name"]: [s["name"] for s in r["firstAvailable"]]
                for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
                if r.get("firstAvailable")
            }
            seen: set[str] = set()
            for d in result.devices:
                req, _, sub = d.request.partition("/")
                if sub and req in subs and req not in seen:
                    seen.add(req)
                    self.metrics.first_available_index.observe(subs[req].index(sub))

    # --- state for metrics -------------------------------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        return self.queue.counts()


def _resource_order(item: tuple[str, int]) -> tuple[int, str]:
    order = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}
    return (order.get(item[0], 3), item[0])


def _node_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a Node update can make a pod fit: readiness, allocatable, labels, cordon, taints."""
    return (
        convert.node_ready(old) != convert.node_ready(new)
        or (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable")
        or old["metadata"].get("labels") != new["metadata"].get("labels")
        or (old.get("spec") or {}).get("unschedulable") != (new.get("spec") or {}).get("unschedulable")
        or (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints")
    )
