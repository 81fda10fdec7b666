"""PreBind's wait for binding conditions (KEP-5007), as upstream's dynamicresources plugin does it.

One responsibility: decide and undo. When a pod's claims got devices with bindingConditions
(copied into the allocation results), the scheduler writes the claims (allocation and
reservedFor) but does not bind the pod; it waits until the driver (or a test, through the
claim's status subresource) reports every binding condition True in status.devices. A binding
failure condition that is True, or the binding timeout (DynamicResourcesArgs.bindingTimeout,
600 s by default; controlPlane.bindingTimeout here) fails PreBind: the claims this pod
reserved are unreserved and deallocated (status.devices cleared with them) and the pod is
retried after its backoff, so the next attempt may pick other devices. The timeout counts from
the claims' allocationTimestamp, so after a daemon restart a pod whose claims are reserved but
not bound waits out the rest of it (upstream's scheduler does the same after a restart: the
claims are already reserved, PreBind only waits). Failure texts are upstream's. `check` is pure; the
scheduler core keeps one `Waiting` per pod and parks the pod in its queue until a claim event
or the deadline brings it back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nodeagent.controlplane import allocator as model
from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.convert.taints import device_conditions, results
from nodeagent.controlplane.scheduler.binder import Binder
from nodeagent.controlplane.scheduler.cache import ClusterCache
from nodeagent.controlplane.scheduler.queue import Key, SchedulingQueue
from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore, Transaction
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

READY = "ready"
PENDING = "pending"
FAILED = "failed"


@dataclass(frozen=True)
class Waiting:
    """A pod whose claims are written and whose binding waits for device conditions."""

    node: str
    uid: str
    claims: tuple[tuple[str, str], ...]
    """(namespace, name) of every claim of the pod."""
    deadline: float
    """Monotonic time at which PreBind gives up (the binding timeout)."""


def needs_wait(outcome: model.AllocationOutcome | None, allocated: Sequence[Mapping[str, Any]]) -> bool:
    """Does any device of the pod's claims (allocated now or before) have binding conditions?"""
    if outcome is not None and outcome.results and any(
            d.binding_conditions for r in outcome.results for d in r.devices):
        return True
    return any(r.get("bindingConditions") for c in allocated for r in results(c))


def _failed_condition(claim: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first binding failure condition of the result's device that is True, if any."""
    ident = (result.get("driver"), result.get("pool"), result.get("device"))
    for entry in (claim.get("status") or {}).get("devices") or ():
        if (entry.get("driver"), entry.get("pool"), entry.get("device")) != ident:
            continue
        for failure in result.get("bindingFailureConditions") or ():
            for cond in entry.get("conditions") or ():
                if cond.get("type") == failure and cond.get("status") == "True":
                    return dict(cond)
    return None


def _go_quote(text: str) -> str:
    """Go's %q for the texts a condition message holds (JSON escaping is the same for them)."""
    return json.dumps(text, ensure_ascii=False)


def check(claims: Sequence[Mapping[str, Any] | None], expired: Callable[[Mapping[str, Any]], bool] | None = None,
          ) -> tuple[str, str]:
    """(READY | PENDING | FAILED, message) of the binding conditions of these claims' devices, as
    upstream's isPodReadyForBinding: a True binding failure condition fails with "claim NAME
    binding failed: reason=..., message=..."; a claim not ready whose binding timeout passed
    (`expired`, counted from its allocationTimestamp) fails with "claim NAME binding timeout"."""
    pending = ""
    for claim in claims:
        if claim is None:
            return FAILED, "a resourceclaim of the pod was deleted while waiting for its binding conditions"
        name = claim["metadata"]["name"]
        if not convert.is_allocated(claim):
            return FAILED, f"claim {name} was deallocated while waiting for its binding conditions"
        ready = True
        for result in results(claim):
            wanted = result.get("bindingConditions") or ()
            if not wanted:
                continue
            failed = _failed_condition(claim, result)
            if failed is not None:
                return FAILED, (f"claim {name} binding failed: reason={failed.get('reason') or ''}, "
                                f"message={_go_quote(str(failed.get('message') or ''))}")
            have = device_conditions(claim, result)
            missing = [c for c in wanted if have.get(c) != "True"]
            if missing:
                ready = False
                if not pending:
                    device = f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}"
                    pending = f"claim {name}: waiting for binding conditions {', '.join(missing)} of device {device}"
        if not ready and expired is not None and expired(claim):
            return FAILED, f"claim {name} binding timeout"
    return (PENDING, pending) if pending else (READY, "")


def allocated_at(claim: Mapping[str, Any] | None) -> float | None:
    """The claim's allocationTimestamp (wall seconds), None when it has none."""
    text = str((((claim or {}).get("status") or {}).get("allocation") or {}).get("allocationTimestamp") or "")
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def unreserve(transaction: Callable[[], AbstractContextManager[Transaction]], cache: ClusterCache,
              claims: Sequence[tuple[str, str]], uid: str) -> None:
    """Upstream's Unreserve after a failed PreBind: the pod leaves every claim's reservedFor; a
    claim no other pod reserves is deallocated (its status.devices goes with the allocation)."""
    for ns, name in claims:
        try:
            with transaction() as tx:
                cur = tx.try_get("ResourceClaim", ns, name)
                if cur is None or not convert.is_reserved_for(cur, uid):
                    continue
                status = dict(cur.get("status") or {})
                others = [r for r in convert.reserved_for(cur) if str(r.get("uid")) != uid]
                if others:
                    status["reservedFor"] = others
                else:
                    for key in ("allocation", "reservedFor", "devices"):
                        status.pop(key, None)
                cur["status"] = status
                written = tx.update_status(cur)
        except NodeAgentError as err:
            logger.warning("could not unreserve claim=%s/%s err=%s", ns, name, err)
            continue
        cache.apply("MODIFIED", written)


class PreBind:
    """The pods waiting in PreBind, and the step that ends or continues a wait."""

    def __init__(self, store: ObjectStore, cache: ClusterCache, binder: Binder, queue: SchedulingQueue,
                 clock: Clock, timeout: float) -> None:
        self.store, self.cache, self.binder, self.queue, self.clock = store, cache, binder, queue, clock
        self.timeout = timeout
        self.waiting: dict[Key, Waiting] = {}

    def start(self, key: Key, node: str, uid: str, claims: Sequence[tuple[str, str]]) -> None:
        """The claims are written (bind with bind_pod=False): wait until the binding timeout
        counted from the claims' allocationTimestamp (the earliest), as upstream's isClaimTimeout
        does; so a pod that was already waiting before a restart keeps its deadline instead of
        binding at once or waiting anew. A claim without a timestamp counts from now."""
        wall, mono = self.clock.now(), self.clock.monotonic()
        stamps = [t for t in (allocated_at(self.cache.claims.get(c)) for c in claims) if t is not None]
        start = min(stamps, default=wall)
        self.waiting[key] = Waiting(node, uid, tuple(claims), mono + max(0.0, start + self.timeout - wall))

    def expired(self, claim: Mapping[str, Any]) -> bool:
        at = allocated_at(claim)
        return at is not None and self.clock.now() > at + self.timeout

    def forget(self, key: Key) -> None:
        self.waiting.pop(key, None)

    def step(self, key: Key, pod: Mapping[str, Any]) -> tuple[str, str]:
        """(READY | PENDING | FAILED, message): READY has bound the pod; PENDING parked it until a
        claim event or the deadline; FAILED unreserved its claims, recorded the failure on the pod
        and put it back to be retried after its backoff."""
        waiting = self.waiting[key]
        state, message = check([self.cache.claims.get(c) for c in waiting.claims], self.expired)
        now = self.clock.monotonic()
        if state == PENDING and now >= waiting.deadline:  # a claim without allocationTimestamp
            name = waiting.claims[0][1] if waiting.claims else ""
            state, message = FAILED, f"claim {name} binding timeout"
        if state == PENDING:
            self.queue.park(key, now, waiting.deadline)
            return state, message
        del self.waiting[key]
        if state == READY:
            self.binder.bind_pod(pod, waiting.uid, waiting.node)
            self.queue.done(key)
            return state, ""
        unreserve(self.binder.transaction, self.cache, waiting.claims, waiting.uid)
        self.binder.clear_node_alloc(pod, waiting.uid)
        self.binder.record_failure(pod, message, condition=True)
        self.queue.failed(key, self.clock.monotonic(), retry=True)
        return state, message
