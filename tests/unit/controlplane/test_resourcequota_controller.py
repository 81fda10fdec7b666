"""The resourcequota controller: status.hard and status.used of a new quota, used given back when a pod ends
or goes, untouched namespaces cost nothing, and the pod creates of the workload controllers refused or
charged by the quota admission (podcontrol.create_pod) with kube-apiserver's text."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.controllers import podcontrol
from nodeagent.controlplane.controllers.resourcequota import ResourceQuotaController
from nodeagent.errors import ValidationError
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock


def _pod(name: str, cpu: str | None, ns: str = "default") -> dict[str, Any]:
    res = {"requests": {"cpu": cpu}} if cpu else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": res}]}}


def _quota(hard: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "default"},
            "spec": {"hard": hard}}


def _sync(store: ObjectStore, ctl: ResourceQuotaController) -> dict[str, Any]:
    ctl.work(100)
    return dict(store.get("ResourceQuota", "default", "q").get("status") or {})


def test_status_follows_pods_created_ended_and_deleted() -> None:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds(), clock)
    try:
        store.create(_pod("a", "100m"))
        store.create(_pod("other", "5", ns="elsewhere"))
        store.create(_quota({"pods": "10", "requests.cpu": "2", "count/configmaps": "4"}))
        ctl = ResourceQuotaController(store, clock)
        ctl.load([*store.list("ResourceQuota"), *store.list("Pod")])
        assert _sync(store, ctl) == {"hard": {"count/configmaps": "4", "pods": "10", "requests.cpu": "2"},
                                     "used": {"count/configmaps": "0", "pods": "1", "requests.cpu": "100m"}}
        with store.transaction() as tx:  # a controller's create: charged by the admission in its transaction
            podcontrol.create_pod(tx, _pod("b", "250m"), clock)
        assert store.get("ResourceQuota", "default", "q")["status"]["used"] == {
            "count/configmaps": "0", "pods": "2", "requests.cpu": "350m"}
        ended = store.get("Pod", "default", "a")
        ended["status"] = {"phase": "Succeeded"}
        ctl.handle("MODIFIED", store.update_status(ended))
        assert _sync(store, ctl)["used"] == {"count/configmaps": "0", "pods": "1", "requests.cpu": "250m"}
        ctl.handle("DELETED", store.delete("Pod", "default", "b"))
        assert _sync(store, ctl)["used"] == {"count/configmaps": "0", "pods": "0", "requests.cpu": "0"}
        ctl.handle("DELETED", store.delete("Pod", "elsewhere", "other"))
        assert ctl.idle()  # a namespace without quotas queues nothing
    finally:
        store.close()


def test_controller_pod_creates_are_refused_with_kube_apiservers_text() -> None:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds(), clock)
    try:
        store.create(_quota({"pods": "1", "requests.cpu": "1"}))
        ctl = ResourceQuotaController(store, clock)
        ctl.load(store.list("ResourceQuota"))
        _sync(store, ctl)
        with pytest.raises(ValidationError, match=r'^pods "sts-0" is forbidden: failed quota: q: must specify '
                                                  r"requests.cpu for: c$"), store.transaction() as tx:
            podcontrol.create_pod(tx, _pod("sts-0", None), clock)
        with store.transaction() as tx:
            podcontrol.create_pod(tx, _pod("sts-0", "1"), clock)
        with pytest.raises(ValidationError, match=r'^pods "sts-1" is forbidden: exceeded quota: q, requested: '
                                                  r"pods=1,requests.cpu=1, used: pods=1,requests.cpu=1, "
                                                  r"limited: pods=1,requests.cpu=1$"), store.transaction() as tx:
            podcontrol.create_pod(tx, _pod("sts-1", "1"), clock)
        assert [p["metadata"]["name"] for p in store.list("Pod")] == ["sts-0"]
    finally:
        store.close()


def test_claims_are_charged_their_devices_by_the_claim_evaluator() -> None:
    from nodeagent.controlplane import quota as dra_quota
    from nodeagent.objects import resourcequota as rq

    dev = "gpu.deviceclass.resource.k8s.io/devices"
    claim = {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": [
        {"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2}}]}}}
    q = {"metadata": {"name": "q"}, "spec": {"hard": {dev: "3"}}, "status": {"hard": {dev: "3"}, "used": {dev: "2"}}}
    with pytest.raises(rq.QuotaRefused, match=f"^exceeded quota: q, requested: {dev}=2, used: {dev}=2, "
                                              f"limited: {dev}=3$"):
        rq.check_request(dra_quota.EVALUATOR, claim, None, [q], 0.0)
    status = rq.calculate_status(q, lambda g, p: [claim] if p == "resourceclaims" else [], 0.0,
                                 special=(dra_quota.EVALUATOR,))
    assert status == {"hard": {dev: "3"}, "used": {dev: "2"}}


def test_events_are_never_charged() -> None:
    from nodeagent.objects import resourcequota as rq

    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds(), clock)
    try:
        store.create(_quota({"count/events": "0", "count/configmaps": "0"}))
        ctl = ResourceQuotaController(store, clock)
        ctl.load(store.list("ResourceQuota"))
        _sync(store, ctl)
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"}}
        with store.transaction() as tx:
            rq.admit_create(tx, "", "events", event, 0.0)  # upstream's ignoredResources: no refusal
            with pytest.raises(rq.QuotaRefused, match="exceeded quota: q, requested: count/configmaps=1"):
                rq.admit_create(tx, "", "configmaps", {"metadata": {"name": "c", "namespace": "default"}}, 0.0)
    finally:
        store.close()
