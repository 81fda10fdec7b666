"""The StatefulSet controller's decisions (upstream pkg/controller/statefulset)."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.workloads import statefulset as S
from tests.unit.workloads.objects import NOW, TEMPLATE, pod


def sts(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default", "uid": "uid-db", "generation": 1},
            "spec": {"replicas": replicas, "serviceName": "db", "selector": {"matchLabels": {"app": "a"}},
                     "template": TEMPLATE, **spec}, "status": {}}


def member(s: dict[str, Any], i: int, rev: str, **kw: Any) -> dict[str, Any]:
    return pod(f"db-{i}", owner=s, labels={"app": "a", "controller-revision-hash": rev}, **kw)


def test_ordered_ready_creates_one_pod_at_a_time() -> None:
    s = sts()
    plan = S.plan(s, [], [], set(), NOW)
    assert [p["metadata"]["name"] for p in plan.create] == ["db-0"]
    assert plan.revision is not None
    rev = plan.revision["metadata"]["name"]
    # history.NewControllerRevision: the hash under controller.kubernetes.io/hash, the name on the pods
    assert plan.revision["metadata"]["labels"] == {"app": "a", "controller.kubernetes.io/hash": rev[len("db-"):]}
    made = plan.create[0]
    assert made["metadata"]["generateName"] == "db-"  # GetPodFromTemplate's, kept beside the name
    assert made["spec"]["hostname"] == "db-0" and made["spec"]["subdomain"] == "db"
    assert made["metadata"]["labels"] == {"app": "a", "statefulset.kubernetes.io/pod-name": "db-0",
                                          "apps.kubernetes.io/pod-index": "0", "controller-revision-hash": rev}
    pending = member(s, 0, rev, phase="Pending", ready=False)
    assert S.plan(s, [pending], [], set(), NOW).create == []  # waits for db-0 to be Running and Ready
    assert [p["metadata"]["name"] for p in S.plan(s, [member(s, 0, rev)], [], set(), NOW).create] == ["db-1"]


def test_parallel_creates_every_missing_pod() -> None:
    plan = S.plan(sts(podManagementPolicy="Parallel"), [], [], set(), NOW)
    assert [p["metadata"]["name"] for p in plan.create] == ["db-0", "db-1", "db-2"]


def test_scale_down_from_the_highest_ordinal() -> None:
    s = sts(1)
    rev = S.plan(s, [], [], set(), NOW).revision["metadata"]["name"]
    pods = [member(s, i, rev) for i in range(3)]
    assert [p["metadata"]["name"] for p in S.plan(s, pods, [], set(), NOW).delete] == ["db-2"]


def test_rolling_update_replaces_the_highest_old_pod_first() -> None:
    s = sts(3)
    pods = [member(s, i, "db-old") for i in range(3)]
    plan = S.plan(s, pods, [], set(), NOW)
    assert [p["metadata"]["name"] for p in plan.delete] == ["db-2"]


def test_claims_from_volume_claim_templates() -> None:
    s = sts(1, volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}])
    plan = S.plan(s, [], [], set(), NOW)
    assert [c["metadata"]["name"] for c in plan.claims] == ["data-db-0"]
    assert plan.claims[0]["metadata"]["labels"] == {"app": "a"}
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}} in plan.create[0]["spec"]["volumes"]
    assert S.plan(s, [], [], {"data-db-0"}, NOW).claims == []
