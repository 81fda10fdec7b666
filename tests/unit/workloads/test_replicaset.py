"""The ReplicaSet controller's decisions (upstream pkg/controller/replicaset)."""

from __future__ import annotations

from nodeagent.controlplane.workloads import replicaset
from tests.unit.workloads.objects import NOW, pod, replica_set


def test_too_few_pods_creates_the_difference_from_the_template() -> None:
    rs = replica_set(replicas=3)
    plan = replicaset.plan(rs, [pod("p1", owner=rs)], [], NOW)
    assert len(plan.create) == 2
    made = plan.create[0]
    assert made["metadata"]["generateName"] == "rs-"
    assert made["metadata"]["labels"] == {"app": "a"}
    assert made["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                                    "uid": "uid-rs", "controller": True, "blockOwnerDeletion": True}]
    assert made["spec"] == {"containers": [{"name": "c", "image": "img:1"}]}
    assert plan.delete == []


def test_surplus_pods_are_deleted_in_upstreams_rank_order() -> None:
    rs = replica_set(replicas=1)
    pods = [
        pod("old-ready", owner=rs, ready_for=100000, created_ago=100000),
        pod("unassigned", owner=rs, node="", phase="Pending", ready=False),
        pod("pending", owner=rs, phase="Pending", ready=False),
        pod("not-ready", owner=rs, ready=False),
        pod("young-ready", owner=rs, ready_for=10, created_ago=10),
        pod("restarted", owner=rs, ready_for=100000, created_ago=100000, restarts=5),
    ]
    plan = replicaset.plan(rs, pods, [], NOW)
    assert [p["metadata"]["name"] for p in plan.delete] == [
        "unassigned", "pending", "not-ready", "young-ready", "restarted"]


def test_doubled_up_pods_go_first() -> None:
    rs = replica_set(replicas=2)
    pods = [pod("alone", owner=rs, node="n1"), pod("crowded", owner=rs, node="n2"), pod("other", owner=rs, node="n3")]
    related = [*pods, pod("sibling", node="n2")]
    plan = replicaset.plan(rs, pods, related, NOW)
    assert [p["metadata"]["name"] for p in plan.delete] == ["crowded"]


def test_orphans_are_adopted_and_strays_released() -> None:
    rs = replica_set(replicas=2)
    orphan = pod("orphan")
    stray = pod("stray", owner=rs, labels={"app": "other"})
    foreign = pod("foreign", owner={"kind": "ReplicaSet", "metadata": {"name": "x", "uid": "uid-x"}})
    plan = replicaset.plan(rs, [orphan, stray, foreign], [], NOW)
    assert [p["metadata"]["name"] for p in plan.adopt] == ["orphan"]
    assert [p["metadata"]["name"] for p in plan.release] == ["stray"]
    assert len(plan.create) == 1  # the orphan counts


def test_status_counts_and_min_ready_seconds() -> None:
    rs = replica_set(replicas=3, generation=4)
    rs["spec"]["minReadySeconds"] = 60
    pods = [pod("a", owner=rs, ready_for=120), pod("b", owner=rs, ready_for=10), pod("c", owner=rs, ready=False),
            pod("d", owner=rs, deleting=True), pod("e", owner=rs, phase="Succeeded")]
    plan = replicaset.plan(rs, pods, [], NOW)
    assert plan.status == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 2, "availableReplicas": 1,
                           "terminatingReplicas": 1, "observedGeneration": 4}
    assert plan.recheck_at == NOW - 10 + 60  # when "b" becomes available


def test_a_create_failure_shows_as_replica_failure() -> None:
    rs = replica_set(replicas=2)
    plan = replicaset.plan(rs, [], [], NOW, failure='pods "x" is forbidden: exceeded quota')
    (cond,) = plan.status["conditions"] if plan.status else []
    assert (cond["type"], cond["status"], cond["reason"]) == ("ReplicaFailure", "True", "FailedCreate")
    rs["status"] = plan.status or {}
    assert "conditions" not in (replicaset.plan(rs, [], [], NOW).status or {})


def test_a_deleting_replica_set_creates_nothing() -> None:
    rs = replica_set(replicas=3)
    rs["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert replicaset.plan(rs, [], [], NOW).create == []
