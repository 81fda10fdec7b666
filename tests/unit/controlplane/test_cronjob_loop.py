"""The embedded CronJob controller in the running control plane, on a FakeClock: nothing before the first
scheduled minute, then a Job per scheduled time (named for its minute, the scheduled-timestamp annotation,
the Job strategy's selector), run to completion by the Job controller on a virtual node, status.active and
lastSuccessfulTime following, Forbid holding the next run while one is active, and the history limit
deleting the oldest finished Job; the events as kube-controller-manager writes them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from nodeagent.config import parse_documents
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.controlplane.workloads import cronjob
from nodeagent.objects import workloads
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.waiting import eventually

START = 1_800_000_030.0  # half a minute past 08:00:00Z


async def until(clock: FakeClock, check: Callable[[], bool], *, step: float, limit: int) -> None:
    """Move the clock `step` at a time (real time passing in between, for the components to act and go back
    to sleep) until `check()`; at most `limit` steps."""
    for _ in range(limit):
        if check():
            return
        clock.advance(step)
        await asyncio.sleep(0.03)
    raise AssertionError(f"not reached after {limit * step} s on the fake clock")


async def sleeping_until(clock: FakeClock, wall: float) -> None:
    """Wait until some component sleeps until `wall` (the CronJob's requeue): advancing the clock
    before it sleeps would push its wake-up a whole interval later."""
    await eventually(lambda: any(abs(d - (wall - START)) < 0.01 for d in clock.deadlines), what=f"a sleep to {wall}")


def jobs(store: ObjectStore) -> list[dict[str, Any]]:
    return sorted(store.list("Job", "default"), key=lambda j: j["metadata"]["name"])


def reasons(store: ObjectStore) -> list[tuple[str, str]]:
    evs = [e for e in store.list("Event", "default") if e["involvedObject"]["kind"] == "CronJob"]
    evs.sort(key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))
    return [(e["reason"], e["message"]) for e in evs]


async def test_a_cronjob_runs_its_jobs_on_the_fake_clock() -> None:
    clock = FakeClock(start=START)
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    cfg = parse_documents([
        {"kind": "KubeletConfiguration"},
        {"kind": "NodeAgentConfiguration", "nodeName": "local",
         "virtualNodes": [{"name": "node-{index}", "count": 1,
                           "capacity": {"cpu": "2", "memory": "8Gi", "pods": "10"}}]},
    ])
    cp = ControlPlane(cfg, store, clock, CollectorRegistry())
    cj: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick", "namespace": "default"},
        "spec": {"schedule": "*/2 * * * *", "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1,
                 "jobTemplate": {"spec": {"template": {
                     "metadata": {"annotations": {"nodeagent.dev/finish-after-seconds": "150"}},
                     "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    workloads.set_defaults(cj)
    await cp.start()
    try:
        made = store.create(cj)
        await sleeping_until(clock, 1_800_000_120.1)
        assert jobs(store) == []
        clock.advance(90.5)  # 08:02:00 passes (the requeue is 100 ms after it)
        first = f"tick-{1_800_000_120 // 60}"
        await eventually(lambda: [j["metadata"]["name"] for j in jobs(store)] == [first], what="the first Job")
        job = store.get("Job", "default", first)
        assert job["metadata"]["annotations"] == {cronjob.SCHEDULED_ANNOTATION: "2027-01-15T08:02:00Z"}
        assert job["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
        uid = job["metadata"]["uid"]
        assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        await eventually(lambda: store.get("CronJob", "default", "tick")["status"].get("active"), what="active")
        status = store.get("CronJob", "default", "tick")["status"]
        assert status["lastScheduleTime"] == "2027-01-15T08:02:00Z"
        assert [r["name"] for r in status["active"]] == [first]
        await eventually(lambda: [p for p in store.list("Pod", "default") if p["status"].get("phase") == "Running"],
                         what="the Job's pod running")
        await sleeping_until(clock, 1_800_000_240.1)
        clock.advance(120.0)  # 08:04:00 passes: the first Job still runs, Forbid holds the next one
        await eventually(lambda: ("JobAlreadyActive", "Not starting job because prior execution is running and "
                                  "concurrency policy is Forbid") in reasons(store), what="JobAlreadyActive")
        assert len(jobs(store)) == 1
        # the pod ends 150 s after it started (08:04:30): the Job completes and the 08:04 run, still unmet
        # (no startingDeadlineSeconds), starts at once
        second = f"tick-{1_800_000_240 // 60}"
        await until(clock, lambda: [j["metadata"]["name"] for j in jobs(store)] == [first, second], step=2.0,
                    limit=60)
        assert store.get("Job", "default", second)["metadata"]["annotations"] == {
            cronjob.SCHEDULED_ANNOTATION: "2027-01-15T08:04:00Z"}
        await eventually(lambda: [r["name"] for r in store.get("CronJob", "default", "tick")["status"]
                                  .get("active") or ()] == [second], what="the second Job active")
        status = store.get("CronJob", "default", "tick")["status"]
        assert status["lastScheduleTime"] == "2027-01-15T08:04:00Z"
        assert status["lastSuccessfulTime"] >= "2027-01-15T08:04:30Z"
        assert ("SawCompletedJob", f"Saw completed job: {first}, condition: Complete") in reasons(store)
        assert ("SuccessfulCreate", f"Created job {second}") in reasons(store)
        # the second Job completes at 08:07, the 08:06 run starts, and successfulJobsHistoryLimit 1 deletes the
        # first Job
        third = f"tick-{1_800_000_360 // 60}"
        await until(clock, lambda: [j["metadata"]["name"] for j in jobs(store)] == [second, third], step=2.0,
                    limit=150)
        assert ("SuccessfulDelete", f"Deleted job {first}") in reasons(store)
    finally:
        await cp.stop()
        store.close()
