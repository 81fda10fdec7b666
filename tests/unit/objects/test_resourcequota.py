"""ResourceQuota's evaluators and CheckRequest (objects/resourcequota.py) against upstream's rules: pod usage
(sidecars, init containers, overhead, terminal pods), the Constraints text, scopes, services and PVCs, the
admission's refusals and charges, the controller's recount and its quantities' formats."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.objects import resourcequota as rq


def _c(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
       **extra: Any) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"name": name, "image": "pause", "resources": res, **extra}


def _pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": list(containers), "initContainers": list(init), **spec}}


def _quota(hard: dict[str, str], used: dict[str, str] | None = None, name: str = "q",
           **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"hard": hard}
    if used is not None:
        status["used"] = used
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"hard": hard, **spec}, "status": status}


def _usage(obj: dict[str, Any], ev: rq.Evaluator = rq.PODS) -> dict[str, str]:
    return rq.render(ev.usage(obj, 0.0))


def test_pod_usage_sums_containers_and_takes_the_largest_init_with_sidecars_and_overhead() -> None:
    pod = _pod(_c("a", {"cpu": "100m", "memory": "64Mi"}, {"memory": "128Mi"}), _c("b", {"cpu": "200m"}),
               init=(_c("side", {"cpu": "50m"}, restartPolicy="Always"), _c("big", {"cpu": "1", "memory": "1Gi"})),
               overhead={"cpu": "10m"})
    assert _usage(pod) == {
        "count/pods": "1", "pods": "1", "cpu": "1060m", "requests.cpu": "1060m",
        "memory": "1Gi", "requests.memory": "1Gi", "limits.memory": "128Mi"}


def test_terminal_pods_count_only_as_objects() -> None:
    pod = _pod(_c("a", {"cpu": "1"}))
    pod["status"] = {"phase": "Succeeded"}
    assert _usage(pod) == {"count/pods": "1"}


def test_extended_and_hugepages_requests() -> None:
    pod = _pod(_c("a", {"example.com/gpu": "2", "hugepages-2Mi": "4Mi"}, {"example.com/gpu": "2"}))
    assert _usage(pod) == {"count/pods": "1", "pods": "1", "requests.example.com/gpu": "2",
                           "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi"}
    assert rq.PODS.matching(["requests.example.com/gpu", "example.com/gpu", "count/pods", "services"]) == [
        "requests.example.com/gpu", "count/pods"]


def test_constraints_name_each_missing_resource_and_container() -> None:
    pod = _pod(_c("a", {"cpu": "1"}), _c("b"), init=(_c("i", limits={"memory": "1Gi"}),))
    assert rq.pod_constraints(["requests.cpu", "limits.memory", "pods"], pod) == (
        "must specify limits.memory for: a,b; requests.cpu for: b,i")
    assert rq.pod_constraints(["pods", "requests.storage"], pod) is None


@pytest.mark.parametrize(("scope", "best_effort", "deadline", "matches"), [
    ("BestEffort", True, None, True), ("BestEffort", False, None, False), ("NotBestEffort", False, None, True),
    ("Terminating", True, 30, True), ("Terminating", True, None, False), ("NotTerminating", True, None, True),
])
def test_scopes(scope: str, best_effort: bool, deadline: int | None, matches: bool) -> None:
    pod = _pod(_c("a") if best_effort else _c("a", {"cpu": "1"}))
    if deadline is not None:
        pod["spec"]["activeDeadlineSeconds"] = deadline
    assert rq.pod_matches_scope({"scopeName": scope, "operator": "Exists"}, pod) is matches


def test_priority_class_scope_selector() -> None:
    high = _pod(_c("a"), priorityClassName="high")
    none = _pod(_c("a"))
    sel = {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
    assert rq.pod_matches_scope(sel, high) and not rq.pod_matches_scope(sel, none)
    notin = {**sel, "operator": "NotIn"}
    assert not rq.pod_matches_scope(notin, high) and rq.pod_matches_scope(notin, none)
    assert rq.pod_matches_scope({"scopeName": "PriorityClass", "operator": "Exists"}, high)
    assert rq.pod_matches_scope({"scopeName": "PriorityClass", "operator": "DoesNotExist"}, none)


def test_service_and_pvc_usage() -> None:
    svc = {"metadata": {"name": "s"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}}
    assert _usage(svc, rq.SERVICES) == {"count/services": "1", "services": "1", "services.loadbalancers": "1",
                                        "services.nodeports": "2"}
    pvc = {"metadata": {"name": "c"}, "spec": {"storageClassName": "fast", "resources": {"requests": {
        "storage": "1.5Gi"}}}}
    assert _usage(pvc, rq.PVCS) == {
        "count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1", "requests.storage": "1536Mi",
        "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "fast.storageclass.storage.k8s.io/requests.storage": "1536Mi"}


def test_object_counts_with_the_legacy_alias() -> None:
    ev = rq.evaluator("", "configmaps")
    assert _usage({"metadata": {"name": "c"}}, ev) == {"configmaps": "1", "count/configmaps": "1"}
    assert rq.evaluator("apps", "deployments").matching(["count/deployments.apps", "pods"]) == [
        "count/deployments.apps"]


def test_check_request_charges_and_refuses() -> None:
    q = _quota({"pods": "2", "requests.cpu": "1"}, {"pods": "1", "requests.cpu": "300m"})
    other = _quota({"services": "1"}, {"services": "0"}, name="svc")
    assert rq.check_request(rq.PODS, _pod(_c("a", {"cpu": "700m"})), None, [other, q], 0.0) == {
        1: {"pods": "2", "requests.cpu": "1"}}
    with pytest.raises(rq.QuotaRefused, match=r"^exceeded quota: q, requested: requests.cpu=800m, "
                       r"used: requests.cpu=300m, limited: requests.cpu=1$"):
        rq.check_request(rq.PODS, _pod(_c("a", {"cpu": "800m"})), None, [q], 0.0)
    with pytest.raises(rq.QuotaRefused, match=r"^failed quota: q: must specify requests.cpu for: a$"):
        rq.check_request(rq.PODS, _pod(_c("a")), None, [q], 0.0)
    unsynced = _quota({"pods": "2"})
    with pytest.raises(rq.QuotaRefused, match=r"^status unknown for quota: q, resources: pods$"):
        rq.check_request(rq.PODS, _pod(_c("a")), None, [unsynced], 0.0)


def test_a_scoped_quota_charges_only_what_it_matches() -> None:
    q = _quota({"pods": "1"}, {"pods": "1"}, scopes=["BestEffort"])
    assert rq.check_request(rq.PODS, _pod(_c("a", {"cpu": "1"})), None, [q], 0.0) == {}
    with pytest.raises(rq.QuotaRefused, match="exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"):
        rq.check_request(rq.PODS, _pod(_c("a")), None, [q], 0.0)


def test_calculate_status_recounts_and_keeps_untracked_names() -> None:
    q = _quota({"pods": "5", "requests.memory": "1Gi", "count/configmaps": "3", "unknown.example.com": "1"},
               {"pods": "4", "unknown.example.com": "1"})
    pods = [_pod(_c("a", {"memory": "128Mi"})), _pod(_c("a", {"memory": "128Mi"}))]
    done = _pod(_c("a", {"memory": "1Gi"}))
    done["status"] = {"phase": "Failed"}
    objects = {("", "pods"): [*pods, done], ("", "configmaps"): [{"metadata": {"name": "x"}}]}
    status = rq.calculate_status(q, lambda g, p: objects.get((g, p), []), 0.0)
    assert status == {"hard": {"count/configmaps": "3", "pods": "5", "requests.memory": "1Gi",
                               "unknown.example.com": "1"},
                      "used": {"count/configmaps": "1", "pods": "2", "requests.memory": "256Mi",
                               "unknown.example.com": "1"}}


def test_an_update_is_charged_its_increase_only() -> None:
    old = {"metadata": {"name": "s", "resourceVersion": "5"}, "spec": {"type": "ClusterIP", "ports": [{"port": 1}]}}
    new = {**old, "spec": {"type": "NodePort", "ports": [{"port": 1}, {"port": 2}]}}
    q = _quota({"services": "1", "services.nodeports": "2"}, {"services": "1", "services.nodeports": "1"})
    with pytest.raises(rq.QuotaRefused, match=r"^exceeded quota: q, requested: services.nodeports=2, "
                       r"used: services.nodeports=1, limited: services.nodeports=2$"):
        rq.check_request(rq.SERVICES, new, old, [q], 0.0)
    q["status"]["used"]["services.nodeports"] = "0"
    assert rq.check_request(rq.SERVICES, new, old, [q], 0.0) == {0: {"services": "1", "services.nodeports": "2"}}
    assert rq.SERVICES.updates(new, old) and not rq.evaluator("", "configmaps").updates(new, old)
