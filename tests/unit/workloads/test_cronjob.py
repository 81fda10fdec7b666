"""The CronJob controller's decisions (upstream pkg/controller/cronjob ControllerV2.sync): scheduled times,
Job names and annotations, concurrency policies, the starting deadline, history limits and status."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.workloads import cronjob as C
from nodeagent.store.meta import rfc3339

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z, a whole minute
assert T0 % 60 == 0


def a_cronjob(status: dict[str, Any] | None = None, created: float = T0 + 10, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schedule": "*/5 * * * *", "concurrencyPolicy": "Allow", "suspend": False,
                            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                            "jobTemplate": {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                                            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                                           "containers": [{"name": "c"}]}}}}}
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "cj", "namespace": "default", "uid": "uid-cj", "creationTimestamp": rfc3339(created)},
            "spec": {**base, **spec}, "status": status or {}}


def a_job(name: str, *, finished: str = "", start: float | None = None, completion: float | None = None,
          ) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if start is not None:
        status["startTime"] = rfc3339(start)
    if finished:
        status["conditions"] = [{"type": finished, "status": "True"}]
    if completion is not None:
        status["completionTime"] = rfc3339(completion)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "7",
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "cj",
                                              "uid": "uid-cj", "controller": True}]},
            "status": status}


def ref(name: str) -> dict[str, Any]:
    return {"kind": "Job", "namespace": "default", "name": name, "uid": f"uid-{name}", "apiVersion": "batch/v1",
            "resourceVersion": "7"}


def test_nothing_before_the_first_scheduled_time_then_a_requeue_for_it() -> None:
    plan = C.plan(a_cronjob(), [], T0 + 100)
    assert plan.create is None and plan.events == [] and not plan.write_status
    assert plan.requeue_at == T0 + 300 + C.NEXT_DELTA


def test_a_scheduled_time_starts_a_job_named_for_its_minute() -> None:
    plan = C.plan(a_cronjob(), [], T0 + 301)
    assert plan.scheduled == T0 + 300
    job = plan.create
    assert job is not None
    assert job["metadata"]["name"] == f"cj-{int(T0 + 300) // 60}"
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"] == {"note": "x", C.SCHEDULED_ANNOTATION: "2027-01-15T08:05:00Z"}
    assert job["metadata"]["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "cj",
                                                   "uid": "uid-cj", "controller": True, "blockOwnerDeletion": True}]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert plan.requeue_at == T0 + 600 + C.NEXT_DELTA
    made = {**job, "metadata": {**job["metadata"], "uid": "u1", "resourceVersion": "9"}}
    assert C.started(plan, made) == {"active": [{"kind": "Job", "namespace": "default", "name": job["metadata"]["name"],
                                                 "uid": "u1", "apiVersion": "batch/v1", "resourceVersion": "9"}],
                                     "lastScheduleTime": rfc3339(T0 + 300)}


def test_time_zone_and_its_annotation() -> None:
    # 09:00 in Berlin is 08:00Z in January
    cj = a_cronjob(schedule="0 9 * * *", timeZone="Europe/Berlin", created=T0 - 30)
    plan = C.plan(cj, [], T0 + 5)
    assert plan.scheduled == T0
    assert plan.create is not None
    assert plan.create["metadata"]["annotations"][C.SCHEDULED_ANNOTATION] == "2027-01-15T09:00:00+01:00"


def test_the_same_scheduled_time_is_not_run_twice() -> None:
    name = f"cj-{int(T0 + 300) // 60}"
    cj = a_cronjob({"active": [ref(name)], "lastScheduleTime": rfc3339(T0 + 300)})
    plan = C.plan(cj, [a_job(name)], T0 + 310)
    assert plan.create is None and plan.events == [] and not plan.write_status


def test_forbid_waits_and_replace_deletes_the_running_job() -> None:
    old = f"cj-{int(T0) // 60}"
    status = {"active": [ref(old)], "lastScheduleTime": rfc3339(T0)}
    forbid = C.plan(a_cronjob(status, concurrencyPolicy="Forbid"), [a_job(old)], T0 + 301)
    assert forbid.create is None
    assert forbid.events == [("Normal", "JobAlreadyActive",
                              "Not starting job because prior execution is running and concurrency policy is Forbid")]
    assert forbid.requeue_at == T0 + 600 + C.NEXT_DELTA
    replace = C.plan(a_cronjob(status, concurrencyPolicy="Replace"), [a_job(old)], T0 + 301)
    assert [j["metadata"]["name"] for j in replace.delete] == [old]
    assert replace.events == [("Normal", "SuccessfulDelete", f"Deleted job {old}")]
    assert replace.create is not None and "active" not in replace.status
    allow = C.plan(a_cronjob(status), [a_job(old)], T0 + 301)
    assert allow.create is not None and allow.delete == []


def test_a_finished_job_leaves_active_and_sets_last_successful_time() -> None:
    name = f"cj-{int(T0) // 60}"
    cj = a_cronjob({"active": [ref(name)], "lastScheduleTime": rfc3339(T0)})
    plan = C.plan(cj, [a_job(name, finished="Complete", start=T0, completion=T0 + 20)], T0 + 30)
    assert plan.write_status
    assert plan.status == {"lastScheduleTime": rfc3339(T0), "lastSuccessfulTime": rfc3339(T0 + 20)}
    assert plan.events == [("Normal", "SawCompletedJob", f"Saw completed job: {name}, condition: Complete")]


def test_missing_and_unexpected_jobs() -> None:
    cj = a_cronjob({"active": [ref("gone")], "lastScheduleTime": rfc3339(T0)})
    plan = C.plan(cj, [a_job("stray")], T0 + 30)
    assert plan.events == [
        ("Warning", "UnexpectedJob", "Saw a job that the controller did not create or forgot: stray"),
        ("Normal", "MissingJob", "Active job went missing: gone")]
    assert "active" not in plan.status


def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    jobs = [a_job(f"ok{i}", finished="Complete", start=T0 - 1000 + i) for i in range(5)]
    jobs += [a_job("bad1", finished="Failed", start=T0 - 50), a_job("bad0", finished="Failed", start=T0 - 60)]
    plan = C.plan(a_cronjob({"lastScheduleTime": rfc3339(T0)}), jobs, T0 + 30)
    assert [j["metadata"]["name"] for j in plan.delete] == ["ok0", "ok1", "bad0"]
    assert [e[2] for e in plan.events[:3]] == ["Deleted job ok0", "Deleted job ok1", "Deleted job bad0"]


def test_suspend_and_a_deleted_cronjob_start_nothing() -> None:
    assert C.plan(a_cronjob(suspend=True), [], T0 + 301).create is None
    deleting = a_cronjob()
    deleting["metadata"]["deletionTimestamp"] = rfc3339(T0)
    assert C.plan(deleting, [], T0 + 301).create is None


def test_starting_deadline_missed() -> None:
    cj = a_cronjob({"lastScheduleTime": rfc3339(T0)}, startingDeadlineSeconds=10)
    plan = C.plan(cj, [], T0 + 330)  # 08:05 missed by 30 s: outside the window mostRecentScheduleTime looks at
    assert plan.create is None and plan.events == []
    assert plan.requeue_at == T0 + 600 + C.NEXT_DELTA
    assert C.plan(cj, [], T0 + 305).create is not None


def test_many_missed_start_times_warn_and_run_the_latest() -> None:
    plan = C.plan(a_cronjob(created=T0 - 86_400), [], T0 + 1)  # 288 missed five-minute slots
    assert ("Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease "
            ".spec.startingDeadlineSeconds or check clock skew") in plan.events
    assert plan.scheduled == T0


@pytest.mark.parametrize(("spec", "reason", "message"), [
    ({"schedule": "61 * * * *"}, "UnparseableSchedule",
     'unparseable schedule: "61 * * * *" : end of range (61) above maximum (59): 61'),
    ({"schedule": "59 23 31 2 *"}, "InvalidSchedule",
     "invalid schedule: 59 23 31 2 * : time difference between two schedules is less than 1 second"),
    ({"timeZone": "Mars/Olympus"}, "UnknownTimeZone",
     'invalid timeZone: "Mars/Olympus": unknown time zone Mars/Olympus'),
])
def test_schedules_that_cannot_run(spec: dict[str, Any], reason: str, message: str) -> None:
    plan = C.plan(a_cronjob(**spec), [], T0 + 301)
    assert plan.create is None and plan.requeue_at is None
    assert plan.events == [("Warning", reason, message)]


def test_tz_in_the_schedule_is_warned_about() -> None:
    plan = C.plan(a_cronjob(schedule="TZ=UTC */5 * * * *"), [], T0 + 301)
    assert plan.events[0][1] == "UnsupportedSchedule" and plan.create is not None
