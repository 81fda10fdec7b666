"""The Job controller's decisions (upstream pkg/controller/job), non-indexed Jobs."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.workloads import job as J
from nodeagent.store.meta import rfc3339
from tests.unit.workloads.objects import NOW, TEMPLATE, pod


def a_job(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "default", "uid": "uid-j", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": TEMPLATE, **spec},
            "status": status or {}}


def done(name: str, job: dict[str, Any], phase: str, ago: float = 5) -> dict[str, Any]:
    p = pod(name, owner=job, phase=phase, ready=False)
    p["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {"finishedAt": rfc3339(NOW - ago)}}}]
    return p


def test_first_sync_starts_parallelism_pods() -> None:
    plan = J.plan(a_job(completions=5, parallelism=2), [], NOW)
    assert len(plan.create) == 2
    assert plan.create[0]["metadata"]["generateName"] == "j-"
    assert plan.create[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert plan.status is not None
    assert plan.status["startTime"] == rfc3339(NOW) and plan.status["active"] == 2


def test_remaining_completions_bound_the_active_pods() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10)}, completions=3, parallelism=2)
    pods = [done("s1", job, "Succeeded"), done("s2", job, "Succeeded"), pod("r1", owner=job)]
    plan = J.plan(job, pods, NOW)
    assert plan.create == [] and plan.delete == []
    assert plan.status is not None and plan.status["succeeded"] == 2 and plan.status["active"] == 1


def test_completion_conditions_in_upstreams_order() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10)}, completions=2)
    plan = J.plan(job, [done("s1", job, "Succeeded"), done("s2", job, "Succeeded")], NOW)
    assert plan.status is not None
    assert [(c["type"], c["reason"]) for c in plan.status["conditions"]] == [
        ("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
    assert plan.status["completionTime"] == rfc3339(NOW)
    assert ("Normal", "Completed", "Job completed") in plan.events
    job["status"] = plan.status
    assert J.plan(job, [], NOW).status is None  # a finished Job is left alone


def test_backoff_limit_fails_the_job_and_deletes_active_pods() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10)}, completions=3, backoffLimit=1)
    pods = [done("f1", job, "Failed"), done("f2", job, "Failed"), pod("r1", owner=job)]
    plan = J.plan(job, pods, NOW)
    assert [p["metadata"]["name"] for p in plan.delete] == ["r1"]
    assert plan.status is not None
    assert [(c["type"], c["reason"], c["message"]) for c in plan.status["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
    assert plan.status["terminating"] == 1  # Failed follows once the pod is gone


def test_a_failed_pod_is_replaced_after_the_backoff() -> None:
    job = a_job({"startTime": rfc3339(NOW - 100)}, completions=1)
    plan = J.plan(job, [done("f1", job, "Failed", ago=3)], NOW)
    assert plan.create == [] and plan.recheck_at == NOW - 3 + 10
    assert len(J.plan(job, [done("f1", job, "Failed", ago=11)], NOW).create) == 1


def test_active_deadline() -> None:
    job = a_job({"startTime": rfc3339(NOW - 61)}, activeDeadlineSeconds=60)
    plan = J.plan(job, [pod("r1", owner=job)], NOW)
    assert plan.status is not None
    assert plan.status["conditions"][0]["reason"] == "DeadlineExceeded"
    fresh = a_job({"startTime": rfc3339(NOW - 10)}, activeDeadlineSeconds=60)
    assert J.plan(fresh, [pod("r1", owner=fresh)], NOW).recheck_at == NOW + 50


def test_suspended_job_deletes_its_pods_and_says_so() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10)}, suspend=True, parallelism=1)
    plan = J.plan(job, [pod("r1", owner=job)], NOW)
    assert [p["metadata"]["name"] for p in plan.delete] == ["r1"]
    assert plan.status is not None
    assert [(c["type"], c["status"], c["reason"]) for c in plan.status["conditions"]] == [
        ("Suspended", "True", "JobSuspended")]


def test_indexed_jobs_are_left_alone() -> None:
    assert J.plan(a_job(completionMode="Indexed", completions=2), [], NOW).unsupported
