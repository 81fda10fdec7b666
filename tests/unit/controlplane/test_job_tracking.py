"""The embedded Job controller tracks pods with finalizers as kube-controller-manager does
(trackJobStatusAndRemoveFinalizers): pods are created holding batch.kubernetes.io/job-tracking, a finished
pod's uid goes through status.uncountedTerminatedPods (written before its finalizer is removed, then the
counters), and counts survive the deletion of the finished pods."""

from __future__ import annotations

import asyncio
from typing import Any

from nodeagent.controlplane.controllers.job import JobController
from nodeagent.controlplane.workloads.job import TRACKING_FINALIZER
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.store.watch import MODIFIED
from nodeagent.util.clock import FakeClock

LABELS = {"batch.kubernetes.io/job-name": "j", "job-name": "j"}


def _job(store: ObjectStore, completions: int, parallelism: int) -> dict[str, Any]:
    made = store.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
                         "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": 6,
                                  "selector": {"matchLabels": dict(LABELS)},
                                  "template": {"metadata": {"labels": dict(LABELS)},
                                               "spec": {"restartPolicy": "Never",
                                                        "containers": [{"name": "c", "image": "pause"}]}}}})
    return made


def _pods(store: ObjectStore) -> list[dict[str, Any]]:
    return sorted(store.list("Pod", "default"), key=lambda p: p["metadata"]["name"])


def _finish(store: ObjectStore, pod: dict[str, Any], phase: str, clock: FakeClock) -> None:
    from nodeagent.store.meta import rfc3339

    cur = store.get("Pod", "default", pod["metadata"]["name"])
    cur["status"] = {"phase": phase, "containerStatuses": [
        {"name": "c", "state": {"terminated": {"exitCode": 0 if phase == "Succeeded" else 1,
                                               "finishedAt": rfc3339(clock.now())}}}]}
    store.update_status(cur)


def test_pods_are_tracked_counted_once_and_counts_survive_their_deletion() -> None:
    clock = FakeClock(start=1_800_000_000.0)
    store = ObjectStore.memory(builtin_kinds(), clock)
    ctl = JobController(store, clock)
    _job(store, completions=2, parallelism=1)

    async def scenario() -> None:
        ctl.sync(("default", "j"))
        (first,) = _pods(store)
        assert first["metadata"]["finalizers"] == [TRACKING_FINALIZER]
        clock.advance(1)
        _finish(store, first, "Succeeded", clock)
        watch = store.watch({"Job"})
        ctl.sync(("default", "j"))
        seen = []
        while (ev := watch.get_nowait()) is not None:
            if ev.type == MODIFIED:
                seen.append(ev.object["status"])
        watch.close()
        # first the uid among the uncounted (counters unchanged), then the counter with the list emptied
        assert seen[0]["uncountedTerminatedPods"] == {"succeeded": [first["metadata"]["uid"]]}
        assert "succeeded" not in seen[0]
        assert seen[-1]["succeeded"] == 1 and seen[-1]["uncountedTerminatedPods"] == {}
        assert "finalizers" not in store.get("Pod", "default", first["metadata"]["name"])["metadata"]
        # the counted pod is deleted (no finalizer: it goes at once); its count stays
        store.delete("Pod", "default", first["metadata"]["name"])
        ctl.sync(("default", "j"))
        job = store.get("Job", "default", "j")
        assert job["status"]["succeeded"] == 1
        (second,) = _pods(store)
        assert second["metadata"]["finalizers"] == [TRACKING_FINALIZER]
        clock.advance(1)
        _finish(store, second, "Succeeded", clock)
        ctl.sync(("default", "j"))
        job = store.get("Job", "default", "j")
        assert job["status"]["succeeded"] == 2
        assert [c["type"] for c in job["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
        assert len(_pods(store)) == 1 and "finalizers" not in _pods(store)[0]["metadata"]

    asyncio.run(scenario())


def test_a_failed_pod_counts_once_even_when_synced_again() -> None:
    clock = FakeClock(start=1_800_000_000.0)
    store = ObjectStore.memory(builtin_kinds(), clock)
    ctl = JobController(store, clock)
    _job(store, completions=1, parallelism=1)
    ctl.sync(("default", "j"))
    (first,) = _pods(store)
    clock.advance(1)
    _finish(store, first, "Failed", clock)
    ctl.sync(("default", "j"))
    ctl.sync(("default", "j"))
    job = store.get("Job", "default", "j")
    assert job["status"]["failed"] == 1 and job["status"]["uncountedTerminatedPods"] == {}
    assert "finalizers" not in store.get("Pod", "default", first["metadata"]["name"])["metadata"]
    store.delete("Pod", "default", first["metadata"]["name"])
    ctl.sync(("default", "j"))
    assert store.get("Job", "default", "j")["status"]["failed"] == 1


def test_an_adopted_pod_gets_the_finalizer_and_a_released_one_loses_it() -> None:
    """ClaimPods with the tracking finalizer: the adoption patch adds it, the release patch removes it."""
    from nodeagent.controlplane.workloads import job as J

    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "default", "uid": "uid-j", "generation": 1},
           "spec": {"completions": 1, "parallelism": 1, "selector": {"matchLabels": dict(LABELS)},
                    "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": []}}},
           "status": {"startTime": "2027-01-15T08:00:00Z"}}
    orphan = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "o", "namespace": "default", "uid": "uid-o",
                                                              "labels": dict(LABELS)},
              "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "uid-j", "controller": True}
    stray = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "s", "namespace": "default", "uid": "uid-s", "labels": {"other": "x"},
                          "ownerReferences": [ref], "finalizers": [TRACKING_FINALIZER, "example.com/keep"]},
             "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    plan = J.plan(job, [orphan, stray], 1_800_000_000.0)
    assert [p["metadata"]["finalizers"] for p in plan.adopt] == [[TRACKING_FINALIZER]]
    assert [p["metadata"]["finalizers"] for p in plan.release] == [["example.com/keep"]]
    assert plan.create == []  # the adopted pod is the Job's one active pod
    assert "finalizers" not in orphan["metadata"]  # the input is left alone
