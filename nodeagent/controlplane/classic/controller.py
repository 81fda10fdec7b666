"""The generic driver-controller loop of classic DRA (KEP-3063), around one DriverController.

One asyncio task per driver. It lists and watches ResourceClaims, PodSchedulingContexts,
Nodes and DeviceClasses and, for what changed:

- a claim of its controllerName: deallocates it when status.deallocationRequested is set, or
  when it is being deleted and no longer reserved (clearing allocation and the flag), and
  keeps the finalizer `<controllerName>/deletion-protection` exactly while it is allocated,
  so a deleted claim waits for its deallocation;
- a PodSchedulingContext whose pod uses pending claims of this controller: writes
  status.resourceClaims[].unsuitableNodes for every potential node (and for selectedNode),
  and, when a node is selected that suits all of them, allocates them for it (allocation with
  nodeSelector and `controller`, reservedFor the pod, the finalizer) in one transaction each.

Every change to the driver's claims or to nodes and classes re-checks the contexts in flight
(a freed device can make a node suitable). Writes read the current object inside a store
transaction, and a write that changes nothing is not written, so the loop converges on its own
events. An allocation failure is remembered for FAILURE_TTL seconds and reported as an
unsuitable node, so the scheduler picks another node; it also makes Events on the Pod, the
claim and the context.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from nodeagent.controlplane.classic import common as c
from nodeagent.controlplane.classic.driver import AllocationError, DriverController
from nodeagent.controlplane.classic.metrics import ClassicMetrics
from nodeagent.controlplane.events import NORMAL, WARNING, EventRecorder
from nodeagent.errors import Conflict, NodeAgentError, NotFound
from nodeagent.store import DELETED, RESYNC, ObjectStore, Watch, WatchEvent
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

FAILURE_TTL = 30.0
"""Seconds a failed allocation keeps its node unsuitable for the claim."""

Key = tuple[str, str]  # (namespace, name)


class ClassicController:
    """Runs one DriverController against the store: `await run()` until cancelled."""

    def __init__(
        self,
        store: ObjectStore,
        driver: DriverController,
        clock: Clock,
        *,
        events: EventRecorder | None = None,
        metrics: ClassicMetrics | None = None,
    ) -> None:
        self.store = store
        self.driver = driver
        self.clock = clock
        self.events = events if events is not None else c.controller_events(driver.name)
        self.metrics = metrics
        self.finalizer = c.finalizer(driver.name)
        self._failures: dict[str, dict[str, tuple[float, str]]] = {}
        """claim uid -> node -> (monotonic time, reason) of failed allocations."""
        self._watch: Watch | None = None
        self._busy = True
        self.synced = asyncio.Event()

    @property
    def name(self) -> str:
        return self.driver.name

    def idle(self) -> bool:
        """Nothing buffered and nothing being processed (tests wait for this)."""
        return self.synced.is_set() and not self._busy and (self._watch is None or self._watch.pending() == 0)

    # --- loop ---

    async def run(self) -> None:
        kinds = {c.CLAIM, c.PSC, c.NODE, c.DEVICE_CLASS}
        try:
            while True:
                self._busy = True
                listed, watch = self.store.list_and_watch(kinds)
                self._watch = watch
                with_claims = {(c.namespace_of(o), c.name_of(o)) for o in listed.items if o["kind"] == c.CLAIM}
                self._sync(with_claims, self._all_contexts())
                self.synced.set()
                self._busy = False
                resync = await self._follow(watch)
                watch.close()
                if not resync:
                    return
                logger.info("classic controller relists controller=%s", self.name)
        finally:
            self._busy = False
            if self._watch is not None:
                self._watch.close()

    async def _follow(self, watch: Watch) -> bool:
        """Process events until the watch ends; True when it ended with RESYNC."""
        async for first in watch:
            self._busy = True
            batch = [first]
            while (ev := watch.get_nowait()) is not None:
                batch.append(ev)
            if any(ev.type == RESYNC for ev in batch):
                return True
            claims, contexts = self._dirty(batch)
            self._sync(claims, contexts)
            self._busy = False
            await asyncio.sleep(0)
        return False

    def _dirty(self, batch: list[WatchEvent]) -> tuple[set[Key], set[Key]]:
        claims: set[Key] = set()
        contexts: set[Key] = set()
        everything = False
        for ev in batch:
            key = (ev.namespace or "default", ev.name)
            if ev.kind == c.CLAIM:
                if c.controller_of(ev.object) != self.name:
                    continue
                if ev.type == DELETED:
                    self._failures.pop(c.uid_of(ev.object), None)
                else:
                    claims.add(key)
                everything = True
            elif ev.kind == c.PSC:
                if ev.type != DELETED:
                    contexts.add(key)
            else:  # Node, DeviceClass: suitability may have changed anywhere
                self._failures.clear()
                everything = True
        if everything:
            contexts |= self._all_contexts()
        return claims, contexts

    def _all_contexts(self) -> set[Key]:
        return {(c.namespace_of(o), c.name_of(o)) for o in self.store.scan(c.PSC)}

    def _sync(self, claims: set[Key], contexts: set[Key]) -> None:
        for ns, name in sorted(claims):
            self._guard(self.sync_claim, ns, name)
        for ns, name in sorted(contexts):
            self._guard(self.sync_context, ns, name)

    def _guard(self, fn: Any, ns: str, name: str) -> None:
        try:
            fn(ns, name)
        except (Conflict, NotFound) as err:  # changed under us: its watch event brings it back
            logger.debug("classic sync raced controller=%s object=%s/%s err=%s", self.name, ns, name, err)
        except NodeAgentError as err:
            logger.warning("classic sync failed controller=%s object=%s/%s err=%s", self.name, ns, name, err)
        except Exception:
            logger.exception("classic sync crashed controller=%s object=%s/%s", self.name, ns, name)

    # --- claims ---

    def sync_claim(self, namespace: str, name: str) -> None:
        claim = self.store.peek(c.CLAIM, namespace, name)
        if claim is None or c.controller_of(claim) != self.name:
            return
        alloc = c.allocation(claim)
        has_fin = self.finalizer in (c.meta(claim).get("finalizers") or ())
        if alloc is not None and (
            c.deallocation_requested(claim) or (c.deleting(claim) and not c.reserved_for(claim))
        ):
            self._deallocate(namespace, name)
        elif alloc is None and has_fin:
            with self.store.transaction() as tx:
                cur = tx.get(c.CLAIM, namespace, name)
                if c.allocation(cur) is None:
                    self._drop_finalizer(tx, cur)
        elif alloc is not None and not has_fin and not c.deleting(claim):
            with self.store.transaction() as tx:
                cur = tx.get(c.CLAIM, namespace, name)
                cur["metadata"]["finalizers"] = [*(cur["metadata"].get("finalizers") or ()), self.finalizer]
                tx.update(cur)

    def _deallocate(self, namespace: str, name: str) -> None:
        with self.store.transaction() as tx:
            cur = tx.get(c.CLAIM, namespace, name)
            if c.allocation(cur) is None or c.reserved_for(cur):
                return
            self.driver.deallocate(cur)
            status = {k: v for k, v in c.status(cur).items() if k not in ("allocation", "deallocationRequested")}
            cur["status"] = status
            cur = tx.update_status(cur)
            self._drop_finalizer(tx, cur)
        logger.info("classic claim deallocated controller=%s claim=%s/%s", self.name, namespace, name)
        self._count("deallocate", "success")

    def _drop_finalizer(self, tx: Any, cur: dict[str, Any]) -> None:
        fins = [f for f in cur["metadata"].get("finalizers") or () if f != self.finalizer]
        if fins != list(cur["metadata"].get("finalizers") or ()):
            cur["metadata"]["finalizers"] = fins
            tx.update(cur)

    # --- scheduling contexts ---

    def sync_context(self, namespace: str, name: str) -> None:
        psc = self.store.peek(c.PSC, namespace, name)
        if psc is None or c.deleting(psc):
            return
        pod = self.store.peek(c.POD, namespace, name)
        if pod is None or c.deleting(pod):
            return
        pending = self._pending_claims(pod)
        spec = psc.get("spec") or {}
        selected = str(spec.get("selectedNode") or "")
        potential = [str(n) for n in spec.get("potentialNodes") or ()]
        unsuitable = self._report(psc, pending, potential, selected)
        if not selected or not pending:
            return
        if any(selected in unsuitable[pod_name] for pod_name, _ in pending):
            logger.debug("classic selected node unsuitable controller=%s pod=%s/%s node=%s",
                         self.name, namespace, name, selected)
            return
        failed = False
        for _, claim in pending:
            if not self._allocate(pod, psc, claim, selected):
                failed = True
                break
        if failed:
            self._report(psc, self._pending_claims(pod), potential, selected)

    def _pending_claims(self, pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
        ns = c.namespace_of(pod)
        out: list[tuple[str, Mapping[str, Any]]] = []
        for pod_name, claim_name in c.pod_claims(pod):
            if claim_name is None:
                continue
            claim = self.store.peek(c.CLAIM, ns, claim_name)
            if claim is None or c.controller_of(claim) != self.name:
                continue
            if c.pending(claim) and not c.deleting(claim):
                out.append((pod_name, claim))
        return out

    def _report(
        self,
        psc: Mapping[str, Any],
        pending: list[tuple[str, Mapping[str, Any]]],
        potential: list[str],
        selected: str,
    ) -> dict[str, set[str]]:
        """Write status.resourceClaims for this driver's pending claims; returns pod claim name ->
        unsuitable nodes."""
        nodes = list(potential)
        if selected and selected not in nodes:
            nodes.append(selected)
        now = self.clock.monotonic()
        unsuitable: dict[str, set[str]] = {}
        entries: dict[str, dict[str, Any]] = {}
        for pod_name, claim in pending:
            bad = self.driver.unsuitable_nodes(claim, nodes) if nodes else set()
            for node, (when, _) in self._failures.get(c.uid_of(claim), {}).items():
                if now - when < FAILURE_TTL and node in nodes:
                    bad.add(node)
            unsuitable[pod_name] = bad
            ordered = ([selected] if selected in bad else []) + [n for n in potential if n in bad and n != selected]
            entry: dict[str, Any] = {"name": pod_name}
            if ordered:
                entry["unsuitableNodes"] = ordered[: c.MAX_NODES]
            entries[pod_name] = entry
        if self._write_status(psc, entries):
            self._count("report_unsuitable_nodes", "success")
        return unsuitable

    def _write_status(self, psc: Mapping[str, Any], entries: dict[str, dict[str, Any]]) -> bool:
        ns, name = c.namespace_of(psc), c.name_of(psc)
        mine = self._my_pod_claim_names(ns, name)
        with self.store.transaction() as tx:
            cur = tx.get(c.PSC, ns, name)
            old = list((cur.get("status") or {}).get("resourceClaims") or ())
            new = [e for e in old if e.get("name") not in entries and e.get("name") not in mine]
            new += [entries[k] for k in sorted(entries)]
            new.sort(key=lambda e: str(e.get("name")))
            if new == old:
                return False
            cur["status"] = {"resourceClaims": new} if new else {}
            tx.update_status(cur)
        return True

    def _my_pod_claim_names(self, namespace: str, pod_name: str) -> set[str]:
        pod = self.store.peek(c.POD, namespace, pod_name)
        if pod is None:
            return set()
        out = set()
        for pod_claim, claim_name in c.pod_claims(pod):
            claim = self.store.peek(c.CLAIM, namespace, claim_name) if claim_name else None
            if claim is not None and c.controller_of(claim) == self.name:
                out.add(pod_claim)
        return out

    def _allocate(self, pod: Mapping[str, Any], psc: Mapping[str, Any], claim: Mapping[str, Any], node: str) -> bool:
        ns, name = c.namespace_of(claim), c.name_of(claim)
        try:
            with self.store.transaction() as tx:
                cur = tx.get(c.CLAIM, ns, name)
                if not c.pending(cur) or c.deleting(cur) or c.uid_of(cur) != c.uid_of(claim):
                    return True
                alloc = dict(self.driver.allocate(cur, node))
                alloc["controller"] = self.name
                alloc.setdefault("allocationTimestamp", rfc3339(self.clock.now()))
                if self.finalizer not in (cur["metadata"].get("finalizers") or ()):
                    cur["metadata"]["finalizers"] = [*(cur["metadata"].get("finalizers") or ()), self.finalizer]
                    cur = tx.update(cur)
                cur["status"] = {**c.status(cur), "allocation": alloc, "reservedFor": [c.pod_ref(pod)]}
                cur["status"].pop("deallocationRequested", None)
                tx.update_status(cur)
        except AllocationError as err:
            self._failures.setdefault(c.uid_of(claim), {})[node] = (self.clock.monotonic(), str(err))
            message = f"{self.name}: claim {name} for node {node}: {err}"
            logger.info("classic allocation failed controller=%s claim=%s/%s node=%s err=%s",
                        self.name, ns, name, node, err)
            for obj in (pod, claim, psc):
                self.events.record_now(self.store, obj, WARNING, err.reason, message, now=self.clock.now())
            self._count("allocate", "failure")
            return False
        logger.info("classic claim allocated controller=%s claim=%s/%s node=%s", self.name, ns, name, node)
        self.events.record_now(self.store, claim, NORMAL, "Allocated", f"{self.name}: allocated for node {node}",
                               now=self.clock.now())
        self._count("allocate", "success")
        return True

    def _count(self, operation: str, result: str) -> None:
        if self.metrics is not None:
            self.metrics.count(self.name, operation, result)
