"""Prepare and unprepare: the driver calls that give a pod its claims and take them back.

The kubelet's pkg/kubelet/cm/dra/manager.go (PrepareResources, UnprepareResources): every claim a
pod uses must be allocated and reserved for it; one NodePrepareResources per driver carries the
pod's claims not prepared yet, and the devices are recorded in the claim info cache (committed)
before the pod is answered ready. A claim shared by several pods is prepared once and unprepared
(one NodeUnprepareResources per driver) when the last of them is gone; what failed is left for
`retry` (the manager's 60 s loop). Pods prepare concurrently (each from its pod worker, as the
kubelet's): the cache lock is never held across a driver call, and per-claim locks
(claimlocks.py) keep the driver calls about one claim in order, so a hanging
NodePrepareResources stalls only the pods of its claims. Drivers are reached only through the
DriverRegistry port and claims only through ClaimSource.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodeagent.dra import extended, model
from nodeagent.dra.claiminfo import ClaimInfoCache
from nodeagent.dra.claimlocks import ClaimLocks
from nodeagent.dra.model import ClaimEntry, ClaimView, PodRecord
from nodeagent.dra.ports import ClaimSource, DriverCallError, DriverRegistry, PreparedDevice, PrepareResult
from nodeagent.errors import NodeAgentError
from nodeagent.objects.pod.model import Pod
from nodeagent.pods.ports import StartResult

logger = logging.getLogger(__name__)

REASON = "FailedPrepareDynamicResources"


class ClaimPreparer:
    """The pod's claims joined, prepared on their drivers and recorded; unused claims unprepared."""

    def __init__(self, registry: DriverRegistry, claims: ClaimSource, cache: ClaimInfoCache, *,
                 optional_node_operations: bool = False) -> None:
        self._registry = registry
        self._claims = claims
        self._cache = cache
        self._optional_node_operations = optional_node_operations  # the DRAOptionalNodeOperations gate
        self._claim_locks = ClaimLocks()  # driver calls about one claim, in order

    def busy(self) -> bool:
        """Whether a prepare or unprepare is in flight (the cache or a claim is held)."""
        return self._cache.lock.locked() or self._claim_locks.busy()

    def claim_names(self, pod: Pod) -> list[tuple[str, str]]:
        """The pod's claims (pod claim name, ResourceClaim name), the scheduler's extended one last."""
        names = list(self._claims.pod_claim_names(pod))
        special = extended.extended_claim(pod)
        if special is not None:  # extended resources backed by DRA: the scheduler's claim
            names.append((extended.EXTENDED_POD_CLAIM, special.claim_name))
        return names

    # --- prepare ------------------------------------------------------------------------------

    async def prepare(self, pod: Pod, names: Sequence[tuple[str, str]]) -> PodRecord | StartResult:
        """Join the claims (cache lock), then, holding the claims' locks, call the drivers for what
        is not prepared yet (no cache lock) and record their answers (cache lock). The pod's
        record once every claim is prepared, else why not yet."""
        docs = await self._fetch(pod, names)
        if isinstance(docs, StartResult):
            return docs
        async with self._cache.lock:
            joined = self._join(pod, names, docs)
        if isinstance(joined, StartResult):
            return joined
        async with self._claim_locks.hold(v.uid for _, v in joined):
            async with self._cache.lock:
                to_prepare = self._to_prepare([v.uid for _, v in joined])
                missing = sorted(d for d in to_prepare if not self._registry.is_registered(d))
                if missing:
                    return StartResult(False, REASON,
                                       "; ".join(f"DRA driver {d} is not registered" for d in missing))
                calls = [(driver, uids, [self._cache.claims[u].ref for u in uids])
                         for driver, uids in sorted(to_prepare.items())]
            errors = []
            for n, (driver, uids, refs) in enumerate(calls, 1):
                try:
                    answer = await self._registry.prepare(driver, refs)
                except DriverCallError as err:
                    logger.warning("NodePrepareResources failed driver=%s claims=%d err=%s", driver, len(refs), err)
                    errors.append(f"NodePrepareResources: {driver}: {err}")
                    continue
                async with self._cache.lock:
                    errors.extend(self._prepared(driver, uids, answer))
                    if n == len(calls) and not errors:
                        # the last answer and the pod's record commit together, before "ready"
                        return self._record_pod(pod, joined)
                    self._cache.flush()
            if errors:
                return StartResult(False, REASON, "; ".join(errors))
            async with self._cache.lock:  # nothing to call: every claim was prepared already
                return self._record_pod(pod, joined)

    async def _fetch(self, pod: Pod, names: Sequence[tuple[str, str]]
                     ) -> dict[str, Mapping[str, Any]] | StartResult:
        """Every claim of the pod as the API server has it now (no lock held): the kubelet GETs each
        at every PrepareResources, and fails the attempt with the first claim it cannot use."""
        docs: dict[str, Mapping[str, Any]] = {}
        for _, claim_name in names:
            if not claim_name:
                return StartResult(False, REASON, model.claim_not_created(pod.namespace, pod.name))
            try:
                doc = await self._claims.fetch_claim(pod.namespace, claim_name)
            except NodeAgentError as err:
                return StartResult(False, REASON, f"fetch ResourceClaim {claim_name}: {err}")
            if doc is None:
                return StartResult(False, REASON, model.claim_not_found(claim_name))
            docs[claim_name] = doc
        return docs

    def _join(self, pod: Pod, names: Sequence[tuple[str, str]], docs: Mapping[str, Mapping[str, Any]]
              ) -> list[tuple[str, ClaimView]] | StartResult:
        """Check every claim is the pod's (from its template), reserved for it and allocated, and
        add the pod to them; lock held."""
        views: list[tuple[str, ClaimView]] = []
        skipped: dict[str, dict[str, frozenset[str]]] = {}  # claim uid -> driver -> skipped operations
        templated = {rc.name for rc in pod.resource_claims
                     if rc.resource_claim_template_name and not rc.resource_claim_name}
        for pod_claim, claim_name in names:
            doc = docs[claim_name]
            view = model.parse_claim(pod.namespace, claim_name, doc)
            problem = model.claim_problem(view, pod.namespace, pod.name, pod.uid, must_own=pod_claim in templated)
            if problem:
                return StartResult(False, REASON, problem)
            skipped[view.uid] = extended.skipped_operations(doc)
            if skipped[view.uid] and not self._optional_node_operations and view.uid not in self._cache.claims:
                return StartResult(False, REASON, f"ResourceClaim {claim_name}: {extended.GATE_DISABLED}")
            views.append((pod_claim, view))

        # The pod joins its claims (durably, before any driver call: a crash mid-call leaves the
        # claim known, so it is prepared again for the pod or unprepared if the pod is gone).
        for _, view in views:
            entry = self._cache.claims.get(view.uid)
            if entry is None:
                entry = ClaimEntry(view.uid, view.namespace, view.name, view.results, view.drivers,
                                   {}, frozenset({pod.uid}), skipped=skipped.get(view.uid, {}))
                self._cache.set_claim(entry)
            elif pod.uid not in entry.pods or entry.released:
                entry = dataclasses.replace(entry, pods=entry.pods | {pod.uid}, released=frozenset())
                self._cache.set_claim(entry)
            for driver in entry.drivers:
                if driver in entry.prepared:
                    continue
                if extended.skips(entry.skipped, driver, extended.SKIP_PREPARE):
                    # no NodePrepareResources (nor registration) needed: the allocated devices as they are
                    devices = tuple(PreparedDevice((r.request,), r.pool, r.device) for r in entry.results
                                    if r.driver == driver)
                    entry = dataclasses.replace(entry, prepared={**entry.prepared, driver: devices})
                    self._cache.set_claim(entry)
        self._cache.flush()
        return views

    def _to_prepare(self, uids: Sequence[str]) -> dict[str, list[str]]:
        """driver -> the claims (of `uids`) it has not prepared yet; lock held."""
        to_prepare: dict[str, list[str]] = {}
        for uid in dict.fromkeys(uids):
            entry = self._cache.claims[uid]
            for driver in entry.drivers:
                if driver not in entry.prepared:
                    to_prepare.setdefault(driver, []).append(uid)
        return to_prepare

    def _record_pod(self, pod: Pod, views: Sequence[tuple[str, ClaimView]]) -> PodRecord:
        """Every claim prepared: the pod's record (devices, CDI ids), committed; lock held."""
        record = model.pod_record(pod, [(pcn, self._cache.claims[v.uid]) for pcn, v in views])
        special = extended.extended_claim(pod)
        if special is not None:
            record = extended.with_refs(record, extended.container_refs(pod, special))
        self._cache.set_pod(record)
        self._cache.flush()
        logger.info("dra claims prepared pod=%s uid=%s claims=%s", pod.key, pod.uid,
                    ",".join(v.name for _, v in views))
        return record

    def _prepared(self, driver: str, uids: Sequence[str], answer: Mapping[str, PrepareResult]) -> list[str]:
        """Record one NodePrepareResources answer; lock held. The errors, as the kubelet words them."""
        errors = []
        skipped = 0
        for uid in uids:
            entry = self._cache.claims[uid]
            result = answer.get(uid)
            if result is None:
                skipped += 1
            elif result.error:
                errors.append(f"NodePrepareResources failed for ResourceClaim {entry.name}: {result.error}")
            else:
                self._cache.set_claim(dataclasses.replace(entry, prepared={**entry.prepared, driver: result.devices},
                                                          released=entry.released - {driver}))
        unknown = sorted(set(answer) - set(uids))
        if unknown:
            errors.append(f"NodePrepareResources returned result for unknown claim UID {unknown[0]}")
        if skipped:
            errors.append(f"NodePrepareResources skipped {skipped} ResourceClaims")
        return errors

    # --- unprepare ----------------------------------------------------------------------------

    async def release(self, pod: Pod) -> list[str]:
        """The pod no longer uses its claims: it leaves them, and claims without pods are
        unprepared. The errors (those claims are retried later)."""
        async with self._cache.lock:
            unused = []
            for entry in self._cache.claims_of_pod(pod.uid):
                entry = dataclasses.replace(entry, pods=entry.pods - {pod.uid})
                self._cache.set_claim(entry)
                if not entry.pods:
                    unused.append(entry.uid)
            record = self._cache.pods.get(pod.uid)
            if record is not None and record.prepared:
                self._cache.set_pod(dataclasses.replace(record, prepared=False))
            self._cache.flush()
        return await self._unprepare_claims(unused)

    async def reconcile(self, active: set[str], known: set[str]) -> list[str]:
        """Drop pods no longer active from the claims, forget records of pods no longer known,
        and unprepare the claims left without pods. The unprepare errors."""
        async with self._cache.lock:
            for entry in list(self._cache.claims.values()):
                if not entry.pods <= active:
                    self._cache.set_claim(dataclasses.replace(entry, pods=entry.pods & active))
            for uid, record in list(self._cache.pods.items()):
                if uid not in known:
                    self._cache.drop_pod(uid)
                elif record.prepared and uid not in active:
                    self._cache.set_pod(dataclasses.replace(record, prepared=False))
            self._cache.flush()
            unused = self._cache.unused_claims()
        errors = await self._unprepare_claims(unused)
        if errors:
            logger.warning("dra reconcile left claims to unprepare errors=%s", "; ".join(errors))
        return errors

    async def retry(self) -> list[str]:
        """Unprepare the claims left over by earlier failures."""
        async with self._cache.lock:
            unused = self._cache.unused_claims()
        return await self._unprepare_claims(unused)

    async def _unprepare_claims(self, uids: Iterable[str]) -> list[str]:
        """NodeUnprepareResources, one call per driver, for the claims (of `uids`) no pod uses.

        Holding the claims' locks: plan (cache lock), call each driver (no cache lock), record
        each answer (cache lock). A pod that joined a claim meanwhile keeps it (and prepares it
        again after this, behind the claim's lock)."""
        wanted = sorted(set(uids))
        if not wanted:
            return []
        async with self._claim_locks.hold(wanted):
            async with self._cache.lock:
                groups = self._plan_unprepare(wanted)
                self._cache.flush()
                calls = [(driver, group, [self._cache.claims[u].ref for u in group])
                         for driver, group in sorted(groups.items())]
            errors: list[str] = []
            for driver, group, refs in calls:
                if not self._registry.is_registered(driver):
                    errors.append(f"DRA driver {driver} is not registered")
                    continue
                try:
                    answer = await self._registry.unprepare(driver, refs)
                except DriverCallError as err:
                    errors.append(f"NodeUnprepareResources: {driver}: {err}")
                    continue
                async with self._cache.lock:
                    errors.extend(self._unprepared(driver, group, answer))
                    self._cache.flush()
        return errors

    def _plan_unprepare(self, uids: Iterable[str]) -> dict[str, list[str]]:
        """driver -> claims to unprepare on it; claims needing no call are settled here; lock held."""
        groups: dict[str, list[str]] = {}
        for uid in uids:
            entry = self._cache.claims.get(uid)
            if entry is None or entry.pods:
                continue
            pending = [d for d in entry.drivers if d not in entry.released]
            if any(extended.skips(entry.skipped, d, extended.SKIP_UNPREPARE) for d in pending):
                # no NodeUnprepareResources for drivers whose devices all skip it
                skip = {d for d in pending if extended.skips(entry.skipped, d, extended.SKIP_UNPREPARE)}
                entry = dataclasses.replace(entry, released=entry.released | skip,
                                            prepared={d: v for d, v in entry.prepared.items() if d not in skip})
                self._cache.set_claim(entry)
                pending = [d for d in pending if d not in skip]
            if not pending:
                self._cache.drop_claim(uid)
            for driver in pending:
                groups.setdefault(driver, []).append(uid)
        return groups

    def _unprepared(self, driver: str, group: Sequence[str], answer: Mapping[str, str]) -> list[str]:
        """Record one NodeUnprepareResources answer; lock held."""
        errors = []
        for uid in group:
            entry = self._cache.claims[uid]
            if uid not in answer:
                errors.append(f"NodeUnprepareResources skipped ResourceClaim {entry.name}")
            elif answer[uid]:
                errors.append(f"NodeUnprepareResources failed for ResourceClaim {entry.name}: {answer[uid]}")
            else:
                prepared = {d: devs for d, devs in entry.prepared.items() if d != driver}
                entry = dataclasses.replace(entry, prepared=prepared, released=entry.released | {driver})
                if all(d in entry.released for d in entry.drivers) and not entry.pods:
                    self._cache.drop_claim(uid)
                    logger.info("dra claim unprepared claim=%s/%s uid=%s", entry.namespace, entry.name, uid)
                else:
                    self._cache.set_claim(entry)
        return errors
