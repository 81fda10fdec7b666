"""The DaemonSet controller's decisions (upstream pkg/controller/daemon)."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane.workloads import daemonset, podhash
from tests.unit.workloads.objects import NOW, TEMPLATE, pod


def ds(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "ds", "namespace": "default", "uid": "uid-ds", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": TEMPLATE,
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, **spec},
            "status": {}}


def node(name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def test_a_pod_per_node_pinned_by_node_affinity_with_the_daemon_tolerations() -> None:
    plan = daemonset.plan(ds(), [node("a"), node("b")], [], [], NOW)
    assert len(plan.create) == 2
    made = {p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]: p for p in plan.create}
    assert set(made) == {"a", "b"}
    p = made["a"]
    assert p["metadata"]["generateName"] == "ds-"
    assert p["metadata"]["labels"] == {"app": "a", "controller-revision-hash": plan.hash}
    assert [(t["key"], t["effect"]) for t in p["spec"]["tolerations"]] == [
        ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")]
    assert plan.revision is not None
    assert plan.revision["metadata"]["name"] == f"ds-{plan.hash}"
    assert plan.revision["revision"] == 1
    assert plan.hash == podhash.compute_hash(TEMPLATE)
    assert plan.status == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 2,
                           "numberReady": 0, "observedGeneration": 1, "numberUnavailable": 2}


def test_node_selector_taints_and_no_execute() -> None:
    nodes = [node("plain"), node("gpu", {"gpu": "yes"}),
             node("tainted", {"gpu": "yes"}, [{"key": "k", "value": "v", "effect": "NoSchedule"}]),
             node("evicting", {"gpu": "yes"}, [{"key": "k", "effect": "NoExecute"}])]
    the_ds = ds()
    template: dict[str, Any] = {"metadata": TEMPLATE["metadata"],
                                "spec": {"containers": [{"name": "c"}], "nodeSelector": {"gpu": "yes"}}}
    the_ds["spec"]["template"] = template
    tols = daemonset.tolerations(the_ds)
    assert [daemonset.should_run(the_ds, n, tols) for n in nodes] == [
        (False, False), (True, True), (False, True), (False, False)]


def test_extra_failed_and_misplaced_pods_are_deleted() -> None:
    the_ds = ds()
    h = daemonset.plan(the_ds, [], [], [], NOW).hash
    lbl = {"app": "a", "controller-revision-hash": h}
    pods = [pod("a1", owner=the_ds, node="a", labels=lbl, created_ago=100),
            pod("a2", owner=the_ds, node="a", labels=lbl, created_ago=10),
            pod("b1", owner=the_ds, node="b", labels=lbl, phase="Failed"),
            pod("gone", owner=the_ds, node="vanished", labels=lbl)]
    plan = daemonset.plan(the_ds, [node("a"), node("b")], pods, [], NOW)
    assert sorted(p["metadata"]["name"] for p in plan.delete) == ["a2", "b1", "gone"]
    assert ("Warning", "FailedDaemonPod", "Found failed daemon pod default/b1 on node b, will try to kill it") \
        in plan.events


def test_rolling_update_replaces_within_max_unavailable() -> None:
    the_ds = ds()
    old = {"app": "a", "controller-revision-hash": "old"}
    pods = [pod(f"p{i}", owner=the_ds, node=f"n{i}", labels=old) for i in range(3)]
    plan = daemonset.plan(the_ds, [node(f"n{i}") for i in range(3)], pods, [], NOW)
    assert [p["metadata"]["name"] for p in plan.delete] == ["p0"]
    assert plan.create == []


def node_of(p: dict[str, Any]) -> str:
    return str(p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])


def test_rolling_update_with_max_surge_starts_new_pods_next_to_old_ones() -> None:
    the_ds = ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}})
    nodes = [node(f"n{i}") for i in range(3)]
    old = {"app": "a", "controller-revision-hash": "old"}
    pods = [pod(f"p{i}", owner=the_ds, node=f"n{i}", labels=old) for i in range(3)]
    plan = daemonset.plan(the_ds, nodes, pods, [], NOW)
    assert plan.delete == [] and [node_of(p) for p in plan.create] == ["n0"]
    new = {"app": "a", "controller-revision-hash": plan.hash}
    starting = pod("q0", owner=the_ds, node="n0", labels=new, ready=False, created_ago=1)
    waiting = daemonset.plan(the_ds, nodes, [*pods, starting], [], NOW)
    assert waiting.delete == [] and waiting.create == []  # the surge is used up until q0 is available
    ready = pod("q0", owner=the_ds, node="n0", labels=new, ready_for=5, created_ago=10)
    moving = daemonset.plan(the_ds, nodes, [*pods, ready], [], NOW)
    assert [p["metadata"]["name"] for p in moving.delete] == ["p0"]
    assert [node_of(p) for p in moving.create] == ["n1"]


def test_surging_an_unavailable_old_pod_is_replaced_at_once() -> None:
    the_ds = ds(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}})
    old = {"app": "a", "controller-revision-hash": "old"}
    pods = [pod("p0", owner=the_ds, node="n0", labels=old, ready=False),
            pod("p1", owner=the_ds, node="n1", labels=old)]
    plan = daemonset.plan(the_ds, [node("n0"), node("n1")], pods, [], NOW)
    assert sorted(node_of(p) for p in plan.create) == ["n0", "n1"]  # n0 allowed, n1 within the surge
    assert daemonset.allows_surge(the_ds) and not daemonset.allows_surge(ds())


def test_failed_pod_backoff_per_node_doubles_from_one_second() -> None:
    """podsShouldBeOnNode with failedPodsBackoff: a failed pod is deleted (FailedDaemonPod) once per
    delay per node, the sync rechecked after the delay; 1 s, 2 s, 4 s...; another node is not held."""
    the_ds = ds()
    backoff = daemonset.new_failed_pods_backoff()
    current = {"app": "a", "controller-revision-hash": daemonset.current_revision(the_ds, [])[0]}

    def at(now: float, *names: str) -> daemonset.Plan:  # failed pods of the current revision
        failed = [pod(n, owner=the_ds, node=n[0], phase="Failed", labels=current) for n in names]
        return daemonset.plan(the_ds, [node("a"), node("b")], failed, [], now, backoff)

    first = at(NOW, "a1")
    assert [p["metadata"]["name"] for p in first.delete] == ["a1"]
    assert [e[1] for e in first.events] == ["FailedDaemonPod"]
    held = at(NOW + 0.5, "a2", "b1")  # a's replacement failed again within 1 s; b's first failure
    assert [p["metadata"]["name"] for p in held.delete] == ["b1"]
    assert held.create == [] and held.recheck_at == NOW + 1.5
    assert [p["metadata"]["name"] for p in at(NOW + 1, "a2").delete] == ["a2"]  # 1 s after the delete
    assert at(NOW + 2.9, "a3").delete == [] and at(NOW + 2.9, "a3").recheck_at == NOW + 4.9
    assert [p["metadata"]["name"] for p in at(NOW + 3, "a3").delete] == ["a3"]  # 2 s
    assert at(NOW + 6.9, "a4").delete == []  # now 4 s
    assert daemonset.failed_pods_backoff_key(the_ds, "a") == "uid-ds/0/a"


def test_backoff_caps_at_fifteen_minutes_and_expires_after_thirty() -> None:
    b = daemonset.new_failed_pods_backoff()
    t = 0.0
    for _ in range(20):
        b.next("k", t)
        t += b.get("k")
    assert b.get("k") == 900.0 and b.in_backoff_since_update("k", t - 1)
    assert not b.in_backoff_since_update("k", t - 900 + 1801)  # past 2 x max since the update: fresh
    b.next("k", t - 900 + 1801)
    assert b.get("k") == 1.0
    b.gc(t + 5000)
    assert len(b) == 0
