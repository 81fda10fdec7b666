"""The scheduler: one pending pod at a time, onto a Ready node where its requests and claims fit.

One responsibility: the scheduling cycle. It keeps the cache and the queue fed from watch
events (which pods need work, which changes may make a waiting pod fit), and for a pod from
the queue: resolves its claims (gates while a claim is missing), asks the node pass
(nodepass.py: filters, allocator, scores, equivalence cache) for feasible nodes, lets the
classic-DRA port weigh in for claims with a controllerName, picks the best candidate and has
the binder (binder.py) write the binding. When nothing fits the pod gets
PodScheduled=False/Unschedulable with a per-node explanation and a FailedScheduling Event, and
waits in the queue for a change.

Synchronous on purpose (the async driver is loop.py): `handle(event_type, obj)` feeds the
cache and the queue, `schedule_next()` runs one attempt.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nodeagent.controlplane import allocator as model
from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.metrics import ERROR, SCHEDULED, UNSCHEDULABLE, ControlPlaneMetrics
from nodeagent.controlplane.scheduler import (
    bindingconditions,
    extended,
    hints,
    interpod,
    nodealloc,
    placement,
    prescore,
)
from nodeagent.controlplane.scheduler.binder import Binder
from nodeagent.controlplane.scheduler.bindingconditions import PreBind
from nodeagent.controlplane.scheduler.cache import ClusterCache
from nodeagent.controlplane.scheduler.hints import CANNOT_ALLOCATE
from nodeagent.controlplane.scheduler.nodepass import Candidate, NodePass, PodShape
from nodeagent.controlplane.scheduler.queue import SchedulingQueue
from nodeagent.errors import Conflict, NodeAgentError, ValidationError
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod
from nodeagent.objects.resource.validation import validate_pod_claim_references
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

SCHEDULER_NAME = "default-scheduler"
SKIPPED = "skipped"
GATED = "gated"
MAX_EXPLAINED_NODES = 50


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
    nodes_to_score: int = 100  # upstream's minFeasibleNodesToFind
    percentage_of_nodes_to_score: int = 0  # 0: adaptive, as upstream (50% less 1% per 125 nodes, >= 5%)
    allocation_timeout: float = 10.0
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    prioritized_list: bool = True  # the DRAPrioritizedList feature gate
    extended_resource: bool = True  # the DRAExtendedResource feature gate (GA and locked on in 1.37)
    optional_node_operations: bool = False  # the DRAOptionalNodeOperations feature gate (alpha in 1.37)
    scheduler_name: str = SCHEDULER_NAME
    allocator: model.Features = model.DEFAULT_FEATURES  # gates and the emulated release's formats
    allocation_timestamp: bool = True  # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus
    binding_conditions: bool = True  # the same two gates: PreBind waits for binding conditions
    binding_timeout: float = 600.0  # DynamicResourcesArgs.bindingTimeout
    node_allocatable_resources: bool = False  # DRANodeAllocatableResources (alpha in 1.37): scheduler/nodealloc.py
    host: str = ""  # the events' reportingInstance is default-scheduler-<host> (upstream: os.Hostname())


@dataclass(frozen=True)
class Attempt:
    key: tuple[str, str]
    result: str  # scheduled | unschedulable | error | gated | skipped
    node: str = ""
    message: str = ""


@dataclass
class _Resolved:
    objs: list[Mapping[str, Any]]  # ResourceClaim objects, in pod order
    pod_names: list[str]  # pod claim names, parallel to objs
    gate: str = ""  # waiting for a claim to exist
    error: str = ""  # cannot be scheduled as is
    missing: bool = False  # the gate is a claim that does not exist (not one still to be generated)


NO_NODES = "no nodes available to schedule pods"  # upstream's ErrNoNodesAvailable
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
DEALLOCATED = "deallocation of ResourceClaim completed"  # DynamicResources PostFilter


_RESOLVABLE = frozenset({"Too many pods", placement.NO_FREE_PORTS, interpod.SPREAD, interpod.ANTI_AFFINITY,
                         interpod.EXISTING_ANTI_AFFINITY})


def split_reasons(reason: str) -> list[str]:
    """A node's status reasons: NodeResourcesFit gives one per resource ("Insufficient cpu",
    "Too many pods"), which the node pass keeps joined with ", "; any other text is one reason."""
    parts = reason.split(", ")
    if len(parts) > 1 and all(p.startswith("Insufficient ") or p == "Too many pods" for p in parts):
        return parts
    return [reason]


def failure_message(total: int, reasons: Mapping[str, str], *, absent: str = "", post_filter: str = "") -> str:
    """Upstream's FitError.Error(): `0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't
    match Pod's node affinity/selector.` -- each node's reasons counted, "<count> <reason>" sorted
    as strings; nodes without a status of their own count under `absent`; then the PostFilter
    plugins' message."""
    counts: dict[str, int] = {}
    for reason in reasons.values():
        for r in split_reasons(reason):
            counts[r] = counts.get(r, 0) + 1
    if absent and len(reasons) < total:
        counts[absent] = counts.get(absent, 0) + total - len(reasons)
    msg = f"0/{total} nodes are available:"
    if counts:
        msg += " " + ", ".join(sorted(f"{n} {r}" for r, n in counts.items())) + "."
    return f"{msg} {post_filter}" if post_filter else msg


def prefilter_message(total: int, reason: str, post_filter: str = "") -> str:
    """Upstream's FitError text when a PreFilter plugin rejects the pod before any node is tried:
    `0/3 nodes are available: resourceclaim "x" not found.` (the nodes' statuses are left out)."""
    msg = f"0/{total} nodes are available: {reason}."
    return f"{msg} {post_filter}" if post_filter else msg


def preemption_message(pod: Mapping[str, Any], total: int, resolvable: Sequence[str]) -> str:
    """DefaultPreemption's PostFilter message when it finds no victims. Nodes rejected as
    Unschedulable (`resolvable`: only NodeResourcesFit with requests within the allocatable) are
    where upstream looks for lower-priority pods to evict; the embedded scheduler does not preempt
    (README, scheduler differences), so they read as upstream's node without victims; the others
    (UnschedulableAndUnresolvable) as "not helpful"."""
    if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
        return "preemption: not eligible due to preemptionPolicy=Never."
    return "preemption: " + failure_message(total, dict.fromkeys(resolvable, NO_VICTIMS), absent=NOT_HELPFUL)


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
        self.cache = ClusterCache(clock, optional_node_operations=self.options.optional_node_operations,
                                  node_allocatable=self.options.node_allocatable_resources)
        self.cache.listeners.append(self._changed)
        self.queue = SchedulingQueue(self.options.initial_backoff, self.options.max_backoff)
        self.nodes = NodePass(self.cache, clock, self.options.nodes_to_score, self.options.allocator,
                              self.options.percentage_of_nodes_to_score)
        self.binder = Binder(store, self.cache, clock, allocation_timestamp=self.options.allocation_timestamp,
                             host=self.options.host)
        self.prebind = PreBind(store, self.cache, self.binder, self.queue, clock, self.options.binding_timeout)
        self._waiting_on: dict[tuple[str, str], set[tuple[str, str]]] = {}  # claim key -> pod keys

    # --- feeding ---------------------------------------------------------------------------------

    def load(self, objs: Sequence[Mapping[str, Any]]) -> None:
        """Initial list (or a relist after RESYNC): rebuild the cache, queue every pod that needs work."""
        self.cache.reset()
        self.nodes.reset()
        self.cache.listeners.append(self._changed)
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
                    changed = hints.pod_update(old, new) if old is not None else frozenset()
                    self.queue.update(key, now, changed, int((new.get("spec") or {}).get("priority") or 0))
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
            is_active = new is not None and convert.node_name_of(new) and not convert.is_terminal(new)
            if was_active and not is_active:
                self.queue.move_unschedulable(now, event=hints.ASSIGNED_POD_DELETE)  # resources were freed
            elif is_active and not was_active:  # bound: pod affinity or a spread may now hold
                self.queue.move_unschedulable(now, event=hints.ASSIGNED_POD_ADD)
            elif is_active and old is not None and new is not None and (
                    old["metadata"].get("labels") != new["metadata"].get("labels")):
                self.queue.move_unschedulable(now, event=hints.ASSIGNED_POD_LABEL)
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
                        self.queue.update(pkey, now, frozenset({hints.CLAIM}))  # one of its claims
            freed = new is None or (
                old is not None
                and (
                    (convert.is_allocated(old) and not convert.is_allocated(new))
                    or len(convert.reserved_for(new)) < len(convert.reserved_for(old))
                )
            )
            if freed:
                self.queue.move_unschedulable(now, event=hints.CLAIM)
            return
        if kind == "Node":
            if old is not None and new is not None and not _node_changed(old, new):
                return
            self.nodes.nodes_changed()
        # Node, ResourceSlice, DeviceClass, DeviceTaintRule: the hints' names are the kinds
        self.queue.move_unschedulable(now, event=kind)

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
        """Not deleting, not terminal, and unbound (without scheduling gates: the SchedulingGates
        PreEnqueue plugin holds it back, silently, until an update removes the last) or with a
        claim not yet reserved for it."""
        if convert.is_deleting(pod) or convert.is_terminal(pod):
            return False
        spec = pod.get("spec") or {}
        if spec.get("schedulerName", SCHEDULER_NAME) != self.options.scheduler_name:
            return False
        if not spec.get("nodeName"):
            return not spec.get("schedulingGates")
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
            self.prebind.forget(key)
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
                out.missing = True
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

    def _attempt(self, key: tuple[str, str], pod: Mapping[str, Any]) -> Attempt:
        now = self.clock.monotonic()
        entry = self.cache.pods[key]
        if key in self.prebind.waiting:
            return self._prebind(key, pod)
        if entry.error:
            return self._unschedulable(key, pod, entry.error)
        resolved = self._resolve(pod)
        if resolved.gate:
            # Waits for the claim's event (not a timer) either way. A claim that does not exist:
            # say so on the pod (PodScheduled=False/Unschedulable, FailedScheduling) with the FitError
            # text of a PreFilter rejection. Intended difference: v1.37.2 holds such a pod at
            # DynamicResources' PreEnqueue without a word (no condition, no event), which leaves a
            # user of `kubectl describe pod` guessing (README, scheduler differences). Not for a pod its
            # author bound to a node: the scheduler leaves those alone, the kubelet reports why.
            self.queue.gate(key, now)
            if resolved.missing and not convert.node_name_of(pod):
                total = sum(1 for node in self.cache.nodes.values() if node.obj)
                message = prefilter_message(total, resolved.gate, preemption_message(pod, total, ()))
                self.binder.record_failure(pod, message, condition=True)
                return Attempt(key, UNSCHEDULABLE, message=message)
            return Attempt(key, GATED, message=resolved.gate)
        if resolved.error:
            return self._unschedulable(key, pod, resolved.error, hints=hints.DYNAMIC_RESOURCES)
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
                key, pod, f"claims need the DRA controller {drivers}, but classic DRA "
                "(NodeAgentConfiguration.classicDRA) is not enabled")
        models = [dataclasses.replace(self.cache.claim_model(c), name=pc) for pc, c in structured]
        bound_to = convert.node_name_of(pod)
        claim_containers = None
        if self.options.node_allocatable_resources and resolved.objs:
            shared = self._shared_mapped_claim(allocated, pod, uid)
            if shared:
                total = sum(1 for node in self.cache.nodes.values() if node.obj)
                names = [n for n, e in self.cache.nodes.items() if e.obj]
                message = failure_message(total, dict.fromkeys(names, shared),
                                          post_filter=preemption_message(pod, total, ()))
                return self._unschedulable(key, pod, message, condition=not bound_to, hints=hints.DYNAMIC_RESOURCES)
            claim_containers = nodealloc.containers_by_claim(pod)
        sig = self.nodes.signature([c for _, c in structured])
        plan = None
        if self.options.extended_resource and not bound_to:
            # a pod bound by its author is not the scheduler's to give devices (as upstream)
            asks = self.cache.extended_asks(pod)
            plan = extended.plan_for(asks, self.cache.extended_mapping()) if asks else None
            if plan is not None:
                sig = (sig, plan.key)
        shape = PodShape(
            requests=entry.requests,
            place=entry.placement,
            allocated=allocated,
            models=models,
            sig=sig,
            bound_to=bound_to,
            every_node=bool(classic),
            deadline=now + self.options.allocation_timeout,
            extended=plan,
            namespace=key[0],
            claim_containers=claim_containers,
            pod_level=nodealloc.pod_level_resources(pod) if claim_containers is not None else frozenset(),
            spec_model=self._pod_level_model(pod) if claim_containers is not None else None,
            interpod=None if bound_to else self._interpod(key[0], pod, entry.placement),
            nonzero=entry.nonzero,
            scores=None if bound_to or classic else prescore.prescore(
                self.cache, key[0], pod, entry.placement, to_allocate=[c for _, c in structured],
                allocated=[c for _, c in allocated], prioritized_list=self.options.prioritized_list,
                services=self._services, controller=self._controller, namespaces=self._namespace_labels),
        )
        alloc_start = self.clock.monotonic()
        found = self.nodes.run(shape)
        if self.metrics is not None and models:
            self.metrics.allocator_duration.observe(self.clock.monotonic() - alloc_start)
        if found.error:
            # upstream's Filter returns an error status: the attempt stops; the error stays until a
            # slice, class or claim changes, and such a change moves the pod back
            self.binder.record_failure(pod, found.error, condition=not bound_to)
            self.queue.failed(key, self.clock.monotonic(), hints=hints.DYNAMIC_RESOURCES)
            return Attempt(key, ERROR, message=found.error)
        if found.timed_out:
            msg = f"allocating claims timed out after {self.options.allocation_timeout:g}s"
            self.binder.record_failure(pod, msg, condition=not bound_to)
            self.queue.failed(key, self.clock.monotonic(), retry=True)
            return Attempt(key, ERROR, message=msg)

        chosen: Candidate | None = None
        if classic:
            assert self.classic is not None
            decision = self.classic.step(pod, classic, [c.name for c in found.feasible])
            if not decision.ready or not decision.node:
                msg = decision.message or "waiting for the DRA controller"
                return self._unschedulable(key, pod, msg, condition=not bound_to)
            chosen = next((c for c in found.feasible if c.name == decision.node), None)
            if chosen is None:
                msg = f"classic claims were allocated for node {decision.node}, where the pod does not fit"
                if decision.node in found.reasons:
                    msg += f": {found.reasons[decision.node]}"
                return self._unschedulable(key, pod, msg, condition=not bound_to)
        else:
            chosen = found.best
        if chosen is None:
            for name in found.failed_alloc:
                if found.reasons.get(name) == model.DOES_NOT_FIT:
                    found.reasons[name] = CANNOT_ALLOCATE
            if logger.isEnabledFor(logging.DEBUG):
                for name in found.failed_alloc[:MAX_EXPLAINED_NODES]:
                    logger.debug("pod %s/%s: claims do not fit on node %s: %s", key[0], key[1], name,
                                 self.nodes.explain(name, shape))
            deallocated = not classic and self._deallocate_one(allocated, uid)
            # upstream's PostFilter plugins in order: DynamicResources (the next attempt may
            # allocate the claim where the pod fits), then DefaultPreemption
            preemption = preemption_message(pod, found.total, self._resolvable(found.reasons, entry.requests))
            message = failure_message(found.total, found.reasons,
                                      post_filter=f"{DEALLOCATED}, {preemption}" if deallocated else preemption)
            if deallocated:
                self.binder.record_failure(pod, message, condition=not bound_to)
                self.queue.failed(key, self.clock.monotonic(), retry=True)
                return Attempt(key, UNSCHEDULABLE, message=message)
            return self._unschedulable(key, pod, message, condition=not bound_to,
                                       hints=hints.for_reasons(found.reasons.values()))
        info = self.queue.info(key)
        first_seen = info.first_seen if info is not None else now
        if self.options.binding_conditions and not bound_to and bindingconditions.needs_wait(
                chosen.outcome, [c for _, c in allocated]):
            self.binder.bind(pod, chosen, allocated, classic, structured, uid, plan, bind_pod=False,
                             node_alloc=self._node_alloc_statuses(chosen, resolved))
            self.prebind.start(key, chosen.name, uid, [(key[0], c["metadata"]["name"]) for c in resolved.objs])
            return self._prebind(key, pod)
        self.binder.bind(pod, chosen, allocated, classic, structured, uid, plan,
                         node_alloc=self._node_alloc_statuses(chosen, resolved))
        self.queue.done(key)
        if self.metrics is not None:
            self.metrics.e2e_duration.observe(max(0.0, self.clock.monotonic() - first_seen))
            self._observe_first_available(structured, chosen.outcome)
        if self.classic is not None:
            self.classic.forget(pod)
        return Attempt(key, SCHEDULED, node=chosen.name)

    # --- writes ------------------------------------------------------------------------------------

    def _prebind(self, key: tuple[str, str], pod: Mapping[str, Any]) -> Attempt:
        """PreBind waiting for binding conditions (bindingconditions.py)."""
        node = self.prebind.waiting[key].node
        state, message = self.prebind.step(key, pod)
        if state == bindingconditions.READY:
            return Attempt(key, SCHEDULED, node=node)
        if state == bindingconditions.PENDING:
            return Attempt(key, GATED, message=message)
        return Attempt(key, ERROR, message=message)

    def _deallocate_one(self, allocated: Sequence[tuple[str, Mapping[str, Any]]], uid: str) -> bool:
        """Deallocate the first allocated structured claim no other pod reserved (upstream does one
        per PostFilter call)."""
        for _, claim in allocated:
            if convert.controller_name(claim):
                continue
            mine = all(str(r.get("uid")) == uid for r in convert.reserved_for(claim))
            if mine and self.binder.deallocate(claim, uid):
                return True
        return False

    def _shared_mapped_claim(self, allocated: Sequence[tuple[str, Mapping[str, Any]]], pod: Mapping[str, Any],
                             uid: str) -> str:
        """validateNodeAllocatableDRAClaimSharing: an allocated claim whose devices map a node
        resource directly, reserved for another pod, cannot serve this one (the message, or "")."""
        lookup = self.cache.device_node_allocatable(None)
        for _, claim in allocated:
            reserved = convert.reserved_for(claim)
            if not reserved or convert.is_reserved_for(claim, uid):
                continue
            results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ()
            if nodealloc.has_mapped_device(results, lookup):
                return nodealloc.SHARED_MESSAGE.format(claim["metadata"]["name"])
        return ""

    def _interpod(self, namespace: str, pod: Mapping[str, Any], place: placement.Placement) -> interpod.Filter | None:
        """PodTopologySpread's and InterPodAffinity's PreFilter over the pods counted on nodes (None:
        nothing constrains the pod, the common case costs a look at the anti-affinity holders)."""
        terms = place.pod_terms
        if terms is not None and not terms.filters:
            terms = None  # only preferred terms or ScheduleAnyway constraints: scoring.py's
        cache = self.cache
        if terms is None and not cache.anti_pods:
            return None
        labels = pod["metadata"].get("labels") or {}
        nodes = [interpod.NodeView(name, e.node.labels, _inclusion(place, name, e.node.labels, e.taints))
                 for name, e in cache.nodes.items() if e.obj]
        by_node: dict[str, list[interpod.AssignedPod]] = {}
        if terms is not None:
            for p in cache.pods.values():
                if p.active:
                    by_node.setdefault(p.node, []).append(_assigned(p.obj, p.placement))
        holders = [(p.node, _assigned(p.obj, p.placement)) for p in cache.anti_pods.values()]
        return interpod.prefilter(namespace, labels, terms, nodes, lambda n: by_node.get(n, ()), holders,
                                  self._namespace_labels)

    def _services(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        """The namespace's Services (PodTopologySpread's system default selector)."""
        try:
            return self.store.scan("Service", namespace)
        except ValidationError:  # a store without the kind (unit tests)
            return ()

    def _controller(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            return self.store.peek(kind, namespace, name)
        except ValidationError:
            return None

    def _namespace_labels(self) -> dict[str, Mapping[str, str]]:
        """Namespace -> labels, for the terms' namespaceSelectors."""
        return {ns["metadata"]["name"]: ns["metadata"].get("labels") or {} for ns in self.store.list("Namespace")}

    def _pod_level_model(self, pod: Mapping[str, Any]) -> Pod | None:
        """The parsed pod when it sets pod-level resources (validatePodLevelResourcesCoverDRA reads
        them and its containers' limits), else None."""
        res = (pod.get("spec") or {}).get("resources") or {}
        if not (res.get("requests") or res.get("limits")):
            return None
        try:
            return pod_from_manifest(pod, uid=convert.pod_uid(pod), clock=self.clock)
        except ValidationError:
            return None

    @staticmethod
    def _node_alloc_statuses(chosen: Candidate, resolved: _Resolved) -> list[dict[str, Any]] | None:
        """The candidate's entries under the claims' names, sorted by them (as upstream writes them)."""
        if not chosen.node_alloc:
            return None
        names = dict(zip(resolved.pod_names, (c["metadata"]["name"] for c in resolved.objs), strict=True))
        out = [{**e, "resourceClaimName": names.get(e["resourceClaimName"], e["resourceClaimName"])}
               for e in chosen.node_alloc]
        return sorted(out, key=lambda e: str(e["resourceClaimName"]))

    def _resolvable(self, reasons: Mapping[str, str], requests: Mapping[str, int]) -> list[str]:
        """The nodes rejected as Unschedulable (preemption could make room): every reason an
        "Insufficient <resource>" with no request above what the node has allocatable, "Too many
        pods", a host port in use (NodePorts), a spread skew (PodTopologySpread) or an anti-affinity
        conflict either way (InterPodAffinity). The others are UnschedulableAndUnresolvable
        upstream: node affinity, taints, a cordon, pod affinity, a node without a spread
        constraint's topology key."""

        def within(reason: str, allocatable: Mapping[str, int]) -> bool:
            resource = reason.removeprefix("Insufficient ")
            return reason in _RESOLVABLE or (
                resource != reason and requests.get(resource, 0) <= allocatable.get(resource, 0))

        return [name for name, reason in reasons.items()
                if (node := self.cache.nodes.get(name)) is not None and node.obj
                and all(within(r, node.allocatable) for r in split_reasons(reason))]

    def _unschedulable(self, key: tuple[str, str], pod: Mapping[str, Any], message: str, *,
                       condition: bool = True, hints: frozenset[str] | None = None) -> Attempt:
        """Unschedulable until one of `hints` (hints.py; None: any event) or the 5-minute flush."""
        self.binder.record_failure(pod, message, condition=condition)
        self.queue.failed(key, self.clock.monotonic(), hints=hints)
        return Attempt(key, UNSCHEDULABLE, message=message)

    def _observe_first_available(
        self, structured: Sequence[tuple[str, Mapping[str, Any]]], outcome: model.AllocationOutcome | None
    ) -> None:
        if outcome is None or outcome.results is None or self.metrics is None:
            return
        for (_, claim), result in zip(structured, outcome.results[:len(structured)], strict=True):
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


def _inclusion(place: placement.Placement, name: str, labels: Mapping[str, str],
               taints: Sequence[placement.Taint]) -> Callable[[interpod.Spread], bool]:
    """Whether the node counts for a spread constraint: its nodeAffinityPolicy and nodeTaintsPolicy."""

    def eligible(c: interpod.Spread) -> bool:
        return ((not c.honor_affinity or place.node_affinity(name, labels))
                and (not c.honor_taints or place.tolerates(taints)))

    return eligible


def _assigned(obj: Mapping[str, Any], place: placement.Placement) -> interpod.AssignedPod:
    md = obj["metadata"]
    return interpod.AssignedPod(md.get("namespace") or "default", md.get("labels") or {},
                                bool(md.get("deletionTimestamp")), place.pod_terms)


def _node_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a Node update can make a pod fit: readiness, allocatable, labels, cordon, taints."""
    return (
        convert.node_ready(old) != convert.node_ready(new)
        or (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable")
        or old["metadata"].get("labels") != new["metadata"].get("labels")
        or (old.get("spec") or {}).get("unschedulable") != (new.get("spec") or {}).get("unschedulable")
        or (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints")
    )
