"""The scheduler's writes: binding a pod with its claims, and recording why it could not be.

One responsibility: turn a decision into store writes, each in one transaction. `bind` writes
every structured claim's allocation and reservedFor, reserves the already allocated and classic
claims, and binds the pod (spec.nodeName with PodScheduled=True in one write, as the
pods/binding subresource does); a claim or pod that changed since the decision raises Conflict
and nothing is written. `record_failure` sets PodScheduled=False/Unschedulable with the message
and records a FailedScheduling Event. Written objects go into the cache at once, so the next
decision sees them before their watch events arrive.

Inside `batch()` (one scheduling round of the control plane loop) every write of the round
shares one store transaction: each pod's writes stay all-or-nothing (a savepoint group), and
the round commits once, so a burst of pods costs one commit instead of one per pod. Nothing
is acknowledged before that commit (watch events follow it); the cache sees the round's writes
at once. A round that fails to commit raises out of `batch()`: its writes are gone while the
cache holds them, so the caller relists (controlplane/loop.py does).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.events_v1 import NORMAL, WARNING, SeriesRecorder
from nodeagent.controlplane.scheduler import extended
from nodeagent.controlplane.scheduler.cache import ClusterCache
from nodeagent.controlplane.scheduler.nodepass import Candidate
from nodeagent.errors import Conflict, NodeAgentError, NotFound
from nodeagent.store import ObjectStore, Transaction
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

COMPONENT = "default-scheduler"
MANAGER = "kube-scheduler"


class Binder:
    def __init__(self, store: ObjectStore, cache: ClusterCache, clock: Clock, *,
                 allocation_timestamp: bool = True, host: str = "") -> None:
        self.store = store
        self.cache = cache
        self.clock = clock
        # kube-scheduler's events go through client-go tools/events (events.k8s.io/v1)
        self.events = SeriesRecorder(COMPONENT, host, clock, manager=MANAGER)
        # upstream stamps allocations only with DRADeviceBindingConditions and
        # DRAResourceClaimDeviceStatus on (both default from 1.36)
        self.allocation_timestamp = allocation_timestamp
        self._batch: Transaction | None = None

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write in the block in one store transaction, committed at its end (see the
        module docstring); nested use joins the open batch."""
        if self._batch is not None:
            yield
            return
        with self.store.transaction(savepoints=False, manager=MANAGER) as tx:
            self._batch = tx
            try:
                yield
            finally:
                self._batch = None

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One decision's writes, all-or-nothing: a group in the open batch, else a transaction."""
        if self._batch is not None:
            with self._batch.group():
                yield self._batch
        else:
            with self.store.transaction(savepoints=False, manager=MANAGER) as tx:
                yield tx

    def bind(
        self,
        pod: Mapping[str, Any],
        chosen: Candidate,
        allocated: Sequence[tuple[str, Mapping[str, Any]]],
        classic: Sequence[Mapping[str, Any]],
        structured: Sequence[tuple[str, Mapping[str, Any]]],
        uid: str,
        plan: extended.ExtendedPlan | None = None,
        *,
        bind_pod: bool = True,
        node_alloc: list[dict[str, Any]] | None = None,
    ) -> None:
        """`bind_pod=False` writes only the claims: PreBind then waits for their devices' binding
        conditions (scheduler/bindingconditions.py) and `bind_pod` binds the pod later."""
        ref = convert.pod_ref(pod)
        stamp = rfc3339(self.clock.now())
        alloc_stamp = stamp if self.allocation_timestamp else ""
        results = chosen.outcome.results if chosen.outcome is not None else ()
        assert results is not None
        extended_status: dict[str, Any] | None = None
        written: list[Mapping[str, Any]] = []
        with self.transaction() as tx:
            if chosen.backed and plan is not None:
                extended_status = self._create_extended_claim(tx, pod, plan, chosen.backed, results[len(structured)],
                                                              ref, alloc_stamp, written)
            for (_, claim), result in zip(structured, results[:len(structured)], strict=True):
                cur = self._fresh_claim(tx, claim)
                if cur.get("status", {}).get("allocation") or cur["metadata"]["resourceVersion"] != claim[
                        "metadata"]["resourceVersion"]:
                    raise Conflict(f"resourceclaim {cur['metadata']['name']} changed while scheduling")
                for d in result.devices:
                    if not d.admin_access and not d.share_id and d.id in self.cache.device_owner:
                        raise Conflict(f"device {'/'.join(d.id)} was allocated meanwhile")
                if convert.is_deleting(cur):
                    raise Conflict(f"resourceclaim {cur['metadata']['name']} got deleted in the meantime")
                finalizers = cur["metadata"].get("finalizers") or []
                if convert.CLAIM_FINALIZER not in finalizers:  # in a normal update first, as bindClaim
                    cur["metadata"] = {**cur["metadata"], "finalizers": [*finalizers, convert.CLAIM_FINALIZER]}
                    cur = dict(tx.update(cur, copy=False))
                status = dict(cur.get("status") or {})
                status["allocation"] = convert.allocation_json(result, alloc_stamp)
                status["reservedFor"] = [ref]
                cur["status"] = status
                written.append(tx.update_status(cur, copy=False))
            for claim in [c for _, c in allocated] + list(classic):
                cur = self._fresh_claim(tx, claim)
                if not convert.is_allocated(cur):
                    raise Conflict(f"resourceclaim {cur['metadata']['name']} was deallocated meanwhile")
                if convert.is_reserved_for(cur, uid):
                    continue
                status = dict(cur.get("status") or {})
                status["reservedFor"] = [*convert.reserved_for(cur), ref]
                alloc = status["allocation"]
                if alloc_stamp and not convert.controller_name(cur) and "allocationTimestamp" not in alloc:
                    status["allocation"] = {**alloc, "allocationTimestamp": alloc_stamp}
                cur["status"] = status
                written.append(tx.update_status(cur, copy=False))
            if bind_pod:
                self._write_binding(tx, pod, uid, chosen.name, stamp, extended_status, written, node_alloc)
            elif node_alloc:
                # PreBind patches the pod status before it waits for binding conditions
                written.append(self._write_node_alloc(tx, pod, uid, node_alloc))
        for obj in written:
            self.cache.apply("MODIFIED", obj)
        md = pod["metadata"]
        logger.debug("bound pod=%s/%s node=%s claims_only=%s", md.get("namespace"), md["name"], chosen.name,
                     not bind_pod)

    def bind_pod(self, pod: Mapping[str, Any], uid: str, node: str) -> None:
        """Bind a pod whose claims were written before (after PreBind's wait)."""
        written: list[Mapping[str, Any]] = []
        with self.transaction() as tx:
            self._write_binding(tx, pod, uid, node, rfc3339(self.clock.now()), None, written)
        for obj in written:
            self.cache.apply("MODIFIED", obj)

    @staticmethod
    def _write_node_alloc(tx: Transaction, pod: Mapping[str, Any], uid: str,
                          node_alloc: list[dict[str, Any]]) -> Mapping[str, Any]:
        """pod.status.nodeAllocatableResourceClaimStatuses, as PreBind's status patch writes it."""
        md = pod["metadata"]
        stored = tx.peek("Pod", md.get("namespace") or "default", md["name"])
        if stored is None or stored["metadata"].get("uid") != uid:
            raise Conflict(f"pod {md['name']} was replaced meanwhile")
        cur = dict(stored)
        cur["status"] = {**(cur.get("status") or {}), "nodeAllocatableResourceClaimStatuses": node_alloc}
        return tx.update_status(cur, copy=False)

    def clear_node_alloc(self, pod: Mapping[str, Any], uid: str) -> None:
        """Unreserve's clearNodeAllocatableResourceClaimStatus: the entries PreBind wrote go (as an
        explicit empty list, which a status write keeps) when the pod is not bound after all."""
        if not (pod.get("status") or {}).get("nodeAllocatableResourceClaimStatuses"):
            return
        try:
            with self.transaction() as tx:
                written = self._write_node_alloc(tx, pod, uid, [])
        except NodeAgentError as err:
            logger.warning("could not clear nodeAllocatableResourceClaimStatuses pod=%s err=%s",
                           pod["metadata"].get("name"), err)
            return
        self.cache.apply("MODIFIED", written)

    def _write_binding(self, tx: Transaction, pod: Mapping[str, Any], uid: str, node: str, stamp: str,
                       extended_status: dict[str, Any] | None, written: list[Mapping[str, Any]],
                       node_alloc: list[dict[str, Any]] | None = None) -> None:
        md = pod["metadata"]
        stored = tx.peek("Pod", md.get("namespace") or "default", md["name"])
        if stored is None:
            raise NotFound(f'pods "{md["name"]}" not found')
        cur_pod = dict(stored)  # shared below the top level: every changed part is copied
        if cur_pod["metadata"].get("uid") != uid:
            raise Conflict(f"pod {md['name']} was replaced meanwhile")
        bound = convert.node_name_of(cur_pod)
        if bound and bound != node:
            raise Conflict(f"pod {md['name']} was bound to {bound} meanwhile")
        if not bound:
            # one write, as the pods/binding subresource does: nodeName and PodScheduled (and
            # the extended resource claim status, so the node sees them together)
            cur_pod["spec"] = {**(cur_pod.get("spec") or {}), "nodeName": node}
            status = dict(cur_pod.get("status") or {})
            status.setdefault("phase", "Pending")
            convert.set_condition(status, {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                           "lastTransitionTime": stamp})  # Go's zero Time: null, as BindingREST
            if extended_status is not None:
                status["extendedResourceClaimStatus"] = extended_status
            if node_alloc:  # PreBind's status patch, written with the binding here
                status["nodeAllocatableResourceClaimStatuses"] = node_alloc
            cur_pod["status"] = status
            bound_pod = tx.update(cur_pod, with_status=True, copy=False, keep_generation=True)
            written.append(bound_pod)
            # upstream's handleBindingCycle... finishBinding: Normal/Scheduled, action Binding,
            # recorded once the binding is written (here: in the same transaction), about the
            # assumed pod: the version the scheduler had, before the binding
            self.events.eventf(tx, pod, NORMAL, "Scheduled", "Binding",
                               f"Successfully assigned {md.get('namespace') or 'default'}/{md['name']} to {node}")

    def _create_extended_claim(
        self, tx: Transaction, pod: Mapping[str, Any], plan: extended.ExtendedPlan, backed: frozenset[str],
        result: Any, ref: Mapping[str, str], stamp: str, written: list[Mapping[str, Any]],
    ) -> dict[str, Any]:
        """Create the pod's special claim, allocated and reserved for it (upstream's PreBind does
        the same in three API calls); returns pod.status.extendedResourceClaimStatus."""
        for d in result.devices:
            if not d.share_id and d.id in self.cache.device_owner:
                raise Conflict(f"device {'/'.join(d.id)} was allocated meanwhile")
        asks, mappings = plan.requests_and_mappings(backed)
        created = tx.create(extended.claim_document(pod, asks))
        claim = dict(created)
        claim["status"] = {"allocation": convert.allocation_json(result, stamp), "reservedFor": [dict(ref)]}
        written.append(tx.update_status(claim))
        return {"requestMappings": [m.json() for m in mappings], "resourceClaimName": created["metadata"]["name"]}

    def _fresh_claim(self, tx: Transaction, claim: Mapping[str, Any]) -> dict[str, Any]:
        md = claim["metadata"]
        stored = tx.peek("ResourceClaim", md.get("namespace") or "default", md["name"])
        if stored is None:
            raise Conflict(f"resourceclaim {md['name']} was deleted meanwhile")
        if stored["metadata"].get("uid") != md.get("uid"):
            raise Conflict(f"resourceclaim {md['name']} was replaced meanwhile")
        return dict(stored)  # a new top level for a new status; nested parts shared, never changed

    def deallocate(self, claim: Mapping[str, Any], pod_uid: str) -> bool:
        """Upstream's PostFilter: an allocated claim reserved by no pod (or only by this one) gets
        its allocation removed so the next attempt may allocate it where the pod fits; False when
        the claim changed meanwhile (someone reserved it)."""
        try:
            with self.transaction() as tx:
                cur = self._fresh_claim(tx, claim)
                reserved = convert.reserved_for(cur)
                if not convert.is_allocated(cur) or any(str(r.get("uid")) != pod_uid for r in reserved):
                    return False
                status = dict(cur.get("status") or {})
                status.pop("allocation", None)
                status.pop("reservedFor", None)
                cur["status"] = status
                written = tx.update_status(cur)
        except NodeAgentError as err:
            logger.warning("could not deallocate claim=%s err=%s", claim["metadata"].get("name"), err)
            return False
        self.cache.apply("MODIFIED", written)
        return True

    def record_failure(self, pod: Mapping[str, Any], message: str, *, condition: bool) -> None:
        md = pod["metadata"]
        ns = md.get("namespace") or "default"
        key = (ns, md["name"])
        written: Mapping[str, Any] | None = None
        try:
            with self.transaction() as tx:
                cur = tx.try_get("Pod", ns, md["name"])
                if cur is None or cur["metadata"].get("uid") != md.get("uid"):
                    return
                regarding = self.cache.pods[key].obj if key in self.cache.pods else pod
                if condition:
                    status = dict(cur.get("status") or {})
                    status.setdefault("phase", "Pending")
                    changed = convert.set_condition(status, {
                        "type": "PodScheduled", "status": "False", "lastProbeTime": None, "reason": "Unschedulable",
                        "message": message, "lastTransitionTime": rfc3339(self.clock.now()),
                    })
                    if changed:
                        cur["status"] = status
                        written = tx.update_status(cur)
                    else:
                        written = None
                # handleSchedulingFailure: about the pod as the scheduler's informer has it, before
                # the condition update
                self.events.eventf(tx, regarding, WARNING, "FailedScheduling", "Scheduling", message)
        except NodeAgentError as err:
            logger.warning("could not record scheduling failure pod=%s/%s err=%s", ns, md["name"], err)
            return
        if written is not None:
            self.cache.apply("MODIFIED", written)
