"""PreBind waits for binding conditions (KEP-5007): the claims are allocated and reserved but the pod
stays unbound until every binding condition of its devices is True in status.devices; a True
binding failure condition or the binding timeout unreserves and deallocates the claims and the
pod is retried (upstream's dynamicresources plugin). Fake clock; no sleeps."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.scheduler import SchedulerOptions
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    node,
    pod,
    resource_slice,
)

OPTIONS = SchedulerOptions(initial_backoff=0.0, max_backoff=0.0, binding_timeout=60.0)


def _cluster() -> Cluster:
    c = Cluster(options=OPTIONS)
    gated = {**device("g0"), "bindingConditions": ["Attached"], "bindingFailureConditions": ["AttachFailed"]}
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'), resource_slice("n1", GPU, [gated]),
          claim("c", claim_spec(exact("gpu", "gpu"))), pod("p", claims={"gpu": "c"}))
    c.run()
    return c


def _report(c: Cluster, ctype: str, status: str = "True", message: str = "") -> None:
    cur = c.get("ResourceClaim", "c")
    cond: dict[str, Any] = {"type": ctype, "status": status, "reason": "Test", "message": message,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}
    cur["status"]["devices"] = [{"driver": GPU, "pool": "n1", "device": "g0", "conditions": [cond]}]
    c.store.update_status(cur)


async def test_pod_waits_unbound_until_the_condition_is_true() -> None:
    c = _cluster()
    claim_obj = c.get("ResourceClaim", "c")
    result = claim_obj["status"]["allocation"]["devices"]["results"][0]
    assert result["bindingConditions"] == ["Attached"]
    assert result["bindingFailureConditions"] == ["AttachFailed"]
    assert claim_obj["status"]["reservedFor"][0]["name"] == "p"
    assert not c.get("Pod", "p")["spec"].get("nodeName")
    _report(c, "Attached", "False")
    c.run()
    assert not c.get("Pod", "p")["spec"].get("nodeName")
    _report(c, "Attached")
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n1"


async def test_a_failure_condition_deallocates_and_retries() -> None:
    c = _cluster()
    _report(c, "AttachFailed", message="broken")
    c._feed()
    c.scheduler.schedule_next()  # PreBind fails: claim unreserved and deallocated
    c._feed()
    events = [e for e in c.store.list("Event") if e.get("reason") == "FailedScheduling"]
    assert any('claim c binding failed: reason=Test, message="broken"' in e["message"] for e in events)
    c.run()  # the retry allocates again and waits again
    cur = c.get("ResourceClaim", "c")
    assert "devices" not in cur["status"]
    assert cur["status"]["reservedFor"][0]["name"] == "p"
    assert not c.get("Pod", "p")["spec"].get("nodeName")


async def test_the_binding_timeout_fails_prebind() -> None:
    c = _cluster()
    assert c.scheduler.queue.next_deadline(c.clock.monotonic()) is not None  # parked until the timeout
    c.clock.advance(61)
    c._feed()
    c.scheduler.schedule_next()
    events = [e for e in c.store.list("Event") if e.get("reason") == "FailedScheduling"]
    assert any("claim c binding timeout" in e["message"] for e in events)
    assert "allocation" not in c.get("ResourceClaim", "c").get("status", {})


async def test_a_restart_keeps_waiting_until_the_timeout_from_the_allocation() -> None:
    """A pod whose claims are reserved but not bound (the daemon stopped during PreBind) is not
    bound by the restarted scheduler: it waits for the conditions, and the binding timeout still
    counts from the claim's allocationTimestamp (upstream's isClaimTimeout)."""
    c = _cluster()
    assert c.get("ResourceClaim", "c")["status"]["allocation"]["allocationTimestamp"]
    c.clock.advance(40)
    restarted = Cluster(options=OPTIONS, store=c.store)
    restarted.clock.advance(c.clock.now() - restarted.clock.now())
    restarted.run()
    assert not c.get("Pod", "p")["spec"].get("nodeName")
    due = restarted.scheduler.queue.next_deadline(restarted.clock.monotonic())
    assert due is not None and due <= restarted.clock.monotonic() + 20  # 60 s from the allocation, not anew
    restarted.clock.advance(21)
    restarted._feed()
    restarted.scheduler.schedule_next()
    events = [e for e in c.store.list("Event") if e.get("reason") == "FailedScheduling"]
    assert any("claim c binding timeout" in e["message"] for e in events)


async def test_a_restart_binds_once_the_conditions_are_true() -> None:
    c = _cluster()
    _report(c, "Attached")
    restarted = Cluster(options=OPTIONS, store=c.store)
    restarted.clock.advance(c.clock.now() - restarted.clock.now())
    restarted.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n1"
