"""The scheduler's side of classic DRA (KEP-3063): ClassicScheduling over the object store.

`step(pod, claims, feasible_nodes)` is one idempotent pass of the KEP's scheduler pseudo-code
for a pod whose claims name a control-plane controller:

1. Every claim allocated and usable on a common feasible node: reserve the claims for the pod
   (one transaction) and answer ready with that node (the selected node when there is one).
2. Claims pending: keep a PodSchedulingContext named after the pod (owned by it, controller)
   whose potentialNodes are the feasible nodes where the allocated claims are usable and every
   pending claim's DeviceClass.suitableNodes matches, at most 128 (the selected node kept).
   When potentialNodes change, the step also clears status.resourceClaims in the same
   transaction, so the drivers' unsuitableNodes always describe the current potentialNodes and
   "enough information" is exact. selectedNode is set to the first potential node no driver
   reported unsuitable, at once with one pending claim, and with several only after every
   pending claim has its status entry. A pod created with spec.nodeName gets a context with only
   selectedNode.
3. No node fits because an allocated claim is usable only where the rest cannot go: set
   status.deallocationRequested on one such claim not reserved by another pod (releasing this
   pod's own reservation in the same write), and wait for the driver to deallocate.

Writes happen only when something changes, and reads are the store's committed objects, so
calling it on every store change is cheap.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodeagent.controlplane.classic import common as c
from nodeagent.controlplane.classic.api import ClassicDecision
from nodeagent.controlplane.events import NORMAL, EventRecorder
from nodeagent.errors import Conflict, NodeAgentError, NotFound
from nodeagent.objects.common import node_selector_matches
from nodeagent.objects.resource.validation import RESERVED_FOR_MAX
from nodeagent.objects.resource.views import claim_requests
from nodeagent.store import ObjectStore
from nodeagent.store.txn import Transaction
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

Claim = Mapping[str, Any]


def _wait(message: str) -> ClassicDecision:
    return ClassicDecision(ready=False, node=None, message=message)


def _names(claims: Sequence[Claim]) -> str:
    return ", ".join(c.name_of(x) for x in claims)


class StoreClassicScheduling:
    """ClassicScheduling backed by the ObjectStore (see the module docstring)."""

    def __init__(self, store: ObjectStore, clock: Clock, *, events: EventRecorder | None = None) -> None:
        self.store = store
        self.clock = clock
        self.events = events if events is not None else c.scheduler_events()

    def in_flight(self) -> int:
        """PodSchedulingContexts in the store (pods negotiating with a controller)."""
        return self.store.count(c.PSC)

    # --- ClassicScheduling ---

    def step(self, pod: Mapping[str, Any], claims: Sequence[Claim], feasible_nodes: Sequence[str]) -> ClassicDecision:
        try:
            return self._step(pod, claims, feasible_nodes)
        except (Conflict, NotFound) as err:  # raced with a controller: the next change calls us again
            logger.debug("classic step raced pod=%s/%s err=%s", c.namespace_of(pod), c.name_of(pod), err)
            return _wait(f"retrying classic allocation: {err}")
        except NodeAgentError as err:
            logger.warning("classic step failed pod=%s/%s err=%s", c.namespace_of(pod), c.name_of(pod), err)
            return _wait(f"classic allocation: {err}")

    def forget(self, pod: Mapping[str, Any]) -> None:
        ns, name = c.namespace_of(pod), c.name_of(pod)
        psc = self.store.peek(c.PSC, ns, name)
        if psc is None or not self._owned_by(psc, pod):
            return
        try:
            self.store.delete(c.PSC, ns, name, uid=c.uid_of(psc))
        except (NotFound, Conflict):
            return
        logger.debug("classic context deleted pod=%s/%s", ns, name)

    # --- the pseudo-code ---

    def _step(self, pod: Mapping[str, Any], claims: Sequence[Claim], feasible_nodes: Sequence[str]) -> ClassicDecision:
        ns = c.namespace_of(pod)
        fresh: list[Claim] = []
        for given in claims:
            cur = self.store.peek(c.CLAIM, c.namespace_of(given) or ns, c.name_of(given))
            if cur is None:
                return _wait(f'waiting for resourceclaim "{c.name_of(given)}" to be created')
            if c.deleting(cur):
                return _wait(f'resourceclaim "{c.name_of(cur)}" is being deleted')
            fresh.append(cur)
        if not fresh:
            return _wait("no classic claims")
        for claim in fresh:
            if c.deallocation_requested(claim):
                return _wait(
                    f'waiting for {c.controller_of(claim)} to deallocate resourceclaim "{c.name_of(claim)}"'
                )
        preset = str((pod.get("spec") or {}).get("nodeName") or "")
        nodes = [preset] if preset else list(dict.fromkeys(feasible_nodes))
        labels = _LabelCache(self.store)
        allocated = [x for x in fresh if not c.pending(x)]
        pending = [x for x in fresh if c.pending(x)]
        usable = [n for n in nodes if all(c.usable_on(x, n, labels(n)) for x in allocated)]
        psc = self.store.peek(c.PSC, ns, c.name_of(pod))
        if psc is not None and not self._owned_by(psc, pod):
            self.store.delete(c.PSC, ns, c.name_of(pod), uid=c.uid_of(psc))  # a previous pod's context
            psc = None
        selected = str(((psc or {}).get("spec") or {}).get("selectedNode") or "")

        if not pending:
            if not usable:
                return self._recover(pod, allocated, nodes, labels)
            node = selected if selected in usable else usable[0]
            return self._reserve(pod, fresh, node)

        suitable = [n for n in usable if all(self._class_suits(x, n, labels(n)) for x in pending)]
        if not suitable:
            if not usable and allocated:
                return self._recover(pod, allocated, nodes, labels)
            if not nodes:
                return _wait("no feasible node for the pod")
            return _wait(
                f"no feasible node is in the suitableNodes of the device classes of resourceclaims {_names(pending)}"
            )
        if preset:
            return self._preset(pod, psc, pending, preset)

        potential = suitable[: c.MAX_NODES]
        if selected in suitable and selected not in potential:
            potential = [*potential[: c.MAX_NODES - 1], selected]
        psc = self._ensure_context(pod, psc, potential)
        reports = _reports(psc)
        pod_names = {c.name_of(x): c.pod_claim_name(pod, c.name_of(x)) for x in pending}
        candidates = [
            n for n in potential if not any(n in reports.get(pod_names[c.name_of(x)], ()) for x in pending)
        ]
        if selected and selected in candidates:
            return _wait(self._allocating(pending, selected))
        informed = len(pending) == 1 or all(pod_names[c.name_of(x)] in reports for x in pending)
        if not informed:
            self._select(psc, None)
            missing = [x for x in pending if pod_names[c.name_of(x)] not in reports]
            return _wait(f"waiting for {_controllers(missing)} to report unsuitable nodes for resourceclaims "
                         f"{_names(missing)}")
        if candidates:
            self._select(psc, candidates[0])
            return _wait(self._allocating(pending, candidates[0]))
        self._select(psc, None)
        if allocated and len(usable) < len(nodes):
            return self._recover(pod, allocated, nodes, labels)
        detail = "; ".join(
            f"{c.name_of(x)}: unsuitable on {', '.join(sorted(reports.get(pod_names[c.name_of(x)], ())))}"
            for x in pending
            if reports.get(pod_names[c.name_of(x)])
        )
        return _wait(f"no potential node is suitable for the classic claims ({detail})")

    def _allocating(self, pending: Sequence[Claim], node: str) -> str:
        return f"waiting for {_controllers(pending)} to allocate resourceclaims {_names(pending)} for node {node}"

    def _preset(
        self, pod: Mapping[str, Any], psc: Mapping[str, Any] | None, pending: Sequence[Claim], node: str
    ) -> ClassicDecision:
        """The pod names its node already: a context with only selectedNode."""
        spec = {"selectedNode": node}
        if psc is None:
            psc = self._create_context(pod, spec)
        elif (psc.get("spec") or {}) != spec:
            with self.store.transaction() as tx:
                cur = tx.get(c.PSC, c.namespace_of(psc), c.name_of(psc))
                cur["spec"] = spec
                psc = tx.update(cur)
        reports = _reports(psc)
        refused = [x for x in pending if node in reports.get(c.pod_claim_name(pod, c.name_of(x)), ())]
        if refused:
            return _wait(f"{_controllers(refused)} cannot allocate resourceclaims {_names(refused)} for node {node}")
        return _wait(self._allocating(pending, node))

    # --- writes ---

    def _ensure_context(
        self, pod: Mapping[str, Any], psc: Mapping[str, Any] | None, potential: list[str]
    ) -> Mapping[str, Any]:
        if psc is None:
            return self._create_context(pod, {"potentialNodes": potential})
        spec = psc.get("spec") or {}
        if list(spec.get("potentialNodes") or ()) == potential:
            return psc
        with self.store.transaction() as tx:
            cur = tx.get(c.PSC, c.namespace_of(psc), c.name_of(psc))
            new_spec: dict[str, Any] = {"potentialNodes": potential}
            if spec.get("selectedNode") in potential:
                new_spec["selectedNode"] = spec["selectedNode"]
            cur["spec"] = new_spec
            cur = tx.update(cur)
            if cur.get("status"):  # the drivers' reports were about the old potentialNodes
                cur["status"] = {}
                cur = tx.update_status(cur)
            return cur

    def _create_context(self, pod: Mapping[str, Any], spec: Mapping[str, Any]) -> Mapping[str, Any]:
        owner = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": c.name_of(pod),
            "uid": c.uid_of(pod),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        md: dict[str, Any] = {"name": c.name_of(pod), "namespace": c.namespace_of(pod)}
        if c.uid_of(pod):
            md["ownerReferences"] = [owner]
        created = self.store.create(
            {"apiVersion": c.PSC_API_VERSION, "kind": c.PSC, "metadata": md, "spec": dict(spec)}
        )
        logger.debug("classic context created pod=%s/%s", md["namespace"], md["name"])
        return created

    def _select(self, psc: Mapping[str, Any], node: str | None) -> None:
        spec = psc.get("spec") or {}
        if (spec.get("selectedNode") or None) == node:
            return
        with self.store.transaction() as tx:
            cur = tx.get(c.PSC, c.namespace_of(psc), c.name_of(psc))
            new_spec = dict(cur.get("spec") or {})
            if node is None:
                new_spec.pop("selectedNode", None)
            else:
                new_spec["selectedNode"] = node
            cur["spec"] = new_spec
            tx.update(cur)

    def _reserve(self, pod: Mapping[str, Any], claims: Sequence[Claim], node: str) -> ClassicDecision:
        uid = c.uid_of(pod)
        todo = [x for x in claims if uid not in c.reserved_uids(x)]
        full = [x for x in todo if len(c.reserved_for(x)) >= RESERVED_FOR_MAX]
        if full:
            return _wait(f"resourceclaims {_names(full)} are reserved for {RESERVED_FOR_MAX} consumers already")
        if todo:
            with self.store.transaction() as tx:
                for claim in todo:
                    cur = tx.get(c.CLAIM, c.namespace_of(claim), c.name_of(claim))
                    _add_reservation(tx, cur, pod)
        return ClassicDecision(ready=True, node=node, message="")

    def _recover(
        self,
        pod: Mapping[str, Any],
        allocated: Sequence[Claim],
        nodes: Sequence[str],
        labels: Callable[[str], Mapping[str, str]],
    ) -> ClassicDecision:
        """Some allocated claim keeps the pod off every node: ask its controller to deallocate it."""
        uid = c.uid_of(pod)
        for claim in allocated:
            if all(c.usable_on(claim, n, labels(n)) for n in nodes):
                continue  # it does not restrict the pod
            if c.reserved_uids(claim) - {uid}:
                continue  # in use by another consumer: the KEP forbids deallocating it
            with self.store.transaction() as tx:
                cur = tx.get(c.CLAIM, c.namespace_of(claim), c.name_of(claim))
                status = dict(c.status(cur))
                status.pop("reservedFor", None)
                status["deallocationRequested"] = True
                cur["status"] = status
                tx.update_status(cur)
            message = (
                f'requested deallocation of resourceclaim "{c.name_of(claim)}": it is allocated for nodes '
                "where the pod's other claims cannot be allocated"
            )
            logger.info("classic deallocation requested pod=%s/%s claim=%s",
                        c.namespace_of(pod), c.name_of(pod), c.name_of(claim))
            self.events.record_now(self.store, claim, NORMAL, "DeallocationRequested", message, now=self.clock.now())
            return _wait(message)
        restricting = [x for x in allocated if not all(c.usable_on(x, n, labels(n)) for n in nodes)]
        return _wait(
            f"resourceclaims {_names(restricting)} are allocated for nodes where the pod cannot run "
            "and are in use by other pods"
        )

    # --- reading ---

    def _class_suits(self, claim: Claim, node: str, labels: Mapping[str, str]) -> bool:
        """Every request has an alternative whose DeviceClass.suitableNodes (if any) selects the node."""
        for request in claim_requests(claim):
            ok = False
            for alt in request.alternatives:
                dc = self.store.peek(c.DEVICE_CLASS, "", alt.device_class_name)
                selector = ((dc or {}).get("spec") or {}).get("suitableNodes")
                if not selector or node_selector_matches(selector, node, labels):
                    ok = True
                    break
            if not ok:
                return False
        return True

    @staticmethod
    def _owned_by(psc: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        uid = c.uid_of(pod)
        refs = c.meta(psc).get("ownerReferences") or ()
        if not uid or not refs:
            return True
        return any(r.get("uid") == uid for r in refs)


def _add_reservation(tx: Transaction, cur: dict[str, Any], pod: Mapping[str, Any]) -> None:
    if c.uid_of(pod) in c.reserved_uids(cur):
        return
    cur["status"] = {**c.status(cur), "reservedFor": [*c.reserved_for(cur), c.pod_ref(pod)]}
    tx.update_status(cur)


def _reports(psc: Mapping[str, Any]) -> dict[str, set[str]]:
    """Pod claim name -> unsuitable nodes, for the claims a driver reported on."""
    return {
        str(e.get("name")): set(e.get("unsuitableNodes") or ())
        for e in (psc.get("status") or {}).get("resourceClaims") or ()
    }


def _controllers(claims: Sequence[Claim]) -> str:
    return ", ".join(sorted({c.controller_of(x) for x in claims}))


class _LabelCache:
    """Node labels read once per step."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._labels: dict[str, Mapping[str, str]] = {}

    def __call__(self, node: str) -> Mapping[str, str]:
        found = self._labels.get(node)
        if found is None:
            obj = self._store.peek(c.NODE, "", node)
            found = ((obj or {}).get("metadata") or {}).get("labels") or {}
            self._labels[node] = found
        return found
