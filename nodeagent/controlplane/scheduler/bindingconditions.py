"""PreBind's wait for binding conditions (KEP-5007), as upstream's dynamicresources plugin does it.

One responsibility: decide and undo. When a pod's claims got devices with bindingConditions
(copied into the allocation results), the scheduler writes the claims (allocation and
reservedFor) but does not bind the pod; it waits until the driver (or a test, through the
claim's status subresource) reports every binding condition True in status.devices. A binding
failure condition that is True, or the binding timeout (DynamicResourcesArgs.bindingTimeout,
600 s by default; controlPlane.bindingTimeout here) fails PreBind: the claims this pod
reserved are unreserved and deallocated (status.devices cleared with them) and the pod is
retried after its backoff, so the next attempt may pick other devices. `check` is pure; the
scheduler core keeps one `Waiting` per pod and parks the pod in its queue until a claim event
or the deadline brings it back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.clock import Clock
from nodeagent.controlplane import allocator as model
from nodeagent.controlplane import convert
from nodeagent.controlplane.convert_taints import device_conditions, results
from nodeagent.controlplane.scheduler.binder import Binder
from nodeagent.controlplane.scheduler.cache import ClusterCache
from nodeagent.controlplane.scheduler.queue import Key, SchedulingQueue
from nodeagent.errors import NodeAgentError
from nodeagent.store import ObjectStore

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


def check(claims: Sequence[Mapping[str, Any] | None]) -> tuple[str, str]:
    """(READY | PENDING | FAILED, message) of the binding conditions of these claims' devices."""
    pending = ""
    for claim in claims:
        if claim is None:
            return FAILED, "a resourceclaim of the pod was deleted while waiting for its binding conditions"
        ref = f"{claim['metadata'].get('namespace') or 'default'}/{claim['metadata']['name']}"
        if not convert.is_allocated(claim):
            return FAILED, f"claim {ref} was deallocated while waiting for its binding conditions"
        for result in results(claim):
            wanted = result.get("bindingConditions") or ()
            if not wanted:
                continue
            device = f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}"
            have = device_conditions(claim, result)
            for failure in result.get("bindingFailureConditions") or ():
                if have.get(failure) == "True":
                    return FAILED, (f"claim {ref}: binding failed for device {device}: "
                                    f"binding failure condition {failure} is True")
            missing = [c for c in wanted if have.get(c) != "True"]
            if missing and not pending:
                pending = f"claim {ref}: waiting for binding conditions {', '.join(missing)} of device {device}"
    return (PENDING, pending) if pending else (READY, "")


def timeout_message(timeout: float, pending: str) -> str:
    return f"binding timed out after {timeout:g}s: {pending}" if pending else f"binding timed out after {timeout:g}s"


def unreserve(store: ObjectStore, cache: ClusterCache, claims: Sequence[tuple[str, str]], uid: str) -> None:
    """Upstream's Unreserve after a failed PreBind: the pod leaves every claim's reservedFor; a
    claim no other pod reserves is deallocated (its status.devices goes with the allocation)."""
    for ns, name in claims:
        try:
            with store.transaction(savepoints=False) as tx:
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
        """The claims are written (bind with bind_pod=False): wait from now."""
        self.waiting[key] = Waiting(node, uid, tuple(claims), self.clock.monotonic() + self.timeout)

    def forget(self, key: Key) -> None:
        self.waiting.pop(key, None)

    def step(self, key: Key, pod: Mapping[str, Any]) -> tuple[str, str]:
        """(READY | PENDING | FAILED, message): READY has bound the pod; PENDING parked it until a
        claim event or the deadline; FAILED unreserved its claims, recorded the failure on the pod
        and put it back to be retried after its backoff."""
        waiting = self.waiting[key]
        state, message = check([self.cache.claims.get(c) for c in waiting.claims])
        now = self.clock.monotonic()
        if state == PENDING and now >= waiting.deadline:
            state, message = FAILED, timeout_message(self.timeout, message)
        if state == PENDING:
            self.queue.park(key, now, waiting.deadline)
            return state, message
        del self.waiting[key]
        if state == READY:
            self.binder.bind_pod(pod, waiting.uid, waiting.node)
            self.queue.done(key)
            return state, ""
        unreserve(self.store, self.cache, waiting.claims, waiting.uid)
        self.binder.record_failure(pod, message, condition=True)
        self.queue.failed(key, self.clock.monotonic(), retry=True)
        return state, message
