"""A pod whose ResourceClaim does not exist is told why, as upstream's scheduler does.

Upstream's dynamicresources PreFilter rejects it as UnschedulableAndUnresolvable with
`resourceclaim "x" not found`: PodScheduled=False, reason Unschedulable, the FitError text, and a
FailedScheduling event. The pod then waits for the claim (no timer), and goes on once it exists.
Before: the pod stayed Pending with no condition and no event.
"""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.metrics import UNSCHEDULABLE
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

MESSAGE = ('0/2 nodes are available: resourceclaim "nope" not found. '
           'preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.')


def cluster() -> Cluster:
    c = Cluster()
    c.add(node("n1"), node("n2"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, [device("g0")]))
    return c


def failed_scheduling(c: Cluster, name: str) -> list[dict[str, Any]]:
    return [e for e in c.store.list("Event", "default")
            if e["involvedObject"]["name"] == name and e["reason"] == "FailedScheduling"]


async def test_missing_claim_is_unschedulable_with_reason_and_event() -> None:
    c = cluster()
    c.add(pod("p", claims={"gpu": "nope"}))
    c.run()
    p = c.get("Pod", "p")
    cond = {x["type"]: x for x in p["status"]["conditions"]}["PodScheduled"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", MESSAGE)
    events = failed_scheduling(c, "p")
    # one attempt: the pod's own PodScheduled=False write does not bring it back (as upstream's queue)
    assert [(e["type"], e["message"], e["reportingComponent"]) for e in events] == [
        ("Warning", MESSAGE, "default-scheduler")]
    assert "series" not in events[0]
    assert c.scheduler.queue.counts()["gated"] == 1  # waits for the claim, not for a timer
    assert c.metrics.registry.get_sample_value("scheduler_schedule_attempts_total", {"result": UNSCHEDULABLE})

    c.add(claim("nope", claim_spec(exact("gpu", "gpu"))))
    c.run()
    p = c.get("Pod", "p")
    assert p["spec"]["nodeName"] == "n1"
    cond = {x["type"]: x for x in p["status"]["conditions"]}["PodScheduled"]
    assert cond["status"] == "True"


async def test_pod_bound_by_its_author_gets_no_scheduler_verdict() -> None:
    """The scheduler leaves a pod with spec.nodeName alone; the kubelet says why it cannot start."""
    c = cluster()
    c.add(pod("p", claims={"gpu": "nope"}, node_name="n1"))
    c.run()
    p = c.get("Pod", "p")
    assert not any(x["type"] == "PodScheduled" for x in (p.get("status") or {}).get("conditions") or ())
    assert failed_scheduling(c, "p") == []
