"""pods/eviction (apiserver/eviction.py) against upstream's EvictionREST and its tests
(pkg/registry/core/pod/storage/eviction_test.go): the budget's check and decrement in one status write,
the refusals' codes and texts, the pods that skip the budget, dry run, and the DisruptionTarget mark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodeagent.apiserver import eviction
from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
CATALOG = Catalog(builtin_resources())
_FOUND = CATALOG.find("", "v1", "pods")
assert _FOUND is not None
PODS = _FOUND
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture
def reg() -> Registry:
    clock = FakeClock(1767225600.0)
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks()), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": "default", "namespace": "default"}})
    return Registry(store, CATALOG, builtin_definitions(), builtin_strategies(), clock)


def _pod(reg: Registry, name: str, *, phase: str = "Running", ready: bool = True, finalizer: bool = True) -> None:
    md: Obj = {"name": name, "labels": {"app": "a"}}
    if finalizer:
        md["finalizers"] = ["example.com/hold"]  # kept to be looked at after its deletion
    spec = {"nodeName": "n", "terminationGracePeriodSeconds": 30, "containers": [{"name": "c", "image": "x"}]}
    reg.create(PODS, "default", {"metadata": md, "spec": spec}, WriteOptions())
    cur = reg.store.get("Pod", "default", name)
    cur["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    reg.store.update_status(cur)


def _pdb(reg: Registry, name: str = "b", generation_seen: int = 1, **status: Any) -> None:
    reg.store.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                      "metadata": {"name": name, "namespace": "default"},
                      "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}},
                               **status.pop("spec", {})}})
    cur = reg.store.get("PodDisruptionBudget", "default", name)
    cur["status"] = {"observedGeneration": generation_seen, "currentHealthy": 2, "desiredHealthy": 1,
                     "expectedPods": 2, "disruptionsAllowed": 1,
                     "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                                     "message": "", "observedGeneration": 1, "lastTransitionTime": NOW}], **status}
    reg.store.update_status(cur)


def _evict(reg: Registry, name: str, dry_run: bool = False, **extra: Any) -> tuple[int, Obj]:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}, **extra}
    return eviction.evict(reg.store, PODS, "default", name, body, dry_run, reg.delete, reg.clock.now())


def _failure(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as err:
        call()
    return err.value


SUCCESS = (201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})


def test_an_allowed_eviction_uses_the_budget_marks_and_deletes_the_pod(reg: Registry) -> None:
    _pod(reg, "p")
    _pdb(reg)
    assert _evict(reg, "p") == SUCCESS
    status = reg.store.get("PodDisruptionBudget", "default", "b")["status"]
    # one write: the decrement, the condition at 0, the pod recorded for the controller
    assert status["disruptionsAllowed"] == 0 and status["disruptedPods"] == {"p": "2026-01-01T00:00:00Z"}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("DisruptionAllowed", "False", "InsufficientPods")]
    pod = reg.store.get("Pod", "default", "p")
    assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["deletionGracePeriodSeconds"] == 30
    assert pod["status"]["conditions"][-1] == {
        "type": "DisruptionTarget", "status": "True", "lastProbeTime": None, "lastTransitionTime": NOW,
        "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}


def test_no_disruption_left_is_429_with_the_reason_as_cause(reg: Registry) -> None:
    _pod(reg, "p")
    _pdb(reg, disruptionsAllowed=0, currentHealthy=1, desiredHealthy=1)
    err = _failure(lambda: _evict(reg, "p"))
    assert err.status() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                            "reason": "TooManyRequests", "code": 429, "details": {"causes": [
                                {"reason": "DisruptionBudget",
                                 "message": "The disruption budget b needs 1 healthy pods and has 1 currently"}]}}
    assert not err.headers
    assert "deletionTimestamp" not in reg.store.get("Pod", "default", "p")["metadata"]


def test_refusal_texts_follow_the_condition() -> None:
    failed = {"disruptionsAllowed": 0, "currentHealthy": 3, "desiredHealthy": 1, "conditions": [
        {"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed", "message": "boom"}]}
    assert eviction._refusal("b", failed) == ("The disruption budget b does not allow evicting pods currently "
                                              "because it failed sync: boom")
    other = {**failed, "conditions": [{"type": "DisruptionAllowed", "status": "False", "reason": "X",
                                       "message": "m"}]}
    assert eviction._refusal("b", other) == "The disruption budget b does not allow evicting pods currently (X): m"
    assert eviction._refusal("b", {"currentHealthy": 3, "desiredHealthy": 1}) == (
        "The disruption budget b does not allow evicting pods currently")


def test_a_status_behind_the_spec_is_429_retry_after_10(reg: Registry) -> None:
    _pod(reg, "p")
    _pdb(reg, generation_seen=0)
    err = _failure(lambda: _evict(reg, "p"))
    assert (err.code, err.headers, err.details) == (429, {"Retry-After": "10"}, {
        "causes": [{"reason": "DisruptionBudget", "message": "The disruption budget b is still being processed by "
                                                             "the server."}], "retryAfterSeconds": 10})


def test_a_negative_budget_is_forbidden(reg: Registry) -> None:
    _pod(reg, "p")
    _pdb(reg, disruptionsAllowed=-1)
    err = _failure(lambda: _evict(reg, "p"))
    assert (err.code, err.message) == (403, 'poddisruptionbudget.policy "b" is forbidden: pdb disruptions allowed '
                                            "is negative")


def test_two_budgets_answer_500_and_delete_nothing(reg: Registry) -> None:
    _pod(reg, "p")
    _pdb(reg, "b1")
    _pdb(reg, "b2")
    code, doc = _evict(reg, "p")
    assert code == 500 and doc["message"] == ("This pod has more than one PodDisruptionBudget, which the eviction "
                                              "subresource does not support.")
    assert "deletionTimestamp" not in reg.store.get("Pod", "default", "p")["metadata"]


@pytest.mark.parametrize(("phase", "ready", "policy", "status"), [
    ("Pending", True, None, {"disruptionsAllowed": 0}),  # canIgnorePDB
    ("Succeeded", False, None, {"disruptionsAllowed": 0}),
    ("Running", False, "AlwaysAllow", {"disruptionsAllowed": 0, "currentHealthy": 0}),
    ("Running", False, None, {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}),  # budget met
])
def test_pods_deleted_without_using_the_budget(reg: Registry, phase: str, ready: bool, policy: str | None,
                                               status: Obj) -> None:
    _pod(reg, "p", phase=phase, ready=ready)
    extra: Obj = {"spec": {"unhealthyPodEvictionPolicy": policy}} if policy else {}
    _pdb(reg, "b", 1, **status, **extra)
    assert _evict(reg, "p") == SUCCESS
    assert reg.store.get("Pod", "default", "p")["metadata"]["deletionTimestamp"]
    assert reg.store.get("PodDisruptionBudget", "default", "b")["status"]["disruptionsAllowed"] == 0
    assert "disruptedPods" not in reg.store.get("PodDisruptionBudget", "default", "b")["status"]


def test_an_unready_pod_under_an_unmet_budget_is_refused(reg: Registry) -> None:
    _pod(reg, "p", ready=False)
    _pdb(reg, disruptionsAllowed=0, currentHealthy=0, desiredHealthy=1)
    assert _failure(lambda: _evict(reg, "p")).code == 429


def test_dry_run_changes_nothing(reg: Registry) -> None:
    _pod(reg, "p")
    _pdb(reg)
    before = reg.store.get("PodDisruptionBudget", "default", "b")
    assert _evict(reg, "p", dry_run=True) == SUCCESS
    assert _evict(reg, "p", deleteOptions={"dryRun": ["All"]}) == SUCCESS
    assert reg.store.get("PodDisruptionBudget", "default", "b") == before
    pod = reg.store.get("Pod", "default", "p")
    assert "deletionTimestamp" not in pod["metadata"] and len(pod["status"]["conditions"]) == 1


def test_body_and_option_errors(reg: Registry) -> None:
    _pod(reg, "p")
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "q"}}
    err = _failure(lambda: eviction.evict(reg.store, PODS, "default", "p", body, False, reg.delete, 0.0))
    assert (err.code, err.message) == (400, "name in URL does not match name in Eviction object")
    err = _failure(lambda: _evict(reg, "p", deleteOptions={"ignoreStoreReadErrorWithClusterBreakingPotential": True}))
    assert (err.code, err.message) == (422, 'Eviction.policy "p" is invalid: deleteOptions.ignoreStoreReadError'
                                            "WithClusterBreakingPotential: Invalid value: true: can not be set for "
                                            "pod eviction, try after removing the option")
    err = _failure(lambda: _evict(reg, "nope"))
    assert (err.code, err.message) == (404, 'pods "nope" not found')
    err = _failure(lambda: _evict(reg, "p", deleteOptions={"preconditions": {"uid": "other"}}))
    assert err.code == 409 and err.message.startswith('Operation cannot be fulfilled on Pod "p": the UID in the '
                                                      "precondition (other) does not match")


def test_a_conflict_on_a_budget_free_pod_is_tried_again(reg: Registry) -> None:
    """EvictionsRetry: a write between the read and the delete is a conflict, retried unless the caller set the
    resourceVersion (then it is the caller's to handle)."""
    _pod(reg, "p", phase="Pending")
    calls: list[str] = []

    def racing(res: Any, namespace: str, name: str, opts: Any) -> object:
        calls.append(opts.resource_version)
        if len(calls) == 1:
            raise APIError(409, "Conflict", "raced")
        return reg.delete(res, namespace, name, opts)

    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    assert eviction.evict(reg.store, PODS, "default", "p", body, False, racing, 0.0) == SUCCESS
    assert len(calls) == 2 and all(calls)  # each attempt with the pod's resourceVersion as precondition
    assert reg.store.get("Pod", "default", "p")["metadata"]["deletionTimestamp"]
    _pod(reg, "q", phase="Pending")
    calls.clear()
    rv = reg.store.get("Pod", "default", "q")["metadata"]["resourceVersion"]
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "q"},
            "deleteOptions": {"preconditions": {"resourceVersion": rv}}}
    assert _failure(lambda: eviction.evict(reg.store, PODS, "default", "q", body, False, racing, 0.0)).code == 409
    assert len(calls) == 1
