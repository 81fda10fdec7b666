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


def test_success_policy_meets_the_criteria_then_completes_once_the_rest_are_gone() -> None:
    """matchSuccessPolicy: the other indexes' pods are deleted, SuccessCriteriaMet first, Complete with
    the same reason and message once no pod is terminating."""
    policy = {"rules": [{"succeededIndexes": "0-2", "succeededCount": 5}, {"succeededIndexes": "1,3"}]}
    job = a_job({"startTime": rfc3339(NOW - 10)}, completionMode="Indexed", completions=5, parallelism=5,
                successPolicy=policy)
    running = indexed("c", job, 0)
    plan = J.plan(job, [indexed("a", job, 1, "Succeeded"), indexed("b", job, 3, "Succeeded"), running], NOW)
    assert [p["metadata"]["name"] for p in plan.delete] == ["c"] and plan.create == []
    assert plan.status is not None
    assert [(c["type"], c["reason"], c["message"]) for c in plan.status["conditions"]] == [
        ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 1")]
    assert plan.status["terminating"] == 1 and plan.status["completedIndexes"] == "1,3"
    assert "completionTime" not in plan.status
    job["status"] = plan.status
    running["metadata"]["deletionTimestamp"] = rfc3339(NOW)
    plan = J.plan(job, [indexed("a", job, 1, "Succeeded"), indexed("b", job, 3, "Succeeded"), running], NOW)
    assert plan.status is not None and plan.status["failed"] == 1  # isPodFailed: deleted before it ended
    assert [c["type"] for c in plan.status["conditions"]] == ["SuccessCriteriaMet"]  # still terminating
    job["status"] = plan.status
    plan = J.plan(job, [indexed("a", job, 1, "Succeeded"), indexed("b", job, 3, "Succeeded")], NOW + 1)
    assert plan.status is not None
    assert [(c["type"], c["reason"], c["message"]) for c in plan.status["conditions"]] == [
        ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 1"),
        ("Complete", "SuccessPolicy", "Matched rules at index 1")]
    assert plan.status["completionTime"] == rfc3339(NOW + 1)
    assert ("Normal", "Completed", "Job completed") in plan.events


@pytest.mark.parametrize(("rule", "succeeded", "want"), [
    ({"succeededCount": 2}, {4}, None),
    ({"succeededCount": 2}, {4, 7}, "Matched rules at index 0"),
    ({"succeededIndexes": "0-3", "succeededCount": 2}, {3, 4}, None),
    ({"succeededIndexes": "0-3", "succeededCount": 2}, {1, 3}, "Matched rules at index 0"),
    ({"succeededIndexes": "2,5"}, {2, 5, 6}, "Matched rules at index 0"),
    ({"succeededIndexes": "20-30"}, {2}, None),  # past completions: no rule
])
def test_success_policy_rules(rule: dict[str, Any], succeeded: set[int], want: str | None) -> None:
    assert JI.match_success_policy({"rules": [rule]}, 10, succeeded) == want
    assert JI.match_success_policy({"rules": [rule]}, 10, set()) is None


def per_index(name: str, job: dict[str, Any], ix: int, phase: str, failures: int, ago: float = 5,
              ignored: int = 0) -> dict[str, Any]:
    p = indexed(name, job, ix, phase)
    p["metadata"]["annotations"][JI.FAILURE_COUNT_KEY] = str(failures)
    if ignored:
        p["metadata"]["annotations"][JI.IGNORED_FAILURE_COUNT_KEY] = str(ignored)
    if phase == "Failed":
        p["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {
            "exitCode": 1, "finishedAt": rfc3339(NOW - ago)}}}]
    return p


def test_backoff_limit_per_index_first_pods_carry_a_zero_count_and_failed_indexes_is_empty() -> None:
    job = a_job({}, completionMode="Indexed", completions=2, parallelism=2, backoffLimitPerIndex=1,
                backoffLimit=2147483647)
    plan = J.plan(job, [], NOW)
    assert [p["metadata"]["annotations"] for p in plan.create] == [
        {JI.INDEX_KEY: "0", JI.FAILURE_COUNT_KEY: "0"}, {JI.INDEX_KEY: "1", JI.FAILURE_COUNT_KEY: "0"}]
    assert plan.status is not None and plan.status["failedIndexes"] == ""


def test_backoff_limit_per_index_replaces_a_failed_index_after_its_own_backoff() -> None:
    job = a_job({"startTime": rfc3339(NOW - 100), "failedIndexes": ""}, completionMode="Indexed", completions=2,
                parallelism=2, backoffLimitPerIndex=2, backoffLimit=2147483647)
    # index 0 failed twice (its second pod carries count 1): 20 s backoff from the second failure
    pods = [per_index("a", job, 0, "Failed", 0, ago=40), per_index("b", job, 0, "Failed", 1, ago=15),
            per_index("c", job, 1, "Running", 0)]
    plan = J.plan(job, pods, NOW)
    assert plan.create == [] and plan.recheck_at == NOW + 5
    plan = J.plan(job, pods, NOW + 5)
    assert [(p["metadata"]["generateName"], p["metadata"]["annotations"][JI.FAILURE_COUNT_KEY]) for p in plan.create] \
        == [("j-0-", "2")]
    # tracking with finalizers (upstream's canRemoveFinalizer): b, the failed pod the replacement takes its
    # counts from, keeps its finalizer until the replacement exists, so only a is counted in this sync
    assert plan.status is not None and plan.status["failed"] == 1 and plan.status["failedIndexes"] == ""
    assert "conditions" not in plan.status
    assert [p["metadata"]["name"] for p in plan.unfinalize] == ["a"]
    assert plan.interim is not None and plan.interim["uncountedTerminatedPods"] == {"failed": ["uid-a"]}
    job["status"] = plan.status
    replacement = per_index("e", job, 0, "Running", 2)
    a = {**pods[0], "metadata": {k: v for k, v in pods[0]["metadata"].items() if k != "finalizers"}}
    plan = J.plan(job, [a, pods[1], pods[2], replacement], NOW + 6)
    assert [p["metadata"]["name"] for p in plan.unfinalize] == ["b"]
    assert plan.status is not None and plan.status["failed"] == 2 and plan.status["uncountedTerminatedPods"] == {}


def test_an_ignored_failure_counts_apart_and_an_exhausted_index_is_failed() -> None:
    policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}]}
    job = a_job({"startTime": rfc3339(NOW - 100), "failedIndexes": ""}, completionMode="Indexed", completions=3,
                parallelism=3, backoffLimitPerIndex=1, backoffLimit=2147483647, podFailurePolicy=policy)
    plan = J.plan(job, [per_index("a", job, 0, "Failed", 0, ago=30), per_index("b", job, 1, "Running", 0),
                        per_index("c", job, 2, "Running", 0)], NOW)
    assert [(p["metadata"]["annotations"][JI.FAILURE_COUNT_KEY],
             p["metadata"]["annotations"][JI.IGNORED_FAILURE_COUNT_KEY]) for p in plan.create] == [("0", "1")]
    del job["spec"]["podFailurePolicy"]
    exhausted = per_index("d", job, 0, "Failed", 1, ago=1)
    plan = J.plan(job, [exhausted, per_index("b", job, 1, "Running", 0), per_index("c", job, 2, "Running", 0)], NOW)
    assert plan.create == [] and plan.status is not None and plan.status["failedIndexes"] == "0"
    assert "conditions" not in plan.status  # indexes 1 and 2 still run


def test_failed_indexes_fail_the_job_once_every_index_ended() -> None:
    job = a_job({"startTime": rfc3339(NOW - 100), "failedIndexes": ""}, completionMode="Indexed", completions=2,
                parallelism=2, backoffLimitPerIndex=0, backoffLimit=2147483647)
    plan = J.plan(job, [per_index("a", job, 0, "Failed", 0), per_index("b", job, 1, "Succeeded", 0)], NOW)
    assert plan.status is not None and plan.status["failedIndexes"] == "0" and plan.status["completedIndexes"] == "1"
    assert [(c["type"], c["reason"], c["message"]) for c in plan.status["conditions"]] == [
        ("FailureTarget", "FailedIndexes", "Job has failed indexes"),
        ("Failed", "FailedIndexes", "Job has failed indexes")]
    assert ("Warning", "FailedIndexes", "Job has failed indexes") in plan.events


def test_max_failed_indexes_exceeded_deletes_the_active_pods() -> None:
    job = a_job({"startTime": rfc3339(NOW - 100), "failedIndexes": ""}, completionMode="Indexed", completions=4,
                parallelism=4, backoffLimitPerIndex=0, maxFailedIndexes=1, backoffLimit=2147483647)
    pods = [per_index("a", job, 0, "Failed", 0), per_index("b", job, 1, "Failed", 0),
            per_index("c", job, 2, "Running", 0), per_index("d", job, 3, "Running", 0)]
    plan = J.plan(job, pods, NOW)
    assert sorted(p["metadata"]["name"] for p in plan.delete) == ["c", "d"]
    assert plan.status is not None and plan.status["failedIndexes"] == "0,1" and plan.status["terminating"] == 2
    assert [(c["type"], c["reason"], c["message"]) for c in plan.status["conditions"]] == [
        ("FailureTarget", "MaxFailedIndexesExceeded",
         "Job has exceeded the specified maximal number of failed indexes")]


def test_fail_index_rule_ends_the_index_at_its_first_failure() -> None:
    policy = {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]}
    job = a_job({"startTime": rfc3339(NOW - 100), "failedIndexes": ""}, completionMode="Indexed", completions=2,
                parallelism=2, backoffLimitPerIndex=3, backoffLimit=2147483647, podFailurePolicy=policy)
    plan = J.plan(job, [per_index("a", job, 0, "Failed", 0, ago=60), per_index("b", job, 1, "Running", 0)], NOW)
    assert plan.create == [] and plan.status is not None and plan.status["failedIndexes"] == "0"


def test_pods_deleted_at_the_deadline_count_failed_even_when_their_node_ends_them_succeeded() -> None:
    """isPodFailed: a deleted pod that had not succeeded is a failure; upstream counts it on seeing the
    deletion, so its later Succeeded (the node stops it: exit 0) does not count."""
    job = a_job({"startTime": rfc3339(NOW - 61)}, completions=2, parallelism=2, activeDeadlineSeconds=60)
    plan = J.plan(job, [pod("r1", owner=job), pod("r2", owner=job)], NOW)
    assert plan.status is not None and plan.status["terminating"] == 2 and len(plan.delete) == 2
    # the Job is failing: its pods count failed now and lose their finalizers in the same sync
    assert plan.status["failed"] == 2 and [p["metadata"]["name"] for p in plan.unfinalize] == ["r1", "r2"]
    job["status"] = plan.status
    stopped = []
    for name in ("r1", "r2"):
        p = done(name, job, "Succeeded", ago=-1)  # finished after the deletion was asked
        p["metadata"].update(deletionTimestamp=rfc3339(NOW + 30), deletionGracePeriodSeconds=30)
        del p["metadata"]["finalizers"]
        stopped.append(p)
    plan = J.plan(job, stopped, NOW + 2)
    assert plan.status is not None and plan.status.get("failed") == 2 and "succeeded" not in plan.status
    assert [c["type"] for c in plan.status["conditions"]] == ["FailureTarget", "Failed"]  # none terminating
    assert plan.status["conditions"][1]["reason"] == "DeadlineExceeded"
    finished_first = done("s1", job, "Succeeded", ago=40)  # succeeded, then deleted: a success
    finished_first["metadata"].update(deletionTimestamp=rfc3339(NOW + 30), deletionGracePeriodSeconds=30)
    assert JI.pod_succeeded(finished_first, False) and not JI.pod_failed(finished_first, False)
