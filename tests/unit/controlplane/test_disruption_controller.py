"""The disruption controller (controllers/disruption.py, workloads/disruption.py) against upstream's
pkg/controller/disruption: expectedPods from the controllers' scale, the counts and the condition, the
events, failSafe, disruptedPods' expiry and the stale DisruptionTarget reset, over an in-memory store."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.controllers.disruption import DisruptionController
from nodeagent.controlplane.workloads import disruption
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
T0 = 1767225600.0


@pytest.fixture
def env() -> Any:
    clock = FakeClock(T0)
    store = ObjectStore.memory(builtin_kinds(), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    yield store, clock, DisruptionController(store, clock)
    store.close()


def _owner(kind: str, name: str, uid: str, api: str = "apps/v1") -> list[Obj]:
    return [{"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": True}]


def _chain(store: ObjectStore, replicas: int) -> tuple[str, str]:
    """A Deployment of `replicas` and its ReplicaSet (which says 5: the Deployment's scale counts)."""
    dep = store.create({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "d", "namespace": "default"},
                        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                                 "template": {"metadata": {"labels": {"app": "a"}},
                                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    rs = store.create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "d-1", "namespace": "default", "ownerReferences": _owner("Deployment", "d", dep["metadata"]["uid"])},
        "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    return dep["metadata"]["uid"], rs["metadata"]["uid"]


def _pod(store: ObjectStore, name: str, owner: list[Obj] | None, ready: bool = True, **status: Any) -> None:
    md: Obj = {"name": name, "namespace": "default", "labels": {"app": "a"}}
    if owner:
        md["ownerReferences"] = owner
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": md,
                  "spec": {"containers": [{"name": "c", "image": "x"}]}})
    cur = store.get("Pod", "default", name)
    cur["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                     **status}
    store.update_status(cur)


def _pdb(store: ObjectStore, **spec: Any) -> None:
    store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                  "metadata": {"name": "b", "namespace": "default"},
                  "spec": {"selector": {"matchLabels": {"app": "a"}}, **spec}})


def _run(store: ObjectStore, ctl: DisruptionController) -> Obj:
    ctl.load([*store.list("PodDisruptionBudget"), *store.list("Pod")])
    ctl.work(100)
    status: Obj = store.get("PodDisruptionBudget", "default", "b")["status"]
    return status


def _events(store: ObjectStore) -> list[tuple[str, str, str, str]]:
    return sorted((e["involvedObject"]["name"], e["type"], e["reason"], e["message"]) for e in store.list("Event"))


def test_max_unavailable_counts_the_deployments_scale(env: Any) -> None:
    store, _clock, ctl = env
    _dep_uid, rs_uid = _chain(store, 3)
    for i, ready in enumerate((True, True, False)):
        _pod(store, f"p{i}", _owner("ReplicaSet", "d-1", rs_uid), ready)
    _pdb(store, maxUnavailable="34%")  # ceil(0.34 * 3) = 2
    status = _run(store, ctl)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 3, "observedGeneration": 1}
    assert status["conditions"] == [{"type": "DisruptionAllowed", "status": "True", "observedGeneration": 1,
                                     "lastTransitionTime": rfc3339(T0), "reason": "SufficientPods", "message": ""}]
    assert _events(store) == []


def test_no_pods_integer_min_available(env: Any) -> None:
    store, _clock, ctl = env
    _pdb(store, minAvailable=1)
    status = _run(store, ctl)
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (0, 1, 0)
    assert status["conditions"][0]["reason"] == "InsufficientPods"
    assert _events(store) == [("b", "Normal", "NoPods", "No matching pods found")]


def test_a_pod_whose_controller_is_missing_fails_safe(env: Any) -> None:
    store, _clock, ctl = env
    _pod(store, "p0", _owner("ReplicaSet", "gone", "u-1"))
    _pdb(store, minAvailable="50%")
    status = _run(store, ctl)
    assert status["disruptionsAllowed"] == 0
    assert [(c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("False", "SyncFailed", 'found no controllers for pod "p0"')]
    assert _events(store) == [("b", "Warning", "CalculateExpectedPodCountFailed",
                               'Failed to calculate the number of expected pods: found no controllers for pod "p0"')]


def test_unmanaged_pods_are_reported(env: Any) -> None:
    store, _clock, ctl = env
    _pod(store, "p0", None)
    _pdb(store, maxUnavailable=0)
    status = _run(store, ctl)
    assert (status["expectedPods"], status["currentHealthy"]) == (0, 1)
    ((_, type_, reason, message),) = _events(store)
    assert (type_, reason) == ("Warning", "UnmanagedPods")
    assert "(selector: &LabelSelector{MatchLabels:map[string]string{app: a,},MatchExpressions:" \
           "[]LabelSelectorRequirement{},}) were found to be unmanaged" in message


def test_disrupted_pods_do_not_count_until_they_expire(env: Any) -> None:
    store, clock, ctl = env
    _dep_uid, rs_uid = _chain(store, 2)
    for i in range(2):
        _pod(store, f"p{i}", _owner("ReplicaSet", "d-1", rs_uid))
    _pdb(store, minAvailable=1)
    _run(store, ctl)
    cur = store.get("PodDisruptionBudget", "default", "b")
    cur["status"]["disruptedPods"] = {"p0": rfc3339(T0), "gone": rfc3339(T0)}  # what an eviction writes
    store.update_status(cur)
    status = _run(store, ctl)
    assert status["disruptedPods"] == {"p0": rfc3339(T0)} and status["currentHealthy"] == 1
    assert status["disruptionsAllowed"] == 0
    assert ctl.deadline() is not None  # looked at again when the entry expires
    clock.advance(121)
    ctl.work(100)
    status = store.get("PodDisruptionBudget", "default", "b")["status"]
    assert "disruptedPods" not in status and status["currentHealthy"] == 2 and status["disruptionsAllowed"] == 1
    assert ("p0", "Warning", "NotDeleted", "Pod was expected by PDB default/default to be deleted but it wasn't") \
        in _events(store)


def test_a_stale_disruption_target_is_reset(env: Any) -> None:
    store, clock, ctl = env
    _pod(store, "p0", None, conditions=[{"type": "DisruptionTarget", "status": "True", "message": "m",
                                         "reason": "EvictionByEvictionAPI", "lastTransitionTime": rfc3339(T0)}])
    ctl.load(store.list("Pod"))
    ctl.work(100)
    assert store.get("Pod", "default", "p0")["status"]["conditions"][0]["status"] == "True"
    clock.advance(120)
    ctl.work(100)
    (cond,) = store.get("Pod", "default", "p0")["status"]["conditions"]
    # CalculatePodConditionObservedGeneration: the pod's generation (PodObservedGenerationTracking, on in 1.37)
    assert cond == {"type": "DisruptionTarget", "observedGeneration": 1, "status": "False", "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(T0 + 120)}


def test_percent_rounds_up() -> None:
    assert [disruption.scaled("50%", n) for n in (0, 1, 3)] == [0, 1, 2]
    with pytest.raises(disruption.SyncError):
        disruption.scaled("x", 3)
