"""The scheduler's Scheduled event: upstream's finishBinding records, once a pod is bound,
Normal/Scheduled "Successfully assigned <ns>/<pod> to <node>" through client-go tools/events
(events.k8s.io/v1: action Binding, reporting controller default-scheduler, no source, count or
first/last timestamps); it has no owner, so it outlives the pod until the event TTL."""

from __future__ import annotations

from tests.unit.controlplane.test_scheduler_support import gpu_cluster, pod


async def test_bound_pod_gets_one_scheduled_event() -> None:
    c = gpu_cluster(devices=1, namespace="team")
    c.add(pod("p", templates={"gpu": "t"}, namespace="team"))
    c.run()
    bound = c.get("Pod", "p", "team")
    assert bound["spec"]["nodeName"] == "n1"
    [event] = [e for e in c.store.list("Event", "team") if e["reason"] == "Scheduled"]
    assert event["type"] == "Normal"
    assert event["message"] == "Successfully assigned team/p to n1"
    assert event["action"] == "Binding"
    assert event["source"] == {}
    assert (event["firstTimestamp"], event["lastTimestamp"]) == (None, None)
    assert "count" not in event and "series" not in event
    assert event["reportingComponent"] == "default-scheduler"
    assert event["reportingInstance"].startswith("default-scheduler-")
    assert event["eventTime"].endswith("Z") and len(event["eventTime"]) == len("2026-11-30T09:35:42.427252Z")
    assert event["metadata"]["name"].startswith("p.")
    int(event["metadata"]["name"].removeprefix("p."), 16)  # <pod>.<%x of UnixNano>
    involved = event["involvedObject"]
    assert (involved["kind"], involved["namespace"], involved["name"], involved["uid"]) == (
        "Pod", "team", "p", bound["metadata"]["uid"])
    # the assumed pod's version: the one the scheduler had, before the binding wrote the pod
    assert int(involved["resourceVersion"]) < int(bound["metadata"]["resourceVersion"])
    c.run()  # nothing more to do: no second event, no series
    assert [e.get("series") for e in c.store.list("Event", "team") if e["reason"] == "Scheduled"] == [None]


async def test_unschedulable_pod_has_no_scheduled_event_and_events_outlive_the_pod_until_the_ttl() -> None:
    c = gpu_cluster(devices=1, namespace="team")
    c.add(pod("a", templates={"gpu": "t"}, namespace="team"), pod("b", templates={"gpu": "t"}, namespace="team"))
    c.run()
    reasons = sorted((e["involvedObject"]["name"], e["reason"]) for e in c.store.list("Event", "team"))
    bound = "a" if c.get("Pod", "a", "team")["spec"].get("nodeName") else "b"
    other = "b" if bound == "a" else "a"
    assert reasons == sorted([(bound, "Scheduled"), (other, "FailedScheduling")])
    c.delete("Pod", bound, "team")
    c.run()
    # upstream's events have no ownerReferences: they stay after the pod, until the event TTL
    assert [(e["involvedObject"]["name"], e["reason"]) for e in c.store.list("Event", "team")
            if e["involvedObject"]["name"] == bound] == [(bound, "Scheduled")]
    assert c.get("Pod", other, "team")["spec"]["nodeName"] == "n1"  # the device freed: the other pod bound
    assert sorted(e["reason"] for e in c.store.list("Event", "team")
                  if e["involvedObject"]["name"] == other) == ["FailedScheduling", "Scheduled"]
