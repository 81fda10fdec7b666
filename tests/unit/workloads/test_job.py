"""The Job controller's decisions (upstream pkg/controller/job), non-indexed Jobs."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.workloads import job as J
from nodeagent.controlplane.workloads import job_indexed as JI
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


def test_success_policy_and_backoff_limit_per_index_are_left_alone() -> None:
    assert J.plan(a_job(successPolicy={"rules": [{"succeededCount": 1}]}, completions=2), [], NOW).unsupported
    assert J.plan(a_job(completionMode="Indexed", completions=2, backoffLimitPerIndex=1), [], NOW).unsupported


def indexed(name: str, job: dict[str, Any], ix: int, phase: str = "Running") -> dict[str, Any]:
    p = done(name, job, phase) if phase in ("Succeeded", "Failed") else pod(name, owner=job)
    p["metadata"]["annotations"] = {JI.INDEX_KEY: str(ix)}
    return p


def test_indexed_job_creates_the_lowest_pending_indexes() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10)}, completionMode="Indexed", completions=5, parallelism=3)
    plan = J.plan(job, [indexed("a", job, 0, "Succeeded"), indexed("b", job, 2)], NOW)
    made = [(p["metadata"]["generateName"], p["metadata"]["annotations"][JI.INDEX_KEY],
             p["metadata"]["labels"][JI.INDEX_KEY], p["spec"]["hostname"]) for p in plan.create]
    assert made == [("j-1-", "1", "1", "j-1"), ("j-3-", "3", "3", "j-3")]
    assert plan.create[0]["spec"]["containers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {
        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}]
    assert plan.status is not None and plan.status["completedIndexes"] == "0" and plan.status["succeeded"] == 1


def test_indexed_job_completes_when_every_index_succeeded() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10), "completedIndexes": "0,1"}, completionMode="Indexed",
                completions=4, parallelism=2)
    plan = J.plan(job, [indexed("c", job, 2, "Succeeded"), indexed("d", job, 3, "Succeeded")], NOW)
    assert plan.status is not None and plan.status["completedIndexes"] == "0-3" and plan.status["succeeded"] == 4
    assert [c["type"] for c in plan.status["conditions"]] == ["SuccessCriteriaMet", "Complete"]


def test_indexed_job_removes_repeated_and_out_of_range_indexes() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10)}, completionMode="Indexed", completions=2, parallelism=2)
    pods = [indexed("a", job, 0), indexed("b", job, 0), indexed("c", job, 7), indexed("d", job, 1)]
    plan = J.plan(job, pods, NOW)
    assert sorted(p["metadata"]["name"] for p in plan.delete) in (["a", "c"], ["b", "c"])
    assert plan.create == []


@pytest.mark.parametrize(("text", "want"), [
    ("", set()), ("0", {0}), ("1,2", {1, 2}), ("0-3,7,9,10", {0, 1, 2, 3, 7, 9, 10})])
def test_completed_indexes_text(text: str, want: set[int]) -> None:
    assert JI.parse_indexes(text, 11) == want
    assert JI.format_indexes(want) == text


def test_recorded_indexes_past_completions_are_dropped() -> None:
    assert JI.parse_indexes("3-20,x,30", 6) == {3, 4, 5}


def failed_with(name: str, job: dict[str, Any], code: int, container: str = "c") -> dict[str, Any]:
    p = done(name, job, "Failed")
    p["status"]["containerStatuses"] = [{"name": container, "state": {"terminated": {
        "exitCode": code, "finishedAt": rfc3339(NOW - 5)}}}]
    return p


def test_pod_failure_policy_fail_job() -> None:
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}]}
    job = a_job({"startTime": rfc3339(NOW - 10)}, completions=3, podFailurePolicy=policy,
                podReplacementPolicy="Failed")
    plan = J.plan(job, [failed_with("f1", job, 42), pod("r1", owner=job)], NOW)
    assert plan.status is not None
    assert [(c["type"], c["reason"], c["message"]) for c in plan.status["conditions"]] == [
        ("FailureTarget", "PodFailurePolicy",
         "Container c for pod default/f1 failed with exit code 42 matching FailJob rule at index 0")]
    assert [p["metadata"]["name"] for p in plan.delete] == ["r1"]


def test_pod_failure_policy_ignore_does_not_count() -> None:
    policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
                        {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}
    job = a_job({"startTime": rfc3339(NOW - 100)}, completions=1, backoffLimit=0, podFailurePolicy=policy,
                podReplacementPolicy="Failed")
    plan = J.plan(job, [failed_with("f1", job, 3)], NOW)
    assert plan.status is not None and "failed" not in plan.status and "conditions" not in plan.status
    assert len(plan.create) == 1
    counted = J.plan(job, [failed_with("f1", job, 4)], NOW)
    assert counted.status is not None and counted.status["failed"] == 1
    assert counted.status["conditions"][0]["reason"] == "BackoffLimitExceeded"


def test_replacement_waits_for_terminating_pods_when_only_failed_ones_are_replaced() -> None:
    job = a_job({"startTime": rfc3339(NOW - 10)}, completions=1, podReplacementPolicy="Failed")
    gone = pod("t1", owner=job, deleting=True)
    assert J.plan(job, [gone], NOW).create == []
    job["spec"]["podReplacementPolicy"] = "TerminatingOrFailed"
    assert len(J.plan(job, [gone], NOW).create) == 1
