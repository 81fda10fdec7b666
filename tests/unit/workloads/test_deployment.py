"""The Deployment controller's decisions (upstream pkg/controller/deployment), one sync at a time."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.workloads import deployment as D
from nodeagent.controlplane.workloads import deployment_util as U
from nodeagent.controlplane.workloads import podhash
from tests.unit.workloads.objects import NOW, TEMPLATE, deployment, replica_set

NEW_TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "img:2"}]}}


def hashed(template: dict[str, Any]) -> dict[str, Any]:
    h = podhash.compute_hash(template)
    return {**template, "metadata": {"labels": {**template["metadata"]["labels"], "pod-template-hash": h}}}


def test_first_sync_creates_the_new_replica_set() -> None:
    d = deployment(4)
    ops = D.Sync(d, [], {}, NOW).run()
    (rs,) = ops.create
    h = podhash.compute_hash(TEMPLATE)
    assert rs["metadata"]["name"] == f"d-{h}"
    assert rs["spec"]["replicas"] == 4
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "a", "pod-template-hash": h}}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "a", "pod-template-hash": h}
    assert rs["metadata"]["annotations"] == {U.REVISION: "1", U.DESIRED: "4", U.MAX_REPLICAS: "5"}
    assert ops.annotations == {U.REVISION: "1"}
    assert ("Normal", "ScalingReplicaSet", f"Scaled up replica set d-{h} from 0 to 4") in ops.events
    assert ops.status is not None
    conds = {c["type"]: c for c in ops.status["conditions"]}
    assert (conds["Progressing"]["reason"], conds["Progressing"]["message"]) == \
        ("NewReplicaSetCreated", f'Created new replica set "d-{h}"')
    assert conds["Available"]["reason"] == "MinimumReplicasUnavailable"


@pytest.mark.parametrize(("replicas", "surge", "unavailable", "fences"), [
    (4, "25%", "25%", (1, 1)), (10, "25%", "25%", (3, 2)), (3, 0, 0, (0, 1)), (5, 2, "50%", (2, 2)),
])
def test_fenceposts(replicas: int, surge: Any, unavailable: Any, fences: tuple[int, int]) -> None:
    d = deployment(replicas, strategy={"type": "RollingUpdate",
                                       "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
    assert U.fenceposts(d) == fences


def test_rolling_update_surges_then_scales_old_down_within_max_unavailable() -> None:
    d = deployment(4, template=NEW_TEMPLATE, status={"replicas": 4, "availableReplicas": 4})
    old = replica_set("d-old", 4, owner=d, annotations={U.REVISION: "1", U.DESIRED: "4", U.MAX_REPLICAS: "5"},
                      status={"replicas": 4, "availableReplicas": 4, "readyReplicas": 4})
    ops = D.Sync(d, [old], {}, NOW).run()
    (new,) = ops.create
    assert new["spec"]["replicas"] == 1  # maxSurge 1: 5 pods at most
    assert new["metadata"]["annotations"][U.REVISION] == "2"
    # the same sync: 5 pods, 3 must stay available, the new one's pod is not yet: one old pod goes
    assert ops.update["d-old"]["spec"]["replicas"] == 3
    assert ("Normal", "ScalingReplicaSet", "Scaled down replica set d-old from 4 to 3") in ops.events
    new.update(status={"replicas": 1, "availableReplicas": 1})
    new["metadata"].update(uid="uid-new", creationTimestamp="2027-01-01T00:00:00Z")
    old = ops.update["d-old"]
    old["status"] = {"replicas": 3, "availableReplicas": 3}
    ops = D.Sync(d, [old, new], {}, NOW).run()
    assert ops.update[new["metadata"]["name"]]["spec"]["replicas"] == 2


def test_recreate_scales_old_to_zero_and_waits_for_its_pods() -> None:
    d = deployment(2, strategy={"type": "Recreate"}, template=NEW_TEMPLATE)
    old = replica_set("d-old", 2, owner=d, annotations={U.REVISION: "1"}, status={"replicas": 2})
    ops = D.Sync(d, [old], {}, NOW).run()
    assert ops.update["d-old"]["spec"]["replicas"] == 0
    assert ops.create == []
    old = replica_set("d-old", 0, owner=d, annotations={U.REVISION: "1"}, status={"replicas": 0})
    running = {"uid-d-old": [{"metadata": {"name": "p"}, "status": {"phase": "Running"}}]}
    assert D.Sync(d, [old], running, NOW).run().create == []
    ops = D.Sync(d, [old], {}, NOW).run()
    assert ops.create and ops.create[0]["spec"]["replicas"] == 2


def test_scaling_event_scales_the_only_active_replica_set() -> None:
    d = deployment(5, status={"replicas": 3})
    rs = replica_set("d-x", 3, owner=d, template=hashed(TEMPLATE),
                     annotations={U.REVISION: "1", U.DESIRED: "3", U.MAX_REPLICAS: "4"}, status={"replicas": 3})
    ops = D.Sync(d, [rs], {}, NOW).run()
    assert ops.update["d-x"]["spec"]["replicas"] == 5
    assert ops.update["d-x"]["metadata"]["annotations"][U.DESIRED] == "5"
    assert ops.create == []


def test_proportional_scaling_during_a_rollout() -> None:
    d = deployment(20, template=NEW_TEMPLATE, status={"replicas": 12},
                   strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0}})
    ann = {U.DESIRED: "10", U.MAX_REPLICAS: "12"}
    old = replica_set("d-old", 8, owner=d, annotations={**ann, U.REVISION: "1"}, status={"replicas": 8})
    new = replica_set("d-new", 4, owner=d, template=hashed(NEW_TEMPLATE), annotations={**ann, U.REVISION: "2"},
                      status={"replicas": 4}, created_ago=10)
    ops = D.Sync(d, [old, new], {}, NOW).run()
    sizes = {name: rs["spec"]["replicas"] for name, rs in ops.update.items()}
    assert sizes == {"d-old": 15, "d-new": 7}  # 22 allowed: 8*22/12 = 14.7 -> 15, the rest to the new
    assert sum(sizes.values()) == 22


def test_old_replica_sets_beyond_the_history_limit_are_deleted() -> None:
    d = deployment(1, revisionHistoryLimit=1, status={"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1})
    current = replica_set("d-cur", 1, owner=d, template=hashed(TEMPLATE), annotations={U.REVISION: "3"},
                          status={"replicas": 1, "availableReplicas": 1, "observedGeneration": 1})
    olds = [replica_set(f"d-r{i}", 0, owner=d, annotations={U.REVISION: str(i)},
                        template={"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [
                            {"name": "c", "image": f"img:{i}0"}]}}, status={"observedGeneration": 1})
            for i in (1, 2)]
    ops = D.Sync(d, [*olds, current], {}, NOW).run()
    assert ops.delete == ["d-r1"]


def test_complete_rollout_conditions() -> None:
    d = deployment(2, status={"replicas": 2, "updatedReplicas": 2, "availableReplicas": 1, "conditions": [
        U.new_condition("Progressing", "True", "ReplicaSetUpdated", "x", NOW - 100)]})
    rs = replica_set("d-x", 2, owner=d, template=hashed(TEMPLATE),
                     annotations={U.REVISION: "1", U.DESIRED: "2", U.MAX_REPLICAS: "3"},
                     status={"replicas": 2, "readyReplicas": 2, "availableReplicas": 2})
    d["metadata"]["annotations"] = {U.REVISION: "1"}
    ops = D.Sync(d, [rs], {}, NOW).run()
    assert ops.status is not None
    conds = {c["type"]: c for c in ops.status["conditions"]}
    assert (conds["Progressing"]["status"], conds["Progressing"]["reason"], conds["Progressing"]["message"]) == \
        ("True", "NewReplicaSetAvailable", 'ReplicaSet "d-x" has successfully progressed.')
    assert conds["Progressing"]["lastTransitionTime"] == U.new_condition("", "", "", "", NOW - 100)[
        "lastTransitionTime"]
    assert (conds["Available"]["status"], conds["Available"]["reason"]) == ("True", "MinimumReplicasAvailable")
    assert {k: ops.status[k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")} == \
        {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}


def test_progress_deadline_exceeded() -> None:
    d = deployment(2, status={"replicas": 2, "updatedReplicas": 2, "conditions": [
        U.new_condition("Progressing", "True", "ReplicaSetUpdated", "x", NOW - 700)]})
    rs = replica_set("d-x", 2, owner=d, template=hashed(TEMPLATE),
                     annotations={U.REVISION: "1", U.DESIRED: "2", U.MAX_REPLICAS: "3"}, status={"replicas": 2})
    d["metadata"]["annotations"] = {U.REVISION: "1"}
    ops = D.Sync(d, [rs], {}, NOW).run()
    assert ops.status is not None
    cond = U.get_condition(ops.status, "Progressing")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == \
        ("False", "ProgressDeadlineExceeded", 'ReplicaSet "d-x" has timed out progressing.')


def test_paused_deployment_gets_the_paused_condition_and_no_new_replica_set() -> None:
    d = deployment(2, paused=True)
    ops = D.Sync(d, [], {}, NOW).run()
    assert ops.create == []
    assert ops.status is not None
    cond = U.get_condition(ops.status, "Progressing")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == \
        ("Unknown", "DeploymentPaused", "Deployment is paused")


def test_name_collision_bumps_collision_count() -> None:
    d = deployment(1)
    h = podhash.compute_hash(TEMPLATE)
    squatter = replica_set(f"d-{h}", 1, template={"metadata": {"labels": {"app": "zzz"}}, "spec": {}})
    squatter["spec"]["selector"] = {"matchLabels": {"app": "zzz"}}
    sync = D.Sync(d, [squatter], {}, NOW)
    with pytest.raises(D.Collision):
        sync.run()
    assert sync.ops.status is not None and sync.ops.status["collisionCount"] == 1
    d["status"] = sync.ops.status
    ops = D.Sync(d, [squatter], {}, NOW).run()
    assert ops.create[0]["metadata"]["name"] == "d-" + podhash.compute_hash(TEMPLATE, 1)
